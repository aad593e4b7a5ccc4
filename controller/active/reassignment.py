"""KIP-455 partition reassignment on the active controller (KafkaController.onPartitionReassignment).

Phases expressed as ZooKeeper writes: U1 writes RS/AR/RR to the topic znode before anything else, so a
move survives controller failover; while the target is not in the ISR the leader epoch is bumped (A1);
once it is, leadership moves if needed (B3), removed replicas leave the ISR (B4), the topic znode gets
RS = TRS with empty AR/RR (B6) and the legacy znode entry goes (B7). Partitions are processed in batches
so a 1,000-partition move writes each topic znode once per phase, not once per partition.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence

from controller.active import leader_election as leaders
from controller.active.api import Result
from controller.active.context import ControllerContext, PartitionInfo
from controller.active.state_changes import read_states, update_states
from controller.active.topics import topic_assignment
from controller.zk.errors import NoNodeError
from controller.zk.fenced_writer import FencedWriter, OpFailed
from controller.zk.ops import Delete, Op, SetData
from controller.zk.protocol.multi import SetDone
from controller.zk.session import ZkSession
from zkmodel import errorcodes as E
from zkmodel import paths
from zkmodel.admin import PartitionReassignmentZnode, TopicPartition
from zkmodel.errors import ZnodeFormatError
from zkmodel.reassignment import ReplicaAssignment
from zkmodel.topics import PartitionState

log = logging.getLogger(__name__)

OK: Result = (E.NONE, None)


class Reassigner:
    """The reassignment logic of one controller epoch, over its context, writer and session."""

    def __init__(
        self,
        ctx: ControllerContext,
        writer: FencedWriter,
        session: ZkSession,
        *,
        uses_topic_ids: bool,
        on_completed: Callable[[int], None] | None = None,
    ) -> None:
        #: Told how many moves just finished (the reassignment completion rate on the dashboards).
        self.on_completed = on_completed
        self.ctx = ctx
        self.writer = writer
        self.session = session
        self.uses_topic_ids = uses_topic_ids

    # -- building blocks ----------------------------------------------------------------------------
    def write_topics(self, topics: Iterable[str]) -> None:
        """U1/B6: one fenced setData per topic with every partition's RS/AR/RR from the context."""
        written = [self.ctx.topics[t] for t in sorted(set(topics)) if t in self.ctx.topics]
        assignments = [topic_assignment(t, uses_topic_ids=self.uses_topic_ids) for t in written]
        ops: list[Op] = [
            SetData(paths.topic(t.name), a.encode(), decoded=a) for t, a in zip(written, assignments, strict=True)
        ]
        for topic, op, result in zip(written, ops, self.writer.bulk(ops), strict=True):
            if isinstance(result, Exception):
                log.error("could not write %s: %r", op.path, result)
            elif isinstance(result, SetDone):
                topic.written_zxid = result.stat.mzxid

    def refresh(self, tps: Collection[TopicPartition]) -> None:
        """Re-read partition states from ZooKeeper, pipelined (Kafka's isReassignmentComplete reads ZK)."""
        read_states(self.session, self.ctx, tps)

    def bump_epochs(self, tps: Iterable[TopicPartition], *, unless_complete: bool = False) -> list[TopicPartition]:
        """A new leader epoch with the same leader and ISR (updateLeaderEpoch). ``unless_complete`` (phase A1):
        a partition whose state, re-read after a lost race, shows its move complete is not bumped but returned,
        for phase B."""
        epoch = self.ctx.epoch
        complete: dict[TopicPartition, None] = {}
        tps = list(tps)
        # the partition epochs the caller decided on: only a state re-read since (a lost race) is looked at again
        decided: dict[TopicPartition, int] = {}
        if unless_complete:
            decided = {tp: i.partition_epoch for tp in tps if (i := self.ctx.partition(tp)) is not None}

        def bump(tp: TopicPartition, info: PartitionInfo) -> PartitionState | None:
            state = info.state
            if state is None or state.leader < 0:
                return None
            if unless_complete and info.partition_epoch != decided.get(tp) and self._complete(tp):
                complete[tp] = None
                return None
            return PartitionState(state.leader, state.leader_epoch + 1, epoch, state.isr, state.leader_recovery_state)

        update_states(self.ctx, self.writer, self.session, tps, bump)
        return list(complete)

    def offline_replicas(self, replicas: Mapping[TopicPartition, Sequence[int]]) -> None:
        """OfflineReplica for each (partition, replica): leave the ISR, give up leadership."""
        pending = {tp: list(rs) for tp, rs in replicas.items() if rs}
        while pending:
            batch = {tp: rs.pop(0) for tp, rs in pending.items()}

            def drop(
                tp: TopicPartition, info: PartitionInfo, batch: dict[TopicPartition, int] = batch
            ) -> PartitionState | None:
                return None if info.state is None else leaders.remove_from_isr(info.state, batch[tp], self.ctx.epoch)

            update_states(self.ctx, self.writer, self.session, batch, drop)
            pending = {tp: rs for tp, rs in pending.items() if rs}

    def move_leaders(self, tps: Iterable[TopicPartition]) -> None:
        """B3: elect from the target if the leader is not in it or is dead; otherwise bump the epoch."""
        to_elect, to_bump = [], []
        for tp in tps:
            info = self.ctx.partition(tp)
            if info is None or not info.has_state:
                continue
            leader = info.leader
            if leader not in info.replicas or not self.ctx.is_live(leader):
                to_elect.append(tp)
            else:
                to_bump.append(tp)
        epoch = self.ctx.epoch

        def elect(tp: TopicPartition, info: PartitionInfo) -> PartitionState | None:
            state = info.state
            if state is None:
                return None
            choice = leaders.reassignment(info.replicas, state.isr, self.ctx.is_live)
            if choice is None:
                log.error("no eligible leader in %s for reassigned partition %s", list(info.replicas), tp)
                return None
            return leaders.apply(state, choice, epoch)

        update_states(self.ctx, self.writer, self.session, to_elect, elect)
        self.bump_epochs(to_bump)

    # -- the phases ----------------------------------------------------------------------------------
    def on_reassignment(self, moves: Mapping[TopicPartition, ReplicaAssignment]) -> None:
        """onPartitionReassignment for a batch of partitions."""
        changed_topics: set[str] = set()
        unneeded: dict[TopicPartition, list[int]] = {}
        for tp, new in moves.items():
            info = self.ctx.partition(tp)
            if info is None:
                continue
            if (info.replicas, info.adding, info.removing) != (new.replicas, new.adding, new.removing):
                gone = [r for r in info.replicas if r not in new.replicas]
                if gone:
                    unneeded[tp] = gone
                self.ctx.put(tp, info.with_assignment(new))
                changed_topics.add(tp.topic)
        self.write_topics(changed_topics)  # U1 before anything else
        self.offline_replicas(unneeded)  # U3: replicas of a superseded move
        moving: set[TopicPartition] = set()
        unread: list[TopicPartition] = []
        for tp, a in moves.items():
            if a.is_being_reassigned and (info := self.ctx.partition(tp)) is not None:
                moving.add(tp)
                if not info.has_state:
                    unread.append(tp)
        # Kafka re-reads every moving partition's state here. The context's state is the truth of ZooKeeper at
        # its zkVersion (partition_epoch), and the A1 write is conditional on that version: a state someone else
        # changed meanwhile (a broker's legacy ISR write) fails the write, is re-read and decided again below.
        # So only the states the context lacks are read; a 100,000-partition request skips 100,000 reads.
        self.refresh(unread)
        complete: list[TopicPartition] = []
        pending: list[TopicPartition] = []
        for tp in moves:
            if self._complete(tp):
                complete.append(tp)
            elif tp in moving:
                pending.append(tp)
        late = self.bump_epochs(pending, unless_complete=True)  # A1
        self.complete([*complete, *late])

    def _complete(self, tp: TopicPartition) -> bool:
        info = self.ctx.partition(tp)
        if info is None:
            return False
        if not info.is_being_reassigned:
            return True
        # TRS within the ISR, as one set difference: a 100,000-partition request asks this of every partition
        return info.has_state and not set(info.replicas).difference(info.removing, info.isr)

    def complete(self, tps: Sequence[TopicPartition]) -> None:
        """Phase B for partitions whose target replicas are all in the ISR."""
        if not tps:
            return
        removing: dict[TopicPartition, list[int]] = {}
        completed: dict[TopicPartition, tuple[int, ...]] = {}
        for tp in tps:
            info = self.ctx.partition(tp)
            if info is None:
                continue
            removing[tp] = list(info.removing)
            done = info.assignment.complete()  # B2
            self.ctx.put(tp, info.with_assignment(done))
            completed[tp] = done.replicas
        self.move_leaders(completed)  # B3
        self.offline_replicas(removing)  # B4/B5
        self.write_topics({tp.topic for tp in completed})  # B6
        self.remove_from_zk_znode(lambda tp, target: completed.get(tp) == target)  # B7
        for tp, replicas in completed.items():
            log.info("reassignment of %s completed: replicas %s", tp, list(replicas))
        if completed and self.on_completed is not None:
            self.on_completed(len(completed))

    def maybe_complete(self, tps: Iterable[TopicPartition]) -> None:
        """After an ISR change: finish the moves whose target has caught up."""
        ready = [tp for tp in tps if (i := self.ctx.partition(tp)) and i.is_being_reassigned]
        self.complete([tp for tp in ready if self._complete(tp)])

    def resume(
        self,
        predicate: Callable[[TopicPartition, ReplicaAssignment], bool] | None = None,
        among: Iterable[TopicPartition] | None = None,
    ) -> None:
        """maybeResumeReassignments: re-run the moves recorded in AR/RR (after failover, broker startup).
        ``among``: the partitions that were moving when the caller last surveyed the context (else found here);
        each is looked at as it is now."""
        found = self.ctx.reassigning() if among is None else ((tp, self.ctx.partition(tp)) for tp in among)
        moves = {}
        for tp, info in found:
            if info is None or not info.is_being_reassigned:
                continue
            assignment = info.assignment
            if predicate is None or predicate(tp, assignment):
                moves[tp] = assignment
        if moves:
            self.on_reassignment(moves)

    # -- API and legacy znode --------------------------------------------------------------------------
    @staticmethod
    def _dead_adding(move: ReplicaAssignment, live: frozenset[int]) -> Result | None:
        adding = move.adding
        if live.issuperset(adding):
            return None
        return (
            E.INVALID_REPLICA_ASSIGNMENT,
            "Replica assignment has brokers that are not alive. Replica list: "
            f"{_shown(adding)}, live broker list: Set({', '.join(map(str, sorted(live)))})",
        )

    def _build(self, tp: TopicPartition, target: Sequence[int] | None) -> ReplicaAssignment | None:
        info = self.ctx.partition(tp)
        current = info.assignment if info is not None else ReplicaAssignment(())
        if current.is_being_reassigned:
            return current.reassign_to(target if target is not None else current.origin)
        return None if target is None else current.reassign_to(target)

    def _trigger(self, moves: Mapping[TopicPartition, ReplicaAssignment]) -> dict[TopicPartition, Result]:
        results: dict[TopicPartition, Result] = {}
        valid: dict[TopicPartition, ReplicaAssignment] = {}
        for tp, move in moves.items():
            if tp.topic in self.ctx.topics_to_delete or self.ctx.partition(tp) is None:
                results[tp] = (E.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist.")
            else:
                valid[tp] = move
        self.on_reassignment(valid)
        results.update({tp: OK for tp in valid})
        return results

    def alter(self, requests: Mapping[TopicPartition, Sequence[int] | None]) -> dict[TopicPartition, Result]:
        """AlterPartitionReassignments: validate, build, drop API-named partitions from the znode, trigger.
        Each partition's move is computed once and serves both the liveness check and the trigger."""
        results: dict[TopicPartition, Result] = {}
        moves: dict[TopicPartition, ReplicaAssignment] = {}
        live = self.ctx.live_ids()
        for tp, target in requests.items():
            if target is not None and (problem := _malformed(target)) is not None:
                results[tp] = problem
                continue
            move = self._build(tp, target)
            if move is None:
                results[tp] = (E.NO_REASSIGNMENT_IN_PROGRESS, None)
            elif target is not None and (problem := self._dead_adding(move, live)) is not None:
                results[tp] = problem
            else:
                moves[tp] = move
        self.remove_from_zk_znode(lambda tp, _target: tp in moves)
        results.update(self._trigger(moves))
        return results

    def list(self, tps: Collection[TopicPartition] | None) -> dict[TopicPartition, ReplicaAssignment]:
        moving = dict((tp, i.assignment) for tp, i in self.ctx.reassigning())
        if tps is None:
            return moving
        return {tp: moving[tp] for tp in tps if tp in moving}

    def read_zk_znode(self) -> dict[TopicPartition, tuple[int, ...]] | None:
        found = self.session.get(paths.REASSIGN_PARTITIONS)
        if found is None:
            return None
        try:
            return PartitionReassignmentZnode.decode(paths.REASSIGN_PARTITIONS, found[0]).as_dict()
        except ZnodeFormatError as exc:
            log.error("ignoring %s", exc)  # Kafka: logged, read as empty, node left in place
            return {}

    def process_zk_znode(self) -> set[TopicPartition]:
        """processZkPartitionReassignment: the znode was created (or found at failover)."""
        requested = self.read_zk_znode()
        if not requested:
            return set()
        self.ctx.zk_reassignments = dict(requested)
        moves = {tp: m for tp, target in requested.items() if (m := self._build(tp, target)) is not None}
        results = self._trigger(moves)
        failed = {tp for tp, (err, _msg) in results.items() if err is not E.NONE}
        if failed:
            log.warning("failed reassignment through zk: %s", sorted(map(str, failed)))
            self.remove_from_zk_znode(lambda tp, _target: tp in failed)
        return {tp for tp, (err, _msg) in results.items() if err is E.NONE}

    def remove_from_zk_znode(self, should_remove: Callable[[TopicPartition, tuple[int, ...]], bool]) -> None:
        """maybeRemoveFromZkReassignment: rewrite the remaining entries, or delete the node when none remain."""
        current = self.read_zk_znode()
        if current is None:
            return
        remaining = {tp: t for tp, t in current.items() if not should_remove(tp, t)}
        if remaining == current and current:
            return
        try:
            if remaining:
                znode = PartitionReassignmentZnode(tuple(remaining.items()))
                self.writer.atomic([SetData(paths.REASSIGN_PARTITIONS, znode.encode())])
            else:
                self.writer.atomic([Delete(paths.REASSIGN_PARTITIONS)])
                log.info("no more partitions need to be reassigned: deleted %s", paths.REASSIGN_PARTITIONS)
        except OpFailed as exc:
            if not isinstance(exc.error, NoNodeError):
                raise
        self.ctx.zk_reassignments = remaining


def _malformed(replicas: Sequence[int]) -> Result | None:
    """The target's own problems (empty, duplicates, negative ids), before anything is looked up."""
    if not replicas:
        return E.INVALID_REPLICA_ASSIGNMENT, "Empty replica list specified in partition reassignment."
    if len(set(replicas)) != len(replicas):
        return (
            E.INVALID_REPLICA_ASSIGNMENT,
            f"Duplicate replica ids in partition reassignment replica list: {_shown(replicas)}",
        )
    if any(r < 0 for r in replicas):
        return E.INVALID_REPLICA_ASSIGNMENT, f"Invalid broker id in replica list: {_shown(replicas)}"
    return None


def _shown(replicas: Sequence[int]) -> str:
    """A replica list as Kafka's messages print a Scala List."""
    return f"List({', '.join(map(str, replicas))})"
