"""Waves and plan files: the only I/O of the package, in :func:`write_plan_files`.

A plan file is Kafka's reassignment JSON (``migrate.reassign.plan_files.format_assignment``), so both Kafka's
``kafka-reassign-partitions --execute`` and ours take it. With a per-broker cap the waves go beside it as
``<stem>-wave-001.json`` ...; the rollback file ``<stem>-rollback.json`` holds the current replicas of the
changed partitions (what Kafka prints as "Current partition replica assignment"). Each file is written to a
temporary file in the same directory and renamed, so a reader never sees half a plan.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from migrate.pipeline.outputs import write_plan
from migrate.pipeline.plan.model import TP, Plan
from migrate.reassign.model import sorted_tps
from migrate.reassign.waves import participants, plan_waves


def waves(current: Mapping[TP, Sequence[int]], changed: Mapping[TP, Sequence[int]], cap: int | None) -> list[list[TP]]:
    """Changed partitions packed so no broker takes part in more than ``cap`` moves per wave ([] without a cap)."""
    if cap is None or not changed:
        return []
    pending = sorted_tps(changed)
    involved = {tp: participants(current[tp], changed[tp]) for tp in pending}
    return plan_waves(pending, involved, cap)


def write_plan_files(plan: Plan, path: str) -> list[str]:
    """Write the plan (``path``), its waves and its rollback file; return the paths written. The same writer
    the Spark job's driver uses (:func:`migrate.pipeline.outputs.write_plan`), so both give the same files."""
    return write_plan(path, plan.changed, plan.current, plan.waves)
