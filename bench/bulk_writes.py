"""Bulk admin writes three ways, on the same ZooKeeper in the same run: through a real client and our node,
as raw pipelined ZooKeeper writes of the same znodes, and as a replay of Apache Kafka 3.9's own ZooKeeper
requests for the same work. CreateTopics of ``--topics`` x ``--partitions`` (RF 3) in batches of ``--batch``,
then one AlterPartitionReassignments of every one of those partitions. Target: raw time / our time >= 0.7.

One standalone ZooKeeper (``forceSync=no``, as every local benchmark here), and per round one fresh chroot per
side (``--sides``, default ``ours,raw,kafka``):

- **ours**: a real ``bridgekeeper node`` (``process.roles=broker,controller``, broker 1) on its chroot, with
  brokers 2-6 registered as fakes (:func:`bench.nodescale.register_fake_brokers`), so RF 3 over brokers 1-6
  places like a six-broker cluster. CreateTopics goes through confluent-kafka's ``AdminClient.create_topics``,
  one batch after another, each awaited; the node answers once its metadata cache shows every new partition's
  leader (``controller/wire/handlers/topics.py``), which is part of the timed path. AlterPartitionReassignments
  goes through kafka-python's ``KafkaAdminClient.alter_partition_reassignments`` (confluent-kafka 2.16 has no
  such call; the client is told the controller's id up front, as it would otherwise ask a random known broker,
  and the fakes have no listener), one request naming every partition, each moved to the three brokers that do
  not hold it; the clock stops when the request is answered, i.e. once the controller has written RS/AR/RR into
  every topic znode and, as Kafka's controller does (phase A1), bumped the leader epoch of every moving
  partition's state. The fake brokers never fetch and the node's own replica catch-up is set too slow to
  finish (``bridgekeeper.replica.catchup.rate.bytes.per.sec=1``), so the moves stay pending and no completion
  work runs beside the next measurement; the node is stopped once it has answered (with the moves pending, its
  replica manager re-reads every lagging topic's config each 0.1 s tick, which at full scale keeps it busy).
- **raw**: a plain kazoo client on its chroot writes what the controller writes, payloads encoded beforehand
  with zkmodel's encoders (only the I/O is timed): per topic one multi (``client.transaction()`` ...
  ``commit_async()``) creating ``/config/topics/<t>``, ``/brokers/topics/<t>`` (v3, with a topic id),
  ``.../partitions``, and per partition ``.../partitions/<p>`` and ``.../partitions/<p>/state``, ``--window``
  multis in flight. For the reassignment, per topic one multi of setData: the topic znode with
  adding/removing replicas, and its partitions' states with the next leader epoch (every write the controller
  makes; Kafka's controller also reads the states first, ours writes conditional on the zkVersions it holds
  instead). The literal "setData of the topic znodes" alone (pipelined ``set_async``) is shown too, for
  reference. Raw uses kazoo as shipped (its own threading handler, not the node's ``NodeHandler``). The
  controller creates no ``/config/changes`` notification for a new topic (Kafka does not either); the bench
  checks that.
- **kafka**: kazoo replaying, on its chroot, the ZooKeeper requests a Kafka 3.9 broker in ZooKeeper mode that
  is also the controller makes for the same work, read from Kafka's sources (``core/src/main/scala/kafka/``)
  at tag 3.9.0-rc3; payloads encoded beforehand with the same encoders as raw, placement as Kafka's
  (:func:`place`). Everything goes through one session with at most ``--kafka-in-flight`` (10) requests
  unanswered: ``ZooKeeperClient.handleRequests`` takes a permit of a semaphore sized
  ``zookeeper.max.in.flight.requests`` (``ZkConfigs.ZK_MAX_IN_FLIGHT_REQUESTS`` = 10) per request, and the
  broker's request handlers and its controller share that one client (``KafkaServer`` builds one
  ``KafkaZkClient``). A "fenced multi" below is ``KafkaZkClient.wrapRequestWithControllerEpochCheck``: a multi
  of [check ``/controller_epoch`` at the controller's zkVersion, the write].

  CreateTopics. The request handler (``ZkAdminManager.createTopics``, which walks the request's topics one by
  one; ``AdminZkClient.validateTopicCreate`` and ``createTopicWithAssignment``; ``KafkaZkClient``), per topic,
  each request awaited before the next:

  1. exists ``/admin/delete_topics/<t>`` (``isTopicMarkedForDeletion``);
  2. exists ``/brokers/topics/<t>`` (``topicExists``);
  3. getChildren ``/brokers/topics`` when the name holds ``.`` or ``_`` (``Topic.hasCollisionChars``, then
     ``getAllTopicsInCluster``) -- every timed topic here (``orders.events-NNNNN``), no warm-up topic;
  4. getData ``/controller`` (``setOrCreateEntityConfigs``: ``getControllerRegistration``, as brokers build
     their client with ``enableEntityConfigControllerCheck``);
  5. multi [check ``/controller`` at that version, setData ``/config/topics/<t>``], which fails with NoNode
     (``setOrCreateEntityConfigs`` sets first);
  6. create ``/config/topics/<t>`` (``createOrSet`` -> ``createRecursive``);
  7. create ``/brokers/topics/<t>``, v3 with a new topic id (``writeTopicPartitionAssignment`` ->
     ``createTopicAssignment`` -> ``createRecursive``);
  8. getData ``/brokers/topics/<t>`` (``ZkAdminManager.populateIds`` -> ``getTopicIdsForTopics``: the answer
     carries the topic id for callers allowed DescribeConfigs, i.e. always without an authorizer).

  Meanwhile the controller, on its watch of ``/brokers/topics``' children (``TopicChangeHandler`` ->
  ``KafkaController.processTopicChange``), per event: getChildren ``/brokers/topics`` re-arming the watch;
  getData of every new topic znode, watched (``getReplicaAssignmentAndTopicIdForTopics``; the
  ``PartitionModificationsHandler``s); then ``onNewPartitionCreation`` ->
  ``ZkPartitionStateMachine.initializeLeaderAndIsrForPartitions`` -> ``createTopicPartitionStatesRaw``: three
  rounds of fenced multis creating, each round awaited in full before the next (``handleRequests``), one per
  new topic for ``.../partitions``, one per new partition for ``.../partitions/<p>``, one per new partition for
  ``.../partitions/<p>/state``. The replica state machine's NewReplica and OnlineReplica steps write nothing
  for a new partition. The request is answered once the metadata cache holds every new partition
  (``DelayedCreatePartitions``, completed by the controller's UpdateMetadata): in the replay a batch ends when
  the controller has written its last topic's states, and the next batch starts then. The handler and the
  controller run as two threads, as in Kafka, so the controller picks up whatever topics exist when its watch
  fires.

  AlterPartitionReassignments (``KafkaController.processApiPartitionReassignment``): once per request, exists
  ``/admin/reassign_partitions`` (``maybeRemoveFromZkReassignment`` -> ``reassignPartitionsInProgress``); then
  per partition, serially on the controller thread (``maybeTriggerPartitionReassignment`` ->
  ``onPartitionReassignment``), four requests:

  1. fenced multi of setData ``/brokers/topics/<t>`` at any version, the whole topic's assignment with this
     partition's RS/AR/RR (``updateCurrentReassignment`` -> ``updateReplicaAssignmentForPartition`` ->
     ``setTopicAssignmentRaw``): a topic of 10 partitions is rewritten 10 times, each time with one more move;
  2. getData of the state (``isReassignmentComplete`` -> ``getTopicPartitionStates``: the ISR lacks the new
     replicas, so phase A);
  3. getData of the state again (``updateLeaderEpochAndSendRequest`` -> ``updateLeaderEpoch`` re-reads it);
  4. fenced multi of setData of the state with the next leader epoch at the version just read
     (``updateLeaderAndIsr`` -> ``setTopicPartitionStatesRaw``).

  Not replayed: what costs no ZooKeeper request -- the LeaderAndIsr, UpdateMetadata and StopReplica requests
  to brokers (``ControllerBrokerRequestBatch``), the replica state machine's NewReplica step for the adding
  replicas, the ISR-change handler (not registered from IBP 2.7, ``isAlterPartitionEnabled``); what happens
  after the answer -- the PartitionModifications events fired by the controller's own topic-znode writes (a
  getData per topic; the watches are armed, so ZooKeeper's notifications are part of the phase); and Kafka's
  own CPU: JSON, and the collision check's decoding and filtering of every topic name. The replay's
  getChildren reads only the count (kazoo decoding up to 10,000 names per topic in Python would cost more than
  the round trip; ZooKeeper still builds and sends the whole list), and its controller takes the new topics
  from the creation order, which the handler follows one topic at a time. Partitions of one topic are
  reassigned in order, topic after topic (Kafka walks the request's map in hash order; same requests).

The first round checks that every side holds the same znodes: every path under ``/brokers/topics`` and
``/config/topics`` on each chroot, configs byte for byte, topic znodes and states by shape (replica counts,
epochs, version, topic id present; the placement itself is random in the controller, as in Kafka).

Phases rotate (round r starts with the r-th side: ours, raw, kafka in round 1, raw, kafka, ours in round 2),
after a warm-up of ``--warmup`` topics on every side, and each phase starts once the node and ZooKeeper are
idle again, so that the metadata cache's reaction to one phase does not slow the next. Between rounds the
chroots are deleted and a new node starts. Per phase the table shows wall time and the CPU seconds of the
node, ZooKeeper and this process (the clients). Each round also times one round trip after the warm-up (the
median of ``--rtt-samples`` serial exists on an idle ZooKeeper), through kazoo as the replay sends them and over
a bare socket without client threads (:func:`bare_round_trip`, nearer what Kafka's Java client pays), shown
beside the table with the kafka side's request counts times each: its reassignment is four serial requests per
partition, so round-trip bound, and the bare figure bounds what Kafka itself would take from below. The machine
is shared: load averages are printed at start and end.

    .venv/bin/python -m bench.bulk_writes [--topics 10000] [--partitions 10] [--batch 1000] [--rounds 1]
        [--window 1000] [--warmup 100] [--heap-mb 1024] [--profile DIR] [--sides ours,raw,kafka]
        [--kafka-in-flight 10] [--rtt-samples 1000]
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter as Tally
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import confluent_kafka
import kafka
import orjson
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin import NewTopic as KafkaNewTopic  # type: ignore[attr-defined]
from kafka import KafkaAdminClient
from kafka import TopicPartition as KafkaTopicPartition
from kazoo.client import KazooClient, TransactionRequest
from kazoo.exceptions import NoNodeError, RolledBackError
from kazoo.handlers.threading import AsyncResult
from kazoo.protocol.serialization import (
    CheckVersion,
    Close,
    Connect,
    Exists,
    GetChildren2,
    GetData,
    SetData,
    Transaction,
    int_int_struct,
    int_struct,
    reply_header_struct,
)
from kazoo.protocol.serialization import Create as KazooCreate
from kazoo.retry import KazooRetry
from kazoo.security import OPEN_ACL_UNSAFE
from rich.console import Console
from rich.table import Table

from bench import nodescale
from bench.failover_load import Progress
from bench.zkpopulate import topic_names
from controller.devstack.localzk import LocalZooKeeper
from controller.zk.bulk_read import read_children, read_data
from zkmodel import paths
from zkmodel.configs import EntityConfig
from zkmodel.placement import BrokerMetadata, assign_replicas_to_brokers
from zkmodel.reassignment import ReplicaAssignment
from zkmodel.topics import PartitionState, TopicAssignment
from zkmodel.uuid import random_uuid

ROOT = "/bk-bulk"
BROKERS = range(1, 7)  # broker 1 is the node, 2-6 the fakes
REPLICATION = 3
SIDES = ("ours", "raw", "kafka")
#: ``zookeeper.max.in.flight.requests``' default (Kafka's ``ZkConfigs.ZK_MAX_IN_FLIGHT_REQUESTS``).
KAFKA_IN_FLIGHT = 10
#: The controller epoch the kafka and raw sides write when no node runs (``--sides`` without ours).
DEFAULT_EPOCH = 1
#: How long a client waits for one request (CreateTopics batch, the AlterPartitionReassignments).
REQUEST_TIMEOUT_S = 900.0
#: The node's replica catch-up never finishes at 1 byte/s: reassignments stay pending (see the docstring). No
#: controlled shutdown: stopping the node must leave the states as the reassignment wrote them (for the check).
#: The fake brokers are registrations without a node marker, which a node refuses to join unless told to.
NODE_OVERRIDES = {
    "bridgekeeper.replica.catchup.rate.bytes.per.sec": "1",
    "controlled.shutdown.enable": "false",
    "bridgekeeper.unsafe.join.chroot.with.kafka.brokers": "true",
}

Assignment = dict[int, tuple[int, ...]]
T = TypeVar("T")


# -- processes -------------------------------------------------------------------------------------------------
def wait_active(node: nodescale.Node, zk: KazooClient, timeout: float = 120.0) -> None:
    """Until the node's controller has finished its failover (its own metric) and ``zk`` (a client on the
    node's chroot) sees it in ``/controller`` and ``/controller_epoch``."""
    deadline = time.monotonic() + timeout
    while True:
        if nodescale.metric(node.metrics, nodescale.FAILOVER_METRIC):  # 0 until the failover finished
            found = zk.exists(paths.CONTROLLER) and zk.exists(paths.CONTROLLER_EPOCH)
            if found and orjson.loads(zk.get(paths.CONTROLLER)[0])["brokerid"] == node.broker_id:
                return
        if node.process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(
                f"the node never became the active controller (znodes {sorted(zk.get_children('/'))}); "
                f"its log ends:\n{node.log.read_text()[-2000:]}"
            )
        time.sleep(0.2)


