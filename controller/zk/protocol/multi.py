"""A write ``multi`` (opcode 14) whose creates are ``create2`` (opcode 15), so every op answers with its Stat.

Why not kazoo's transaction: ``TransactionRequest.create`` sends ``create`` (opcode 1), which ZooKeeper
answers with ``CreateResponse(path)`` only, and ``kazoo.protocol.serialization.Transaction.deserialize``
reads result types 1, 2, 5, 13 and -1 only, so it cannot read a ``create2`` result.

Wire format (ZooKeeper's ``MultiOperationRecord`` / ``MultiResponse``, records in ``zookeeper.jute``):

- request: for each op ``MultiHeader(type, done=false, err=-1)`` + the op's request record, then
  ``MultiHeader(-1, true, -1)``. Records: ``CreateRequest(ustring path, buffer data, vector<ACL> acl,
  int flags)`` (create2 uses it too), ``SetDataRequest(path, data, int version)``,
  ``DeleteRequest(path, int version)``, ``CheckVersionRequest(path, int version)``.
- response: for each op ``MultiHeader(type, false, err)`` + body, then ``MultiHeader(-1, true, -1)``.
  Bodies: ``Create2Response(ustring path, Stat stat)`` for create2, ``SetDataResponse(Stat)`` for setData,
  nothing for delete and check, ``ErrorResponse(int err)`` when the header's type is -1.

All or nothing: when one op fails, every op answers with ``ErrorResponse`` (``DataTree.processTxn``, case
``OpCode.multi``): the ops before the failing one ``Code.OK`` (0), the failing op its own code, the ops after it
``Code.RUNTIMEINCONSISTENCY`` (-2; ``PrepRequestProcessor.pRequestHelper`` stops preparing ops after the
first failure). The reply header's own error is 0 (``FinalRequestProcessor.processRequest`` rethrows a request's
exception for every request type but ``multi``). Each error becomes an instance of kazoo's exception class for
its code (``kazoo.exceptions.EXCEPTIONS``: 0 is ``RolledBackError``, -2 ``RuntimeInconsistency``) in that op's
slot, exactly as kazoo's ``Transaction.deserialize`` returns them.

Server version: ``create2`` exists since ZooKeeper 3.5.0, but inside a multi the server answers it with its Stat
only from 3.7.2, 3.8.2 and 3.9.0 on (ZOOKEEPER-4026): before that ``MultiOperationRecord.deserialize`` turns
every create2 into ``Op.create`` with opcode ``create``, so the answer is a plain ``CreateResponse(path)``
(header type 1) — seen from a Debian ZooKeeper 3.8.0. Such an answer is read as ``Created(path, None)``: the
create happened, its Stat is unknown and must be read back. ZooKeeper 3.4's ``MultiTransactionRecord.deserialize``
throws ``IOException("Invalid type of op")`` on it, which ``PrepRequestProcessor.pRequest`` turns into a
``MARSHALLINGERROR`` for the whole request: kazoo raises ``MarshallingError`` and nothing is written.

Chroots: paths are sent with the client's chroot prefixed (the caller does it); the paths in
:class:`Created` results are stripped of it as ``KazooClient.unchroot`` strips kazoo's own create results.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Final, NamedTuple, TypeAlias

from kazoo.client import KazooClient
from kazoo.exceptions import EXCEPTIONS, KazooException
from kazoo.interfaces import IAsyncResult
from kazoo.protocol.states import ZnodeStat
from kazoo.security import ACL

__all__ = [
    "CHECKED",
    "DELETED",
    "Checked",
    "Created",
    "Deleted",
    "MultiRequest",
    "OpResult",
    "SetDone",
    "multi_async",
    "parse_multi_response",
]

#: ZooDefs.OpCode values.
OP_CREATE: Final = 1
OP_DELETE: Final = 2
OP_SET_DATA: Final = 5
OP_CHECK: Final = 13
OP_MULTI: Final = 14
OP_CREATE2: Final = 15
OP_ERROR: Final = -1

_HEADER = struct.Struct("!iBi")  # MultiHeader: int type, boolean done, int err
_INT = struct.Struct("!i")
_STAT = struct.Struct("!qqqqiiiqiiq")  # Stat: czxid mzxid ctime mtime version cversion aversion ephemeralOwner ...
_DONE: Final = _HEADER.pack(-1, True, -1)
_NULL_BUFFER: Final = _INT.pack(-1)
_OP_HEADER = {op: _HEADER.pack(op, False, -1) for op in (OP_CREATE2, OP_DELETE, OP_SET_DATA, OP_CHECK)}


class Created(NamedTuple):
    """A create2's answer: the znode's path (the sequential suffix included; chroot-relative) and its Stat
    (czxid = mzxid = the multi's zxid, version 0); ``None`` from a server that answers create2 in a multi as a
    plain create (ZooKeeper before 3.7.2 / 3.8.2 / 3.9.0)."""

    path: str
    stat: ZnodeStat | None


class SetDone(NamedTuple):
    """A setData's answer: the znode's Stat after the write (version bumped, mzxid = the multi's zxid)."""

    stat: ZnodeStat


@dataclass(frozen=True, slots=True)
class Deleted:
    """A delete's answer (ZooKeeper returns no body)."""


@dataclass(frozen=True, slots=True)
class Checked:
    """A check's answer (ZooKeeper returns no body)."""


DELETED: Final = Deleted()
CHECKED: Final = Checked()

#: One op's result: its answer, or the kazoo exception for its error code (the multi wrote nothing then).
OpResult: TypeAlias = Created | SetDone | Deleted | Checked | KazooException


def _string(value: str) -> bytes:
    raw = value.encode()
    return _INT.pack(len(raw)) + raw


def _buffer(data: bytes | None) -> bytes:
    return _NULL_BUFFER if data is None else _INT.pack(len(data)) + data


def _acl(acl: Sequence[ACL]) -> bytes:
    out = bytearray(_INT.pack(len(acl)))
    for entry in acl:
        out += _INT.pack(entry.perms)
        out += _string(entry.id.scheme)
        out += _string(entry.id.id)
    return bytes(out)


class MultiRequest:
    """A write multi, built op by op (paths are server paths: the chroot already prefixed), sent by
    :func:`multi_async`. ``chroot`` is stripped from the paths of :class:`Created` results.

    With ``client``, :attr:`zxid` is, once answered, the reply header's zxid: for a multi that was applied, the
    one zxid of its transaction (every znode it created has it as czxid, every one it changed as mzxid), known
    even when the server answers creates without their Stat. kazoo's connection thread stores it as
    ``client.last_zxid`` right before it asks the request to read the reply's body
    (``ConnectionHandler._read_response``); a connection reads one reply at a time. (It is kept here, not on the
    results: kazoo copies a multi's result list, request type 14, into a new one to strip chroots.)"""

    type: ClassVar[int] = OP_MULTI

    __slots__ = ("_body", "chroot", "client", "ops", "zxid")

    def __init__(self, chroot: str = "", client: KazooClient | None = None) -> None:
        self.chroot = chroot
        self.client = client
        self.ops = 0
        self.zxid = -1
        self._body = bytearray()

    def __repr__(self) -> str:
        return f"MultiRequest({self.ops} ops, chroot={self.chroot!r})"

    def create(self, path: str, data: bytes | None, acl: Sequence[ACL], flags: int = 0) -> None:
        """A create2; ``data=None`` writes ZooKeeper null data."""
        self._body += _OP_HEADER[OP_CREATE2]
        self._body += _string(path)
        self._body += _buffer(data)
        self._body += _acl(acl)
        self._body += _INT.pack(flags)
        self.ops += 1

    def set_data(self, path: str, data: bytes, version: int = -1) -> None:
        self._body += _OP_HEADER[OP_SET_DATA]
        self._body += _string(path)
        self._body += _buffer(data)
        self._body += _INT.pack(version)
        self.ops += 1

    def delete(self, path: str, version: int = -1) -> None:
        self._body += _OP_HEADER[OP_DELETE]
        self._body += _string(path)
        self._body += _INT.pack(version)
        self.ops += 1

    def check(self, path: str, version: int) -> None:
        self._body += _OP_HEADER[OP_CHECK]
        self._body += _string(path)
        self._body += _INT.pack(version)
        self.ops += 1

    def serialize(self) -> bytes:
        return bytes(self._body) + _DONE

    def deserialize(self, buffer: bytes, offset: int) -> list[OpResult]:
        if self.client is not None:
            self.zxid = int(self.client.last_zxid)
        return parse_multi_response(buffer, offset, self.chroot)


def parse_multi_response(buffer: bytes, offset: int, chroot: str = "") -> list[OpResult]:
    """A ``MultiResponse`` from ``offset``: one result per op, in order. A result type a write multi never
    answers with (a read's) raises ValueError: the bytes after it cannot be framed."""
    results: list[OpResult] = []
    header = _HEADER.unpack_from
    stat_of = _STAT.unpack_from
    make_stat = ZnodeStat._make
    stat_size = _STAT.size
    while True:
        op, done, _err = header(buffer, offset)
        offset += _HEADER.size
        if done:
            return results
        if op == OP_SET_DATA:
            results.append(SetDone(make_stat(stat_of(buffer, offset))))
            offset += stat_size
        elif op in (OP_CREATE2, OP_CREATE):
            (length,) = _INT.unpack_from(buffer, offset)
            offset += _INT.size
            path = bytes(buffer[offset : offset + length]).decode()
            offset += length
            if chroot:  # as KazooClient.unchroot
                path = "/" if path == chroot else path[len(chroot) :] if path.startswith(chroot) else path
            if op == OP_CREATE2:
                results.append(Created(path, make_stat(stat_of(buffer, offset))))
                offset += stat_size
            else:  # a server without ZOOKEEPER-4026 answers a create2 in a multi as a create: no Stat
                results.append(Created(path, None))
        elif op == OP_DELETE:
            results.append(DELETED)
        elif op == OP_CHECK:
            results.append(CHECKED)
        elif op == OP_ERROR:
            (code,) = _INT.unpack_from(buffer, offset)
            offset += _INT.size
            results.append(EXCEPTIONS[code]())
        else:
            raise ValueError(f"unexpected result type {op} in a write multi's response")


def multi_async(
    client: KazooClient, request: MultiRequest, *, on_done: Callable[[IAsyncResult], None] | None = None
) -> IAsyncResult:
    """Send ``request`` on ``client``'s connection; the async result's value is the list of
    :data:`OpResult`. Request-level failures (ConnectionLoss, MarshallingError, ...) are its exception.

    ``on_done`` is called with the async result once it holds the answer or the failure, on kazoo's completion
    thread. It is linked before the request is sent: kazoo's ``rawlink`` never calls a callback linked to a
    result already set."""
    result: Any = client.handler.async_result()
    if on_done is not None:
        result.rawlink(on_done)
    client._call(request, result)
    return result
