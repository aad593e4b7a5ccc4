"""ACLs of many znodes at once. ZooKeeper's multi and multiRead carry no getACL or setACL, so these are
single requests, pipelined a window at a time, each bounded by the caller's timeout."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from kazoo.client import KazooClient

from controller.zk import bulk
from controller.zk.errors import KAZOO_SESSION_LOST, KazooTimeoutError, NoNodeError, SessionLost, ZkTimeout
from controller.zk.znode_acls import kazoo_acls


def read_acls(
    client: KazooClient, paths: Sequence[str], *, in_flight: int, timeout: float
) -> dict[str, list[tuple[int, str, str]] | None]:
    """The ACL of every path as (perms, scheme, id), None for a missing znode, all read within ``timeout``."""
    deadline = time.monotonic() + timeout
    out: dict[str, list[tuple[int, str, str]] | None] = {}
    window: list[tuple[str, Any]] = []
    todo = list(paths)
    cursor = 0
    while cursor < len(todo) or window:
        while cursor < len(todo) and len(window) < in_flight:
            window.append((todo[cursor], client.get_acls_async(todo[cursor])))
            cursor += 1
        path, pending = window.pop(0)
        try:
            acls, _stat = pending.get(timeout=max(0.0, deadline - time.monotonic()))
            out[path] = [(int(a.perms), a.id.scheme, a.id.id) for a in acls]
        except NoNodeError:
            out[path] = None
        except KazooTimeoutError:
            raise ZkTimeout(f"reading the ACLs of {len(todo)} znodes took longer than allowed") from None
        except KAZOO_SESSION_LOST as exc:
            raise SessionLost(f"reading the ACLs of {len(todo)} znodes: {exc!r}") from exc
    return out


def set_acls(
    client: KazooClient,
    acls: Iterable[tuple[str, Sequence[tuple[int, str, str]]]],
    *,
    in_flight: int,
    progress: Callable[[int], None] | None,
    timeout: float,
) -> int:
    """setACL at any aversion on each (path, ACL); returns the count. The first refusal is raised as
    :class:`controller.zk.bulk.BulkWriteError` after the requests already sent have been answered."""
    window: deque[tuple[str, Any]] = deque()
    done = 0
    failure: bulk.BulkWriteError | None = None

    def drain() -> None:
        nonlocal done, failure
        path, pending = window.popleft()
        try:
            pending.get(timeout=timeout)
        except Exception as exc:  # a refusal, a lost connection or no answer in time: reported with its path
            failure = failure or bulk.BulkWriteError(done, path, exc)
        else:
            done += 1
            if progress is not None and done % 1000 == 0:
                progress(done)

    try:
        for path, acl in acls:
            window.append((path, client.set_acls_async(path, kazoo_acls(acl), -1)))
            while len(window) >= in_flight:
                drain()
            if failure is not None:
                break
    finally:
        while window:
            drain()
    if failure is not None:
        raise failure
    if progress is not None:
        progress(done)
    return done
