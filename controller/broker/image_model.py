"""The metadata cache's working model and the pure functions that build the image from znodes.

:class:`~controller.broker.metadata_cache.MetadataCache` owns the thread and the order of its two feeds; this
module holds what it works on (the listed topics with their decoded assignments and served partitions, one
update's reads gathered before anything is applied, one of its own controller's writes in flight) and how a
znode becomes a :mod:`controller.image.snapshot` record. Nothing here talks to ZooKeeper.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final, NamedTuple

from controller.image.snapshot import NO_CONTROLLER, CachedBroker, CachedPartition, CachedTopic
from controller.zk.ops import Create, Delete, Op, SetData
from controller.zk.watched import DataResult
from zkmodel import paths
from zkmodel.errors import ZnodeFormatError
from zkmodel.topic_names import is_internal
from zkmodel.topics import NO_LEADER, PartitionState, TopicAssignment

# The cache's own logger: what is logged here is the cache's doing, and operators filter on that name.
log = logging.getLogger("controller.broker.metadata_cache")

_BROKER_IDS_PREFIX: Final = paths.BROKER_IDS + "/"
_TOPICS_PREFIX: Final = paths.BROKER_TOPICS + "/"
_TOPICS_PREFIX_LEN: Final = len(_TOPICS_PREFIX)
# Tuples, not ``Create | SetData``: isinstance with a union builds it anew on every call (a tenth of the cache
# thread while a 10,000-topic CreateTopics was taken in).
DATA_WRITES: Final = (Create, SetData)
WRITES: Final = (Create, SetData, Delete)


# -- the cache thread's own model (never shared) -------------------------------------------------------------


@dataclass(slots=True)
class TopicEntry:
    """A listed topic. ``czxid`` identifies one incarnation (a re-created topic is a new topic);
    ``assignment`` is None while the znode is unreadable, and the topic is then not served.

    ``states`` holds each partition whose state znode was read, as served: the very objects the published
    snapshot shares (a partition's state is kept once, not decoded here and copied there: at a million
    partitions that copy was ~200 bytes a partition)."""

    czxid: int
    assignment: TopicAssignment | None
    states: dict[int, CachedPartition] = field(default_factory=dict)
    #: The topic znode's data version: of two sights of one incarnation, the higher version is the later.
    version: int = 0
    #: Why the assignment could not be read (with ``assignment`` None).
    error: str | None = None


@dataclass
class Model:
    controller_id: int = NO_CONTROLLER
    broker_ids: set[int] = field(default_factory=set)
    brokers: dict[int, CachedBroker] = field(default_factory=dict)
    topics: dict[str, TopicEntry] = field(default_factory=dict)
    #: Topic and state znodes that could not be decoded (path -> the error), and whether that changed since
    #: the last snapshot.
    unreadable: dict[str, str] = field(default_factory=dict)
    unreadable_changed: bool = False

    def readable(self, path: str, error: str | None) -> None:
        """Record whether ``path`` decoded (``error`` None) or not."""
        if error is None:
            if self.unreadable.pop(path, None) is not None:
                self.unreadable_changed = True
        elif self.unreadable.get(path) != error:
            self.unreadable[path] = error
            self.unreadable_changed = True

    def forget(self, name: str, topic: TopicEntry) -> list[str]:
        """``topic`` is gone: its znodes are no longer unreadable. Returns its state paths (to unwatch)."""
        state_paths = topic_state_paths(name, topic)
        for path in [paths.topic(name), *state_paths]:
            self.readable(path, None)
        return state_paths


@dataclass
class Delta:
    """Everything one update read from ZooKeeper, gathered before anything is applied: if ZooKeeper fails
    half-way, nothing is half-applied and the same dirty paths are simply retried."""

    controller_id: int | None = None
    broker_ids: set[int] | None = None
    brokers: dict[int, DataResult | None] = field(default_factory=dict)
    topic_names: set[str] | None = None
    #: None: the topic znode vanished
    topics: dict[str, TopicEntry | None] = field(default_factory=dict)
    states: dict[tuple[str, int], DataResult | None] = field(default_factory=dict)
    #: Filled when applied: the state paths of topics gone for good, whose watches are to be dropped.
    unwatch: list[str] = field(default_factory=list)


class Committed(NamedTuple):
    """One fenced multi of this node's controller: its ops and the image's paths among them; once applied, its
    results and its zxid."""

    ops: Sequence[Op]
    paths: list[str]
    results: Sequence[Any] = ()
    zxid: int = -1


# A bulk reader: paths -> data (None for a missing znode), with a data watch left on each path.
Reader = Callable[[Sequence[str], bool], dict[str, DataResult | None]]


# -- building the image from znodes ------------------------------------------------------------------------------------


def classify(path: str, brokers: set[int], topics: set[str], states: set[tuple[str, int]]) -> None:
    """Sort a dirty path into the znode kinds the cache watches (the fixed paths are looked up directly)."""
    if path.startswith(_BROKER_IDS_PREFIX):
        rest = path[len(_BROKER_IDS_PREFIX) :]
        if rest.isdigit():
            brokers.add(int(rest))
    elif (kind := znode_kind(path)) is not None:
        name, partition = kind
        if partition is None:
            topics.add(name)
        else:
            states.add((name, partition))


def topic_state_paths(name: str, topic: TopicEntry) -> list[str]:
    """The partition-state paths the cache may watch for ``topic``: its assignment's and any it served."""
    partitions = set(topic.states) | (set(topic.assignment.partitions) if topic.assignment is not None else set())
    return [paths.partition_state(name, p) for p in sorted(partitions)]


