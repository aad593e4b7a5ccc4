"""The lower bound on moves that a plan is measured against (tooling-facts §4).

A move is one replica placed on a broker that did not hold that partition: moves(A->B) = sum_p |B(p) \\ A(p)|.
Replication factors do not change, so for every partition |B(p) \\ A(p)| = |A(p) \\ B(p)|: the moves into a
partition equal the replicas leaving it. Over the target brokers, c_b replicas on broker b, each held to its
band [L_b, U_b] (the tightest any plan meeting the rack rule can reach, :mod:`.reach`; [floor(T/N), ceil(T/N)]
for every broker when the racks allow it):

* **balance**: a replica on a broker that is not a target must leave (``forced``), and a target above U_b must
  lose at least c_b - U_b replicas; these departures are distinct replicas, each one move. Independently, a
  target below L_b must gain at least L_b - c_b replicas, each a move. So moves >= max(forced + sum max(0,
  c_b - U_b), sum max(0, L_b - c_b)).
* **per partition**: partition p loses at least its ``forced_p`` replicas on non-targets; rack-aware, it must
  end on min(RF, R) distinct racks (R racks among the targets), and each move adds at most one rack to the
  ones its replicas on targets already span, so it needs at least ``rackdeficit_p`` = min(RF, R) - (distinct
  racks of its replicas on targets) moves. Partitions' moves are disjoint, so moves >= sum_p max(forced_p,
  rackdeficit_p).

The larger of two valid bounds is a bound (on plans within the same bands the planner is held to). It is not
always reachable: a broker below L_b may already hold every partition a broker above U_b could give, and the two
bounds count different moves.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from migrate.planner.model import Indexed, Layout, index_layout, unique


def bound(ix: Indexed) -> int:
    """The lower bound of a layout indexed for its targets (:func:`lower_bound` on arrays)."""
    n = int(ix.target.sum())
    total = len(ix.rep)
    if total == 0 or n == 0:
        return 0
    lo, hi = ix.band
    counts = ix.counts()
    on_target = ix.target[ix.rep]
    forced = int((~on_target).sum())
    t = ix.target
    balance = max(forced + int(np.maximum(0, counts[t] - hi[t]).sum()), int(np.maximum(0, lo[t] - counts[t]).sum()))
    forced_p = np.bincount(ix.part[~on_target], minlength=ix.n_partitions)
    per_partition = forced_p
    n_racks = len(ix.racks)
    if ix.aware and n_racks:
        keep = on_target
        key = unique(ix.part[keep] * n_racks + ix.rack[ix.rep[keep]])
        distinct = np.bincount(key // n_racks, minlength=ix.n_partitions)
        deficit = np.maximum(0, np.minimum(ix.rf, n_racks) - distinct)
        per_partition = np.maximum(forced_p, deficit)
    return max(balance, int(per_partition.sum()))


def lower_bound(layout: Layout, targets: Sequence[int], racks: Mapping[int, str | None], rack_aware: bool) -> int:
    """The fewest moves any plan placing ``layout``'s replicas on ``targets`` within the reachable band (and,
    when ``rack_aware`` and every target has a rack in ``racks``, on min(RF, R) racks per partition) can make."""
    aware = rack_aware and all(racks.get(b) is not None for b in targets)
    return bound(index_layout(layout.assignment, targets, racks, aware))
