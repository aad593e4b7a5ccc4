"""The baseline a plan is shown against: what Kafka's ``kafka-reassign-partitions --generate`` would propose
for the same targets (:func:`zkmodel.placement.calculate_assignment`, AdminUtils per topic with a seeded random
start), counted in the same moves. Kafka re-places every topic from scratch, so it moves nearly every replica;
the figure tells an operator what the movement-minimal plan saves."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from migrate.planner.model import TP, count_moves
from zkmodel.placement import BrokerMetadata, PlacementError, calculate_assignment


def kafka_generate_moves(
    assignment: Mapping[TP, Sequence[int]],
    targets: Sequence[int],
    racks: Mapping[int, str | None],
    rack_aware: bool,
    seed: int,
) -> tuple[int | None, str | None]:
    """Moves of Kafka's proposal, or (None, Kafka's message) when Kafka would refuse."""
    metas = [BrokerMetadata(b, racks.get(b) if rack_aware else None) for b in targets]
    try:
        proposed = calculate_assignment(assignment, metas, rack_aware, rng=random.Random(seed))
    except PlacementError as exc:
        return None, exc.message
    return count_moves(assignment, proposed), None
