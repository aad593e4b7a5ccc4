"""What a watched cache's thread has to do next, recorded by the threads that learn of it (thread-safe): the
dirty paths of fired watches, full reloads by generation, and the own controller's writes with their settlement
(:class:`controller.zk.watched.WatchedCache` runs the thread; this module holds no I/O)."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any


class Pending:
    """The work recorded for the cache thread (thread-safe): dirty paths and full reloads.

    Dirty paths coalesce into a set, so a znode that changed three times before the cache thread got to it is
    read once. Full reloads are counted by generation: one is due while ``wanted > done``, and a load started
    at generation ``g`` satisfies every request made before it (``refresh_now`` waits for its own
    generation). After a connection loss the first CONNECTED makes a reload due; a state change or watch
    after :meth:`stop` records nothing.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._dirty: set[str] = set()
        self._wanted = 1  # the first full load is start()'s
        self._done = 0
        #: Watch events recorded, and how many of them an update has applied (see :meth:`caught_up`).
        self._marked = 0
        self._taken = 0
        self._applied = 0
        #: Writes this node's own controller got applied, in commit order, waiting for the cache thread; and the
        #: paths of its writes not settled yet, with how many of them are on their way.
        self._committed: list[tuple[Any, list[str]]] = []
        self._writing: dict[str, int] = {}
        #: Writes announced, writes settled and handed over (or failed), and of those the ones applied.
        self._announced = 0
        self._finished = 0
        self._taken_writes = 0
        self._applied_writes = 0
        self._watches_lost = False
        self._stopping = False

    @property
    def done(self) -> int:
        return self._done

    def mark(self, path: str) -> bool:
        """A watch fired on ``path``. False (nothing recorded) once stopping."""
        with self._lock:
            if self._stopping:
                return False
            self._dirty.add(path)
            self._marked += 1
            return True

    def writing(self, paths: Iterable[str]) -> None:
        """Writes of this node's own controller to ``paths`` are on their way: their watch events stay among the
        dirty paths, not handed to the cache thread, until the write settles (:meth:`settle`)."""
        with self._lock:
            self._announced += 1
            for path in paths:
                self._writing[path] = self._writing.get(path, 0) + 1

    def settle(self, paths: Iterable[str], write: Any | None, reread: Iterable[str]) -> bool:
        """A write announced by :meth:`writing` ended: ``write`` (what it wrote, for the cache thread) if it was
        applied, else None; ``reread`` is marked dirty (what a write in doubt may have changed). The paths of an
        applied write stay "being written" until the cache thread takes it (:meth:`take`). False (nothing
        recorded) once stopping."""
        with self._lock:
            if write is not None and not self._stopping:
                self._committed.append((write, list(paths)))
                return True
            self._release(paths)
            self._finished += 1
            if self._stopping:
                return False
            for path in reread:
                self._dirty.add(path)
                self._marked += 1
            return True

    def _release(self, paths: Iterable[str]) -> None:
        for path in paths:
            left = self._writing.get(path, 0) - 1
            if left > 0:
                self._writing[path] = left
            else:
                self._writing.pop(path, None)

    def being_written(self, paths: Iterable[str]) -> set[str]:
        """Those of ``paths`` a write announced by :meth:`writing` has not settled yet."""
        with self._lock:
            return {path for path in paths if path in self._writing} if self._writing else set()

    def take(self) -> tuple[int | None, set[str], list[Any]]:
        """What the cache thread does next: the generation of a due full reload (None: none is due, and then
        only the dirty paths are read), the dirty paths, which are handed over, and the own writes settled
        since (in commit order). The dirty paths of a write not settled yet are held back, so a write is taken
        with its own watch events."""
        with self._lock:
            generation = self._wanted if self._wanted > self._done else None
            committed = [write for write, _paths in self._committed]
            for _write, written in self._committed:
                self._release(written)
            self._finished += len(self._committed)
            self._committed = []
            dirty = self._dirty
            if self._writing:
                held = {path for path in dirty if path in self._writing}
                dirty, self._dirty = dirty - held, held
            else:
                held, self._dirty = set(), set()
            if not held:  # events held back are not applied by this update
                self._taken = self._marked
            self._taken_writes = self._finished
            return generation, dirty, committed

    def mark_point(self) -> tuple[int, int, int]:
        """Where the work recorded so far ends: (events marked, full reloads wanted, own writes announced).
        :meth:`caught_up` says when the cache thread has applied everything up to it."""
        with self._lock:
            return self._marked, self._wanted, self._announced

    def caught_up(self, point: tuple[int, int, int]) -> bool:
        """Every event marked, every reload wanted and every own write announced up to ``point`` has been
        applied (a write that failed, by reading what it may have changed)."""
        marked, wanted, announced = point
        with self._lock:
            return self._applied >= marked and self._done >= wanted and self._applied_writes >= announced

    def session_state(self, connected: bool) -> bool:
        """The session went CONNECTED (``connected``) or SUSPENDED/LOST. True when a full reload is now due:
        the first CONNECTED after a loss, since kazoo dropped every watcher on the loss."""
        with self._lock:
            if self._stopping:
                return False
            if not connected:
                self._watches_lost = True
                return False
            if not self._watches_lost:
                return False
            self._watches_lost = False
            self._wanted += 1
            return True

    def request_reload(self) -> int:
        """Make a full reload due; returns its generation."""
        with self._lock:
            self._wanted += 1
            return self._wanted

    def starting(self) -> int:
        """start() is about to load everything on its own thread: the generation that load satisfies.
        Watches lost before start are re-armed by that very load."""
        with self._lock:
            self._watches_lost = False
            return self._wanted

    def applied(self) -> None:
        """The update of the last :meth:`take` succeeded: every event marked before it has been applied, and
        every own write settled before it."""
        with self._lock:
            self._applied = max(self._applied, self._taken)
            self._applied_writes = max(self._applied_writes, self._taken_writes)

    def give_back(self, dirty: set[str]) -> None:
        """An update failed: its dirty paths are due again, with any recorded meanwhile."""
        with self._lock:
            self._dirty |= dirty

    def loaded(self, generation: int) -> None:
        """A full load of ``generation`` finished."""
        with self._lock:
            self._done = max(self._done, generation)

    def stop(self) -> None:
        with self._lock:
            self._stopping = True
