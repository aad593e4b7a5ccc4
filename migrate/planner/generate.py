"""``kafka-reassign-partitions --generate``'s question answered by the planner: the listed topics placed on the
listed brokers with the fewest moves, balanced *per topic*.

Kafka's ``--generate`` (``calculateAssignment``) places each topic on its own, so its contract is per-topic
balance: every listed broker holds the topic's replicas (and leads its partitions) within one of every other,
or within the band the rack rule allows (:mod:`.reach`). The pipeline's operations balance a whole cluster
instead. Both are the same optimisation (:func:`.core.solve`: the min-cost flow of :mod:`.replicas`, then
:mod:`.leaders`) over different scopes, so ``--generate`` runs it once per topic.

Per topic, a band usually leaves a choice (T replicas over N brokers: T mod N of them hold one more), and so
does every later topic; left to the solver, the same brokers could take the extra unit every time. Each topic is
therefore solved with a preference (:func:`.flow.soft_bands`): the brokers holding the fewest replicas (and
leading the fewest partitions) over the topics placed so far take the remainders first, at no cost in moves.
Topics go in Java's string order, ties to the lowest broker id, so the result is deterministic.

A move is one replica placed on a broker that did not hold the partition; a new replica takes the list position
of the one it replaces, so kept replicas keep their order.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from migrate.planner import check
from migrate.planner.bounds import bound
from migrate.planner.core import solve
from migrate.planner.model import TP, IntArray, PlanRequestError, index_layout
from zkmodel.java import java_string_key


@dataclass(frozen=True)
class Proposal:
    assignment: dict[TP, tuple[int, ...]]  # every partition of the listed topics
    moves: int
    lower_bound: int  # the sum of the topics' bounds (:mod:`.bounds`)
    violations: list[str]  # what a topic's layout made impossible (:mod:`.check`); [] almost always


def _ranks(counts: IntArray, ids: IntArray) -> IntArray:
    """Each broker's rank by (count, id): 0 for the fewest."""
    order = np.lexsort((ids, counts))
    ranks = np.empty(len(order), dtype=np.int64)
    ranks[order] = np.arange(len(order))
    return ranks


def generate(
    current: Mapping[TP, Sequence[int]],
    targets: Sequence[int],
    racks: Mapping[int, str | None],
    rack_aware: bool,
) -> Proposal:
    """The per-topic plan of ``current`` onto ``targets`` (rack-aware when asked and every target has a rack
    in ``racks``). :class:`PlanRequestError` for what Kafka's tool refuses: a replication factor above the
    number of targets (Kafka's text), an empty replica list, a broker listed twice in one partition."""
    ids = sorted(set(targets))
    aware = rack_aware and bool(ids) and all(racks.get(b) is not None for b in ids)
    topics: dict[str, list[TP]] = {}
    for tp, replicas in current.items():
        if len(replicas) > len(ids):
            raise PlanRequestError(f"Replication factor: {len(replicas)} larger than available brokers: {len(ids)}.")
        topics.setdefault(tp[0], []).append(tp)
    held = dict.fromkeys(ids, 0)
    led = dict.fromkeys(ids, 0)
    out: dict[TP, tuple[int, ...]] = {}
    moves = lower = 0
    violations: list[str] = []
    for topic in sorted(topics, key=java_string_key):
        ix = index_layout({tp: current[tp] for tp in topics[topic]}, ids, racks, aware)
        # Non-targets (brokers leaving) rank last: they hold nothing afterwards whatever their rank.
        b_ids = ix.ids
        far = np.iinfo(np.int64).max // 4
        held_now = np.asarray([held.get(int(b), far) for b in b_ids], dtype=np.int64)
        led_now = np.asarray([led.get(int(b), far) for b in b_ids], dtype=np.int64)
        ix = dataclasses.replace(ix, prefer=_ranks(held_now, b_ids), lead_prefer=_ranks(led_now, b_ids))
        topic_bound = bound(ix)
        lower += topic_bound
        # A topic already on the targets, within its bands and the rack rule: the flow would keep it as it is
        # (any change costs a move or a reordering, more than every preference), so skip it.
        if topic_bound == 0 and not check.violations(ix, ix.rep):
            rep = ix.rep
        else:
            rep, _notes = solve(ix, topic_bound)
            moves += check.moves(ix, ix.rep, rep)
            violations += check.violations(ix, rep)
        brokers = b_ids[rep].tolist()
        for p, tp in enumerate(ix.tps):
            replicas = tuple(brokers[ix.off[p] : ix.off[p + 1]])
            out[tp] = replicas
            for b in replicas:
                if b in held:
                    held[b] += 1
            if replicas[0] in led:
                led[replicas[0]] += 1
    return Proposal(out, moves, lower, violations)
