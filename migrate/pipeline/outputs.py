"""Writing the pipeline's files atomically: plan files in Kafka's reassignment JSON, and anything else.

Each file is written by :func:`migrate.atomic.write_atomic` (a temporary name, then a rename), so an interrupted
run never leaves a half-written plan that ``reassign --execute`` would accept.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from migrate import atomic
from migrate.planner.model import Plan
from migrate.reassign.plan_files import format_assignment

TP = tuple[str, int]


def write_atomic(path: str | Path, text: str | bytes) -> None:
    """A pipeline output: shared with whoever is told to read it (mode from the umask), its directory made."""
    atomic.write_atomic(path, text, parents=True)


def write_plan(
    path: str, changed: Mapping[TP, Sequence[int]], current: Mapping[TP, Sequence[int]], waves: Sequence[Sequence[TP]]
) -> list[str]:
    """``path``: the whole plan (what ``reassign --execute`` and Kafka's tool take); ``<stem>-rollback.json``: the
    current replicas of the same partitions (Kafka prints this as "Current partition replica assignment" to
    save for rollback); with waves, ``<stem>-wave-NNN.json`` each, to submit one after another."""
    stem = path[: -len(".json")] if path.endswith(".json") else path
    written = [path]
    write_atomic(path, format_assignment(changed) + "\n")
    for i, wave in enumerate(waves, start=1):
        name = f"{stem}-wave-{i:03d}.json"
        write_atomic(name, format_assignment({tp: changed[tp] for tp in wave}) + "\n")
        written.append(name)
    rollback = f"{stem}-rollback.json"
    write_atomic(rollback, format_assignment({tp: current[tp] for tp in changed}) + "\n")
    return [*written, rollback]


def write_plan_files(plan: Plan, path: str) -> list[str]:
    """Write a :class:`~migrate.planner.model.Plan` (``path``), its waves and its rollback file with
    :func:`write_plan`; return the paths written. Each file goes to a temporary file in the same directory and is
    renamed, so a reader never sees half a plan."""
    return write_plan(path, plan.changed, plan.current, plan.waves)
