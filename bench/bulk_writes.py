"""Bulk admin writes through a real client vs. raw pipelined ZooKeeper writes of the same znodes (issue 15,
performance item 3): CreateTopics of ``--topics`` x ``--partitions`` (RF 3) in batches of ``--batch``, then one
AlterPartitionReassignments of every one of those partitions. Target: raw time / our time >= 0.7.

One standalone ZooKeeper, and per round two fresh chroots side by side:

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
- **raw**: a plain kazoo client on the other chroot writes what the controller writes, payloads encoded
  beforehand with zkmodel's encoders (only the I/O is timed): per topic one multi (``client.transaction()`` ...
  ``commit_async()``) creating ``/config/topics/<t>``, ``/brokers/topics/<t>`` (v3, with a topic id),
  ``.../partitions``, and per partition ``.../partitions/<p>`` and ``.../partitions/<p>/state``, ``--window``
  multis in flight. For the reassignment, per topic one multi of setData: the topic znode with
  adding/removing replicas, and its partitions' states with the next leader epoch (every write the controller
  makes; Kafka's controller also reads the states first, ours writes conditional on the zkVersions it holds
  instead). The literal "setData of the topic znodes" alone (pipelined ``set_async``) is shown too, for
  reference. Raw uses kazoo as shipped (its own threading handler, not the node's ``NodeHandler``). The
  controller creates no ``/config/changes`` notification for a new topic (Kafka does not either); the bench
  checks that.

The first round checks that both sides hold the same znodes: every path under ``/brokers/topics`` and
``/config/topics`` on both chroots, configs byte for byte, topic znodes and states by shape (replica counts,
epochs, version, topic id present; the placement itself is random in the controller, as in Kafka).

Phases alternate (ours first in odd rounds, raw first in even ones), after a warm-up of ``--warmup`` topics on
both sides, and each phase starts once the node and ZooKeeper are idle again, so that the metadata cache's
reaction to one phase does not slow the next. Between rounds both chroots are deleted and a new node starts.
Per phase the table shows wall time and the CPU seconds of the node, ZooKeeper and this process (the clients).
The machine is shared: load averages are printed at start and end.

    .venv/bin/python -m bench.bulk_writes [--topics 10000] [--partitions 10] [--batch 1000] [--rounds 1]
        [--window 1000] [--warmup 100] [--heap-mb 1024] [--profile DIR]
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import statistics
import sys
import tempfile
import threading
import time
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
from kazoo.exceptions import RolledBackError
from kazoo.protocol.serialization import Create as KazooCreate
from kazoo.retry import KazooRetry
from kazoo.security import OPEN_ACL_UNSAFE
from rich.console import Console
from rich.table import Table

from bench import nodescale
from bench.failover_load import Progress
from bench.zkpopulate import topic_names
from controller.devstack.localzk import LocalZooKeeper
from controller.zk.multiread import read_children, read_data
from zkmodel import paths
from zkmodel.configs import EntityConfig
from zkmodel.placement import BrokerMetadata, assign_replicas_to_brokers
from zkmodel.reassignment import ReplicaAssignment
from zkmodel.topics import PartitionState, TopicAssignment
from zkmodel.uuid import random_uuid

ROOT = "/bk-bulk"
BROKERS = range(1, 7)  # broker 1 is the node, 2-6 the fakes
REPLICATION = 3
#: How long a client waits for one request (CreateTopics batch, the AlterPartitionReassignments).
REQUEST_TIMEOUT_S = 900.0
#: The node's replica catch-up never finishes at 1 byte/s: reassignments stay pending (see the docstring). No
#: controlled shutdown: stopping the node must leave the states as the reassignment wrote them (for the check).
NODE_OVERRIDES = {"bridgekeeper.replica.catchup.rate.bytes.per.sec": "1", "controlled.shutdown.enable": "false"}

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


# -- what gets written -----------------------------------------------------------------------------------------
@dataclass
class Side:
    """One chroot's topics: name -> assignment and topic id (the raw side's are chosen here; ours are read
    back from ZooKeeper once the controller placed them)."""

    assignments: dict[str, Assignment] = field(default_factory=dict)
    topic_ids: dict[str, str] = field(default_factory=dict)


def place(names: Iterable[str], partitions: int) -> Side:
    """Kafka's placement (random start, as the controller does) for the raw side, with fresh topic ids."""
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
    """The znodes of one topic's creation multi, in the controller's order."""
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


