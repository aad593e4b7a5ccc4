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
from typing import Any

from controller.active.context import ControllerContext, LiveBroker, PartitionInfo, TopicInfo
from controller.zk.session import ZkSession
from zkmodel import paths
from zkmodel.admin import PartitionReassignmentZnode
from zkmodel.brokers import BrokerRegistration
from zkmodel.errors import ZnodeFormatError
from zkmodel.reassignment import ReplicaAssignment
from zkmodel.topics import PartitionState, TopicAssignment

log = logging.getLogger(__name__)

#: A kazoo watch callback (it receives the WatchedEvent).
TopicWatch = Callable[[Any], None]


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
    #: "zookeeper": read in full (a cold load); "image": built from the node's metadata image (a standby).
    source: str = "zookeeper"


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


def load_topics(
    session: ZkSession, names: list[str], report: LoadReport, *, watch: TopicWatch | None = None
) -> dict[str, TopicInfo]:
    """Topic znodes and the state znodes of their partitions, each batch decoded as it arrives while the
    next ones are read (the read is in flight while Python decodes).

    ``watch`` leaves a data watch on every topic znode (Kafka's PartitionModificationsHandler), set after
    the read in a few SetWatches requests relative to a zxid taken before it, so a change made in between
    fires at once: Kafka's guarantee (it registers the handlers first) without 100,000 exists() calls."""
    since = session.last_zxid
    topics: dict[str, TopicInfo] = {}
    topic_paths = [paths.topic(n) for n in names]
    # What each state znode read completes: the topic's mapping, the partition and its assignment.
    slots: list[tuple[dict[int, PartitionInfo], int, ReplicaAssignment]] = []
    state_paths: list[str] = []
    # A partition not moving shares one ReplicaAssignment per distinct replica list with every other one.
    settled: dict[tuple[int, ...], ReplicaAssignment] = {}

    def on_topics(start: int, datas: list[bytes | None], versions: list[int]) -> None:
        for i, data in enumerate(datas, start):
            if versions[i - start] < 0:
                continue  # deleted since it was listed
            name = names[i]
            try:
                znode = TopicAssignment.decode(topic_paths[i], data)
            except ZnodeFormatError as exc:
                # Kafka reads an unparseable topic znode as an empty assignment; we skip the topic and say so.
                report.bad_znodes.append(str(exc))
                log.error("skipping topic %s: %s", name, exc)
                continue
            parts: dict[int, PartitionInfo] = {}
            adding, removing = znode.adding_replicas, znode.removing_replicas
            base = f"{topic_paths[i]}/partitions/"
            for p, replicas in znode.partitions.items():
                if p in adding or p in removing:
                    assignment = ReplicaAssignment(replicas, adding.get(p, ()), removing.get(p, ()))
                else:
                    assignment = settled.get(replicas) or settled.setdefault(replicas, ReplicaAssignment(replicas))
                slots.append((parts, p, assignment))
                state_paths.append(f"{base}{p}/state")
            topics[name] = TopicInfo(name, znode.topic_id, parts, znode.version)

    session.read_data_into(topic_paths, on_topics, expected_size=120)
    report.znodes_read += len(topic_paths)
    if watch is not None:
        session.watch_data(topic_paths, watch, since)

    decode = PartitionState.decode
    record = PartitionInfo.of

    def on_states(start: int, datas: list[bytes | None], versions: list[int]) -> None:
        for i, data in enumerate(datas, start):
            parts, p, assignment = slots[i]
            version = versions[i - start]
            if version < 0:
                parts[p] = record(p, assignment)
                continue
            try:
                parts[p] = record(p, assignment, decode(state_paths[i], data), version)
            except ZnodeFormatError as exc:
                log.error("unreadable partition state: %s", exc)
                report.bad_znodes.append(str(exc))
                parts[p] = record(p, assignment, None, version)

    session.read_data_into(state_paths, on_states, expected_size=80)
    report.znodes_read += len(state_paths)
    return topics


def load_context(
    session: ZkSession,
    epoch: int,
    epoch_zk_version: int,
    *,
    uses_topic_ids: bool,
    topic_watch: TopicWatch | None = None,
) -> tuple[ControllerContext, LoadReport]:
    """``topic_watch`` is set on every topic znode by the read itself (see :func:`load_topics`)."""
    started = time.monotonic()
    report = LoadReport()
    ctx = ControllerContext(epoch, epoch_zk_version)
    ctx.live_brokers = load_brokers(session)
    names = sorted(session.get_children(paths.BROKER_TOPICS) or [])
    ctx.topics = load_topics(session, names, report, watch=topic_watch)
    load_admin_znodes(session, ctx, report, uses_topic_ids=uses_topic_ids)
    report.seconds = time.monotonic() - started
    return ctx, report


def load_admin_znodes(session: ZkSession, ctx: ControllerContext, report: LoadReport, *, uses_topic_ids: bool) -> None:
    """What every load reads besides brokers and topics (the topics queued for deletion, the legacy
    reassignment znode), then the figures and the topic znodes due for an upgrade."""
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
    upgrade, partitions = report.topics_to_upgrade, 0
    for name, topic in ctx.topics.items():  # one pass: a million-partition cluster has 100,000 topics
        partitions += len(topic.partitions)
        if (uses_topic_ids and topic.topic_id is None) or topic.znode_json_version < wanted_version:
            upgrade.append(name)
    report.brokers = len(ctx.live_brokers)
    report.topics = len(ctx.topics)
    report.partitions = partitions
