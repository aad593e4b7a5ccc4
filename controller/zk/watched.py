"""The watched-cache base: a cache thread that keeps an immutable snapshot in sync with ZooKeeper by watches.

The broker's :class:`~controller.broker.metadata_cache.MetadataCache` and the
:class:`~controller.security.acl_cache.AclCache` are the same machine with different contents, so the machine
lives here once and each cache supplies only what differs: what a full load reads, how dirty paths are
applied, and what its snapshot is (:meth:`WatchedCache._load_all`, :meth:`WatchedCache._apply_dirty`).

Why a single cache thread: watch callbacks run on kazoo's event thread, so they only record the path as dirty
(:class:`Pending`). The cache thread re-reads each dirty znode with a fresh watch in the same call (a change
can then never slip between read and watch) and publishes a new immutable snapshot (copy-on-write) with a
higher version, so a reader holding a snapshot never sees a half-applied update. A short pause after the
first dirty path (``coalesce_seconds``) turns a burst of events into one update and one snapshot.

Why a full reload after every reconnect, not only after session expiry: kazoo 2.11 drops all of its watchers
on any connection loss (SUSPENDED as well as LOST) and sends no SetWatches when it reconnects, so the server
has forgotten them as well. Until the reload succeeds the cache keeps serving the last snapshot.

Why tenacity: one policy for every failed update, read from the error (:func:`zk_unavailable`) and not from
the call site. ZooKeeper being unavailable keeps the last snapshot and retries the same work; anything else is
a bug, logged with the UNEXPECTED tag, and answered with a full reload. Either way the next attempt waits
:data:`BACKOFF` (0.1 s doubling to 2 s), reset by the next success.
"""

from __future__ import annotations

import logging
import threading
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final, Generic, TypeVar

from kazoo.interfaces import IAsyncResult
from kazoo.protocol.states import EventType, KazooState, WatchedEvent
from tenacity import RetryCallState, Retrying, retry_if_exception, wait_exponential

from controller import heap
from controller.logtags import UNEXPECTED
from controller.zk.errors import By, KazooTimeoutError, NoNodeError, ZkUnavailable, failures
from controller.zk.handler import inline_watcher
from controller.zk.pending import Pending
from controller.zk.protocol.multi_read import DataResult
from controller.zk.session import ZkSession

__all__ = [
    "BACKOFF",
    "IN_FLIGHT",
    "MAX_RACE_ROUNDS",
    "ZK_UNAVAILABLE",
    "DataResult",
    "Pending",
    "Stopped",
    "WatchedCache",
    "update_retrying",
    "zk_unavailable",
]

log = logging.getLogger(__name__)

#: Outstanding async calls while registering watches or re-reading in bulk (kazoo's comfortable depth).
IN_FLIGHT: Final = 1000
#: An update reading at least this many znodes reads them as a full load does (multiRead + SetWatches).
BULK_UPDATE: Final = 256
#: A znode that keeps appearing and vanishing between a read and an exists is retried this often per update.
MAX_RACE_ROUNDS: Final = 10
#: Errors that mean "ZooKeeper cannot answer right now": keep serving the last snapshot, retry later. Every
#: failure kazoo or the session raises, kazoo's raw ones included (the cache reads through its own pipelined
#: async calls too); not the fence's, which refuses writes, and a cache never writes. ``TimeoutError`` covers
#: multiRead's ``MultiReadTimeoutError``.
ZK_UNAVAILABLE: Final[tuple[type[BaseException], ...]] = (*failures(by=[By.KAZOO, By.SESSION]), TimeoutError)
#: The wait before each retry of a failed update: 0.1 s, doubling, at most 2 s.
BACKOFF: Final = wait_exponential(multiplier=0.1, max=2.0)

S = TypeVar("S")


def zk_unavailable(exc: BaseException | None) -> bool:
    """The retry policy's one question: does this error mean ZooKeeper cannot answer right now?"""
    return isinstance(exc, ZK_UNAVAILABLE)


