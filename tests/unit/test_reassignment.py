"""KIP-455 arithmetic: reference §3 model and the §6 scenario 9 table (Kafka's ControllerContextTest)."""

import pytest

from zkmodel.reassignment import ReplicaAssignment


@pytest.mark.parametrize(
    ("start", "target", "rs", "ar", "rr"),
    [
        ((1, 2, 3, 4), (4, 2, 5, 3), (4, 2, 5, 3, 1), (5,), (1,)),
        ((1, 2, 3), (4, 5, 6), (4, 5, 6, 1, 2, 3), (4, 5, 6), (1, 2, 3)),
        ((1, 2, 3), (3, 1, 2), (3, 1, 2), (), ()),
    ],
)
def test_scenario_9_reassign_to(
    start: tuple[int, ...], target: tuple[int, ...], rs: tuple[int, ...], ar: tuple[int, ...], rr: tuple[int, ...]
) -> None:
    moved = ReplicaAssignment(start).reassign_to(target)
    assert moved == ReplicaAssignment(rs, ar, rr)
    assert moved.target == target
    assert moved.is_being_reassigned == bool(ar or rr)


def test_scenario_9_retarget_in_flight() -> None:
    moving = ReplicaAssignment((1, 2, 3)).reassign_to((4, 5, 6))
    assert moving.reassign_to((7, 8, 9)) == ReplicaAssignment((7, 8, 9, 1, 2, 3), (7, 8, 9), (1, 2, 3))
    assert moving.reassign_to((1, 2, 3)) == ReplicaAssignment((1, 2, 3))
    assert moving.reassign_to(moving.target) == moving  # reassigning to its own target is a no-op


def test_origin_and_target() -> None:
    moving = ReplicaAssignment((4, 5, 6, 1, 2, 3), (4, 5, 6), (1, 2, 3))
    assert moving.origin == (1, 2, 3)
    assert moving.target == (4, 5, 6)
    assert moving.complete() == ReplicaAssignment((4, 5, 6))


def test_cancel_does_not_promise_original_order() -> None:
    # Reference §3: [1,2,3] -> [3,4,2] gives RS [3,4,2,1]; a cancel then gives [3,2,1].
    moving = ReplicaAssignment((1, 2, 3)).reassign_to((3, 4, 2))
    assert moving.replicas == (3, 4, 2, 1)
    assert moving.cancel() == ReplicaAssignment((3, 2, 1))


def test_scenario_23_cli_cancel_shape() -> None:
    # foo-0 [0,1,2] -> [0,1,3] shows replicas [0,1,3,2] during the move.
    assert ReplicaAssignment((0, 1, 2)).reassign_to((0, 1, 3)).replicas == (0, 1, 3, 2)


def test_same_set_new_order_is_not_a_move_but_changes_order() -> None:
    # Scenario 21: [100,101,102] then [102,101,100] ends as [102,101,100].
    moved = ReplicaAssignment((100, 101, 102)).reassign_to((102, 101, 100))
    assert moved == ReplicaAssignment((102, 101, 100))
