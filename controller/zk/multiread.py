"""Multi-op reads for kazoo: ZooKeeper's ``multiRead`` (opcode 22, ZooKeeper >= 3.6).

A controller failover reads every topic and partition-state znode. With kazoo, one ``get_async`` per znode
costs more Python per request than the server needs to answer it; ``multiRead`` packs up to thousands of
getData/getChildren ops into one request and one response, so the per-request overhead is paid once per
batch. kazoo has no call for it, but its connection sends any object with ``type``, ``serialize()`` and
``deserialize(buffer, offset)``; :class:`MultiReadRequest` is such an object.

Wire format (``MultiOperationRecord`` / ``MultiResponse`` in ZooKeeper's jute):

- request: for each op ``MultiHeader(type, done=false, err=-1)`` + ``(ustring path, boolean watch)``, then
  ``MultiHeader(-1, true, -1)``. Only getData (4) and getChildren (8) are allowed; any other op type makes
  the server fail the whole request with MARSHALLINGERROR.
- response: for each op ``MultiHeader(type, false, err)`` + body, then ``MultiHeader(-1, true, -1)``. The
  body is ``(buffer data, Stat)`` for getData, ``vector<ustring>`` for getChildren and ``int err`` for a
  failed op (header type -1). Ops fail one by one: a missing znode fails only its own op (unlike a write
  ``multi``, which is all-or-nothing). Verified against a Debian ZooKeeper 3.8 server.

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

Chroots. Paths are the client's paths: the client's chroot is prepended exactly as kazoo does for its own
requests (``kazoo.protocol.paths._prefix_root``). Results carry no paths, so nothing needs unchrooting.

Servers older than 3.6 answer opcode 22 with UNIMPLEMENTED and then close the connection (the session
survives and kazoo reconnects). :func:`supports_multi_read` probes once per client with an empty multiRead
and caches the answer; the bulk readers then fall back to pipelined ``get_async``/``get_children_async``.
On such a server the probe costs one reconnect (a SUSPENDED blip), so call it right after connecting,
before the client holds leadership.

Timeouts. Every wait is ``IAsyncResult.get(timeout)`` against one deadline per call; when it passes
:class:`MultiReadTimeoutError` is raised, saying how much is unanswered and the client's state. A batch lost
to a dropped connection (ConnectionLoss) is sent again while the deadline allows: reads are idempotent.
"""

from __future__ import annotations

import logging
import struct
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final, NamedTuple, TypeAlias, TypedDict, Unpack

from kazoo.client import KazooClient
from kazoo.exceptions import (
    EXCEPTIONS,
    ConnectionLoss,
    NoNodeError,
    UnimplementedError,
)
from kazoo.interfaces import IAsyncResult
from kazoo.protocol.paths import _prefix_root
from kazoo.protocol.states import ZnodeStat

__all__ = [
    "DEFAULT_MAX_RESPONSE_BYTES",
    "MAX_REQUEST_BYTES",
    "MULTI_READ",
    "DataResult",
    "GetChildrenOp",
    "GetDataOp",
    "MultiReadRequest",
    "MultiReadTimeoutError",
    "ReadOp",
    "ReadResult",
    "ReadStats",
    "forget_multi_read_support",
    "known_multi_read_support",
    "multi_read_async",
    "read_children",
    "read_data",
    "read_data_into",
    "server_path",
    "set_multi_read_support",
    "supports_multi_read",
]

log = logging.getLogger(__name__)

#: ZooDefs.OpCode values.
MULTI_READ: Final = 22
OP_GET_DATA: Final = 4
OP_GET_CHILDREN: Final = 8
OP_ERROR: Final = -1

#: ZooKeeper's default ``jute.maxbuffer`` (0xfffff), which bounds a packet's length on both ends.
JUTE_MAXBUFFER: Final = 0xFFFFF
#: Default response budget: the default ``jute.maxbuffer`` minus 64 KiB of slack.
DEFAULT_MAX_RESPONSE_BYTES: Final = JUTE_MAXBUFFER - 64 * 1024
#: Requests are cut well under the server's ``jute.maxbuffer``; a larger one makes it drop the connection.
MAX_REQUEST_BYTES: Final = 512 * 1024
#: Outstanding single reads in the fallback (the ``get_async`` pipeline depth that kazoo handles best).
FALLBACK_IN_FLIGHT: Final = 1000
#: A batch lost to a dropped connection is sent again at most this many times (within the deadline).
MAX_RESENDS: Final = 5

