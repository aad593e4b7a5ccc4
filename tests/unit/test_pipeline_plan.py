"""The movement-minimal planner (``migrate.planner``), judged by an independent checker
(``tests/plancheck.py``): every operation on small and medium layouts (racks and none, RF 1-3, unequal racks,
skew, unregistered brokers, rack-violating partitions, RF = racks, RF > racks), hypothesis on small random
layouts, an exhaustive search on tiny ones, waves, plan files, and refused requests."""

from __future__ import annotations

import itertools
import random
from collections import Counter
from collections.abc import Mapping
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from migrate.pipeline.outputs import write_plan_files
from migrate.planner import Layout, Plan, PlanRequestError, lower_bound, plan, reach
from migrate.planner.model import index_layout
from migrate.reassign.plan_files import parse_reassignment, read_text
from migrate.reassign.waves import participants
from migrate.snapshot.synthetic import ClusterSpec, cluster_znodes
from tests import plancheck
from zkmodel.brokers import BrokerRegistration
from zkmodel.placement import BrokerMetadata, assign_replicas_to_brokers
from zkmodel.topics import TopicAssignment

TP = tuple[str, int]

# -- layouts ----------------------------------------------------------------------------------------------------


def kafka_layout(
    brokers: int, racks: int, topics: int, partitions: int, rf: int, seed: int = 0, first_id: int = 1
) -> Layout:
    """Placed as Kafka places new topics (AdminUtils, rack-aware when racks): balanced."""
    rng = random.Random(seed)
    ids = range(first_id, first_id + brokers)
    metas = [BrokerMetadata(b, f"r{b % racks}" if racks else None) for b in ids]
    assignment: dict[TP, tuple[int, ...]] = {}
    for t in range(topics):
        for p, replicas in assign_replicas_to_brokers(metas, partitions, rf, rng=rng).items():
            assignment[(f"t{t}", p)] = tuple(replicas)
    return Layout({m.id: m.rack for m in metas}, assignment)


