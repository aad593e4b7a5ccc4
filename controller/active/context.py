"""The controller's in-memory model of the cluster, loaded at failover and kept in step with its writes.

Kafka's ControllerContext: only the active controller has one, it is rebuilt from ZooKeeper on every
election, and it is the controller's *belief*; ZooKeeper stays the truth, and every write is fenced.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from zkmodel.admin import TopicPartition
from zkmodel.brokers import BrokerRegistration
from zkmodel.reassignment import ReplicaAssignment
from zkmodel.topics import PartitionState


@dataclass
class LiveBroker:
    broker_id: int
    registration: BrokerRegistration
    epoch: int  # czxid of /brokers/ids/<id>

    @property
    def rack(self) -> str | None:
        return self.registration.rack


@dataclass
class PartitionInfo:
    assignment: ReplicaAssignment
    state: PartitionState | None = None
    partition_epoch: int = -1  # zkVersion of the state znode; -1 when it does not exist


@dataclass
class TopicInfo:
    name: str
    topic_id: str | None
    partitions: dict[int, PartitionInfo] = field(default_factory=dict)
    znode_json_version: int = 3

    @property
    def is_reassigning(self) -> bool:
        return any(p.assignment.is_being_reassigned for p in self.partitions.values())


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

    def partition(self, tp: TopicPartition) -> PartitionInfo | None:
        topic = self.topics.get(tp.topic)
        return None if topic is None else topic.partitions.get(tp.partition)

    def all_partitions(self) -> Iterator[tuple[TopicPartition, PartitionInfo]]:
        for name, topic in self.topics.items():
            for p, info in topic.partitions.items():
                yield TopicPartition(name, p), info

    def reassigning(self) -> Iterator[tuple[TopicPartition, PartitionInfo]]:
        return ((tp, p) for tp, p in self.all_partitions() if p.assignment.is_being_reassigned)

    def offline_partitions(self) -> list[TopicPartition]:
        """Partitions without a live leader (Kafka's OfflinePartitionsCount)."""
        out = []
        for tp, info in self.all_partitions():
            if tp.topic in self.topics_to_delete:
                continue
            leader = info.state.leader if info.state else -1
            if leader < 0 or not self.is_live(leader):
                out.append(tp)
        return out

    def under_replicated(self) -> list[TopicPartition]:
        return [
            tp
            for tp, info in self.all_partitions()
            if info.state is not None and len(info.state.isr) < len(info.assignment.target)
        ]

    def partitions_led_by(self, broker_id: int) -> list[TopicPartition]:
        return [tp for tp, info in self.all_partitions() if info.state is not None and info.state.leader == broker_id]
