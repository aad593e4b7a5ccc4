"""What the sides of :mod:`bench.bulk_writes` write, and the raw side writing it. The payloads are encoded
beforehand with zkmodel's encoders, so that only the I/O is timed: a topic's creation (config, topic znode v3
with a topic id, ``partitions``, each partition and its state), its reassignment (the topic znode with RS/AR/RR,
each state with the next leader epoch), placed as Kafka places replicas (random start) on brokers 1-6.

The raw side: a plain kazoo client on its chroot writes what the controller writes: per topic one multi
(``client.transaction()`` ... ``commit_async()``) creating ``/config/topics/<t>``, ``/brokers/topics/<t>`` (v3, with
a topic id), ``.../partitions``, and per partition ``.../partitions/<p>`` and ``.../partitions/<p>/state``,
``--window`` multis in flight. For the reassignment, per topic one multi of setData: the topic znode with
adding/removing replicas, and its partitions' states with the next leader epoch (every write the controller makes;
Kafka's controller also reads the states first, ours writes conditional on the zkVersions it holds instead). The
literal "setData of the topic znodes" alone (pipelined ``set_async``) is shown too, for reference. Raw uses kazoo as
shipped (its own threading handler, not the node's ``NodeHandler``). The controller creates no ``/config/changes``
notification for a new topic (Kafka does not either); the bench checks that.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from kazoo.client import KazooClient, TransactionRequest
from kazoo.exceptions import RolledBackError
from kazoo.protocol.serialization import Create as KazooCreate
from kazoo.security import OPEN_ACL_UNSAFE

from zkmodel import paths
from zkmodel.configs import EntityConfig
from zkmodel.placement import BrokerMetadata, assign_replicas_to_brokers
from zkmodel.reassignment import ReplicaAssignment
from zkmodel.topics import PartitionState, TopicAssignment
from zkmodel.uuid import random_uuid

BROKERS = range(1, 7)  # broker 1 is the node, 2-6 the fakes
REPLICATION = 3
#: How long a client waits for one request (CreateTopics batch, the AlterPartitionReassignments).
REQUEST_TIMEOUT_S = 900.0

Assignment = dict[int, tuple[int, ...]]


@dataclass
class Side:
    """One chroot's topics: name -> assignment and topic id (the raw and kafka sides' are chosen here; ours are
    read back from ZooKeeper once the controller placed them)."""

    assignments: dict[str, Assignment] = field(default_factory=dict)
    topic_ids: dict[str, str] = field(default_factory=dict)


def place(names: Iterable[str], partitions: int) -> Side:
    """Kafka's placement (random start, as the controller does) with fresh topic ids."""
    brokers = [BrokerMetadata(b, None) for b in BROKERS]
    side = Side()
    for name in names:
        placed = assign_replicas_to_brokers(brokers, partitions, REPLICATION)
        side.assignments[name] = {p: tuple(r) for p, r in placed.items()}
        side.topic_ids[name] = random_uuid()
    return side


def initial_state(replicas: Sequence[int], controller_epoch: int) -> PartitionState:
    """A new partition's state as the controller writes it: every replica is live (brokers 1-6)."""
    return PartitionState(replicas[0], 0, controller_epoch, tuple(replicas))


def create_nodes(side: Side, name: str, controller_epoch: int) -> list[tuple[str, bytes | None]]:
    """The znodes of one topic's creation multi, in the controller's order: config, topic, ``partitions``, then
    per partition its znode and its state."""
    assignment = side.assignments[name]
    nodes: list[tuple[str, bytes | None]] = [
        (paths.entity_config("topics", name), EntityConfig({}).encode()),
        (paths.topic(name), TopicAssignment(assignment, topic_id=side.topic_ids[name], version=3).encode()),
        (paths.topic_partitions(name), None),
    ]
    for p, replicas in assignment.items():
        nodes.append((paths.partition(name, p), None))
        nodes.append((paths.partition_state(name, p), initial_state(replicas, controller_epoch).encode()))
    return nodes


