"""The few shapes every part of the reassign tool shares: a partition, an ongoing KIP-455 reassignment, and
Kafka's order and text for partitions.

Kept apart from the admin client and the actions so the pure parts (throttle arithmetic, waves, the
console text) can be tested without a cluster.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from zkmodel.java import java_string_key

#: (topic, partition): Kafka's TopicPartition.
TP = tuple[str, int]


@dataclass(frozen=True)
class Ongoing:
    """One entry of ListPartitionReassignments: the full replica set (target first, then the origin's
    remaining replicas) and the replicas being added and removed."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]

    @property
    def origin(self) -> tuple[int, ...]:
        """The replicas before the move (``replicas - adding``): the sources of its data."""
        return tuple(r for r in self.replicas if r not in self.adding)

    @property
    def target(self) -> tuple[int, ...]:
        """Where the move ends (``replicas - removing``)."""
        return tuple(r for r in self.replicas if r not in self.removing)


def tp_text(tp: TP) -> str:
    """``TopicPartition.toString``: ``t-0``."""
    return f"{tp[0]}-{tp[1]}"


def tp_order(tp: TP) -> tuple[bytes, int]:
    """ReassignPartitionsCommand.compareTopicPartitions: topic, then partition."""
    return java_string_key(tp[0]), tp[1]


def sorted_tps(tps: Iterable[TP]) -> list[TP]:
    return sorted(tps, key=tp_order)


def joined(ids: Iterable[int]) -> str:
    """A replica list as Kafka's tool prints it: ``1,2,3``."""
    return ",".join(str(i) for i in ids)
