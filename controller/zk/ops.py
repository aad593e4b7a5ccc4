"""ZooKeeper write operations as data, and how they become a ZooKeeper multi.

Ops are values so a caller can build a batch, the writer can size it against ZooKeeper's packet limit
and fence it, and tests can inspect it. ``data=None`` writes ZooKeeper *null* data, as Kafka does for
path parents and markers (kazoo's transaction API only accepts bytes).

A create gets the ACL of the policy registered for its client (:func:`set_acl_policy`: the session's
``zookeeper.set.acl`` or lockdown's rules), so every writer on a session creates znodes alike.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kazoo.client import KazooClient, TransactionRequest
from kazoo.protocol.serialization import CheckVersion as _KCheck
from kazoo.protocol.serialization import Create as _KCreate
from kazoo.protocol.serialization import Delete as _KDelete
from kazoo.protocol.serialization import SetData as _KSetData
from kazoo.security import OPEN_ACL_UNSAFE

from controller.zk.protocol.jute import encode_acls
from controller.zk.protocol.multi import MultiRequest
from controller.zk.znode_acls import AclPolicy, encoded_acls, kazoo_acls

#: ZooKeeper's jute.maxbuffer default is 0xfffff bytes; stay well inside it for one multi.
MAX_MULTI_BYTES = 512 * 1024
_OP_OVERHEAD = 64  # header, path length, version, ACL


@dataclass(frozen=True)
class Create:
    path: str
    data: bytes | None = None
    ephemeral: bool = False
    sequential: bool = False
    #: What ``data`` encodes, when the writer has it: a write observer (the node's image) takes it instead of
    #: decoding ``data`` again. Never written, never compared.
    decoded: Any = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class SetData:
    path: str
    data: bytes
    version: int = -1
    #: As :attr:`Create.decoded`.
    decoded: Any = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Delete:
    path: str
    version: int = -1


@dataclass(frozen=True)
class Check:
    path: str
    version: int


Op = Create | SetData | Delete | Check

#: Each client's ACL policy. Weak keys, so an entry lives as long as its client; a policy must therefore not
#: refer to its client (or to the session holding it), else neither is ever dropped.
_ACL_POLICIES: weakref.WeakKeyDictionary[KazooClient, AclPolicy] = weakref.WeakKeyDictionary()


def set_acl_policy(client: KazooClient, policy: AclPolicy) -> None:
    """The ACL (by chroot-relative path) of every znode the ops built for ``client`` create. A client without one
    creates znodes open to everyone (OPEN_ACL_UNSAFE), as kazoo does by default."""
    _ACL_POLICIES[client] = policy


def _acl_for(client: KazooClient) -> Callable[[str], list[Any]]:
    policy = _ACL_POLICIES.get(client)
    if policy is None:
        return lambda path: OPEN_ACL_UNSAFE
    return lambda path: kazoo_acls(policy(path))


_OPEN_ACL_BYTES = encode_acls(OPEN_ACL_UNSAFE)

#: A tuple, not ``Create | SetData``: isinstance with a union builds the union on every call, and this runs for
#: every op a bulk write sizes.
_WITH_DATA = (Create, SetData)


def op_size(op: Op) -> int:
    data = op.data if isinstance(op, _WITH_DATA) else None
    return _OP_OVERHEAD + len(op.path.encode()) + (len(data) if data else 0)


def build_transaction(client: KazooClient, ops: list[Op]) -> TransactionRequest:
    """A kazoo transaction of ``ops``, its request records built here: kazoo's per-op methods type-check and
    re-normalize every path against the chroot (``_prefix_root``: a quarter of the controller's time writing a
    30,000-partition epoch bump). Op paths come from :mod:`zkmodel.paths`, absolute and normalized, and the
    dataclasses fix the types, so the chroot is prefixed and nothing else."""
    t = client.transaction()
    chroot: str = client.chroot or ""
    acl_for = _acl_for(client)
    for op in ops:
        path = (chroot + op.path if op.path != "/" else chroot) if chroot else op.path
        if isinstance(op, SetData):
            t._add(_KSetData(path, op.data, op.version), None)
        elif isinstance(op, Create):
            acl = acl_for(op.path)
            flags = (1 if op.ephemeral else 0) | (2 if op.sequential else 0)
            t._add(_KCreate(path, op.data, acl, flags), None)  # None data: ZooKeeper null, as Kafka writes parents
        elif isinstance(op, Delete):
            t._add(_KDelete(path, op.version), None)
        else:
            t._add(_KCheck(path, op.version), None)
    return t


def build_multi(client: KazooClient, ops: list[Op]) -> MultiRequest:
    """``ops`` as one write multi whose creates are create2 (:mod:`controller.zk.protocol.multi`), so each op's
    result carries the Stat ZooKeeper wrote: ``Created(path, stat)``, ``SetDone(stat)``, ``Deleted()``,
    ``Checked()``. Paths are prefixed with the chroot as in :func:`build_transaction`. Requires ZooKeeper >= 3.5;
    servers before 3.7.2 / 3.8.2 / 3.9.0 answer creates without their Stat (``Created(path, None)``)."""
    chroot: str = client.chroot or ""
    request = MultiRequest(chroot, lambda: int(client.last_zxid))
    policy = _ACL_POLICIES.get(client)
    open_acl = _OPEN_ACL_BYTES
    for op in ops:
        path = (chroot + op.path if op.path != "/" else chroot) if chroot else op.path
        if isinstance(op, SetData):
            request.set_data(path, op.data, op.version)
        elif isinstance(op, Create):
            acl = open_acl if policy is None else encoded_acls(policy(op.path))
            request.create(path, op.data, acl, (1 if op.ephemeral else 0) | (2 if op.sequential else 0))
        elif isinstance(op, Delete):
            request.delete(path, op.version)
        else:
            request.check(path, op.version)
    return request
