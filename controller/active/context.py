"""The controller's in-memory model of the cluster, loaded at failover and kept in step with its writes.

Kafka's ControllerContext: only the active controller has one, it is rebuilt on every election, and it is the
controller's *belief*; ZooKeeper stays the truth, and every write is fenced.

A partition's record is the metadata image's own (:class:`~controller.image.snapshot.CachedPartition`):
immutable, so a standby's context *shares* the image's records and its per-topic mappings instead of copying
a million of them (KRaft's controller and brokers read one ``MetadataImage`` the same way). The controller
never mutates a record: a write it made replaces the partition's record in its own topic (:meth:`TopicInfo.put`),
and a topic's mapping is copied from the image only on its first such write. Invariant: nothing the context
holds is ever changed in place, so the image a broker serves from is never touched by the controller.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TypeAlias

from controller.image.snapshot import CachedPartition
from zkmodel.admin import TopicPartition
from zkmodel.brokers import BrokerRegistration


@dataclass
class LiveBroker:
    broker_id: int
    registration: BrokerRegistration
    epoch: int  # czxid of /brokers/ids/<id>

    @property
    def rack(self) -> str | None:
        return self.registration.rack


#: The controller's record of one partition: the image's (assignment, state fields, zkVersion), replaced on
#: every change. ``state`` is None and ``partition_epoch`` -1 without a state znode.
PartitionInfo: TypeAlias = CachedPartition


@dataclass(slots=True)
class TopicInfo:
    name: str
    topic_id: str | None
    #: The image's own mapping until this controller first writes one of the topic's partitions
    #: (:meth:`put`), then this context's copy.
    partitions: Mapping[int, PartitionInfo] = field(default_factory=dict)
    znode_json_version: int = 3
    #: The zxid of this controller's last write of the topic znode that ZooKeeper acknowledged with its Stat
    #: (-1: none): what the znode held then is what this record holds (see ``PartitionModifications``).
    written_zxid: int = -1

    def put(self, partition: int, info: PartitionInfo) -> None:
        """Replace one partition's record (the only way the context changes one)."""
        parts = self.partitions
        if type(parts) is not dict:
            parts = self.partitions = dict(parts)
        parts[partition] = info

    @property
    def is_reassigning(self) -> bool:
        return any(p.adding or p.removing for p in self.partitions.values())


@dataclass(slots=True)
class Survey:
    """What one pass over every partition finds for the controller's scans (a failover's, a broker change's):
    at a million partitions each separate pass costs a tenth of a second of the controller's one thread.

    Partitions of topics queued for deletion are left out of all but ``moving`` (as Kafka leaves them out of
    its online/offline state changes, but not out of ``maybeResumeReassignments``)."""

    #: Partitions without a (readable) state znode.
    no_state: list[TopicPartition]
    #: Partitions without a live leader: no state, or a leader that is gone or shutting down.
    offline: list[TopicPartition]
    #: Each partition with replicas on brokers not live, and those replicas.
    dead_replicas: dict[TopicPartition, list[int]]
    #: Partitions being reassigned (AR or RR not empty).
    moving: list[TopicPartition]


