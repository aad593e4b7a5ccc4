"""``--max-moves-per-broker N``: a plan run in waves so that no broker takes part in more than N replica
moves at once (ours; Kafka submits a whole plan at once).

A broker takes part in a partition's move when it gains or loses that partition's replica (``adding`` or
``removing`` in KIP-455 terms). Waves are packed greedily in Kafka's partition order; moves already running
in the cluster that are not ours count against the cap too. Each wave is submitted, then waited for; the
next is packed from what is left. Nothing is kept locally: which partitions are done, running or still to
do is read from the cluster every time (:func:`classify`), so rerunning the same command after an
interruption picks up where the cluster is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from migrate.reassign.model import TP, Ongoing, sorted_tps


def participants(current: Sequence[int], target: Sequence[int]) -> frozenset[int]:
    """The brokers a move from ``current`` to ``target`` involves: those gaining or losing a replica."""
    return frozenset(set(current) ^ set(target))


def ongoing_participants(o: Ongoing) -> frozenset[int]:
    return frozenset((*o.adding, *o.removing))


@dataclass
class WaveState:
    """The plan's partitions as the cluster has them now."""

    done: list[TP] = field(default_factory=list)  # at their target, not moving
    running: list[TP] = field(default_factory=list)  # moving toward the plan's target (ours)
    pending: list[TP] = field(default_factory=list)  # still to submit
    foreign: dict[TP, Ongoing] = field(default_factory=dict)  # other moves in the cluster (not to our target)


def classify(
    plan: Mapping[TP, Sequence[int]], current: Mapping[TP, Sequence[int]], ongoing: Mapping[TP, Ongoing]
) -> WaveState:
    state = WaveState()
    for tp in sorted_tps(plan):
        target = list(plan[tp])
        o = ongoing.get(tp)
        if o is not None:
            if list(o.target) == target:
                state.running.append(tp)
            else:
                state.pending.append(tp)
                state.foreign[tp] = o
        elif list(current[tp]) == target:
            state.done.append(tp)
        else:
            state.pending.append(tp)
    for tp, o in ongoing.items():
        if tp not in plan:
            state.foreign[tp] = o
    return state


def busy_brokers(moves: Iterable[frozenset[int]]) -> dict[int, int]:
    counts: dict[int, int] = {}
    for brokers in moves:
        for b in brokers:
            counts[b] = counts.get(b, 0) + 1
    return counts


def pack(
    pending: Sequence[TP], involved: Mapping[TP, frozenset[int]], cap: int, busy: Mapping[int, int] | None = None
) -> list[TP]:
    """The next wave: partitions of ``pending`` in order, each taken when every broker it involves is still
    under ``cap`` (counting ``busy``, the moves already running)."""
    counts = dict(busy or {})
    wave: list[TP] = []
    for tp in pending:
        brokers = involved[tp]
        if all(counts.get(b, 0) < cap for b in brokers):
            wave.append(tp)
            for b in brokers:
                counts[b] = counts.get(b, 0) + 1
    return wave


def plan_waves(pending: Sequence[TP], involved: Mapping[TP, frozenset[int]], cap: int) -> list[list[TP]]:
    """Every wave, packed one after another as if each completed before the next (the schedule shown up front)."""
    left = list(pending)
    waves: list[list[TP]] = []
    while left:
        wave = pack(left, involved, cap)
        waves.append(wave)
        taken = set(wave)
        left = [tp for tp in left if tp not in taken]
    return waves
