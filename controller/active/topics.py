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
from controller.zk.ops import MAX_MULTI_BYTES, Create, Delete, Op, SetData, op_size
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


def topic_assignment(topic: TopicInfo, *, uses_topic_ids: bool) -> TopicAssignment:
    """The topic znode of ``topic``: version 3 (with the id) at IBP >= 2.8-IV0, version 2 below; an existing id
    is never dropped. Equal to what decoding its bytes gives (key order aside: readers sort partitions)."""
    version = 3 if uses_topic_ids or topic.topic_id is not None else 2
    parts = topic.partitions
    return TopicAssignment(
        partitions={p: i.replicas for p, i in parts.items()},
        adding_replicas={p: i.adding for p, i in parts.items() if i.adding},
        removing_replicas={p: i.removing for p, i in parts.items() if i.removing},
        topic_id=topic.topic_id if version == 3 else None,
        version=version,
    )


def topic_znode(topic: TopicInfo, *, uses_topic_ids: bool) -> bytes:
    return topic_assignment(topic, uses_topic_ids=uses_topic_ids).encode()


def _new_topic(
    new: NewTopic, assignment: Mapping[int, tuple[int, ...]], *, uses_topic_ids: bool
) -> tuple[TopicInfo, list[Op]]:
    """The new topic's model and the ops that create its config, topic znode and partitions parent."""
    topic = TopicInfo(new.name, random_uuid() if uses_topic_ids else None)
    topic.partitions = {p: PartitionInfo.of(p, ReplicaAssignment(tuple(r))) for p, r in sorted(assignment.items())}
    topic.znode_json_version = 3 if uses_topic_ids else 2
    znode = topic_assignment(topic, uses_topic_ids=uses_topic_ids)
    ops: list[Op] = [
        Create(paths.entity_config("topics", new.name), EntityConfig(dict(new.configs)).encode()),
        Create(paths.topic(new.name), znode.encode(), decoded=znode),
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
    is_live = ctx.live_ids().__contains__
    for new, assignment in planned:
        topic, ops = _new_topic(new, assignment, uses_topic_ids=uses_topic_ids)
        states: dict[int, PartitionState] = {}
        for p, info in topic.partitions.items():
            election = leaders.initial(info.replicas, is_live)
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


def delete_known(ctx: ControllerContext, writer: FencedWriter, names: Sequence[str]) -> list[str]:
    """Delete each of ``names`` (topics this context knows, not being reassigned, not marked) at once, from what
    the context holds: per topic one fenced multi deleting its state, partition, partitions, topic and config
    znodes, all pipelined. Returns the names deleted; a topic whose tree is not what the context says (a config
    never written, a child another tool left) is not touched, and the caller falls back to the marker, which
    :func:`delete_topics` completes from a read of the tree.

    Why no marker on this path: Kafka's marker (``/admin/delete_topics``) hands a deletion from the admin to the
    controller and keeps it while it must wait; here the controller is the admin and deletes in the same step,
    so a marker would be created and deleted in that step. One round trip per burst of deletions instead of the
    marker's, the marker list's and the tree's."""
    plans: list[tuple[str, list[Op]]] = []
    for name in dict.fromkeys(names):
        topic = ctx.topics[name]
        under = paths.topic_partitions(name)
        ops: list[Op] = []
        for p, info in sorted(topic.partitions.items()):
            if info.has_state:
                ops.append(Delete(paths.partition_state(name, p)))
            ops.append(Delete(f"{under}/{p}"))
        if topic.partitions:
            ops.append(Delete(under))
        ops += (Delete(paths.topic(name)), Delete(paths.entity_config("topics", name)))
        if sum(op_size(op) for op in ops) <= MAX_MULTI_BYTES:
            plans.append((name, ops))
    deleted: list[str] = []
    for (name, _ops), result in zip(plans, writer.atomic_many([ops for _, ops in plans]), strict=True):
        if isinstance(result, OpFailed):
            continue
        _forget(ctx, name)
        deleted.append(name)
    return deleted


def _forget(ctx: ControllerContext, name: str) -> None:
    """A topic whose znodes are gone: out of the context and of the deletion queue."""
    ctx.topics.pop(name, None)
    ctx.topics_to_delete.discard(name)
    log.info("deleted topic %s", name)


def delete_topics(ctx: ControllerContext, writer: FencedWriter, session: ZkSession, names: Sequence[str]) -> list[str]:
    """Kafka's completeDeleteTopic (``deleteTopicZNode``, ``deleteTopicConfigs``, ``deleteTopicDeletions``) for
    each of ``names`` that can go now (not being reassigned; those wait for the move to finish): the deleted
    names, in order.

    The trees are read level by level for every topic at once (multiRead batches: topic and config znodes,
    partitions, each partition's children), and each topic's deletion is one fenced multi, children before
    parents, all pipelined: a constant number of round trips for a burst of deletions where reading each tree
    znode by znode took one per partition per topic. A topic whose deletion does not fit one multi is deleted in
    several, in order. The first failure (a znode another writer changed meanwhile) is raised once every other
    deletion is recorded; that topic's marker stays, so the next deletion event retries it."""
    ready = [n for n in dict.fromkeys(names) if not ((t := ctx.topics.get(n)) is not None and t.is_reassigning)]
    if not ready:
        return []
    tops = session.read_children([paths.topic(n) for n in ready] + [paths.entity_config("topics", n) for n in ready])
    present = [n for n in ready if n in ctx.topics or tops.get(paths.topic(n)) is not None]
    parts = session.read_children([paths.topic_partitions(n) for n in present]) if present else {}
    inner = [f"{paths.topic_partitions(n)}/{p}" for n in present for p in parts.get(paths.topic_partitions(n)) or ()]
    leaves = session.read_children(inner) if inner else {}
    plans: list[tuple[str, list[Op]]] = []
    for name in ready:
        ops: list[Op] = []
        if name in present:
            under = paths.topic_partitions(name)
            for p in parts.get(under) or ():
                for child in leaves.get(f"{under}/{p}") or ():
                    ops.append(Delete(f"{under}/{p}/{child}"))
                ops.append(Delete(f"{under}/{p}"))
            if parts.get(under) is not None:
                ops.append(Delete(under))
            ops.append(Delete(paths.topic(name)))
        if tops.get(paths.entity_config("topics", name)) is not None:
            ops.append(Delete(paths.entity_config("topics", name)))
        ops.append(Delete(paths.delete_topic_marker(name)))
        plans.append((name, ops))
    whole = [(name, ops) for name, ops in plans if sum(op_size(op) for op in ops) <= MAX_MULTI_BYTES]
    results = dict(zip((n for n, _ in whole), writer.atomic_many([ops for _, ops in whole]), strict=True))
    deleted: list[str] = []
    failed: OpFailed | None = None
    for name, ops in plans:
        result = results.get(name)
        if isinstance(result, OpFailed):
            failed = failed or result
            continue
        if result is None:
            writer.batched(ops)  # too big for one multi: several, each atomic, in order
        _forget(ctx, name)
        deleted.append(name)
    if failed is not None:
        raise failed
    return deleted


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
