"""ZooKeeper write operations as data, and how they become a kazoo multi.

Ops are values so a caller can build a batch, the writer can size it against ZooKeeper's packet limit
and fence it, and tests can inspect it. ``data=None`` writes ZooKeeper *null* data, as Kafka does for
path parents and markers (kazoo's transaction API only accepts bytes).
"""

from __future__ import annotations

from dataclasses import dataclass

from kazoo.client import KazooClient, TransactionRequest
from kazoo.protocol.serialization import Create as _KCreate
from kazoo.security import OPEN_ACL_UNSAFE

#: ZooKeeper's jute.maxbuffer default is 0xfffff bytes; stay well inside it for one multi.
MAX_MULTI_BYTES = 512 * 1024
_OP_OVERHEAD = 64  # header, path length, version, ACL


@dataclass(frozen=True)
class Create:
    path: str
    data: bytes | None = None
    ephemeral: bool = False
    sequential: bool = False


@dataclass(frozen=True)
class SetData:
    path: str
    data: bytes
    version: int = -1


@dataclass(frozen=True)
class Delete:
    path: str
    version: int = -1


@dataclass(frozen=True)
class Check:
    path: str
    version: int


Op = Create | SetData | Delete | Check


def op_size(op: Op) -> int:
    data = op.data if isinstance(op, Create | SetData) else None
    return _OP_OVERHEAD + len(op.path.encode()) + (len(data) if data else 0)


def build_transaction(client: KazooClient, ops: list[Op]) -> TransactionRequest:
    t = client.transaction()
    for op in ops:
        if isinstance(op, Create):
            acl_for = getattr(client, "bk_acl_for", None)  # ZkSession's zookeeper.set.acl policy
            acl = acl_for(op.path) if acl_for is not None else OPEN_ACL_UNSAFE
            if op.data is None:
                flags = (1 if op.ephemeral else 0) | (2 if op.sequential else 0)
                t._add(_KCreate(_chroot(client, op.path), None, acl, flags), None)
            else:
                t.create(op.path, op.data, acl=acl, ephemeral=op.ephemeral, sequence=op.sequential)
        elif isinstance(op, SetData):
            t.set_data(op.path, op.data, op.version)
        elif isinstance(op, Delete):
            t.delete(op.path, op.version)
        else:
            t.check(op.path, op.version)
    return t


def _chroot(client: KazooClient, path: str) -> str:
    chroot: str = client.chroot or ""
    return chroot + path if path != "/" or not chroot else chroot
