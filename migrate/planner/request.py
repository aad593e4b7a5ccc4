"""The four operations as target brokers and racks: all of them then solve the same problem.

``rebalance`` keeps the registered brokers, ``decommission`` removes some, ``add-brokers`` adds some (racks
for brokers not yet registered come from the request), ``fix-racks`` keeps the brokers but plans for the racks
the operator is about to configure. What differs is only *where replicas may be* and *which rack each target
is in*; the constraints and the objective are the same, so one optimiser serves all four.

Rack awareness follows Kafka's ``--generate``: rack-aware when every target has a rack. When only some do,
Kafka refuses without ``--disable-rack-aware``; a plan computed inside a Spark job cannot ask, so it plans
rack-unaware and says so in a warning. ``add-brokers`` is stricter: adding a broker without a rack to a
rack-aware cluster is almost always a mistake, so it is refused.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from migrate.planner.model import Layout, PlanRequestError

OPERATIONS = ("rebalance", "decommission", "add-brokers", "fix-racks")


@dataclass(frozen=True)
class Request:
    operation: str
    brokers: list[int]  # named by the operation
    targets: list[int]
    racks: dict[int, str | None]  # per target
    rack_aware: bool  # the rack rule applies
    warnings: list[str] = field(default_factory=list)


def _ids(ids: Sequence[int]) -> str:
    return ", ".join(str(b) for b in sorted(ids))


def resolve(
    layout: Layout,
    operation: str,
    brokers: Sequence[int],
    racks: Mapping[int, str | None] | None,
    rack_aware: bool,
) -> Request:
    """The targets and racks of an operation, or :class:`PlanRequestError` naming what is wrong."""
    if operation not in OPERATIONS:
        raise PlanRequestError(f"unknown operation {operation!r}; expected one of {', '.join(OPERATIONS)}")
    registered = {int(b): r for b, r in layout.brokers.items()}
    named = sorted({int(b) for b in brokers})
    overrides = {int(b): r for b, r in (racks or {}).items()}
    holding = Counter(itertools.chain.from_iterable(layout.assignment.values()))
    if operation in ("rebalance", "fix-racks") and named:
        raise PlanRequestError(f"{operation} names no brokers (got {_ids(named)})")
    if operation in ("decommission", "add-brokers") and not named:
        raise PlanRequestError(f"{operation} needs at least one broker")
    if operation in ("rebalance", "decommission") and overrides:
        raise PlanRequestError(f"{operation} takes no racks (racks apply to add-brokers and fix-racks)")

    rack_of = dict(registered)
    if operation == "rebalance":
        targets = sorted(registered)
    elif operation == "decommission":
        unknown = [b for b in named if b not in registered and b not in holding]
        if unknown:
            raise PlanRequestError(
                f"decommission: unknown broker(s) {_ids(unknown)} (not registered, holding no replicas)"
            )
        targets = sorted(set(registered) - set(named))
    elif operation == "add-brokers":
        busy = [b for b in named if holding.get(b, 0)]
        if busy:
            raise PlanRequestError(
                f"add-brokers: broker(s) {_ids(busy)} already hold replicas "
                f"({', '.join(f'{b}: {holding[b]}' for b in busy)})"
            )
        stray = [b for b in overrides if b not in named]
        if stray:
            raise PlanRequestError(f"add-brokers: racks given for broker(s) {_ids(stray)}, which are not being added")
        rack_of.update(overrides)
        for b in named:
            rack_of.setdefault(b, None)
        existing = [b for b in registered if b not in named]
        if rack_aware and existing and all(registered[b] is not None for b in existing):
            missing = [b for b in named if rack_of[b] is None]
            if missing:
                raise PlanRequestError(
                    f"add-brokers: new broker(s) {_ids(missing)} have no rack, and the cluster is rack-aware "
                    "(give racks, or plan with rack_aware=False)"
                )
        targets = sorted(set(registered) | set(named))
    else:  # fix-racks
        if not overrides:
            raise PlanRequestError("fix-racks needs racks: {broker id: rack}")
        unknown = [b for b in overrides if b not in registered]
        if unknown:
            raise PlanRequestError(f"fix-racks: broker(s) {_ids(unknown)} are not registered")
        rack_of.update(overrides)
        named = sorted(overrides)
        targets = sorted(registered)

    if not targets:
        raise PlanRequestError(f"{operation}: no target brokers left")
    max_rf = max((len(r) for r in layout.assignment.values()), default=0)
    if len(targets) < max_rf:
        example = next(f"{t}-{p}" for (t, p), r in sorted(layout.assignment.items()) if len(r) == max_rf)
        raise PlanRequestError(
            f"{operation}: {len(targets)} target broker(s) cannot hold partitions of replication factor {max_rf} "
            f"(e.g. {example})"
        )
    target_racks = {b: rack_of.get(b) for b in targets}
    with_rack = [b for b in targets if target_racks[b] is not None]
    warnings: list[str] = []
    aware = rack_aware and len(with_rack) == len(targets)
    if rack_aware and 0 < len(with_rack) < len(targets):
        without = [b for b in targets if target_racks[b] is None]
        warnings.append(
            f"broker(s) {_ids(without)} have no rack while others do: planned rack-unaware "
            "(as Kafka's --disable-rack-aware)"
        )
    return Request(operation, named, targets, target_racks, aware, warnings)
