"""Replica placement as one min-cost flow (OR-Tools ``SimpleMinCostFlow``), exact over a candidate set.

**The network.** Every target broker b has one node ``bal_b`` holding, as supply, its replicas that stay unless
the flow moves them; it drains to the sink through tiered arcs (:func:`~migrate.planner.flow.soft_bands`):
convex costs that make its band [L, U] (the reachable one, :mod:`.reach`: per rack when the racks force it) a
*soft* constraint -- always feasible, so a layout that cannot meet it still gets the closest plan, and what it
misses is found afterwards (:mod:`.check`). Replicas that may move are *mover*
nodes:

* *sampled* movers (a replica that may stay): ``bal_donor -> x`` at cost 0, so "not moving" is the donor's
  own supply going to its sink arcs;
* *source* movers (a replica that must leave: on a broker that is not a target, or one of several replicas of
  a partition in one rack, or a filler, below) carry their own unit of supply.

A mover reaches receiving brokers through *aggregate* nodes: one per rack (``rack_r -> bal_b`` for each b of
r) and one per broker group (below). ``x -> aggregate`` costs 1: one move. When two movers of one partition may
reach the same aggregate, they go through a per-(partition, aggregate) node with capacity 1, which is what
keeps two replicas of a partition off one rack (or group).

**Why rack aggregation is valid** (RF <= R, R racks among the targets). A valid partition has at most one
replica per rack. A mover may go to a rack its partition *lacks* -- no broker there holds it -- or stay in its
own rack, where only its donor holds it; the donor never receives from its own rack in an optimum (cancelling
"donor gives x into rack s" against "rack s gives to the donor" keeps every broker's count and saves a move),
so any broker the rack node sends flow to can take any partition that reached the rack node. Permuting which
mover of a partition goes to which of its racks changes neither cost nor counts, so restricting a mover to
"own rack or lacking racks" loses nothing. Where a partition already has k >= 2 replicas in rack s, all k are
source movers and a small gadget lets exactly one of them stay (units are interchangeable: which unit "stays"
only says which holder keeps its replica) or one replica move to another broker of s; the others go to lacking
racks. The decomposition still checks every placement (see :func:`_match`).

**RF > R** (e.g. RF 3 on two racks): every rack must keep at least one replica, and a rack may hold several,
so racks cannot be aggregated; every mover goes to broker *groups*, which lie within racks. One replica per
covered rack (the one on its rack's least loaded holder) is an *anchor*: it may move, but only within its
rack. Each lacking rack gets a *filler* (a source: replicas on non-targets first, then extra replicas from the
most loaded brokers). Every other replica is free to go to any group holding none of the partition. Which
replica anchors is a choice the flow does not make, so RF > R is near-optimal rather than exact (the tests
compare with an exhaustive search).

**Rack-unaware** (or one rack): every replica is free. Groups are single brokers when there are at most
:data:`EXACT_BROKERS` targets (exact: a mover may go to any broker not holding its partition); above that the
targets are split into :data:`GROUPS` groups (within racks when aware) and a mover may only go to groups that
hold none of its partition -- ~GROUPS arcs per mover instead of ~N, at the price of ignoring a few receivers
per partition.

**Candidates.** Brokers within or below the band rarely need to give, so only brokers above L offer replicas:
``min(c, SAMPLE_FACTOR*(c - L) + SAMPLE_EXTRA)`` of them, the first by a stable hash of (topic, partition,
broker) (level 0); they may only go to aggregates with a broker below U. The design started from
``3*(c - L) + 16``; measured on 1M partitions, 200 brokers, 6 racks, RF 3, skew 0.3 (604,270 moves needed),
factor 3 took 95 s and 2.6 GB and factor 1 took 21 s and 1.3 GB, both exactly at the lower bound: one sample per
excess replica plus 16 spare leaves the flow enough choice, because a replica can go to every rack its
partition lacks. If the result leaves a broker outside [L, U], :func:`place` runs again (level 1) with no "below U"
restriction and every replica of every target as a candidate -- exact over the network -- or, beyond
:data:`LEVEL1_LIMIT` candidates, four times the level-0 sample and 16 from every broker. It also runs again when
the plan is in band but above the lower bound, only up to :data:`LEVEL1_LIMIT` candidates: the bound is often
not reachable (racks), and at a million partitions a retry costs minutes for, in every case measured, nothing
(CP-SAT on smaller layouts found the level-0 plans optimal where they exceeded the bound).

The module is long because it is one algorithm: the network, its solve and the decomposition of the flow into
placements share the roles and slots they build; what follows a plan left out of band is :mod:`.repair`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from migrate.planner.flow import Arcs, add_bands, broker_bands, group_rank
from migrate.planner.model import BoolArray, Indexed, IntArray, mix64, unique, unique_counts

EXACT_BROKERS = 40
GROUPS = 8
LEVEL1_LIMIT = 100_000
SAMPLE_FACTOR = 1
SAMPLE_EXTRA = 16
CAND, SRC = 1, 2  # roles of a replica: may move (if sampled), must move
FREE, SLOT = 0, 1  # where a mover may go: any broker group without its partition / a rack


@dataclass
class Placement:
    rep: IntArray  # new broker index per slot
    level: int
    movers: int
    arcs: int
    flow_moves: int  # units of cost-1 arcs in the optimum
    stuck: list[int]  # slots that found no valid broker (left in place; reported as violations)
    fallbacks: int  # placements the decomposition had to change
    eligible: int = 0  # replicas that could have been candidates (all of them at level 1 up to LEVEL1_LIMIT)


@dataclass
class _Roles:
    role: IntArray  # per slot
    kind: IntArray  # per slot (for movers)
    own_ok: BoolArray  # per slot: a sampled mover may stay in its own rack (RF <= R)
    viol: IntArray  # per slot: violating (partition, rack) group, -1 if none
    viol_rack: IntArray  # per violating group
    rack_only: IntArray  # per slot: RF > R, the only rack a mover may go to (anchors, fillers), -1: any


def _roles(ix: Indexed, counts: IntArray, aware: bool) -> _Roles:
    """Which replicas may move (candidates), must move (sources) or stay (anchors), and where movers may go."""
    n_slots = len(ix.rep)
    n_racks = len(ix.racks)
    on_t = ix.target[ix.rep]
    role = np.where(on_t, CAND, SRC).astype(np.int64)
    kind = np.full(n_slots, FREE, dtype=np.int64)
    own_ok = np.zeros(n_slots, dtype=np.bool_)
    viol = np.full(n_slots, -1, dtype=np.int64)
    rack_only = np.full(n_slots, -1, dtype=np.int64)
    if not aware:
        return _Roles(role, kind, own_ok, viol, np.zeros(0, dtype=np.int64), rack_only)
    rf = ix.rf
    slot_mode = (rf <= n_racks)[ix.part]
    ts = np.flatnonzero(on_t)
    key = ix.part[ts] * n_racks + ix.rack[ix.rep[ts]]
    uk, inv, cnt = np.unique(key, return_inverse=True, return_counts=True)
    holders = cnt[inv]
    covered = np.bincount(uk // n_racks, minlength=ix.n_partitions)
    # RF <= R: single holders are candidates that may also stay in their rack; every holder of a rack with
    # several is a source of the violating-group gadget; replicas on non-targets go to lacking racks.
    sm = slot_mode[ts]
    kind[slot_mode] = SLOT
    single = ts[sm & (holders == 1)]
    own_ok[single] = True
    multi = sm & (holders >= 2)
    role[ts[multi]] = SRC
    groups, viol_ids = np.unique(inv[multi], return_inverse=True)
    viol[ts[multi]] = viol_ids
    viol_rack = (uk[groups] % n_racks).astype(np.int64)
    # RF > R: every mover goes to broker groups (which lie within racks). One anchor per covered rack keeps it
    # covered: it may move, but only within its rack. Each lacking rack gets one source mover ("filler"):
    # replicas on non-targets first, then extras from the most loaded brokers; the k-th filler of a partition
    # goes to its k-th lacking rack (fillers of one partition all leave, so which goes where is immaterial).
    # Every other replica is free to go to any group that holds none of the partition.
    cm = ~sm
    if cm.any():
        cts = ts[cm]
        ckey = key[cm]
        load = counts[ix.rep[cts]]
        order = np.lexsort((cts, load, ckey))
        first = np.ones(len(order), dtype=np.bool_)
        first[1:] = ckey[order][1:] != ckey[order][:-1]
        _spread_anchors(ix, cts, ckey, order, first)
        anchors = cts[order[first]]
        rack_only[anchors] = ix.rack[ix.rep[anchors]]
        deficit = np.where(rf > n_racks, n_racks - covered, 0)
        src = np.flatnonzero(~on_t & ~slot_mode)  # already in partition/slot order
        fill = src[group_rank(ix.part[src]) < deficit[ix.part[src]]]
        short = np.maximum(0, deficit - np.bincount(ix.part[src], minlength=ix.n_partitions))
        if short.any():
            extras = cts[order[~first]]
            extras = extras[short[ix.part[extras]] > 0]
            eorder = np.lexsort((extras, -counts[ix.rep[extras]], ix.part[extras]))
            extras = extras[eorder]
            pick = extras[group_rank(ix.part[extras]) < short[ix.part[extras]]]
            role[pick] = SRC
            fill = np.sort(np.concatenate([fill, pick]))
        if len(fill):
            fp = ix.part[fill]
            up, row = np.unique(fp, return_inverse=True)
            lack = np.ones((len(up), n_racks), dtype=np.bool_)
            ck = uk[np.isin(uk // n_racks, up)]
            lack[np.searchsorted(up, ck // n_racks), ck % n_racks] = False
            nth = group_rank(fp) + 1
            rack_only[fill] = np.argmax((np.cumsum(lack, axis=1)[row] == nth[:, None]) & lack[row], axis=1)
    return _Roles(role, kind, own_ok, viol, viol_rack, rack_only)


def _spread_anchors(ix: Indexed, cts: IntArray, ckey: IntArray, order: IntArray, first: BoolArray) -> None:
    """Where a rack holds several replicas of a partition (RF > R), choose which one anchors so that no broker
    anchors more of them than its band's upper end while another holder has room: rewrites ``order`` so the
    chosen holder comes first in its (partition, rack) run.

    An anchor keeps its rack covered and may move only within it, to a broker not holding the partition; so a
    broker chosen as the anchor of more partitions than it may hold keeps the excess (its rack-mates that also
    hold those partitions cannot take them), and the least-loaded rule alone picks the same broker for every
    partition its counts tie on (2 partitions x RF 3 on brokers {1, 2 | 11}: broker 1 anchored both, ending
    above its band, where anchoring 1 for one and 2 for the other meets it). Greedy in partition order: the
    holder with the fewest anchors so far relative to its upper band, then the least loaded, then the lowest
    slot. Only runs with a choice are visited."""
    starts = np.flatnonzero(first)
    ends = np.append(starts[1:], len(order))
    choice = np.flatnonzero(ends - starts >= 2)
    if len(choice) == 0:
        return
    hi = ix.band[1].tolist()
    counts = ix.counts().tolist()
    anchored = np.bincount(ix.rep[cts[order[starts[ends - starts == 1]]]], minlength=len(ix.ids)).tolist()
    # Plain lists: one visit per partition with a choice (every partition, with RF 3 over two racks).
    broker = ix.rep[cts[order]].tolist()
    slot = cts[order].tolist()
    for a, b in zip(starts[choice].tolist(), ends[choice].tolist(), strict=True):
        best = min(range(a, b), key=lambda i: (anchored[broker[i]] - hi[broker[i]], counts[broker[i]], slot[i]))
        anchored[broker[best]] += 1
        if best != a:
            order[a], order[best] = order[best], order[a]
            broker[a], broker[best] = broker[best], broker[a]
            slot[a], slot[best] = slot[best], slot[a]


def _sample(ix: Indexed, roles: _Roles, counts: IntArray, lo: IntArray, level: int) -> IntArray:
    """The candidate replicas offered this round (slots), by broker, first by a stable hash."""
    cand = np.flatnonzero(roles.role == CAND)
    if len(cand) == 0:
        return cand
    donors = ix.rep[cand]
    base = np.minimum(counts, SAMPLE_FACTOR * np.maximum(0, counts - lo) + SAMPLE_EXTRA)
    base[counts <= lo] = 0
    if level == 0:
        quota = base
        if not quota.any():
            return cand[:0]
    elif len(cand) <= LEVEL1_LIMIT:
        return cand
    else:
        quota = np.maximum(4 * base, 16)
    h = mix64(ix.partition_hash[ix.part[cand]] ^ mix64(ix.ids[donors].astype(np.uint64)))
    order = np.lexsort((h, donors))
    rank = group_rank(donors[order])
    return np.sort(cand[order[rank < quota[donors[order]]]])


def _groups(ix: Indexed, tpos: IntArray, aware: bool) -> tuple[IntArray, int]:
    """Each target's group (-1 for others): single brokers up to EXACT_BROKERS targets, else GROUPS groups
    (within racks when aware)."""
    grp = np.full(len(ix.ids), -1, dtype=np.int64)
    targets = np.flatnonzero(ix.target)
    n = len(targets)
    if n <= EXACT_BROKERS:
        grp[targets] = tpos[targets]
        return grp, n
    n_groups = max(GROUPS, 2 * int(ix.rf.max(initial=1)))  # a partition's holders never fill every group
    if not aware:
        grp[targets] = np.arange(n) % n_groups
        return grp, n_groups
    size = -(-n // n_groups)
    nxt = 0
    for r in range(len(ix.racks)):
        members = targets[ix.rack[targets] == r]
        k = max(1, -(-len(members) // size))
        grp[members] = nxt + np.arange(len(members)) % k
        nxt += k
    return grp, nxt


def _pairs(
    movers: IntArray, parts: IntArray, n_options: int, excluded: IntArray, extra: IntArray | None = None
) -> tuple[IntArray, IntArray]:
    """(mover, option) for every option in 0..n_options-1 whose key ``part*n_options + option`` is not in the
    sorted array ``excluded``; ``extra`` adds one more allowed option per mover (-1: none)."""
    m = np.repeat(np.arange(len(movers)), n_options)
    opt = np.tile(np.arange(n_options, dtype=np.int64), len(movers))
    key = parts[m] * n_options + opt
    pos = np.searchsorted(excluded, key)
    pos[pos >= len(excluded)] = 0
    keep = excluded[pos] != key if len(excluded) else np.ones(len(key), dtype=np.bool_)
    if extra is not None:
        keep |= opt == extra[m]
    return m[keep], opt[keep]


def place(ix: Indexed, level: int = 0) -> Placement:
    """The movement-minimal placement of ``ix``'s replicas on its targets (see the module docstring)."""
    n_b = len(ix.ids)
    total = len(ix.rep)
    targets = np.flatnonzero(ix.target)
    n = len(targets)
    tpos = np.full(n_b, -1, dtype=np.int64)
    tpos[targets] = np.arange(n)
    lo, hi = ix.band  # per broker index: the reachable band (.reach)
    counts = ix.counts()
    n_racks = len(ix.racks)
    aware = ix.aware and n_racks >= 2
    roles = _roles(ix, counts, aware)
    eligible = int((roles.role == CAND).sum())
    sampled = _sample(ix, roles, counts, lo, level)
    sources = np.flatnonzero(roles.role == SRC)
    movers = np.sort(np.concatenate([sampled, sources]))
    n_m = len(movers)
    if n_m == 0:
        return Placement(ix.rep.copy(), level, 0, 0, 0, [], 0, eligible)
    m_part = ix.part[movers]
    m_donor = ix.rep[movers]
    m_src = roles.role[movers] == SRC
    m_kind = roles.kind[movers]
    m_viol = roles.viol[movers]
    # Level 0 offers sampled movers only aggregates with a broker below U (a move into a full rack or group
    # pays off only as part of a chain); level 1 offers everything, so it is exact over its candidates.
    room = counts < hi if level == 0 else np.ones(n_b, dtype=np.bool_)

    # -- nodes
    sink = 0
    bal0 = 1
    rack0 = bal0 + n
    grp, n_groups = _groups(ix, tpos, aware)
    if not (m_kind == FREE).any():
        n_groups = 0
    grp0 = rack0 + n_racks
    mover0 = grp0 + n_groups
    n_aggs = n_racks + n_groups  # aggregate a: rack a (a < n_racks) or group a - n_racks

    # -- destinations: (mover, aggregate) pairs
    pm: list[IntArray] = []
    pa: list[IntArray] = []
    on_t = ix.target[ix.rep]
    slot_m = np.flatnonzero(m_kind == SLOT)
    if len(slot_m):
        ts = np.flatnonzero(on_t)
        covered = unique(ix.part[ts] * n_racks + ix.rack[ix.rep[ts]])
        own = np.where(roles.own_ok[movers[slot_m]], ix.rack[m_donor[slot_m]], -1)
        rack_room = np.bincount(ix.rack[targets], weights=room[targets], minlength=n_racks)
        rack_size = np.bincount(ix.rack[targets], minlength=n_racks)
        own_ok = (own >= 0) & (rack_size[np.maximum(own, 0)] >= 2)
        own_ok &= rack_room[np.maximum(own, 0)] - room[m_donor[slot_m]] >= 1
        own = np.where(own_ok, own, -1)
        mm, rr = _pairs(slot_m, m_part[slot_m], n_racks, covered, own)
        mm = slot_m[mm]
        keep = m_src[mm] | (rack_room[rr] > 0) | (rr == own[np.searchsorted(slot_m, mm)])
        pm.append(mm[keep])
        pa.append(rr[keep])
    free_m = np.flatnonzero(m_kind == FREE)
    if len(free_m):
        ts = np.flatnonzero(on_t)
        hk, hcnt = unique_counts(ix.part[ts] * n_groups + grp[ix.rep[ts]])
        g_size = np.bincount(grp[targets], minlength=n_groups)
        g_room = np.bincount(grp[targets], weights=room[targets], minlength=n_groups)
        fd = m_donor[free_m]
        own = np.where(ix.target[fd], grp[fd], -1)
        okey = m_part[free_m] * n_groups + np.maximum(own, 0)
        if len(hk):
            opos = np.minimum(np.searchsorted(hk, okey), len(hk) - 1)
            alone = (own >= 0) & (hk[opos] == okey) & (hcnt[opos] == 1) & (g_size[np.maximum(own, 0)] >= 2)
        else:
            alone = np.zeros(len(free_m), dtype=np.bool_)
        own = np.where(alone, own, -1)
        mm, gg = _pairs(free_m, m_part[free_m], n_groups, hk, own)
        mm = free_m[mm]
        own_m = own[np.searchsorted(free_m, mm)]
        room_left = g_room[gg] - np.where(gg == own_m, room[m_donor[mm]], 0)
        keep = m_src[mm] | (room_left > 0)
        only = roles.rack_only[movers[mm]]
        if (only >= 0).any():  # anchors and fillers (groups lie within racks when aware)
            grp_rack = np.full(n_groups, -1, dtype=np.int64)
            grp_rack[grp[targets]] = ix.rack[targets]
            keep &= (only < 0) | (grp_rack[gg] == only)
        pm.append(mm[keep])
        pa.append(gg[keep] + n_racks)
    pair_m = np.concatenate(pm) if pm else np.zeros(0, dtype=np.int64)
    pair_a = np.concatenate(pa) if pa else np.zeros(0, dtype=np.int64)
    # Two movers of one partition reaching one aggregate share a capacity-1 gadget node.
    pkey = m_part[pair_m] * n_aggs + pair_a
    _, pinv, pcnt = np.unique(pkey, return_inverse=True, return_counts=True)
    shared = pcnt[pinv] >= 2
    gkeys, ginv = np.unique(pkey[shared], return_inverse=True)
    gad0 = mover0 + n_m
    n_gad = len(gkeys)
    n_viol = len(roles.viol_rack)
    vin0 = gad0 + n_gad
    vout0 = vin0 + n_viol
    n_nodes = vout0 + n_viol

    agg_node = np.concatenate([rack0 + np.arange(n_racks), grp0 + np.arange(n_groups)])
    prefer = None if ix.prefer is None else ix.prefer[targets]
    bands = broker_bands(lo[targets], hi[targets], total, n + n_aggs + 2, prefer)
    move = bands.move
    esc_cost = 4 * bands.top
    arcs = Arcs()
    # sampled movers leave their donor at no cost (a move is paid on the way out)
    cand_m = np.flatnonzero(~m_src)
    arcs.add(bal0 + tpos[m_donor[cand_m]], mover0 + cand_m, 1, 0)
    direct = np.flatnonzero(~shared)
    d_lo, d_hi = arcs.add(mover0 + pair_m[direct], agg_node[pair_a[direct]], 1, move)
    via = np.flatnonzero(shared)
    v_lo, v_hi = arcs.add(mover0 + pair_m[via], gad0 + ginv, 1, move)
    arcs.add(gad0 + np.arange(n_gad), agg_node[gkeys % n_aggs], 1, 0)
    # violating groups: the holders' units enter vin; at most one stays (vout -> a holder) or moves within
    # the rack (vout -> rack, one move)
    vm = np.flatnonzero(m_viol >= 0)
    arcs.add(mover0 + vm, vin0 + m_viol[vm], 1, 0)
    arcs.add(vin0 + np.arange(n_viol), vout0 + np.arange(n_viol), 1, 0)
    s_lo, s_hi = arcs.add(vout0 + m_viol[vm], bal0 + tpos[m_donor[vm]], 1, 0)
    vr = np.arange(n_viol)
    r_lo, r_hi = arcs.add(vout0 + vr, rack0 + roles.viol_rack, 1, move)
    # a source with nowhere valid to go escapes to the sink (reported as a violation)
    has_dest = np.zeros(n_m, dtype=np.bool_)
    has_dest[pair_m] = True
    has_dest[vm] = True
    esc = np.flatnonzero(m_src & ~has_dest)
    e_lo, e_hi = arcs.add(mover0 + esc, np.full(len(esc), sink), 1, esc_cost)
    # aggregates feed their brokers
    a_lo, a_hi = arcs.add(rack0 + ix.rack[targets], bal0 + tpos[targets], total, 0) if n_racks else (0, 0)
    if n_groups:
        g_lo, g_hi = arcs.add(grp0 + grp[targets], bal0 + tpos[targets], total, 0)
    else:
        g_lo = g_hi = arcs.count
    add_bands(arcs, bal0 + np.arange(n), sink, bands)

    supplies = np.zeros(n_nodes, dtype=np.int64)
    src_on = np.bincount(m_donor[m_src], minlength=n_b)
    supplies[bal0 + tpos[targets]] = counts[targets] - src_on[targets]
    supplies[mover0 + np.flatnonzero(m_src)] = 1
    supplies[sink] = -total
    flows = arcs.solve(supplies)

    # -- decompose: each moving slot and the aggregate it goes to
    dest = np.full(n_m, -1, dtype=np.int64)
    fd_ = np.flatnonzero(flows[d_lo:d_hi])
    dest[pair_m[direct[fd_]]] = pair_a[direct[fd_]]
    fv = np.flatnonzero(flows[v_lo:v_hi])
    dest[pair_m[via[fv]]] = pair_a[via[fv]]
    escaped = np.zeros(n_m, dtype=np.bool_)
    escaped[esc[np.flatnonzero(flows[e_lo:e_hi])]] = True
    flow_moves = int((dest >= 0).sum())
    moving_slots: list[IntArray] = [movers[(dest >= 0) & (m_viol < 0)]]
    moving_aggs: list[IntArray] = [dest[(dest >= 0) & (m_viol < 0)]]
    stuck = movers[escaped & (m_viol < 0)].tolist()
    if n_viol:
        stays = flows[s_lo:s_hi]
        in_rack = flows[r_lo:r_hi]
        flow_moves += int(in_rack.sum())
        order = np.argsort(m_viol[vm], kind="stable")
        vm_sorted = vm[order]
        bounds = np.searchsorted(m_viol[vm_sorted], np.arange(n_viol + 1))
        for g in range(n_viol):
            members = vm_sorted[bounds[g] : bounds[g + 1]]
            stay = members[stays[order[bounds[g] : bounds[g + 1]]] > 0]
            stay_donors = set(m_donor[stay].tolist())
            leaving = [int(movers[m]) for m in members if int(m_donor[m]) not in stay_donors]
            targets_g = [int(dest[m]) for m in members if dest[m] >= 0]
            if in_rack[g]:
                targets_g.append(int(roles.viol_rack[g]))
            stuck.extend(leaving[len(targets_g) :])
            moving_slots.append(np.asarray(leaving[: len(targets_g)], dtype=np.int64))
            moving_aggs.append(np.asarray(targets_g[: len(leaving)], dtype=np.int64))
    slots = np.concatenate(moving_slots)
    aggs = np.concatenate(moving_aggs)
    receivers = _receivers(flows, a_lo, a_hi, g_lo, g_hi, targets, n_racks, ix.rack, grp)
    rep, fallbacks = _match(ix, slots, aggs, receivers, n_racks, grp)
    return Placement(rep, level, n_m, arcs.count, flow_moves, sorted(stuck), fallbacks, eligible)


