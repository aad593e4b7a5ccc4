"""The baseline a plan is shown against: what Kafka's ``kafka-reassign-partitions --generate`` would propose
for the same targets (``migrate.reassign.planner.kafka_generate``, AdminUtils per topic with a seeded random
start), counted in the same moves. Kafka re-places every topic from scratch, so it moves nearly every replica;
the figure tells an operator what the movement-minimal plan saves."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from migrate.pipeline.plan.model import TP
from migrate.reassign.planner import PlanError, count_moves, kafka_generate
from zkmodel.placement import BrokerMetadata


def kafka_generate_moves(
    assignment: Mapping[TP, Sequence[int]],
    targets: Sequence[int],
    racks: Mapping[int, str | None],
    rack_aware: bool,
    seed: int,
) -> tuple[int | None, str | None]:
    """Moves of Kafka's proposal, or (None, Kafka's message) when Kafka would refuse (``PlanError``)."""
    metas = [BrokerMetadata(b, racks.get(b) if rack_aware else None) for b in targets]
    try:
        proposed = kafka_generate(assignment, metas, rack_aware, rng=random.Random(seed))
    except PlanError as exc:
        return None, exc.message
    return count_moves(assignment, proposed), None