def reassign_nodes(side: Side, name: str, controller_epoch: int) -> list[tuple[str, bytes]]:
    """The setData of one topic's reassignment: the topic znode with RS/AR/RR, then each state with the next
    leader epoch (same leader and ISR)."""
    assignment = side.assignments[name]
    moves = {p: ReplicaAssignment(r).reassign_to(moved(r)) for p, r in assignment.items()}
    topic = TopicAssignment(
        {p: m.replicas for p, m in moves.items()},
        adding_replicas={p: m.adding for p, m in moves.items()},
        removing_replicas={p: m.removing for p, m in moves.items()},
        topic_id=side.topic_ids[name],
        version=3,
    )
    nodes: list[tuple[str, bytes]] = [(paths.topic(name), topic.encode())]
    for p, replicas in assignment.items():
        state = initial_state(replicas, controller_epoch)
        nodes.append((paths.partition_state(name, p), state._replace(leader_epoch=1).encode()))
    return nodes


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


# -- the timed paths -------------------------------------------------------------------------------------------
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


@dataclass
class Sample:
    seconds: float
    node_cpu: float  # the node process (0 on the raw side, where it idles)
    zk_cpu: float
    own_cpu: float  # this process: the Kafka client or kazoo


class Meter:
    """Runs one phase in a worker thread with a live status line, after the node (while it runs) and ZooKeeper
    went idle; measures its wall time and the CPU each process spent meanwhile."""

    def __init__(self, progress: Progress, node_pid: int, zk_pid: int, profile_dir: Path | None = None) -> None:
        self.progress = progress
        self.node_pid: int | None = node_pid  # None once the node is stopped
        self.zk_pid = zk_pid
        self.profile_dir = profile_dir  # py-spy of the node during each phase while it runs, one file per phase

    def _node_cpu(self) -> float:
        return 0.0 if self.node_pid is None else nodescale.cpu_seconds(self.node_pid)

    def run(self, label: str, fn: Callable[[], T], status: Callable[[], str]) -> tuple[Sample, T]:
        self.progress.show(f"{label}: waiting for the node and ZooKeeper to go idle ...", force=True)
        nodescale.settle([self.zk_pid] if self.node_pid is None else [self.node_pid, self.zk_pid])
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


# -- checking that both sides wrote the same znodes ------------------------------------------------------------
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
    """What must agree between the two sides: placement and topic ids are each side's own."""
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


def compare(ours: KazooClient, raw: KazooClient) -> list[str]:
    """Differences between the two chroots' topic trees; empty when they hold the same znodes."""
    problems: list[str] = []
    trees = []
    for client in (ours, raw):
        znodes = [*list_tree(client, "/brokers/topics"), *list_tree(client, "/config/topics")]
        found = read_data(client, znodes, timeout=300)
        trees.append({p: shape(p, r[0]) if r else "missing" for p, r in found.items()})
    a, b = trees
    only_ours, only_raw = sorted(a.keys() - b.keys()), sorted(b.keys() - a.keys())
    if only_ours:
        problems.append(f"{len(only_ours)} znodes only in ours, e.g. {only_ours[:3]}")
    if only_raw:
        problems.append(f"{len(only_raw)} znodes only in raw, e.g. {only_raw[:3]}")
    differ = [p for p in a.keys() & b.keys() if a[p] != b[p]]
    if differ:
        p = sorted(differ)[0]
        problems.append(f"{len(differ)} znodes differ, e.g. {p}: ours {a[p]!r} vs raw {b[p]!r}")
    changes = read_children(ours, ["/config/changes"])["/config/changes"] or []
    if changes:
        problems.append(f"ours wrote {len(changes)} /config/changes notifications, raw none")
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

    def add(self, key: str, sample: Sample) -> None:
        self.samples.setdefault(key, []).append(sample)

    def median(self, key: str) -> float:
        return statistics.median(s.seconds for s in self.samples[key])

    def cpu(self, key: str) -> tuple[float, float, float]:
        got = self.samples[key]
        return (
            statistics.median(s.node_cpu for s in got),
            statistics.median(s.zk_cpu for s in got),
            statistics.median(s.own_cpu for s in got),
        )


