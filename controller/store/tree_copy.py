"""A Kafka tree copied into an empty chroot (``snapshot restore``): the only writer of whole trees.

The copy is bracketed by :data:`zkmodel.paths.RESTORE_IN_PROGRESS`: created before the first znode, deleted
after the last ACL, and a node refuses to start while it is there (:func:`refuse_unfinished_copy`). Inside the
bracket each topic's subtree lands in one multi where it fits, so even a chroot whose marker was removed by
hand holds whole topics.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence

from controller.zk.session import ZkSession, ensure_chroot
from controller.zk.tls import ZkTls
from zkmodel import paths

Znode = tuple[str, bytes | None]


def kafka_metadata_present(session: ZkSession) -> list[str]:
    """Which of Kafka's roots (and an unfinished copy's marker) the session's chroot holds already."""
    return [p for p in (*paths.KAFKA_METADATA_ROOTS, paths.RESTORE_IN_PROGRESS) if session.exists(p) is not None]


def ensure_root(hosts: str, chroot: str, timeout: float, tls: ZkTls | None = None) -> None:
    """Create the target chroot if it is missing (a chrooted session cannot create its own root)."""
    ensure_chroot(hosts, chroot, timeout, tls)


def begin(session: ZkSession, description: bytes) -> bool:
    """Mark the chroot as being copied into; False if it already was (another copy got there first)."""
    return session.create_only(paths.RESTORE_IN_PROGRESS, description, write="restore")


def write(session: ZkSession, groups: Iterable[Sequence[Znode]], progress: Callable[[int], None] | None = None) -> int:
    """Create the znodes (parents first, a group in one multi where it fits); see :meth:`ZkSession.create_tree`."""
    return session.create_tree(groups, progress=progress)


def set_acls(
    session: ZkSession,
    acls: Iterable[tuple[str, Sequence[tuple[int, str, str]]]],
    progress: Callable[[int], None] | None = None,
) -> int:
    """Give copied znodes their recorded ACLs. Every znode is created open first and closed afterwards, since a
    recorded parent ACL may not grant this session CREATE for the children."""
    return session.set_acls_pipelined(acls, progress=progress)


def finish(session: ZkSession) -> None:
    """The copy is whole: take the marker away."""
    session.delete(paths.RESTORE_IN_PROGRESS, write="restore")


#: The broker id a held election names in ``/controller``: no node takes it (Kafka's ids are int32, 0 and up).
HOLDER_ID = 2**31 - 1


def hold_election(session: ZkSession) -> bool:
    """Take ``/controller`` with this session (an ephemeral naming :data:`HOLDER_ID`), so that nodes started now
    register and wait instead of electing one of them while the others are still starting: a controller elected
    alone marks every other broker's partitions offline and moves their leaders, which a copy of a running
    cluster must not do. False if a controller already holds it."""
    payload = b'{"version":1,"brokerid":%d,"timestamp":"%d"}' % (HOLDER_ID, int(time.time() * 1000))
    return session.create_only(paths.CONTROLLER, payload, ephemeral=True, write="election hold")


def release_election(session: ZkSession) -> None:
    """Give ``/controller`` up (the nodes waiting on it elect one of themselves at once)."""
    stat = session.exists(paths.CONTROLLER)
    if stat is not None and stat.ephemeralOwner == session.session_id:
        session.delete(paths.CONTROLLER, stat.version, write="election hold")


def refuse_unfinished_copy(session: ZkSession) -> None:
    """Raise ValueError when the chroot holds a copy that did not finish (a node must not serve half a tree)."""
    if session.exists(paths.RESTORE_IN_PROGRESS) is not None:
        raise ValueError(
            f"this chroot holds a snapshot restore that did not finish ({paths.RESTORE_IN_PROGRESS} is present): "
            "restore again into a fresh chroot"
        )