def kazoo(connect: str) -> KazooClient:
    client = KazooClient(
        hosts=connect, timeout=30.0, connection_retry=KazooRetry(max_tries=-1, delay=0.1, max_delay=0.5)
    )
    client.start(timeout=30)
    return client


def round_trip(client: KazooClient, path: str, samples: int) -> float:
    """Median seconds of ``samples`` serial exists of ``path``, each awaited before the next."""
    times = []
    for _ in range(samples):
        start = time.perf_counter()
        client.exists(path)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bare_round_trip(connect: str, path: str, samples: int) -> float:
    """Median seconds of ``samples`` serial exists of ``path`` over a plain socket of this thread's own (one
    session, no client threads): the round trip without kazoo's hand-offs between threads, nearer what Kafka's
    Java client pays."""
    host, port = connect.split(",")[0].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def send(body: bytes) -> None:
            sock.sendall(int_struct.pack(len(body)) + body)

        def receive() -> bytes:
            (length,) = int_struct.unpack(_read_exactly(sock, int_struct.size))
            return _read_exactly(sock, length)

        send(bytes(Connect(0, 0, 30_000, 0, b"\0" * 16, False).serialize()))
        receive()
        times = []
        for xid in range(1, samples + 1):
            request = int_int_struct.pack(xid, Exists.type) + bytes(Exists(path, None).serialize())
            start = time.perf_counter()
            send(request)
            reply = receive()
            times.append(time.perf_counter() - start)
            answered, _zxid, err = reply_header_struct.unpack_from(reply)
            if answered != xid or err not in (0, NoNodeError.code):
                raise RuntimeError(f"exists {path}: xid {answered} (sent {xid}), error {err}")
        send(int_int_struct.pack(samples + 1, Close.type))
        receive()
    return statistics.median(times)