def _receivers(
    flows: IntArray,
    a_lo: int,
    a_hi: int,
    g_lo: int,
    g_hi: int,
    targets: IntArray,
    n_racks: int,
    rack: IntArray,
    grp: IntArray,
) -> dict[int, list[list[int]]]:
    """Per aggregate: [broker index, units] it sends to each broker."""
    out: dict[int, list[list[int]]] = {}
    for lo_, hi_, agg in ((a_lo, a_hi, rack[targets]), (g_lo, g_hi, grp[targets] + n_racks)):
        if hi_ <= lo_:
            continue
        f = flows[lo_:hi_]
        for i in np.flatnonzero(f).tolist():
            out.setdefault(int(agg[i]), []).append([int(targets[i]), int(f[i])])
    return out


def _match(
    ix: Indexed,
    slots: IntArray,
    aggs: IntArray,
    receivers: dict[int, list[list[int]]],
    n_racks: int,
    grp: IntArray,
) -> tuple[IntArray, int]:
    """Give each moving slot a broker its aggregate sends flow to, never one its partition ends up on twice.

    Groups go first (a single-broker group leaves no choice), racks after. A slot whose aggregate only has
    units left on brokers that hold its partition swaps with a slot placed earlier at the same aggregate;
    only if no swap works does it take the least loaded other broker of the aggregate (a *fallback*, which
    the final check judges like anything else)."""
    rep = ix.rep.copy()
    order = np.lexsort((slots, aggs, aggs < n_racks))
    slots, aggs = slots[order], aggs[order]
    parts = ix.part[slots]
    leaving = set(slots.tolist())
    final: dict[int, set[int]] = {}
    for p in unique(parts).tolist():
        lo_, hi_ = int(ix.off[p]), int(ix.off[p + 1])
        final[p] = {int(rep[s]) for s in range(lo_, hi_) if s not in leaving}
    counts = ix.counts().tolist()
    for s in slots.tolist():
        counts[int(rep[s])] -= 1
    fallbacks = 0
    head: dict[int, int] = {}
    placed: dict[int, list[int]] = {}  # per aggregate: slots placed so far
    for s, a, p in zip(slots.tolist(), aggs.tolist(), parts.tolist(), strict=True):
        units = receivers.get(a, [])
        i = head.get(a, 0)
        while i < len(units) and units[i][1] == 0:
            i += 1
        head[a] = i
        chosen = -1
        for j in range(i, len(units)):
            b, left = units[j]
            if left and b not in final[p]:
                chosen = b
                units[j][1] -= 1
                break
        if chosen < 0:
            chosen = _swap(rep, ix.part, final, placed.get(a, []), units[i:], p)
        if chosen < 0:  # no swap either: any other broker of the aggregate
            fallbacks += 1
            members = np.flatnonzero(ix.target & (ix.rack == a)) if a < n_racks else np.flatnonzero(grp == a - n_racks)
            free = [int(b) for b in members.tolist() if int(b) not in final[p]]
            if not free:
                free = [int(b) for b in np.flatnonzero(ix.target).tolist() if int(b) not in final[p]]
            chosen = min(free, key=lambda b: (counts[b], b))
        rep[s] = chosen
        final[p].add(chosen)
        counts[chosen] += 1
        placed.setdefault(a, []).append(s)
    return rep, fallbacks


def _swap(
    rep: IntArray, part: IntArray, final: dict[int, set[int]], placed: list[int], units: list[list[int]], p: int
) -> int:
    """A broker for partition ``p`` taken from a slot placed earlier, which moves to one of ``units`` (a broker
    with flow left that holds ``p``); -1 if none fits."""
    for unit in units:
        b, left = unit
        if not left:
            continue
        for t in reversed(placed):
            q, b2 = int(part[t]), int(rep[t])
            if b2 not in final[p] and b not in final[q]:
                final[q].discard(b2)
                final[q].add(b)
                rep[t] = b
                unit[1] -= 1
                return b2
    return -1
