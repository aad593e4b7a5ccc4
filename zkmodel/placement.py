"""Kafka's replica placement (``AdminUtils.assignReplicasToBrokers``), rack-unaware and rack-aware.

A ZooKeeper-mode Kafka controller chooses replicas for new topics and partitions with this exact
algorithm. Reproducing it result for result means our topic creations, partition additions and
reassignment plans place replicas where a Kafka controller would have, and tests can compare against
Kafka's own documented examples.

Behaviour follows Apache Kafka 3.9 (``server-common/.../admin/AdminUtils.java``). Arguments are Java
``int`` values there; for inputs where Java's 32-bit arithmetic does not overflow (every realistic
input) the results are identical.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from zkmodel.java import java_string_key
from zkmodel.jvmorder import java_hashmap_order

__all__ = [
    "BrokerMetadata",
    "PlacementError",
    "assign_replicas_to_brokers",
    "calculate_assignment",
    "rack_alternated_broker_list",
]

_RAND = random.Random()


@dataclass(frozen=True, slots=True)
class BrokerMetadata:
    """A broker id and its optional rack, as Kafka's ``BrokerMetadata``."""

    id: int
    rack: str | None = None


class PlacementError(ValueError):
    """Placement is impossible; ``error_name`` is the Kafka error to report, ``str()`` its message."""

    def __init__(self, error_name: str, message: str) -> None:
        super().__init__(message)
        self.error_name = error_name
        self.message = message


def rack_alternated_broker_list(brokers_by_rack: Mapping[int, str]) -> list[int]:
    """Broker ids alternating between racks, as Kafka's ``getRackAlternatedBrokerList``.

    Racks are taken in sorted order and the brokers of each rack in ascending id order; one broker is
    taken from each rack in turn, skipping racks that have run out. For example racks
    ``rack1: 0, 1, 2``, ``rack2: 3, 4, 5``, ``rack3: 6, 7, 8`` give ``0, 3, 6, 1, 4, 7, 2, 5, 8``.
    """
    by_rack: dict[str, list[int]] = {}
    for broker_id, rack in brokers_by_rack.items():
        by_rack.setdefault(rack, []).append(broker_id)
    columns = [sorted(by_rack[rack]) for rack in sorted(by_rack, key=java_string_key)]
    result: list[int] = []
    for row in range(max((len(c) for c in columns), default=0)):
        result.extend(column[row] for column in columns if row < len(column))
    return result


def _replica_index(first_replica_index: int, second_replica_shift: int, replica_index: int, n: int) -> int:
    """Kafka's ``replicaIndex``: the position of a follower relative to the leader's position."""
    shift = 1 + (second_replica_shift + replica_index) % (n - 1)
    return (first_replica_index + shift) % n


def assign_replicas_to_brokers(
    brokers: Sequence[BrokerMetadata],
    n_partitions: int,
    replication_factor: int,
    *,
    fixed_start_index: int = -1,
    start_partition_id: int = -1,
    rng: random.Random | None = None,
) -> dict[int, list[int]]:
    """Kafka's ``AdminUtils.assignReplicasToBrokers``: partition id -> replica broker ids, leader first.

    Rack-aware when any broker has a rack (then all must), rack-unaware when none has. The rack-unaware
    placement walks ``brokers`` in the given order (Kafka's callers sort by id); the rack-aware one
    walks :func:`rack_alternated_broker_list`, so the input order does not matter there.

    ``fixed_start_index`` < 0 draws the leader start position and then the follower shift from ``rng``
    (or a module-level ``Random``); otherwise both the start position and the initial follower shift
    equal ``fixed_start_index``. Partition ids start at ``max(0, start_partition_id)``; the follower
    shift grows by one at every multiple of the broker count, counted from partition 0, so adding
    partitions to an existing topic continues its pattern.

    Raises :class:`PlacementError` for a non-positive partition count or replication factor, a
    replication factor above the number of brokers, or racks on some but not all brokers.
    """
    if n_partitions <= 0:
        raise PlacementError("INVALID_PARTITIONS", "Number of partitions must be larger than 0.")
    if replication_factor <= 0:
        raise PlacementError("INVALID_REPLICATION_FACTOR", "Replication factor must be larger than 0.")
    if replication_factor > len(brokers):
        raise PlacementError(
            "INVALID_REPLICATION_FACTOR",
            f"Replication factor: {replication_factor} larger than available brokers: {len(brokers)}.",
        )
    if rng is None:
        rng = _RAND
    if all(b.rack is None for b in brokers):
        return _assign_rack_unaware(
            n_partitions,
            replication_factor,
            [b.id for b in brokers],
            fixed_start_index,
            start_partition_id,
            rng,
        )
    return _assign_rack_aware(n_partitions, replication_factor, brokers, fixed_start_index, start_partition_id, rng)


