"""Leadership and ISR on the active controller: broker loss and return, elections, AlterPartition,
controlled shutdown. Every state write is fenced and conditional on the partition epoch."""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterable, Mapping

from controller.active import leader_election as leaders
from controller.active.api import IsrResult, IsrUpdate
from controller.active.context import ControllerContext, PartitionInfo, Survey
from controller.active.reassignment import Reassigner
from controller.active.state_changes import create_states, update_states
from controller.zk.errors import BadVersionError, KazooException
from controller.zk.fenced_writer import FencedWriter
from controller.zk.ops import Op, SetData
from controller.zk.session import ZkSession
from zkmodel import errorcodes as E
from zkmodel import paths
from zkmodel.admin import TopicPartition
from zkmodel.errorcodes import KafkaError
from zkmodel.topics import RECOVERED, RECOVERING, PartitionState

log = logging.getLogger(__name__)

PREFERRED, UNCLEAN = 0, 1


class Leadership:
    def __init__(
        self, ctx: ControllerContext, writer: FencedWriter, session: ZkSession, reassigner: Reassigner
    ) -> None:
        self.ctx = ctx
        self.writer = writer
        self.session = session
        self.reassigner = reassigner

    def _elect(
        self, tps: Iterable[TopicPartition], pick: Callable[[PartitionInfo, PartitionState], leaders.Election | None]
    ) -> dict[TopicPartition, PartitionState]:
        epoch = self.ctx.epoch

        def transition(_tp: TopicPartition, info: PartitionInfo) -> PartitionState | None:
            if info.state is None:
                return None
            choice = pick(info, info.state)
            return None if choice is None else leaders.apply(info.state, choice, epoch)

        return update_states(self.ctx, self.writer, self.session, tps, transition)

    def trigger_online(self, survey: Survey | None = None) -> dict[TopicPartition, PartitionState]:
        """triggerOnlinePartitionStateChange: partitions without a state get one; partitions whose leader is
        gone elect from the live ISR (clean election only). ``survey``: the context's, taken since the last
        change of the brokers or the partitions (else taken here)."""
        found = self.ctx.survey() if survey is None else survey
        written = create_states(self.ctx, self.writer, found.no_state)
        offline = [tp for tp in found.offline if tp not in written]
        written.update(self._elect(offline, lambda i, st: leaders.offline(i.replicas, st.isr, self.ctx.is_live)))
        return written

    def on_broker_failure(self, dead: Collection[int]) -> str:
        for broker_id in dead:
            self.ctx.live_brokers.pop(broker_id, None)
            self.ctx.shutting_down.discard(broker_id)
        elected = self.trigger_online()
        replicas: dict[TopicPartition, list[int]] = {}
        deleting, gone = self.ctx.topics_to_delete, frozenset(dead)
        for name, topic in self.ctx.topics.items():
            if name in deleting:
                continue
            for p, info in topic.partitions.items():
                if not gone.isdisjoint(info.replicas):
                    replicas[TopicPartition(name, p)] = [r for r in info.replicas if r in gone]
        self.reassigner.offline_replicas(replicas)
        return (
            f"broker(s) {sorted(dead)} gone: {len(elected)} partition(s) got a new leader, "
            f"{len(self.ctx.offline_partitions())} offline"
        )

    def on_broker_startup(self, new: Collection[int]) -> str:
        elected = self.trigger_online()
        new_set = set(new)
        self.reassigner.resume(lambda _tp, a: any(r in new_set for r in a.target))
        return f"broker(s) {sorted(new)} joined: {len(elected)} partition(s) got a leader"

    def elect_leaders(
        self, election_type: int, tps: Collection[TopicPartition]
    ) -> dict[TopicPartition, tuple[KafkaError, str | None]]:
        """ElectLeaders (and the legacy preferred_replica_election znode)."""
        results: dict[TopicPartition, tuple[KafkaError, str | None]] = {}
        eligible = []
        for tp in tps:
            info = self.ctx.partition(tp)
            if info is None or tp.topic in self.ctx.topics_to_delete:
                results[tp] = (E.UNKNOWN_TOPIC_OR_PARTITION, f"The partition {tp} does not exist.")
                continue
            state = info.state
            if election_type == PREFERRED:
                preferred = info.replicas[0] if info.replicas else -1
                if state is not None and state.leader == preferred:
                    results[tp] = (E.ELECTION_NOT_NEEDED, "Leader election not needed for topic partition.")
                    continue
            elif state is not None and state.leader >= 0 and self.ctx.is_live(state.leader):
                results[tp] = (E.ELECTION_NOT_NEEDED, "Leader election not needed for topic partition.")
                continue
            eligible.append(tp)
        if election_type == PREFERRED:
            written = self._elect(eligible, lambda i, st: leaders.preferred(i.replicas, st.isr, self.ctx.is_live))
            failure = (
                E.PREFERRED_LEADER_NOT_AVAILABLE,
                "Failed to elect leader for partition {tp} under strategy "
                "PreferredReplicaPartitionLeaderElectionStrategy",
            )
        else:
            written = self._elect(
                eligible, lambda i, st: leaders.offline(i.replicas, st.isr, self.ctx.is_live, unclean=True)
            )
            failure = (
                E.ELIGIBLE_LEADERS_NOT_AVAILABLE,
                "Failed to elect leader for partition {tp} under strategy OfflinePartitionLeaderElectionStrategy(true)",
            )
        for tp in eligible:
            results[tp] = (E.NONE, None) if tp in written else (failure[0], failure[1].format(tp=tp))
        return results

    def alter_partition(
        self, broker_id: int, broker_epoch: int, updates: Mapping[TopicPartition, IsrUpdate], *, version: int = 3
    ) -> tuple[KafkaError, dict[TopicPartition, IsrResult]]:
        """AlterPartition from a partition leader, with Kafka's checks in Kafka's order."""
        live = self.ctx.live_brokers.get(broker_id)
        if live is None or live.epoch != broker_epoch:
            return E.STALE_BROKER_EPOCH, {}
        results: dict[TopicPartition, IsrResult] = {}
        planned: list[tuple[TopicPartition, PartitionInfo, PartitionState]] = []
        for tp, want in updates.items():
            info = self.ctx.partition(tp)
            if info is None or info.state is None:
                results[tp] = IsrResult(E.UNKNOWN_TOPIC_OR_PARTITION)
                continue
            current = info.state
            proposed = PartitionState(
                broker_id, want.leader_epoch, self.ctx.epoch, want.isr, want.leader_recovery_state
            )
            if want.partition_epoch > info.partition_epoch or want.leader_epoch > current.leader_epoch:
                results[tp] = IsrResult(E.NOT_CONTROLLER)
            elif want.leader_epoch < current.leader_epoch:
                results[tp] = IsrResult(E.FENCED_LEADER_EPOCH)
            elif (broker_id, want.leader_epoch, want.isr, want.leader_recovery_state) == (
                current.leader,
                current.leader_epoch,
                current.isr,
                current.leader_recovery_state,
            ):
                results[tp] = IsrResult(E.NONE, current, info.partition_epoch)
            elif want.partition_epoch < info.partition_epoch:
                results[tp] = IsrResult(E.INVALID_UPDATE_VERSION)
            elif (want.leader_recovery_state == RECOVERING and len(want.isr) > 1) or (
                current.leader_recovery_state == RECOVERED and want.leader_recovery_state == RECOVERING
            ):
                results[tp] = IsrResult(E.INVALID_REQUEST)
            elif any(not self.ctx.is_live(r) for r in want.isr):
                results[tp] = IsrResult(E.INELIGIBLE_REPLICA if version > 1 else E.OPERATION_NOT_ATTEMPTED)
            else:
                planned.append((tp, info, proposed))
        ops: list[Op] = [
            SetData(paths.partition_state(tp.topic, tp.partition), new.encode(), info.partition_epoch, new)
            for tp, info, new in planned
        ]
        for (tp, info, new), result in zip(planned, self.writer.bulk(ops), strict=True):
            if isinstance(result, BadVersionError):
                results[tp] = IsrResult(E.INVALID_UPDATE_VERSION)
            elif isinstance(result, KazooException):
                log.error("AlterPartition for %s failed: %r", tp, result)
                results[tp] = IsrResult(E.UNKNOWN_SERVER_ERROR)
            else:
                self.ctx.put(tp, info.with_state(new, result.stat.version))
                results[tp] = IsrResult(E.NONE, new, result.stat.version)
        self.reassigner.maybe_complete(tp for tp, r in results.items() if r.error is E.NONE)
        return E.NONE, results

    def controlled_shutdown(self, broker_id: int, broker_epoch: int) -> tuple[KafkaError, list[TopicPartition]]:
        """doControlledShutdown: move leadership off the broker, drop it from ISRs; return what it still leads."""
        live = self.ctx.live_brokers.get(broker_id)
        if live is None:
            return E.BROKER_NOT_AVAILABLE, []
        if broker_epoch != -1 and live.epoch != broker_epoch:
            return E.STALE_BROKER_EPOCH, []
        self.ctx.shutting_down.add(broker_id)
        led = [
            tp
            for tp, info in self.ctx.all_partitions()
            if info.leader_epoch >= 0 and info.leader == broker_id and len(info.replicas) > 1
        ]
        shutting = self.ctx.shutting_down
        self._elect(
            led,
            lambda i, st: leaders.controlled_shutdown(i.replicas, st.isr, self.ctx.is_live, shutting),
        )
        followers = {
            tp: [broker_id]
            for tp, info in self.ctx.all_partitions()
            if info.leader_epoch >= 0 and info.leader != broker_id and broker_id in info.isr and len(info.replicas) > 1
        }
        self.reassigner.offline_replicas(followers)
        return E.NONE, self.ctx.partitions_led_by(broker_id)
