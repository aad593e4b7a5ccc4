"""Failover load: read the whole cluster's metadata into a ControllerContext, pipelined.

Kafka's controller does one async getData per znode; we batch reads into ZooKeeper multiRead requests
(falling back to pipelined single reads on servers older than 3.6), because per-request overhead, not
the server, sets the pace of a failover.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from controller.active.context import ControllerContext, LiveBroker, PartitionInfo, TopicInfo
from controller.active.state_changes import read_states
from controller.zk.session import ZkSession
from zkmodel import paths
from zkmodel.admin import PartitionReassignmentZnode, TopicPartition
from zkmodel.brokers import BrokerRegistration
from zkmodel.errors import ZnodeFormatError
from zkmodel.reassignment import ReplicaAssignment
from zkmodel.topics import TopicAssignment

log = logging.getLogger(__name__)


@dataclass
class LoadReport:
    brokers: int = 0
    topics: int = 0
    partitions: int = 0
    znodes_read: int = 0
    seconds: float = 0.0
    bad_znodes: list[str] = field(default_factory=list)
    #: Topics whose znode needs rewriting: no topic id (at IBP >= 2.8) or an old JSON version.
    topics_to_upgrade: list[str] = field(default_factory=list)


def load_brokers(session: ZkSession) -> dict[int, LiveBroker]:
    ids = session.get_children(paths.BROKER_IDS) or []
    found = session.read_data([paths.broker(int(i)) for i in ids if i.isdigit()])
    brokers: dict[int, LiveBroker] = {}
    for path, result in found.items():
        if result is None:
            continue  # went away between listing and reading
        data, stat = result
        broker_id = int(path.rsplit("/", 1)[1])
        try:
            brokers[broker_id] = LiveBroker(broker_id, BrokerRegistration.decode(path, data), stat.czxid)
        except ZnodeFormatError as exc:
            log.error("ignoring broker %d with an unreadable registration: %s", broker_id, exc)
    return brokers


def load_topics(session: ZkSession, names: list[str], report: LoadReport) -> dict[str, TopicInfo]:
    """Topic znodes and the state znodes of their partitions."""
    topics: dict[str, TopicInfo] = {}
    found = session.read_data([paths.topic(n) for n in names], expected_size=120)
    report.znodes_read += len(found)
    for name in names:
        result = found.get(paths.topic(name))
        if result is None:
            continue
        try:
            znode = TopicAssignment.decode(paths.topic(name), result[0])
        except ZnodeFormatError as exc:
            # Kafka reads an unparseable topic znode as an empty assignment; we skip the topic and say so.
            report.bad_znodes.append(str(exc))
            log.error("skipping topic %s: %s", name, exc)
            continue
        info = TopicInfo(name, znode.topic_id, znode_json_version=znode.version)
        for p, replicas in znode.partitions.items():
            info.partitions[p] = PartitionInfo(
                ReplicaAssignment(replicas, znode.adding_replicas.get(p, ()), znode.removing_replicas.get(p, ()))
            )
        topics[name] = info
    tps = [TopicPartition(n, p) for n, t in topics.items() for p in t.partitions]

    def partition(tp: TopicPartition) -> PartitionInfo | None:
        return topics[tp.topic].partitions.get(tp.partition)

    report.bad_znodes.extend(read_states(session, partition, tps))
    report.znodes_read += len(tps)
    return topics


def load_context(
    session: ZkSession,
    epoch: int,
    epoch_zk_version: int,
    *,
    uses_topic_ids: bool,
    before_reading_topics: Callable[[list[str]], None] | None = None,
) -> tuple[ControllerContext, LoadReport]:
    """``before_reading_topics`` runs between listing the topics and reading them, so per-topic watches set
    there cannot miss a change made in between (Kafka's order)."""
    started = time.monotonic()
    report = LoadReport()
    ctx = ControllerContext(epoch, epoch_zk_version)
    ctx.live_brokers = load_brokers(session)
    names = sorted(session.get_children(paths.BROKER_TOPICS) or [])
    if before_reading_topics is not None:
        before_reading_topics(names)
    ctx.topics = load_topics(session, names, report)
    ctx.topics_to_delete = set(session.get_children(paths.DELETE_TOPICS) or [])
    legacy = session.get(paths.REASSIGN_PARTITIONS)
    if legacy is not None:
        try:
            ctx.zk_reassignments = PartitionReassignmentZnode.decode(paths.REASSIGN_PARTITIONS, legacy[0]).as_dict()
        except ZnodeFormatError as exc:
            # Kafka logs invalid JSON here and reads it as empty, leaving the node in place.
            report.bad_znodes.append(str(exc))
            log.error("ignoring %s", exc)
    wanted_version = 3 if uses_topic_ids else 2
    for name, topic in ctx.topics.items():
        if (uses_topic_ids and topic.topic_id is None) or topic.znode_json_version < wanted_version:
            report.topics_to_upgrade.append(name)
    report.brokers = len(ctx.live_brokers)
    report.topics = len(ctx.topics)
    report.partitions = sum(len(t.partitions) for t in ctx.topics.values())
    report.seconds = time.monotonic() - started
    return ctx, report
