"""Kafka 3.9's own ZooKeeper requests for CreateTopics and AlterPartitionReassignments, replayed with kazoo: the
kafka side of :mod:`bench.bulk_writes`. The requests are those a Kafka 3.9 broker in ZooKeeper mode that is also
the controller makes for the same work, read from Kafka's sources (``core/src/main/scala/kafka/``) at tag
3.9.0-rc3; payloads are encoded beforehand with the same encoders as the raw side (:mod:`bench.raw_writes`),
placement as Kafka's (:func:`bench.raw_writes.place`). Everything goes through one session with at most
``--kafka-in-flight`` (10) requests unanswered: ``ZooKeeperClient.handleRequests`` takes a permit of a semaphore
sized ``zookeeper.max.in.flight.requests`` (``ZkConfigs.ZK_MAX_IN_FLIGHT_REQUESTS`` = 10) per request, and the
broker's request handlers and its controller share that one client (``KafkaServer`` builds one
``KafkaZkClient``). A "fenced multi" below is ``KafkaZkClient.wrapRequestWithControllerEpochCheck``: a multi of
[check ``/controller_epoch`` at the controller's zkVersion, the write].

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
"""

from __future__ import annotations

import threading
import time
from collections import Counter as Tally
from collections.abc import Iterable, Sequence
from typing import Any

import orjson
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError, RolledBackError
from kazoo.handlers.threading import AsyncResult
from kazoo.protocol.serialization import (
    CheckVersion,
    Exists,
    GetChildren2,
    GetData,
    SetData,
    Transaction,
    int_struct,
)
from kazoo.protocol.serialization import Create as KazooCreate
from kazoo.security import OPEN_ACL_UNSAFE

from bench.raw_writes import REQUEST_TIMEOUT_S, Counter, Side, bumped_state, create_nodes, moved, topic_with_moves
from zkmodel import paths
from zkmodel.reassignment import ReplicaAssignment

#: ``zookeeper.max.in.flight.requests``' default (Kafka's ``ZkConfigs.ZK_MAX_IN_FLIGHT_REQUESTS``).
KAFKA_IN_FLIGHT = 10


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


def handler_requests(names: Sequence[str]) -> int:
    """The request handler's serial requests for CreateTopics of ``names`` (see the docstring)."""
    return sum(8 if "." in n or "_" in n else 7 for n in names)
