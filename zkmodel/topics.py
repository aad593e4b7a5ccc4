"""Topic assignment znodes (``/brokers/topics/<t>``) and partition state znodes (``.../state``).

The assignment carries KIP-455's adding/removing replicas, so a reassignment survives controller
failover in ZooKeeper alone; the state znode's zkVersion is the partition epoch that fences ISR updates.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import orjson

from zkmodel.errors import ZnodeFormatError
from zkmodel.fields import (
    as_broker_ids,
    as_partition_key,
    broker_ids_fast,
    check_version,
    dumps,
    get_int,
    get_list,
    get_object,
    get_optional_str,
    parse_object,
)
from zkmodel.jvmorder import scala_immutable_map_order, scala_mutable_hashmap_order
from zkmodel.uuid import is_valid_uuid

Replicas = tuple[int, ...]

#: LeaderAndIsr.NoLeader: the partition is offline.
NO_LEADER = -1
#: LeaderAndIsr.LeaderDuringDelete: written while a topic is being deleted.
LEADER_DURING_DELETE = -2
RECOVERED = 0
RECOVERING = 1

_TOPIC_TOP_KEYS = ("version", "partitions", "adding_replicas", "removing_replicas")


def _ordered(mapping: Mapping[int, Replicas]) -> dict[str, list[int]]:
    as_text = {str(p): list(r) for p, r in mapping.items()}
    return {k: as_text[k] for k in scala_mutable_hashmap_order(list(as_text))}


@dataclass(frozen=True)
class TopicAssignment:
    """The replica assignment of every partition of one topic.

    ``partitions`` holds the full replica set RS (target + origin while a move is in flight); the
    adding/removing maps hold only partitions that are being reassigned.
    """

    partitions: Mapping[int, Replicas]
    adding_replicas: Mapping[int, Replicas] = field(default_factory=dict)
    removing_replicas: Mapping[int, Replicas] = field(default_factory=dict)
    topic_id: str | None = None
    version: int = 3

    def encode(self) -> bytes:
        """Bytes as the Kafka release that writes ``version`` would write them (Scala 2.13 build)."""
        parts = _ordered(self.partitions)
        if self.version == 1:
            return dumps({"version": 1, "partitions": parts})
        adding = _ordered({p: r for p, r in self.adding_replicas.items() if r})
        removing = _ordered({p: r for p, r in self.removing_replicas.items() if r})
        values: dict[str, Any] = {
            "version": self.version,
            "partitions": parts,
            "adding_replicas": adding,
            "removing_replicas": removing,
        }
        if self.version == 2:  # 2.4-2.7 built an immutable Map4: insertion order
            return dumps(values)
        keys = list(_TOPIC_TOP_KEYS)
        if self.topic_id is not None:
            values["topic_id"] = self.topic_id
            keys.append("topic_id")
        order = scala_mutable_hashmap_order(keys, initial=_TOPIC_TOP_KEYS)
        return dumps({k: values[k] for k in order})

    @classmethod
    def decode(cls, path: str, data: bytes | None) -> "TopicAssignment":
        fast = _topic_fast(data)
        if fast is not None:
            return fast
        obj = parse_object(path, data)
        version = check_version(path, obj, (1, 2, 3))
        partitions = _replica_map(path, obj, "partitions", required=True)
        adding = _replica_map(path, obj, "adding_replicas", required=False) if version >= 2 else {}
        removing = _replica_map(path, obj, "removing_replicas", required=False) if version >= 2 else {}
        problem = _moves_problem(partitions, adding, removing)
        if problem is not None:
            raise ZnodeFormatError(path, problem)
        topic_id = get_optional_str(path, obj, "topic_id") if version >= 3 else None
        if topic_id is not None and not is_valid_uuid(topic_id):
            raise ZnodeFormatError(path, f"'topic_id' {topic_id!r} is not a Kafka Uuid")
        return cls(partitions, adding, removing, topic_id, version)

    def origin(self, partition: int) -> Replicas:
        """ORS: the replicas before the move (RS minus adding)."""
        adding = set(self.adding_replicas.get(partition, ()))
        return tuple(r for r in self.partitions[partition] if r not in adding)

    def target(self, partition: int) -> Replicas:
        """TRS: the replicas after the move (RS minus removing)."""
        removing = set(self.removing_replicas.get(partition, ()))
        return tuple(r for r in self.partitions[partition] if r not in removing)

    def is_reassigning(self, partition: int | None = None) -> bool:
        if partition is None:
            return any(self.adding_replicas.values()) or any(self.removing_replicas.values())
        return bool(self.adding_replicas.get(partition) or self.removing_replicas.get(partition))


def _moves_problem(
    partitions: Mapping[int, Replicas], adding: Mapping[int, Replicas], removing: Mapping[int, Replicas]
) -> str | None:
    """What is wrong with a topic znode's moves in flight, or None: each names partitions of the topic, and
    replicas of theirs, and no replica is both adding and removing (both decoders hold a znode to this)."""
    for what, moving in (("adding_replicas", adding), ("removing_replicas", removing)):
        for p, reps in moving.items():
            if p not in partitions:
                return f"{what} names partition {p}, which is not in 'partitions'"
            if not set(reps) <= set(partitions[p]):
                return f"{what} of partition {p} {list(reps)} is not part of its replicas {list(partitions[p])}"
    for p in adding.keys() & removing.keys():
        if set(adding[p]) & set(removing[p]):
            return f"partition {p} has replicas both adding and removing"
    return None


def _fast_replica_map(raw: object) -> dict[int, Replicas] | None:
    """A ``{"<partition>": [broker ids]}`` object as the strict reader returns it, or None to let it decide."""
    if type(raw) is not dict:
        return None
    out: dict[int, Replicas] = {}
    for key, value in raw.items():
        if not (key.isdigit() and key.isascii() and len(key) <= 9 and (len(key) == 1 or key[0] != "0")):
            return None
        replicas = broker_ids_fast(value)
        if replicas is None:
            return None
        out[int(key)] = replicas
    return out


def _topic_fast(data: bytes | None) -> TopicAssignment | None:
    """A well-formed topic znode decoded without the strict reader's per-field calls, or None to let the
    strict reader decide (and name what is wrong). It accepts only what the strict reader accepts and returns
    what it would: a failover decodes 100,000 of these, and a reassignment's metadata updates as many with
    moves in flight."""
    try:
        obj = orjson.loads(data) if data else None
    except orjson.JSONDecodeError:
        return None
    if type(obj) is not dict:
        return None
    version = obj.get("version")
    raw = obj.get("partitions")
    if type(version) is not int or version not in (1, 2, 3) or type(raw) is not dict:
        return None
    topic_id = obj.get("topic_id") if version >= 3 else None
    if topic_id is not None and (type(topic_id) is not str or not is_valid_uuid(topic_id)):
        return None
    partitions = _fast_replica_map(raw)
    if partitions is None:
        return None
    moving: list[dict[int, Replicas]] = [{}, {}]
    if version >= 2:
        for i, extra in enumerate(("adding_replicas", "removing_replicas")):
            if extra in obj:
                found = _fast_replica_map(obj[extra])
                if found is None:
                    return None
                moving[i] = found
        if _moves_problem(partitions, *moving) is not None:
            return None  # the strict reader raises it
    return TopicAssignment(partitions, moving[0], moving[1], topic_id, version)


def _replica_map(path: str, obj: Mapping[str, Any], key: str, *, required: bool) -> dict[int, Replicas]:
    raw = get_object(path, obj, key, required=required)
    return {as_partition_key(path, key, k): as_broker_ids(path, f"{key}[{k}]", v) for k, v in raw.items()}


_STATE_KEYS = ("version", "leader", "leader_epoch", "controller_epoch", "isr")
#: The key order Kafka's writer gives a state znode with a recovery state, computed once. The common shape's
#: order (``scala_immutable_map_order(_STATE_KEYS)``) is written out in :meth:`PartitionState.encode`, which a
#: failover calls a million times; tests/unit/test_znode_golden.py pins both against Kafka's bytes.
_STATE_ORDER_RECOVERY = tuple(scala_immutable_map_order([*_STATE_KEYS, "leader_recovery_state"]))


class PartitionState(NamedTuple):
    """Leader, ISR and epochs of one partition (``TopicPartitionStateZNode``).

    A named tuple rather than a frozen dataclass: a controller holds one per partition, a million of them
    at scale, and a tuple is both smaller and several times faster to build (failover decodes them all)."""

    leader: int
    leader_epoch: int
    controller_epoch: int
    isr: Replicas
    leader_recovery_state: int = RECOVERED

    def encode(self) -> bytes:
        if self.leader_recovery_state == RECOVERED:  # the common shape, in Kafka's key order
            return dumps(
                {
                    "controller_epoch": self.controller_epoch,
                    "leader": self.leader,
                    "version": 1,
                    "leader_epoch": self.leader_epoch,
                    "isr": list(self.isr),
                }
            )
        values: dict[str, Any] = {
            "version": 1,
            "leader": self.leader,
            "leader_epoch": self.leader_epoch,
            "controller_epoch": self.controller_epoch,
            "isr": list(self.isr),
        }
        values["leader_recovery_state"] = self.leader_recovery_state  # Kafka writes it only when not the default
        return dumps({k: values[k] for k in _STATE_ORDER_RECOVERY})

    @classmethod
    def decode(cls, path: str, data: bytes | None) -> "PartitionState":
        fast = _state_fast(data)
        if fast is not None:
            return fast
        obj = parse_object(path, data)
        check_version(path, obj, (1,))
        leader = get_int(path, obj, "leader", minimum=LEADER_DURING_DELETE)
        recovery = get_int(path, obj, "leader_recovery_state", default=RECOVERED)
        if recovery not in (RECOVERED, RECOVERING):
            raise ZnodeFormatError(path, f"unknown 'leader_recovery_state' {recovery}")
        return cls(
            leader=leader,
            leader_epoch=get_int(path, obj, "leader_epoch", minimum=0),
            controller_epoch=get_int(path, obj, "controller_epoch", minimum=0),
            isr=as_broker_ids(path, "'isr'", get_list(path, obj, "isr")),
            leader_recovery_state=recovery,
        )


_INT_LIMIT = 2**31
_new_state = tuple.__new__


def _state_fast(data: bytes | None) -> PartitionState | None:
    """A well-formed state znode as Kafka writes it (the five keys, no recovery state) decoded without the
    strict reader's per-field calls, or None to let the strict reader decide and name what is wrong."""
    try:
        obj = orjson.loads(data) if data else None
    except orjson.JSONDecodeError:
        return None
    if type(obj) is not dict or len(obj) != 5:
        return None
    leader = obj.get("leader")
    leader_epoch = obj.get("leader_epoch")
    controller_epoch = obj.get("controller_epoch")
    version = obj.get("version")
    if (
        type(version) is not int
        or version != 1
        or type(leader) is not int
        or type(leader_epoch) is not int
        or type(controller_epoch) is not int
        or not LEADER_DURING_DELETE <= leader < _INT_LIMIT
        or not 0 <= leader_epoch < _INT_LIMIT
        or not 0 <= controller_epoch < _INT_LIMIT
    ):
        return None
    isr = broker_ids_fast(obj.get("isr"))
    if isr is None:
        return None
    return _new_state(PartitionState, (leader, leader_epoch, controller_epoch, isr, RECOVERED))
