"""ZooKeeper's error vocabulary for the rest of the node, so that nothing outside ``controller.zk`` imports
kazoo. The names are kazoo's (they are ZooKeeper's KeeperException codes), re-exported unchanged: a store
that catches ``BadVersionError`` reads the same as Kafka's ``KeeperException.BadVersionException``.

Our own session-level errors (``ZkUnavailable``, ``ZkReadTimeout``, ``ZkTimeout``, ``SessionLost``) live in
:mod:`controller.zk.session`, the fenced admin writes' refusal (``AdminWriteFenced``) in
:mod:`controller.zk.fenced_session`; they are re-exported here too, so one import names every way a
ZooKeeper call can fail.
"""

from __future__ import annotations

from kazoo.exceptions import (
    BadVersionError,
    ConnectionClosedError,
    ConnectionLoss,
    KazooException,
    NoAuthError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    OperationTimeoutError,
    RolledBackError,
    SessionExpiredError,
    SessionMovedError,
)
from kazoo.handlers.threading import KazooTimeoutError

from controller.zk.fenced_session import AdminWriteFenced
from controller.zk.session import SessionLost, WriteInDoubt, ZkReadTimeout, ZkTimeout, ZkUnavailable, is_transient

__all__ = [
    "AdminWriteFenced",
    "BadVersionError",
    "ConnectionClosedError",
    "ConnectionLoss",
    "KazooException",
    "KazooTimeoutError",
    "NoAuthError",
    "NoNodeError",
    "NodeExistsError",
    "NotEmptyError",
    "OperationTimeoutError",
    "RolledBackError",
    "SessionExpiredError",
    "SessionLost",
    "SessionMovedError",
    "WriteInDoubt",
    "ZkReadTimeout",
    "ZkTimeout",
    "ZkUnavailable",
    "is_transient",
]
