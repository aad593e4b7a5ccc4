"""ZooKeeper ACLs as Kafka sets them on the znodes it creates (``zookeeper.set.acl``).

Kafka's ``ZkData.defaultAcls(path)``: with ``zookeeper.set.acl=true`` every znode gets CREATOR_ALL (scheme
``auth``: the server expands it to the creating session's authenticated ids, so only that identity may change
or delete it) plus world READ, except under the sensitive roots (``/config/users``, ``/config/brokers``,
``/delegation_token/tokens``: no world READ); ``/consumers`` itself stays open. Without it: OPEN_ACL_UNSAFE.
"""

from __future__ import annotations

from kazoo.security import ACL, OPEN_ACL_UNSAFE, Id, Permissions

SENSITIVE_ROOTS = ("/config/users", "/config/brokers", "/delegation_token/tokens")
CREATOR_ALL = ACL(Permissions.ALL, Id("auth", ""))
WORLD_READ = ACL(Permissions.READ, Id("world", "anyone"))


def kafka_default_acls(path: str, secure: bool) -> list[ACL]:
    """``defaultAcls(path)`` for a chroot-relative ``path``."""
    if not secure or path == "/consumers":
        return list(OPEN_ACL_UNSAFE)
    if path.startswith(SENSITIVE_ROOTS):
        return [CREATOR_ALL]
    return [CREATOR_ALL, WORLD_READ]
