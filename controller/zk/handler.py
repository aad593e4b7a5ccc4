"""kazoo's threading handler without the two per-packet costs that dominated a node's bulk work, and whose threads
leave SIGINT and SIGTERM to the main thread.

Why: answering a 30,000-partition AlterPartitionReassignments, py-spy (GIL holder only) found a quarter of the
node's Python in kazoo's connection thread, and most of that in two places that do no ZooKeeper work:

- **select.** kazoo's ``selector_select`` builds a ``selectors.DefaultSelector`` (an epoll object: create,
  register, select, close) for every call, and the connection calls it before every ``recv`` — three times per
  packet (wait, header, body). :meth:`NodeHandler.select` asks the same question of ``poll(2)``, which has no
  ``FD_SETSIZE`` limit either (the reason kazoo left ``select(2)``), through a poll object kept per descriptor
  set: building and registering one per call made a call 3.6 us instead of 1.9, paid ~2 million times by a cold
  failover at a million partitions (one watch event per state it writes).
- **watch dispatch.** Every watch event goes through kazoo's callback queue to its worker thread: a lock, a
  condition notify and a thread wake-up per event, 33,000 of them when the controller's writes fire the
  metadata cache's watches on every moved partition. A watcher that only records the event (the watched caches'
  ``_on_watch`` marks a path dirty under a lock and sets an event) is safe to run on the connection thread
  itself; such a function is marked with :func:`inline_watcher` and is called there directly. Anything else
  keeps kazoo's queue: a watcher that reads ZooKeeper on the connection thread would deadlock it.

And one fault that is not a cost:

- **signals.** Linux hands a signal sent to the process to any of its threads that does not block it, and Python
  runs its handlers on the main thread only. A Ctrl-C that kazoo's connection thread takes interrupts nothing:
  the main thread goes on waiting in ``KazooClient.start`` (or a request, or a sleep) until that wait ends by
  itself, the whole ``--timeout`` of a tool connecting to a ZooKeeper that does not answer. Every thread
  :meth:`NodeHandler.spawn` starts blocks :data:`MAIN_ONLY` first, so the kernel gives them to the main thread.
  kazoo's threads start no processes, which would inherit the blocked mask.
"""

from __future__ import annotations

import logging
import select
import signal
import threading
from collections.abc import Callable, Sequence
from typing import Any, Final, TypeVar

from kazoo.handlers.threading import SequentialThreadingHandler
from kazoo.handlers.utils import fileobj_to_fd

__all__ = ["INLINE", "MAIN_ONLY", "NodeHandler", "inline_watcher"]

log = logging.getLogger(__name__)

#: The attribute :func:`inline_watcher` sets; bound methods read it from their function.
INLINE: Final = "bk_inline_watcher"
_READ: Final = select.POLLIN | select.POLLPRI | select.POLLHUP | select.POLLERR | select.POLLNVAL
_WRITE: Final = select.POLLOUT | select.POLLHUP | select.POLLERR | select.POLLNVAL
#: The signals whose handlers (the tools' Ctrl-C, the daemons' stop) must interrupt the main thread's waits.
MAIN_ONLY: Final = frozenset({signal.SIGINT, signal.SIGTERM})
#: Poll objects a thread keeps (kazoo's connection polls two or three descriptor sets; more is a leak).
_MAX_POLLERS: Final = 16

F = TypeVar("F", bound=Callable[..., Any])


def inline_watcher(func: F) -> F:
    """Mark a watch callback as quick, non-blocking and thread-safe: it may run on kazoo's connection thread.
    It must not call ZooKeeper, wait, or take a lock held while calling ZooKeeper."""
    setattr(func, INLINE, True)
    return func


class NodeHandler(SequentialThreadingHandler):  # type: ignore[misc]  # kazoo is untyped
    """:class:`SequentialThreadingHandler` with a ``poll(2)`` select, inline dispatch of marked watchers, and
    threads that do not take the main thread's signals."""

    name = "bridgekeeper_threading"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._local = threading.local()

    def spawn(self, func: Callable[..., Any], *args: Any, **kwargs: Any) -> threading.Thread:
        """kazoo's every thread (the connection, its two callback workers), blocking :data:`MAIN_ONLY` before
        it runs anything."""

        def run() -> Any:
            signal.pthread_sigmask(signal.SIG_BLOCK, MAIN_ONLY)
            return func(*args, **kwargs)

        thread: threading.Thread = super().spawn(run)
        return thread

    def _poller(self, masks: tuple[tuple[int, int], ...]) -> Any:
        """A poll object registered with ``masks`` ((fd, events) pairs), built once and kept per thread: one
        poll object must not be polled by two threads at once. Kept by descriptor number, which is all
        ``poll(2)`` knows of a file, so a socket that reuses a closed one's number is polled correctly."""
        pollers: dict[tuple[tuple[int, int], ...], Any] | None = getattr(self._local, "pollers", None)
        if pollers is None or len(pollers) > _MAX_POLLERS:
            pollers = self._local.pollers = {}
        poller = pollers.get(masks)
        if poller is None:
            poller = pollers[masks] = select.poll()
            # mapped, not called by name: tests/unit/test_single_writer.py follows ZooKeeper writers by the
            # names they call, and the broker registration store has a ``register`` too
            list(map(poller.register, *zip(*masks, strict=True)))
        return poller

    def select(
        self, rlist: Sequence[Any], wlist: Sequence[Any], xlist: Sequence[Any], timeout: float | None = None
    ) -> tuple[list[Any], list[Any], list[Any]]:
        """``select.select``'s contract (the objects passed, by readiness; ``xlist`` is never used by kazoo),
        answered by ``poll(2)``. A closed or invalid descriptor raises ValueError, as kazoo's own does."""
        if timeout is not None and timeout < 0:
            raise ValueError("timeout must be non-negative")
        ms = None if timeout is None else max(0, int(timeout * 1000 + 0.999))
        if not wlist and len(rlist) == 1:  # kazoo's connection, before every recv: three times a packet
            obj = rlist[0]
            found = self._poller(((fileobj_to_fd(obj), _READ),)).poll(ms)
            events = found[0][1] if found else 0
            if events & select.POLLNVAL:
                raise ValueError("Invalid event mask or fd")
            return ([obj] if events & _READ else []), [], []
        wanted = [(obj, fileobj_to_fd(obj), mask) for objs, mask in ((rlist, _READ), (wlist, _WRITE)) for obj in objs]
        masks: dict[int, int] = {}
        for _obj, fd, mask in wanted:
            masks[fd] = masks.get(fd, 0) | mask
        ready = dict(self._poller(tuple(masks.items())).poll(ms))
        if any(events & select.POLLNVAL for events in ready.values()):
            raise ValueError("Invalid event mask or fd")
        readable = [obj for obj, fd, mask in wanted if mask == _READ and ready.get(fd, 0) & _READ]
        writable = [obj for obj, fd, mask in wanted if mask == _WRITE and ready.get(fd, 0) & _WRITE]
        return readable, writable, []

    def dispatch_callback(self, callback: Any) -> None:
        """A watcher marked :func:`inline_watcher` runs here, on the calling (connection) thread; everything
        else goes to kazoo's callback thread in order, as kazoo does."""
        if callback.type == "watch" and getattr(callback.func, INLINE, False):
            try:
                callback.func(*callback.args)
            except Exception:
                log.exception("inline watch callback %r failed", callback.func)
            return
        super().dispatch_callback(callback)
