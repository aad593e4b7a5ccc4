"""``--zookeeper``: the KIP-179-era path of Kafka 2.6-2.8, straight to ZooKeeper.

Kept for runbooks written before the admin API: ``--generate``, ``--execute`` and ``--verify`` read and
write Kafka's znodes as that tool did (KafkaZkClient / AdminZkClient): the topic and broker znodes, the
``/admin/reassign_partitions`` request (created only if absent: the controller reacts to its creation), and
throttles as entity configs with their change notifications. The texts are 2.8's: "Warning: --zookeeper is
deprecated, ..." first, and ``--verify`` says "is complete." where 3.x says "is completed.".
Writes go through the stores, like every other writer of ours. The plan file is read and checked before the
session is opened (:func:`check_inputs`), unlike 2.8, which connected first.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence

from controller.store.entity_configs import alter_entity, read_entities
from controller.store.legacy_reassign import create_legacy_reassignment, legacy_reassignment_in_progress
from controller.zk.session import ZkSession
from migrate.reassign import throttles as T
from migrate.reassign.execute import CANNOT_EXECUTE, VERIFY_WARNING, execute_plan, show_current
from migrate.reassign.generate import brokers_for, propose
from migrate.reassign.inputs import Inputs
from migrate.reassign.model import TP, joined, sorted_tps, tp_text
from migrate.reassign.options import Action, Options
from migrate.reassign.output import Output, ToolError
from migrate.reassign.plan_files import ANY_LOG_DIR
from zkmodel import paths
from zkmodel.admin import PartitionReassignmentZnode, TopicPartition
from zkmodel.brokers import BrokerRegistration
from zkmodel.configs import BROKERS, TOPICS
from zkmodel.errors import ZnodeFormatError
from zkmodel.topics import TopicAssignment

DEPRECATED = "Warning: --zookeeper is deprecated, and will be removed in a future version of Kafka."
VERIFY_INCOMPLETE = (
    "Warning: because you are using the deprecated --zookeeper option, the results may be incomplete.  Use "
    "--bootstrap-server instead for more accurate results."
)
NEEDS_BOOTSTRAP = "bootstrap-server needs to be provided when replica reassignments are present."


class ZkCluster:
    """What the legacy tool reads from ZooKeeper."""

    def __init__(self, session: ZkSession) -> None:
        self.session = session

    def topic_assignments(self, topics: Sequence[str]) -> dict[TP, list[int]]:
        """KafkaZkClient.getReplicaAssignmentForTopics: unknown topics contribute nothing."""
        out: dict[TP, list[int]] = {}
        for topic in topics:
            found = self.session.get(paths.topic(topic))
            if found is None:
                continue
            try:
                assignment = TopicAssignment.decode(paths.topic(topic), found[0])
            except ZnodeFormatError as exc:
                raise ToolError(str(exc)) from None
            for p, replicas in assignment.partitions.items():
                out[(topic, p)] = list(replicas)
        return out

    def brokers(self) -> list[tuple[int, str | None]]:
        """KafkaZkClient.getAllBrokersInCluster, by id."""
        out = []
        for child in sorted(self.session.get_children(paths.BROKER_IDS) or [], key=lambda c: (len(c), c)):
            if not child.isdigit():
                continue
            found = self.session.get(paths.broker(int(child)))
            if found is None:
                continue
            try:
                rack = BrokerRegistration.decode(paths.broker(int(child)), found[0]).rack
            except ZnodeFormatError:
                rack = None
            out.append((int(child), rack))
        return sorted(out)

    def being_reassigned(self) -> set[TP]:
        """KafkaZkClient.getPartitionReassignment: the partitions in the request znode."""
        found = self.session.get(paths.REASSIGN_PARTITIONS)
        if found is None:
            return set()
        try:
            znode = PartitionReassignmentZnode.decode(paths.REASSIGN_PARTITIONS, found[0])
        except ZnodeFormatError as exc:
            raise ToolError(str(exc)) from None
        return {(tp.topic, tp.partition) for tp, _r in znode.partitions}

    def set_configs(self, entity_type: str, name: str, values: Mapping[str, str | None]) -> None:
        """AdminZkClient.change{Topic,Broker}Config of the fetched config with ``values`` put (None removes);
        nothing is written when nothing changes (Kafka's clear writes only when it removed something)."""
        path = paths.entity_config(entity_type, name)
        current = read_entities(self.session, [path])[path]
        wanted = {**current, **{k: v for k, v in values.items() if v is not None}}
        for k, v in values.items():
            if v is None:
                wanted.pop(k, None)
        if wanted == current:
            return

        def compute(props: dict[str, str]) -> dict[str, str]:
            props.update({k: v for k, v in values.items() if v is not None})
            for k, v in values.items():
                if v is None:
                    props.pop(k, None)
            return props

        alter_entity(self.session, entity_type, name, compute, controller_wait_s=30.0)


def warn_deprecated(opts: Options, out: Output) -> None:
    """The first line of every --zookeeper run, before anything is read (stderr in JSON mode)."""
    if opts.output == "json":
        print(DEPRECATED, file=sys.stderr)
    else:
        out.text(DEPRECATED)


def check_inputs(opts: Options, inputs: Inputs) -> None:
    """What the legacy path cannot do, known from the plan file alone: log-dir moves need the admin API."""
    moves_dirs = any(d != ANY_LOG_DIR for p in inputs.planned for d in p.log_dirs)
    if moves_dirs and opts.action in (Action.EXECUTE, Action.VERIFY):
        raise ToolError(NEEDS_BOOTSTRAP)


def run(session: ZkSession, opts: Options, out: Output, inputs: Inputs) -> None:
    """The --zookeeper actions, after :func:`warn_deprecated` and :func:`check_inputs`."""
    zk = ZkCluster(session)
    if opts.action is Action.GENERATE:
        _generate(zk, opts, out, inputs)
    elif opts.action is Action.EXECUTE:
        _execute(zk, opts, out, inputs)
    else:
        _verify(zk, opts, out, inputs)


def _generate(zk: ZkCluster, opts: Options, out: Output, inputs: Inputs) -> None:
    assert opts.broker_list is not None
    current = zk.topic_assignments(inputs.topics)
    rack_aware = not opts.disable_rack_aware
    propose(out, current, brokers_for(zk.brokers(), opts.broker_list, rack_aware), rack_aware)


def _execute(zk: ZkCluster, opts: Options, out: Output, inputs: Inputs) -> None:
    assert opts.reassignment_json_file is not None
    targets, _log_dirs = execute_plan(inputs.planned)  # none: check_inputs refused them
    existing = zk.topic_assignments(sorted({t for t, _p in targets}))
    missing = [tp for tp in targets if tp not in existing]
    if missing:
        raise ToolError(
            "The proposed assignment contains non-existent partitions: List(" + ", ".join(map(tp_text, missing)) + ")"
        )
    known = {b for b, _r in zk.brokers()}
    unknown = list(dict.fromkeys(b for replicas in targets.values() for b in replicas if b not in known))
    if unknown:
        raise ToolError("The proposed assignment contains non-existent brokerIDs: " + joined(unknown))
    if legacy_reassignment_in_progress(zk.session):
        raise ToolError(CANNOT_EXECUTE, terse=True)
    current = {tp: existing[tp] for tp in targets}
    show_current(out, current, opts.reassignment_json_file)
    if opts.throttle >= 0:
        out.text(VERIFY_WARNING)
        moves = T.proposed_moves({}, targets, current)
        for topic, leaders in T.leader_throttles(moves).items():
            zk.set_configs(
                TOPICS, topic, {T.LEADER_REPLICAS: leaders, T.FOLLOWER_REPLICAS: T.follower_throttles(moves)[topic]}
            )
        for broker in T.reassigning_brokers(moves):
            zk.set_configs(
                BROKERS, str(broker), {T.LEADER_RATE: str(opts.throttle), T.FOLLOWER_RATE: str(opts.throttle)}
            )
        out.text(f"The inter-broker throttle limit was set to {opts.throttle} B/s")
    out.put("throttle", opts.throttle if opts.throttle >= 0 else None)
    partitions = [(TopicPartition(t, p), targets[(t, p)]) for t, p in sorted_tps(targets)]
    if not create_legacy_reassignment(zk.session, partitions):
        raise ToolError(CANNOT_EXECUTE, terse=True)  # created by someone else since the check
    names = [tp_text(tp) for tp in sorted_tps(targets)]
    out.text(f"Successfully started partition reassignment{'' if len(names) == 1 else 's'} for {','.join(names)}")
    out.put("started", names)


def _verify(zk: ZkCluster, opts: Options, out: Output, inputs: Inputs) -> None:
    out.text(VERIFY_INCOMPLETE)
    targets = {(p.topic, p.partition): list(p.replicas) for p in inputs.planned}
    moving = zk.being_reassigned()
    current = zk.topic_assignments(sorted({t for t, _p in targets}))
    lines = ["Status of partition reassignment:"]
    doc = []
    for tp in sorted_tps(targets):
        now, target = current.get(tp, []), targets[tp]
        if tp in moving:
            lines.append(f"Reassignment of partition {tp_text(tp)} is still in progress.")
            state = "in_progress"
        elif now == target:
            lines.append(f"Reassignment of partition {tp_text(tp)} is complete.")
            state = "completed"
        else:
            lines.append(
                f"There is no active reassignment of partition {tp_text(tp)}, but replica set is {joined(now)} "
                f"rather than {joined(target)}."
            )
            state = "different"
        doc.append({"topic": tp[0], "partition": tp[1], "state": state, "current": now, "target": target})
    for line in lines:
        out.text(line)
    out.put("partitions", doc)
    out.put("done", all(d["state"] == "completed" for d in doc))
    cleared = None
    if not moving and not opts.preserve_throttles:
        brokers = list(dict.fromkeys([b for b, _r in zk.brokers()] + [b for r in targets.values() for b in r]))
        out.text(f"Clearing broker-level throttles on broker{'' if len(brokers) == 1 else 's'} {joined(brokers)}")
        for b in brokers:
            zk.set_configs(BROKERS, str(b), dict.fromkeys(T.BROKER_THROTTLES))
        topics = list(dict.fromkeys(t for t, _p in sorted_tps(targets)))
        out.text(f"Clearing topic-level throttles on topic{'' if len(topics) == 1 else 's'} {','.join(topics)}")
        for t in topics:
            zk.set_configs(TOPICS, t, dict.fromkeys(T.TOPIC_THROTTLES))
        cleared = {"brokers": brokers, "topics": topics}
    out.put("throttles_cleared", cleared)
