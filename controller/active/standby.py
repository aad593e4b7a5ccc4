"""A standby controller's load: the context built from the node's metadata image, not read from ZooKeeper again.

Every node keeps an image of the cluster current from ZooKeeper's watches (:mod:`controller.image.snapshot`,
kept by the broker's metadata cache). When this node wins the election it asks for the image as of the
election (:meth:`controller.zk.watched.WatchedCache.catch_up`: a ``sync``, then every watch event up to it
applied) and builds its :class:`ControllerContext` from it: the same brokers, topics, assignments, partition
states and zkVersions a full read would return, without reading and decoding a million znodes
(KRaft's standby controllers are loaded the same way: they follow the metadata log before they win).

What the image does not hold is read here as the cold load reads it: the topics queued for deletion and the
legacy ``/admin/reassign_partitions`` znode (both small). Changes after the image's point arrive as events:
the controller's own watches were armed before it asks (``/brokers/ids``, ``/brokers/topics``, ...), and the
topic znodes' watches are set relative to a zxid taken before the ``sync``, so a topic changed since fires
at once. ZooKeeper stays the truth: every write the controller makes is still fenced and versioned, so a
state the image got wrong fails its version check rather than overwriting anything.
"""

from __future__ import annotations

import logging
import time

from controller.active.context import ControllerContext, LiveBroker, TopicInfo
from controller.active.failover import LoadReport, load_admin_znodes
from controller.image.snapshot import MetadataSnapshot
from controller.zk.session import ZkSession

log = logging.getLogger(__name__)


def context_from_image(
    snapshot: MetadataSnapshot,
    session: ZkSession,
    epoch: int,
    epoch_zk_version: int,
    *,
    uses_topic_ids: bool,
) -> tuple[ControllerContext, LoadReport]:
    """The context of a controller elected with ``epoch``, from ``snapshot`` (caught up to the election)."""
    started = time.monotonic()
    report = LoadReport(source="image")
    ctx = ControllerContext(epoch, epoch_zk_version)
    ctx.live_brokers = {
        b.broker_id: LiveBroker(b.broker_id, b.registration, b.epoch) for b in snapshot.brokers.values()
    }
    # The image's partition records and per-topic mappings are shared, not copied (the context replaces a
    # record rather than changing it, and copies a topic's mapping on its first write): building the context
    # costs one TopicInfo per topic. The topics are in name order, as in the cold load (the order the
    # failover's scans and writes then follow).
    topics = ctx.topics
    for name in sorted(snapshot.topics):
        cached = snapshot.topics[name]
        topics[name] = TopicInfo(name, cached.topic_id, cached.partitions, cached.znode_version)
    for path, error in sorted(snapshot.unreadable.items()):
        # reported as the cold load reports what it cannot read: the topic skipped, the partition without leader
        log.error("skipping unreadable %s (as this node's image read it): %s", path, error)
        report.bad_znodes.append(error)
    load_admin_znodes(session, ctx, report, uses_topic_ids=uses_topic_ids)
    report.seconds = time.monotonic() - started
    return ctx, report
