"""The metadata image a node serves from: one immutable snapshot of brokers, topics, assignments and partition
states with their zkVersions, replaced (never mutated) on every change.

The broker's request handlers answer from it, and a standby controller builds its context from it when it wins
the election instead of reading ZooKeeper again (:mod:`controller.active.standby`). It is kept current by
:class:`controller.broker.metadata_cache.MetadataCache` from ZooKeeper's watches.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final

from zkmodel.brokers import BrokerRegistration
from zkmodel.reassignment import ReplicaAssignment
from zkmodel.topics import NO_LEADER, RECOVERED, PartitionState

__all__ = [
    "EMPTY_SNAPSHOT",
    "NO_CONTROLLER",
    "CachedBroker",
    "CachedPartition",
    "CachedTopic",
    "MetadataSnapshot",
]

_new_tuple = tuple.__new__

#: ``MetadataSnapshot.controller_id`` when there is no (readable) ``/controller``.
NO_CONTROLLER: Final = -1


# -- the snapshot: immutable, shared with any number of reader threads ---------------------------------------


@dataclass(frozen=True, slots=True)
class CachedBroker:
    """A registered (alive) broker; ``epoch`` is its registration's czxid, Kafka's broker epoch."""

    broker_id: int
    registration: BrokerRegistration
    epoch: int


@dataclass(slots=True, unsafe_hash=True)
class CachedPartition:
    """Assignment and state of one partition. Without a (readable) state znode: leader -1, empty ISR, leader
    epoch -1, controller epoch -1; ``partition_epoch`` is the state znode's zkVersion (-1 without one, the
    version of an unreadable one).

    Every field of the state znode is kept (the controller epoch that wrote it, KIP-704's leader recovery
    state), so a standby controller builds its context from this snapshot exactly as from ZooKeeper. They are
    kept as fields, not as the decoded :class:`PartitionState`: a tuple beside the record costs a broker ~80
    bytes a partition, where the standby's one-off rebuild of the tuples (:attr:`state`) costs ~0.4 s at a
    million partitions.

    Immutable by contract, not by ``frozen=True``: every holder (the image, any number of snapshots, the
    controller's context) shares the one object, and nothing assigns to its fields; a change is a new record
    (:meth:`with_state`, :meth:`with_assignment`). A frozen dataclass's ``__init__`` sets each field through
    ``object.__setattr__``, five times the cost of a plain one (3.0 against 0.6 us): a node builds a million
    of these at load and the controller one per state it writes."""

    partition: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int
    adding: tuple[int, ...]
    removing: tuple[int, ...]
    partition_epoch: int
    controller_epoch: int = -1
    leader_recovery_state: int = RECOVERED

    @classmethod
    def of(
        cls, partition: int, assignment: ReplicaAssignment, state: PartitionState | None = None, epoch: int = -1
    ) -> CachedPartition:
        """The record of a partition with ``assignment`` and, when it has a readable state znode, ``state``
        (at zkVersion ``epoch``; -1 without a state znode, the znode's version when it is unreadable)."""
        a = assignment
        if state is None:
            return cls(partition, a.replicas, (), NO_LEADER, -1, a.adding, a.removing, epoch)
        leader, leader_epoch, controller_epoch, isr, recovery = state
        return cls(
            partition, a.replicas, isr, leader, leader_epoch, a.adding, a.removing, epoch, controller_epoch, recovery
        )

    @property
    def state(self) -> PartitionState | None:
        """The state znode as decoded (None when missing or unreadable: leader epoch -1)."""
        if self.leader_epoch < 0:
            return None
        # tuple.__new__ skips the named tuple's Python-level __new__: a failover builds a million of these.
        return _new_tuple(
            PartitionState,
            (self.leader, self.leader_epoch, self.controller_epoch, self.isr, self.leader_recovery_state),
        )

    @property
    def has_state(self) -> bool:
        """Whether the partition has a readable state znode (``state`` is not None), without building it."""
        return self.leader_epoch >= 0

    @property
    def assignment(self) -> ReplicaAssignment:
        """RS, AR and RR as the topic znode holds them (built on each call: scans read the fields)."""
        return ReplicaAssignment(self.replicas, self.adding, self.removing)

    @property
    def target(self) -> tuple[int, ...]:
        """TRS = RS - RR: where the partition will be once a move completes (RS itself when not moving)."""
        removing = self.removing
        return self.replicas if not removing else tuple(r for r in self.replicas if r not in removing)

    @property
    def is_being_reassigned(self) -> bool:
        return bool(self.adding or self.removing)

    def with_state(self, state: PartitionState | None, epoch: int) -> CachedPartition:
        """This partition with ``state`` written (or found) at zkVersion ``epoch``."""
        if state is None:
            return CachedPartition(self.partition, self.replicas, (), NO_LEADER, -1, self.adding, self.removing, epoch)
        leader, leader_epoch, controller_epoch, isr, recovery = state
        return CachedPartition(
            self.partition,
            self.replicas,
            isr,
            leader,
            leader_epoch,
            self.adding,
            self.removing,
            epoch,
            controller_epoch,
            recovery,
        )

    def with_assignment(self, assignment: ReplicaAssignment) -> CachedPartition:
        """This partition with its topic znode's assignment rewritten (the state znode is not touched)."""
        return CachedPartition(
            self.partition,
            assignment.replicas,
            self.isr,
            self.leader,
            self.leader_epoch,
            assignment.adding,
            assignment.removing,
            self.partition_epoch,
            self.controller_epoch,
            self.leader_recovery_state,
        )


@dataclass(frozen=True, slots=True)
class CachedTopic:
    name: str
    topic_id: str | None
    partitions: Mapping[int, CachedPartition]
    is_internal: bool
    #: The topic znode's JSON version (1-3): a controller rewrites old ones (Kafka's processTopicIds).
    znode_version: int = 3


@dataclass(frozen=True)
class MetadataSnapshot:
    """One consistent view of the cluster. Never mutated: every change publishes a new snapshot with a
    higher ``version``, so a reader can hold one for a whole request."""

    brokers: Mapping[int, CachedBroker]
    topics: Mapping[str, CachedTopic]
    controller_id: int
    version: int
    #: Topic and partition state znodes that could not be read (path -> what was wrong): a topic is left out,
    #: a partition served without leader. A standby that loads from this snapshot reports them as the cold
    #: load does.
    unreadable: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def alive_broker_ids(self) -> tuple[int, ...]:
        """Ids of the registered brokers, ascending."""
        return tuple(sorted(self.brokers))

    def partition(self, topic: str, partition: int) -> CachedPartition | None:
        cached = self.topics.get(topic)
        return None if cached is None else cached.partitions.get(partition)

    def offline_replicas(self, topic: str, partition: int) -> tuple[int, ...]:
        """Replicas whose broker is not registered (Metadata's ``offline_replicas``). KeyError if the
        partition is unknown."""
        found = self.partition(topic, partition)
        if found is None:
            raise KeyError(f"unknown partition {topic}-{partition}")
        return tuple(r for r in found.replicas if r not in self.brokers)


EMPTY_SNAPSHOT: Final = MetadataSnapshot(MappingProxyType({}), MappingProxyType({}), NO_CONTROLLER, 0)