def _read_exactly(sock: socket.socket, n: int) -> bytes:
    data = bytearray()
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("ZooKeeper closed the connection")
        data += chunk
    return bytes(data)


# -- what gets written -----------------------------------------------------------------------------------------
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


def kafka_reassign_steps(side: Side, name: str, controller_epoch: int) -> list[tuple[str, bytes, str, bytes]]:
    """Per partition of one topic, in order: the topic znode as Kafka's controller rewrites it for that
    partition (every partition moved so far), the state's path and its bumped state."""
    assignment = side.assignments[name]
    moves: dict[int, ReplicaAssignment] = {}
    steps = []
    for p, replicas in assignment.items():
        moves[p] = ReplicaAssignment(replicas).reassign_to(moved(replicas))
        steps.append(
            (
                paths.topic(name),
                topic_with_moves(side, name, moves),
                paths.partition_state(name, p),
                bumped_state(replicas, controller_epoch),
            )
        )
    return steps


def read_side(client: KazooClient, names: Sequence[str]) -> Side:
    """Topic ids and assignments as the topic znodes hold them."""
    side = Side()
    found = read_data(client, [paths.topic(n) for n in names], timeout=300)
    for name in names:
        result = found[paths.topic(name)]
        if result is None or result[0] is None:
            raise RuntimeError(f"topic {name} was not created")
        obj = orjson.loads(result[0])
        side.assignments[name] = {int(p): tuple(r) for p, r in obj["partitions"].items()}
        side.topic_ids[name] = obj["topic_id"]
    return side


# -- the timed paths: ours and raw -----------------------------------------------------------------------------
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


def ours_create(admin: AdminClient, names: Sequence[str], partitions: int, batch: int, counter: Counter) -> None:
    """confluent-kafka CreateTopics, ``batch`` topics per request, each request awaited before the next."""
    for start in range(0, len(names), batch):
        chunk = names[start : start + batch]
        futures = admin.create_topics(
            [KafkaNewTopic(n, num_partitions=partitions, replication_factor=REPLICATION) for n in chunk],
            operation_timeout=REQUEST_TIMEOUT_S,
            request_timeout=REQUEST_TIMEOUT_S + 60,
        )
        for future in futures.values():
            future.result()  # raises KafkaException with the topic's error
        counter.done += len(chunk)


def ours_reassign(admin: KafkaAdminClient, targets: dict[KafkaTopicPartition, list[int]]) -> None:
    """kafka-python AlterPartitionReassignments, every partition in one request."""
    answered = admin.alter_partition_reassignments(targets, timeout_ms=int(REQUEST_TIMEOUT_S * 1000))
    failed = {tp: err for tp, err in answered.items() if err is not None}
    if failed or len(answered) != len(targets):
        shown = ", ".join(f"{tp.topic}-{tp.partition}: {err}" for tp, err in list(failed.items())[:5])
        raise RuntimeError(f"AlterPartitionReassignments: {len(answered)}/{len(targets)} answered; failed: {shown}")


# -- the timed paths: Kafka's own requests, replayed -----------------------------------------------------------
class ChildCount(GetChildren2):  # type: ignore[misc]
    """getChildren2 (what the Java client's ``getChildren`` with a ``Children2Callback`` sends, as Kafka's
    ``ZooKeeperClient`` does) whose answer is read for its count only: ZooKeeper still builds and sends every
    name and the znode's Stat."""

    @classmethod
    def deserialize(cls, data: bytes, offset: int) -> int:
        return int(int_struct.unpack_from(data, offset)[0])


class _Permit(AsyncResult):  # type: ignore[misc]
    """kazoo's async result that gives its in-flight permit back the moment the answer is read."""

    def __init__(self, handler: Any, permits: threading.Semaphore) -> None:
        super().__init__(handler)
        self._permits = permits

    def set(self, value: Any = None) -> None:
        self._permits.release()
        super().set(value)

    def set_exception(self, exception: BaseException) -> None:
        self._permits.release()
        super().set_exception(exception)