def skewed_layout(brokers: int, racks: int, partitions: int, rf: int, hot: float, seed: int = 0) -> Layout:
    """A share ``hot`` of the partitions on the first third of the brokers, one replica per rack where the racks
    allow; the rest spread at random (rack-valid)."""
    rng = random.Random(seed)
    ids = list(range(1, brokers + 1))
    rack_of = {b: (f"r{b % racks}" if racks else None) for b in ids}
    pool_hot = ids[: max(rf, brokers // 3)]
    assignment: dict[TP, tuple[int, ...]] = {}
    for p in range(partitions):
        pool = pool_hot if rng.random() < hot else ids
        while True:
            replicas = rng.sample(pool, rf)
            if not racks or len({rack_of[b] for b in replicas}) == min(rf, racks) or pool is pool_hot:
                break
        assignment[(f"t{p % 7}", p // 7)] = tuple(replicas)
    return Layout(rack_of, assignment)


def synthetic_layout(spec: ClusterSpec) -> Layout:
    """A layout decoded from the synthetic cluster's znodes (the pipeline's own input format)."""
    brokers: dict[int, str | None] = {}
    assignment: dict[TP, tuple[int, ...]] = {}
    for path, data, _ephemeral in cluster_znodes(spec):
        parts = path.split("/")
        if len(parts) == 4 and parts[1:3] == ["brokers", "ids"]:
            brokers[int(parts[3])] = BrokerRegistration.decode(path, data).rack
        elif len(parts) == 4 and parts[1:3] == ["brokers", "topics"]:
            for p, replicas in TopicAssignment.decode(path, data).partitions.items():
                assignment[(parts[3], p)] = tuple(replicas)
    return Layout(brokers, assignment)


def with_assignment(layout: Layout, changes: Mapping[TP, tuple[int, ...]]) -> Layout:
    return Layout(layout.brokers, {**layout.assignment, **changes})


def scrambled(layout: Layout, share: float, seed: int) -> Layout:
    """A share of the partitions re-placed on random registered brokers, racks ignored (rack violations)."""
    rng = random.Random(seed)
    ids = sorted(layout.brokers)
    changes = {
        tp: tuple(rng.sample(ids, len(r))) for tp, r in sorted(layout.assignment.items()) if rng.random() < share
    }
    return with_assignment(layout, changes)


# -- the invariants every plan must meet ------------------------------------------------------------------------


def checked(layout: Layout, operation: str, **kwargs: Any) -> Plan:
    """Plan, then verify it with the independent checker and recount everything it reports."""
    result = plan(layout, operation, **kwargs)
    before, after = layout.assignment, result.assignment
    found = plancheck.check(before, after, result.targets, result.racks, result.rack_aware)
    assert plancheck.keys(found) == plancheck.keys(result.violations), (found, result.violations)
    assert set(after) == set(before)
    assert result.moves == plancheck.moves(before, after)
    if not any(v.startswith(("replicas", "rack", "target")) for v in result.violations):
        assert result.moves >= result.lower_bound  # a bound on valid plans only
    assert result.lower_bound == lower_bound(layout, result.targets, result.racks, result.rack_aware)
    assert result.changed == {tp: r for tp, r in after.items() if tuple(r) != tuple(before[tp])}
    assert result.current == {tp: tuple(before[tp]) for tp in result.changed}
    assert all(isinstance(r, tuple) for r in result.changed.values())
    keys = set(result.targets) | {b for r in before.values() for b in r}
    count = Counter(b for r in before.values() for b in r)
    assert result.before == {b: count[b] for b in keys}
    count = Counter(b for r in after.values() for b in r)
    assert result.after == {b: count[b] for b in keys}
    lead = Counter(r[0] for r in before.values())
    assert result.leaders_before == {b: lead[b] for b in keys}
    lead = Counter(r[0] for r in after.values())
    assert result.leaders_after == {b: lead[b] for b in keys}
    assert result.leader_changes == sum(1 for tp in before if before[tp][0] != after[tp][0])
    for tp, replicas in result.changed.items():
        # a new replica takes the slot of the one it replaces and leaders move to the front, so apart from the
        # first replica, the kept ones keep their order
        first = replicas[0]
        assert [b for b in replicas[1:] if b in before[tp]] == [b for b in before[tp] if b in replicas and b != first]
    return result


def near_bound(result: Plan) -> bool:
    return result.moves <= 1.05 * result.lower_bound


# -- the checker itself -----------------------------------------------------------------------------------------

GOOD_BEFORE: dict[TP, tuple[int, ...]] = {("a", 0): (1, 2), ("a", 1): (2, 3), ("a", 2): (3, 4), ("a", 3): (4, 1)}
RACKS = {1: "x", 2: "y", 3: "x", 4: "y"}


def test_checker_passes_a_good_plan_and_counts_moves() -> None:
    after = dict(GOOD_BEFORE)
    assert plancheck.check(GOOD_BEFORE, after, [1, 2, 3, 4], RACKS, True) == []
    assert plancheck.moves(GOOD_BEFORE, after) == 0
    moved = {**after, ("a", 0): (2, 3)}
    assert plancheck.moves(GOOD_BEFORE, moved) == 1


@pytest.mark.parametrize(
    ("after", "targets", "expected"),
    [
        ({**GOOD_BEFORE, ("a", 0): (1, 1)}, [1, 2, 3, 4], {"duplicate partition a-0", "rack partition a-0"}),
        ({**GOOD_BEFORE, ("a", 0): (1, 2, 3)}, [1, 2, 3, 4], {"rf partition a-0"}),
        ({**GOOD_BEFORE, ("a", 0): (5, 2)}, [1, 2, 3, 4], {"target partition a-0", "replicas broker 1"}),
        ({**GOOD_BEFORE, ("a", 0): (1, 3)}, [1, 2, 3, 4], {"rack partition a-0", "replicas broker 2"}),
        ({k: v for k, v in GOOD_BEFORE.items() if k != ("a", 3)}, [1, 2, 3, 4], "missing"),
        ({**GOOD_BEFORE, ("b", 0): (1, 2)}, [1, 2, 3, 4], "extra"),
        (
            {**GOOD_BEFORE, ("a", 1): (1, 3)},
            [1, 2, 3, 4],
            {"leaders broker 1", "leaders broker 2", "rack partition a-1"},
        ),
        ({**GOOD_BEFORE, ("a", 1): (3, 2), ("a", 2): (4, 1)}, [1, 2, 3, 4], {"replicas broker 3", "replicas broker 1"}),
    ],
)
def test_checker_catches_each_kind_of_violation(
    after: dict[TP, tuple[int, ...]], targets: list[int], expected: set[str] | str
) -> None:
    found = plancheck.keys(plancheck.check(GOOD_BEFORE, after, targets, RACKS, True))
    if expected == "missing":
        assert "partitions partition a-3" in found
    elif expected == "extra":
        assert "partitions partition b-0" in found
    else:
        assert isinstance(expected, set) and expected <= found, found


def test_checker_rack_rule_needs_every_target_racked_and_allows_rf_above_racks() -> None:
    after = {**GOOD_BEFORE, ("a", 0): (1, 3)}  # both in rack x
    assert "rack partition a-0" in plancheck.keys(plancheck.check(GOOD_BEFORE, after, [1, 2, 3, 4], RACKS, True))
    for racks, aware in ((RACKS, False), ({1: "x", 2: None, 3: "x", 4: "y"}, True)):
        found = plancheck.check(GOOD_BEFORE, after, [1, 2, 3, 4], racks, aware)
        assert not any(v.startswith("rack") for v in found)
    three = {("a", 0): (1, 2, 3)}  # RF 3 over two racks: both racks is enough
    assert plancheck.check(three, {("a", 0): (1, 3, 2)}, [1, 2, 3], RACKS, True) == []
    found = plancheck.check(three, {("a", 0): (1, 3, 4)}, [1, 2, 3, 4], {1: "x", 2: "y", 3: "x", 4: "x"}, True)
    assert "rack partition a-0" in plancheck.keys(found)


# -- operations on generated layouts ----------------------------------------------------------------------------

BALANCED = kafka_layout(brokers=12, racks=4, topics=6, partitions=50, rf=3)
NO_RACKS = kafka_layout(brokers=7, racks=0, topics=5, partitions=40, rf=2, seed=1)
RF1 = kafka_layout(brokers=9, racks=3, topics=4, partitions=30, rf=1, seed=2)
SKEWED = skewed_layout(brokers=16, racks=4, partitions=1200, rf=3, hot=0.4, seed=3)
SKEWED_NO_RACKS = skewed_layout(brokers=10, racks=0, partitions=800, rf=2, hot=0.5, seed=4)
EQUAL_RF_RACKS = kafka_layout(brokers=9, racks=3, topics=4, partitions=60, rf=3, seed=5)
# more than 40 brokers: movers go to groups of brokers instead of single brokers
WIDE_NO_RACKS = skewed_layout(brokers=48, racks=0, partitions=3000, rf=3, hot=0.3, seed=6)
WIDE_TWO_RACKS = skewed_layout(brokers=48, racks=2, partitions=3000, rf=3, hot=0.3, seed=7)


@pytest.mark.parametrize(
    ("layout", "operation", "kwargs"),
    [
        (BALANCED, "rebalance", {}),
        (BALANCED, "decommission", {"brokers": [1]}),
        (BALANCED, "decommission", {"brokers": [1, 5]}),
        (BALANCED, "add-brokers", {"brokers": [13], "racks": {13: "r1"}}),
        (BALANCED, "add-brokers", {"brokers": [13, 14, 15], "racks": {13: "r0", 14: "r1", 15: "r2"}}),
        (NO_RACKS, "rebalance", {}),
        (NO_RACKS, "decommission", {"brokers": [3]}),
        (NO_RACKS, "add-brokers", {"brokers": [8, 9]}),
        (RF1, "decommission", {"brokers": [2, 4]}),
        (RF1, "add-brokers", {"brokers": [10], "racks": {10: "r0"}}),
        (SKEWED, "rebalance", {}),
        (SKEWED, "decommission", {"brokers": [2]}),
        (SKEWED, "add-brokers", {"brokers": [17, 18], "racks": {17: "r1", 18: "r2"}}),
        (SKEWED_NO_RACKS, "rebalance", {}),
        (SKEWED_NO_RACKS, "decommission", {"brokers": [1, 2]}),
        (EQUAL_RF_RACKS, "rebalance", {}),
        (EQUAL_RF_RACKS, "add-brokers", {"brokers": [10, 11, 12], "racks": {10: "r0", 11: "r1", 12: "r2"}}),
        (SKEWED, "rebalance", {"rack_aware": False}),
        (WIDE_NO_RACKS, "rebalance", {}),
        (WIDE_NO_RACKS, "decommission", {"brokers": [5, 6, 7]}),
        (WIDE_TWO_RACKS, "decommission", {"brokers": [5]}),
    ],
)
def test_operations_are_valid_and_near_the_bound(layout: Layout, operation: str, kwargs: dict[str, Any]) -> None:
    result = checked(layout, operation, **kwargs)
    assert result.violations == []
    assert near_bound(result), (result.moves, result.lower_bound)
    if operation == "decommission":
        assert all(result.after[b] == 0 for b in kwargs["brokers"])
    assert result.kafka_generate_moves is not None and result.kafka_generate_moves >= result.moves


def test_a_rebalanced_cluster_needs_no_further_change() -> None:
    first = checked(BALANCED, "rebalance")
    assert first.moves == first.lower_bound
    again = checked(Layout(BALANCED.brokers, first.assignment), "rebalance")
    assert again.moves == again.lower_bound == 0
    assert again.changed == {} and again.leader_changes == 0


def test_fix_racks_moves_what_the_new_racks_break() -> None:
    # brokers 1 and 2 swap racks: partitions holding one of them next to a broker of its new rack break
    result = checked(BALANCED, "fix-racks", racks={1: "r2", 2: "r1"})
    assert result.violations == []
    assert result.racks[1] == "r2" and result.racks[2] == "r1"
    assert result.brokers == [1, 2]
    assert result.moves > 0 and near_bound(result)


def test_synthetic_skewed_cluster() -> None:
    layout = synthetic_layout(
        ClusterSpec(brokers=12, racks=4, topics=40, min_partitions=5, max_partitions=30, skew=0.3, seed=7)
    )
    for operation, kwargs in (("rebalance", {}), ("decommission", {"brokers": [1, 6]})):
        result = checked(layout, operation, **kwargs)
        assert result.violations == []
        assert near_bound(result), (operation, result.moves, result.lower_bound)


def test_unregistered_brokers_are_drained() -> None:
    changes = {("t0", p): (99, *BALANCED.assignment[("t0", p)][1:]) for p in range(10)}
    changes[("t1", 0)] = (98, 97, BALANCED.assignment[("t1", 0)][0])
    layout = with_assignment(BALANCED, changes)
    result = checked(layout, "rebalance")
    assert result.violations == []
    assert {99, 98, 97} <= set(result.before) and all(result.after[b] == 0 for b in (97, 98, 99))
    assert result.moves == result.lower_bound  # every forced replica is one move, nothing else needed
    # an unregistered broker may be named for decommission too (it holds replicas)
    assert checked(layout, "decommission", brokers=[99]).violations == []


def test_rack_violating_partitions_are_repaired() -> None:
    # put two or three replicas of some partitions in one rack (r1 = brokers 1, 5, 9)
    changes = {("t2", p): (1, 5, 2 + p % 2) for p in range(8)}
    changes[("t3", 0)] = (1, 5, 9)
    layout = with_assignment(BALANCED, changes)
    result = checked(layout, "rebalance")
    assert result.violations == []
    assert result.moves == result.lower_bound


def test_unequal_racks_with_rf_equal_to_racks_are_held_to_their_racks_averages() -> None:
    # racks of 4, 2 and 2 brokers, RF 3: each rack holds one replica of every partition, so the pairs carry 40
    # per broker and the four 20: the cluster-wide band [30, 30] is out of reach, each rack's own average is not
    racks = {1: "a", 2: "a", 3: "a", 4: "a", 5: "b", 6: "b", 7: "c", 8: "c"}
    rng = random.Random(9)
    assignment = {("t", p): (rng.choice([1, 2, 3, 4]), rng.choice([5, 6]), rng.choice([7, 8])) for p in range(80)}
    result = checked(Layout(racks, assignment), "rebalance")
    assert result.violations == []
    assert [result.after[b] for b in range(1, 9)] == [20] * 4 + [40] * 4
    assert result.moves == result.lower_bound


# -- the reachable band: racks the rule makes unequal ------------------------------------------------------------


def planner_band(layout: Layout, result: Plan) -> dict[int, tuple[int, int]]:
    ix = index_layout(layout.assignment, result.targets, result.racks, result.rack_aware)
    lo, hi = ix.band
    return {int(ix.ids[i]): (int(lo[i]), int(hi[i])) for i in np.flatnonzero(ix.target).tolist()}


def held_to_band(layout: Layout, result: Plan) -> dict[int, tuple[int, int]]:
    """The independent checker's band; the planner's must be the same, and every broker inside it."""
    band = plancheck.reachable_band(layout.assignment, result.targets, result.racks, result.rack_aware)
    assert planner_band(layout, result) == band
    assert all(band[b][0] <= result.after[b] <= band[b][1] for b in result.targets), (band, result.after)
    return band


def rack_average_band(layout: Layout, result: Plan) -> dict[int, tuple[int, int]]:
    """Floor and ceiling of each rack's average, for RF >= racks (every rack's total is fixed)."""
    total = {r: 0 for r in set(result.racks.values())}
    for replicas in layout.assignment.values():
        for rack in {result.racks[b] for b in result.targets}:
            total[rack] += len(replicas) // len(total)  # RF a multiple of the racks in these cases
    size = Counter(result.racks[b] for b in result.targets)
    return {b: (total[r] // size[r], -(-total[r] // size[r])) for b in result.targets if (r := result.racks[b])}


# 12 brokers in 3 racks (b % 3), RF 3: ~1,840 partitions, the cluster
THREE_RACKS_RF3 = kafka_layout(brokers=12, racks=3, topics=20, partitions=92, rf=3, seed=30)
TWO_RACKS_RF2 = kafka_layout(brokers=6, racks=2, topics=20, partitions=92, rf=2, seed=31)


@pytest.mark.parametrize(
    ("layout", "operation", "kwargs"),
    [
        # RF = racks, racks made unequal by a decommission (one broker from each of two racks) or an addition
        (THREE_RACKS_RF3, "decommission", {"brokers": [1, 2]}),
        (THREE_RACKS_RF3, "decommission", {"brokers": [1]}),
        (THREE_RACKS_RF3, "add-brokers", {"brokers": [13], "racks": {13: "r0"}}),
        (THREE_RACKS_RF3, "add-brokers", {"brokers": [13, 14], "racks": {13: "r0", 14: "r0"}}),
        (TWO_RACKS_RF2, "decommission", {"brokers": [1]}),
        (TWO_RACKS_RF2, "add-brokers", {"brokers": [7], "racks": {7: "r1"}}),
        # RF > racks: a whole rack emptied leaves RF 3 over two racks
        (THREE_RACKS_RF3, "decommission", {"brokers": [3, 6, 9, 12]}),
    ],
)
def test_rf_at_least_racks_holds_each_broker_within_one_of_its_racks_average(
    layout: Layout, operation: str, kwargs: dict[str, Any]
) -> None:
    result = checked(layout, operation, **kwargs)
    assert result.violations == []
    band = held_to_band(layout, result)
    n_racks = len({result.racks[b] for b in result.targets})
    if all(len(r) % n_racks == 0 for r in layout.assignment.values()):
        assert band == rack_average_band(layout, result)
        assert len(set(band.values())) > 1  # the racks really are unequal: no single cluster-wide band
    else:  # RF 3 over two racks of 4: either rack may take 1 or 2 of each partition, so Kafka's band holds
        total = 3 * len(layout.assignment)
        assert set(band.values()) == {(total // 8, -(-total // 8))}
    assert near_bound(result), (result.moves, result.lower_bound)
    assert result.kafka_generate_moves is not None and result.kafka_generate_moves >= result.moves


def test_a_plan_balanced_within_its_racks_needs_nothing_more() -> None:
    # the bound is against the same band: after the decommission the racks of 3 and 4 are as even as they can
    # be, so a rebalance has nothing to do (against Kafka's band it would have had to move hundreds)
    first = checked(THREE_RACKS_RF3, "decommission", brokers=[1, 2])
    remaining = {b: r for b, r in THREE_RACKS_RF3.brokers.items() if b not in (1, 2)}
    again = checked(Layout(remaining, first.assignment), "rebalance")
    assert again.violations == [] and again.lower_bound == again.moves == 0 and again.leader_changes == 0


def test_rf_above_racks_with_unequal_racks() -> None:
    # RF 3 over racks of 3 and 4 brokers: each partition puts 1 or 2 replicas in either rack, so 3P/7 per
    # broker everywhere is reachable -- cluster-wide after all
    layout = kafka_layout(brokers=7, racks=0, topics=6, partitions=35, rf=3, seed=32)
    racks = {b: ("a" if b <= 3 else "b") for b in layout.brokers}
    rng = random.Random(33)
    assignment = {tp: (rng.choice([1, 2, 3]), *rng.sample(range(4, 8), 2)) for tp in layout.assignment}
    result = checked(Layout(racks, assignment), "rebalance")
    assert result.violations == []
    total = 3 * len(assignment)
    assert set(held_to_band(Layout(racks, assignment), result).values()) == {(total // 7, -(-total // 7))}
    # racks of 2 and 5: the five hold at most 2 of each partition (2P/5 per broker, below 3P/7), the pair the rest
    racks = {b: ("a" if b <= 2 else "b") for b in layout.brokers}
    assignment = {tp: (rng.choice([1, 2]), *rng.sample(range(3, 8), 2)) for tp in layout.assignment}
    result = checked(Layout(racks, assignment), "rebalance")
    assert result.violations == []
    band = held_to_band(Layout(racks, assignment), result)
    p = len(assignment)
    assert band[1] == (p // 2, -(-p // 2)) and band[3] == (2 * p // 5, -(-2 * p // 5))
    # racks of 1 and 6: the lone broker holds at most one replica of each partition (P), below 3P/7 -- its
    # band is [P, P] and the six share the rest
    racks = {b: ("a" if b == 1 else "b") for b in layout.brokers}
    assignment = {tp: (1, *rng.sample(range(2, 8), 2)) for tp in layout.assignment}
    result = checked(Layout(racks, assignment), "rebalance")
    assert result.violations == []
    band = held_to_band(Layout(racks, assignment), result)
    p = len(assignment)
    assert band[1] == (p, p) and band[2] == (2 * p // 6, -(-2 * p // 6))


def test_rf_below_racks_stays_cluster_wide() -> None:
    # 30 brokers in 5 racks, RF 3: any rack can take any share, so Kafka's band holds even after removing two
    # brokers of one rack
    layout = kafka_layout(brokers=30, racks=5, topics=10, partitions=60, rf=3, seed=34)
    result = checked(layout, "decommission", brokers=[5, 10])
    assert result.violations == []
    band = held_to_band(layout, result)
    total = 3 * len(layout.assignment)
    assert set(band.values()) == {(total // 28, -(-total // 28))}
    assert near_bound(result)


def test_single_broker_racks() -> None:
    # racks of 1, 1 and 4 brokers: the four hold at most one replica of each partition, P/4 per broker, below the
    # cluster-wide average (RF 2: 2P/6); the lone brokers share the rest, P/2 each with RF 2, P each with RF 3
    brokers = {1: "a", 2: "b", 3: "c", 4: "c", 5: "c", 6: "c"}
    rng = random.Random(35)
    for rf in (2, 3):
        assignment: dict[TP, tuple[int, ...]] = {}
        for p in range(90):
            racks = rng.sample(["a", "b", "c"], rf)
            assignment[("t", p)] = tuple(rng.choice([b for b, r in brokers.items() if r == rack]) for rack in racks)
        layout = Layout(brokers, assignment)
        result = checked(layout, "rebalance")
        assert result.violations == []
        band = held_to_band(layout, result)
        assert band[1] == band[2] == ((90, 90) if rf == 3 else (45, 45))
        assert band[3] == (22, 23)
        assert near_bound(result)


def test_a_rack_emptied_entirely() -> None:
    # RF 2 over 3 racks; rack r0 (3, 6, 9, 12) decommissioned: every partition then spans both remaining racks
    layout = kafka_layout(brokers=12, racks=3, topics=10, partitions=60, rf=2, seed=36)
    result = checked(layout, "decommission", brokers=[3, 6, 9, 12])
    assert result.violations == []
    held_to_band(layout, result)
    assert near_bound(result)
    # and with the remaining racks unequal (one more broker of r1 gone): each rack holds one replica of every
    # partition, so the rack of 3 carries P/3 and the rack of 4 P/4
    result = checked(layout, "decommission", brokers=[3, 6, 9, 12, 1])
    assert result.violations == []
    band = held_to_band(layout, result)
    p = len(layout.assignment)
    assert band[4] == (p // 3, -(-p // 3)) and band[2] == (p // 4, -(-p // 4))
    assert near_bound(result)


@st.composite
def rack_shapes(draw: st.DrawFn) -> tuple[dict[int, int], list[int]]:
    sizes = draw(st.lists(st.integers(1, 6), min_size=1, max_size=6))
    rf_counts = draw(st.dictionaries(st.integers(1, 5), st.integers(1, 400), min_size=1, max_size=3))
    return rf_counts, sizes


@settings(max_examples=120, deadline=None)
@given(rack_shapes())
def test_reach_agrees_with_the_checkers_linear_program(shape: tuple[dict[int, int], list[int]]) -> None:
    """Two computations of the rack averages: exact subset peeling (planner) and LP progressive filling
    (independent checker)."""
    rf_counts, sizes = shape
    if max(rf_counts) > sum(sizes):
        return
    exact = reach.rack_averages(rf_counts, sizes)
    assert exact is not None
    lp = plancheck.rack_averages(rf_counts, {f"r{i}": n for i, n in enumerate(sizes)})
    for i, a in enumerate(exact):
        assert abs(float(a) - lp[f"r{i}"]) < 1e-6 * max(1.0, float(a)), (exact, lp)
    assert sum(a * n for a, n in zip(exact, sizes, strict=True)) == sum(r * c for r, c in rf_counts.items())


def test_reach_many_racks_without_rf_above_them_is_exact() -> None:
    # 20 racks (above EXACT_RACKS): RF <= racks, so the k largest racks are the best set of each size
    sizes = [1] * 10 + [5] * 10
    averages = reach.rack_averages({3: 1000}, sizes)
    assert averages is not None
    assert averages == [Fraction(3000, 60)] * 20  # 50 per broker reachable everywhere (a lone broker takes <= P)
    averages = reach.rack_averages({20: 100}, sizes)  # RF = racks: every rack holds one replica of each
    assert averages == [Fraction(100, 1)] * 10 + [Fraction(20, 1)] * 10
    assert reach.rack_averages({21: 10}, sizes) is None  # RF above 20 racks: not computed, cluster-wide


def test_rf_above_the_number_of_racks_keeps_every_rack() -> None:
    layout = kafka_layout(brokers=8, racks=2, topics=5, partitions=30, rf=3, seed=11)
    changes = {("t0", p): (2, 4, 6) for p in range(5)}  # all in rack r0
    layout = with_assignment(layout, changes)
    for operation, kwargs in (("rebalance", {}), ("decommission", {"brokers": [1]})):
        result = checked(layout, operation, **kwargs)
        assert result.violations == [], result.violations
        assert result.moves <= 1.1 * result.lower_bound + 2


def test_mixed_replication_factors() -> None:
    a = kafka_layout(brokers=10, racks=5, topics=3, partitions=40, rf=1, seed=12)
    b = kafka_layout(brokers=10, racks=5, topics=3, partitions=40, rf=3, seed=13)
    layout = Layout(a.brokers, {**a.assignment, **{(f"u{t}", p): r for (t, p), r in b.assignment.items()}})
    result = checked(layout, "decommission", brokers=[3])
    assert result.violations == []
    assert near_bound(result)


def test_partial_racks_plan_rack_unaware_with_a_warning() -> None:
    brokers = dict(NO_RACKS.brokers)
    brokers[1] = "r1"
    result = checked(Layout(brokers, NO_RACKS.assignment), "decommission", brokers=[2])
    assert not result.rack_aware
    assert any("no rack" in w for w in result.warnings)
    assert checked(BALANCED, "rebalance", rack_aware=False).rack_aware is False


def test_leaders_are_balanced_by_reordering_only() -> None:
    # every partition led by broker 1 or 2: lists reordered, no replica moved
    layout = kafka_layout(brokers=6, racks=0, topics=2, partitions=30, rf=3, seed=14)
    changes = {}
    for tp, replicas in layout.assignment.items():
        lead = 1 if 1 in replicas else (2 if 2 in replicas else replicas[0])
        changes[tp] = (lead, *[b for b in replicas if b != lead])
    layout = with_assignment(layout, changes)
    result = checked(layout, "rebalance")
    assert result.violations == [] and result.moves == 0
    assert result.leader_changes > 0
    for tp, replicas in result.changed.items():
        assert set(replicas) == set(layout.assignment[tp])


def test_plans_are_deterministic_and_ignore_dict_order() -> None:
    first = plan(SKEWED, "decommission", brokers=[2], compare_kafka=False)
    shuffled = list(SKEWED.assignment.items())
    random.Random(1).shuffle(shuffled)
    second = plan(Layout(SKEWED.brokers, dict(shuffled)), "decommission", brokers=[2], compare_kafka=False)
    assert first.assignment == second.assignment
    assert first.kafka_generate_moves is None


# -- lower bound ------------------------------------------------------------------------------------------------


def test_lower_bound_by_hand() -> None:
    layout = Layout({1: "a", 2: "b", 3: "a", 4: "b"}, {("t", 0): (1, 3), ("t", 1): (1, 2), ("t", 2): (5, 1)})
    # balance: forced 1 (broker 5) + excess over U=2 (broker 1 has 3) = 2; shortfall below L=1: broker 4 = 1
    # per partition: t-0 has both replicas in rack a (deficit 1), t-2 one forced -> 2
    assert lower_bound(layout, [1, 2, 3, 4], layout.brokers, True) == 2
    assert lower_bound(layout, [1, 2, 3, 4], layout.brokers, False) == 2
    # decommission 1 and 2: forced 5 replicas... t-0 loses 1, t-1 loses both, t-2 both
    assert lower_bound(layout, [3, 4], layout.brokers, True) == 5


# -- hypothesis: small random layouts ---------------------------------------------------------------------------


@st.composite
def small_requests(draw: st.DrawFn) -> tuple[Layout, str, dict[str, Any]]:
    n = draw(st.integers(2, 8))
    rack_mode = draw(st.sampled_from(["all", "none", "some"]))
    n_racks = draw(st.integers(1, 4))
    brokers: dict[int, str | None] = {}
    for b in range(1, n + 1):
        has = rack_mode == "all" or (rack_mode == "some" and draw(st.booleans()))
        brokers[b] = f"r{draw(st.integers(0, n_racks - 1))}" if has else None
    pool = list(range(1, n + 3))  # two ids beyond the registered ones: unregistered brokers
    rf = draw(st.integers(1, min(3, n)))
    assignment: dict[TP, tuple[int, ...]] = {}
    for t in range(draw(st.integers(1, 3))):
        for p in range(draw(st.integers(1, 8))):
            k = draw(st.integers(1, rf))
            assignment[(f"t{t}", p)] = tuple(draw(st.permutations(pool))[:k])
    operation = draw(st.sampled_from(["rebalance", "decommission", "add-brokers", "fix-racks"]))
    kwargs: dict[str, Any] = {"rack_aware": draw(st.booleans()), "compare_kafka": False}
    if operation == "decommission":
        kwargs["brokers"] = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=2, unique=True))
    elif operation == "add-brokers":
        new = draw(st.lists(st.integers(n + 3, n + 5), min_size=1, max_size=2, unique=True))
        kwargs["brokers"] = new
        kwargs["racks"] = {b: f"r{draw(st.integers(0, n_racks - 1))}" for b in new if draw(st.booleans())}
    elif operation == "fix-racks":
        kwargs["racks"] = {b: f"r{draw(st.integers(0, n_racks))}" for b in draw(st.sets(st.integers(1, n), min_size=1))}
    if draw(st.booleans()):
        kwargs["max_moves_per_broker"] = draw(st.integers(1, 3))
    return Layout(brokers, assignment), operation, kwargs


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_requests())
def test_random_small_layouts(request: tuple[Layout, str, dict[str, Any]]) -> None:
    layout, operation, kwargs = request
    try:
        result = checked(layout, operation, **kwargs)
    except PlanRequestError as exc:
        assert str(exc)
        return
    again = plan(layout, operation, **kwargs)
    assert again.assignment == result.assignment and again.waves == result.waves
    assert_waves(layout, result, kwargs.get("max_moves_per_broker"))


# -- exhaustive search on tiny layouts --------------------------------------------------------------------------


def fewest_moves(layout: Layout, result: Plan) -> int | None:
    """The fewest moves of any assignment meeting constraints 1-3 (leaders are reordering only; the band is the
    reachable one, by the independent checker), or None."""
    targets = result.targets
    racks = result.racks
    aware = result.rack_aware
    n_racks = len({racks[b] for b in targets}) if aware else 0
    tps = sorted(layout.assignment)
    band = plancheck.reachable_band(layout.assignment, targets, racks, aware)
    options = []
    for tp in tps:
        rf = len(layout.assignment[tp])
        sets = [
            c
            for c in itertools.combinations(targets, rf)
            if not aware or len({racks[b] for b in c}) >= min(rf, n_racks)
        ]
        options.append(sets)
    best: int | None = None
    for choice in itertools.product(*options):
        counts = Counter(b for c in choice for b in c)
        if all(band[b][0] <= counts[b] <= band[b][1] for b in targets):
            m = sum(len(set(c) - set(layout.assignment[tp])) for c, tp in zip(choice, tps, strict=True))
            best = m if best is None else min(best, m)
    return best


def tiny_cases() -> list[tuple[Layout, str, dict[str, Any]]]:
    rng = random.Random(2024)
    cases: list[tuple[Layout, str, dict[str, Any]]] = []
    while len(cases) < 120:
        n = rng.randint(3, 5)
        racked = rng.random() < 0.6
        n_racks = rng.randint(2, 3)
        brokers = {b: (f"r{rng.randrange(n_racks)}" if racked else None) for b in range(1, n + 1)}
        rf = rng.randint(1, min(3, n - 1))
        pool = list(range(1, n + 2))
        assignment = {("t", p): tuple(rng.sample(pool, rf)) for p in range(rng.randint(2, 4))}
        layout = Layout(brokers, assignment)
        operation = rng.choice(["rebalance", "decommission", "add-brokers"])
        kwargs: dict[str, Any] = {"compare_kafka": False}
        if operation == "decommission":
            kwargs["brokers"] = [rng.randint(1, n)]
        elif operation == "add-brokers":
            kwargs["brokers"] = [n + 2]
            kwargs["racks"] = {n + 2: f"r{rng.randrange(n_racks)}"} if racked else {}
        try:
            plan(layout, operation, **kwargs)
        except PlanRequestError:
            continue
        cases.append((layout, operation, kwargs))
    return cases


def test_tiny_layouts_match_an_exhaustive_search() -> None:
    """The planner makes the fewest moves of any valid plan -- exactly, except where a partition has more
    replicas than there are racks: there one replica per rack is kept as an anchor (the flow stays a flow),
    which can cost moves; those cases must still be valid and at least the true minimum."""
    exact = anchored = 0
    for layout, operation, kwargs in tiny_cases():
        result = checked(layout, operation, **kwargs)
        best = fewest_moves(layout, result)
        hard = [v for v in result.violations if not v.startswith("leaders")]
        assert best is not None, "the reachable band is reachable by definition"
        assert best >= result.lower_bound
        assert hard == [], (layout, operation, kwargs, result.violations)
        n_racks = len({result.racks[b] for b in result.targets}) if result.rack_aware else 0
        above = result.rack_aware and any(len(r) > n_racks for r in layout.assignment.values())
        if above:
            assert result.moves >= best
            anchored += result.moves > best
        else:
            assert result.moves == best, (layout, operation, kwargs, result.moves, best)
            exact += 1
    assert exact >= 60


def cp_sat_fewest_moves(layout: Layout, result: Plan) -> int:
    """The proven fewest moves meeting constraints 1-3, by CP-SAT (one boolean per partition and target)."""
    from ortools.sat.python import cp_model

    targets, racks = result.targets, result.racks
    n_racks = len({racks[b] for b in targets}) if result.rack_aware else 0
    band = plancheck.reachable_band(layout.assignment, targets, racks, result.rack_aware)
    model = cp_model.CpModel()
    x = {(tp, b): model.new_bool_var(f"{tp}{b}") for tp in layout.assignment for b in targets}
    for tp, replicas in layout.assignment.items():
        model.add(sum(x[tp, b] for b in targets) == len(replicas))
        for r in {racks[b] for b in targets} if n_racks >= 2 else ():
            in_rack = sum(x[tp, b] for b in targets if racks[b] == r)
            if len(replicas) <= n_racks:
                model.add(in_rack <= 1)  # one replica per rack
            else:
                model.add(in_rack >= 1)  # every rack covered
    for b in targets:
        model.add_linear_constraint(sum(x[tp, b] for tp in layout.assignment), *band[b])
    model.minimize(sum(v for (tp, b), v in x.items() if b not in layout.assignment[tp]))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = 20
    solver.parameters.num_workers = 2
    assert solver.solve(model) == cp_model.OPTIMAL
    return int(solver.objective_value)


@pytest.mark.parametrize("seed", [1, 2])
def test_medium_layouts_match_cp_sat_where_the_bound_is_not_tight(seed: int) -> None:
    """Rack-violating partitions make the bound loose; CP-SAT proves the planner's count is still the fewest."""
    cases: list[tuple[Layout, str, dict[str, Any]]] = [
        (
            scrambled(skewed_layout(brokers=12, racks=4, partitions=300, rf=3, hot=0.2, seed=seed), 0.1, seed),
            "rebalance",
            {},
        ),
        (
            scrambled(kafka_layout(brokers=15, racks=5, topics=3, partitions=80, rf=2, seed=seed), 0.1, seed),
            "decommission",
            {"brokers": [4]},
        ),
        (
            scrambled(skewed_layout(brokers=10, racks=2, partitions=240, rf=3, hot=0.3, seed=seed), 0.1, seed),
            "add-brokers",
            {"brokers": [11], "racks": {11: "r1"}},
        ),
        (
            kafka_layout(brokers=16, racks=4, topics=4, partitions=75, rf=3, seed=22),
            "fix-racks",
            {"racks": {1: "r2", 2: "r3", 3: "r0"}},
        ),
    ]
    above = 0
    for layout, operation, kwargs in cases:
        result = checked(layout, operation, compare_kafka=False, **kwargs)
        assert result.violations == []
        assert result.moves == cp_sat_fewest_moves(layout, result), (operation, result.moves, result.lower_bound)
        above += result.moves > result.lower_bound
    assert above >= 2  # the point of the test: cases where the bound alone cannot vouch for the plan


# -- waves and files --------------------------------------------------------------------------------------------


def assert_waves(layout: Layout, result: Plan, cap: int | None) -> None:
    if cap is None:
        assert result.waves == []
        return
    flat = [tp for wave in result.waves for tp in wave]
    assert sorted(flat) == sorted(result.changed) and len(flat) == len(set(flat))
    for wave in result.waves:
        busy = Counter(b for tp in wave for b in participants(layout.assignment[tp], result.changed[tp]))
        assert all(n <= cap for n in busy.values())


@pytest.mark.parametrize("cap", [1, 3])
def test_waves_respect_the_cap_and_cover_every_change(cap: int) -> None:
    result = checked(SKEWED, "decommission", brokers=[2], max_moves_per_broker=cap, compare_kafka=False)
    assert len(result.waves) > 1
    assert_waves(SKEWED, result, cap)


def test_plan_files_parse_and_equal_the_plan(tmp_path: Path) -> None:
    result = checked(BALANCED, "decommission", brokers=[1], max_moves_per_broker=4, compare_kafka=False)
    path = tmp_path / "plan.json"
    written = write_plan_files(result, str(path))
    waves = [tmp_path / f"plan-wave-{i:03d}.json" for i in range(1, len(result.waves) + 1)]
    assert written == [str(path), *map(str, waves), str(tmp_path / "plan-rollback.json")]

    def read(p: Path | str) -> dict[TP, tuple[int, ...]]:
        parsed = parse_reassignment(read_text(str(p)))
        assert all(e.log_dirs == ("any",) * len(e.replicas) for e in parsed)
        return {(e.topic, e.partition): e.replicas for e in parsed}

    assert read(path) == result.changed
    merged: dict[TP, tuple[int, ...]] = {}
    for wave_path, wave in zip(waves, result.waves, strict=True):
        content = read(wave_path)
        assert set(content) == set(wave)
        merged.update(content)
    assert merged == result.changed
    assert read(tmp_path / "plan-rollback.json") == {tp: BALANCED.assignment[tp] for tp in result.changed}
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(Path(w).name for w in written)  # no temp files


def test_plan_files_without_waves(tmp_path: Path) -> None:
    settled = Layout(BALANCED.brokers, plan(BALANCED, "rebalance").assignment)
    result = checked(settled, "rebalance", compare_kafka=False)
    written = write_plan_files(result, str(tmp_path / "noop"))
    assert written == [str(tmp_path / "noop"), str(tmp_path / "noop-rollback.json")]
    assert parse_reassignment(read_text(written[0])) == []


# -- refused requests -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("operation", "kwargs", "message"),
    [
        ("shuffle", {}, "unknown operation 'shuffle'"),
        ("decommission", {}, "decommission needs at least one broker"),
        ("decommission", {"brokers": [42]}, "unknown broker(s) 42"),
        ("decommission", {"brokers": list(range(1, 11))}, "2 target broker(s) cannot hold partitions of replication "),
        ("decommission", {"brokers": [1], "racks": {1: "r0"}}, "decommission takes no racks"),
        ("rebalance", {"brokers": [1]}, "rebalance names no brokers"),
        ("add-brokers", {"brokers": [3]}, "broker(s) 3 already hold replicas"),
        ("add-brokers", {"brokers": [13]}, "new broker(s) 13 have no rack"),
        ("add-brokers", {"brokers": [13], "racks": {14: "r0"}}, "racks given for broker(s) 14"),
        ("fix-racks", {}, "fix-racks needs racks"),
        ("fix-racks", {"racks": {77: "r0"}}, "broker(s) 77 are not registered"),
        ("rebalance", {"max_moves_per_broker": 0}, "max_moves_per_broker must be at least 1"),
    ],
)
def test_bad_requests_are_refused_with_a_clear_message(operation: str, kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(PlanRequestError) as info:
        plan(BALANCED, operation, **kwargs)
    assert message in str(info.value)


def test_adding_an_unracked_broker_is_fine_when_planning_rack_unaware() -> None:
    result = checked(BALANCED, "add-brokers", brokers=[13], rack_aware=False)
    assert not result.rack_aware and result.violations == []


@pytest.mark.parametrize(
    ("assignment", "message"),
    [
        ({("t", 0): ()}, "partition t-0 has an empty replica list"),
        ({("t", 0): (1, 1)}, "lists broker 1 more than once"),
    ],
)
def test_malformed_layouts_are_refused(assignment: dict[TP, tuple[int, ...]], message: str) -> None:
    with pytest.raises(PlanRequestError, match=message):
        plan(Layout({1: None, 2: None}, assignment), "rebalance")
