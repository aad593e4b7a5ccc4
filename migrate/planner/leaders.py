"""Preferred leaders balanced by reordering replica lists only: a second, smaller min-cost flow.

Changing which replica is first moves no data, so it is not a move; it does change which broker leads after
the next preferred election, so the plan changes as few first replicas as it can. Each candidate partition
sends one unit to one of its replicas' brokers (cost 0 for the broker already first, 1 for any other); every
other partition's unit stays with its first replica. Brokers drain through the same soft band as replicas,
[floor(P/N), ceil(P/N)] at costs 0 / BIG / 2*BIG, so the flow balances first and reorders least second. Unlike
replicas' band this one is cluster-wide even when racks are unequal: any rack can be given a replica of any
partition to lead, and every rack's reachable replica average is at least P/N (:mod:`.reach`). The lists the
placement chose can still rule it out (brokers that each hold one partition must lead it, leaving nothing to a
broker holding only those): balancing would then cost moves, which come first, so the brokers outside the band
are reported (:mod:`.check`). The chosen broker moves to the front; the others keep their order.

Candidates: partitions led by brokers above floor(P/N), ``min(n, 3*(n - floor) + 16)`` per broker by the same
stable hash as replicas; if a broker stays out of the band, once more with every partition.
"""

from __future__ import annotations

import numpy as np

from migrate.planner.check import distance
from migrate.planner.flow import Arcs, add_bands, band, broker_bands, group_rank
from migrate.planner.model import Indexed, IntArray, mix64


def _candidates(ix: Indexed, rep: IntArray, lo: int, level: int) -> IntArray:
    lead = rep[ix.off[:-1]]
    led = np.flatnonzero(ix.target[lead])
    if level > 0:
        return led
    counts = np.bincount(lead[led], minlength=len(ix.ids))
    quota = np.where(counts > lo, np.minimum(counts, 3 * (counts - lo) + 16), 0)
    h = mix64(ix.partition_hash[led] ^ np.uint64(0x5BD1E995))
    order = np.lexsort((h, lead[led]))
    by = lead[led][order]
    return np.sort(led[order[group_rank(by) < quota[by]]])


def band_distance(ix: Indexed, rep: IntArray) -> tuple[int, int]:
    """How far the targets' preferred-leader counts are outside [floor(P/N), ceil(P/N)] (total, squares)."""
    lo, hi = band(ix.n_partitions, int(ix.target.sum()))
    return distance(ix.leader_counts(rep)[ix.target], lo, hi)


def balance(ix: Indexed, rep: IntArray, level: int = 0) -> IntArray:
    """``rep`` with replica lists reordered so every target leads within the band where the lists allow."""
    targets = np.flatnonzero(ix.target)
    n = len(targets)
    n_p = ix.n_partitions
    if n_p == 0:
        return rep.copy()
    tpos = np.full(len(ix.ids), -1, dtype=np.int64)
    tpos[targets] = np.arange(n)
    lo, hi = band(n_p, n)
    cand = _candidates(ix, rep, lo, level)
    if len(cand) == 0:
        return rep.copy()
    rf = ix.rf[cand]
    slot = np.repeat(ix.off[cand], rf) + group_rank(np.repeat(np.arange(len(cand)), rf))
    owner = np.repeat(np.arange(len(cand)), rf)
    b = rep[slot]
    ok = ix.target[b]
    slot, owner, b = slot[ok], owner[ok], b[ok]
    sink, bal0, cand0 = 0, 1, 1 + n
    arcs = Arcs()
    prefer = None if ix.lead_prefer is None else ix.lead_prefer[targets]
    bands = broker_bands(np.full(n, lo, dtype=np.int64), np.full(n, hi, dtype=np.int64), n_p, n + 2, prefer)
    move = bands.move
    add_bands(arcs, bal0 + np.arange(n), sink, bands)
    c_lo, c_hi = arcs.add(cand0 + owner, bal0 + tpos[b], 1, move * (slot != ix.off[cand][owner]).astype(np.int64))
    supplies = np.zeros(cand0 + len(cand), dtype=np.int64)
    lead = rep[ix.off[:-1]]
    fixed = np.ones(n_p, dtype=np.bool_)
    fixed[cand] = False
    fixed &= ix.target[lead]
    supplies[bal0 + tpos[targets]] = np.bincount(lead[fixed], minlength=len(ix.ids))[targets]
    supplies[cand0:] = 1
    supplies[sink] = -int(supplies[1:].sum())
    flows = arcs.solve(supplies)
    chosen = slot[np.flatnonzero(flows[c_lo:c_hi])]
    out = rep.copy()
    firsts = ix.off[ix.part[chosen]]
    for s, f in zip(chosen.tolist(), firsts.tolist(), strict=True):
        if s != f:
            out[f + 1 : s + 1] = rep[f:s]
            out[f] = rep[s]
    return out