def run_round(
    rnd: int, args: argparse.Namespace, server: LocalZooKeeper, root: KazooClient, progress: Progress, out: Results
) -> None:
    label = f"round {rnd}/{args.rounds}"
    ours_root, raw_root = f"{ROOT}/r{rnd}-ours", f"{ROOT}/r{rnd}-raw"
    for chroot in (ours_root, raw_root):
        root.ensure_path(chroot)
    names = topic_names(args.topics)
    warm = [f"warmup-{rnd}-{i:04d}" for i in range(args.warmup)]
    zk_process = server.members[0].process
    assert zk_process is not None
    zk_pid = zk_process.pid
    with tempfile.TemporaryDirectory(prefix="bk-bulk-") as tmp:
        fakes = kazoo(server.connect_string + ours_root)
        raw = kazoo(server.connect_string + raw_root)
        ours_zk = kazoo(server.connect_string + ours_root)
        node: nodescale.Node | None = None
        try:
            nodescale.register_fake_brokers(fakes)
            for parent in ("/brokers/topics", "/config/topics"):  # the node makes these in its chroot at start
                raw.ensure_path(parent)
            progress.show(f"{label}: starting the node (broker 1, broker,controller) ...", force=True)
            node = nodescale.Node(
                Path(tmp),
                server.connect_string + ours_root,
                nodescale.CONTROLLER_ID,
                "broker,controller",
                NODE_OVERRIDES,
            )
            wait_active(node, ours_zk)
            epoch = int(ours_zk.get(paths.CONTROLLER_EPOCH)[0])
            progress.done(f"{label}: node serving at {node.bootstrap}, controller epoch {epoch}")
            meter = Meter(progress, node.pid, zk_pid, args.profile)
            # librdkafka's own log (connection refused by the fakes' listeners, which do not exist) is muted:
            # an error that matters fails the topic's future
            quiet = logging.getLogger("bench.bulk_writes.librdkafka")
            quiet.disabled = True
            admin = AdminClient({"bootstrap.servers": node.bootstrap, "socket.timeout.ms": 60_000}, logger=quiet)
            raw_side = place([*warm, *names], args.partitions)

            # warm-up: both paths, a few topics each, untimed
            if warm:
                ours_create(admin, warm, args.partitions, args.batch, Counter())
                raw_multis(raw, [create_nodes(raw_side, n, epoch) for n in warm], args.window, Counter())

            # CreateTopics
            creates = [create_nodes(raw_side, n, epoch) for n in names]
            per_topic = len(creates[0])
            ours_done, raw_done = Counter(), Counter()

            def create_ours() -> None:
                ours_create(admin, names, args.partitions, args.batch, ours_done)

            def create_raw() -> None:
                raw_multis(raw, creates, args.window, raw_done)

            steps: list[tuple[str, Callable[[], None], Callable[[], str]]] = [
                ("create ours", create_ours, lambda: f"{ours_done.done:,}/{len(names):,} topics"),
                ("create raw", create_raw, lambda: f"{raw_done.done:,}/{len(names):,} topic multis"),
            ]
            for key, fn, status in steps if rnd % 2 else steps[::-1]:
                sample, _ = meter.run(f"{label}: {key}", fn, status)
                out.add(key, sample)
            progress.show(f"{label}: reading back ours' placement ...", force=True)
            ours_side = read_side(ours_zk, names)
            if rnd == 1:
                progress.show(f"{label}: comparing the two trees after CreateTopics ...", force=True)
                problems = compare(ours_zk, raw)
                progress.done(
                    f"{label}: after CreateTopics both chroots hold the same {per_topic}-znode topics"
                    if not problems
                    else f"{label}: MISMATCH after CreateTopics: " + "; ".join(problems)
                )
                if problems:
                    raise SystemExit(1)

            # AlterPartitionReassignments
            targets = {KafkaTopicPartition(n, p): moved(r) for n in names for p, r in ours_side.assignments[n].items()}
            sets = [reassign_nodes(raw_side, n, epoch) for n in names]
            topic_sets = [s[0] for s in sets]
            ra = KafkaAdminClient(
                bootstrap_servers=node.bootstrap,
                client_id="bench-bulk-writes",
                request_timeout_ms=int((REQUEST_TIMEOUT_S + 60) * 1000),
            )
            # kafka-python asks a random known broker which one is the controller; the fakes have no listener
            ra._controller_id = nodescale.CONTROLLER_ID
            raw_done, topics_done = Counter(), Counter()
            raw_steps: list[tuple[str, Callable[[], None], Callable[[], str]]] = [
                (
                    "reassign raw",
                    lambda: raw_set_multis(raw, sets, args.window, raw_done),
                    lambda: f"{raw_done.done:,}/{len(names):,} topic multis",
                ),
                (
                    "reassign raw, topic znodes only",
                    lambda: raw_sets(raw, topic_sets, args.window, topics_done),
                    lambda: f"{topics_done.done:,}/{len(names):,} setData",
                ),
            ]
            try:
                if rnd % 2 == 0:
                    for key, fn, status in raw_steps:
                        out.add(key, meter.run(f"{label}: {key}", fn, status)[0])
                sample, _ = meter.run(
                    f"{label}: reassign ours",
                    lambda: ours_reassign(ra, targets),
                    lambda: f"{len(targets):,} partitions in one request",
                )
                out.add("reassign ours", sample)
            finally:
                ra.close()
            # With the moves pending the node's replica manager re-reads every lagging topic's config each tick
            # and never goes idle at full scale: it has done its part, so it stops before raw runs.
            progress.show(f"{label}: stopping the node ...", force=True)
            node.stop()
            meter.node_pid = None
            if rnd % 2 == 1:
                for key, fn, status in raw_steps:
                    out.add(key, meter.run(f"{label}: {key}", fn, status)[0])
            if rnd == 1:
                progress.show(f"{label}: comparing the two trees after AlterPartitionReassignments ...", force=True)
                problems = compare(ours_zk, raw)
                progress.done(
                    f"{label}: after AlterPartitionReassignments both chroots hold the same znodes"
                    if not problems
                    else f"{label}: MISMATCH after AlterPartitionReassignments: " + "; ".join(problems)
                )
                if problems:
                    raise SystemExit(1)
        finally:
            if node is not None:
                node.stop()
            for client in (fakes, raw, ours_zk):
                client.stop()
                client.close()
    if rnd < args.rounds:
        progress.show(f"{label}: deleting both chroots ...", force=True)
        for chroot in (ours_root, raw_root):
            wipe(root, chroot)
        progress.done(f"{label}: chroots deleted")


