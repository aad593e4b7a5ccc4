"""The thin layer over OR-Tools both flows share: arcs collected as numpy blocks and added in one vectorised
call (no per-arc Python call, which at millions of arcs would cost more than the solve), the soft balance
band, and group ranks for per-broker samples."""

from __future__ import annotations

import numpy as np
from ortools.graph.python import min_cost_flow

from migrate.pipeline.plan.model import IntArray


class FlowError(RuntimeError):
    """OR-Tools did not find an optimum (should not happen: the network is always feasible)."""


class Arcs:
    """Arcs collected as numpy blocks, added to OR-Tools in one vectorised call."""

    def __init__(self) -> None:
        self.blocks: list[tuple[IntArray, IntArray, IntArray, IntArray]] = []
        self.count = 0

    def add(self, tails: IntArray, heads: IntArray, caps: IntArray | int, costs: IntArray | int) -> tuple[int, int]:
        n = len(tails)
        self.blocks.append(
            (
                tails.astype(np.int32),
                np.broadcast_to(heads, (n,)).astype(np.int32),
                np.broadcast_to(np.asarray(caps, dtype=np.int64), (n,)).copy(),
                np.broadcast_to(np.asarray(costs, dtype=np.int64), (n,)).copy(),
            )
        )
        start = self.count
        self.count += n
        return start, self.count

    def solve(self, supplies: IntArray) -> IntArray:
        smcf = min_cost_flow.SimpleMinCostFlow()
        if self.blocks:
            tails, heads, caps, costs = (np.concatenate(parts) for parts in zip(*self.blocks, strict=True))
            smcf.add_arcs_with_capacity_and_unit_cost(tails, heads, caps, costs)
        nodes = np.flatnonzero(supplies).astype(np.int32)
        smcf.set_nodes_supplies(nodes, supplies[nodes].astype(np.int64))
        status = smcf.solve()
        if status != smcf.OPTIMAL:
            raise FlowError(f"min-cost flow ended with status {status}")
        return np.asarray(smcf.flows(np.arange(self.count, dtype=np.int32)), dtype=np.int64)


def band(total: int, n: int) -> tuple[int, int]:
    return total // n, -(-total // n)


def group_rank(keys: IntArray) -> IntArray:
    """For sorted ``keys``: each element's rank among the equal keys before it (0, 1, 2, ...)."""
    return np.arange(len(keys)) - np.searchsorted(keys, keys, side="left")


def _widths(n: int) -> list[int]:
    """``n`` units as tiers, nearest the band first: 32 tiers of one unit, then doubling widths."""
    out: list[int] = []
    w = 1
    while n > 0:
        take = min(w, n)
        out.append(take)
        n -= take
        if len(out) >= 32:
            w *= 2
    return out


def soft_band(lo: int, hi: int, total: int, cycle_moves: int) -> tuple[int, list[tuple[int, int]]]:
    """The cost of one move and the (capacity, cost) tiers of a broker's arcs to the sink.

    The cost of holding c units is convex in c, with three scales, lexicographically:

    1. BIG per unit above L and BIG more per unit above U: the flow first minimises how far brokers are
       outside [L, U] in total (the hard constraint, soft so that an impossible band still gives a plan);
    2. increasing costs per tier outside the band (one unit per tier near it, doubling widths further out), so
       that a shortfall or excess the band cannot avoid (racks of unequal size with RF = R, say) is spread over
       the brokers that must carry it rather than piled on one -- the closest a plan can come to the band;
    3. one per move: the fewest moves among the plans equal on 1 and 2. Inside the band scales 1 and 2 are
       flat, so a feasible band is met with the fewest moves.

    Each scale must outweigh the ones below it only over one cycle, not a whole plan: two flows differ by simple
    cycles of the residual network, and a cycle passes each broker and aggregate node at most once, so it
    makes at most ``cycle_moves`` (brokers + aggregates + 2) moves and changes two brokers' counts (through the
    sink) by one. Keeping the costs that small (instead of proportional to the number of movers) matters:
    OR-Tools' cost scaling runs one phase per factor of its cost range."""
    below = _widths(lo)
    above = _widths(total)
    k = max(len(below), len(above))
    step = cycle_moves + 1
    big = (2 * k + 2) * step
    tiers = [(w, step * (len(below) - i)) for i, w in enumerate(below)]
    if hi > lo:
        tiers.append((hi - lo, big))
    tiers += [(w, 2 * big + step * (1 + i)) for i, w in enumerate(above)]
    return 1, tiers


def add_band(arcs: Arcs, bal: IntArray, sink: int, tiers: list[tuple[int, int]]) -> None:
    heads = np.full(len(bal), sink, dtype=np.int64)
    for cap, cost in tiers:
        arcs.add(bal, heads, cap, cost)
