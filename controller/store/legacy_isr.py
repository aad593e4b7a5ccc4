"""ISR expansion the pre-AlterPartition way, for clusters whose IBP predates topic ids (< 2.8-IV0).

Below IBP 2.7-IV2 a Kafka partition leader writes the partition state znode itself (a compare-and-set on
its zkVersion, ReplicationUtils.updateLeaderAndIsr) and leaves a sequential ``/isr_change_notification``
node (``propagateIsrChanges``) so the controller re-reads the states and completes reassignments. Our
AlterPartition path needs topic ids (AlterPartition v2+), so brokers below 2.8-IV0 use this path; at
2.7-IV2 .. 2.8-IV0 Kafka itself would send AlterIsr v0, which the controller treats the same way.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from controller.zk.errors import NOT_AS_EXPECTED
from controller.zk.session import ZkSession
from zkmodel import paths
from zkmodel.admin import TopicPartition
from zkmodel.errors import ZnodeFormatError
from zkmodel.notifications import IsrChangeNotification
from zkmodel.topics import PartitionState

log = logging.getLogger(__name__)


class LegacyIsrWriter:
    def __init__(self, session: ZkSession, broker_id: int) -> None:
        self.session = session
        self.broker_id = broker_id

    def expand(self, ready: Mapping[tuple[str, int], tuple[int, tuple[int, ...], int]]) -> int:
        """Write each partition's new ISR if this broker still leads it at the leader epoch and zkVersion it
        saw, then announce the changed partitions in one notification. Returns how many were written."""
        changed: list[TopicPartition] = []
        for (topic, partition), (leader_epoch, isr, zk_version) in sorted(ready.items()):
            path = paths.partition_state(topic, partition)
            found = self.session.get(path)
            if found is None or found[1].version != zk_version:
                continue  # moved on since the cache saw it: the next step uses the new state
            try:
                state = PartitionState.decode(path, found[0])
            except ZnodeFormatError as exc:
                log.warning("broker %d: not expanding the ISR of %s-%d: %s", self.broker_id, topic, partition, exc)
                continue
            if state.leader != self.broker_id or state.leader_epoch != leader_epoch:
                continue
            new = PartitionState(
                state.leader, state.leader_epoch, state.controller_epoch, tuple(isr), state.leader_recovery_state
            )
            try:
                self.session.set_if_version(path, new.encode(), zk_version, write="isr")
            except NOT_AS_EXPECTED:
                continue  # the controller (or a new leader) wrote first: Kafka's leader gives up the same way
            changed.append(TopicPartition(topic, partition))
        if changed:
            self.session.ensure_persistent([paths.ISR_CHANGE_NOTIFICATION])
            prefix = f"{paths.ISR_CHANGE_NOTIFICATION}/{paths.ISR_CHANGE_PREFIX}"
            data = IsrChangeNotification(tuple(changed)).encode()
            self.session.create_sequential(prefix, data, write="isr")
        return len(changed)
