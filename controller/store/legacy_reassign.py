"""The legacy ``/admin/reassign_partitions`` request znode, as ``kafka-reassign-partitions --zookeeper``
(Kafka 2.6-2.8) writes it: created only if absent (KafkaZkClient.createPartitionReassignment), never
overwritten, because the controller reacts only to its creation and rewrites it itself as moves finish.
"""

from __future__ import annotations

from collections.abc import Sequence

from controller.zk.session import ZkSession
from zkmodel import paths
from zkmodel.admin import PartitionReassignmentZnode, TopicPartition


def legacy_reassignment_in_progress(session: ZkSession) -> bool:
    """KafkaZkClient.reassignPartitionsInProgress: does the request znode exist?"""
    return session.exists(paths.REASSIGN_PARTITIONS) is not None


def create_legacy_reassignment(session: ZkSession, partitions: Sequence[tuple[TopicPartition, Sequence[int]]]) -> bool:
    """Create the request znode with these targets; False (nothing written) when it already exists."""
    data = PartitionReassignmentZnode(tuple((tp, tuple(r)) for tp, r in partitions)).encode()
    session.ensure_persistent([paths.ADMIN])
    return session.create_only(paths.REASSIGN_PARTITIONS, data, write="reassign_partitions")
