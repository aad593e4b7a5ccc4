"""Partition state transitions written the way Kafka's controller writes them.

A state znode's zkVersion is the partition epoch: every update is a setData conditional on it, inside
the epoch-fenced multi. A BADVERSION means a leader changed the ISR meanwhile, so the partition is
re-read and the transition recomputed (Kafka's ``partitionsToRetry``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterable

from controller.active import leader_election as leaders
from controller.active.context import ControllerContext, PartitionInfo, TopicInfo
from controller.zk.errors import BadVersionError, KazooException, NodeExistsError
from controller.zk.fenced_writer import FencedWriter
from controller.zk.ops import Create, Op, SetData
from controller.zk.retry import Raced, attempts
from controller.zk.session import ZkSession
from zkmodel import paths
from zkmodel.admin import TopicPartition
from zkmodel.errors import ZnodeFormatError
from zkmodel.topics import PartitionState

#: Also the node's state-change log (Kafka's ``state.change.logger``, :mod:`controller.logs`): one INFO line per
#: partition state written, built only when INFO is on for it (off on stderr alone, where it would flood).
log = logging.getLogger(__name__)

#: Given the partition and its current state, the new state (None: no change).
Transition = Callable[[TopicPartition, PartitionInfo], PartitionState | None]
MAX_ATTEMPTS = 10


def read_states(
    session: ZkSession,
    ctx: ControllerContext,
    tps: Collection[TopicPartition],
) -> list[str]:
    """Read the state znodes of ``tps`` in one pipelined multiRead and store them (ZooKeeper is the truth:
    a missing znode clears the state). Returns the reasons of unreadable znodes, which are also logged."""
    state_paths = {tp: paths.partition_state(tp.topic, tp.partition) for tp in tps}
    found = session.read_data(list(state_paths.values()), expected_size=80)
    bad = []
    for tp, path in state_paths.items():
        info = ctx.partition(tp)
        if info is None:
            continue
        result = found.get(path)
        if result is None:
            ctx.put(tp, info.with_state(None, -1))
            continue
        try:
            ctx.put(tp, info.with_state(PartitionState.decode(path, result[0]), result[1].version))
        except ZnodeFormatError as exc:
            log.error("unreadable partition state: %s", exc)
            bad.append(str(exc))
            ctx.put(tp, info.with_state(None, result[1].version))
    return bad


def update_states(
    ctx: ControllerContext,
    writer: FencedWriter,
    session: ZkSession,
    partitions: Iterable[TopicPartition],
    transition: Transition,
) -> dict[TopicPartition, PartitionState]:
    """Apply ``transition`` to each partition that has a state znode; returns the states written."""
    todo = [tp for tp in partitions if (info := ctx.partition(tp)) is not None and info.has_state]
    written: dict[TopicPartition, PartitionState] = {}
    logged = log.isEnabledFor(logging.INFO)
    for attempt in attempts(MAX_ATTEMPTS):  # partitions still racing after that wait for the next event
        with attempt:
            planned: list[tuple[TopicPartition, PartitionInfo, PartitionState]] = []
            for tp in todo:
                info = ctx.partition(tp)
                if info is None or not info.has_state:
                    continue
                new = transition(tp, info)
                if new is not None and new != info.state:
                    planned.append((tp, info, new))
            ops: list[Op] = [
                SetData(paths.partition_state(tp.topic, tp.partition), new.encode(), info.partition_epoch, new)
                for tp, info, new in planned
            ]
            retry: list[TopicPartition] = []
            for (tp, info, new), result in zip(planned, writer.bulk(ops) if ops else [], strict=True):
                if isinstance(result, BadVersionError):
                    retry.append(tp)
                elif isinstance(result, KazooException):
                    log.error("could not update state of %s: %r", tp, result)
                else:
                    if logged:
                        _log_change(ctx.epoch, tp, info.state, new)
                    ctx.put(tp, info.with_state(new, result.stat.version))
                    written[tp] = new
            if retry:
                read_states(session, ctx, retry)  # a leader changed them meanwhile: re-read, recompute
                todo = retry
                raise Raced(f"{len(retry)} partition states changed under us")
    return written


def create_states(
    ctx: ControllerContext, writer: FencedWriter, partitions: Iterable[TopicPartition]
) -> dict[TopicPartition, PartitionState]:
    """NewPartition -> OnlinePartition: leader = first live replica, ISR = live replicas. Partitions with no
    live replica stay without a state znode (offline) until a replica's broker registers."""
    ops: list[Op] = []
    planned: list[tuple[TopicPartition, PartitionInfo, PartitionState]] = []
    parents: list[Op] = []  # Kafka's createTopicPartitions; NodeExists is expected and ignored
    for tp in partitions:
        info = ctx.partition(tp)
        if info is None or info.state is not None:
            continue
        election = leaders.initial(info.replicas, ctx.is_live)
        if election is None:
            log.warning("no live replica for new partition %s (replicas %s)", tp, list(info.replicas))
            continue
        new = leaders.apply(None, election, ctx.epoch)
        planned.append((tp, info, new))
        parent = Create(paths.topic_partitions(tp.topic), None)
        if parent not in parents:
            parents.append(parent)
        ops.append(Create(paths.partition(tp.topic, tp.partition), None))
        ops.append(Create(paths.partition_state(tp.topic, tp.partition), new.encode(), decoded=new))
    writer.each(parents)
    results = writer.bulk(ops)
    written = {}
    logged = log.isEnabledFor(logging.INFO)
    for i, (tp, info, new) in enumerate(planned):
        state_result = results[2 * i + 1]
        if isinstance(state_result, NodeExistsError):
            continue  # created by an earlier attempt; the next failover reads it
        if isinstance(state_result, KazooException):
            log.error("could not create state of %s: %r", tp, state_result)
            continue
        ctx.put(tp, info.with_state(new, 0))
        written[tp] = new
        if logged:
            _log_change(ctx.epoch, tp, None, new, info.replicas)
    return written


def log_new_topic(epoch: int, topic: TopicInfo) -> None:
    """The state-change lines of a topic whose partition states were created with it, in its one multi
    (:func:`controller.active.topics.create_topics`)."""
    if not log.isEnabledFor(logging.INFO):
        return
    for p, info in topic.partitions.items():
        if info.state is not None:
            _log_change(epoch, TopicPartition(topic.name, p), None, info.state, info.replicas)


def _log_change(
    epoch: int,
    tp: TopicPartition,
    before: PartitionState | None,
    after: PartitionState,
    replicas: Collection[int] = (),
) -> None:
    """One state-change line, worded as Kafka's PartitionStateMachine words it (callers check INFO is on first)."""
    if before is None:
        what = f"from NewPartition to OnlinePartition with state {_text(after)} (assigned replicas {list(replicas)})"
    else:
        what = f"state from {_text(before)} to {_text(after)}"
    log.info("controller epoch %d: changed partition %s %s", epoch, tp, what)


def _text(state: PartitionState) -> str:
    """A state as Kafka's state-change log prints its ``LeaderAndIsr``, minus the fields not kept here."""
    return f"(leader={state.leader}, leaderEpoch={state.leader_epoch}, isr={list(state.isr)})"
