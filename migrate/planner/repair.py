"""Brokers brought into their bands after the flow (:mod:`.replicas`), by short chains of single moves.

The flow's network restricts where a replica may go, which can leave a broker just outside its band although
the layout allows it; :func:`repair` closes that gap by search over the brokers, so it runs only on small
layouts (:data:`REPAIR_LIMIT`).
"""

from __future__ import annotations

import numpy as np

from migrate.planner.model import Indexed, IntArray

#: Replicas up to which :func:`repair` runs on a plan left outside its band (its search is quadratic in the
#: brokers and linear in the replicas; ``--generate``'s topics are far below it).
REPAIR_LIMIT = 20_000


def repair(ix: Indexed, rep: IntArray) -> IntArray:
    """``rep`` with brokers brought into their bands where the flow's network left one outside, by shortest
    chains of single moves: a broker above its band gives a replica to a broker that gives one on ... to a broker
    with room (below its band first), or a broker below takes one at the end of a chain from a broker that can
    spare one; brokers inside the chain give one and take one. Every move puts a replica on a broker not holding
    the partition and keeps the rack rule (the partition still on min(RF, R) racks), a follower first. Moves
    cost one each, but the band comes first in the planner's order (:func:`migrate.planner.flow.soft_bands`).

    The network restricts where a replica may go (anchors stay in their rack, movers avoid groups holding their
    partition), which with RF above the number of racks can leave a broker one or two outside its band although
    the layout allows it; rare, so plain loops over the brokers outside are enough."""
    out = rep.copy()
    lo, hi = ix.band
    counts = np.bincount(out, minlength=len(ix.ids))
    targets = np.flatnonzero(ix.target).tolist()
    n_racks = len(ix.racks) if ix.aware else 0

    def valid(slot: int, b: int) -> bool:
        """May the replica in ``slot`` go to ``b``?"""
        p = int(ix.part[slot])
        members = out[ix.off[p] : ix.off[p + 1]]
        if b in members:
            return False
        if n_racks:
            after = {int(ix.rack[m]) for m in members if m != out[slot]} | {int(ix.rack[b])}
            return len(after) >= min(len(members), n_racks)
        return True

    def movable(a: int, b: int) -> int | None:
        """A slot of ``a``'s that may go to ``b`` (followers first), or None."""
        slots = np.flatnonzero(out == a)
        for slot in slots[np.argsort(slots == ix.off[ix.part[slots]], kind="stable")].tolist():
            if valid(slot, b):
                return int(slot)
        return None

    def chain(sources: list[int], sinks: set[int]) -> list[tuple[int, int, int]] | None:
        """Breadth first from ``sources`` to a broker in ``sinks``: the moves (slot, from, to) of the path."""
        parent: dict[int, tuple[int, int] | None] = dict.fromkeys(sources)
        frontier = list(sources)
        while frontier:
            nxt: list[int] = []
            for u in frontier:
                for v in targets:
                    if v in parent:
                        continue
                    slot = movable(u, v)
                    if slot is None:
                        continue
                    parent[v] = (u, slot)
                    if v in sinks:
                        path: list[tuple[int, int, int]] = []
                        w = v
                        while parent[w] is not None:
                            prev, sl = parent[w]  # type: ignore[misc]
                            path.append((sl, prev, w))
                            w = prev
                        return path[::-1]
                    nxt.append(v)
            frontier = nxt
        return None

    def outside(b: int) -> int:
        return max(0, int(counts[b] - hi[b]), int(lo[b] - counts[b]))

    for _ in range(sum(outside(b) for b in targets)):
        over = sorted((b for b in targets if counts[b] > hi[b]), key=lambda b: (-outside(b), b))
        under = sorted((b for b in targets if counts[b] < lo[b]), key=lambda b: (-outside(b), b))
        path = None
        if over:
            room = {b for b in targets if counts[b] < hi[b]}
            path = chain(over[:1], {b for b in room if counts[b] < lo[b]} or room)
        if path is None and under:
            spare = [a for a in targets if counts[a] > lo[a]]
            sinks = set(under[:1])
            path = chain(sorted(spare, key=lambda a: (counts[a] <= hi[a], a)), sinks)
        if path is None:
            break
        for slot, a, b in path:  # each move re-checked: a path may pass one partition twice
            if out[slot] != a or not valid(slot, b):
                break
            out[slot] = b
            counts[a] -= 1
            counts[b] += 1
    return out


def restore(ix: Indexed, rep: IntArray) -> IntArray:
    """``rep`` with moves undone where that keeps every constraint: a replica moved onto broker n in place of one
    of its partition's former holders o (a target that lost it) goes back to o when o is below its band's top, n
    above its bottom, and the partition still spans min(RF, R) racks. Each undo saves one move and changes two
    counts within their bands.

    With RF above the number of racks the flow fixes which replica of a covered rack anchors it (see
    :mod:`.replicas`), which can cost a move that another choice would not (e.g. RF 4 over racks of 3, 2 and 1
    brokers: 7 moves where 6 do); Kafka's own ``--generate`` can then need fewer. Plain loops, on small layouts
    only (:data:`REPAIR_LIMIT`)."""
    out = rep.copy()
    lo, hi = ix.band
    counts = np.bincount(out, minlength=len(ix.ids))
    n_racks = len(ix.racks) if ix.aware else 0
    for p in range(ix.n_partitions):
        start, end = int(ix.off[p]), int(ix.off[p + 1])
        before = [int(b) for b in ix.rep[start:end]]
        for slot in range(start, end):
            n = int(out[slot])
            if n in before:
                continue
            members = [int(b) for b in out[start:end]]
            for o in before:
                if o in members or not ix.target[o] or counts[o] >= hi[o] or counts[n] <= lo[n]:
                    continue
                if n_racks:
                    racks = {int(ix.rack[m]) for m in members if m != n} | {int(ix.rack[o])}
                    if len(racks) < min(len(members), n_racks):
                        continue
                out[slot] = o
                counts[n] -= 1
                counts[o] += 1
                break
    return out
