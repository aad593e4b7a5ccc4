"""A live tree read without per-znode round trips for data: breadth first, each level's children and then
its data and Stat fetched in pipelined multiRead batches (the project's reader, as the controller's
failover load uses it). ACLs are the exception: ZooKeeper's multiRead has no getACL, so they are single
requests, pipelined a thousand at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from controller.zk.session import ZkSession
from migrate.snapshot.files import Node

LEVEL_BATCH = 20_000


def walk(session: ZkSession, roots: Sequence[str], progress: Callable[[int], None] | None = None) -> Iterator[Node]:
    """Every znode under ``roots`` (the roots included, missing ones skipped), level by level."""
    level = sorted(set(roots))
    seen = 0
    while level:
        next_level: list[str] = []
        for start in range(0, len(level), LEVEL_BATCH):
            chunk = level[start : start + LEVEL_BATCH]
            data = session.read_data(chunk)
            kids = session.read_children(chunk)
            acls = session.read_acls(chunk)
            for path in chunk:
                found, children, acl = data.get(path), kids.get(path), acls.get(path)
                if found is None or children is None or acl is None:
                    continue  # deleted while we walked
                value, stat = found
                # back to the tree's own counts (rows show the client's view, see Node.client_stat)
                stored_cversion = (stat.cversion + stat.numChildren) // 2
                yield Node(
                    path,
                    value,
                    list(acl),
                    stat.czxid,
                    stat.mzxid,
                    stat.ctime,
                    stat.mtime,
                    stat.version,
                    stored_cversion,
                    stat.aversion,
                    stat.ephemeralOwner,
                    stat.pzxid,
                    stat.numChildren,
                )
                base = "" if path == "/" else path
                next_level.extend(f"{base}/{c}" for c in children)
            seen += len(chunk)
            if progress is not None:
                progress(seen)
        level = sorted(next_level)
