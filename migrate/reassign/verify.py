"""``--verify``: Kafka 3.9's verifyAssignment, and the throttle clearing that ``--verify`` and ``--cancel``
share (clearAllThrottles).

Kafka exits 0 whether or not the moves are done; scripts parse the text. ``--output json`` gives them a
``"done"`` member instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from migrate.reassign import throttles as T
from migrate.reassign.admin import AdminError, ReassignAdmin
from migrate.reassign.inputs import Inputs
from migrate.reassign.logdirs import move_states, states_doc, states_text
from migrate.reassign.model import TP, Ongoing, joined, sorted_tps, tp_text
from migrate.reassign.options import Options
from migrate.reassign.output import Output, ToolError
from migrate.reassign.plan_files import targets_and_log_dirs
from zkmodel.jvmorder import java_hashmap_order


@dataclass(frozen=True)
class PartitionState:
    """Kafka's PartitionReassignmentState: replicas now, the plan's target, and whether no move is running."""

    current: tuple[int, ...]
    target: tuple[int, ...]
    done: bool


def partition_states(
    admin: ReassignAdmin, targets: Sequence[tuple[TP, Sequence[int]]]
) -> tuple[dict[TP, PartitionState], bool]:
    """findPartitionReassignmentStates: each partition's state, and whether anything at all is moving in the
    cluster (not only the plan's partitions)."""
    ongoing: Mapping[TP, Ongoing] = admin.list_reassignments()
    states: dict[TP, PartitionState] = {}
    missing = [(tp, t) for tp, t in targets if tp not in ongoing]
    described = _describe(admin, {tp[0] for tp, _t in missing})
    for tp, target in targets:
        if tp in ongoing:
            states[tp] = PartitionState(ongoing[tp].replicas, tuple(target), False)
            continue
        partitions = described.get(tp[0])
        # An unknown topic (UnknownTopicOrPartitionException), or Kafka's own test "size < partition":
        # an empty replica set.
        if partitions is None or len(partitions) < tp[1]:
            states[tp] = PartitionState((), tuple(target), True)
        elif tp[1] == len(partitions):  # ... so partition == size fails as List.get does
            raise ToolError(f"Index {tp[1]} out of bounds for length {len(partitions)}")
        else:
            states[tp] = PartitionState(tuple(partitions[tp[1]]), tuple(target), True)
    return states, bool(ongoing)


def _describe(admin: ReassignAdmin, topics: set[str]) -> dict[str, list[list[int]]]:
    """Each known topic's replica lists by partition index; unknown topics are left out."""
    try:
        found = admin.topic_assignments(topics)
    except AdminError as exc:  # one topic is unknown: look them up one by one to tell which
        if "UnknownTopicOrPartitionException" not in exc.message or len(topics) == 1:
            if "UnknownTopicOrPartitionException" in exc.message:
                return {}
            raise
        out: dict[str, list[list[int]]] = {}
        for topic in topics:
            out.update(_describe(admin, {topic}))
        return out
    by_topic: dict[str, dict[int, list[int]]] = {}
    for (topic, p), replicas in found.items():
        by_topic.setdefault(topic, {})[p] = replicas
    return {t: [parts[p] for p in sorted(parts)] for t, parts in by_topic.items()}


def states_text_lines(states: Mapping[TP, PartitionState]) -> list[str]:
    lines = ["Status of partition reassignment:"]
    for tp in sorted_tps(states):
        s = states[tp]
        if not s.done:
            lines.append(f"Reassignment of partition {tp_text(tp)} is still in progress.")
        elif s.current == s.target:
            lines.append(f"Reassignment of partition {tp_text(tp)} is completed.")
        else:
            lines.append(
                f"There is no active reassignment of partition {tp_text(tp)}, but replica set is "
                f"{joined(s.current)} rather than {joined(s.target)}."
            )
    return lines


def state_name(s: PartitionState) -> str:
    return "in_progress" if not s.done else "completed" if s.current == s.target else "different"


def clear_all_throttles(
    admin: ReassignAdmin, out: Output, targets: Sequence[tuple[TP, Sequence[int]]], *, if_idle: bool = False
) -> dict[str, list[object]] | None:
    """clearAllThrottles: delete the three broker throttles on every broker of the cluster and of the plan,
    and the two topic throttles on the plan's topics. ``if_idle``: only when nothing at all is moving
    (how ``--verify`` decides), else None."""
    if if_idle and admin.list_reassignments():
        return None
    brokers = java_hashmap_order([b.id for b in admin.brokers()] + [b for _tp, rs in targets for b in rs])
    out.text(f"Clearing broker-level throttles on broker{'' if len(brokers) == 1 else 's'} {joined(brokers)}")
    admin.alter_configs({}, {b: dict.fromkeys(T.BROKER_THROTTLES) for b in brokers})
    topics = java_hashmap_order([tp[0] for tp, _rs in targets])
    out.text(f"Clearing topic-level throttles on topic{'' if len(topics) == 1 else 's'} {','.join(topics)}")
    admin.alter_configs({t: dict.fromkeys(T.TOPIC_THROTTLES) for t in topics}, {})
    return {"brokers": list(brokers), "topics": list(topics)}


def run(admin: ReassignAdmin, opts: Options, out: Output, inputs: Inputs) -> None:
    targets, log_dirs = targets_and_log_dirs(inputs.planned)
    states, anything_moving = partition_states(admin, targets)
    for line in states_text_lines(states):
        out.text(line)
    moves = move_states(admin, log_dirs)
    out.text(states_text(moves))
    moves_running = any(not s.done for s in moves.values())
    out.put(
        "partitions",
        [
            {
                "topic": tp[0],
                "partition": tp[1],
                "state": state_name(states[tp]),
                "current": list(states[tp].current),
                "target": list(states[tp].target),
            }
            for tp in sorted_tps(states)
        ],
    )
    out.put("log_dir_moves", states_doc(moves))
    out.put("done", all(s.done and s.current == s.target for s in states.values()) and not moves_running)
    out.put("cluster_reassignments_active", anything_moving)
    cleared = None
    if not anything_moving and not moves_running and not opts.preserve_throttles:
        cleared = clear_all_throttles(admin, out, targets)
    out.put("throttles_cleared", cleared)
