"""Replication throttles as ``kafka-reassign-partitions --execute --throttle`` sets them and ``--verify`` clears
them (ReassignPartitionsCommand.calculate*MoveMap / calculate*Throttles / clearAllThrottles, Kafka 3.9).

Pure arithmetic: which ``partition:broker`` entries each topic's throttled-replica lists hold, and which
brokers get the rates. The admin client applies the result.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from migrate.reassign.model import TP, Ongoing

LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"
LOG_DIRS_RATE = "replica.alter.log.dirs.io.max.bytes.per.second"
LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"
#: BROKER_LEVEL_THROTTLES, in Kafka's order.
BROKER_THROTTLES = (LEADER_RATE, FOLLOWER_RATE, LOG_DIRS_RATE)
#: TOPIC_LEVEL_THROTTLES, in Kafka's order.
TOPIC_THROTTLES = (LEADER_REPLICAS, FOLLOWER_REPLICAS)


@dataclass(frozen=True)
class Move:
    """Kafka's PartitionMove: the brokers data comes from and the brokers it goes to."""

    sources: frozenset[int]
    destinations: frozenset[int]


MoveMap = dict[str, dict[int, Move]]


def current_moves(ongoing: Mapping[TP, Ongoing]) -> MoveMap:
    """calculateCurrentMoveMap: every ongoing reassignment, sources = replicas - adding, destinations = adding."""
    moves: MoveMap = {}
    for (topic, partition), o in ongoing.items():
        moves.setdefault(topic, {})[partition] = Move(frozenset(o.origin), frozenset(o.adding))
    return moves


def proposed_moves(
    ongoing: Mapping[TP, Ongoing], proposed: Mapping[TP, Sequence[int]], current: Mapping[TP, Sequence[int]]
) -> MoveMap:
    """calculateProposedMoveMap: the ongoing moves plus the plan's partitions, whose sources are the ongoing
    move's sources when the partition is already moving, else its current replicas."""
    moves = current_moves(ongoing)
    for (topic, partition), replicas in proposed.items():
        parts = moves.setdefault(topic, {})
        sources = parts[partition].sources if partition in parts else frozenset(current[(topic, partition)])
        parts[partition] = Move(sources, frozenset(replicas) - sources)
    return moves


def _entries(pairs: Iterable[tuple[int, int]]) -> str:
    # A Java TreeSet<String> of "partition:broker": ordered as strings ("10:1" before "2:1").
    return ",".join(sorted({f"{p}:{b}" for p, b in pairs}))


def leader_throttles(moves: MoveMap) -> dict[str, str]:
    """calculateLeaderThrottles: per topic, every ``partition:source``."""
    return {t: _entries((p, s) for p, m in parts.items() for s in m.sources) for t, parts in moves.items()}


def follower_throttles(moves: MoveMap) -> dict[str, str]:
    """calculateFollowerThrottles: per topic, every ``partition:destination`` that is not also a source."""
    return {
        t: _entries((p, d) for p, m in parts.items() for d in m.destinations if d not in m.sources)
        for t, parts in moves.items()
    }


def reassigning_brokers(moves: MoveMap) -> list[int]:
    """calculateReassigningBrokers: every source and destination (a TreeSet: ascending)."""
    return sorted({b for parts in moves.values() for m in parts.values() for b in (*m.sources, *m.destinations)})


@dataclass(frozen=True)
class ThrottlePlan:
    """The configs one ``--execute --throttle N`` sets: topic replica lists and broker rates."""

    topics: dict[str, dict[str, str]]
    brokers: dict[int, dict[str, str]]


def throttle_plan(moves: MoveMap, rate: int) -> ThrottlePlan:
    leaders, followers = leader_throttles(moves), follower_throttles(moves)
    topics = {t: {LEADER_REPLICAS: leaders[t], FOLLOWER_REPLICAS: followers[t]} for t in moves}
    brokers = {b: {LEADER_RATE: str(rate), FOLLOWER_RATE: str(rate)} for b in reassigning_brokers(moves)}
    return ThrottlePlan(topics, brokers)
