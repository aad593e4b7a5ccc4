"""The metadata image a node serves from: one immutable snapshot of brokers, topics, assignments and partition
states with their zkVersions, replaced (never mutated) on every change.

The broker's request handlers answer from it, and a standby controller builds its context from it when it wins
the election instead of reading ZooKeeper again (:mod:`controller.active.standby`). It is kept current by
:class:`controller.broker.metadata_cache.MetadataCache` from ZooKeeper's watches.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from zkmodel.brokers import BrokerRegistration
from zkmodel.topics import NO_LEADER, PartitionState

__all__ = [
    "EMPTY_SNAPSHOT",
    "NO_CONTROLLER",
    "CachedBroker",
    "CachedPartition",
    "CachedTopic",
    "MetadataSnapshot",
]

#: ``MetadataSnapshot.controller_id`` when there is no (readable) ``/controller``.
NO_CONTROLLER: Final = -1


# -- the snapshot: immutable, shared with any number of reader threads ---------------------------------------


@dataclass(frozen=True, slots=True)
class CachedBroker:
    """A registered (alive) broker; ``epoch`` is its registration's czxid, Kafka's broker epoch."""

    broker_id: int
    registration: BrokerRegistration
    epoch: int


@dataclass(frozen=True, slots=True)
class CachedPartition:
    """Assignment and state of one partition. ``state`` is the state znode as decoded, None when it is missing
    or unreadable (then: leader -1, empty ISR, leader epoch -1); ``partition_epoch`` is the state znode's
    zkVersion (-1 without one, the version of an unreadable one).

    The decoded :class:`PartitionState` itself is kept, every field of it: a standby controller that wins the
    election takes these very tuples into its context (shared, not copied or rebuilt)."""

    partition: int
    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]
    partition_epoch: int
    state: PartitionState | None

    @property
    def isr(self) -> tuple[int, ...]:
        state = self.state
        return () if state is None else state.isr

    @property
    def leader(self) -> int:
        state = self.state
        return NO_LEADER if state is None else state.leader

    @property
    def leader_epoch(self) -> int:
        state = self.state
        return -1 if state is None else state.leader_epoch


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
