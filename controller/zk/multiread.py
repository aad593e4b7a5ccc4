"""multiRead on a kazoo client: whether its server answers it, and one multiRead that falls back to single reads.

The request and its answer are :mod:`controller.zk.protocol.multi_read`; the pipelined readers of many znodes,
which use what is here, are :mod:`controller.zk.bulk_read`.

Servers older than 3.6 answer opcode 22 with UNIMPLEMENTED and then close the connection (the session
survives and kazoo reconnects). :func:`supports_multi_read` probes once per client with an empty multiRead
and :data:`SUPPORT` keeps the answer; readers then fall back to kazoo's ``get_async``/``get_children_async``.
On such a server the probe costs one reconnect (a SUSPENDED blip), so call it right after connecting,
before the client holds leadership.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Sequence
from typing import Final

from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionLoss, UnimplementedError
from kazoo.interfaces import IAsyncResult

from controller.zk.protocol.jute import OP_GET_CHILDREN, OP_GET_DATA
from controller.zk.protocol.multi_read import (
    GetChildrenOp,
    GetDataOp,
    MultiReadRequest,
    ReadOp,
    ReadResult,
)
from controller.zk.protocol.paths import server_path
from controller.zk.send import send

__all__ = [
    "MAX_RESENDS",
    "SUPPORT",
    "MultiReadSupport",
    "MultiReadTimeoutError",
    "forget_multi_read_support",
    "known_multi_read_support",
    "multi_read_async",
    "set_multi_read_support",
    "supports_multi_read",
]

log = logging.getLogger(__name__)

#: A request lost to a dropped connection is sent again at most this many times (within the deadline).
MAX_RESENDS: Final = 5


class MultiReadTimeoutError(TimeoutError):
    """A multiRead (a probe or a bulk read) did not complete before its deadline (typically: the connection is
    down)."""


class MultiReadSupport:
    """Whether each client's server answers multiRead: probed once per client, then known until forgotten.

    Keys are weak, so a client that is dropped takes its answer with it. One lock: the answer is asked for and
    recorded from the caller's threads and from kazoo's connection thread (a multiRead's completion callback)."""

    __slots__ = ("_known", "_lock")

    def __init__(self) -> None:
        self._known: weakref.WeakKeyDictionary[KazooClient, bool] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def probe(self, client: KazooClient, *, timeout: float = 10.0) -> bool:
        """Whether the client's server answers ``multiRead``: the known answer, or an empty multiRead's (then
        kept). On a server older than 3.6 the probe costs one reconnect: call it right after connecting.

        Raises :class:`MultiReadTimeoutError` if the probe is not answered within ``timeout``.
        """
        known = self.known(client)
        if known is not None:
            return known
        deadline = time.monotonic() + timeout
        for attempt in range(MAX_RESENDS + 1):
            result = send(client, MultiReadRequest([]))
            try:
                result.get(timeout=max(deadline - time.monotonic(), 0.0))
                supported = True
            except UnimplementedError:
                supported = False
                log.warning("ZooKeeper server does not support multiRead (older than 3.6): using single reads")
            except ConnectionLoss:
                if attempt == MAX_RESENDS:
                    raise
                continue  # kazoo queues the next probe until it has reconnected
            except client.handler.timeout_exception as exc:
                raise MultiReadTimeoutError(
                    f"multiRead support probe unanswered after {timeout:.1f}s; client state {client.state}"
                ) from exc
            break
        self.record(client, supported)
        return supported

    def known(self, client: KazooClient) -> bool | None:
        """The answer without probing (None: not probed yet)."""
        with self._lock:
            return self._known.get(client)

    def record(self, client: KazooClient, supported: bool) -> None:
        """Keep an answer without probing (e.g. ``False`` to force the single-read fallback)."""
        with self._lock:
            self._known[client] = supported

    def forget(self, client: KazooClient) -> None:
        """Drop the answer, so the next use probes again (e.g. after moving to another ensemble)."""
        with self._lock:
            self._known.pop(client, None)

    def mark_unsupported(self, client: KazooClient) -> None:
        """A multiRead was answered UNIMPLEMENTED (a server older than 3.6, or a rolling downgrade)."""
        log.warning("ZooKeeper server answered multiRead with UNIMPLEMENTED: falling back to single reads")
        self.record(client, False)


#: Every client's answer in this process: one per server connection, whoever asks.
SUPPORT: Final = MultiReadSupport()
supports_multi_read = SUPPORT.probe
known_multi_read_support = SUPPORT.known
set_multi_read_support = SUPPORT.record
forget_multi_read_support = SUPPORT.forget


def multi_read_async(client: KazooClient, ops: Sequence[ReadOp]) -> IAsyncResult:
    """Send ``ops`` as one multiRead; the result is a list with one :data:`ReadResult` per op.

    A failed op (e.g. a missing znode) is a ``kazoo.exceptions`` instance in its slot and does not fail
    the others. Paths are the client's (chroot applied as for kazoo's own calls). No size splitting:
    keep ``ops`` small enough yourself, or use :func:`controller.zk.bulk_read.read_data` /
    :func:`~controller.zk.bulk_read.read_children`. If the server is known not to support multiRead, or answers
    UNIMPLEMENTED, the ops are sent as single reads instead and the result has the same shape.
    """
    pairs: list[tuple[int, str]] = []
    for op in ops:
        if isinstance(op, GetDataOp):
            opcode = OP_GET_DATA
        elif isinstance(op, GetChildrenOp):
            opcode = OP_GET_CHILDREN
        else:
            raise TypeError(f"not a GetDataOp or GetChildrenOp: {op!r}")
        pairs.append((opcode, server_path(client, op.path)))

    known = SUPPORT.known(client)
    if known is False:
        return _single_reads_async(client, list(ops))

    inner = send(client, MultiReadRequest(pairs))
    if known is True:
        return inner

    outer = client.handler.async_result()

    def settle(done: IAsyncResult) -> None:
        exc = done.exception
        if isinstance(exc, UnimplementedError):
            SUPPORT.mark_unsupported(client)
            # the server closes the connection after UNIMPLEMENTED: reads sent before kazoo notices come
            # back as ConnectionLoss, so resend those
            _single_reads_async(client, list(ops), resends=MAX_RESENDS).rawlink(lambda r: _copy_result(r, outer))
            return
        if exc is None:
            SUPPORT.record(client, True)
        _copy_result(done, outer)

    inner.rawlink(settle)
    return outer


def _copy_result(source: IAsyncResult, target: IAsyncResult) -> None:
    if source.exception is not None:
        target.set_exception(source.exception)
    else:
        target.set(source.value)


def _single_reads_async(client: KazooClient, ops: list[ReadOp], *, resends: int = 0) -> IAsyncResult:
    """The same result shape as a multiRead, from one kazoo call per op (the pre-3.6 fallback). An op
    that fails with ConnectionLoss is sent again up to ``resends`` times."""
    outer = client.handler.async_result()
    results: list[ReadResult | None] = [None] * len(ops)
    remaining = [len(ops)]
    lock = threading.Lock()
    if not ops:
        outer.set([])
        return outer

    def send_one(index: int, attempt: int) -> None:
        op = ops[index]
        sub = client.get_async(op.path) if isinstance(op, GetDataOp) else client.get_children_async(op.path)
        sub.rawlink(lambda r: on_done(index, attempt, r))

    def on_done(index: int, attempt: int, r: IAsyncResult) -> None:
        exc = r.exception
        if isinstance(exc, ConnectionLoss) and attempt < resends:
            send_one(index, attempt + 1)
            return
        results[index] = exc if exc is not None else r.value
        with lock:
            remaining[0] -= 1
            last = remaining[0] == 0
        if last:
            outer.set(results)

    for i in range(len(ops)):
        send_one(i, 0)
    return outer