class KafkaZk:
    """One kazoo session standing in for Kafka's ``ZooKeeperClient``: every request takes a permit of
    ``in_flight`` before it is sent (``handleRequests``), whichever thread sends it; counts what it sends."""

    def __init__(self, client: KazooClient, in_flight: int) -> None:
        self.client = client
        self.chroot = client.chroot or ""
        self.permits = threading.Semaphore(in_flight)
        self.sent: Tally[str] = Tally()
        self._lock = threading.Lock()
        self.epoch_version = 0  # /controller_epoch's zkVersion, which every fenced multi checks

    def path(self, path: str) -> str:
        return self.chroot + path

    def send(self, kind: str, request: Any) -> Any:
        self.permits.acquire()
        result = _Permit(self.client.handler, self.permits)
        with self._lock:
            self.sent[kind] += 1
        self.client._call(request, result)
        return result

    def call(self, kind: str, request: Any) -> Any:
        return self.send(kind, request).get(timeout=REQUEST_TIMEOUT_S)

    def all(self, kind: str, requests: Iterable[Any]) -> list[Any]:
        """Send every request (as permits allow), then wait for all the answers: ``handleRequests``."""
        pending = [self.send(kind, r) for r in requests]
        return [p.get(timeout=REQUEST_TIMEOUT_S) for p in pending]

    def fenced(self, op: Any) -> Transaction:
        """``wrapRequestWithControllerEpochCheck``: [check /controller_epoch at the controller's zkVersion, op]."""
        return Transaction([CheckVersion(self.path(paths.CONTROLLER_EPOCH), self.epoch_version), op])

    def create(self, path: str, data: bytes | None) -> KazooCreate:
        return KazooCreate(self.path(path), data, OPEN_ACL_UNSAFE, 0)

    def prepare(self, controller_epoch: int, broker_id: int) -> None:
        """What a Kafka cluster's chroot holds before the work: the controller's znodes and the parents."""
        for parent in (paths.BROKER_TOPICS, "/config/topics", paths.DELETE_TOPICS):
            self.client.ensure_path(parent)
        registration = {"version": 2, "brokerid": broker_id, "timestamp": str(int(time.time() * 1000))}
        self.client.create(paths.CONTROLLER, orjson.dumps({**registration, "kraftControllerEpoch": -1}))
        self.client.create(paths.CONTROLLER_EPOCH, str(controller_epoch).encode())
        self.epoch_version = self.client.exists(paths.CONTROLLER_EPOCH).version


def check_multi(results: Sequence[Any]) -> None:
    for result in results:
        if isinstance(result, Exception) and not isinstance(result, RolledBackError):
            raise result


class KafkaCreate:
    """CreateTopics as a Kafka 3.9 broker that is the controller makes it, ``batch`` topics per request: the
    request handler's requests per topic in this thread, the controller's in its own (see the docstring)."""

    def __init__(self, zk: KafkaZk, side: Side, names: Sequence[str], controller_epoch: int) -> None:
        self.zk = zk
        self.names = list(names)
        self.nodes = {n: create_nodes(side, n, controller_epoch) for n in self.names}
        self.handled = 0  # topics the request handler has created
        self.done = 0  # topics whose partition states the controller has written
        self.events = 0  # the controller's topic-change events
        self.base = 0  # topics that existed before (warm-up)
        self._changed = threading.Event()
        self._stopping = False
        self._error: BaseException | None = None
        self._cond = threading.Condition()

    def _watch(self, _event: Any) -> None:
        self._changed.set()

    def _children(self) -> int:
        """getChildren of /brokers/topics re-arming the watch (``getAllTopicsInCluster(registerWatch = true)``)."""
        return int(self.zk.call("getChildren", ChildCount(self.zk.path(paths.BROKER_TOPICS), self._watch)))

    def prime(self) -> None:
        """The controller's watch, as an active controller holds it before any request; untimed."""
        self.base = self._children()

    # the controller --------------------------------------------------------------------------------------------
    def _controller(self) -> None:
        try:
            while True:
                self._changed.wait()
                self._changed.clear()
                if self._stopping:
                    return
                self._topic_change()
        except BaseException as exc:
            with self._cond:
                self._error = exc
                self._cond.notify_all()

    def _topic_change(self) -> None:
        """``processTopicChange`` -> ``onNewPartitionCreation`` -> ``createTopicPartitionStatesRaw``."""
        zk = self.zk
        self.events += 1
        exist = self._children() - self.base
        new = self.names[self.done : exist]
        if not new:
            return
        zk.all("getData", (GetData(zk.path(paths.topic(n)), self._noop) for n in new))
        topics = [zk.fenced(zk.create(*self.nodes[n][2])) for n in new]
        check_all(zk.all("multi", topics))
        parts = [zk.fenced(zk.create(path, data)) for n in new for path, data in self.nodes[n][3::2]]
        check_all(zk.all("multi", parts))
        states = [zk.fenced(zk.create(path, data)) for n in new for path, data in self.nodes[n][4::2]]
        check_all(zk.all("multi", states))
        with self._cond:
            self.done = exist
            self._cond.notify_all()

    @staticmethod
    def _noop(_event: Any) -> None:
        """The ``PartitionModificationsHandler`` the controller registers per topic: its events come after the
        answers and are not replayed."""

    # the request handler ---------------------------------------------------------------------------------------
    def _topic(self, name: str) -> None:
        """``ZkAdminManager.createTopics`` for one topic."""
        zk = self.zk
        config_path, config = self.nodes[name][0]
        topic_path, topic = self.nodes[name][1]
        if zk.call("exists", Exists(zk.path(paths.delete_topic_marker(name)), None)) is not None:
            raise RuntimeError(f"{name} is marked for deletion")
        if zk.call("exists", Exists(zk.path(topic_path), None)) is not None:
            raise RuntimeError(f"{name} exists")
        if "." in name or "_" in name:
            zk.call("getChildren", ChildCount(zk.path(paths.BROKER_TOPICS), None))
        _data, stat = zk.call("getData", GetData(zk.path(paths.CONTROLLER), None))
        check = CheckVersion(zk.path(paths.CONTROLLER), stat.version)
        results = zk.call("multi", Transaction([check, SetData(zk.path(config_path), config, -1)]))
        if not isinstance(results[-1], NoNodeError):
            raise RuntimeError(f"setData of {config_path} before its creation answered {results!r}")
        zk.call("create", zk.create(config_path, config))
        zk.call("create", zk.create(topic_path, topic))
        zk.call("getData", GetData(zk.path(topic_path), None))

    def run(self, batch: int) -> None:
        controller = threading.Thread(target=self._controller, name="kafka-controller", daemon=True)
        controller.start()
        try:
            for start in range(0, len(self.names), batch):
                for name in self.names[start : start + batch]:
                    self._topic(name)
                    self.handled += 1
                    if self._error is not None:
                        raise self._error
                end = min(start + batch, len(self.names))
                with self._cond:  # DelayedCreatePartitions: answered once every partition has its state
                    while self.done < end and self._error is None:
                        self._cond.wait(1.0)
                if self._error is not None:
                    raise self._error
        finally:
            self._stopping = True
            self._changed.set()
            controller.join(timeout=REQUEST_TIMEOUT_S)


