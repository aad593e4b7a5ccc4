"""Waves: a plan's changed partitions packed so that no broker takes part in more than a cap of moves at once,
with the packer ``reassign --execute`` uses (:mod:`migrate.reassign.waves`), so a plan's waves are the ones the
tool would run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from migrate.planner.model import TP
from migrate.reassign.model import sorted_tps
from migrate.reassign.waves import participants, plan_waves


def waves(current: Mapping[TP, Sequence[int]], changed: Mapping[TP, Sequence[int]], cap: int | None) -> list[list[TP]]:
    """Changed partitions packed so no broker takes part in more than ``cap`` moves per wave ([] without a cap)."""
    if cap is None or not changed:
        return []
    pending = sorted_tps(changed)
    involved = {tp: participants(current[tp], changed[tp]) for tp in pending}
    return plan_waves(pending, involved, cap)
