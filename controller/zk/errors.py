"""ZooKeeper's error vocabulary for the rest of the node, so that nothing outside ``controller.zk`` imports
kazoo. The names are kazoo's (they are ZooKeeper's KeeperException codes), re-exported unchanged: a store
that catches ``BadVersionError`` reads the same as Kafka's ``KeeperException.BadVersionException``.

Our own session-level errors (``ZkUnavailable``, ``ZkTimeout``, ``SessionLost``) live in
:mod:`controller.zk.session` and are re-exported here too, so one import names every way a ZooKeeper call
can fail.
"""

from __future__ import annotations

from kazoo.exceptions import (
    BadVersionError,
    ConnectionLoss,
    KazooException,
    NoAuthError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    RolledBackError,
)
from kazoo.handlers.threading import KazooTimeoutError

from controller.zk.session import SessionLost, ZkTimeout, ZkUnavailable, is_transient

__all__ = [
    "BadVersionError",
    "ConnectionLoss",
    "KazooException",
    "KazooTimeoutError",
    "NoAuthError",
    "NoNodeError",
    "NodeExistsError",
    "NotEmptyError",
    "RolledBackError",
    "SessionLost",
    "ZkTimeout",
    "ZkUnavailable",
    "is_transient",
]
