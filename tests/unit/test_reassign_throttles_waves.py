"""The reassign tool's pure parts: Kafka's throttle arithmetic (checked against the values
ReassignPartitionsCommandTest expects), wave packing under a per-broker cap, resume classification, and the
console text builders (golden, from Kafka 3.9's format strings)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from migrate.reassign import throttles as T
from migrate.reassign.listing import list_text
from migrate.reassign.model import Ongoing, sorted_tps
from migrate.reassign.verify import PartitionState, states_text_lines
from migrate.reassign.waves import busy_brokers, classify, pack, participants, plan_waves
from zkmodel.jvmorder import java_hashmap_order


def test_ongoing_reassignment_origin_and_target() -> None:
    o = Ongoing(replicas=(3, 4, 2, 1), adding=(3, 4), removing=(1,))
    assert o.origin == (2, 1)
    assert o.target == (3, 4, 2)


def test_proposed_move_map_uses_the_running_moves_sources() -> None:
    # Kafka's testMoveMap: a partition already moving keeps the sources of its running move.
    ongoing = {("foo", 0): Ongoing((1, 2, 3, 4), (4,), (3,)), ("bar", 0): Ongoing((2, 3, 4), (4,), (2,))}
    proposed = {("foo", 0): [1, 2, 5], ("foo", 2): [3, 4], ("baz", 1): [2, 3, 4]}
    current = {("foo", 0): [1, 2, 3, 4], ("foo", 2): [1, 2], ("baz", 1): [0, 1, 2]}
    moves = T.proposed_moves(ongoing, proposed, current)
    assert moves == {
        "foo": {0: T.Move(frozenset({1, 2, 3}), frozenset({5})), 2: T.Move(frozenset({1, 2}), frozenset({3, 4}))},
        "bar": {0: T.Move(frozenset({2, 3}), frozenset({4}))},
        "baz": {1: T.Move(frozenset({0, 1, 2}), frozenset({3, 4}))},
    }
    assert T.leader_throttles(moves) == {"foo": "0:1,0:2,0:3,2:1,2:2", "bar": "0:2,0:3", "baz": "1:0,1:1,1:2"}
    assert T.follower_throttles(moves) == {"foo": "0:5,2:3,2:4", "bar": "0:4", "baz": "1:3,1:4"}
    assert T.reassigning_brokers(moves) == [0, 1, 2, 3, 4, 5]


def test_throttled_replica_lists_are_ordered_as_strings_like_a_java_treeset() -> None:
    moves = {"t": {10: T.Move(frozenset({1}), frozenset({2})), 2: T.Move(frozenset({1}), frozenset({3}))}}
    assert T.leader_throttles(moves) == {"t": "10:1,2:1"}
    plan = T.throttle_plan(moves, 500)
    assert plan.topics == {"t": {T.LEADER_REPLICAS: "10:1,2:1", T.FOLLOWER_REPLICAS: "10:2,2:3"}}
    assert plan.brokers == {b: {T.LEADER_RATE: "500", T.FOLLOWER_RATE: "500"} for b in (1, 2, 3)}


def test_participants_are_the_brokers_that_gain_or_lose_a_replica() -> None:
    assert participants([1, 2, 3], [1, 2, 4]) == {3, 4}
    assert participants([1, 2, 3], [3, 2, 1]) == frozenset()  # a reorder moves nothing


def test_pack_respects_the_cap_counting_moves_already_running() -> None:
    involved = {("t", p): frozenset({1, p + 2}) for p in range(4)}
    order = sorted_tps(involved)
    assert pack(order, involved, 2) == [("t", 0), ("t", 1)]
    assert pack(order, involved, 2, busy={1: 1}) == [("t", 0)]
    assert pack(order, involved, 2, busy={1: 2}) == []
    assert plan_waves(order, involved, 2) == [[("t", 0), ("t", 1)], [("t", 2), ("t", 3)]]


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.integers(0, 30),
        st.tuples(
            st.lists(st.integers(1, 6), min_size=1, max_size=3, unique=True),
            st.lists(st.integers(1, 6), min_size=1, max_size=3, unique=True),
        ),
        min_size=1,
    ),
    st.integers(1, 4),
)
def test_every_wave_keeps_every_broker_under_the_cap_and_all_partitions_are_scheduled_once(
    parts: dict[int, tuple[list[int], list[int]]], cap: int
) -> None:
    involved = {("t", p): participants(cur, tgt) for p, (cur, tgt) in parts.items()}
    waves = plan_waves(sorted_tps(involved), involved, cap)
    assert sorted(tp for w in waves for tp in w) == sorted(involved)
    for wave in waves:
        assert wave, "no empty wave"
        assert max(busy_brokers(involved[tp] for tp in wave).values(), default=0) <= cap


def test_classify_tells_done_running_pending_and_foreign_apart() -> None:
    plan = {("t", 0): [2], ("t", 1): [3], ("t", 2): [4], ("t", 3): [1, 2]}
    current = {("t", 0): [2], ("t", 1): [3, 1], ("t", 2): [1], ("t", 3): [2, 1]}
    ongoing = {("t", 1): Ongoing((3, 1), (3,), (1,)), ("u", 0): Ongoing((5, 6), (5,), (6,))}
    state = classify(plan, current, ongoing)
    assert state.done == [("t", 0)]
    assert state.running == [("t", 1)]
    assert state.pending == [("t", 2), ("t", 3)]  # [2,1] -> [1,2] is a reorder still to submit
    assert state.foreign == {("u", 0): ongoing[("u", 0)]}
    other = classify(plan, current, {("t", 2): Ongoing((5, 1), (5,), (1,))})
    assert ("t", 2) in other.pending and ("t", 2) in other.foreign  # moving somewhere else: not ours


def test_list_text_is_kafkas() -> None:
    assert list_text({}) == "No partition reassignments found."
    text = list_text({("foo", 1): Ongoing((1, 2, 3), (), ()), ("bar", 0): Ongoing((3, 4, 2, 1), (3, 4), (2, 1))})
    assert text == (
        "Current partition reassignments:\n"
        "bar-0: replicas: 3,4,2,1. adding: 3,4. removing: 2,1.\n"
        "foo-1: replicas: 1,2,3."
    )


def test_verify_lines_are_kafkas() -> None:
    states = {
        ("foo", 0): PartitionState((1, 2, 3), (1, 2, 3), True),
        ("foo", 1): PartitionState((1, 2, 3, 4), (1, 2, 4), False),
        ("bar", 0): PartitionState((1, 2), (3, 4), True),
    }
    assert states_text_lines(states) == [
        "Status of partition reassignment:",
        "There is no active reassignment of partition bar-0, but replica set is 1,2 rather than 3,4.",
        "Reassignment of partition foo-0 is completed.",
        "Reassignment of partition foo-1 is still in progress.",
    ]


@pytest.mark.parametrize(
    ("keys", "order"),
    [
        ([3, 1, 2], [1, 2, 3]),
        ([100, 17, 1, 16], [16, 17, 1, 100]),  # 16 buckets: 100 -> 4, 17 and 1 -> 1 (insertion order), 16 -> 0
        ([1000, 17, 3], [17, 3, 1000]),  # 1000 & 15 = 8, 17 -> 1, 3 -> 3
    ],
)
def test_java_hashset_order_of_broker_ids(keys: list[int], order: list[int]) -> None:
    assert java_hashmap_order(keys) == order
