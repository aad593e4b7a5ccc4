"""An independent checker for reassignment plans, written from the definitions (tooling-facts §4) and nothing
of ``migrate.pipeline.plan``: plain dicts and sets, no arrays, so a bug in the planner's vectorised check
cannot hide the same bug here.

Every violation is one line ``"<kind> <subject>: <detail>"``; kinds: ``partitions`` (a partition missing or
added), ``rf`` (replication factor changed), ``duplicate`` (a broker twice in one partition), ``target`` (a
replica on a broker that is not a target), ``rack`` (fewer than min(RF, R) racks), ``replicas`` and
``leaders`` (a target outside the balance band). :func:`keys` gives the "<kind> <subject>" part, which is what
the planner's own report is compared on.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

TP = tuple[str, int]


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
        total = sum(len(r) for r in after.values())
        lo, hi = total // len(targets), -(-total // len(targets))
        counts = dict.fromkeys(targets, 0)
        leaders = dict.fromkeys(targets, 0)
        for listed in after.values():
            for b in listed:
                if b in counts:
                    counts[b] += 1
            if listed and listed[0] in leaders:
                leaders[listed[0]] += 1
        for b in targets:
            if not lo <= counts[b] <= hi:
                out.append(f"replicas broker {b}: {counts[b]} replicas, outside [{lo}, {hi}]")
        plo, phi = len(after) // len(targets), -(-len(after) // len(targets))
        for b in targets:
            if not plo <= leaders[b] <= phi:
                out.append(f"leaders broker {b}: leads {leaders[b]} partitions, outside [{plo}, {phi}]")
    return out


def keys(violations: Iterable[str]) -> set[str]:
    """The "<kind> <subject>" of each violation line."""
    return {v.split(":", 1)[0] for v in violations}
