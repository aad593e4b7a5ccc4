"""Opening a ZooKeeper session for an operator command, with the one error line every command prints."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from controller.zk.session import ZkSession


def connect(
    zookeeper: str,
    *,
    name: str,
    timeout: float,
    auth: Sequence[tuple[str, str]] = (),
    read_only: bool = False,
    session_timeout_ms: int | None = None,
) -> ZkSession | None:
    """A started session, or None after printing "error: cannot connect to ZooKeeper at ...": the caller
    picks its exit code."""
    from controller.zk.session import ZkSession, ZkUnavailable

    session = ZkSession(
        zookeeper,
        auth=auth,
        read_only=read_only,
        name=name,
        session_timeout_ms=18_000 if session_timeout_ms is None else session_timeout_ms,
    )
    try:
        session.start(timeout=timeout)
    except ZkUnavailable as exc:
        print(f"error: cannot connect to ZooKeeper at {zookeeper}: {exc}", file=sys.stderr)
        return None
    return session
