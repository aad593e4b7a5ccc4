"""Leader election algorithms, with cases from Kafka's PartitionLeaderElectionAlgorithmsTest."""

from controller.active import leader_election as leaders
from controller.active.leader_election import Election
from zkmodel.topics import NO_LEADER, PartitionState


def live(*ids: int):  # type: ignore[no-untyped-def]
    return lambda b: b in ids


def test_offline_election_prefers_assignment_order_among_live_isr() -> None:
    assert leaders.offline([2, 4], [4], live(2, 4)) == Election(4, (4,))
    assert leaders.offline([2, 4], [2, 4], live(4)) == Election(4, (4,))
    assert leaders.offline([2, 4], [2], live(4)) is None  # no live replica in the ISR
    assert leaders.offline([2, 4], [2], live(4), unclean=True) == Election(4, (4,))
    assert leaders.offline([2, 4], [], live(), unclean=True) is None


def test_reassignment_election_picks_from_target() -> None:
    assert leaders.reassignment([2, 4], [4, 2], live(2, 4)) == Election(2, (4, 2))
    assert leaders.reassignment([2, 4], [4], live(2, 4)) == Election(4, (4,))
    assert leaders.reassignment([2, 4], [4], live(2)) is None


def test_preferred_election_only_elects_the_first_replica() -> None:
    assert leaders.preferred([2, 4], [2, 4], live(2, 4)) == Election(2, (2, 4))
    assert leaders.preferred([2, 4], [4], live(2, 4)) is None
    assert leaders.preferred([2, 4], [2, 4], live(4)) is None


def test_controlled_shutdown_moves_leadership_and_shrinks_isr() -> None:
    assert leaders.controlled_shutdown([2, 4], [2, 4], live(2, 4), {2}) == Election(4, (4,))
    assert leaders.controlled_shutdown([2, 4], [2], live(2, 4), {2}) is None


def test_initial_leader_is_first_live_replica() -> None:
    assert leaders.initial([3, 1, 2], live(1, 2)) == Election(1, (1, 2))
    assert leaders.initial([3], live()) is None


def test_remove_from_isr_never_empties_it() -> None:
    state = PartitionState(leader=1, leader_epoch=4, controller_epoch=1, isr=(1, 2))
    assert leaders.remove_from_isr(state, 1, 2) == PartitionState(NO_LEADER, 5, 2, (2,))
    assert leaders.remove_from_isr(state, 2, 2) == PartitionState(1, 5, 2, (1,))
    only = PartitionState(leader=1, leader_epoch=0, controller_epoch=1, isr=(1,))
    assert leaders.remove_from_isr(only, 1, 2) == PartitionState(NO_LEADER, 1, 2, (1,))
    assert leaders.remove_from_isr(state, 3, 2) is None
