"""The ``/admin`` request znodes other tools write for the controller to act on."""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from zkmodel.errors import ZnodeFormatError
from zkmodel.fields import as_broker_ids, check_version, dumps, get_int, get_list, get_str, parse_object


class TopicPartition(NamedTuple):
    """A topic's partition (Kafka's ``TopicPartition``). A named tuple, not a dataclass: a 100,000-partition
    request hashes and builds one a dozen times per partition across the wire, the controller and the image, and
    a tuple hashes and compares in C (a dict lookup costs half a frozen dataclass's) and builds in 0.6 of its time."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


def encode_partition_list(partitions: Sequence[TopicPartition]) -> bytes:
    """``{"version":1,"partitions":[{"topic":..,"partition":..}]}``: the body of both the preferred-election
    request znode and the ISR change notifications."""
    return dumps({"version": 1, "partitions": [{"topic": tp.topic, "partition": tp.partition} for tp in partitions]})


def _entries(path: str, obj: dict[str, Any]) -> list[dict[str, Any]]:
    entries = get_list(path, obj, "partitions")
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise ZnodeFormatError(path, f"'partitions'[{i}] must be an object")
    return entries


def _topic_partition(path: str, entry: dict[str, Any]) -> TopicPartition:
    topic = get_str(path, entry, "topic")
    if not topic:
        raise ZnodeFormatError(path, "'topic' must not be empty")
    return TopicPartition(topic, get_int(path, entry, "partition", minimum=0))


@dataclass(frozen=True)
class PartitionReassignmentZnode:
    """The legacy (pre-KIP-455) ``/admin/reassign_partitions`` request: targets per partition.

    Decoding also accepts the CLI file's optional ``log_dirs`` (ignored) because operators hand-write
    this node from such files.
    """

    partitions: Sequence[tuple[TopicPartition, tuple[int, ...]]]

    def encode(self) -> bytes:
        return dumps(
            {
                "version": 1,
                "partitions": [
                    {"topic": tp.topic, "partition": tp.partition, "replicas": list(reps)}
                    for tp, reps in self.partitions
                ],
            }
        )

    @classmethod
    def decode(cls, path: str, data: bytes | None) -> "PartitionReassignmentZnode":
        obj = parse_object(path, data)
        check_version(path, obj, (1,))
        seen: set[TopicPartition] = set()
        out = []
        for entry in _entries(path, obj):
            tp = _topic_partition(path, entry)
            if tp in seen:
                raise ZnodeFormatError(path, f"partition {tp} is listed more than once")
            seen.add(tp)
            out.append((tp, as_broker_ids(path, f"replicas of {tp}", entry.get("replicas"))))
        return cls(tuple(out))

    def as_dict(self) -> dict[TopicPartition, tuple[int, ...]]:
        return dict(self.partitions)


@dataclass(frozen=True)
class PreferredReplicaElectionZnode:
    """``/admin/preferred_replica_election``: partitions whose preferred replica should lead."""

    partitions: Sequence[TopicPartition]

    def encode(self) -> bytes:
        return encode_partition_list(self.partitions)

    @classmethod
    def decode(cls, path: str, data: bytes | None) -> "PreferredReplicaElectionZnode":
        obj = parse_object(path, data)
        check_version(path, obj, (1,))
        return cls(tuple(dict.fromkeys(_topic_partition(path, e) for e in _entries(path, obj))))