def moved(replicas: Sequence[int]) -> list[int]:
    """The reassignment target: the three brokers (of 1-6) that hold no replica, so every move adds three
    replicas and removes three whatever the placement; led by the first of them after the current leader."""
    return sorted(set(BROKERS) - set(replicas), key=lambda b: (b - replicas[0]) % len(BROKERS))


def topic_with_moves(side: Side, name: str, moves: dict[int, ReplicaAssignment]) -> bytes:
    """The topic znode with RS/AR/RR for the partitions in ``moves``, the others as placed."""
    current = {p: moves.get(p, ReplicaAssignment(r)) for p, r in side.assignments[name].items()}
    return TopicAssignment(
        {p: m.replicas for p, m in current.items()},
        adding_replicas={p: m.adding for p, m in current.items()},
        removing_replicas={p: m.removing for p, m in current.items()},
        topic_id=side.topic_ids[name],
        version=3,
    ).encode()


def bumped_state(replicas: Sequence[int], controller_epoch: int) -> bytes:
    """A state after the reassignment's epoch bump: same leader and ISR, the next leader epoch."""
    return initial_state(replicas, controller_epoch)._replace(leader_epoch=1).encode()


def reassign_nodes(side: Side, name: str, controller_epoch: int) -> list[tuple[str, bytes]]:
    """The setData of one topic's reassignment: the topic znode with RS/AR/RR, then each state with the next
    leader epoch (same leader and ISR)."""
    assignment = side.assignments[name]
    moves = {p: ReplicaAssignment(r).reassign_to(moved(r)) for p, r in assignment.items()}
    nodes: list[tuple[str, bytes]] = [(paths.topic(name), topic_with_moves(side, name, moves))]
    for p, replicas in assignment.items():
        nodes.append((paths.partition_state(name, p), bumped_state(replicas, controller_epoch)))
    return nodes


@dataclass
class Counter:
    done: int = 0


def commit_pipelined(
    transactions: Iterable[TransactionRequest], window: int, counter: Counter | None = None, timeout: float = 120.0
) -> None:
    """Commit each kazoo transaction, ``window`` in flight; raises the first failed op's error."""
    pending: deque[Any] = deque()

    def drain() -> None:
        for result in pending.popleft().get(timeout=timeout):
            if isinstance(result, Exception) and not isinstance(result, RolledBackError):
                raise result
        if counter is not None:
            counter.done += 1

    for t in transactions:
        pending.append(t.commit_async())
        if len(pending) >= window:
            drain()
    while pending:
        drain()


def raw_multis(
    client: KazooClient, multis: Sequence[Sequence[tuple[str, bytes | None]]], window: int, counter: Counter
) -> None:
    """One kazoo transaction of creates per entry, ``window`` in flight."""
    chroot = client.chroot or ""

    def transactions() -> Iterator[TransactionRequest]:
        for multi in multis:
            t = client.transaction()
            for path, data in multi:
                if data is None:  # null data, as Kafka writes parents: kazoo's create() takes bytes only
                    t._add(KazooCreate(chroot + path, None, OPEN_ACL_UNSAFE, 0), None)
                else:
                    t.create(path, data)
            yield t

    commit_pipelined(transactions(), window, counter, REQUEST_TIMEOUT_S)


def raw_set_multis(
    client: KazooClient, multis: Sequence[Sequence[tuple[str, bytes]]], window: int, counter: Counter
) -> None:
    """One kazoo transaction of setData per entry, ``window`` in flight."""

    def transactions() -> Iterator[TransactionRequest]:
        for multi in multis:
            t = client.transaction()
            for path, data in multi:
                t.set_data(path, data)
            yield t

    commit_pipelined(transactions(), window, counter, REQUEST_TIMEOUT_S)


def raw_sets(client: KazooClient, writes: Sequence[tuple[str, bytes]], window: int, counter: Counter) -> None:
    """Plain pipelined setData (kazoo ``set_async``), ``window`` in flight."""
    pending: deque[Any] = deque()
    for path, data in writes:
        pending.append(client.set_async(path, data))
        if len(pending) >= window:
            pending.popleft().get(timeout=REQUEST_TIMEOUT_S)
            counter.done += 1
    while pending:
        pending.popleft().get(timeout=REQUEST_TIMEOUT_S)
        counter.done += 1
