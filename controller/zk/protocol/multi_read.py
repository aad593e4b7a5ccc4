"""ZooKeeper's ``multiRead`` (opcode 22, ZooKeeper >= 3.6): many getData / getChildren ops in one request.

Why: with kazoo, one ``get_async`` per znode costs more Python per request than the server needs to answer it;
``multiRead`` packs up to thousands of ops into one request and one response, so the per-request overhead is paid
once per batch. kazoo has no record for it.

Wire format (``MultiOperationRecord`` / ``MultiResponse`` in ZooKeeper's jute):

- request: for each op ``MultiHeader(type, done=false, err=-1)`` + ``(ustring path, boolean watch)``, then
  ``MultiHeader(-1, true, -1)``. Only getData (4) and getChildren (8) are allowed; any other op type makes
  the server fail the whole request with MARSHALLINGERROR.
- response: for each op ``MultiHeader(type, false, err)`` + body, then ``MultiHeader(-1, true, -1)``. The
  body is ``(buffer data, Stat)`` for getData, ``vector<ustring>`` for getChildren and ``int err`` for a
  failed op (header type -1). Ops fail one by one: a missing znode fails only its own op (unlike a write
  ``multi``, which is all-or-nothing). Verified against a Debian ZooKeeper 3.8 server.

No watches: the server drops the ops' watch flag (``Op.getData(path)``); :mod:`.watches` sets many at once.
Paths are server paths (:mod:`.paths`); results carry no paths, so nothing needs unchrooting.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import ClassVar, Final, NamedTuple, TypeAlias

from kazoo.exceptions import EXCEPTIONS, NoNodeError
from kazoo.protocol.states import ZnodeStat

from controller.zk.protocol.jute import (
    INT,
    MULTI_DONE,
    MULTI_HEADER,
    OP_ERROR,
    OP_GET_CHILDREN,
    OP_GET_DATA,
    OP_MULTI_READ,
    STAT,
    op_header,
)

__all__ = [
    "CHILDREN_RESULT_OVERHEAD",
    "DATA_RESULT_OVERHEAD",
    "MULTI_READ",
    "REQUEST_OP_OVERHEAD",
    "DataResult",
    "GetChildrenOp",
    "GetDataOp",
    "MultiReadRequest",
    "RawMultiReadRequest",
    "ReadOp",
    "ReadResult",
    "decode_data_versions",
    "decode_multi_read",
    "request_size",
]

MULTI_READ: Final = OP_MULTI_READ

_HEADER_INT = struct.Struct("!iBii")  # MultiHeader + the body's first int (buffer length / count / error)
_OP_PREFIX = {OP_GET_DATA: op_header(OP_GET_DATA), OP_GET_CHILDREN: op_header(OP_GET_CHILDREN)}
_VERSION_AT: Final = 32  # Stat: czxid, mzxid, ctime, mtime (4 longs), then version

#: Request bytes of one op besides its path: header (9) + path length (4) + watch flag (1).
REQUEST_OP_OVERHEAD: Final = MULTI_HEADER.size + INT.size + 1
#: Response bytes of one getData op besides its data: header (9) + data length (4) + Stat (68).
DATA_RESULT_OVERHEAD: Final = MULTI_HEADER.size + INT.size + STAT.size
#: Response bytes of one getChildren op besides the names: header (9) + count (4).
CHILDREN_RESULT_OVERHEAD: Final = MULTI_HEADER.size + INT.size


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


def request_size(server_paths: Sequence[str]) -> int:
    """The bytes of a multiRead request of one op per path (the server drops the connection past its
    ``jute.maxbuffer``)."""
    return MULTI_HEADER.size + REQUEST_OP_OVERHEAD * len(server_paths) + len("".join(server_paths).encode())


class MultiReadRequest:
    """A ``multiRead`` request for kazoo's connection.

    ``ops`` are ``(opcode, server_path)`` pairs: opcode 4 (getData) or 8 (getChildren) and a path that already
    carries the client's chroot. The async result is set to one :data:`ReadResult` per op, in order.
    ``response_bytes`` is the size of the answer once it arrived.
    """

    type: ClassVar[int] = OP_MULTI_READ
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
        pack_int = INT.pack
        for opcode, path in self.ops:
            raw = path.encode()
            append(_OP_PREFIX[opcode])
            append(pack_int(len(raw)))
            append(raw)
            append(b"\x00")  # watch = false: ZooKeeper's multiRead drops the flag anyway (Op.getData(path))
        append(MULTI_DONE)
        return b"".join(parts)

    def deserialize(self, buffer: bytes, offset: int) -> list[ReadResult]:
        self.response_bytes = len(buffer) - offset
        return decode_multi_read(buffer, offset, len(self.ops))


class RawMultiReadRequest(MultiReadRequest):
    """A multiRead whose async result is the raw answer ``(buffer, offset)``, for the reading thread to decode.

    Why: decoding in kazoo's connection thread makes the two threads fight for the GIL: every time the reader
    releases it (e.g. to wake the connection with the next request) it waits up to the switch interval (5 ms)
    to get it back, which cost about half of a 110,000-znode read."""

    __slots__ = ()

    def deserialize(self, buffer: bytes, offset: int) -> tuple[bytes, int]:  # type: ignore[override]
        self.response_bytes = len(buffer) - offset
        return buffer, offset

    def decode(self, raw: tuple[bytes, int]) -> list[ReadResult]:
        return decode_multi_read(*raw, len(self.ops))


def decode_multi_read(buf: bytes, off: int, expected: int) -> list[ReadResult]:
    """A multiRead answer from ``off``: one :data:`ReadResult` per op; ValueError unless it holds ``expected``
    results closed by the done header."""
    results: list[ReadResult] = []
    append = results.append
    unpack_header = _HEADER_INT.unpack_from
    unpack_int = INT.unpack_from
    unpack_stat = STAT.unpack_from
    new_tuple = tuple.__new__  # what ZnodeStat._make does, minus a call and a length check (always 11)
    stat_type = ZnodeStat
    stat_size = STAT.size
    last = len(buf) - MULTI_HEADER.size  # where the closing done-header must start
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
    _check_end(buf, off, last, len(results), expected)
    return results


def decode_data_versions(
    buf: bytes, off: int, expected: int
) -> tuple[list[bytes | None], list[int], list[tuple[int, int]]]:
    """A multiRead answer of getData ops as parallel lists of data and version (-1 for NoNode), plus the
    (index, error code) of any other failed op: no Stat tuple is built per znode."""
    datas: list[bytes | None] = []
    versions: list[int] = []
    failed: list[tuple[int, int]] = []
    add_data = datas.append
    add_version = versions.append
    unpack_header = _HEADER_INT.unpack_from
    unpack_version = INT.unpack_from
    header_size = _HEADER_INT.size
    stat_size = STAT.size
    no_node = NoNodeError.code
    last = len(buf) - MULTI_HEADER.size
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
    _check_end(buf, off, last, len(datas), expected)
    return datas, versions, failed


def _check_end(buf: bytes, off: int, last: int, results: int, expected: int) -> None:
    """The answer ends with the done header right after its last result, and has one result per op sent."""
    if off != last or not MULTI_HEADER.unpack_from(buf, off)[1]:
        raise ValueError("multiRead response: missing or misplaced done header")
    if results != expected:
        raise ValueError(f"multiRead answered {results} results for {expected} ops")
