"""Topic lifecycle on the active controller: create, delete (through markers), add partitions.

Validation and messages follow Kafka's AdminZkClient/ZkAdminManager so clients see Kafka's errors;
placement is Kafka's own algorithm. Writes go through the fenced writer only.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence

from controller.active import leader_election as leaders
from controller.active.api import NewTopic, WriteResult, Written
from controller.active.context import ControllerContext, PartitionInfo, TopicInfo
from controller.active.state_changes import create_states, log_new_topic
from controller.zk.errors import NodeExistsError
from controller.zk.fenced_writer import FencedWriter, OpFailed
from controller.zk.ops import Create, Delete, Op, SetData, op_size
from controller.zk.session import ZkSession
from zkmodel import errorcodes as E
from zkmodel import paths, topic_names
from zkmodel.admin import TopicPartition
from zkmodel.configs import EntityConfig
from zkmodel.errorcodes import KafkaApiError
from zkmodel.placement import BrokerMetadata, PlacementError, assign_replicas_to_brokers
from zkmodel.reassignment import ReplicaAssignment
from zkmodel.topics import PartitionState, TopicAssignment
from zkmodel.uuid import random_uuid

log = logging.getLogger(__name__)
_NOT_CONSECUTIVE = "partitions should be a consecutive 0-based integer sequence"


def broker_metadata(ctx: ControllerContext) -> list[BrokerMetadata]:
    """Live brokers sorted by id, with racks, as Kafka's getBrokerMetadatas gives them to placement."""
    return [BrokerMetadata(b.broker_id, b.rack) for _, b in sorted(ctx.live_brokers.items())]


def _placement(
    brokers: list[BrokerMetadata], n: int, rf: int, *, fixed_start_index: int = -1, start_partition_id: int = -1
) -> dict[int, tuple[int, ...]]:
    try:
        placed = assign_replicas_to_brokers(
            brokers, n, rf, fixed_start_index=fixed_start_index, start_partition_id=start_partition_id
        )
    except PlacementError as exc:
        raise KafkaApiError(E.by_name(exc.error_name), exc.message) from None
    return {p: tuple(r) for p, r in placed.items()}


def validate_assignment(assignment: Mapping[int, Sequence[int]]) -> None:
    """AdminZkClient.validateTopicCreate's assignment checks, in Kafka's order and words."""
    if len({len(r) for r in assignment.values()}) != 1:
        raise KafkaApiError(E.INVALID_REPLICA_ASSIGNMENT, "All partitions should have the same number of replicas")
    for replicas in assignment.values():
        if len(set(replicas)) != len(replicas):
            shown = ", ".join(f"{p} -> List({', '.join(map(str, r))})" for p, r in sorted(assignment.items()))
            raise KafkaApiError(E.INVALID_REPLICA_ASSIGNMENT, f"Duplicate replica assignment found: Map({shown})")
    if sorted(assignment) != list(range(len(assignment))):
        raise KafkaApiError(E.INVALID_REPLICA_ASSIGNMENT, _NOT_CONSECUTIVE)


def collision_index(names: Iterable[str]) -> dict[str, list[str]]:
    """Topic names by their '.'/'_'-unified form, so a creation finds its colliding siblings by one lookup
    rather than by scanning every topic (Kafka scans; at 100,000 topics that is most of a creation's cost)."""
    index: dict[str, list[str]] = {}
    for name in names:
        if topic_names.has_collision_chars(name):
            index.setdefault(topic_names.unify_collision_chars(name), []).append(name)
    return index