def _walk(
    n_brokers: int, n_partitions: int, fixed_start_index: int, start_partition_id: int, rng: random.Random
) -> Iterator[tuple[int, int, int]]:
    """Kafka's walk over the partitions to place, shared by both of its assignments: each partition id with
    the index of its first replica and the replica shift, which grows by one whenever the ids wrap the broker
    list. Kafka draws the start index first, then the shift (two separate nextInt calls)."""
    if fixed_start_index >= 0:
        start_index, shift = fixed_start_index, fixed_start_index
    else:
        start_index = rng.randrange(n_brokers)
        shift = rng.randrange(n_brokers)
    partition_id = max(0, start_partition_id)
    for _ in range(n_partitions):
        if partition_id > 0 and partition_id % n_brokers == 0:
            shift += 1
        yield partition_id, (partition_id + start_index) % n_brokers, shift
        partition_id += 1


def _assign_rack_unaware(
    n_partitions: int,
    replication_factor: int,
    broker_list: list[int],
    fixed_start_index: int,
    start_partition_id: int,
    rng: random.Random,
) -> dict[int, list[int]]:
    n = len(broker_list)
    result: dict[int, list[int]] = {}
    for partition_id, first, shift in _walk(n, n_partitions, fixed_start_index, start_partition_id, rng):
        replicas = [broker_list[first]]
        replicas.extend(broker_list[_replica_index(first, shift, j, n)] for j in range(replication_factor - 1))
        result[partition_id] = replicas
    return result


def _assign_rack_aware(
    n_partitions: int,
    replication_factor: int,
    brokers: Sequence[BrokerMetadata],
    fixed_start_index: int,
    start_partition_id: int,
    rng: random.Random,
) -> dict[int, list[int]]:
    rack_of: dict[int, str] = {}
    for broker in brokers:
        if broker.rack is None:
            # Kafka raises AdminOperationException, which has no error code, so its ZK-mode broker
            # answers UNKNOWN_SERVER_ERROR (ApiError.fromThrowable). We keep that code for clients'
            # sake but, unlike Kafka, keep the message: it names the problem and leaks nothing.
            raise PlacementError(
                "UNKNOWN_SERVER_ERROR",
                "Not all brokers have rack information for replica rack aware assignment.",
            )
        rack_of[broker.id] = broker.rack  # like Kafka's HashMap.put: a repeated id keeps the last rack
    num_racks = len(set(rack_of.values()))
    arranged = rack_alternated_broker_list(rack_of)
    n = len(arranged)
    result: dict[int, list[int]] = {}
    for partition_id, first, shift in _walk(n, n_partitions, fixed_start_index, start_partition_id, rng):
        leader = arranged[first]
        replicas = [leader]
        racks_with_replicas = {rack_of[leader]}
        brokers_with_replicas = {leader}
        k = 0
        for _ in range(replication_factor - 1):
            while True:
                candidate = arranged[_replica_index(first, shift * num_racks, k, n)]
                rack = rack_of[candidate]
                k += 1
                # Skip a broker whose rack already has a replica while some rack has none, and a broker
                # that already has a replica while some broker has none.
                if (rack not in racks_with_replicas or len(racks_with_replicas) == num_racks) and (
                    candidate not in brokers_with_replicas or len(brokers_with_replicas) == n
                ):
                    replicas.append(candidate)
                    racks_with_replicas.add(rack)
                    brokers_with_replicas.add(candidate)
                    break
        result[partition_id] = replicas
    return result


NOT_ALL_RACKS = (
    "Not all brokers have rack information. Add --disable-rack-aware in command line to make replica assignment "
    "without rack information."
)


def calculate_assignment(
    current: Mapping[tuple[str, int], Sequence[int]],
    brokers: Sequence[BrokerMetadata],
    rack_aware: bool,
    rng: random.Random | None = None,
) -> dict[tuple[str, int], list[int]]:
    """``kafka-reassign-partitions --generate``'s proposal (``ReassignPartitionsCommand.calculateAssignment``):
    per topic, in the HashMap's order, :func:`assign_replicas_to_brokers` over ``brokers`` from scratch with the
    topic's partition count and the replication factor of its first partition in that map's order. Racks are
    dropped unless ``rack_aware``; then brokers with and without racks mixed are refused, as Kafka does."""
    with_rack = sum(1 for b in brokers if b.rack is not None)
    if rack_aware and with_rack not in (0, len(brokers)):
        raise PlacementError("INVALID_REPLICA_ASSIGNMENT", NOT_ALL_RACKS)
    metas = list(brokers) if rack_aware else [BrokerMetadata(b.id, None) for b in brokers]
    topics: dict[str, dict[int, int]] = {}
    for (topic, p), replicas in current.items():
        topics.setdefault(topic, {})[p] = len(replicas)
    out: dict[tuple[str, int], list[int]] = {}
    for topic in java_hashmap_order(list(topics)):
        _, first = java_hashmap_order([(topic, p) for p in topics[topic]])[0]
        placed = assign_replicas_to_brokers(metas, len(topics[topic]), topics[topic][first], rng=rng)
        for p, replicas in placed.items():
            out[(topic, p)] = list(replicas)
    return out