def image_paths(ops: Sequence[Op]) -> list[str]:
    """The paths ``ops`` change that the image holds: topic znodes and partition state znodes."""
    return [op.path for op in ops if isinstance(op, WRITES) and znode_kind(op.path) is not None]


def znode_kind(path: str) -> tuple[str, int | None] | None:
    """(topic, None) for a topic znode, (topic, partition) for a partition's state znode, None for the rest
    (parsed by hand: it runs for every op the controller writes)."""
    if not path.startswith(_TOPICS_PREFIX):
        return None
    rest = path[_TOPICS_PREFIX_LEN:]
    if "/" not in rest:
        return rest, None
    if not rest.endswith("/state"):
        return None  # most of a topic's creates: /partitions and /partitions/N
    parts = rest.split("/")
    if len(parts) == 4 and parts[1] == "partitions" and parts[3] == "state" and parts[2].isdigit():
        return parts[0], int(parts[2])
    return None


def rearm_points(zxids: Iterable[int]) -> dict[int, int]:
    """For each zxid of this node's writes, the zxid to re-arm its znodes' watches at: the last of its run of
    consecutive zxids. ZooKeeper numbers every transaction (``epoch << 32 | counter``), so within such a run
    nothing but these writes happened, and a watch set as of the run's end misses no one else's change, while
    one request per run, not per write, goes to the server."""
    points: dict[int, int] = {}
    run: list[int] = []
    for zxid in sorted(set(zxids)):
        if run and zxid != run[-1] + 1:
            points.update(dict.fromkeys(run, run[-1]))
            run = []
        run.append(zxid)
    if run:
        points.update(dict.fromkeys(run, run[-1]))
    return points


def decode_topic_data(
    name: str, data: bytes | None, czxid: int, version: int, known: TopicAssignment | None = None
) -> TopicEntry:
    """The topic znode's entry; ``known``: what ``data`` encodes, when the writer has it (its own write)."""
    path = paths.topic(name)
    try:
        return TopicEntry(czxid, known if known is not None else TopicAssignment.decode(path, data), version=version)
    except ZnodeFormatError as exc:
        # Kafka would read it as an empty assignment; we leave the topic out and keep watching the znode.
        log.error("metadata cache: skipping topic %s: %s", name, exc)
        return TopicEntry(czxid, None, version=version, error=str(exc))


def decode_topic(name: str, result: DataResult | None) -> TopicEntry | None:
    if result is None:
        return None
    data, stat = result
    return decode_topic_data(name, data, int(stat.czxid), int(stat.version))


def build_partition(
    p: int, assignment: TopicAssignment, decoded: PartitionState | None, version: int
) -> CachedPartition:
    """A partition as served from its assignment and its state znode (None when missing or unreadable: no
    leader, empty ISR, leader epoch -1; ``version`` is the znode's zkVersion, -1 when missing)."""
    if decoded is None:
        return CachedPartition(
            p,
            tuple(assignment.partitions[p]),
            (),
            NO_LEADER,
            -1,
            tuple(assignment.adding_replicas.get(p, ())),
            tuple(assignment.removing_replicas.get(p, ())),
            version,
        )
    return CachedPartition(
        p,
        tuple(assignment.partitions[p]),
        decoded.isr,
        decoded.leader,
        decoded.leader_epoch,
        tuple(assignment.adding_replicas.get(p, ())),
        tuple(assignment.removing_replicas.get(p, ())),
        version,
        decoded.controller_epoch,
        decoded.leader_recovery_state,
    )


def served_partition(p: int, entry: TopicEntry) -> CachedPartition:
    """Partition ``p`` of a topic with a readable assignment as served now: its kept state when the replicas
    it was built with are still the assignment's (the same object, not a copy), else rebuilt around them."""
    assert entry.assignment is not None
    assignment = entry.assignment
    kept = entry.states.get(p)
    if kept is None:
        return build_partition(p, assignment, None, -1)
    replicas = tuple(assignment.partitions[p])
    adding = tuple(assignment.adding_replicas.get(p, ()))
    removing = tuple(assignment.removing_replicas.get(p, ()))
    if kept.replicas == replicas and kept.adding == adding and kept.removing == removing:
        return kept
    # built directly: dataclasses.replace (which introspects the fields each call) was ~4% of a node's CPU
    # while a 100,000-partition reassignment was applied
    rebuilt = CachedPartition(
        p,
        replicas,
        kept.isr,
        kept.leader,
        kept.leader_epoch,
        adding,
        removing,
        kept.partition_epoch,
        kept.controller_epoch,
        kept.leader_recovery_state,
    )
    entry.states[p] = rebuilt
    return rebuilt


def build_topic(name: str, entry: TopicEntry | None) -> CachedTopic | None:
    if entry is None or entry.assignment is None:
        return None
    assignment = entry.assignment
    partitions = {p: served_partition(p, entry) for p in sorted(assignment.partitions)}
    return CachedTopic(name, assignment.topic_id, MappingProxyType(partitions), is_internal(name), assignment.version)
