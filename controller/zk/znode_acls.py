"""kazoo's ACL values for zkmodel's (perms, scheme, id) tuples (zkmodel.znode_acls holds the rules)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kazoo.security import ACL, Id

from controller.zk.protocol.jute import encode_acls
from zkmodel.znode_acls import Acl, kafka_default_acl

#: The ACL a session gives each znode it creates, by chroot-relative path.
AclPolicy = Callable[[str], Sequence[Acl]]


#: kazoo's ACL values by the tuples they are made of: a CreateTopics of 1,000 topics x 10 partitions creates
#: 23,000 znodes with a handful of distinct ACLs, and building two named tuples per entry per znode was ~5% of
#: the node's CPU in it. Bounded (cleared when full) since the tuples come from configuration and paths.
_KAZOO_ACLS: dict[tuple[Acl, ...], tuple[ACL, ...]] = {}
_KAZOO_ACLS_MAX = 1024


def kazoo_acls(acl: Sequence[Acl]) -> list[ACL]:
    """A fresh list (callers may keep or change it) of shared, immutable kazoo ACL values."""
    key = tuple(acl)
    found = _KAZOO_ACLS.get(key)
    if found is None:
        found = tuple(ACL(perms, Id(scheme, ident)) for perms, scheme, ident in key)
        if len(_KAZOO_ACLS) >= _KAZOO_ACLS_MAX:
            _KAZOO_ACLS.clear()
        _KAZOO_ACLS[key] = found
    return list(found)


#: The jute encoding of each ACL a policy gave, by the same tuples: every create in a multi carries its ACL,
#: and encoding it again per znode was a third of building a CreateTopics' multis.
_ENCODED_ACLS: dict[tuple[Acl, ...], bytes] = {}


def encoded_acls(acl: Sequence[Acl]) -> bytes:
    """``acl`` as a create request's ``vector<ACL>``."""
    key = tuple(acl)
    found = _ENCODED_ACLS.get(key)
    if found is None:
        found = encode_acls(kazoo_acls(key))
        if len(_ENCODED_ACLS) >= _KAZOO_ACLS_MAX:
            _ENCODED_ACLS.clear()
        _ENCODED_ACLS[key] = found
    return found


def kafka_policy(secure: bool) -> AclPolicy:
    """Kafka's ``zookeeper.set.acl`` behaviour (ZkData.defaultAcls)."""
    return lambda path: kafka_default_acl(path, secure)
