"""Controller events: everything the controller reacts to goes through one queue, one at a time."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Startup:
    pass


@dataclass(frozen=True)
class Tick:
    pass


@dataclass(frozen=True)
class ControllerChange:
    deleted: bool


@dataclass(frozen=True)
class BrokerChange:
    pass


@dataclass(frozen=True)
class TopicChange:
    pass


@dataclass(frozen=True)
class PartitionModifications:
    """A topic znode changed (Kafka's PartitionModificationsHandler): maybe partitions were added."""

    topic: str


@dataclass(frozen=True)
class TopicDeletion:
    pass


@dataclass(frozen=True)
class ZkReassignment:
    created: bool


@dataclass(frozen=True)
class PreferredElectionZnode:
    pass


@dataclass(frozen=True)
class IsrChangeNotification:
    pass


@dataclass(frozen=True)
class SessionSuspended:
    pass


@dataclass(frozen=True)
class SessionReconnected:
    pass


@dataclass(frozen=True)
class SessionExpired:
    pass


@dataclass(frozen=True)
class NewSession:
    """A new session after an expiry: re-register the broker, then re-elect."""


@dataclass(frozen=True)
class Shutdown:
    pass


@dataclass(frozen=True)
class ApiCall:
    """Runs ``fn`` on the controller thread if this node is the active controller."""

    name: str
    fn: Callable[[], Any]
    future: Future[Any] = field(default_factory=Future, compare=False)


Event = (
    Startup
    | Tick
    | ControllerChange
    | BrokerChange
    | TopicChange
    | PartitionModifications
    | TopicDeletion
    | ZkReassignment
    | PreferredElectionZnode
    | IsrChangeNotification
    | SessionSuspended
    | SessionReconnected
    | SessionExpired
    | NewSession
    | Shutdown
    | ApiCall
)