class Stopped(Exception):
    """stop() was called while the cache thread waited (on ZooKeeper, or before an update)."""


def _retryable(exc: BaseException) -> bool:
    return isinstance(exc, Exception) and not isinstance(exc, Stopped)


def update_retrying(*, sleep: Callable[[float], None], before_sleep: Callable[[RetryCallState], None]) -> Retrying:
    """The cache thread's retry policy: every failed update is retried after :data:`BACKOFF`, for as long as
    the cache runs; :class:`Stopped` ends it. ``before_sleep`` reads the error and decides what the retry
    does (see :meth:`WatchedCache._failed`); each call starts the back-off afresh."""
    return Retrying(retry=retry_if_exception(_retryable), wait=BACKOFF, sleep=sleep, before_sleep=before_sleep)


class WatchedCache(ABC, Generic[S]):
    """A snapshot of type ``S`` kept in sync with ZooKeeper by a cache thread.

    ``start()`` loads everything on the caller's thread (a broker must know the cluster before it serves) and
    starts the cache thread; ``snapshot()`` is lock-free; ``listener`` gets every new snapshot on the cache
    thread (the first one on start()'s caller), so it must be quick and must not block.

    Subclasses implement :meth:`_load_all` and :meth:`_apply_dirty`, publish with :meth:`_install`, set their
    module's logger as ``_log`` (log lines keep naming the cache's module), and arm watches with
    :attr:`_watcher` through the helpers below.
    """

    _log: logging.Logger = log

    def __init__(
        self,
        session: ZkSession,
        initial: S,
        *,
        coalesce_seconds: float,
        name: str,
        listener: Callable[[S], None] | None = None,
    ) -> None:
        self.session = session
        self.listener = listener
        #: Pause after the first dirty path before reading, so a burst of events is one update and one snapshot.
        self.coalesce_seconds = coalesce_seconds
        self.name = name
        #: Full loads done (start, every reload after a reconnect or a failure, every refresh_now), and how
        #: long the last one took.
        self.full_loads = 0
        self.last_load_seconds = 0.0
        self._snapshot = initial
        self._version = 0
        self._published = threading.Condition(threading.Lock())
        self._pending = Pending()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # One bound method for every watch: kazoo keeps watchers in a set per path, so re-arming an
        # outstanding watch adds no second callback.
        self._watcher: Callable[[WatchedEvent], None] = self._on_watch
        session.add_state_listener(self._on_session_state)

    # -- what a cache supplies ------------------------------------------------------------------------------
    @abstractmethod
    def _load_all(self) -> str:
        """Read everything (arming every watch first) and publish it; returns what was loaded, for the log
        line ("loaded 3 brokers, ..."). ZooKeeper errors propagate and must leave the cache unchanged."""

    @abstractmethod
    def _apply_dirty(self, dirty: set[str]) -> None:
        """Re-read what the watched ``dirty`` paths say changed, with fresh watches, and publish the result.
        Read everything before applying anything: a ZooKeeper error half-way leaves the cache unchanged, and
        the same paths are read again after the back-off."""

    def _apply_committed(self, committed: list[Any], dirty: set[str]) -> set[str]:
        """Take in writes this node's own controller got applied (see :meth:`_settle_write`), without reading them
        back; returns the dirty paths still to be read. A cache that does not take committed writes reads
        them back through its watches like any other change."""
        return dirty | self._written_paths(committed)

    def _written_paths(self, committed: list[Any]) -> set[str]:
        """The paths ``committed`` wrote: read again when taking them in failed half-way."""
        return set()

    # -- public API ------------------------------------------------------------------------------------------
    def start(self) -> S:
        """Load everything, then start the cache thread. ZooKeeper errors propagate and nothing is started;
        start() may be retried."""
        if self._thread is not None:
            raise RuntimeError(f"{self.name} already started")
        self._full_load(self._pending.starting())
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()
        return self._snapshot

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the cache thread; later watch events are ignored and the last snapshot stays readable."""
        self._pending.stop()
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def snapshot(self) -> S:
        """The current snapshot (lock-free; immutable, replaced on every change)."""
        return self._snapshot

    @property
    def version(self) -> int:
        """Incremented each time a different snapshot is published."""
        return self._version

    def wait_for(self, predicate: Callable[[S], bool], timeout: float = 30.0) -> S:
        """The first snapshot (the current one or a later one) for which ``predicate`` holds; TimeoutError
        when none does within ``timeout``. The predicate runs on the caller's thread. Lets callers and tests
        wait for a change without sleeping."""
        deadline = time.monotonic() + timeout
        current = self._snapshot
        while not predicate(current):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"{self.name}: condition not met within {timeout:.1f}s (version {self._version})")
            current = self._next_snapshot(current, remaining)
        return current

    def _next_snapshot(self, seen: S, timeout: float) -> S:
        """The first snapshot that is not ``seen`` (``seen`` itself if none comes within ``timeout``)."""
        with self._published:
            self._published.wait_for(lambda: self._snapshot is not seen, timeout)
            return self._snapshot

    def refresh_now(self, timeout: float = 30.0) -> S:
        """Reload everything from ZooKeeper and return the snapshot once a load that started after this call
        has finished: afterwards every change acknowledged before the call is in the snapshot."""
        if self._thread is None or self._stop.is_set():
            raise RuntimeError(f"{self.name} is not running")
        generation = self._pending.request_reload()
        self._wake.set()
        with self._published:
            if not self._published.wait_for(lambda: self._pending.done >= generation, timeout):
                raise TimeoutError(f"{self.name}: no full reload within {timeout:.1f}s")
        return self._snapshot

    def _settle_write(self, paths: Iterable[str], write: Any | None, reread: Iterable[str]) -> None:
        """A write of this node's own controller ended (see :meth:`Pending.settle`): the cache thread takes
        ``write`` in directly instead of reading it back (:meth:`_apply_committed`)."""
        if self._pending.settle(paths, write, reread):
            self._wake.set()

    def catch_up(self, timeout: float) -> S | None:
        """The snapshot once it holds every change ZooKeeper committed before this call, or None when the cache
        thread does not get there within ``timeout`` (not running, ZooKeeper unavailable, reloading slowly).

        Why a ``sync`` and a count are enough: after ``sync`` returns, this session's server has applied every
        write committed before the call, and ZooKeeper sends a watch event before the answer to any later
        request on the same connection; the watcher here runs inline on kazoo's connection thread, so by then
        every event of those writes is marked. What is left is the cache thread applying what was marked."""
        if self._thread is None or self._stop.is_set():
            return None
        deadline = time.monotonic() + timeout
        try:
            self.session.sync("/")
        except ZK_UNAVAILABLE as exc:
            self._log.warning("%s: no sync for a catch-up: %r", self.name, exc)
            return None
        point = self._pending.mark_point()
        with self._published:
            if not self._published.wait_for(
                lambda: self._pending.caught_up(point), max(0.0, deadline - time.monotonic())
            ):
                return None
            return self._snapshot

    # -- kazoo's threads: record, never read ----------------------------------------------------------------
    @inline_watcher  # records and wakes only: runs on kazoo's connection thread, not through its callback queue
    def _on_watch(self, event: WatchedEvent) -> None:
        try:
            if event.type == EventType.NONE or event.path is None:
                return  # kazoo dropping its watchers on a disconnect: the state listener schedules the reload
            # Set only when clear: the cache thread clears the event before it takes the marked paths, so a path
            # marked while it is still set is taken by that pass (a reassignment's own writes fire 110,000 events).
            if self._pending.mark(event.path) and not self._wake.is_set():
                self._wake.set()
        except Exception:
            self._log.exception("%s %s: watch callback failed for %r", UNEXPECTED, self.name, event)

    def _on_session_state(self, state: KazooState) -> None:
        # SUSPENDED or LOST: kazoo has just dropped every watcher; the next CONNECTED reloads everything.
        if self._pending.session_state(state == KazooState.CONNECTED):
            self._wake.set()

    # -- the cache thread -----------------------------------------------------------------------------------
    def _run(self) -> None:
        retrying = update_retrying(sleep=self._sleep, before_sleep=self._failed)
        while not self._stop.is_set():
            self._wake.wait()
            try:
                retrying(self._step)
            except Stopped:
                break

    def _step(self) -> None:
        """One update: after the coalescing pause, a due full reload (which re-arms every watch and so covers
        the dirty paths too) or the dirty paths."""
        if self._stop.is_set() or (self.coalesce_seconds > 0 and self._stop.wait(self.coalesce_seconds)):
            raise Stopped()
        self._wake.clear()  # before take(): a path marked after it sets the event again
        # A write's watch events reach the session before its answer does; they are held back until the write
        # settles, then taken with it (Pending.take), so the write explains them and nothing is read back.
        generation, dirty, committed = self._pending.take()
        try:
            if generation is not None:
                self._full_load(generation)  # reads everything: the committed writes too
            else:
                if committed:
                    dirty = self._apply_committed(committed, dirty)
                if dirty:
                    self._apply_dirty(dirty)
        except Stopped:
            raise
        except Exception:
            self._pending.give_back(dirty | self._written_paths(committed))
            self._wake.set()
            raise
        with self._published:
            self._pending.applied()
            self._published.notify_all()

    def _failed(self, state: RetryCallState) -> None:
        """The retry policy reads the error: ZooKeeper unavailable → serve on and retry the same work;
        anything else → a bug: log it with the UNEXPECTED tag and reload everything."""
        exc = state.outcome.exception() if state.outcome is not None else None
        delay = state.next_action.sleep if state.next_action is not None else 0.0
        if zk_unavailable(exc):
            if not self._stop.is_set():
                self._log.warning(
                    "%s: ZooKeeper unavailable (%r); serving version %d, retrying in %.1fs",
                    self.name,
                    exc,
                    self._version,
                    delay,
                )
            return
        self._log.error("%s %s: update failed; full reload in %.1fs", UNEXPECTED, self.name, delay, exc_info=exc)
        self._pending.request_reload()

    def _sleep(self, seconds: float) -> None:
        self._stop.wait(seconds)  # stop() cuts the back-off short; the next _step then sees it

    def _full_load(self, generation: int) -> None:
        started = time.monotonic()
        with heap.building(f"{self.name} full load"):
            summary = self._load_all()
        self.full_loads += 1
        self.last_load_seconds = time.monotonic() - started
        with self._published:
            self._pending.loaded(generation)
            self._published.notify_all()
        self._log.info("%s: %s in %.2fs (version %d)", self.name, summary, self.last_load_seconds, self._version)

    # -- for the subclasses ---------------------------------------------------------------------------------
    def _install(self, new: S) -> None:
        """Publish ``new`` as version :attr:`version` + 1, wake wait_for() and call the listener."""
        with self._published:
            self._snapshot = new
            self._version += 1
            self._published.notify_all()
        self._log.debug("%s: published version %d", self.name, self._version)
        if self.listener is not None:
            try:
                self.listener(new)
            except Exception:
                self._log.exception("%s %s: snapshot listener failed", UNEXPECTED, self.name)

    def _request_reload(self) -> None:
        """Reload everything on the cache thread's next step (what a cache does when it cannot trust an
        incremental update, e.g. a sequence restarted)."""
        self._pending.request_reload()
        self._wake.set()

    def _watch_data(self, path: str) -> DataResult | None:
        """Data and Stat of ``path`` with a data watch, or None with an exists watch when it is missing
        (getData sets no watch on a missing znode; exists does, and tells if it appeared meanwhile)."""
        for _ in range(MAX_RACE_ROUNDS):
            found = self.session.get(path, watch=self._watcher)
            if found is not None:
                return found
            if self.session.exists(path, watch=self._watcher) is None:
                return None
        raise ZkUnavailable(f"{path} keeps appearing and vanishing")

    def _watch_children(self, path: str) -> list[str]:
        """Children of ``path`` with a children watch, or [] with an exists watch while it does not exist (its
        creation then fires the watch)."""
        for _ in range(MAX_RACE_ROUNDS):
            children = self.session.get_children(path, watch=self._watcher)
            if children is not None:
                return children
            if self.session.exists(path, watch=self._watcher) is None:
                return []
        raise ZkUnavailable(f"{path} keeps appearing and vanishing")

    def _watch_then_read(self, znodes: Sequence[str], watch_missing: bool = True) -> dict[str, DataResult | None]:
        """For full loads: one multiRead pass, then every watch in a few SetWatches requests relative to a
        zxid taken before the read (:mod:`controller.zk.setwatches`): a znode changed since the read fires at
        once, so nothing between the two is missed; a missing znode gets an exists watch, which is what a
        znode not created yet needs (and fires at once if it was created meanwhile). A million-partition
        cluster's load is a few hundred multiReads and a few hundred SetWatches, not a million requests.
        Without ``watch_missing`` a missing znode gets no watch (its parent's children watch covers it)."""
        if not znodes:
            return {}
        since = self.session.last_zxid
        found = self.session.read_data(znodes, expected_size=120)
        present = [p for p, r in found.items() if r is not None]
        missing = [p for p, r in found.items() if r is None] if watch_missing else []
        self.session.watch_data(present, self._watcher, since, missing=missing)
        return found

    def _get_watched(self, znodes: Sequence[str], watch_missing: bool) -> dict[str, DataResult | None]:
        """For updates: pipelined getData with a watch (read and watch in one call). getData sets no watch on
        a missing znode, so with ``watch_missing`` those get an exists watch, and a znode created in between
        is read again. From BULK_UPDATE znodes on, as after a reassignment moved every partition's leader epoch,
        this is the full load's multiRead and SetWatches instead: a getData per znode costs ~100 µs of Python
        on kazoo's two threads, which at 100,000 states kept the node and ZooKeeper busy for seconds."""
        if len(znodes) >= BULK_UPDATE:
            return self._watch_then_read(znodes, watch_missing)
        client = self.session.client
        out: dict[str, DataResult | None] = {}
        todo: Sequence[str] = znodes
        for _ in range(MAX_RACE_ROUNDS):
            found = self._pipelined(todo, lambda p: client.get_async(p, watch=self._watcher), "get")
            out.update(found)
            missing = [p for p, r in found.items() if r is None]
            if not watch_missing or not missing:
                return out
            stats = self._pipelined(missing, lambda p: client.exists_async(p, watch=self._watcher), "exists")
            todo = [p for p, stat in stats.items() if stat is not None]
            if not todo:
                return out
        raise ZkUnavailable(f"{len(todo)} znodes keep appearing and vanishing")

    def _pipelined(self, znodes: Sequence[str], call: Callable[[str], IAsyncResult], what: str) -> dict[str, Any]:
        """Issue ``call`` for every path with up to IN_FLIGHT outstanding; a missing znode gives None."""
        out: dict[str, Any] = {}
        window: deque[tuple[str, IAsyncResult]] = deque()
        pending = iter(znodes)
        deadline = time.monotonic() + self.session.bulk_timeout_s
        while True:
            while len(window) < IN_FLIGHT and (path := next(pending, None)) is not None:
                window.append((path, call(path)))
            if not window:
                return out
            path, result = window.popleft()
            out[path] = self._wait(result, deadline, f"{what} {path}")

    def _wait(self, result: IAsyncResult, deadline: float, what: str) -> Any:
        """Wait in short slices so stop() is honoured while ZooKeeper is slow."""
        while True:
            try:
                return result.get(timeout=max(min(0.5, deadline - time.monotonic()), 0.0))
            except NoNodeError:
                return None
            except KazooTimeoutError:
                if self._stop.is_set():
                    raise Stopped() from None
                if time.monotonic() >= deadline:
                    raise ZkUnavailable(f"{what}: no answer within {self.session.bulk_timeout_s:.0f}s") from None
