"""Kafka's partition leader election algorithms (PartitionLeaderElectionAlgorithms), as pure functions.

Each returns the new leader and ISR, or None when no eligible replica exists; the controller then
bumps the leader epoch and writes the state znode with a partition-epoch CAS.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from zkmodel.topics import NO_LEADER, PartitionState

IsLive = Callable[[int], bool]


@dataclass(frozen=True)
class Election:
    leader: int
    isr: tuple[int, ...]


def offline(assignment: Sequence[int], isr: Sequence[int], is_live: IsLive, unclean: bool = False) -> Election | None:
    """First assigned replica that is live and in the ISR (or, unclean, just live)."""
    leader = next((r for r in assignment if is_live(r) and r in isr), None)
    if leader is not None:
        return Election(leader, tuple(r for r in isr if is_live(r)))
    if unclean:
        leader = next((r for r in assignment if is_live(r)), None)
        if leader is not None:
            return Election(leader, (leader,))
    return None


def reassignment(target: Sequence[int], isr: Sequence[int], is_live: IsLive) -> Election | None:
    """First target replica that is live and in the ISR (phase B3 of a reassignment)."""
    leader = next((r for r in target if is_live(r) and r in isr), None)
    return None if leader is None else Election(leader, tuple(isr))


def preferred(assignment: Sequence[int], isr: Sequence[int], is_live: IsLive) -> Election | None:
    """The first assigned replica, if it is live and in the ISR."""
    if assignment and is_live(assignment[0]) and assignment[0] in isr:
        return Election(assignment[0], tuple(isr))
    return None


def controlled_shutdown(
    assignment: Sequence[int], isr: Sequence[int], is_live: IsLive, shutting_down: set[int]
) -> Election | None:
    """Move leadership off brokers that are shutting down, dropping them from the ISR."""
    leader = next((r for r in assignment if r in isr and is_live(r) and r not in shutting_down), None)
    if leader is None:
        return None
    return Election(leader, tuple(r for r in isr if r not in shutting_down))


def initial(assignment: Sequence[int], is_live: IsLive) -> Election | None:
    """New partition: leader = first live replica, ISR = live replicas."""
    live = tuple([r for r in assignment if is_live(r)])
    return Election(live[0], live) if live else None


def remove_from_isr(state: PartitionState, replica: int, controller_epoch: int) -> PartitionState | None:
    """Kafka's removeReplicasFromIsr: for a partition whose ISR holds the replica, drop it (never emptying
    the ISR) and give up leadership if it led, always with a new leader epoch. None if not in the ISR."""
    if replica not in state.isr:
        return None
    isr = state.isr if len(state.isr) == 1 else tuple(r for r in state.isr if r != replica)
    leader = NO_LEADER if state.leader == replica else state.leader
    return PartitionState(leader, state.leader_epoch + 1, controller_epoch, isr, state.leader_recovery_state)


def apply(state: PartitionState | None, election: Election, controller_epoch: int) -> PartitionState:
    """The next state after an election: a new leader epoch, stamped with this controller's epoch."""
    epoch = 0 if state is None else state.leader_epoch + 1
    return PartitionState(election.leader, epoch, controller_epoch, election.isr)