def check_all(answers: Iterable[Sequence[Any]]) -> None:
    for answer in answers:
        check_multi(answer)


def kafka_reassign(zk: KafkaZk, steps: Sequence[Sequence[tuple[str, bytes, str, bytes]]], counter: Counter) -> None:
    """AlterPartitionReassignments as Kafka 3.9's controller makes it: one exists, then four requests per
    partition, each awaited before the next (see the docstring)."""
    zk.call("exists", Exists(zk.path(paths.REASSIGN_PARTITIONS), None))
    for topic_steps in steps:
        for topic_path, topic, state_path, state in topic_steps:
            check_multi(zk.call("multi", zk.fenced(SetData(zk.path(topic_path), topic, -1))))
            zk.call("getData", GetData(zk.path(state_path), None))
            _data, stat = zk.call("getData", GetData(zk.path(state_path), None))
            check_multi(zk.call("multi", zk.fenced(SetData(zk.path(state_path), state, stat.version))))
        counter.done += 1


@dataclass
class Sample:
    seconds: float
    node_cpu: float  # the node process (0 when it is not running or, on the other sides, idles)
    zk_cpu: float
    own_cpu: float  # this process: the Kafka client or kazoo


class Meter:
    """Runs one phase in a worker thread with a live status line, after the node (while it runs) and ZooKeeper
    went idle; measures its wall time and the CPU each process spent meanwhile."""

    def __init__(self, progress: Progress, node_pid: int | None, zk_pid: int, profile_dir: Path | None = None) -> None:
        self.progress = progress
        self.node_pid = node_pid  # None once the node is stopped, or when ours is not run
        self.zk_pid = zk_pid
        self.profile_dir = profile_dir  # py-spy of the node during each phase while it runs, one file per phase

    def _node_cpu(self) -> float:
        return 0.0 if self.node_pid is None else nodescale.cpu_seconds(self.node_pid)

    def settle(self) -> None:
        nodescale.settle([self.zk_pid] if self.node_pid is None else [self.node_pid, self.zk_pid])

    def run(self, label: str, fn: Callable[[], T], status: Callable[[], str]) -> tuple[Sample, T]:
        self.progress.show(f"{label}: waiting for the node and ZooKeeper to go idle ...", force=True)
        self.settle()
        profile = None
        if self.profile_dir is not None and self.node_pid is not None:
            profile = self.profile_dir / (label.replace("/", "-").replace(":", "").replace(" ", "_") + ".txt")
        with nodescale.profiled(self.node_pid or 0, profile, gil=True):
            return self._run(label, fn, status)

    def _run(self, label: str, fn: Callable[[], T], status: Callable[[], str]) -> tuple[Sample, T]:
        node0, zk0, own0 = self._node_cpu(), nodescale.cpu_seconds(self.zk_pid), time.process_time()
        future: Future[T] = Future()

        def work() -> None:
            try:
                future.set_result(fn())
            except BaseException as exc:
                future.set_exception(exc)

        # a daemon thread: Ctrl-C in the main thread stops the node and ZooKeeper without waiting for it
        worker = threading.Thread(target=work, name="bench-phase", daemon=True)
        start = time.perf_counter()
        worker.start()
        while True:
            try:
                result = future.result(timeout=0.2)
                break
            except TimeoutError:
                self.progress.show(f"{label}: {status()}, {time.perf_counter() - start:6.1f}s")
        seconds = time.perf_counter() - start
        sample = Sample(
            seconds, self._node_cpu() - node0, nodescale.cpu_seconds(self.zk_pid) - zk0, time.process_time() - own0
        )
        self.progress.done(f"{label}: {seconds:8.3f}s")
        return sample, result


# -- checking that the sides wrote the same znodes -------------------------------------------------------------
def list_tree(client: KazooClient, top: str) -> list[str]:
    """Every znode under ``top`` (not ``top`` itself), parents before children; multiRead per level."""
    out: list[str] = []
    level = [top]
    while level:
        found = read_children(client, level, timeout=300)
        level = [f"{p.rstrip('/')}/{c}" for p in level for c in found[p] or ()]
        out.extend(level)
    return out


def shape(path: str, data: bytes | None) -> Any:
    """What must agree between the sides: placement and topic ids are each side's own."""
    if data is None:
        return None
    if path.startswith("/brokers/topics/") and path.count("/") == 3:
        obj = orjson.loads(data)
        return (
            len(data),
            obj["version"],
            "topic_id" in obj,
            {p: len(r) for p, r in obj["partitions"].items()},
            {p: len(r) for p, r in obj.get("adding_replicas", {}).items()},
            {p: len(r) for p, r in obj.get("removing_replicas", {}).items()},
        )
    if path.endswith("/state"):
        obj = orjson.loads(data)
        rest = {k: v for k, v in obj.items() if k not in ("leader", "isr")}
        return len(data), list(obj), rest, len(obj["isr"]), obj["leader"] in obj["isr"]
    return data


def compare(clients: dict[str, KazooClient]) -> list[str]:
    """Differences between the sides' topic trees, each against the first; empty when they hold the same
    znodes."""
    problems: list[str] = []
    trees = {}
    for side, client in clients.items():
        znodes = [*list_tree(client, paths.BROKER_TOPICS), *list_tree(client, "/config/topics")]
        found = read_data(client, znodes, timeout=300)
        trees[side] = {p: shape(p, r[0]) if r else "missing" for p, r in found.items()}
    first, *others = list(trees)
    a = trees[first]
    for other in others:
        b = trees[other]
        only_a, only_b = sorted(a.keys() - b.keys()), sorted(b.keys() - a.keys())
        if only_a:
            problems.append(f"{len(only_a)} znodes only in {first} (not {other}), e.g. {only_a[:3]}")
        if only_b:
            problems.append(f"{len(only_b)} znodes only in {other}, e.g. {only_b[:3]}")
        differ = [p for p in a.keys() & b.keys() if a[p] != b[p]]
        if differ:
            p = sorted(differ)[0]
            problems.append(f"{len(differ)} znodes differ, e.g. {p}: {first} {a[p]!r} vs {other} {b[p]!r}")
    for side, client in clients.items():
        changes = read_children(client, [paths.CONFIG_CHANGES])[paths.CONFIG_CHANGES] or []
        if changes:
            problems.append(f"{side} wrote {len(changes)} /config/changes notifications")
    return problems