@dataclass
class ControllerContext:
    epoch: int
    epoch_zk_version: int
    live_brokers: dict[int, LiveBroker] = field(default_factory=dict)
    shutting_down: set[int] = field(default_factory=set)
    topics: dict[str, TopicInfo] = field(default_factory=dict)
    topics_to_delete: set[str] = field(default_factory=set)
    #: Partitions listed in the legacy /admin/reassign_partitions znode, with their requested target.
    zk_reassignments: dict[TopicPartition, tuple[int, ...]] = field(default_factory=dict)

    # -- queries ---------------------------------------------------------------------------------
    def is_live(self, broker_id: int) -> bool:
        return broker_id in self.live_brokers and broker_id not in self.shutting_down

    def live_ids(self) -> frozenset[int]:
        """The brokers :meth:`is_live` accepts, as a set: a loop over a batch's replicas asks its
        ``__contains__`` (a C call) instead of a method per replica."""
        return frozenset(self.live_brokers.keys() - self.shutting_down)

    def partition(self, tp: TopicPartition) -> PartitionInfo | None:
        topic = self.topics.get(tp.topic)
        return None if topic is None else topic.partitions.get(tp.partition)

    def put(self, tp: TopicPartition, info: PartitionInfo) -> None:
        """Replace the record of ``tp`` (a topic this context knows)."""
        self.topics[tp.topic].put(tp.partition, info)

    def all_partitions(self) -> Iterator[tuple[TopicPartition, PartitionInfo]]:
        for name, topic in self.topics.items():
            for p, info in topic.partitions.items():
                yield TopicPartition(name, p), info

    def reassigning(self) -> Iterator[tuple[TopicPartition, PartitionInfo]]:
        # The scans below visit every partition (a million at scale) but build a TopicPartition only for
        # those they return: most partitions are not moving, offline or under-replicated.
        for name, topic in self.topics.items():
            for p, info in topic.partitions.items():
                if info.adding or info.removing:
                    yield TopicPartition(name, p), info

    def survey(self) -> Survey:
        """:class:`Survey` of every partition, in one pass."""
        live = frozenset(self.live_brokers.keys() - self.shutting_down)
        covers = live.issuperset
        deleting = self.topics_to_delete
        no_state: list[TopicPartition] = []
        offline: list[TopicPartition] = []
        dead: dict[TopicPartition, list[int]] = {}
        moving: list[TopicPartition] = []
        for name, topic in self.topics.items():
            skip = name in deleting
            for p, info in topic.partitions.items():
                if info.adding or info.removing:
                    moving.append(TopicPartition(name, p))
                if skip:
                    continue
                if info.leader_epoch < 0:
                    tp = TopicPartition(name, p)
                    no_state.append(tp)
                    offline.append(tp)
                elif info.leader not in live:
                    offline.append(TopicPartition(name, p))
                if not covers(info.replicas):
                    dead[TopicPartition(name, p)] = [r for r in info.replicas if r not in live]
        return Survey(no_state, offline, dead, moving)

    def offline_partitions(self) -> list[TopicPartition]:
        """Partitions without a live leader (Kafka's OfflinePartitionsCount)."""
        live = self.live_brokers.keys() - self.shutting_down
        out = []
        for name, topic in self.topics.items():
            if name in self.topics_to_delete:
                continue
            for p, info in topic.partitions.items():
                if info.leader_epoch < 0 or info.leader not in live:  # no state znode, or its leader is gone
                    out.append(TopicPartition(name, p))
        return out

    def under_replicated(self) -> list[TopicPartition]:
        return [
            TopicPartition(name, p)
            for name, topic in self.topics.items()
            for p, info in topic.partitions.items()
            if info.leader_epoch >= 0 and len(info.isr) < len(info.target)
        ]

    def partitions_led_by(self, broker_id: int) -> list[TopicPartition]:
        return [
            TopicPartition(name, p)
            for name, topic in self.topics.items()
            for p, info in topic.partitions.items()
            if info.leader_epoch >= 0 and info.leader == broker_id
        ]

    def counts(self) -> dict[str, int]:
        """The gauges' figures (offline, under-replicated and moving partitions, replicas being added and
        removed, topics, partitions) in one pass over the partitions, building nothing per partition: at a
        million partitions each pass costs a fraction of a second of the controller's single thread."""
        live = self.live_brokers.keys() - self.shutting_down
        offline = under = reassigning = adding = removing = partitions = 0
        for name, topic in self.topics.items():
            deleting = name in self.topics_to_delete
            partitions += len(topic.partitions)
            for info in topic.partitions.values():
                if info.leader_epoch < 0:  # no (readable) state znode
                    offline += not deleting
                else:
                    offline += not deleting and info.leader not in live
                    under += len(info.isr) < len(info.replicas) - len(info.removing)  # |TRS| = |RS| - |RR|
                if info.adding or info.removing:
                    reassigning += 1
                    adding += len(info.adding)
                    removing += len(info.removing)
        return {
            "offline": offline,
            "under_replicated": under,
            "reassigning": reassigning,
            "adding_replicas": adding,
            "removing_replicas": removing,
            "topics": len(self.topics),
            "partitions": partitions,
            "live_brokers": len(self.live_brokers),
        }
