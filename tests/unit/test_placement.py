"""Tests for zkmodel.placement against Apache Kafka 3.9's own examples and tests.

Every exact expected value below is copied from Kafka: the ``AdminUtils.assignReplicasToBrokers`` and
``getRackAlternatedBrokerList`` doc comments, ``AdminRackAwareTest`` and ``AddPartitionsTest``. Where
Kafka's test only checks distribution properties (``RackAwareTest.checkReplicaDistribution``), we check
the same properties, and for Kafka's tests that use a random start index we check them for every
possible random draw.
"""

from __future__ import annotations

import itertools
import random
from collections import Counter
from collections.abc import Mapping, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zkmodel.placement import (
    BrokerMetadata,
    PlacementError,
    assign_replicas_to_brokers,
    rack_alternated_broker_list,
)


class ScriptedRandom(random.Random):
    """Returns the given values from randrange, checking each call is Kafka's ``nextInt(n)``."""

    def __init__(self, values: Sequence[int], bound: int) -> None:
        super().__init__(0)
        self.values = list(values)
        self.bound = bound

    def randrange(self, start, stop=None, step=1):
        assert (start, stop, step) == (self.bound, None, 1)
        value = self.values.pop(0)
        assert 0 <= value < self.bound
        return value


def to_broker_metadata(rack_map: Mapping[int, str | None]) -> list[BrokerMetadata]:
    """RackAwareTest.toBrokerMetadata: one BrokerMetadata per entry, ascending ids."""
    return [BrokerMetadata(broker_id, rack) for broker_id, rack in sorted(rack_map.items())]


def replica_distribution(
    assignment: Mapping[int, Sequence[int]], rack_map: Mapping[int, str]
) -> tuple[dict[int, list[str]], Counter[int], Counter[int]]:
    """RackAwareTest.getReplicaDistribution: racks per partition, leader and replica counts per broker."""
    partition_racks = {p: [rack_map[b] for b in replicas] for p, replicas in assignment.items()}
    leader_count = Counter(replicas[0] for replicas in assignment.values())
    replica_count = Counter(b for replicas in assignment.values() for b in replicas)
    return partition_racks, leader_count, replica_count