_HEADER = struct.Struct("!iBi")  # MultiHeader: type, done, err
_HEADER_INT = struct.Struct("!iBii")  # MultiHeader + the body's first int (buffer length / count / error)
_INT = struct.Struct("!i")
_STAT = struct.Struct("!qqqqiiiqiiq")
_DONE = _HEADER.pack(-1, True, -1)
_OP_PREFIX = {
    OP_GET_DATA: _HEADER.pack(OP_GET_DATA, False, -1),
    OP_GET_CHILDREN: _HEADER.pack(OP_GET_CHILDREN, False, -1),
}
#: Request bytes of one op besides its path: header (9) + path length (4) + watch flag (1).
_REQUEST_OP_OVERHEAD: Final = _HEADER.size + _INT.size + 1
#: Response bytes of one getData op besides its data: header (9) + data length (4) + Stat (68).
_DATA_OVERHEAD: Final = _HEADER.size + _INT.size + _STAT.size
#: Response bytes of one getChildren op besides the names: header (9) + count (4).
_CHILDREN_OVERHEAD: Final = _HEADER.size + _INT.size


class GetDataOp(NamedTuple):
    """Read a znode's data and Stat (no watch)."""

    path: str


class GetChildrenOp(NamedTuple):
    """List a znode's children (no watch)."""

    path: str


ReadOp: TypeAlias = GetDataOp | GetChildrenOp
DataResult: TypeAlias = tuple[bytes | None, ZnodeStat]
#: One op's result: (data, stat) for GetDataOp, names for GetChildrenOp, or the op's own exception.
ReadResult: TypeAlias = DataResult | list[str] | Exception


class MultiReadTimeoutError(TimeoutError):
    """A bulk read did not complete before its deadline (typically: the connection is down)."""


# -- the request object kazoo's connection sends ------------------------------------------------------


class MultiReadRequest:
    """A ``multiRead`` request for kazoo's connection (``client._call(request, async_result)``).

    ``ops`` are ``(opcode, server_path)`` pairs: opcode 4 (getData) or 8 (getChildren) and a path that
    already carries the client's chroot (see :func:`server_path`). The async result is set to one
    :data:`ReadResult` per op, in order. ``response_bytes`` is the size of the answer once it arrived.
    """

    type: ClassVar[int] = MULTI_READ
    __slots__ = ("ops", "response_bytes")

    def __init__(self, ops: Sequence[tuple[int, str]]) -> None:
        for opcode, _ in ops:
            if opcode not in _OP_PREFIX:
                raise ValueError(f"multiRead supports getData (4) and getChildren (8), not opcode {opcode}")
        self.ops = ops
        self.response_bytes = 0

    def __repr__(self) -> str:  # kazoo logs requests at DEBUG: keep it short
        first = self.ops[0][1] if self.ops else None
        return f"MultiReadRequest({len(self.ops)} ops, first={first!r})"

    def serialize(self) -> bytes:
        parts: list[bytes] = []
        append = parts.append
        pack_int = _INT.pack
        for opcode, path in self.ops:
            raw = path.encode()
            append(_OP_PREFIX[opcode])
            append(pack_int(len(raw)))
            append(raw)
            append(b"\x00")  # watch = false: ZooKeeper's multiRead drops the flag anyway (Op.getData(path))
        append(_DONE)
        return b"".join(parts)

    def deserialize(self, buffer: bytes, offset: int) -> list[ReadResult]:
        self.response_bytes = len(buffer) - offset
        results = _decode_multi_response(buffer, offset)
        if len(results) != len(self.ops):
            raise ValueError(f"multiRead answered {len(results)} results for {len(self.ops)} ops")
        return results