def plan_topic(
    ctx: ControllerContext, new: NewTopic, collisions: Mapping[str, list[str]] | None = None
) -> dict[int, tuple[int, ...]]:
    """Validate a creation and return its assignment (explicit, or placed like Kafka). ``collisions``: the
    :func:`collision_index` of the existing topics (built here when not given)."""
    try:
        topic_names.validate(new.name)
    except topic_names.InvalidTopicName as exc:
        raise KafkaApiError(E.INVALID_TOPIC_EXCEPTION, exc.message) from None
    if new.name in ctx.topics_to_delete:
        raise KafkaApiError(E.TOPIC_ALREADY_EXISTS, f"Topic '{new.name}' is marked for deletion.")
    if new.name in ctx.topics:
        raise KafkaApiError(E.TOPIC_ALREADY_EXISTS, f"Topic '{new.name}' already exists.")
    if topic_names.has_collision_chars(new.name):
        index = collision_index(ctx.topics) if collisions is None else collisions
        colliding = index.get(topic_names.unify_collision_chars(new.name), [])
        if colliding:
            raise KafkaApiError(
                E.INVALID_TOPIC_EXCEPTION, f"Topic '{new.name}' collides with existing topics: {', '.join(colliding)}"
            )
    if new.assignment is not None:
        if new.num_partitions != -1 or new.replication_factor != -1:
            raise KafkaApiError(
                E.INVALID_REQUEST,
                "Both numPartitions or replicationFactor and replicasAssignments were set. Both cannot be used at "
                "the same time.",
            )
        if not new.assignment:
            raise KafkaApiError(
                E.INVALID_REPLICA_ASSIGNMENT, "partitions should be a consecutive 0-based integer sequence"
            )
        assignment = {p: tuple(r) for p, r in new.assignment.items()}
        validate_assignment(assignment)
        return assignment
    return _placement(broker_metadata(ctx), new.num_partitions, new.replication_factor)


def topic_znode(topic: TopicInfo, *, uses_topic_ids: bool) -> bytes:
    """Version 3 (with the id) at IBP >= 2.8-IV0, version 2 below; an existing id is never dropped."""
    version = 3 if uses_topic_ids or topic.topic_id is not None else 2
    parts = topic.partitions
    return TopicAssignment(
        partitions={p: i.replicas for p, i in parts.items()},
        adding_replicas={p: i.adding for p, i in parts.items() if i.adding},
        removing_replicas={p: i.removing for p, i in parts.items() if i.removing},
        topic_id=topic.topic_id if version == 3 else None,
        version=version,
    ).encode()


def _new_topic(
    new: NewTopic, assignment: Mapping[int, tuple[int, ...]], *, uses_topic_ids: bool
) -> tuple[TopicInfo, list[Op]]:
    """The new topic's model and the ops that create its config, topic znode and partitions parent."""
    topic = TopicInfo(new.name, random_uuid() if uses_topic_ids else None)
    topic.partitions = {p: PartitionInfo.of(p, ReplicaAssignment(tuple(r))) for p, r in sorted(assignment.items())}
    topic.znode_json_version = 3 if uses_topic_ids else 2
    ops: list[Op] = [
        Create(paths.entity_config("topics", new.name), EntityConfig(dict(new.configs)).encode()),
        Create(paths.topic(new.name), topic_znode(topic, uses_topic_ids=uses_topic_ids)),
        Create(paths.topic_partitions(new.name), None),
    ]
    return topic, ops


def create_topic(
    ctx: ControllerContext,
    writer: FencedWriter,
    new: NewTopic,
    assignment: Mapping[int, tuple[int, ...]],
    *,
    uses_topic_ids: bool,
) -> TopicInfo:
    """Config, topic znode and partitions parent in one fenced multi; then partition states."""
    topic, ops = _new_topic(new, assignment, uses_topic_ids=uses_topic_ids)
    try:
        writer.atomic(ops)
    except OpFailed as exc:
        if isinstance(exc.error, NodeExistsError) and exc.index == 0:
            # A stale config node (Kafka leaves them behind with delete.topic.enable=false): overwrite it.
            ops[0] = SetData(paths.entity_config("topics", new.name), EntityConfig(dict(new.configs)).encode())
            writer.atomic(ops)
        elif isinstance(exc.error, NodeExistsError):
            raise KafkaApiError(E.TOPIC_ALREADY_EXISTS, f"Topic '{new.name}' already exists.") from None
        else:
            raise
    ctx.topics[new.name] = topic
    create_states(ctx, writer, [TopicPartition(new.name, p) for p in topic.partitions])
    log.info("created topic %s (%s) with %d partitions", new.name, topic.topic_id, len(topic.partitions))
    return topic


#: A topic whose creation multi would be larger than this is created the long way (:func:`create_topic`).
PIPELINED_TOPIC_BYTES = 256 * 1024


