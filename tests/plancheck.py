"""An independent checker for reassignment plans, written from the definitions (tooling-facts §4) and nothing
of ``migrate.planner``: plain dicts and sets, no arrays, so a bug in the planner's vectorised check
cannot hide the same bug here.

Every violation is one line ``"<kind> <subject>: <detail>"``; kinds: ``partitions`` (a partition missing or
added), ``rf`` (replication factor changed), ``duplicate`` (a broker twice in one partition), ``target`` (a
replica on a broker that is not a target), ``rack`` (fewer than min(RF, R) racks), ``replicas`` and
``leaders`` (a target outside the balance band). :func:`keys` gives the "<kind> <subject>" part, which is what
the planner's own report is compared on.

The replica band is the tightest any plan meeting the rack rule can reach (:func:`reachable_band`), computed
here by a different method than the planner's (``migrate.planner.reach`` peels subsets of racks exactly):
max-min fair progressive filling with a linear program over (replication factor, rack) totals, in floats.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from ortools.linear_solver import pywraplp

TP = tuple[str, int]
SLACKS = (0.0, 1e-12, 1e-10, 1e-8)  # relative to the level's size


def name(tp: TP) -> str:
    return f"{tp[0]}-{tp[1]}"


def moves(before: Mapping[TP, Sequence[int]], after: Mapping[TP, Sequence[int]]) -> int:
    """Replicas placed on a broker that did not hold that partition: sum_p |after(p) - before(p)|."""
    return sum(len(set(after[tp]) - set(before.get(tp, ()))) for tp in after)


def check(
    before: Mapping[TP, Sequence[int]],
    after: Mapping[TP, Sequence[int]],
    targets: Iterable[int],
    racks: Mapping[int, str | None],
    rack_aware: bool,
) -> list[str]:
    """Every hard-constraint violation of ``after`` as a plan for ``before`` over ``targets``. Rack-aware only
    when asked and every target has a rack (as Kafka's --generate)."""
    targets = sorted(set(targets))
    out: list[str] = []
    for tp in sorted(set(before) - set(after)):
        out.append(f"partitions partition {name(tp)}: missing from the plan")
    for tp in sorted(set(after) - set(before)):
        out.append(f"partitions partition {name(tp)}: not in the layout")
    tset = set(targets)
    aware = rack_aware and bool(targets) and all(racks.get(b) is not None for b in targets)
    all_racks = {racks[b] for b in targets} if aware else set()
    for tp in sorted(after):
        replicas = list(after[tp])
        if tp in before and len(replicas) != len(before[tp]):
            out.append(f"rf partition {name(tp)}: {len(replicas)} replicas, was {len(before[tp])}")
        seen: set[int] = set()
        for b in replicas:
            if b in seen:
                out.append(f"duplicate partition {name(tp)}: broker {b} listed twice")
            seen.add(b)
        for b in replicas:
            if b not in tset:
                out.append(f"target partition {name(tp)}: replica on broker {b}, which is not a target")
        if aware:
            spans = {racks[b] for b in replicas if b in tset}
            need = min(len(replicas), len(all_racks))
            if len(spans) < need:
                out.append(f"rack partition {name(tp)}: spans {len(spans)} rack(s), needs {need}")
    if targets and after:
        band = reachable_band(after, targets, racks, rack_aware)
        counts = dict.fromkeys(targets, 0)
        leaders = dict.fromkeys(targets, 0)
        for listed in after.values():
            for b in listed:
                if b in counts:
                    counts[b] += 1
            if listed and listed[0] in leaders:
                leaders[listed[0]] += 1
        for b in targets:
            lo, hi = band[b]
            if not lo <= counts[b] <= hi:
                out.append(f"replicas broker {b}: {counts[b]} replicas, outside [{lo}, {hi}]")
        plo, phi = len(after) // len(targets), -(-len(after) // len(targets))
        for b in targets:
            if not plo <= leaders[b] <= phi:
                out.append(f"leaders broker {b}: leads {leaders[b]} partitions, outside [{plo}, {phi}]")
    return out


def leaders_reachable(after: Mapping[TP, Sequence[int]], targets: Iterable[int]) -> bool:
    """Whether some order of ``after``'s replica lists has every target lead within [floor(P/N), ceil(P/N)]:
    each partition's leader is one of its listed targets. A linear program (GLOP); its constraint matrix is a
    bipartite graph's, totally unimodular, so it is feasible exactly when an integral choice is."""
    targets = sorted(set(targets))
    if not targets or not after:
        return True
    lo, hi = len(after) // len(targets), -(-len(after) // len(targets))
    solver = pywraplp.Solver.CreateSolver("GLOP")
    per_broker: dict[int, list[pywraplp.Variable]] = {b: [] for b in targets}
    for i, listed in enumerate(after.values()):
        choices = []
        for b in dict.fromkeys(listed):
            if b in per_broker:
                x = solver.NumVar(0, 1, f"p{i}b{b}")
                per_broker[b].append(x)
                choices.append(x)
        if choices:
            solver.Add(solver.Sum(choices) == 1)
    for xs in per_broker.values():
        if not xs:
            if lo > 0:
                return False  # a target listed nowhere leads nothing
            continue
        solver.Add(solver.Sum(xs) >= lo)
        solver.Add(solver.Sum(xs) <= hi)
    return bool(solver.Solve() == pywraplp.Solver.OPTIMAL)


def keys(violations: Iterable[str]) -> set[str]:
    """The "<kind> <subject>" of each violation line."""
    return {v.split(":", 1)[0] for v in violations}


def rack_averages(rf_counts: Mapping[int, int], sizes: Mapping[str, int]) -> dict[str, float]:
    """Each rack's per-broker replica average in the max-min fair (lexicographically most even) allocation the
    rack rule allows: a partition of RF r <= R puts at most one replica in a rack, one of RF r > R at least one
    in every rack; no rack more than its brokers. Progressive filling: raise the common level t of the racks not
    yet fixed as far as a linear program allows, fix every rack that cannot go above t while the others stay at
    t, repeat. Partitions of one RF are interchangeable, so the variables are (RF, rack) totals."""
    names = sorted(sizes)
    n_racks = len(names)
    fixed: dict[str, float] = {}

    def solve(level: float | None, maximise: str | None) -> float:
        # Levels found by one LP are met by the next only within a rounding error (0.2 * 5 is
        # 1.0000000000000002, above a cap of 1; GLOP's 0.4 may be 0.4000000001): exactly first, then with a
        # slack growing until the program is feasible.
        for slack in SLACKS:
            value = _solve_once(level, maximise, slack)
            if value is not None:
                return value
        raise AssertionError(f"no feasible level within a relative slack of {SLACKS[-1]}")

    def _solve_once(level: float | None, maximise: str | None, slack: float) -> float | None:
        solver = pywraplp.Solver.CreateSolver("GLOP")
        t = solver.NumVar(0, solver.infinity(), "t")
        totals = {s: 0 for s in names}
        for r, count in rf_counts.items():
            parts = []
            for s in names:
                low, high = (0, 1) if r <= n_racks else (1, min(sizes[s], r))
                y = solver.NumVar(count * low, count * high, f"y{r}{s}")
                parts.append(y)
                totals[s] += y
            solver.Add(sum(parts) == count * r)
        for s in names:
            if s in fixed:
                target = fixed[s] * sizes[s]
                solver.Add(totals[s] >= target - slack * max(1.0, target))
                solver.Add(totals[s] <= target + slack * max(1.0, target))
            elif level is None:
                solver.Add(totals[s] >= t * sizes[s])
            else:
                target = level * sizes[s]
                solver.Add(totals[s] >= target - slack * max(1.0, target))
        solver.Maximize(t if maximise is None else totals[maximise])
        if solver.Solve() != pywraplp.Solver.OPTIMAL:
            return None
        return float(solver.Objective().Value())

    while len(fixed) < n_racks:
        level = solve(None, None)
        rest = [s for s in names if s not in fixed]
        stuck = [s for s in rest if solve(level, s) <= level * sizes[s] + 1e-6 * max(1.0, level * sizes[s])]
        for s in stuck or rest:
            fixed[s] = level
    return fixed


def reachable_band(
    after: Mapping[TP, Sequence[int]], targets: Iterable[int], racks: Mapping[int, str | None], rack_aware: bool
) -> dict[int, tuple[int, int]]:
    """Per target, the [lo, hi] of replicas any plan meeting the rack rule can hold every broker to: the floor
    and ceiling of its rack's average in :func:`rack_averages`; cluster-wide [floor(T/N), ceil(T/N)] when the
    rack rule does not apply (rack-unaware, a target without a rack, one rack)."""
    targets = sorted(set(targets))
    total = sum(len(r) for r in after.values())
    flat = (total // len(targets), -(-total // len(targets)))
    aware = rack_aware and all(racks.get(b) is not None for b in targets)
    sizes = Counter(str(racks[b]) for b in targets) if aware else Counter()
    if len(sizes) < 2:
        return dict.fromkeys(targets, flat)
    averages = rack_averages(Counter(len(r) for r in after.values()), sizes)
    return {b: (math.floor(averages[str(racks[b])] + 1e-6), math.ceil(averages[str(racks[b])] - 1e-6)) for b in targets}