class _RawMultiReadRequest(MultiReadRequest):
    """For the bulk readers: kazoo's connection thread only hands over the raw answer, and the reading
    thread decodes it. Decoding in the connection thread makes the two threads fight for the GIL: every
    time the reader releases it (e.g. to wake the connection with the next request) it waits up to the
    switch interval (5 ms) to get it back, which cost about half of a 110,000-znode read."""

    __slots__ = ()

    def deserialize(self, buffer: bytes, offset: int) -> tuple[bytes, int]:  # type: ignore[override]
        self.response_bytes = len(buffer) - offset
        return buffer, offset

    def decode(self, raw: tuple[bytes, int]) -> list[ReadResult]:
        return MultiReadRequest.deserialize(self, *raw)


def _decode_multi_response(buf: bytes, off: int) -> list[ReadResult]:
    results: list[ReadResult] = []
    append = results.append
    unpack_header = _HEADER_INT.unpack_from
    unpack_int = _INT.unpack_from
    unpack_stat = _STAT.unpack_from
    new_tuple = tuple.__new__  # what ZnodeStat._make does, minus a call and a length check (always 11)
    stat_type = ZnodeStat
    stat_size = _STAT.size
    last = len(buf) - _HEADER.size  # where the closing done-header must start
    while off < last:
        optype, done, _err, n = unpack_header(buf, off)
        off += _HEADER_INT.size
        if done:
            raise ValueError(f"multiRead response: done header at offset {off} before the end")
        if optype == OP_GET_DATA:
            if n < 0:
                data = None
            else:
                data = buf[off : off + n]
                off += n
            append((data, new_tuple(stat_type, unpack_stat(buf, off))))
            off += stat_size
        elif optype == OP_GET_CHILDREN:
            children: list[str] = []
            for _ in range(max(n, 0)):
                size = unpack_int(buf, off)[0]
                off += 4
                children.append(buf[off : off + size].decode())
                off += size
            append(children)
        elif optype == OP_ERROR:
            append(EXCEPTIONS[n]())
        else:
            raise ValueError(f"multiRead response: unexpected result type {optype}")
    if off != last or not _HEADER.unpack_from(buf, off)[1]:
        raise ValueError("multiRead response: missing or misplaced done header")
    return results


# -- chroot handling ------------------------------------------------------------------------------------


def server_path(client: KazooClient, path: str) -> str:
    """``path`` as the server sees it: the client's chroot prepended the way kazoo does for its own
    requests (``_prefix_root``), with a fast path for already-normal absolute paths."""
    if not isinstance(path, str):
        raise TypeError(f"Invalid type for 'path' (string expected): {path!r}")
    chroot: str = client.chroot or ""
    return _server_path(chroot, path)


def _server_path(chroot: str, path: str) -> str:
    if path.startswith("/") and len(path) > 1 and not path.endswith("/") and "//" not in path and "/." not in path:
        return chroot + path
    result: str = _prefix_root(chroot, path)
    return result


def _server_paths(client: KazooClient, paths: Iterable[str]) -> list[str]:
    chroot: str = client.chroot or ""
    out = []
    for p in paths:
        if not isinstance(p, str):
            raise TypeError(f"Invalid type for 'path' (string expected): {p!r}")
        out.append(_server_path(chroot, p))
    return out


# -- support detection ------------------------------------------------------------------------------------

_support: weakref.WeakKeyDictionary[KazooClient, bool] = weakref.WeakKeyDictionary()
_support_lock = threading.Lock()


def supports_multi_read(client: KazooClient, *, timeout: float = 10.0) -> bool:
    """Whether the client's server answers ``multiRead``; probed once per client (an empty multiRead)
    and cached. On a server older than 3.6 the probe costs one reconnect: call it right after connecting.

    Raises :class:`MultiReadTimeoutError` if the probe is not answered within ``timeout``.
    """
    with _support_lock:
        known = _support.get(client)
    if known is not None:
        return known
    deadline = time.monotonic() + timeout
    for attempt in range(MAX_RESENDS + 1):
        result = client.handler.async_result()
        client._call(MultiReadRequest([]), result)
        try:
            result.get(timeout=max(_remaining(deadline), 0.0))
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
    with _support_lock:
        _support[client] = supported
    return supported


