"""The thin layer over OR-Tools both flows share: arcs collected as numpy blocks and added in one vectorised
call (no per-arc Python call, which at millions of arcs would cost more than the solve), the soft balance
band, and group ranks for per-broker samples."""

from __future__ import annotations

from dataclasses import dataclass

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
    """:func:`soft_bands` for one band shared by every broker."""
    move, tiers = soft_bands([(lo, hi)], total, cycle_moves)
    return move, tiers[0]


def soft_bands(bands: list[tuple[int, int]], total: int, cycle_moves: int) -> tuple[int, list[list[tuple[int, int]]]]:
    """The cost of one move and, per band [lo, hi] in ``bands``, the (capacity, cost) tiers of the arcs to the
    sink of a broker held to it (brokers of different racks may be held to different bands, :mod:`.reach`).

    The cost of holding c units is convex in c, with three scales, lexicographically:

    1. BIG per unit above L and BIG more per unit above U: the flow first minimises how far brokers are
       outside [L, U] in total (the hard constraint, soft so that an impossible band still gives a plan);
    2. increasing costs per tier outside the band (one unit per tier near it, doubling widths further out), so
       that a shortfall or excess the band cannot avoid is spread over the brokers that must carry it rather
       than piled on one -- the closest a plan can come to the band;
    3. one per move: the fewest moves among the plans equal on 1 and 2. Inside the band scales 1 and 2 are
       flat, so a feasible band is met with the fewest moves.

    BIG is common to every band, so a unit outside one broker's band costs the same as outside another's.
    Each scale must outweigh the ones below it only over one cycle, not a whole plan: two flows differ by simple
    cycles of the residual network, and a cycle passes each broker and aggregate node at most once, so it
    makes at most ``cycle_moves`` (brokers + aggregates + 2) moves and changes two brokers' counts (through the
    sink) by one. Keeping the costs that small (instead of proportional to the number of movers) matters:
    OR-Tools' cost scaling runs one phase per factor of its cost range."""
    above = _widths(total)
    belows = [_widths(lo) for lo, _ in bands]
    k = max([len(above), *map(len, belows)])
    step = cycle_moves + 1
    big = (2 * k + 2) * step
    out: list[list[tuple[int, int]]] = []
    for (lo, hi), below in zip(bands, belows, strict=True):
        tiers = [(w, step * (len(below) - i)) for i, w in enumerate(below)]
        if hi > lo:
            tiers.append((hi - lo, big))
        tiers += [(w, 2 * big + step * (1 + i)) for i, w in enumerate(above)]
        out.append(tiers)
    return 1, out


@dataclass(frozen=True)
class Bands:
    """Brokers' sink tiers when their bands differ: ``tiers[group[i]]`` for the i-th broker."""

    move: int
    group: IntArray
    tiers: list[list[tuple[int, int]]]

    @property
    def top(self) -> int:
        """The largest tier cost."""
        return max(cost for tiers in self.tiers for _, cost in tiers)


def broker_bands(lo: IntArray, hi: IntArray, total: int, cycle_moves: int) -> Bands:
    """:func:`soft_bands` for brokers held to [lo[i], hi[i]] each, grouped by band."""
    distinct, group = np.unique(np.stack([lo, hi], axis=1), axis=0, return_inverse=True)
    move, tiers = soft_bands([(int(a), int(b)) for a, b in distinct.tolist()], total, cycle_moves)
    return Bands(move, group.reshape(-1).astype(np.int64), tiers)


def add_bands(arcs: Arcs, bal: IntArray, sink: int, bands: Bands) -> None:
    for g, tiers in enumerate(bands.tiers):
        add_band(arcs, bal[bands.group == g], sink, tiers)


def add_band(arcs: Arcs, bal: IntArray, sink: int, tiers: list[tuple[int, int]]) -> None:
    heads = np.full(len(bal), sink, dtype=np.int64)
    for cap, cost in tiers:
        arcs.add(bal, heads, cap, cost)
