"""The balance band a plan is held to: the tightest one any plan meeting the rack rule can reach.

Kafka's balance goal, "every broker within [floor(T/N), ceil(T/N)]", assumes any broker may take any replica.
Rack-aware it may not: a partition of replication factor r <= R (R racks among the targets) puts at most one
replica in a rack, and one of r > R puts at least one in every rack. With RF = R every rack holds exactly one
replica of every partition, so a rack of 3 brokers carries P/3 per broker and a rack of 4 P/4, whatever the
plan: the cluster-wide band is out of reach, and a planner held to it reports "violations" it could not have
avoided while not even balancing within the racks.

**The reachable band.** Let x[p, s] be partition p's replicas in rack s. The rack rule bounds it:
``0 <= x <= 1`` when r_p <= R, ``1 <= x <= min(n_s, r_p - R + 1)`` when r_p > R (n_s brokers in rack s), and
``sum_s x[p, s] = r_p``. Within a rack any totals T_s with x[p, s] <= n_s spread over its brokers within
[floor(T_s/n_s), ceil(T_s/n_s)] (deal each partition's replicas round robin), so only the rack totals matter.
The totals a plan can reach form the base polyhedron of the submodular function

    f(S) = sum_p min(sum_{s in S} u[p, s], r_p - sum_{s not in S} l[p, s])   (the most replicas S can hold),

and among them there is one that makes the per-broker averages a_s = T_s / n_s lexicographically as even as
possible (Fujishige's lexicographically optimal base for the weights n_s; it also minimises every separable
convex cost of the averages, e.g. the sum of squares of the brokers' counts). It is found by peeling the
tightest racks: a_s = lambda_1 = min_S f(S) / n(S) on the largest minimising S, then the same on the rest with f
contracted by S. Each broker of rack s is held to [floor(a_s), ceil(a_s)]: that box contains a fractional base,
the base polyhedron intersected with an integral box is integral, so an integral plan meets every broker's band
at once. When the cluster-wide band is reachable all a_s equal T/N and this *is* Kafka's band; with RF >= R and
unequal racks it is each rack's own average.

Computing min_S f(S)/n(S): f depends on the partitions only through how many there are of each replication
factor, so each evaluation is O(distinct RFs x R). Up to :data:`EXACT_RACKS` racks every subset is tried. Beyond
that, when no partition has more replicas than there are racks, u = 1 and l = 0, so f(S) depends on |S| alone and
the best S of each size is the |S| largest racks -- still exact. Only many racks *and* RF above their number (an
RF above 12, in practice never) fall back to the cluster-wide band.

**Leaders** need no such band: a partition may be led from any rack that holds one of its replicas and every
rack can be given replicas of any partition, so leaders alone are RF-1 partitions for this computation, whose
averages are all P/N (and a_s >= P/N for replicas, so no broker's replica band keeps it from leading its share).
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]

#: Racks up to which every subset of racks is tried (2^12 subsets, each O(distinct RFs x R)).
EXACT_RACKS = 12


def _capacity(rf_counts: dict[int, int], sizes: list[int]) -> tuple[dict[int, list[int]], dict[int, list[int]]]:
    """Per replication factor, the most (u) and fewest (l) replicas of one partition each rack may hold."""
    n_racks = len(sizes)
    upper: dict[int, list[int]] = {}
    lower: dict[int, list[int]] = {}
    for r in rf_counts:
        if r <= n_racks:
            upper[r] = [1] * n_racks
            lower[r] = [0] * n_racks
        else:
            upper[r] = [min(n, r - n_racks + 1) for n in sizes]
            lower[r] = [1] * n_racks
    return upper, lower


def rack_averages(rf_counts: dict[int, int], sizes: list[int]) -> list[Fraction] | None:
    """The lexicographically most even per-broker average of each rack (``sizes[s]`` brokers in rack s) that
    partitions of the given replication factors (``rf_counts[r]`` partitions of RF r) can reach under the rack
    rule; None when the racks are too many to compute it exactly (see the module docstring)."""
    n_racks = len(sizes)
    if n_racks == 0:
        return []
    upper, lower = _capacity(rf_counts, sizes)
    total_l = {r: sum(lower[r]) for r in rf_counts}

    def f(members: tuple[int, ...]) -> int:
        """The most replicas the racks ``members`` can hold together."""
        out = 0
        for r, count in rf_counts.items():
            u = sum(upper[r][s] for s in members)
            outside_l = total_l[r] - sum(lower[r][s] for s in members)
            out += count * min(u, r - outside_l)
        return out

    exact = n_racks <= EXACT_RACKS
    if not exact and any(r > n_racks for r in rf_counts):
        return None
    averages: list[Fraction | None] = [None] * n_racks
    fixed: tuple[int, ...] = ()
    f_fixed = 0
    rest = list(range(n_racks))
    while rest:
        if exact:
            candidates: list[tuple[int, ...]] = [
                c for k in range(1, len(rest) + 1) for c in itertools.combinations(rest, k)
            ]
        else:  # f(S) depends on |S| only: the k largest remaining racks are the best set of size k
            by_size = sorted(rest, key=lambda s: -sizes[s])
            candidates = [tuple(by_size[:k]) for k in range(1, len(rest) + 1)]
        best: Fraction | None = None
        union: set[int] = set()
        for c in candidates:
            ratio = Fraction(f(fixed + c) - f_fixed, sum(sizes[s] for s in c))
            if best is None or ratio < best:
                best, union = ratio, set(c)
            elif ratio == best:
                union |= set(c)  # minimisers of f(S) - best * n(S) are closed under union (f is submodular)
        assert best is not None
        for s in union:
            averages[s] = best
        fixed += tuple(sorted(union))
        f_fixed = f(fixed)
        rest = [s for s in rest if s not in union]
    return [a for a in averages if a is not None]


def replica_band(
    rf: IntArray, target: npt.NDArray[np.bool_], rack: IntArray, n_racks: int
) -> tuple[IntArray, IntArray]:
    """Per broker index, the [lo, hi] its replica count is held to (0, 0 for brokers that are not targets).

    ``rf`` per partition; ``rack`` per broker index (0..n_racks-1 for targets when rack-aware, else -1): when
    ``n_racks`` < 2 or the rack rule does not apply, the cluster-wide band [floor(T/N), ceil(T/N)]."""
    lo = np.zeros(len(target), dtype=np.int64)
    hi = np.zeros(len(target), dtype=np.int64)
    targets = np.flatnonzero(target)
    n = len(targets)
    if n == 0:
        return lo, hi
    total = int(rf.sum())
    lo[targets], hi[targets] = total // n, -(-total // n)
    if n_racks < 2:
        return lo, hi
    values, counts = np.unique(rf, return_counts=True)
    sizes = np.bincount(rack[targets], minlength=n_racks).tolist()
    averages = rack_averages(dict(zip(values.tolist(), counts.tolist(), strict=True)), sizes)
    if averages is None:
        return lo, hi
    for s, a in enumerate(averages):
        members = targets[rack[targets] == s]
        lo[members] = a.numerator // a.denominator
        hi[members] = -(-a.numerator // a.denominator)
    return lo, hi