def wipe(root: KazooClient, chroot: str) -> None:
    """Delete a chroot's whole tree: pipelined multis of deletes, deepest znodes first."""
    znodes = [*sorted(list_tree(root, chroot), key=lambda p: p.count("/"), reverse=True), chroot]

    def transactions() -> Iterator[TransactionRequest]:
        for start in range(0, len(znodes), 500):
            t = root.transaction()
            for path in znodes[start : start + 500]:
                t.delete(path)
            yield t

    commit_pipelined(transactions(), 16)


# -- a round ---------------------------------------------------------------------------------------------------
@dataclass
class Results:
    samples: dict[str, list[Sample]] = field(default_factory=dict)
    round_trips: list[float] = field(default_factory=list)  # seconds through kazoo, one per round
    bare_round_trips: list[float] = field(default_factory=list)  # seconds over a bare socket, one per round
    #: What the kafka side sent per phase (the last round's), and its controller's topic-change events per round.
    requests: dict[str, Tally[str]] = field(default_factory=dict)
    events: list[int] = field(default_factory=list)

    def add(self, key: str, sample: Sample) -> None:
        self.samples.setdefault(key, []).append(sample)

    def has(self, key: str) -> bool:
        return key in self.samples

    def median(self, key: str) -> float:
        return statistics.median(s.seconds for s in self.samples[key])

    def cpu(self, key: str) -> tuple[float, float, float]:
        got = self.samples[key]
        return (
            statistics.median(s.node_cpu for s in got),
            statistics.median(s.zk_cpu for s in got),
            statistics.median(s.own_cpu for s in got),
        )


def rotated(sides: Sequence[str], rnd: int) -> list[str]:
    """The phase order of round ``rnd``: it starts with the ``rnd``-th side."""
    k = (rnd - 1) % len(sides)
    return [*sides[k:], *sides[:k]]


Step = tuple[str, Callable[[], None], Callable[[], str]]


