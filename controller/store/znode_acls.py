"""ZooKeeper ACLs of metadata znodes, set by the operator tools (``bridgekeeper lockdown``). Reads go through
the session; this is the one store write for them, so the single-writer rules see it."""

from __future__ import annotations

from collections.abc import Sequence

from controller.zk.errors import NoNodeError
from controller.zk.session import ZkSession

Acl = tuple[int, str, str]  # (perms, scheme, id)


def set_znode_acls(session: ZkSession, path: str, acls: Sequence[Acl]) -> bool:
    """Replace ``path``'s ACL (any aversion: the tool is the only one changing ACLs). False when the znode is
    gone: on a live cluster a topic or a notification can be deleted between reading the tree and locking it,
    and a znode that no longer exists needs no ACL (ZkSecurityMigrator skips it likewise)."""
    try:
        session.set_acls(path, acls, write="acl")
    except NoNodeError:
        return False
    return True