# -- report ----------------------------------------------------------------------------------------------------
def report(args: argparse.Namespace, out: Results) -> None:
    topics, partitions = args.topics, args.partitions
    created = topics * (3 + 2 * partitions)
    reassigned = topics * (1 + partitions)
    table = Table(title=f"bulk admin writes, median of {args.rounds} round(s); ratio = raw time / our time")
    for column in ("operation", "znodes", "ours", "raw", "raw/ours", "target", "CPU s ours: node/ZK/client",
                   "CPU s raw: ZK/kazoo"):  # fmt: skip
        table.add_column(column, justify="left" if column == "operation" else "right")
    rows = [
        (f"CreateTopics {topics:,} x {partitions} (batches of {args.batch:,})", created, "create ours", "create raw",
         ">= 0.7"),
        (f"AlterPartitionReassignments of {topics * partitions:,}", reassigned, "reassign ours", "reassign raw",
         ">= 0.7"),
        ("  vs. raw setData of the topic znodes alone", topics, "reassign ours", "reassign raw, topic znodes only",
         ""),
    ]  # fmt: skip
    for name, znodes, ours_key, raw_key, target in rows:
        ours, raw = out.median(ours_key), out.median(raw_key)
        node_cpu, zk_cpu, own_cpu = out.cpu(ours_key)
        _n, raw_zk, raw_own = out.cpu(raw_key)
        table.add_row(
            name,
            f"{znodes:,}",
            f"{ours:.3f}s",
            f"{raw:.3f}s",
            f"[bold]{raw / ours:.2f}[/bold]",
            target,
            f"{node_cpu:.2f} / {zk_cpu:.2f} / {own_cpu:.2f}" if target else "",
            f"{raw_zk:.2f} / {raw_own:.2f}",
        )
    Console(width=200).print(table)
    for key, samples in out.samples.items():
        print(f"  rounds, {key}: " + ", ".join(f"{s.seconds:.3f}s" for s in samples))
    print(
        f"ours: confluent-kafka {confluent_kafka.version()} create_topics, kafka-python {kafka.__version__} "
        f"alter_partition_reassignments; raw: kazoo multis, {args.window} in flight"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--topics", type=int, default=10_000)
    parser.add_argument("--partitions", type=int, default=10)
    parser.add_argument("--batch", type=int, default=1000, help="topics per CreateTopics request (1000)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--window", type=int, default=1000, help="raw multis in flight (1000)")
    parser.add_argument("--warmup", type=int, default=100, help="untimed topics created first on both sides (100)")
    parser.add_argument("--heap-mb", type=int, default=1024, help="ZooKeeper JVM heap")
    parser.add_argument(
        "--profile", type=Path, metavar="DIR", help="py-spy of the node (GIL holder only) in each of its phases, in DIR"
    )
    args = parser.parse_args(argv)
    if min(args.topics, args.partitions, args.batch, args.rounds, args.window) < 1 or args.warmup < 0:
        parser.error("--topics, --partitions, --batch, --rounds and --window must be at least 1")
    # SIGTERM unwinds like Ctrl-C, so that the node and ZooKeeper are stopped in order
    signal.signal(signal.SIGTERM, lambda _sig, _frame: sys.exit(143))
    wall = time.perf_counter()
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} cores)")
    print(
        f"CreateTopics of {args.topics:,} topics x {args.partitions} partitions (RF {REPLICATION}) in batches of "
        f"{args.batch:,}, then one AlterPartitionReassignments of {args.topics * args.partitions:,} partitions; "
        f"{args.rounds} round(s)"
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