def run_round(
    rnd: int, args: argparse.Namespace, server: LocalZooKeeper, root: KazooClient, progress: Progress, out: Results
) -> None:
    label = f"round {rnd}/{args.rounds}"
    sides: list[str] = args.sides
    chroots = {side: f"{ROOT}/r{rnd}-{side}" for side in sides}
    for chroot in chroots.values():
        root.ensure_path(chroot)
    names = topic_names(args.topics)
    warm = [f"warmup-{rnd}-{i:04d}" for i in range(args.warmup)]
    zk_process = server.members[0].process
    assert zk_process is not None
    zk_pid = zk_process.pid
    with tempfile.TemporaryDirectory(prefix="bk-bulk-") as tmp:
        clients = {side: kazoo(server.connect_string + chroot) for side, chroot in chroots.items()}
        extra: list[KazooClient] = []
        node: nodescale.Node | None = None
        try:
            epoch = DEFAULT_EPOCH
            admin: AdminClient | None = None
            if "ours" in sides:
                fakes = kazoo(server.connect_string + chroots["ours"])
                extra.append(fakes)
                nodescale.register_fake_brokers(fakes)
                progress.show(f"{label}: starting the node (broker 1, broker,controller) ...", force=True)
                node = nodescale.Node(
                    Path(tmp),
                    server.connect_string + chroots["ours"],
                    nodescale.CONTROLLER_ID,
                    "broker,controller",
                    NODE_OVERRIDES,
                )
                wait_active(node, clients["ours"])
                epoch = int(clients["ours"].get(paths.CONTROLLER_EPOCH)[0])
                progress.done(f"{label}: node serving at {node.bootstrap}, controller epoch {epoch}")
                # librdkafka's own log (connection refused by the fakes' listeners, which do not exist) is muted:
                # an error that matters fails the topic's future
                quiet = logging.getLogger("bench.bulk_writes.librdkafka")
                quiet.disabled = True
                admin = AdminClient({"bootstrap.servers": node.bootstrap, "socket.timeout.ms": 60_000}, logger=quiet)
            if "raw" in sides:
                for parent in (paths.BROKER_TOPICS, "/config/topics"):  # the node makes these in its chroot at start
                    clients["raw"].ensure_path(parent)
            kafka_zk: KafkaZk | None = None
            if "kafka" in sides:
                kafka_zk = KafkaZk(clients["kafka"], args.kafka_in_flight)
                kafka_zk.prepare(epoch, nodescale.CONTROLLER_ID)
            meter = Meter(progress, node.pid if node is not None else None, zk_pid, args.profile)
            raw_side = place([*warm, *names], args.partitions)
            kafka_side = place([*warm, *names], args.partitions)

            # warm-up: every side, a few topics each, untimed
            if warm:
                if admin is not None:
                    ours_create(admin, warm, args.partitions, args.batch, Counter())
                if "raw" in sides:
                    raw_multis(clients["raw"], [create_nodes(raw_side, n, epoch) for n in warm], args.window, Counter())
                if kafka_zk is not None:
                    warm_up = KafkaCreate(kafka_zk, kafka_side, warm, epoch)
                    warm_up.prime()
                    warm_up.run(args.batch)

            # one round trip, on an idle (and warmed-up) ZooKeeper
            meter.settle()
            out.round_trips.append(round_trip(root, ROOT, args.rtt_samples))
            out.bare_round_trips.append(bare_round_trip(server.connect_string, ROOT, args.rtt_samples))
            progress.done(
                f"{label}: one round trip {out.round_trips[-1] * 1000:.3f} ms through kazoo, "
                f"{out.bare_round_trips[-1] * 1000:.3f} ms over a bare socket (medians of serial exists)"
            )

            # CreateTopics
            creates = [create_nodes(raw_side, n, epoch) for n in names] if "raw" in sides else []
            per_topic = 3 + 2 * args.partitions
            steps: dict[str, Step] = {}
            if admin is not None:
                ours_done = Counter()
                ours_admin = admin
                steps["ours"] = (
                    "create ours",
                    lambda: ours_create(ours_admin, names, args.partitions, args.batch, ours_done),
                    lambda: f"{ours_done.done:,}/{len(names):,} topics",
                )
            if "raw" in sides:
                raw_done = Counter()
                steps["raw"] = (
                    "create raw",
                    lambda: raw_multis(clients["raw"], creates, args.window, raw_done),
                    lambda: f"{raw_done.done:,}/{len(names):,} topic multis",
                )
            if kafka_zk is not None:
                kafka_create = KafkaCreate(kafka_zk, kafka_side, names, epoch)
                kafka_create.prime()
                before = kafka_zk.sent.copy()
                steps["kafka"] = (
                    "create kafka",
                    lambda: kafka_create.run(args.batch),
                    lambda: (
                        f"{kafka_create.handled:,}/{len(names):,} topics handled, "
                        f"{kafka_create.done:,} with partition states"
                    ),
                )
            for side in rotated(sides, rnd):
                key, fn, status = steps[side]
                out.add(key, meter.run(f"{label}: {key}", fn, status)[0])
            if kafka_zk is not None:
                out.requests["create kafka"] = kafka_zk.sent - before
                out.events.append(kafka_create.events)
            ours_side: Side | None = None
            if "ours" in sides:
                progress.show(f"{label}: reading back ours' placement ...", force=True)
                ours_side = read_side(clients["ours"], names)
            if rnd == 1 and len(sides) > 1:
                progress.show(f"{label}: comparing the trees after CreateTopics ...", force=True)
                problems = compare(clients)
                progress.done(
                    f"{label}: after CreateTopics {', '.join(sides)} hold the same {per_topic}-znode topics"
                    if not problems
                    else f"{label}: MISMATCH after CreateTopics: " + "; ".join(problems)
                )
                if problems:
                    raise SystemExit(1)

            # AlterPartitionReassignments
            reassign: dict[str, list[Step]] = {}
            ra: KafkaAdminClient | None = None
            if node is not None and ours_side is not None:
                targets = {
                    KafkaTopicPartition(n, p): moved(r) for n in names for p, r in ours_side.assignments[n].items()
                }
                ra = KafkaAdminClient(
                    bootstrap_servers=node.bootstrap,
                    client_id="bench-bulk-writes",
                    request_timeout_ms=int((REQUEST_TIMEOUT_S + 60) * 1000),
                )
                # kafka-python asks a random known broker which one is the controller; the fakes have no listener
                ra._controller_id = nodescale.CONTROLLER_ID
                ours_ra = ra
                reassign["ours"] = [
                    (
                        "reassign ours",
                        lambda: ours_reassign(ours_ra, targets),
                        lambda: f"{len(targets):,} partitions in one request",
                    )
                ]
            if "raw" in sides:
                sets = [reassign_nodes(raw_side, n, epoch) for n in names]
                topic_sets = [s[0] for s in sets]
                raw_reassigned, topics_done = Counter(), Counter()
                reassign["raw"] = [
                    (
                        "reassign raw",
                        lambda: raw_set_multis(clients["raw"], sets, args.window, raw_reassigned),
                        lambda: f"{raw_reassigned.done:,}/{len(names):,} topic multis",
                    ),
                    (
                        "reassign raw, topic znodes only",
                        lambda: raw_sets(clients["raw"], topic_sets, args.window, topics_done),
                        lambda: f"{topics_done.done:,}/{len(names):,} setData",
                    ),
                ]
            if kafka_zk is not None:
                kafka_steps = [kafka_reassign_steps(kafka_side, n, epoch) for n in names]
                kafka_reassigned = Counter()
                zk = kafka_zk
                reassign["kafka"] = [
                    (
                        "reassign kafka",
                        lambda: kafka_reassign(zk, kafka_steps, kafka_reassigned),
                        lambda: (
                            f"{kafka_reassigned.done * args.partitions:,}/{len(names) * args.partitions:,} partitions"
                        ),
                    )
                ]
            try:
                for side in rotated(sides, rnd):
                    before = kafka_zk.sent.copy() if kafka_zk is not None else Tally()
                    for key, fn, status in reassign[side]:
                        out.add(key, meter.run(f"{label}: {key}", fn, status)[0])
                    if side == "kafka" and kafka_zk is not None:
                        out.requests["reassign kafka"] = kafka_zk.sent - before
                    if side == "ours" and node is not None:
                        # With the moves pending the node's replica manager re-reads every lagging topic's config
                        # each tick and never goes idle at full scale: it has done its part, so it stops here.
                        progress.show(f"{label}: stopping the node ...", force=True)
                        node.stop()
                        meter.node_pid = None
            finally:
                if ra is not None:
                    ra.close()
            if rnd == 1 and len(sides) > 1:
                progress.show(f"{label}: comparing the trees after AlterPartitionReassignments ...", force=True)
                problems = compare(clients)
                progress.done(
                    f"{label}: after AlterPartitionReassignments {', '.join(sides)} hold the same znodes"
                    if not problems
                    else f"{label}: MISMATCH after AlterPartitionReassignments: " + "; ".join(problems)
                )
                if problems:
                    raise SystemExit(1)
        finally:
            if node is not None:
                node.stop()
            for client in [*clients.values(), *extra]:
                client.stop()
                client.close()
    if rnd < args.rounds:
        progress.show(f"{label}: deleting the chroots ...", force=True)
        for chroot in chroots.values():
            wipe(root, chroot)
        progress.done(f"{label}: chroots deleted")


# -- report ----------------------------------------------------------------------------------------------------
def handler_requests(names: Sequence[str]) -> int:
    """The request handler's serial requests for CreateTopics of ``names`` (see the docstring)."""
    return sum(8 if "." in n or "_" in n else 7 for n in names)