def create_topics(
    ctx: ControllerContext,
    writer: FencedWriter,
    planned: Sequence[tuple[NewTopic, Mapping[int, tuple[int, ...]]]],
    *,
    uses_topic_ids: bool,
) -> dict[str, WriteResult]:
    """Create many planned topics at once: each topic is one fenced multi (config, topic znode, partitions,
    every partition's state: the topic appears whole or not at all) and the multis travel pipelined, so a
    CreateTopics of 1,000 topics costs about one round trip rather than three per topic. A topic too big for
    one multi, or one that meets a stale config znode, is created the long way (:func:`create_topic`)."""
    out: dict[str, WriteResult] = {}
    groups: list[list[Op]] = []
    ready: list[tuple[NewTopic, Mapping[int, tuple[int, ...]], TopicInfo, dict[int, PartitionState]]] = []
    for new, assignment in planned:
        topic, ops = _new_topic(new, assignment, uses_topic_ids=uses_topic_ids)
        states: dict[int, PartitionState] = {}
        for p, info in topic.partitions.items():
            election = leaders.initial(info.replicas, ctx.is_live)
            ops.append(Create(paths.partition(new.name, p), None))
            if election is None:
                log.warning("no live replica for new partition %s-%d (replicas %s)", new.name, p, list(info.replicas))
                continue
            states[p] = leaders.apply(None, election, ctx.epoch)
            ops.append(Create(paths.partition_state(new.name, p), states[p].encode()))
        if sum(op_size(op) for op in ops) > PIPELINED_TOPIC_BYTES:
            created = create_topic(ctx, writer, new, assignment, uses_topic_ids=uses_topic_ids)
            out[new.name] = WriteResult(E.NONE, None, written(created.topic_id, assignment))
            continue
        groups.append(ops)
        ready.append((new, assignment, topic, states))
    for (new, assignment, topic, states), outcome in zip(ready, writer.atomic_many(groups), strict=True):
        if isinstance(outcome, OpFailed):
            if not isinstance(outcome.error, NodeExistsError):
                raise outcome
            if outcome.index != 0:
                out[new.name] = WriteResult(E.TOPIC_ALREADY_EXISTS, f"Topic '{new.name}' already exists.")
                continue
            try:  # a stale config znode (Kafka leaves them with delete.topic.enable=false): the long way
                created = create_topic(ctx, writer, new, assignment, uses_topic_ids=uses_topic_ids)
                out[new.name] = WriteResult(E.NONE, None, written(created.topic_id, assignment))
            except KafkaApiError as exc:
                out[new.name] = WriteResult(exc.error, exc.message)
            continue
        for p, state in states.items():
            topic.put(p, topic.partitions[p].with_state(state, 0))
        ctx.topics[new.name] = topic
        log_new_topic(ctx.epoch, topic)
        log.info("created topic %s (%s) with %d partitions", new.name, topic.topic_id, len(topic.partitions))
        out[new.name] = WriteResult(E.NONE, None, written(topic.topic_id, assignment))
    return out


def written(topic_id: str | None, assignment: Mapping[int, Sequence[int]]) -> Written:
    """What a creation wrote, for the API's answer: the topic id and each partition's replicas, by partition."""
    return Written(topic_id, {p: tuple(r) for p, r in sorted(assignment.items())})


def request_deletion(ctx: ControllerContext, writer: FencedWriter, name: str) -> None:
    """AdminZkClient.deleteTopic: write the marker; the controller deletes on the marker event. A topic
    already marked is not an error (ZkAdminManager waits for it like any other)."""
    if name not in ctx.topics:
        raise KafkaApiError(E.UNKNOWN_TOPIC_OR_PARTITION, f"Topic `{name}` to delete does not exist")
    try:
        writer.atomic([Create(paths.delete_topic_marker(name), None)])
    except OpFailed as exc:
        if not isinstance(exc.error, NodeExistsError):
            raise
    ctx.topics_to_delete.add(name)