def known_multi_read_support(client: KazooClient) -> bool | None:
    """The cached answer of :func:`supports_multi_read`, without probing (None: not probed yet)."""
    with _support_lock:
        return _support.get(client)


def set_multi_read_support(client: KazooClient, supported: bool) -> None:
    """Record the answer without probing (e.g. ``False`` to force the single-read fallback)."""
    with _support_lock:
        _support[client] = supported


def forget_multi_read_support(client: KazooClient) -> None:
    """Forget the cached answer, so the next use probes again (e.g. after moving to another ensemble)."""
    with _support_lock:
        _support.pop(client, None)


def _mark_unsupported(client: KazooClient) -> None:
    log.warning("ZooKeeper server answered multiRead with UNIMPLEMENTED: falling back to single reads")
    set_multi_read_support(client, False)


# -- one multi-op read --------------------------------------------------------------------------------------


def multi_read_async(client: KazooClient, ops: Sequence[ReadOp]) -> IAsyncResult:
    """Send ``ops`` as one multiRead; the result is a list with one :data:`ReadResult` per op.

    A failed op (e.g. a missing znode) is a ``kazoo.exceptions`` instance in its slot and does not fail
    the others. Paths are the client's (chroot applied as for kazoo's own calls). No size splitting:
    keep ``ops`` small enough yourself, or use :func:`read_data` / :func:`read_children`. If the server is
    known not to support multiRead, or answers UNIMPLEMENTED, the ops are sent as single reads instead and
    the result has the same shape.
    """
    pairs: list[tuple[int, str]] = []
    chroot: str = client.chroot or ""
    for op in ops:
        if isinstance(op, GetDataOp):
            opcode = OP_GET_DATA
        elif isinstance(op, GetChildrenOp):
            opcode = OP_GET_CHILDREN
        else:
            raise TypeError(f"not a GetDataOp or GetChildrenOp: {op!r}")
        if not isinstance(op.path, str):
            raise TypeError(f"Invalid type for 'path' (string expected): {op.path!r}")
        pairs.append((opcode, _server_path(chroot, op.path)))

    with _support_lock:
        known = _support.get(client)
    if known is False:
        return _single_reads_async(client, list(ops))

    request = MultiReadRequest(pairs)
    inner = client.handler.async_result()
    client._call(request, inner)
    if known is True:
        return inner

    outer = client.handler.async_result()

    def settle(done: IAsyncResult) -> None:
        exc = done.exception
        if isinstance(exc, UnimplementedError):
            _mark_unsupported(client)
            # the server closes the connection after UNIMPLEMENTED: reads sent before kazoo notices come
            # back as ConnectionLoss, so resend those
            _single_reads_async(client, list(ops), resends=MAX_RESENDS).rawlink(lambda r: _copy_result(r, outer))
            return
        if exc is None:
            set_multi_read_support(client, True)
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

    def send(index: int, attempt: int) -> None:
        op = ops[index]
        sub = client.get_async(op.path) if isinstance(op, GetDataOp) else client.get_children_async(op.path)
        sub.rawlink(lambda r: on_done(index, attempt, r))

    def on_done(index: int, attempt: int, r: IAsyncResult) -> None:
        exc = r.exception
        if isinstance(exc, ConnectionLoss) and attempt < resends:
            send(index, attempt + 1)
            return
        results[index] = exc if exc is not None else r.value
        with lock:
            remaining[0] -= 1
            last = remaining[0] == 0
        if last:
            outer.set(results)

    for i in range(len(ops)):
        send(i, 0)
    return outer


# -- bulk readers ---------------------------------------------------------------------------------------------


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
    request: _RawMultiReadRequest = field(init=False)
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
    return _bulk_read(client, paths, OP_GET_DATA, _DATA_OVERHEAD + max(expected_size, 0), **options)