def report(args: argparse.Namespace, out: Results) -> None:
    topics, partitions = args.topics, args.partitions
    created = topics * (3 + 2 * partitions)
    reassigned = topics * (1 + partitions)
    table = Table(
        title=f"bulk admin writes, median of {args.rounds} round(s); ratio = the other side's time / our time "
        "(above 1: ours is faster)"
    )
    columns = (
        "operation",
        "znodes",
        "ours",
        "raw",
        "kafka",
        "raw/ours",
        "target",
        "kafka/ours",
        "CPU s ours: node/ZK/client",
        "CPU s raw: ZK/kazoo",
        "CPU s kafka: ZK/kazoo",
    )
    for column in columns:
        table.add_column(column, justify="left" if column == "operation" else "right")

    def seconds(key: str) -> str:
        return f"{out.median(key):.3f}s" if key and out.has(key) else "-"

    def ratio(other: str, ours: str) -> str:
        if not (other and out.has(other) and out.has(ours)):
            return "-"
        return f"[bold]{out.median(other) / out.median(ours):.2f}[/bold]"

    def clients_cpu(key: str) -> str:
        if not (key and out.has(key)):
            return "-"
        _node, zk, own = out.cpu(key)
        return f"{zk:.2f} / {own:.2f}"

    rows = [
        (f"CreateTopics {topics:,} x {partitions} (batches of {args.batch:,})", created, "create", ">= 0.7", ""),
        (f"AlterPartitionReassignments of {topics * partitions:,}", reassigned, "reassign", ">= 0.7", ""),
        ("  vs. raw setData of the topic znodes alone", topics, "reassign", "", ", topic znodes only"),
    ]
    for name, znodes, phase, target, raw_suffix in rows:
        ours_key, raw_key = f"{phase} ours", f"{phase} raw{raw_suffix}"
        kafka_key = "" if raw_suffix else f"{phase} kafka"
        ours_cpu = "-"
        if target and out.has(ours_key):
            node_cpu, zk_cpu, own_cpu = out.cpu(ours_key)
            ours_cpu = f"{node_cpu:.2f} / {zk_cpu:.2f} / {own_cpu:.2f}"
        table.add_row(
            name,
            f"{znodes:,}",
            seconds(ours_key),
            seconds(raw_key),
            seconds(kafka_key),
            ratio(raw_key, ours_key),
            target,
            ratio(kafka_key, ours_key),
            ours_cpu,
            clients_cpu(raw_key),
            clients_cpu(kafka_key),
        )
    Console(width=220).print(table)
    for key, samples in out.samples.items():
        print(f"  rounds, {key}: " + ", ".join(f"{s.seconds:.3f}s" for s in samples))
    rtt, bare = statistics.median(out.round_trips), statistics.median(out.bare_round_trips)

    def ms(values: Sequence[float]) -> str:
        return ", ".join(f"{v * 1000:.3f}" for v in values)

    print(
        f"one round trip (median of {args.rtt_samples} serial exists on an idle ZooKeeper): {rtt * 1000:.3f} ms "
        f"through kazoo (per round: {ms(out.round_trips)}), {bare * 1000:.3f} ms over a bare socket "
        f"(per round: {ms(out.bare_round_trips)})"
    )

    def floor(requests: int) -> str:
        return f"x one round trip = {requests * rtt:.1f} s through kazoo, {requests * bare:.1f} s bare"

    if "create kafka" in out.requests:
        sent = out.requests["create kafka"]
        serial = handler_requests(topic_names(topics))
        print(
            f"kafka CreateTopics sent {sum(sent.values()):,} requests ({_kinds(sent)}): the request handler's "
            f"{serial:,} one after another ({serial / topics:.0f} per topic; {floor(serial)}; the phase took "
            f"{out.median('create kafka') / topics * 1000:.2f} ms a topic), the controller's in "
            f"{statistics.median(out.events):.0f} topic-change events (per round: "
            f"{', '.join(str(e) for e in out.events)}), at most {args.kafka_in_flight} in flight in all"
        )
    if "reassign kafka" in out.requests:
        sent = out.requests["reassign kafka"]
        total = sum(sent.values())
        print(
            f"kafka AlterPartitionReassignments sent {total:,} requests ({_kinds(sent)}), all one after another: "
            f"{floor(total)}; the phase took {out.median('reassign kafka'):.1f} s, "
            f"{out.median('reassign kafka') / total * 1000:.3f} ms a request"
        )
    print(
        f"ours: confluent-kafka {confluent_kafka.version()} create_topics, kafka-python {kafka.__version__} "
        f"alter_partition_reassignments; raw: kazoo multis, {args.window} in flight; kafka: Kafka 3.9's ZooKeeper "
        f"requests replayed with kazoo, at most {args.kafka_in_flight} in flight"
    )


def _kinds(sent: Tally[str]) -> str:
    return ", ".join(f"{kind} {count:,}" for kind, count in sorted(sent.items()))


def parse_sides(text: str) -> list[str]:
    chosen = [s.strip() for s in text.split(",") if s.strip()]
    unknown = set(chosen) - set(SIDES)
    if unknown or not chosen or len(set(chosen)) != len(chosen):
        raise argparse.ArgumentTypeError(f"a comma-separated subset of {','.join(SIDES)}, each once")
    return [s for s in SIDES if s in chosen]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--topics", type=int, default=10_000)
    parser.add_argument("--partitions", type=int, default=10)
    parser.add_argument("--batch", type=int, default=1000, help="topics per CreateTopics request (1000)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--window", type=int, default=1000, help="raw multis in flight (1000)")
    parser.add_argument("--warmup", type=int, default=100, help="untimed topics created first on every side (100)")
    parser.add_argument("--heap-mb", type=int, default=1024, help="ZooKeeper JVM heap")
    parser.add_argument(
        "--profile", type=Path, metavar="DIR", help="py-spy of the node (GIL holder only) in each of its phases, in DIR"
    )
    parser.add_argument(
        "--sides",
        type=parse_sides,
        default=list(SIDES),
        help="which sides run, comma-separated (ours,raw,kafka); without ours no node starts",
    )
    parser.add_argument(
        "--kafka-in-flight",
        type=int,
        default=KAFKA_IN_FLIGHT,
        help=f"the kafka side's requests in flight: zookeeper.max.in.flight.requests ({KAFKA_IN_FLIGHT})",
    )
    parser.add_argument(
        "--rtt-samples", type=int, default=1000, help="serial exists timed per round for one round trip (1000)"
    )
    args = parser.parse_args(argv)
    if min(args.topics, args.partitions, args.batch, args.rounds, args.window) < 1 or args.warmup < 0:
        parser.error("--topics, --partitions, --batch, --rounds and --window must be at least 1")
    if min(args.kafka_in_flight, args.rtt_samples) < 1:
        parser.error("--kafka-in-flight and --rtt-samples must be at least 1")
    # SIGTERM unwinds like Ctrl-C, so that the node and ZooKeeper are stopped in order
    signal.signal(signal.SIGTERM, lambda _sig, _frame: sys.exit(143))
    wall = time.perf_counter()
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} cores)")
    print(
        f"CreateTopics of {args.topics:,} topics x {args.partitions} partitions (RF {REPLICATION}) in batches of "
        f"{args.batch:,}, then one AlterPartitionReassignments of {args.topics * args.partitions:,} partitions; "
        f"{args.rounds} round(s); sides {','.join(args.sides)}"
    )
    progress = Progress()
    out = Results()
    progress.show("starting ZooKeeper ...", force=True)
    with LocalZooKeeper(heap_mb=args.heap_mb) as server:
        progress.done(f"ZooKeeper serving at {server.connect_string}")
        root = kazoo(server.connect_string)
        try:
            for rnd in range(1, args.rounds + 1):
                run_round(rnd, args, server, root, progress, out)
        finally:
            root.stop()
            root.close()
    print()
    report(args, out)
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"wall time {time.perf_counter() - wall:.1f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
