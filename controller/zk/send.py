"""Sending the records of :mod:`controller.zk.protocol` on a kazoo client's own connection.

kazoo has no public call for a request it does not know, but ``KazooClient._call(request, async_object)`` queues
any object with ``type``, ``serialize()`` and ``deserialize(buffer, offset)`` like its own requests: in order
with them on the one connection, with its xid, its timeouts and its ConnectionLoss / SessionExpired handling.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kazoo.client import KazooClient
from kazoo.handlers.threading import AsyncResult as ThreadingAsyncResult
from kazoo.interfaces import IAsyncResult

from controller.zk.protocol import Record
from controller.zk.protocol.multi import MultiRequest

__all__ = ["multi_async", "send"]


class _Settling(ThreadingAsyncResult):  # type: ignore[misc]  # kazoo is untyped
    """kazoo's async result that also calls ``on_done`` once it holds the answer or the failure, on the thread
    that sets it (kazoo's connection thread), not through kazoo's completion queue: ``rawlink`` hands every
    callback to another thread, a switch per request that cost a fifth of the connection thread's time for a
    10,000-multi write."""

    def __init__(self, handler: Any, on_done: Callable[[IAsyncResult], None]) -> None:
        super().__init__(handler)
        self._on_done = on_done

    def set(self, value: Any = None) -> None:
        super().set(value)
        self._on_done(self)

    def set_exception(self, exception: BaseException) -> None:
        super().set_exception(exception)
        self._on_done(self)


def send(
    client: KazooClient, request: Record, *, on_done: Callable[[IAsyncResult], None] | None = None
) -> IAsyncResult:
    """Queue ``request`` on ``client``'s connection. The async result's value is what ``request.deserialize``
    returns for the reply; a reply with an error code (and ConnectionLoss, SessionExpired, ...) is its exception.

    ``on_done`` is called with the async result once it holds the answer or the failure, on the thread that
    sets it (kazoo's connection thread, or the caller's when the client refuses at once): it must be quick,
    must not block and must not raise."""
    result: Any = client.handler.async_result() if on_done is None else _Settling(client.handler, on_done)
    client._call(request, result)
    return result


def multi_async(
    client: KazooClient, request: MultiRequest, *, on_done: Callable[[IAsyncResult], None] | None = None
) -> IAsyncResult:
    """Send a write multi; the async result's value is the list of
    :data:`controller.zk.protocol.multi.OpResult`. Request-level failures (ConnectionLoss, MarshallingError, ...)
    are its exception. Named apart from :func:`send` because a write multi writes: the single-writer check
    (``tests/unit/test_single_writer.py``) finds every write multi by this name."""
    return send(client, request, on_done=on_done)