def read_children(
    client: KazooClient, paths: Sequence[str], *, expected_size: int = 512, **options: Unpack[BulkReadOptions]
) -> dict[str, list[str] | None]:
    """Children of every path (``None`` for a missing znode), like :func:`read_data`. ``expected_size``
    is the expected bytes of one listing (about 4 + len(name) per child)."""
    return _bulk_read(client, paths, OP_GET_CHILDREN, _CHILDREN_OVERHEAD + max(expected_size, 0), **options)


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
    servers = _server_paths(client, unique)
    out: dict[str, _AnyResult] = {}
    if not unique:
        return out

    use_multi = multi_read  # forcing (True/False) applies to this call only and is not cached
    if use_multi is None:
        use_multi = supports_multi_read(client, timeout=max(_remaining(deadline), 0.001))

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


_VERSION = struct.Struct("!i")
_VERSION_AT: Final = 32  # Stat: czxid, mzxid, ctime, mtime (4 longs), then version


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
        datas, versions, failed = _decode_versions(*raw, len(b.ops))
        for i, code in failed:
            error = EXCEPTIONS[code]()
            error.add_note(f"while reading {b.user_paths[i]!r}")
            raise error
        next_index = b.start + len(datas)
        sink(b.start, datas, versions)

    use_multi = options.get("multi_read")
    if use_multi is None:
        use_multi = supports_multi_read(client, timeout=max(_remaining(deadline), 0.001))
    leftover: list[str] | None = users
    if use_multi:
        leftover = _pipelined_multi(
            client,
            users,
            _server_paths(client, users),
            OP_GET_DATA,
            _DATA_OVERHEAD + max(expected_size, 0),
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


def _decode_versions(
    buf: bytes, off: int, expected: int
) -> tuple[list[bytes | None], list[int], list[tuple[int, int]]]:
    """A multiRead answer of getData ops as parallel lists of data and version (-1 for NoNode), plus the
    (index, error code) of any other failed op."""
    datas: list[bytes | None] = []
    versions: list[int] = []
    failed: list[tuple[int, int]] = []
    add_data = datas.append
    add_version = versions.append
    unpack_header = _HEADER_INT.unpack_from
    unpack_version = _VERSION.unpack_from
    header_size = _HEADER_INT.size
    stat_size = _STAT.size
    no_node = NoNodeError.code
    last = len(buf) - _HEADER.size
    while off < last:
        optype, done, _err, n = unpack_header(buf, off)
        off += header_size
        if done:
            raise ValueError(f"multiRead response: done header at offset {off} before the end")
        if optype == OP_GET_DATA:
            if n < 0:
                add_data(None)
            else:
                add_data(buf[off : off + n])
                off += n
            add_version(unpack_version(buf, off + _VERSION_AT)[0])
            off += stat_size
        elif optype == OP_ERROR:
            if n != no_node:
                failed.append((len(datas), n))
            add_data(None)
            add_version(-1)
        else:
            raise ValueError(f"multiRead response: unexpected result type {optype} for a getData")
    if off != last or not _HEADER.unpack_from(buf, off)[1]:
        raise ValueError("multiRead response: missing or misplaced done header")
    if len(datas) != expected:
        raise ValueError(f"multiRead answered {len(datas)} results for {expected} ops")
    return datas, versions, failed


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

    def send(b: _Batch) -> None:
        b.request = _RawMultiReadRequest(b.ops)
        b.result = client.handler.async_result()
        b.sends += 1
        client._call(b.request, b.result)
        stats.requests += 1
        window.append(b)

    def next_batch() -> _Batch:
        nonlocal cursor
        count = max(1, min(batch, int(max_response_bytes // estimate.per_op), total - cursor))
        while True:
            chunk = servers[cursor : cursor + count]
            request_bytes = _HEADER.size + _REQUEST_OP_OVERHEAD * count + len("".join(chunk).encode())
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
            send(retry.popleft() if retry else next_batch())
        b = window.popleft()
        try:
            raw = b.result.get(timeout=max(_remaining(deadline), 0.0))
        except client.handler.timeout_exception:
            raise _timeout_error(client, "read (multiRead)", unanswered() + len(b.ops), total, deadline) from None
        except UnimplementedError:
            unsupported = True
            _mark_unsupported(client)
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
            send(b)
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
