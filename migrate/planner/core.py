"""``plan()``: one cluster's movement-minimal reassignment, from request to :class:`Plan`.

The steps: resolve the operation to targets and racks (:mod:`.request`); index the layout (:mod:`.model`);
the lower bound (:mod:`.bounds`); replicas placed by the min-cost flow (:mod:`.replicas`), retried once with
more candidates when the sampled network left a broker out of band (or, on smaller layouts, moved more than
the bound), then, on a layout of up to ``repair.REPAIR_LIMIT`` replicas still out of band, short chains of single
moves into band (:mod:`.repair`); preferred leaders balanced by reordering (:mod:`.leaders`), likewise
retried; the result checked from scratch (:mod:`.check`); Kafka's ``--generate`` counted for comparison
(:mod:`.kafka`); waves (:mod:`.waves`).

Pure: no I/O (the plan files are written by :func:`migrate.pipeline.outputs.write_plan_files`), no randomness
beyond ``seed`` (given to Kafka's proposal only), so a Spark task can be retried safely.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

import numpy as np

from migrate.planner import check, leaders, repair, replicas
from migrate.planner.bounds import bound
from migrate.planner.kafka import kafka_generate_moves
from migrate.planner.model import TP, Indexed, IntArray, Layout, Plan, PlanRequestError, index_layout, unique
from migrate.planner.request import resolve
from migrate.planner.waves import waves


def solve(ix: Indexed, lower: int) -> tuple[IntArray, list[str]]:
    """The new replica of every slot of ``ix`` (replicas placed, then preferred leaders), and notes on replicas
    that found no valid broker; ``lower`` is :func:`.bounds.bound` of ``ix``."""
    rep, notes = _place(ix, lower)
    return _leaders(ix, rep), notes


def _place(ix: Indexed, lower: int) -> tuple[IntArray, list[str]]:
    """The placement: level 0, then level 1 if level 0 is out of band, or above the bound on a layout small
    enough to retry with every replica as a candidate; the better one (by the flow's own order: distance from the
    band, its spread, then moves)."""
    notes: list[str] = []
    first = replicas.place(ix, 0)
    best = first
    best_key = (*check.band_distance(ix, first.rep), check.moves(ix, ix.rep, first.rep))
    if best_key[0] > 0 or (best_key[2] > lower and first.eligible <= replicas.LEVEL1_LIMIT):
        second = replicas.place(ix, 1)
        key = (*check.band_distance(ix, second.rep), check.moves(ix, ix.rep, second.rep))
        if key < best_key:
            best, best_key = second, key
    if best.stuck:
        notes.append(f"{len(best.stuck)} replica(s) found no valid broker and were left in place")
    rep = best.rep
    if best_key[0] > 0 and len(ix.rep) <= repair.REPAIR_LIMIT:
        rep = repair.repair(ix, rep)
    if len(ix.rep) <= repair.REPAIR_LIMIT and check.moves(ix, ix.rep, rep) > lower:
        rep = repair.restore(ix, rep)
    return rep, notes


def _leaders(ix: Indexed, rep: IntArray) -> IntArray:
    first = leaders.balance(ix, rep, 0)
    if leaders.band_distance(ix, first)[0] == 0:
        return first
    second = leaders.balance(ix, rep, 1)
    firsts = ix.off[:-1]

    def key(r: IntArray) -> tuple[int, int, int]:
        return (*leaders.band_distance(ix, r), int((r[firsts] != rep[firsts]).sum()))

    return second if key(second) < key(first) else first


def _per_broker(ix: Indexed, counts: IntArray, keys: IntArray) -> dict[int, int]:
    return {int(ix.ids[b]): int(counts[b]) for b in keys.tolist()}


def plan(
    layout: Layout,
    operation: str,
    *,
    brokers: Sequence[int] = (),
    racks: Mapping[int, str | None] | None = None,
    rack_aware: bool = True,
    max_moves_per_broker: int | None = None,
    compare_kafka: bool = True,
    seed: int = 0,
) -> Plan:
    """The movement-minimal plan for ``operation`` (rebalance, decommission, add-brokers, fix-racks) on
    ``layout``; :class:`PlanRequestError` if the request is malformed. Constraints the layout makes impossible
    are listed in ``violations``, never raised."""
    start = time.perf_counter()
    if max_moves_per_broker is not None and max_moves_per_broker < 1:
        raise PlanRequestError(f"max_moves_per_broker must be at least 1 (got {max_moves_per_broker})")
    request = resolve(layout, operation, brokers, racks, rack_aware)
    ix = index_layout(layout.assignment, request.targets, request.racks, request.rack_aware)
    lower = bound(ix)
    warnings = list(request.warnings)
    rep, notes = solve(ix, lower)
    warnings += notes

    firsts = ix.off[:-1]
    changed_slots = np.flatnonzero(rep != ix.rep)
    changed_parts = unique(ix.part[changed_slots]).tolist()
    ids = ix.ids
    changed: dict[TP, tuple[int, ...]] = {}
    current: dict[TP, tuple[int, ...]] = {}
    for p in changed_parts:
        tp = ix.tps[p]
        changed[tp] = tuple(int(b) for b in ids[rep[ix.off[p] : ix.off[p + 1]]])
        current[tp] = tuple(layout.assignment[tp])
    assignment = dict(layout.assignment)
    assignment.update(changed)
    keys = np.flatnonzero(ix.target | (ix.counts() > 0))
    kafka_moves = None
    if compare_kafka:
        kafka_moves, refusal = kafka_generate_moves(
            layout.assignment, request.targets, request.racks, request.rack_aware, seed
        )
        if refusal is not None:
            warnings.append(f"Kafka's --generate would refuse this: {refusal}")
    return Plan(
        operation=request.operation,
        brokers=request.brokers,
        targets=request.targets,
        racks=request.racks,
        rack_aware=request.rack_aware,
        assignment=assignment,
        changed=changed,
        moves=check.moves(ix, ix.rep, rep),
        lower_bound=lower,
        kafka_generate_moves=kafka_moves,
        leader_changes=int((rep[firsts] != ix.rep[firsts]).sum()),
        waves=waves(layout.assignment, changed, max_moves_per_broker),
        before=_per_broker(ix, ix.counts(), keys),
        after=_per_broker(ix, ix.counts(rep), keys),
        leaders_before=_per_broker(ix, ix.leader_counts(), keys),
        leaders_after=_per_broker(ix, ix.leader_counts(rep), keys),
        violations=check.violations(ix, rep),
        warnings=warnings,
        seconds=time.perf_counter() - start,
        current=current,
    )