def delete_topic(ctx: ControllerContext, writer: FencedWriter, session: ZkSession, name: str) -> bool:
    """Remove every znode of a topic, its config and its marker (fenced). False if it must wait: a topic
    being reassigned cannot be deleted until the move finishes."""
    topic = ctx.topics.get(name)
    if topic is not None and topic.is_reassigning:
        return False
    ops: list[Op] = []
    if topic is not None or session.exists(paths.topic(name)) is not None:
        partitions = session.get_children(paths.topic_partitions(name)) or []
        for p in partitions:
            for child in session.get_children(f"{paths.topic_partitions(name)}/{p}") or []:
                ops.append(Delete(f"{paths.topic_partitions(name)}/{p}/{child}"))
            ops.append(Delete(f"{paths.topic_partitions(name)}/{p}"))
        if session.exists(paths.topic_partitions(name)) is not None:
            ops.append(Delete(paths.topic_partitions(name)))
        ops.append(Delete(paths.topic(name)))
    if session.exists(paths.entity_config("topics", name)) is not None:
        ops.append(Delete(paths.entity_config("topics", name)))
    ops.append(Delete(paths.delete_topic_marker(name)))
    writer.batched(ops)
    ctx.topics.pop(name, None)
    ctx.topics_to_delete.discard(name)
    log.info("deleted topic %s", name)
    return True


def plan_new_partitions(
    ctx: ControllerContext, name: str, count: int, assignment: Sequence[Sequence[int]] | None
) -> dict[int, tuple[int, ...]]:
    """ZkAdminManager.createPartitions' checks and AdminZkClient's placement for the added partitions."""
    topic = ctx.topics.get(name)
    if topic is None or name in ctx.topics_to_delete:
        raise KafkaApiError(E.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.")
    if topic.is_reassigning:
        raise KafkaApiError(
            E.REASSIGNMENT_IN_PROGRESS, f"A partition reassignment is in progress for the topic '{name}'."
        )
    old = len(topic.partitions)
    if count < old:
        raise KafkaApiError(
            E.INVALID_PARTITIONS, f"Topic currently has {old} partitions, which is higher than the requested {count}."
        )
    if count == old:
        raise KafkaApiError(E.INVALID_PARTITIONS, f"Topic already has {old} partitions.")
    first = topic.partitions[0].replicas if 0 in topic.partitions else ()
    if assignment is not None:
        live = set(ctx.live_brokers)
        unknown = sorted({b for r in assignment for b in r} - live)
        if unknown:
            raise KafkaApiError(
                E.INVALID_REPLICA_ASSIGNMENT,
                f"Unknown broker(s) in replica assignment: {', '.join(map(str, unknown))}.",
            )
        if len(assignment) != count - old:
            raise KafkaApiError(
                E.INVALID_REPLICA_ASSIGNMENT,
                f"Increasing the number of partitions by {count - old} but {len(assignment)} assignments provided.",
            )
        proposed = {old + i: tuple(r) for i, r in enumerate(assignment)}
        for p, replicas in proposed.items():
            if not replicas:
                raise KafkaApiError(
                    E.INVALID_REPLICA_ASSIGNMENT, f"Cannot have replication factor of 0 for partition id {p}."
                )
            if len(set(replicas)) != len(replicas):
                raise KafkaApiError(
                    E.INVALID_REPLICA_ASSIGNMENT,
                    f"Duplicate brokers not allowed in replica assignment: {', '.join(map(str, replicas))} "
                    f"for partition id {p}.",
                )
        bad = {p: len(r) for p, r in proposed.items() if len(r) != len(first)}
        if bad:
            raise KafkaApiError(
                E.INVALID_REPLICA_ASSIGNMENT,
                f"Inconsistent replication factor between partitions, partition 0 has {len(first)} while partitions "
                f"[{', '.join(map(str, bad))}] have replication factors [{', '.join(map(str, bad.values()))}], "
                "respectively.",
            )
        return proposed
    brokers = broker_metadata(ctx)
    start = next((i for i, b in enumerate(brokers) if first and b.id >= first[0]), 0)
    return _placement(brokers, count - old, len(first), fixed_start_index=start, start_partition_id=old)


def add_partitions(
    ctx: ControllerContext,
    writer: FencedWriter,
    name: str,
    added: Mapping[int, tuple[int, ...]],
    *,
    uses_topic_ids: bool,
) -> None:
    topic = ctx.topics[name]
    if uses_topic_ids and topic.topic_id is None:
        topic.topic_id = random_uuid()
    for p, replicas in added.items():
        topic.put(p, PartitionInfo.of(p, ReplicaAssignment(replicas)))
    writer.atomic([SetData(paths.topic(name), topic_znode(topic, uses_topic_ids=uses_topic_ids))])
    create_states(ctx, writer, [TopicPartition(name, p) for p in added])
