"""kazoo's ACL values for zkmodel's (perms, scheme, id) tuples (zkmodel.zk_acls holds the rules)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kazoo.security import ACL, Id

from zkmodel.zk_acls import Acl, kafka_default_acl

#: The ACL a session gives each znode it creates, by chroot-relative path.
AclPolicy = Callable[[str], Sequence[Acl]]


def kazoo_acls(acl: Sequence[Acl]) -> list[ACL]:
    return [ACL(perms, Id(scheme, ident)) for perms, scheme, ident in acl]


def kafka_policy(secure: bool) -> AclPolicy:
    """Kafka's ``zookeeper.set.acl`` behaviour (ZkData.defaultAcls)."""
    return lambda path: kafka_default_acl(path, secure)