def check_replica_distribution(
    assignment: Mapping[int, Sequence[int]],
    rack_map: Mapping[int, str],
    num_brokers: int,
    num_partitions: int,
    replication_factor: int,
    *,
    verify_rack_aware: bool = True,
    verify_leader_distribution: bool = True,
    verify_replicas_distribution: bool = True,
) -> None:
    """RackAwareTest.checkReplicaDistribution, with the same checks and switches."""
    for replicas in assignment.values():
        assert len(set(replicas)) == len(replicas), "More than one replica is assigned to same broker"
    partition_racks, leader_count, replica_count = replica_distribution(assignment, rack_map)
    if verify_rack_aware:
        assert [len(set(racks)) for racks in partition_racks.values()] == [replication_factor] * num_partitions, (
            "More than one replica of the same partition is assigned to the same rack"
        )
    if verify_leader_distribution:
        assert sorted(leader_count) == sorted(rack_map)
        assert list(leader_count.values()) == [num_partitions // num_brokers] * num_brokers
    if verify_replicas_distribution:
        assert sorted(replica_count) == sorted(rack_map)
        assert list(replica_count.values()) == [num_partitions * replication_factor // num_brokers] * num_brokers


def every_random_draw(
    brokers: Sequence[BrokerMetadata],
    n_partitions: int,
    replication_factor: int,
    start_partition_id: int = -1,
) -> list[dict[int, list[int]]]:
    """The assignment for every possible (start index, shift) pair Kafka's two nextInt calls can draw,
    plus one call using the module's own random generator (Kafka's test as literally written)."""
    n = len({b.id for b in brokers})
    results = [
        assign_replicas_to_brokers(
            brokers,
            n_partitions,
            replication_factor,
            start_partition_id=start_partition_id,
            rng=ScriptedRandom(draws, n),
        )
        for draws in itertools.product(range(n), repeat=2)
    ]
    results.append(
        assign_replicas_to_brokers(brokers, n_partitions, replication_factor, start_partition_id=start_partition_id)
    )
    return results


# --- AdminUtils doc comment ---------------------------------------------------------------------------

# The doc comment's table: for each row, the replica position and the partition placed on broker-0..4.
DOC_TABLE = [
    (0, [0, 1, 2, 3, 4]),
    (0, [5, 6, 7, 8, 9]),
    (1, [4, 0, 1, 2, 3]),
    (1, [8, 9, 5, 6, 7]),
    (2, [3, 4, 0, 1, 2]),
    (2, [7, 8, 9, 5, 6]),
]


def doc_table_assignment(broker_ids: Sequence[int]) -> dict[int, list[int]]:
    expected: dict[int, list[int]] = {p: [-1, -1, -1] for p in range(10)}
    for position, partitions in DOC_TABLE:
        for column, partition in enumerate(partitions):
            assert expected[partition][position] == -1
            expected[partition][position] = broker_ids[column]
    return expected


def test_doc_comment_table_rack_unaware() -> None:
    brokers = [BrokerMetadata(i) for i in range(5)]
    assert assign_replicas_to_brokers(brokers, 10, 3, fixed_start_index=0) == doc_table_assignment(range(5))


def test_doc_comment_table_follows_input_order() -> None:
    # Kafka's rack-unaware placement indexes the broker collection as given; relabelling the columns of
    # the doc table gives the expected result for any broker order.
    ids = [40, 10, 30, 0, 20]
    brokers = [BrokerMetadata(i) for i in ids]
    assert assign_replicas_to_brokers(brokers, 10, 3, fixed_start_index=0) == doc_table_assignment(ids)


DOC_RACKS = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}


def test_doc_comment_rack_alternated_list() -> None:
    assert rack_alternated_broker_list(DOC_RACKS) == [0, 3, 1, 5, 4, 2]


def test_doc_comment_get_rack_alternated_broker_list() -> None:
    racks = {b: "rack1" for b in (0, 1, 2)} | {b: "rack2" for b in (3, 4, 5)} | {b: "rack3" for b in (6, 7, 8)}
    assert rack_alternated_broker_list(racks) == [0, 3, 6, 1, 4, 7, 2, 5, 8]


def test_doc_comment_rack_aware_example_including_partition_6() -> None:
    expected = {
        0: [0, 3, 1],
        1: [3, 1, 5],
        2: [1, 5, 4],
        3: [5, 4, 2],
        4: [4, 2, 0],
        5: [2, 0, 3],
        6: [0, 4, 2],
    }
    brokers = to_broker_metadata(DOC_RACKS)
    assert assign_replicas_to_brokers(brokers, 6, 3, fixed_start_index=0, start_partition_id=0) == {
        p: expected[p] for p in range(6)
    }
    assert assign_replicas_to_brokers(brokers, 7, 3, fixed_start_index=0, start_partition_id=0) == expected


# --- AdminRackAwareTest -------------------------------------------------------------------------------


def test_get_rack_alternated_broker_list_and_assign_replicas_to_brokers() -> None:
    rack_map = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    assert rack_alternated_broker_list(rack_map) == [0, 3, 1, 5, 4, 2]
    assert rack_alternated_broker_list({b: r for b, r in rack_map.items() if b != 5}) == [0, 3, 1, 4, 2]
    assignment = assign_replicas_to_brokers(
        to_broker_metadata(rack_map), 7, 3, fixed_start_index=0, start_partition_id=0
    )
    assert assignment == {
        0: [0, 3, 1],
        1: [3, 1, 5],
        2: [1, 5, 4],
        3: [5, 4, 2],
        4: [4, 2, 0],
        5: [2, 0, 3],
        6: [0, 4, 2],
    }


SIX_BROKERS_THREE_RACKS = {0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack1"}


def test_assignment_with_rack_aware() -> None:
    assignment = assign_replicas_to_brokers(
        to_broker_metadata(SIX_BROKERS_THREE_RACKS), 6, 3, fixed_start_index=2, start_partition_id=0
    )
    check_replica_distribution(assignment, SIX_BROKERS_THREE_RACKS, 6, 6, 3)


def test_assignment_with_rack_aware_with_random_start_index() -> None:
    for assignment in every_random_draw(to_broker_metadata(SIX_BROKERS_THREE_RACKS), 6, 3):
        check_replica_distribution(assignment, SIX_BROKERS_THREE_RACKS, 6, 6, 3)


def test_assignment_with_rack_aware_with_uneven_replicas() -> None:
    assignment = assign_replicas_to_brokers(
        to_broker_metadata(SIX_BROKERS_THREE_RACKS), 13, 3, fixed_start_index=0, start_partition_id=0
    )
    check_replica_distribution(
        assignment,
        SIX_BROKERS_THREE_RACKS,
        6,
        13,
        3,
        verify_leader_distribution=False,
        verify_replicas_distribution=False,
    )


def test_assignment_with_rack_aware_with_uneven_racks() -> None:
    rack_map = {0: "rack1", 1: "rack1", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack1"}
    for assignment in every_random_draw(to_broker_metadata(rack_map), 12, 3):
        check_replica_distribution(assignment, rack_map, 6, 12, 3, verify_replicas_distribution=False)


def test_assignment_with_2_replicas_rack_aware() -> None:
    for assignment in every_random_draw(to_broker_metadata(SIX_BROKERS_THREE_RACKS), 12, 2):
        check_replica_distribution(assignment, SIX_BROKERS_THREE_RACKS, 6, 12, 2)


def test_rack_aware_expansion() -> None:
    rack_map = {6: "rack1", 7: "rack2", 8: "rack2", 9: "rack3", 10: "rack3", 11: "rack1"}
    for assignment in every_random_draw(to_broker_metadata(rack_map), 12, 2, start_partition_id=12):
        assert sorted(assignment) == list(range(12, 24))
        check_replica_distribution(assignment, rack_map, 6, 12, 2)


def test_assignment_with_2_replicas_rack_aware_with_6_partitions() -> None:
    for assignment in every_random_draw(to_broker_metadata(SIX_BROKERS_THREE_RACKS), 6, 2):
        check_replica_distribution(assignment, SIX_BROKERS_THREE_RACKS, 6, 6, 2)


def test_assignment_with_2_replicas_rack_aware_with_6_partitions_and_3_brokers() -> None:
    rack_map = {0: "rack1", 1: "rack2", 4: "rack3"}
    for assignment in every_random_draw(to_broker_metadata(rack_map), 3, 2):
        check_replica_distribution(assignment, rack_map, 3, 3, 2)


def test_large_number_partitions_assignment() -> None:
    rack_map = {
        0: "rack1",
        1: "rack2",
        2: "rack2",
        3: "rack3",
        4: "rack3",
        5: "rack1",
        6: "rack1",
        7: "rack2",
        8: "rack2",
        9: "rack3",
        10: "rack1",
        11: "rack3",
    }
    for assignment in every_random_draw(to_broker_metadata(rack_map), 96, 3):
        check_replica_distribution(assignment, rack_map, 12, 96, 3)


UNEVEN_THREE_RACKS = {0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack2"}


def test_more_replicas_than_racks() -> None:
    for assignment in every_random_draw(to_broker_metadata(UNEVEN_THREE_RACKS), 6, 5):
        assert [len(r) for r in assignment.values()] == [5] * len(assignment)
        partition_racks, _, _ = replica_distribution(assignment, UNEVEN_THREE_RACKS)
        for partition in range(6):
            assert len(set(partition_racks[partition])) == 3


def test_less_replicas_than_racks() -> None:
    for assignment in every_random_draw(to_broker_metadata(UNEVEN_THREE_RACKS), 6, 2):
        assert [len(r) for r in assignment.values()] == [2] * len(assignment)
        partition_racks, _, _ = replica_distribution(assignment, UNEVEN_THREE_RACKS)
        for partition in range(6):
            assert len(set(partition_racks[partition])) == 2


def test_single_rack() -> None:
    rack_map = dict.fromkeys(range(6), "rack1")
    for assignment in every_random_draw(to_broker_metadata(rack_map), 6, 3):
        assert [len(r) for r in assignment.values()] == [3] * len(assignment)
        partition_racks, leader_count, _ = replica_distribution(assignment, rack_map)
        for partition in range(6):
            assert len(set(partition_racks[partition])) == 1
        for broker in rack_map:
            assert leader_count[broker] == 1


def test_skip_broker_with_replica_already_assigned() -> None:
    rack_info = {0: "a", 1: "b", 2: "c", 3: "a", 4: "a"}
    brokers = to_broker_metadata(rack_info)
    assert [b.id for b in brokers] == list(range(5))
    assignment = assign_replicas_to_brokers(brokers, 6, 4, fixed_start_index=2, start_partition_id=-1)
    check_replica_distribution(
        assignment,
        rack_info,
        5,
        6,
        4,
        verify_rack_aware=False,
        verify_leader_distribution=False,
        verify_replicas_distribution=False,
    )


def test_replica_assignment() -> None:
    brokers = [BrokerMetadata(i) for i in range(5)]
    with pytest.raises(PlacementError) as zero_rf:
        assign_replicas_to_brokers(brokers, 10, 0)
    assert zero_rf.value.error_name == "INVALID_REPLICATION_FACTOR"
    with pytest.raises(PlacementError) as too_big_rf:
        assign_replicas_to_brokers(brokers, 10, 6)
    assert too_big_rf.value.error_name == "INVALID_REPLICATION_FACTOR"
    expected = {
        0: [0, 1, 2],
        1: [1, 2, 3],
        2: [2, 3, 4],
        3: [3, 4, 0],
        4: [4, 0, 1],
        5: [0, 2, 3],
        6: [1, 3, 4],
        7: [2, 4, 0],
        8: [3, 0, 1],
        9: [4, 1, 2],
    }
    assert assign_replicas_to_brokers(brokers, 10, 3, fixed_start_index=0, start_partition_id=-1) == expected


def test_assign_replicas_to_brokers_with_invalid_parameters() -> None:
    brokers = to_broker_metadata({0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: None})
    cases = [
        (0, 0, "INVALID_PARTITIONS", "Number of partitions must be larger than 0."),
        (10, 0, "INVALID_REPLICATION_FACTOR", "Replication factor must be larger than 0."),
        (10, 6, "INVALID_REPLICATION_FACTOR", "Replication factor: 6 larger than available brokers: 5."),
        (
            10,
            5,
            "UNKNOWN_SERVER_ERROR",
            "Not all brokers have rack information for replica rack aware assignment.",
        ),
    ]
    for n_partitions, rf, error_name, message in cases:
        with pytest.raises(PlacementError) as info:
            assign_replicas_to_brokers(brokers, n_partitions, rf, fixed_start_index=-1, start_partition_id=-1)
        assert info.value.error_name == error_name
        assert str(info.value) == message


# --- AddPartitionsTest (ZooKeeper mode): AdminZkClient.createNewPartitionsAssignment -------------------


def add_partitions(
    broker_ids: Sequence[int], existing: Mapping[int, Sequence[int]], new_count: int
) -> dict[int, list[int]]:
    """How AdminZkClient.createNewPartitionsAssignment calls assignReplicasToBrokers: start index is the
    position of the first broker whose id is >= partition 0's leader, start partition is the old count."""
    brokers = [BrokerMetadata(b) for b in sorted(broker_ids)]
    leader0 = existing[0][0]
    start_index = max(0, next((i for i, b in enumerate(brokers) if b.id >= leader0), -1))
    return assign_replicas_to_brokers(
        brokers,
        new_count - len(existing),
        len(existing[0]),
        fixed_start_index=start_index,
        start_partition_id=len(existing),
    )


def test_add_partitions_replica_placement_all_servers() -> None:
    added = add_partitions(range(4), {0: [2, 3, 0, 1]}, 7)
    expected_leaders = {1: 3, 2: 0, 3: 1, 4: 2, 5: 3, 6: 0}
    assert {p: replicas[0] for p, replicas in added.items()} == expected_leaders
    assert all(set(replicas) == {0, 1, 2, 3} for replicas in added.values())


def test_add_partitions_replica_placement_partial_servers() -> None:
    added = add_partitions(range(4), {0: [1, 2]}, 3)
    assert {p: (r[0], set(r)) for p, r in added.items()} == {1: (2, {0, 2}), 2: (3, {1, 3})}


# --- Behaviour details taken from AdminUtils.java ------------------------------------------------------


def test_fixed_start_index_sets_both_start_and_shift() -> None:
    # Kafka: startIndex and nextReplicaShift both equal fixedStartIndex when it is >= 0, and are drawn by
    # two nextInt(size) calls (start first) otherwise.
    for racks in (dict.fromkeys(range(5)), DOC_RACKS):
        brokers = to_broker_metadata(racks)
        n = len(brokers)
        for k in range(n):
            fixed = assign_replicas_to_brokers(brokers, 13, 3, fixed_start_index=k)
            drawn = assign_replicas_to_brokers(brokers, 13, 3, rng=ScriptedRandom([k, k], n))
            assert fixed == drawn


def test_first_draw_is_the_start_index() -> None:
    brokers = [BrokerMetadata(i) for i in range(5)]
    for start, shift in itertools.product(range(5), repeat=2):
        assignment = assign_replicas_to_brokers(brokers, 5, 1, rng=ScriptedRandom([start, shift], 5))
        assert [assignment[p][0] for p in range(5)] == [(p + start) % 5 for p in range(5)]


def test_second_draw_is_the_follower_shift() -> None:
    # Replicas of a partition depend only on its leader position and the block's follower shift. With
    # draws (start, shift), partition p has the same leader position and shift as partition p' of the
    # same block under fixed_start_index=shift, so the two must place identical replicas.
    for racks in (dict.fromkeys(range(5)), DOC_RACKS):
        brokers = to_broker_metadata(racks)
        n = len(brokers)
        for start, shift in itertools.product(range(n), repeat=2):
            scripted = ScriptedRandom([start, shift], n)
            drawn = assign_replicas_to_brokers(brokers, 3 * n, 3, rng=scripted)
            assert scripted.values == []
            fixed = assign_replicas_to_brokers(brokers, 3 * n, 3, fixed_start_index=shift)
            for p, replicas in drawn.items():
                block = p // n * n
                assert replicas == fixed[block + (p - block + start - shift) % n]


def test_seeded_rng_is_deterministic() -> None:
    brokers = to_broker_metadata(DOC_RACKS)
    results = {str(assign_replicas_to_brokers(brokers, 20, 3, rng=random.Random(7))) for _ in range(3)}
    assert len(results) == 1


def test_rack_sort_uses_java_string_order() -> None:
    # Java sorts Strings by UTF-16 code units: U+1F600 (surrogates D83D DE00) sorts before U+FF61,
    # whereas Python's code-point order puts it after.
    assert rack_alternated_broker_list({0: "\uff61", 1: "\U0001f600"}) == [1, 0]
    assert rack_alternated_broker_list({0: "b", 1: "a", 2: "b", 3: "a"}) == [1, 0, 3, 2]


def test_empty_rack_name_counts_as_a_rack() -> None:
    # Optional.of("") is present in Kafka, so a broker with rack "" makes the placement rack-aware.
    with pytest.raises(PlacementError) as info:
        assign_replicas_to_brokers([BrokerMetadata(0, ""), BrokerMetadata(1)], 1, 1)
    assert info.value.error_name == "UNKNOWN_SERVER_ERROR"


def test_error_checks_run_before_rack_check() -> None:
    brokers = [BrokerMetadata(0, "r"), BrokerMetadata(1)]
    with pytest.raises(PlacementError) as info:
        assign_replicas_to_brokers(brokers, 1, 3)
    assert str(info.value) == "Replication factor: 3 larger than available brokers: 2."
    assert isinstance(info.value, ValueError)
    with pytest.raises(PlacementError) as empty:
        assign_replicas_to_brokers([], 1, 1)
    assert str(empty.value) == "Replication factor: 1 larger than available brokers: 0."


# --- Properties ---------------------------------------------------------------------------------------


@st.composite
def placement_inputs(draw: st.DrawFn, *, racks: bool) -> tuple[list[BrokerMetadata], int, int, int, int, int]:
    ids = draw(st.lists(st.integers(0, 10_000), min_size=1, max_size=12, unique=True))
    if racks:
        names = draw(st.lists(st.sampled_from(["a", "b", "c", "d", "e"]), min_size=len(ids), max_size=len(ids)))
        brokers = [BrokerMetadata(i, r) for i, r in zip(ids, names, strict=True)]
    else:
        brokers = [BrokerMetadata(i) for i in ids]
    n_partitions = draw(st.integers(1, 60))
    rf = draw(st.integers(1, len(ids)))
    start_partition_id = draw(st.integers(-1, 100))
    start = draw(st.integers(0, len(ids) - 1))
    shift = draw(st.integers(0, len(ids) - 1))
    return brokers, n_partitions, rf, start_partition_id, start, shift


def walk_order(brokers: Sequence[BrokerMetadata]) -> list[int]:
    if brokers[0].rack is None:
        return [b.id for b in brokers]
    return rack_alternated_broker_list({b.id: b.rack for b in brokers if b.rack is not None})


def check_common_properties(
    brokers: Sequence[BrokerMetadata],
    n_partitions: int,
    rf: int,
    start_partition_id: int,
    start: int,
    assignment: Mapping[int, Sequence[int]],
) -> None:
    first = max(0, start_partition_id)
    assert list(assignment) == list(range(first, first + n_partitions))
    ids = {b.id for b in brokers}
    order = walk_order(brokers)
    n = len(order)
    for partition, replicas in assignment.items():
        assert len(replicas) == rf
        assert len(set(replicas)) == rf
        assert set(replicas) <= ids
        # Leaders go round-robin over the walk order from the start index.
        assert replicas[0] == order[(partition + start) % n]
    leaders = Counter(replicas[0] for replicas in assignment.values())
    counts = [leaders[b] for b in ids]
    assert max(counts) - min(counts) <= 1
    if n_partitions % n == 0:
        assert counts == [n_partitions // n] * n
    # Whole blocks of partitions (ids aligned to the broker count) spread replicas exactly evenly when
    # the walk order is rotation-symmetric: always without racks, and with racks of equal size.
    rack_sizes = Counter(b.rack for b in brokers)
    if first % n == 0 and n_partitions % n == 0 and len(set(rack_sizes.values())) == 1:
        replica_counts = Counter(b for replicas in assignment.values() for b in replicas)
        assert [replica_counts[b] for b in ids] == [n_partitions * rf // n] * n


@settings(max_examples=300, deadline=None)
@given(placement_inputs(racks=False))
def test_rack_unaware_properties(inputs: tuple[list[BrokerMetadata], int, int, int, int, int]) -> None:
    brokers, n_partitions, rf, start_partition_id, start, shift = inputs
    assignment = assign_replicas_to_brokers(
        brokers,
        n_partitions,
        rf,
        start_partition_id=start_partition_id,
        rng=ScriptedRandom([start, shift], len(brokers)),
    )
    check_common_properties(brokers, n_partitions, rf, start_partition_id, start, assignment)


@settings(max_examples=300, deadline=None)
@given(placement_inputs(racks=True))
def test_rack_aware_properties(inputs: tuple[list[BrokerMetadata], int, int, int, int, int]) -> None:
    brokers, n_partitions, rf, start_partition_id, start, shift = inputs
    assignment = assign_replicas_to_brokers(
        brokers,
        n_partitions,
        rf,
        start_partition_id=start_partition_id,
        rng=ScriptedRandom([start, shift], len(brokers)),
    )
    check_common_properties(brokers, n_partitions, rf, start_partition_id, start, assignment)
    rack_of = {b.id: b.rack for b in brokers}
    all_racks = set(rack_of.values())
    for replicas in assignment.values():
        racks = [rack_of[b] for b in replicas]
        if rf <= len(all_racks):
            # "Otherwise, each rack will get at most one replica."
            assert len(set(racks)) == rf
        else:
            # "If the number of replicas is equal to or greater than the number of racks, it will ensure
            # that each rack will get at least one replica."
            assert set(racks) == all_racks
    # Kafka builds a HashMap from the brokers, so their order does not matter.
    shuffled = list(reversed(brokers))
    assert assignment == assign_replicas_to_brokers(
        shuffled,
        n_partitions,
        rf,
        start_partition_id=start_partition_id,
        rng=ScriptedRandom([start, shift], len(brokers)),
    )


@settings(max_examples=100, deadline=None)
@given(placement_inputs(racks=False), st.integers(0, 30))
def test_fixed_start_index_properties(
    inputs: tuple[list[BrokerMetadata], int, int, int, int, int], fixed_start_index: int
) -> None:
    brokers, n_partitions, rf, start_partition_id, _, _ = inputs
    assignment = assign_replicas_to_brokers(
        brokers, n_partitions, rf, fixed_start_index=fixed_start_index, start_partition_id=start_partition_id
    )
    check_common_properties(brokers, n_partitions, rf, start_partition_id, fixed_start_index, assignment)


@settings(max_examples=100, deadline=None)
@given(placement_inputs(racks=True))
def test_default_rng_properties(inputs: tuple[list[BrokerMetadata], int, int, int, int, int]) -> None:
    brokers, n_partitions, rf, start_partition_id, _, _ = inputs
    assignment = assign_replicas_to_brokers(brokers, n_partitions, rf, start_partition_id=start_partition_id)
    order = walk_order(brokers)
    first = max(0, start_partition_id)
    start = order.index(assignment[first][0]) - first
    check_common_properties(brokers, n_partitions, rf, start_partition_id, start, assignment)
