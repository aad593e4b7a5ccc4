"""The thin layer over OR-Tools both flows share: arcs collected as numpy blocks and added in one vectorised
call (no per-arc Python call, which at millions of arcs would cost more than the solve), the soft balance
band, and group ranks for per-broker samples."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from ortools.graph.python import min_cost_flow

from migrate.planner.model import IntArray


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


def soft_bands(
    bands: list[tuple[int, int]], total: int, cycle_moves: int, prefer: list[int] | None = None
) -> tuple[int, list[list[tuple[int, int]]]]:
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
    OR-Tools' cost scaling runs one phase per factor of its cost range.

    ``prefer`` (per band, in ``0..W-1``) adds a fourth scale: which brokers take the units between L and U when
    the band leaves a choice, lower first. Every other cost is multiplied by W and the preference added to the
    in-band tier; a cycle changes two brokers' in-band units by one each, so it shifts the preference by less
    than W, less than one move. The per-topic scope uses it to hand each topic's remainders to the brokers
    holding fewest over the topics placed before (as Kafka's random start spreads them)."""
    above = _widths(total)
    belows = [_widths(lo) for lo, _ in bands]
    k = max([len(above), *map(len, belows)])
    prefs = prefer if prefer is not None else [0] * len(bands)
    scale = max(prefs, default=0) + 1
    step = (cycle_moves + 1) * scale
    big = (2 * k + 2) * step
    out: list[list[tuple[int, int]]] = []
    for (lo, hi), below, pref in zip(bands, belows, prefs, strict=True):
        tiers = [(w, step * (len(below) - i)) for i, w in enumerate(below)]
        if hi > lo:
            tiers.append((hi - lo, big + pref))
        tiers += [(w, 2 * big + step * (1 + i)) for i, w in enumerate(above)]
        out.append(tiers)
    return scale, out


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


def broker_bands(lo: IntArray, hi: IntArray, total: int, cycle_moves: int, prefer: IntArray | None = None) -> Bands:
    """:func:`soft_bands` for brokers held to [lo[i], hi[i]] each (preferring low ``prefer[i]`` for the units
    inside the band), grouped by band."""
    pref = np.zeros(len(lo), dtype=np.int64) if prefer is None else prefer
    distinct, group = np.unique(np.stack([lo, hi, pref], axis=1), axis=0, return_inverse=True)
    move, tiers = soft_bands(
        [(int(a), int(b)) for a, b, _ in distinct.tolist()],
        total,
        cycle_moves,
        None if prefer is None else [int(c) for _, _, c in distinct.tolist()],
    )
    return Bands(move, group.reshape(-1).astype(np.int64), tiers)


def add_bands(arcs: Arcs, bal: IntArray, sink: int, bands: Bands) -> None:
    """Every broker's tiers to the sink, as one block of arcs (a tier per broker group would be one
    :meth:`Arcs.add` call each: thousands per small network)."""
    if not len(bal):
        return
    sizes = np.asarray([len(t) for t in bands.tiers], dtype=np.int64)
    caps = np.asarray([c for tiers in bands.tiers for c, _ in tiers], dtype=np.int64)
    costs = np.asarray([c for tiers in bands.tiers for _, c in tiers], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    per = sizes[bands.group]  # tiers of each broker
    owner = np.repeat(np.arange(len(bal)), per)
    pick = np.repeat(starts[bands.group], per) + group_rank(owner)
    arcs.add(bal[owner], np.full(len(owner), sink, dtype=np.int64), caps[pick], costs[pick])
