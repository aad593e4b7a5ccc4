"""The hard constraints checked on a result, vectorised: every unmet one becomes a line of ``Plan.violations``.

The optimiser treats balance as soft (so it always returns a plan) and its decomposition has fallbacks, so the
plan is not trusted to be valid by construction: this module checks the result from scratch. Each line reads
``"<kind> <subject>: <detail>"`` with kind one of ``target``, ``duplicate``, ``rack``, ``replicas``,
``leaders`` and subject ``partition <topic>-<n>`` or ``broker <id>``, one line per partition or broker.
"""

from __future__ import annotations

import numpy as np

from migrate.planner.flow import band
from migrate.planner.model import Indexed, IntArray, unique


def violations(ix: Indexed, rep: IntArray) -> list[str]:
    out: list[str] = []
    ids = ix.ids
    tps = ix.tps
    part = ix.part
    off_target = np.flatnonzero(~ix.target[rep])
    for s in off_target.tolist():
        t, p = tps[int(part[s])]
        out.append(f"target partition {t}-{p}: replica on broker {int(ids[rep[s]])}, which is not a target")
    key = np.sort(part * len(ids) + rep)
    for k in unique(key[1:][key[1:] == key[:-1]]).tolist():
        p_, b = divmod(int(k), len(ids))
        t, p = tps[p_]
        out.append(f"duplicate partition {t}-{p}: broker {int(ids[b])} listed twice")
    n_racks = len(ix.racks)
    if ix.aware and n_racks:
        on_t = ix.target[rep]
        uk = unique(part[on_t] * n_racks + ix.rack[rep[on_t]])
        distinct = np.bincount(uk // n_racks, minlength=ix.n_partitions)
        need = np.minimum(ix.rf, n_racks)
        for p_ in np.flatnonzero(distinct < need).tolist():
            t, p = tps[p_]
            out.append(f"rack partition {t}-{p}: spans {int(distinct[p_])} rack(s), needs {int(need[p_])}")
    targets = np.flatnonzero(ix.target)
    n = len(targets)
    if n and len(rep):
        blo, bhi = ix.band  # the reachable band: a plan is not blamed for what the rack rule forbids
        counts = np.bincount(rep, minlength=len(ids))
        for b in targets[(counts[targets] < blo[targets]) | (counts[targets] > bhi[targets])].tolist():
            out.append(f"replicas broker {int(ids[b])}: {int(counts[b])} replicas, outside [{blo[b]}, {bhi[b]}]")
        lo, hi = band(ix.n_partitions, n)
        leaders = np.bincount(rep[ix.off[:-1]], minlength=len(ids))
        for b in targets[(leaders[targets] < lo) | (leaders[targets] > hi)].tolist():
            out.append(f"leaders broker {int(ids[b])}: leads {int(leaders[b])} partitions, outside [{lo}, {hi}]")
    return out


def distance(counts: IntArray, lo: IntArray | int, hi: IntArray | int) -> tuple[int, int]:
    """How far counts are outside [lo, hi]: the total, and the sum of squares (smaller when it is spread)."""
    d = np.maximum(0, lo - counts) + np.maximum(0, counts - hi)
    return int(d.sum()), int((d * d).sum())


def band_distance(ix: Indexed, rep: IntArray) -> tuple[int, int]:
    """:func:`distance` of the targets' replica counts from their reachable bands."""
    targets = np.flatnonzero(ix.target)
    lo, hi = ix.band
    return distance(np.bincount(rep, minlength=len(ix.ids))[targets], lo[targets], hi[targets])


def moves(ix: Indexed, before: IntArray, after: IntArray) -> int:
    """sum_p |after(p) \\ before(p)|: replicas placed on a broker that did not hold the partition."""
    changed = np.flatnonzero(before != after)
    if len(changed) == 0:
        return 0
    parts = unique(ix.part[changed])
    rf = ix.rf[parts]
    slots = np.repeat(ix.off[parts], rf) + (np.arange(int(rf.sum())) - np.repeat(np.cumsum(rf) - rf, rf))
    owner = np.repeat(np.arange(len(parts)), rf)
    nb = len(ix.ids)
    old = unique(owner * nb + before[slots])
    new = unique(owner * nb + after[slots])
    return int(len(new) - np.isin(new, old, assume_unique=True).sum())
