"""The pieces every record in this package is built from: ZooKeeper's opcodes and jute's binary encoding.

Source: ``zookeeper-jute``'s ``BinaryOutputArchive`` / ``BinaryInputArchive`` (big-endian ``int`` and ``long``;
``ustring`` and ``buffer`` as an ``int`` length then the bytes, length -1 for a null buffer; ``vector`` as an
``int`` count then the items), the records in ``zookeeper-jute/src/main/resources/zookeeper.jute`` (``Stat``,
``ACL``, ``MultiHeader``) and ``ZooDefs.OpCode``.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from kazoo.security import ACL

__all__ = [
    "INT",
    "JUTE_MAXBUFFER",
    "LONG",
    "MULTI_DONE",
    "MULTI_HEADER",
    "NULL_BUFFER",
    "OP_ADD_WATCH",
    "OP_CHECK",
    "OP_CREATE",
    "OP_CREATE2",
    "OP_DELETE",
    "OP_ERROR",
    "OP_GET_CHILDREN",
    "OP_GET_DATA",
    "OP_MULTI",
    "OP_MULTI_READ",
    "OP_REMOVE_WATCHES",
    "OP_SET_DATA",
    "OP_SET_WATCHES",
    "STAT",
    "encode_acls",
    "encode_buffer",
    "encode_ustring",
    "op_header",
]

#: ZooDefs.OpCode values.
OP_CREATE: Final = 1
OP_DELETE: Final = 2
OP_GET_DATA: Final = 4
OP_SET_DATA: Final = 5
OP_GET_CHILDREN: Final = 8
OP_CHECK: Final = 13
OP_MULTI: Final = 14
OP_CREATE2: Final = 15
OP_REMOVE_WATCHES: Final = 18  # ZooKeeper 3.5+
OP_MULTI_READ: Final = 22  # ZooKeeper 3.6+
OP_SET_WATCHES: Final = 101
OP_ADD_WATCH: Final = 106  # ZooKeeper 3.6+
#: The result type of a failed op in a multi's response (``ErrorResponse(int err)`` follows).
OP_ERROR: Final = -1

#: ZooKeeper's default ``jute.maxbuffer`` (0xfffff), which bounds a packet's length on both ends.
JUTE_MAXBUFFER: Final = 0xFFFFF

INT: Final = struct.Struct("!i")
LONG: Final = struct.Struct("!q")
#: MultiHeader: int type, boolean done, int err.
MULTI_HEADER: Final = struct.Struct("!iBi")
#: Stat: czxid mzxid ctime mtime (longs), version cversion aversion (ints), ephemeralOwner (long), dataLength
#: numChildren (ints), pzxid (long): kazoo's ``ZnodeStat`` field order.
STAT: Final = struct.Struct("!qqqqiiiqiiq")
#: The header that closes a multi's ops (request) or results (response).
MULTI_DONE: Final = MULTI_HEADER.pack(-1, True, -1)
NULL_BUFFER: Final = INT.pack(-1)


def op_header(opcode: int) -> bytes:
    """The ``MultiHeader`` in front of one op of a multi request (done = false, err = -1)."""
    return MULTI_HEADER.pack(opcode, False, -1)


def encode_ustring(value: str) -> bytes:
    raw = value.encode()
    return INT.pack(len(raw)) + raw


def encode_buffer(data: bytes | None) -> bytes:
    """``None`` is ZooKeeper's null data (length -1), distinct from empty data."""
    return NULL_BUFFER if data is None else INT.pack(len(data)) + data


def encode_acls(acl: Sequence[ACL]) -> bytes:
    """``vector<ACL>``: each ``ACL(int perms, Id(ustring scheme, ustring id))``."""
    out = bytearray(INT.pack(len(acl)))
    for entry in acl:
        out += INT.pack(entry.perms)
        out += encode_ustring(entry.id.scheme)
        out += encode_ustring(entry.id.id)
    return bytes(out)
