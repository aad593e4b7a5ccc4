"""``--generate``: Kafka's console text and JSON, with a proposal that moves the minimum.

Kafka's ``--generate`` re-places every listed topic from scratch with a random start (AdminUtils), so nearly
every replica moves. Ours keeps every replica that can stay and still ends as balanced per topic as Kafka's,
computed by the same planner as the fleet pipeline's plans, per topic (:mod:`migrate.planner.generate`); the
text is Kafka's, and ``--output json`` adds how many replica moves each proposal needs on the same input (and
the lower bound), so the saving is visible.
"""

from __future__ import annotations

from migrate.planner.generate import generate
from migrate.planner.model import PlanRequestError, count_moves
from migrate.reassign.admin import ReassignAdmin
from migrate.reassign.inputs import Inputs
from migrate.reassign.options import Options
from migrate.reassign.output import Output, ToolError, assignment_doc
from migrate.reassign.plan_files import format_assignment
from zkmodel.placement import NOT_ALL_RACKS, BrokerMetadata, PlacementError, calculate_assignment


def brokers_for(
    admin_brokers: list[tuple[int, str | None]], wanted: tuple[int, ...], rack_aware: bool
) -> list[BrokerMetadata]:
    """getBrokerMetadata: the cluster's brokers that are in ``--broker-list`` (unknown ids silently dropped),
    racks kept only when rack-aware; "Not all brokers have rack information" when only some have one."""
    keep = set(wanted)
    found = [BrokerMetadata(b, rack if rack_aware else None) for b, rack in admin_brokers if b in keep]
    rackless = sum(1 for b in found if b.rack is None)
    if rack_aware and rackless not in (0, len(found)):
        raise ToolError(NOT_ALL_RACKS)
    return found


def propose(
    out: Output, current: dict[tuple[str, int], list[int]], brokers: list[BrokerMetadata], rack_aware: bool
) -> None:
    """Plan ours (and Kafka's, to count its moves), then print Kafka's two blocks. Kafka's refusals come from
    Kafka's own placement, so their text is Kafka's."""
    try:
        kafkas = calculate_assignment(current, brokers, rack_aware)
        ours = generate(current, [b.id for b in brokers], {b.id: b.rack for b in brokers}, rack_aware)
    except (PlacementError, PlanRequestError) as exc:
        raise ToolError(str(exc)) from None
    proposed = {tp: list(replicas) for tp, replicas in ours.assignment.items()}
    out.text("Current partition replica assignment")
    out.text(format_assignment(current))
    out.text()
    out.text("Proposed partition reassignment configuration")
    out.text(format_assignment(proposed))
    out.put("current", assignment_doc(current))
    out.put("proposed", assignment_doc(proposed))
    moves = {"proposed": ours.moves, "kafka_generate": count_moves(current, kafkas), "lower_bound": ours.lower_bound}
    out.put("replica_moves", moves)
    if ours.violations:
        out.put("violations", ours.violations)


def run(admin: ReassignAdmin, opts: Options, out: Output, inputs: Inputs) -> None:
    assert opts.broker_list is not None
    current = admin.topic_assignments(inputs.topics)
    rack_aware = not opts.disable_rack_aware
    brokers = brokers_for([(b.id, b.rack) for b in admin.brokers()], opts.broker_list, rack_aware)
    propose(out, current, brokers, rack_aware)
