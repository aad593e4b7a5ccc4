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

Plain creates: ``MultiRequest.create(..., stat=False)`` sends ``create`` (opcode 1), answered with
``CreateResponse(path)`` (read as ``Created(path, None)``), which every server with multi takes; the bulk create
pipeline (:mod:`controller.zk.bulk`) uses it, since it needs no Stat and writes into servers of any version.

Chroots: paths are sent with the client's chroot prefixed (the caller does it); the paths in
:class:`Created` results are stripped of it as ``KazooClient.unchroot`` strips kazoo's own create results.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Final, NamedTuple, TypeAlias

from kazoo.exceptions import EXCEPTIONS, KazooException
from kazoo.protocol.states import ZnodeStat

from controller.zk.protocol.jute import (
    INT,
    MULTI_DONE,
    MULTI_HEADER,
    NULL_BUFFER,
    OP_CHECK,
    OP_CREATE,
    OP_CREATE2,
    OP_DELETE,
    OP_ERROR,
    OP_MULTI,
    OP_SET_DATA,
    STAT,
    encode_acls,
    encode_buffer,
    encode_ustring,
    op_header,
)
from controller.zk.protocol.paths import unchroot

if TYPE_CHECKING:
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
    "create_overhead",
    "parse_multi_response",
]

_OP_HEADER = {op: op_header(op) for op in (OP_CREATE, OP_CREATE2, OP_DELETE, OP_SET_DATA, OP_CHECK)}


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


class MultiRequest:
    """A write multi, built op by op (paths are server paths: the chroot already prefixed) and sent by
    :func:`controller.zk.send.multi_async`. ``chroot`` is stripped from the paths of :class:`Created` results.
    Each op is encoded as it is added, so ``serialize`` (run on kazoo's connection thread) only joins bytes.

    With ``last_zxid`` (a client's ``last_zxid`` read), :attr:`zxid` is, once answered, the reply header's zxid:
    for a multi that was applied, the one zxid of its transaction (every znode it created has it as czxid, every
    one it changed as mzxid), known even when the server answers creates without their Stat. kazoo's connection
    thread stores it as ``client.last_zxid`` right before it asks the request to read the reply's body
    (``ConnectionHandler._read_response``); a connection reads one reply at a time. (It is kept here, not on the
    results: kazoo copies a multi's result list, request type 14, into a new one to strip chroots.)"""

    type: ClassVar[int] = OP_MULTI

    __slots__ = ("_body", "chroot", "last_zxid", "ops", "zxid")

    def __init__(self, chroot: str = "", last_zxid: Callable[[], int] | None = None) -> None:
        self.chroot = chroot
        self.last_zxid = last_zxid
        self.ops = 0
        self.zxid = -1
        self._body = bytearray()

    def __repr__(self) -> str:
        return f"MultiRequest({self.ops} ops, chroot={self.chroot!r})"

    def create(
        self, path: str, data: bytes | None, acl: Sequence[ACL] | bytes, flags: int = 0, *, stat: bool = True
    ) -> None:
        """A create2 (answered with its Stat); ``stat=False`` sends a plain create (opcode 1), answered with the
        path alone, which every server with multi takes (create2 needs 3.5). ``data=None`` writes ZooKeeper
        null data, which kazoo's ``TransactionRequest`` cannot send. ``acl`` may come encoded already
        (:func:`~controller.zk.protocol.jute.encode_acls`)."""
        self._body += b"".join(
            (
                _OP_HEADER[OP_CREATE2 if stat else OP_CREATE],
                encode_ustring(path),
                encode_buffer(data),
                acl if isinstance(acl, bytes) else encode_acls(acl),
                INT.pack(flags),
            )
        )
        self.ops += 1

    def creates(
        self, nodes: Iterable[tuple[str, bytes | None]], acl: Sequence[ACL], flags: int = 0, *, stat: bool = True
    ) -> None:
        """A :meth:`create` of each ``(path, data)`` of ``nodes``, all with ``acl`` and ``flags``: the ACL encoded
        once and no call per create, so a bulk create of a million znodes costs what a hand-built request does
        (~0.3 µs a create here, against ~1.2 µs through ``create``)."""
        body = self._body
        header = _OP_HEADER[OP_CREATE2 if stat else OP_CREATE]
        tail = encode_acls(acl) + INT.pack(flags)
        pack = INT.pack
        count = 0
        for path, data in nodes:
            raw = path.encode()
            body += header
            body += pack(len(raw))
            body += raw
            if data is None:
                body += NULL_BUFFER
            else:
                body += pack(len(data))
                body += data
            body += tail
            count += 1
        self.ops += count

    def set_data(self, path: str, data: bytes, version: int = -1) -> None:
        self._body += _OP_HEADER[OP_SET_DATA]
        self._body += encode_ustring(path)
        self._body += encode_buffer(data)
        self._body += INT.pack(version)
        self.ops += 1

    def delete(self, path: str, version: int = -1) -> None:
        self._body += _OP_HEADER[OP_DELETE]
        self._body += encode_ustring(path)
        self._body += INT.pack(version)
        self.ops += 1

    def check(self, path: str, version: int) -> None:
        self._body += _OP_HEADER[OP_CHECK]
        self._body += encode_ustring(path)
        self._body += INT.pack(version)
        self.ops += 1

    def serialize(self) -> bytes:
        return bytes(self._body) + MULTI_DONE

    def deserialize(self, buffer: bytes, offset: int) -> list[OpResult]:
        if self.last_zxid is not None:
            self.zxid = self.last_zxid()
        return parse_multi_response(buffer, offset, self.chroot)


def create_overhead(acl: Sequence[ACL]) -> int:
    """Bytes a create with ``acl`` adds to a multi request beyond its path and data: the op header, the path's
    and data's lengths, the ACL and the flags."""
    return MULTI_HEADER.size + 2 * INT.size + len(encode_acls(acl)) + INT.size


def parse_multi_response(buffer: bytes, offset: int, chroot: str = "") -> list[OpResult]:
    """A ``MultiResponse`` from ``offset``: one result per op, in order. A result type a write multi never
    answers with (a read's) raises ValueError: the bytes after it cannot be framed."""
    results: list[OpResult] = []
    header = MULTI_HEADER.unpack_from
    header_size = MULTI_HEADER.size
    stat_of = STAT.unpack_from
    make_stat = ZnodeStat._make
    stat_size = STAT.size
    while True:
        op, done, _err = header(buffer, offset)
        offset += header_size
        if done:
            return results
        if op == OP_SET_DATA:
            results.append(SetDone(make_stat(stat_of(buffer, offset))))
            offset += stat_size
        elif op in (OP_CREATE2, OP_CREATE):
            (length,) = INT.unpack_from(buffer, offset)
            offset += INT.size
            path = unchroot(chroot, bytes(buffer[offset : offset + length]).decode())
            offset += length
            if op == OP_CREATE2:
                results.append(Created(path, make_stat(stat_of(buffer, offset))))
                offset += stat_size
            else:  # a plain create's, or a create2's from a server without ZOOKEEPER-4026: no Stat
                results.append(Created(path, None))
        elif op == OP_DELETE:
            results.append(DELETED)
        elif op == OP_CHECK:
            results.append(CHECKED)
        elif op == OP_ERROR:
            (code,) = INT.unpack_from(buffer, offset)
            offset += INT.size
            results.append(EXCEPTIONS[code]())
        else:
            raise ValueError(f"unexpected result type {op} in a write multi's response")
