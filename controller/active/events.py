"""Controller events: everything the controller reacts to goes through one queue, one at a time."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Signal:
    """An event that carries nothing but its kind (equal to every other of the same kind, so a deferred one
    is queued once)."""


class Startup(Signal):
    pass


class Tick(Signal):
    pass


@dataclass(frozen=True)
class ControllerChange:
    deleted: bool


class BrokerChange(Signal):
    pass


class TopicChange(Signal):
    pass


@dataclass(frozen=True)
class PartitionModifications:
    """A topic znode changed (Kafka's PartitionModificationsHandler): maybe partitions were added.

    ``seen_zxid``: the session's last zxid when the watch fired (-1: unknown). ZooKeeper sends a client the
    notification of a change before any answer that reflects it, so a watch that fired before this controller's
    own write of the topic was answered (``seen_zxid`` below the write's zxid) was fired by that write or by a
    change it overwrote: the znode then holds what the context holds (:attr:`TopicInfo.written_zxid`)."""

    topic: str
    seen_zxid: int = -1


class TopicDeletion(Signal):
    pass


@dataclass(frozen=True)
class ZkReassignment:
    created: bool


class PreferredElectionZnode(Signal):
    pass


class IsrChangeNotification(Signal):
    pass


class SessionSuspended(Signal):
    pass


class SessionReconnected(Signal):
    pass


class SessionExpired(Signal):
    pass


class NewSession(Signal):
    """A new session after an expiry: re-register the broker, then re-elect."""


class Shutdown(Signal):
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


#: Kafka's ControllerState for each event, the name of its ControllerStats ``<State>RateAndTimeMs`` timer.
_STATES: dict[type, str] = {
    Startup: "ControllerChange",
    ControllerChange: "ControllerChange",
    SessionSuspended: "ControllerChange",
    SessionReconnected: "ControllerChange",
    SessionExpired: "ControllerChange",
    NewSession: "ControllerChange",
    BrokerChange: "BrokerChange",
    TopicChange: "TopicChange",
    PartitionModifications: "TopicChange",
    TopicDeletion: "TopicDeletion",
    ZkReassignment: "AlterPartitionReassignment",
    PreferredElectionZnode: "ManualLeaderBalance",
    IsrChangeNotification: "IsrChange",
    Shutdown: "ControllerShutdown",
}
_API_STATES = {
    "CreateTopics": "TopicChange",
    "CreatePartitions": "TopicChange",
    "DeleteTopics": "TopicDeletion",
    "AlterPartitionReassignments": "AlterPartitionReassignment",
    "ListPartitionReassignments": "ListPartitionReassignment",
    "ElectLeaders": "ManualLeaderBalance",
    "AlterPartition": "IsrChange",
    "ControlledShutdown": "ControlledShutdown",
}
#: Every state an event can map to, for metric label values created up front.
CONTROLLER_STATES = tuple(sorted({*_STATES.values(), *_API_STATES.values()}))


def controller_state(event: Event) -> str | None:
    """The Kafka ControllerState an event is handled in; None for idle ticks and internal reads."""
    if isinstance(event, ApiCall):
        return _API_STATES.get(event.name)
    return _STATES.get(type(event))
