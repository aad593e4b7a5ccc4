"""Many znodes read at the rate the server answers: pipelined multiRead batches, or single reads where the server
has no multiRead.

A controller failover reads every topic and partition-state znode: :func:`read_data`, :func:`read_children` and
the streaming :func:`read_data_into` send :class:`~controller.zk.protocol.multi_read.RawMultiReadRequest` batches,
several in flight on the client's one connection, and decode each answer on the calling thread while the next
ones are on the wire. Whether the server answers multiRead is :data:`controller.zk.multiread.SUPPORT`'s; without
it they read with kazoo's pipelined ``get_async``/``get_children_async`` instead.

Sizes. The server drops the *connection* when a request is larger than its ``jute.maxbuffer`` (default
1 MiB), so requests are cut at :data:`MAX_REQUEST_BYTES`, exactly (path lengths are known). Responses are
different: a response's size is unknown until it arrives, and neither ZooKeeper 3.8 nor kazoo enforces a
limit on it (a 10.8 MB multiRead response was served and read without error), so there is no error to
catch and retry on. ``read_data``/``read_children`` therefore keep each response under a *byte budget*
(``max_response_bytes``, default 1 MiB minus 64 KiB, i.e. what the Java client, whose default
``jute.maxbuffer`` applies to responses, could also read) by sizing every batch from an estimate of bytes
per op: it starts from the caller's ``expected_size`` hint and is updated from each response's real size
(it jumps up at once and decays slowly). A response that still exceeds the budget (a few unexpectedly
large znodes in one batch) is accepted as is, never re-read, and counted in :class:`ReadStats`; the
following batches shrink. One op whose own result is over the budget (a single ~1 MB znode) is sent alone.

Timeouts. Every wait is ``IAsyncResult.get(timeout)`` against one deadline per call; when it passes
:class:`~controller.zk.multiread.MultiReadTimeoutError` is raised, saying how much is unanswered and the client's
state. A batch lost to a dropped connection (ConnectionLoss) is sent again while the deadline allows: reads are
idempotent.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, TypeAlias, TypedDict, Unpack

from kazoo.client import KazooClient
from kazoo.exceptions import EXCEPTIONS, ConnectionLoss, NoNodeError, UnimplementedError
from kazoo.interfaces import IAsyncResult

from controller.zk.multiread import MAX_RESENDS, SUPPORT, MultiReadTimeoutError
from controller.zk.protocol.jute import JUTE_MAXBUFFER, OP_GET_CHILDREN, OP_GET_DATA
from controller.zk.protocol.multi_read import (
    CHILDREN_RESULT_OVERHEAD,
    DATA_RESULT_OVERHEAD,
    DataResult,
    RawMultiReadRequest,
    ReadResult,
    decode_data_versions,
    request_size,
)
from controller.zk.protocol.paths import server_paths
from controller.zk.send import send

__all__ = [
    "DEFAULT_MAX_RESPONSE_BYTES",
    "MAX_REQUEST_BYTES",
    "BulkReadOptions",
    "ReadStats",
    "read_children",
    "read_data",
    "read_data_into",
]

log = logging.getLogger(__name__)

#: Default response budget: the default ``jute.maxbuffer`` minus 64 KiB of slack.
DEFAULT_MAX_RESPONSE_BYTES: Final = JUTE_MAXBUFFER - 64 * 1024
#: Requests are cut well under the server's ``jute.maxbuffer``; a larger one makes it drop the connection.
MAX_REQUEST_BYTES: Final = 512 * 1024
#: Outstanding single reads in the fallback (the ``get_async`` pipeline depth that kazoo handles best).
FALLBACK_IN_FLIGHT: Final = 1000


@dataclass
class ReadStats:
    """What a bulk read did; pass one in to inspect batching, splitting and fallback."""

    paths: int = 0
    requests: int = 0
    resends: int = 0
    oversized_responses: int = 0
    largest_response_bytes: int = 0
    response_bytes: int = 0
    fallback: bool = False


class _SizeEstimate:
    """Bytes per op for sizing batches: starts at the hint, jumps up to any batch's observed average and
    decays slowly towards smaller ones (a failover read is mostly homogeneous, with rare large znodes)."""

    def __init__(self, initial: float) -> None:
        self.per_op = max(initial, 1.0)

    def observe(self, response_bytes: int, ops: int) -> None:
        avg = response_bytes / max(ops, 1)
        self.per_op = avg if avg > self.per_op else 0.75 * self.per_op + 0.25 * avg


@dataclass
class _Batch:
    ops: list[tuple[int, str]]
    user_paths: list[str]
    start: int = 0  # index of its first path in the caller's list
    sends: int = 0
    request: RawMultiReadRequest = field(init=False)
    result: IAsyncResult = field(init=False)


_AnyResult: TypeAlias = Any


class BulkReadOptions(TypedDict, total=False):
    """How a bulk read runs. ``batch`` caps ops per request, ``in_flight`` the outstanding requests (both
    at least 1). ``timeout`` bounds the whole call (default 30 s): :class:`MultiReadTimeoutError` when it
    passes. ``max_response_bytes`` caps one answer (see the module doc). ``multi_read``: None probes the
    server once per client, False forces the single-read fallback (pipelined ``get_async``), True skips the
    probe. ``stats`` collects request and byte counts."""

    batch: int
    in_flight: int
    timeout: float
    max_response_bytes: int
    multi_read: bool | None
    stats: ReadStats | None


def read_data(
    client: KazooClient, paths: Sequence[str], *, expected_size: int = 256, **options: Unpack[BulkReadOptions]
) -> dict[str, DataResult | None]:
    """Data and Stat of every path (``None`` for a missing znode), read with pipelined multiRead batches.

    ``expected_size`` (bytes of data per znode) seeds the estimate that keeps responses under the response
    cap (see the module doc); ``options`` are :class:`BulkReadOptions`. Errors other than NoNode (e.g.
    NoAuthError) are raised.
    """
    return _bulk_read(client, paths, OP_GET_DATA, DATA_RESULT_OVERHEAD + max(expected_size, 0), **options)


def read_children(
    client: KazooClient, paths: Sequence[str], *, expected_size: int = 512, **options: Unpack[BulkReadOptions]
) -> dict[str, list[str] | None]:
    """Children of every path (``None`` for a missing znode), like :func:`read_data`. ``expected_size``
    is the expected bytes of one listing (about 4 + len(name) per child)."""
    return _bulk_read(client, paths, OP_GET_CHILDREN, CHILDREN_RESULT_OVERHEAD + max(expected_size, 0), **options)


def _bulk_read(
    client: KazooClient,
    paths: Sequence[str],
    opcode: int,
    initial_op_bytes: int,
    *,
    batch: int = 1000,
    in_flight: int = 8,
    timeout: float = 30.0,
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    multi_read: bool | None = None,
    stats: ReadStats | None = None,
) -> dict[str, _AnyResult]:
    if batch < 1 or in_flight < 1:
        raise ValueError("batch and in_flight must be at least 1")
    if isinstance(paths, str):
        raise TypeError("paths must be a sequence of paths, not one string")
    stats = stats if stats is not None else ReadStats()
    deadline = time.monotonic() + timeout
    unique = list(dict.fromkeys(paths))
    stats.paths = len(unique)
    servers = server_paths(client, unique)
    out: dict[str, _AnyResult] = {}
    if not unique:
        return out

    use_multi = multi_read  # forcing (True/False) applies to this call only and is not cached
    if use_multi is None:
        use_multi = SUPPORT.probe(client, timeout=max(_remaining(deadline), 0.001))

    if use_multi:
        leftover = _pipelined_multi(
            client,
            unique,
            servers,
            opcode,
            initial_op_bytes,
            batch,
            in_flight,
            deadline,
            max_response_bytes,
            stats,
            out,
        )
        if not leftover:
            return out
        unique = leftover  # the server stopped supporting multiRead mid-way (rolling downgrade)
    stats.fallback = True
    _pipelined_single(client, deque(unique), opcode, deadline, stats, out)
    return out


def read_data_into(
    client: KazooClient,
    paths: Sequence[str],
    sink: Callable[[int, list[bytes | None], list[int]], None],
    *,
    expected_size: int = 256,
    **options: Unpack[BulkReadOptions],
) -> None:
    """Read the data and data version of every path (distinct paths), handing each batch to
    ``sink(first index, datas, versions)`` as soon as it arrives, in order, while the next batches are in
    flight: the caller decodes while the server reads, and no path-keyed dict or Stat tuple is built per
    znode. A failover reads a million znodes this way. Version -1 means the znode does not exist; other
    errors are raised naming the path. No watches: ZooKeeper's multiRead ignores its ops' watch flag
    (:mod:`controller.zk.setwatches` sets many at once)."""
    stats = options.get("stats") or ReadStats()
    timeout = options.get("timeout", 30.0)
    deadline = time.monotonic() + timeout
    users = list(paths)
    stats.paths = len(users)
    if not users:
        return
    next_index = 0

    def deliver(b: _Batch, raw: tuple[bytes, int]) -> None:
        nonlocal next_index
        datas, versions, failed = decode_data_versions(*raw, len(b.ops))
        for i, code in failed:
            error = EXCEPTIONS[code]()
            error.add_note(f"while reading {b.user_paths[i]!r}")
            raise error
        next_index = b.start + len(datas)
        sink(b.start, datas, versions)

    use_multi = options.get("multi_read")
    if use_multi is None:
        use_multi = SUPPORT.probe(client, timeout=max(_remaining(deadline), 0.001))
    leftover: list[str] | None = users
    if use_multi:
        leftover = _pipelined_multi(
            client,
            users,
            server_paths(client, users),
            OP_GET_DATA,
            DATA_RESULT_OVERHEAD + max(expected_size, 0),
            options.get("batch", 1000),
            options.get("in_flight", 8),
            deadline,
            options.get("max_response_bytes", DEFAULT_MAX_RESPONSE_BYTES),
            stats,
            None,
            deliver,
        )
    if not leftover:
        return
    # A server without multiRead (or one that stopped answering it mid-way, a rolling downgrade): the rest
    # with kazoo's own getData. Batches arrive in order, so what is left is a tail of ``users`` starting at
    # ``next_index``.
    stats.fallback = True
    out: dict[str, _AnyResult] = {}
    tail = users[next_index:]
    _pipelined_single(client, deque(tail), OP_GET_DATA, deadline, stats, out)
    found = [out[p] for p in tail]
    sink(
        next_index,
        [r[0] if r is not None else None for r in found],
        [r[1].version if r is not None else -1 for r in found],
    )


def _remaining(deadline: float) -> float:
    return deadline - time.monotonic()


def _timeout_error(client: KazooClient, what: str, waiting: int, total: int, timeout_at: float) -> Exception:
    return MultiReadTimeoutError(
        f"{what}: {waiting} of {total} paths still unanswered at the deadline "
        f"({time.monotonic() - timeout_at:+.1f}s); client state {client.state} "
        f"({'connected' if client.connected else 'connection down'})"
    )


def _pipelined_multi(
    client: KazooClient,
    users: list[str],
    servers: list[str],
    opcode: int,
    initial_op_bytes: int,
    batch: int,
    in_flight: int,
    deadline: float,
    max_response_bytes: int,
    stats: ReadStats,
    out: dict[str, _AnyResult] | None,
    sink: Callable[[_Batch, tuple[bytes, int]], None] | None = None,
) -> list[str] | None:
    """Reads ``users`` (with their chrooted ``servers`` paths) into ``out``, or hands each batch's raw answer
    to ``sink`` as it arrives (the caller decodes it while later batches are in flight); returns the user
    paths left unread if the server turned out not to support multiRead."""
    estimate = _SizeEstimate(initial_op_bytes)
    window: deque[_Batch] = deque()
    retry: deque[_Batch] = deque()
    total = len(users)
    cursor = 0
    unsupported = False

    def submit(b: _Batch) -> None:
        b.request = RawMultiReadRequest(b.ops)
        b.sends += 1
        b.result = send(client, b.request)
        stats.requests += 1
        window.append(b)

    def next_batch() -> _Batch:
        nonlocal cursor
        count = max(1, min(batch, int(max_response_bytes // estimate.per_op), total - cursor))
        while True:
            chunk = servers[cursor : cursor + count]
            request_bytes = request_size(chunk)
            if request_bytes <= MAX_REQUEST_BYTES or count == 1:
                break
            count = max(1, count * MAX_REQUEST_BYTES // request_bytes)  # long paths: fewer ops per request
        b = _Batch([(opcode, p) for p in chunk], users[cursor : cursor + count], cursor)
        cursor += count
        return b

    def unanswered() -> int:
        return sum(len(x.ops) for x in (*window, *retry)) + total - cursor

    while window or (not unsupported and (cursor < total or retry)):
        while not unsupported and len(window) < in_flight and (retry or cursor < total):
            submit(retry.popleft() if retry else next_batch())
        b = window.popleft()
        try:
            raw = b.result.get(timeout=max(_remaining(deadline), 0.0))
        except client.handler.timeout_exception:
            raise _timeout_error(client, "read (multiRead)", unanswered() + len(b.ops), total, deadline) from None
        except UnimplementedError:
            unsupported = True
            SUPPORT.mark_unsupported(client)
            retry.append(b)
            continue
        except ConnectionLoss:
            # The connection dropped with this batch unanswered (or the server closed it after refusing
            # multiRead): send it again; kazoo queues it until the client reconnects.
            if unsupported:
                retry.append(b)
                continue
            if b.sends > MAX_RESENDS:
                raise
            stats.resends += 1
            submit(b)
            continue
        size = b.request.response_bytes
        if sink is not None:
            sink(b, raw)
        else:
            assert out is not None
            _store(out, b.user_paths, b.request.decode(raw))
        stats.response_bytes += size
        stats.largest_response_bytes = max(stats.largest_response_bytes, size)
        if size > max_response_bytes:
            stats.oversized_responses += 1
            log.debug("multiRead response of %d bytes for %d ops exceeds the budget", size, len(b.ops))
        estimate.observe(size, len(b.ops))

    if unsupported:
        return [user for b in retry for user in b.user_paths] + users[cursor:]
    return None


def _store(out: dict[str, _AnyResult], users: list[str], values: list[ReadResult]) -> None:
    for user, value in zip(users, values, strict=True):
        if isinstance(value, Exception):
            if isinstance(value, NoNodeError):
                out[user] = None
                continue
            value.add_note(f"while reading {user!r}")
            raise value
        out[user] = value


def _pipelined_single(
    client: KazooClient,
    todo: deque[str],
    opcode: int,
    deadline: float,
    stats: ReadStats,
    out: dict[str, _AnyResult],
) -> None:
    """The pre-3.6 fallback: kazoo's own calls, FALLBACK_IN_FLIGHT outstanding."""
    call: Callable[[str], IAsyncResult] = client.get_async if opcode == OP_GET_DATA else client.get_children_async
    window: deque[tuple[str, IAsyncResult, int]] = deque()
    total = len(todo)
    while todo or window:
        while todo and len(window) < FALLBACK_IN_FLIGHT:
            user = todo.popleft()
            window.append((user, call(user), 1))
            stats.requests += 1
        user, result, sends = window.popleft()
        try:
            out[user] = result.get(timeout=max(_remaining(deadline), 0.0))
        except client.handler.timeout_exception:
            raise _timeout_error(client, "read (single reads)", len(window) + 1 + len(todo), total, deadline) from None
        except NoNodeError:
            out[user] = None
        except ConnectionLoss:
            if sends > MAX_RESENDS:
                raise
            stats.resends += 1
            stats.requests += 1
            window.append((user, call(user), sends + 1))
        except Exception as exc:
            exc.add_note(f"while reading {user!r}")
            raise
