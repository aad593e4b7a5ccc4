"""Metadata at scale: all-topics Metadata for a 100k-partition cluster served to 20 concurrent clients, cached
vs. uncached, and the time from a ZooKeeper change to Metadata serving it.

Everything runs on one private standalone ZooKeeper holding a Kafka-shaped tree of ``--topics`` x
``--partitions`` partitions (RF 3 on brokers 1-6, :mod:`bench.zkpopulate`); brokers 1-6 are registered by this
process (fake endpoints, so that every leader is alive). There is no controller: Metadata is a broker's answer
from its metadata cache, and the bench writes partition states itself, as a controller would; a live one would
only add its own work and hold stale copies of what the bench rewrites.

**Throughput and latency.** The node has no setting to switch its Metadata response cache off, so both
variants are served by one server process started for the purpose (``--serve``; a process of its own, so the
clients do not share its GIL): it loads the node's real broker metadata cache
(:class:`controller.broker.metadata_cache.MetadataCache`, watches and all) from the tree and runs two wire
servers on it (:class:`controller.wire.runtime.WireRuntime` with the node's :class:`Apis`), one with
``cache_metadata=True`` (the encoded all-topics body kept per metadata snapshot, what the node does) and one
with ``cache_metadata=False`` (every answer built and encoded again). A third column is a real node process
(``python -m controller.cli node``, broker-only, id 7, on the same tree): what operators run, cached, behind the
node's dispatcher and metrics. ``--clients`` client processes (forked before anything else starts), each on its
own connection, send all-topics Metadata v12 (``topics=null``) with ``--window`` requests in flight (1: the next
is sent when the previous is answered), for ``--seconds``; a client's last request is still answered and
counted, and a phase lasts until the last answer. Requests/s is all answers over that time; latency is per
request, send to the last byte of the answer, pooled over rounds. ``--rounds`` rounds run one phase per
variant, the order rotated each round, so that drift on this shared machine hits every variant. One answer of
each variant is compared byte for byte first (the cache must serve exactly what the uncached path builds).

**Change to serve.** Against the node process: ``--changes`` times, one partition's state znode is rewritten
with kazoo (its leader moved to the next ISR member, leader epoch + 1, in Kafka's partition-state JSON), then
that topic's Metadata is polled on one connection in a tight loop until the new leader and epoch show; the
figure is the time from the write's completion (kazoo's reply) to the first answer showing it. Then
``--new-topics`` topics are created the same way (topic znode, ``partitions``, every partition and its state
in one multi) until the topic appears with its leaders. For the first ``--all-topics-changes`` of each kind,
all-topics Metadata is polled too, until its body differs from the one before the write: what a client that
polls all topics waits, the node's cache update plus one rebuild of the whole cached body (built in a thread
off the node's event loop, once per snapshot however many clients ask meanwhile). The round trip of one
topic poll is printed with the figures: it is their resolution (and a poll holds the node's GIL meanwhile).

Live progress while it runs, then a table; ``os.getloadavg()`` at start and end (the machine is shared).

    .venv/bin/python -m bench.metadata_scale [--topics 10000] [--partitions 10] [--clients 20] [--seconds 10]
        [--rounds 3] [--window 1] [--changes 50] [--new-topics 20] [--all-topics-changes 10] [--no-node-column]
"""

from __future__ import annotations

import argparse
import array
import contextlib
import io
import json
import logging
import math
import multiprocessing
import os
import random
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection as Pipe
from multiprocessing.connection import wait
from pathlib import Path
from types import FrameType
from typing import Any

from kazoo.client import KazooClient
from kazoo.retry import KazooRetry
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic
from kio.schema.metadata.v12.response import MetadataResponse
from kio.schema.types import TopicName
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i16, i32

from bench import nodescale
from bench.failover_load import Progress
from bench.zkpopulate import Node as Znode
from bench.zkpopulate import kafka_topic_tree, populate, topic_names
from controller.broker.metadata_cache import MetadataCache
from controller.devstack.localzk import LocalZooKeeper
from controller.store.registration import get_or_create_cluster_id
from controller.wire.apikeys import SUPPORTED
from controller.wire.codec import encode_body, parse_request
from controller.wire.handlers.apis import Apis, NodeView
from controller.wire.runtime import WireRuntime
from controller.wire.server import DEFAULT_MAX_FRAME, Connection
from controller.zk.session import ZkSession
from zkmodel.brokers import BrokerRegistration, EndPoint
from zkmodel.topics import PartitionState, TopicAssignment
from zkmodel.uuid import random_uuid

METADATA = 3
VERSION = 12
#: The brokers the tree's replicas live on (bench.zkpopulate places them on 1-6), registered by this process.
FAKE_BROKERS = range(1, 7)
NODE_ID = 7  # the broker-only node: hosts nothing, so it has no replica work of its own
VARIANTS = ("cached", "uncached", "node")
#: Longest a client waits for one answer (uncached at 100k partitions with 20 clients queues tens of seconds).
ANSWER_TIMEOUT_S = 600.0
#: Longest the change-to-serve loop waits for a change to show.
SHOW_TIMEOUT_S = 60.0
NULL_TOPIC_ID = uuid.UUID(int=0)

log = logging.getLogger("bench.metadata_scale")


# -- the wire: frames, answers -----------------------------------------------------------------------------------


def metadata_frame(topics: Sequence[str] | None, correlation: int = 1) -> bytes:
    """One size-prefixed Metadata v12 request: all topics (``None``) or the named ones."""
    header_cls = MetadataRequest.__header_schema__
    buf = io.BytesIO()
    header = header_cls(
        request_api_key=i16(METADATA),
        request_api_version=i16(VERSION),
        correlation_id=i32(correlation),
        client_id="bench-metadata-scale",
    )
    entity_writer(header_cls)(buf, header)
    wanted = (
        None
        if topics is None
        else tuple(MetadataRequestTopic(topic_id=NULL_TOPIC_ID, name=TopicName(t)) for t in topics)
    )
    body = MetadataRequest(topics=wanted, allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    entity_writer(MetadataRequest)(buf, body)
    payload = buf.getvalue()
    return struct.pack(">i", len(payload)) + payload


def recv_answer(sock: socket.socket, buf: bytearray) -> tuple[bytearray, int]:
    """Read one size-prefixed answer into ``buf``, or into a new buffer when it does not fit; returns the
    buffer holding it and its size."""
    head = bytearray(4)
    _fill(sock, memoryview(head))
    size = struct.unpack(">i", head)[0]
    if len(buf) < size:
        buf = bytearray(size)
    _fill(sock, memoryview(buf)[:size])
    return buf, size


def _fill(sock: socket.socket, view: memoryview) -> None:
    got = 0
    while got < len(view):
        n = sock.recv_into(view[got:])
        if n == 0:
            raise ConnectionError("the server closed the connection")
        got += n


def decode_metadata(payload: bytes) -> Any:
    _header, offset = entity_reader(MetadataResponse.__header_schema__)(payload, 0)
    body, _ = entity_reader(MetadataResponse)(payload, offset)
    return body


def connect(port: int, timeout: float = ANSWER_TIMEOUT_S) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def fetch(port: int, frame: bytes) -> bytes:
    """One request on a fresh connection; the answer's payload (correlation id and body)."""
    with connect(port) as sock:
        sock.sendall(frame)
        buf, size = recv_answer(sock, bytearray())
        return bytes(buf[:size])


# -- client processes ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Task:
    port: int
    frame: bytes
    start_at: float  # time.monotonic(): CLOCK_MONOTONIC, one clock for every process of the machine
    seconds: float
    window: int


@dataclass
class ClientResult:
    answers: int
    latencies: bytes  # array('d') of seconds
    last_answer_at: float
    answer_bytes: int


def client_main(index: int, pipe: Pipe, counters: Any, parent: int) -> None:
    """A client process: run each task it is sent, answer with a ClientResult (or an error string)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the bench stops its clients itself, in order
    while True:
        while not pipe.poll(1.0):
            if os.getppid() != parent:
                return  # the bench is gone
        try:
            task = pipe.recv()
        except EOFError:
            return
        if task is None:
            return
        try:
            pipe.send(run_client(index, task, counters))
        except Exception as exc:
            pipe.send(f"client {index}: {exc!r}")


def run_client(index: int, task: Task, counters: Any) -> ClientResult:
    latencies = array.array("d")
    buf = bytearray()
    size = 0
    with connect(task.port) as sock:
        pause = task.start_at - time.monotonic()
        if pause > 0:
            time.sleep(pause)
        end_at = task.start_at + task.seconds
        sent: deque[float] = deque()
        for _ in range(task.window):
            sent.append(time.monotonic())
            sock.sendall(task.frame)
        now = time.monotonic()
        while sent:
            buf, size = recv_answer(sock, buf)
            now = time.monotonic()
            latencies.append(now - sent.popleft())
            counters[index] += 1
            if now < end_at:
                sent.append(time.monotonic())
                sock.sendall(task.frame)
    return ClientResult(len(latencies), latencies.tobytes(), now, size)


@dataclass
class PhaseResult:
    variant: str
    seconds: float
    answers: int
    latencies: list[float]
    answer_bytes: int

    @property
    def rate(self) -> float:
        return self.answers / self.seconds if self.seconds > 0 else 0.0


class ClientPool:
    """``n`` client processes, forked before the bench starts any thread or server (a fork then copies nothing
    but this interpreter), each waiting for tasks on its own pipe; :meth:`close` stops them by pid."""

    def __init__(self, n: int) -> None:
        ctx = multiprocessing.get_context("fork")
        self.counters: Any = ctx.Array("q", n, lock=False)
        self.pipes: list[Pipe] = []
        self.processes: list[Any] = []
        for i in range(n):
            ours, theirs = ctx.Pipe()
            process = ctx.Process(
                target=client_main, args=(i, theirs, self.counters, os.getpid()), name=f"client-{i}", daemon=True
            )
            process.start()
            theirs.close()
            self.pipes.append(ours)
            self.processes.append(process)

    def answered(self) -> int:
        return int(sum(self.counters))

    def run(self, variant: str, port: int, args: argparse.Namespace, progress: Progress, label: str) -> PhaseResult:
        """One phase: every client on ``port`` for ``args.seconds``, all starting together."""
        start_at = time.monotonic() + 0.5  # every client connected and waiting
        task = Task(port, metadata_frame(None), start_at, args.seconds, args.window)
        base = self.answered()
        for pipe in self.pipes:
            pipe.send(task)
        results: dict[int, ClientResult] = {}
        by_pipe = {id(p): i for i, p in enumerate(self.pipes)}
        while len(results) < len(self.pipes):
            for ready in wait([p for i, p in enumerate(self.pipes) if i not in results], timeout=0.25):
                assert isinstance(ready, Pipe)
                got = ready.recv()
                if isinstance(got, str):
                    raise RuntimeError(got)
                results[by_pipe[id(ready)]] = got
            elapsed = time.monotonic() - start_at
            if elapsed > 0:
                done = self.answered() - base
                state = "running" if elapsed < task.seconds else f"last answers ({len(results)}/{len(self.pipes)} done)"
                progress.show(f"{label}: {elapsed:5.1f}s, {done:,} answers, {done / elapsed:,.1f} req/s, {state}")
        end = max(r.last_answer_at for r in results.values())
        latencies: list[float] = []
        for r in results.values():
            latencies.extend(array.array("d", r.latencies))
        answers = sum(r.answers for r in results.values())
        size = max(r.answer_bytes for r in results.values())
        return PhaseResult(variant, end - start_at, answers, latencies, size)

    def close(self) -> None:
        for pipe in self.pipes:
            with contextlib.suppress(OSError, ValueError):
                pipe.send(None)
        deadline = time.monotonic() + 5
        for process in self.processes:
            process.join(max(deadline - time.monotonic(), 0.1))
            if process.is_alive():
                process.terminate()  # SIGTERM to its pid
                process.join(5)
            if process.is_alive():
                process.kill()
                process.join(5)
        for pipe in self.pipes:
            pipe.close()


# -- the server process: the node's metadata cache behind a cached and an uncached wire server ------------------


def serve(connect_string: str) -> int:
    """``--serve``: load the node's MetadataCache from ZooKeeper, serve it on two wire servers (cached and
    uncached Metadata), print one READY line (JSON) and serve until stdin closes (the bench is done or gone)."""
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("kazoo").setLevel(logging.WARNING)
    session = ZkSession(connect_string, session_timeout_ms=30_000)
    runtimes: list[WireRuntime] = []
    cache: MetadataCache | None = None
    try:
        session.start()
        cache = MetadataCache(session)
        started = time.perf_counter()
        snapshot = cache.start()
        load_s = time.perf_counter() - started
        view = NodeView(NODE_ID, get_or_create_cluster_id(session), cache, None, 1, 1)
        info: dict[str, Any] = {
            "load_s": load_s,
            "topics": len(snapshot.topics),
            "partitions": sum(len(t.partitions) for t in snapshot.topics.values()),
        }
        apis: dict[str, Apis] = {}
        for name, cached in (("cached", True), ("uncached", False)):
            apis[name] = Apis(view, cache_metadata=cached)
            runtime = WireRuntime(
                apis[name].handlers(), SUPPORTED, max_frame=DEFAULT_MAX_FRAME, raw_handlers=apis[name].raw_handlers()
            )
            runtimes.append(runtime)
            info[name] = runtime.start([EndPoint("PLAINTEXT", "127.0.0.1", 0, "PLAINTEXT")])[0].port
        info["build_s"], info["encode_s"] = build_and_encode(apis["uncached"], cache)
        print("READY " + json.dumps(info), flush=True)
        sys.stdin.read()
        return 0
    finally:
        for runtime in runtimes:
            runtime.stop()
        if cache is not None:
            cache.stop()
        session.close()


def build_and_encode(apis: Apis, cache: MetadataCache, n: int = 3) -> tuple[float, float]:
    """What one uncached all-topics answer costs the server, median of ``n``: building the response objects,
    then kio's encoding of them."""
    request = parse_request(metadata_frame(None)[4:], SUPPORTED)
    conn = Connection("PLAINTEXT", "127.0.0.1", 0)
    builds, encodes = [], []
    for _ in range(n):
        t0 = time.perf_counter()
        response = apis._metadata_response(request, conn, cache.snapshot(), None)
        t1 = time.perf_counter()
        encode_body(request, response)
        builds.append(t1 - t0)
        encodes.append(time.perf_counter() - t1)
    return sorted(builds)[n // 2], sorted(encodes)[n // 2]


class Child:
    """A child process that prints one ready line on stdout, with its stderr in a log file; :meth:`stop` ends
    it by pid: stdin closed first when it stops on that (``--serve``), then SIGTERM, then SIGKILL."""

    def __init__(self, argv: list[str], log_path: Path, ready: str, what: str, *, stops_on_eof: bool) -> None:
        self.log = log_path
        self.what = what
        self.stops_on_eof = stops_on_eof
        with log_path.open("w") as log_file:
            self.process = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log_file,
                text=True,
                start_new_session=True,  # the terminal's Ctrl-C is the bench's to handle; it stops us in order
            )
        try:
            assert self.process.stdout is not None
            self.line = self.process.stdout.readline()
            if not self.line.startswith(ready):
                raise RuntimeError(f"{what} did not start; its log ends:\n{self.log_tail()}")
        except BaseException:
            self.stop()
            raise

    @property
    def pid(self) -> int:
        return self.process.pid

    def log_tail(self, chars: int = 3000) -> str:
        return self.log.read_text(errors="replace")[-chars:]

    def stop(self) -> None:
        if self.process.stdin is not None and not self.process.stdin.closed:
            with contextlib.suppress(OSError):
                self.process.stdin.close()
            if self.stops_on_eof:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.process.wait(10)
        nodescale.terminate(self.process)


def start_server(connect_string: str, work: Path) -> tuple[Child, dict[str, Any]]:
    argv = [sys.executable, "-m", "bench.metadata_scale", "--serve", connect_string]
    server = Child(argv, work / "server.log", "READY ", "the cached/uncached Metadata server", stops_on_eof=True)
    return server, json.loads(server.line[len("READY ") :])


def start_node(connect_string: str, work: Path) -> tuple[Child, int]:
    """A broker-only node (as :class:`bench.nodescale.Node`, with no controlled shutdown: there is no
    controller to ask); returns it and its Kafka port."""
    config = work / f"node-{NODE_ID}.properties"
    config.write_text(
        f"broker.id={NODE_ID}\nzookeeper.connect={connect_string}\nlisteners=PLAINTEXT://127.0.0.1:0\n"
        "bridgekeeper.metrics.host=127.0.0.1\nbridgekeeper.metrics.port=0\nprocess.roles=broker\n"
        "zookeeper.session.timeout.ms=30000\ncontrolled.shutdown.enable=false\n"
        # Brokers 1-6 are fakes without a bridgekeeper marker (register_fake_brokers).
        "bridgekeeper.unsafe.join.chroot.with.kafka.brokers=true\n"
    )
    argv = [sys.executable, "-m", "controller.cli", "node", "--config", str(config)]
    node = Child(argv, work / f"node-{NODE_ID}.log", "NODE-READY", f"node {NODE_ID}", stops_on_eof=False)
    endpoints = node.line.split("endpoints=", 1)[1].split()[0]
    return node, int(endpoints.split(",")[0].rsplit(":", 1)[1])


# -- ZooKeeper side ---------------------------------------------------------------------------------------------


def register_brokers(client: KazooClient) -> None:
    """Brokers 1-6, as :func:`bench.nodescale.register_fake_brokers` registers 2-6 (ephemeral, this session)."""
    nodescale.register_fake_brokers(client)
    for broker_id in set(FAKE_BROKERS) - set(nodescale.FAKE_BROKERS):
        endpoint = EndPoint("PLAINTEXT", "127.0.0.1", 19_000 + broker_id, "PLAINTEXT")
        registration = BrokerRegistration((endpoint,), int(time.time() * 1000))
        client.create(f"/brokers/ids/{broker_id}", registration.encode(), ephemeral=True, makepath=True)


def move_leader(client: KazooClient, topic: str, partition: int) -> tuple[int, int]:
    """Rewrite one partition's state: leader to the next ISR member, leader epoch + 1 (conditional on the
    version read). Returns the new (leader, leader epoch) once ZooKeeper has acknowledged the write."""
    path = f"/brokers/topics/{topic}/partitions/{partition}/state"
    data, stat = client.get(path)
    state = PartitionState.decode(path, data)
    leader = state.isr[(state.isr.index(state.leader) + 1) % len(state.isr)]
    client.set(path, state._replace(leader=leader, leader_epoch=state.leader_epoch + 1).encode(), version=stat.version)
    return leader, state.leader_epoch + 1


def new_topic(name: str, partitions: int, seed: int) -> tuple[list[Znode], dict[int, int]]:
    """A topic as the tree's are (v3 assignment with an id, null ``partitions`` and partition znodes,
    states); returns its znodes and each partition's leader."""
    assignment = {p: tuple((seed + p + r) % len(FAKE_BROKERS) + 1 for r in range(3)) for p in range(partitions)}
    base = f"/brokers/topics/{name}"
    nodes: list[Znode] = [
        (base, TopicAssignment(assignment, topic_id=random_uuid()).encode()),
        (f"{base}/partitions", None),
    ]
    for p, replicas in assignment.items():
        nodes.append((f"{base}/partitions/{p}", None))
        state = PartitionState(leader=replicas[0], leader_epoch=0, controller_epoch=7, isr=replicas)
        nodes.append((f"{base}/partitions/{p}/state", state.encode()))
    return nodes, {p: r[0] for p, r in assignment.items()}


# -- change to serve ----------------------------------------------------------------------------------------------


@dataclass
class Shown:
    topic_s: float
    all_s: float | None


class Poller:
    """Two connections to the node: one polling a topic's Metadata, one all-topics Metadata."""

    def __init__(self, port: int) -> None:
        self.topic_sock = connect(port, SHOW_TIMEOUT_S)
        self.all_sock = connect(port, ANSWER_TIMEOUT_S)
        self.all_frame = metadata_frame(None)
        self.buf = bytearray()
        #: Round trip of every topic poll: the resolution of the figures (a poll also holds the node's GIL).
        self.topic_rtts: list[float] = []
        #: Round trip of each all-topics answer that showed a change: the node rebuilding its cached body.
        self.rebuild_rtts: list[float] = []

    def close(self) -> None:
        self.topic_sock.close()
        self.all_sock.close()

    def all_topics(self) -> bytes:
        self.all_sock.sendall(self.all_frame)
        self.buf, size = recv_answer(self.all_sock, self.buf)
        return bytes(self.buf[:size])

    def until_topic(self, topic: str, shows: Callable[[Any], bool], since: float) -> float:
        """Poll ``topic``'s Metadata until an answer ``shows`` the change; seconds from ``since`` to its arrival."""
        frame = metadata_frame([topic])
        deadline = since + SHOW_TIMEOUT_S
        while True:
            sent = time.monotonic()
            self.topic_sock.sendall(frame)
            self.buf, size = recv_answer(self.topic_sock, self.buf)
            arrived = time.monotonic()
            self.topic_rtts.append(arrived - sent)
            if shows(decode_metadata(bytes(self.buf[:size])).topics[0]):
                return arrived - since
            if arrived > deadline:
                raise TimeoutError(f"{topic}: the change did not show in Metadata within {SHOW_TIMEOUT_S:.0f}s")

    def until_all_differs(self, before: bytes, since: float) -> tuple[float, bytes]:
        deadline = since + SHOW_TIMEOUT_S
        while True:
            sent = time.monotonic()
            body = self.all_topics()
            arrived = time.monotonic()
            if body != before:
                self.rebuild_rtts.append(arrived - sent)
                return arrived - since, body
            if arrived > deadline:
                raise TimeoutError(f"all-topics Metadata did not change within {SHOW_TIMEOUT_S:.0f}s")


@dataclass
class Changes:
    shown: dict[str, list[Shown]]
    topic_rtts: list[float]  # every topic poll's round trip
    rebuild_rtts: list[float]  # the all-topics answers that showed a change (a rebuilt body)


def change_to_serve(client: KazooClient, port: int, args: argparse.Namespace, progress: Progress) -> Changes:
    rng = random.Random(15)
    names = topic_names(args.topics)
    out: dict[str, list[Shown]] = {"leader moved": [], "topic created": []}
    poller = Poller(port)
    try:
        for i in range(args.changes):
            topic, partition = rng.choice(names), rng.randrange(args.partitions)
            with_all = i < args.all_topics_changes
            before = poller.all_topics() if with_all else b""
            leader, epoch = move_leader(client, topic, partition)
            since = time.monotonic()

            def moved(t: Any, p: int = partition, leader: int = leader, epoch: int = epoch) -> bool:
                return any(
                    x.partition_index == p and x.leader_id == leader and x.leader_epoch == epoch for x in t.partitions
                )

            shown = Shown(poller.until_topic(topic, moved, since), None)
            if with_all:
                shown.all_s = poller.until_all_differs(before, since)[0]
            out["leader moved"].append(shown)
            progress.show(f"leader moved {i + 1}/{args.changes}: {describe(shown)}", force=True)
            time.sleep(0.02)
        for i in range(args.new_topics):
            name = f"bench-new-{i:04d}"
            nodes, leaders = new_topic(name, args.partitions, i)
            with_all = i < args.all_topics_changes
            before = poller.all_topics() if with_all else b""
            populate(client, nodes)
            since = time.monotonic()

            def created(t: Any, leaders: dict[int, int] = leaders) -> bool:
                return int(t.error_code) == 0 and {x.partition_index: x.leader_id for x in t.partitions} == leaders

            shown = Shown(poller.until_topic(name, created, since), None)
            if with_all:
                shown.all_s = poller.until_all_differs(before, since)[0]
            out["topic created"].append(shown)
            progress.show(f"topic created {i + 1}/{args.new_topics}: {describe(shown)}", force=True)
            time.sleep(0.02)
    finally:
        poller.close()
    return Changes(out, poller.topic_rtts, poller.rebuild_rtts)


def describe(shown: Shown) -> str:
    text = f"topic Metadata after {shown.topic_s * 1000:.1f} ms"
    if shown.all_s is not None:
        text += f", all-topics after {shown.all_s * 1000:.1f} ms"
    return text


# -- figures -------------------------------------------------------------------------------------------------------


def pct(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0..1) of ``values``."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


@dataclass
class Pooled:
    phases: list[PhaseResult] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return sum(p.answers for p in self.phases) / sum(p.seconds for p in self.phases)

    @property
    def latencies(self) -> list[float]:
        return [x for p in self.phases for x in p.latencies]


def slower(a: Pooled, b: Pooled, q: float) -> float:
    """How many times ``a``'s latency percentile ``q`` is ``b``'s."""
    return pct(a.latencies, q) / pct(b.latencies, q)


def loadavg() -> str:
    return "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def check_same_answers(ports: dict[str, int]) -> tuple[int, Any, str]:
    """One all-topics answer from each variant (correlation id 1): the size, the decoded body, and whether
    every variant answered the same bytes."""
    frame = metadata_frame(None)
    answers = {name: fetch(port, frame) for name, port in ports.items()}
    first = next(iter(answers.values()))
    differ = [name for name, body in answers.items() if body != first]
    verdict = "identical" if not differ else f"DIFFER ({', '.join(differ)} from {next(iter(answers))})"
    return len(first), decode_metadata(first), verdict


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--topics", type=int, default=10_000)
    parser.add_argument("--partitions", type=int, default=10)
    parser.add_argument("--clients", type=int, default=20, help="client processes, one connection each")
    parser.add_argument("--seconds", type=float, default=10.0, help="each phase's sending time")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--window", type=int, default=1, help="requests in flight per client")
    parser.add_argument("--changes", type=int, default=50, help="partition leader moves timed to Metadata")
    parser.add_argument("--new-topics", type=int, default=20, help="topic creations timed to Metadata")
    parser.add_argument("--all-topics-changes", type=int, default=10, help="of each kind, also timed all-topics")
    parser.add_argument("--no-node-column", action="store_true", help="throughput: only the cached/uncached server")
    parser.add_argument("--heap-mb", type=int, default=1024, help="ZooKeeper JVM heap")
    parser.add_argument("--serve", metavar="ZK", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        return serve(args.serve)

    # SIGTERM unwinds like Ctrl-C, so that every process and server below is stopped in order.
    def terminated(_signum: int, _frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, terminated)
    wall = time.perf_counter()
    load_start = loadavg()
    print(
        f"Metadata at scale: {args.topics:,} topics x {args.partitions} partitions = "
        f"{args.topics * args.partitions:,} partitions (RF 3), {args.clients} clients"
    )
    print(f"load average at start: {load_start} ({os.cpu_count()} cores)", flush=True)
    pool = ClientPool(args.clients)  # forked first: no thread, server or socket to inherit yet
    try:
        with contextlib.ExitStack() as stack:
            stack.callback(pool.close)  # unwound last: after the servers, the node and ZooKeeper
            run(args, stack, pool)
    except KeyboardInterrupt:
        print("\ninterrupted: every process stopped", file=sys.stderr)
        return 130
    print(f"load average at end: {loadavg()} (at start: {load_start}); wall time {time.perf_counter() - wall:.0f}s")
    return 0


def run(args: argparse.Namespace, stack: contextlib.ExitStack, pool: ClientPool) -> None:
    """The whole bench; everything it starts is stopped by ``stack``, in reverse order, however it ends."""
    progress = Progress()
    work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bk-metadata-scale-")))
    progress.show("starting ZooKeeper ...", force=True)
    zk = stack.enter_context(LocalZooKeeper(heap_mb=args.heap_mb))
    progress.done(f"ZooKeeper serving at {zk.connect_string}")
    client = KazooClient(
        hosts=zk.connect_string, timeout=30.0, connection_retry=KazooRetry(max_tries=-1, delay=0.1, max_delay=0.5)
    )
    stack.callback(client.close)
    stack.callback(client.stop)
    client.start(timeout=30)
    client.ensure_path("/brokers/topics")
    started = time.perf_counter()
    total = args.topics * (2 + 2 * args.partitions)

    def show_populate(n: int) -> None:
        progress.show(f"populating {n:,}/{total:,} znodes ({n / (time.perf_counter() - started):,.0f}/s)")

    created = populate(client, kafka_topic_tree(args.topics, args.partitions), progress=show_populate)
    progress.done(f"populated {created:,} znodes in {time.perf_counter() - started:.1f}s")
    register_brokers(client)

    progress.show(f"starting node {NODE_ID} (broker-only; loads its metadata cache) ...", force=True)
    started = time.perf_counter()
    node, node_port = start_node(zk.connect_string, work)
    stack.callback(node.stop)
    node_ready = time.perf_counter() - started
    progress.done(f"node {NODE_ID} serving Metadata on port {node_port}, ready in {node_ready:.1f}s")

    progress.show("starting the cached/uncached server (loads the same cache) ...", force=True)
    server, info = start_server(zk.connect_string, work)
    stack.callback(server.stop)
    progress.done(
        f"server: cache loaded in {info['load_s']:.2f}s ({info['topics']:,} topics, {info['partitions']:,} "
        f"partitions); cached on port {info['cached']}, uncached on port {info['uncached']}"
    )
    variants = [v for v in VARIANTS if not (v == "node" and args.no_node_column)]
    ports = {"cached": info["cached"], "uncached": info["uncached"], "node": node_port}
    ports = {v: ports[v] for v in variants}
    progress.show("one answer from each variant (this also builds the cached bodies) ...", force=True)
    size, body, verdict = check_same_answers(ports)
    progress.done(
        f"all-topics answer: {size:,} bytes, {len(body.topics):,} topics, "
        f"{sum(len(t.partitions) for t in body.topics):,} partitions, {len(body.brokers)} brokers; "
        f"the variants' answers are {verdict}"
    )
    pooled = {v: Pooled() for v in variants}
    for rnd in range(1, args.rounds + 1):
        shift = (rnd - 1) % len(variants)
        for variant in variants[shift:] + variants[:shift]:
            label = f"round {rnd}/{args.rounds} {variant:>8}"
            phase = pool.run(variant, ports[variant], args, progress, label)
            pooled[variant].phases.append(phase)
            progress.done(
                f"{label}: {phase.rate:9,.1f} req/s, p50 {pct(phase.latencies, 0.5) * 1000:8.1f} ms, "
                f"p99 {pct(phase.latencies, 0.99) * 1000:8.1f} ms ({phase.answers:,} answers in {phase.seconds:.1f}s)"
            )
    rss = {"server": nodescale.rss(server.pid), "node": nodescale.rss(node.pid)}
    server.stop()  # its cache and wire would take CPU from the node below
    report_load(args, info, size, verdict, pooled, rss, node_ready)
    if args.changes or args.new_topics:
        progress.show("change to serve ...", force=True)
        report_changes(change_to_serve(client, node_port, args, progress))


def report_load(
    args: argparse.Namespace,
    info: dict[str, Any],
    size: int,
    verdict: str,
    pooled: dict[str, Pooled],
    rss: dict[str, int],
    node_ready: float,
) -> None:
    mib = 2**20
    print()
    print(
        f"all-topics Metadata v{VERSION}: {info['topics']:,} topics, {info['partitions']:,} partitions, "
        f"{len(FAKE_BROKERS) + 1} brokers, answer {size:,} bytes ({verdict}); {args.clients} client processes, "
        f"{args.window} in flight each, {args.rounds} rounds x {args.seconds:g}s per variant"
    )
    header = f"{'variant':<22}{'req/s':>10}{'MB/s':>9}{'p50 ms':>10}{'p99 ms':>10}{'max ms':>10}   per-round req/s"
    print(header)
    print("-" * len(header))
    names = {"cached": "cached (server)", "uncached": "uncached (server)", "node": f"node {NODE_ID} (cached)"}
    for variant, figures in pooled.items():
        lat = figures.latencies
        rounds = ", ".join(f"{p.rate:,.1f}" for p in figures.phases)
        print(
            f"{names[variant]:<22}{figures.rate:>10,.1f}{figures.rate * size / 1e6:>9,.1f}"
            f"{pct(lat, 0.5) * 1000:>10.1f}{pct(lat, 0.99) * 1000:>10.1f}{max(lat) * 1000:>10.1f}   {rounds}"
        )
    c, u = pooled["cached"], pooled["uncached"]
    per_round = ", ".join(f"{cp.rate / up.rate:.1f}x" for cp, up in zip(c.phases, u.phases, strict=True))
    print(
        f"cached/uncached: throughput {c.rate / u.rate:.1f}x (per round {per_round}); latency uncached/cached "
        f"p50 {slower(u, c, 0.5):.1f}x, p99 {slower(u, c, 0.99):.1f}x"
    )
    if "node" in pooled:
        n = pooled["node"]
        print(
            f"node/cached server: throughput {n.rate / c.rate:.2f}x, latency p50 "
            f"{slower(n, c, 0.5):.2f}x, p99 {slower(n, c, 0.99):.2f}x "
            "(the same cached path, behind the node's dispatcher and metrics, beside its other threads)"
        )
    cost = info["build_s"] + info["encode_s"]
    print(
        f"one uncached answer in the server: build {info['build_s'] * 1000:,.1f} ms + kio encode "
        f"{info['encode_s'] * 1000:,.1f} ms = {cost * 1000:,.1f} ms ({cost / max(info['partitions'], 1) * 1e6:.1f} us "
        f"per partition)"
    )
    print(
        f"metadata cache load: server {info['load_s']:.2f}s, node ready in {node_ready:.1f}s; RSS server "
        f"{rss['server'] / mib:,.0f} MiB, node {rss['node'] / mib:,.0f} MiB"
    )
    print(flush=True)


def report_changes(changes: Changes) -> None:
    print()
    print(
        f"change to serve, node {NODE_ID}: from the ZooKeeper write's completion to the first Metadata answer "
        "showing it (tight polling, one connection)"
    )
    header = f"{'change':<16}{'polled':<22}{'n':>4}{'p50 ms':>10}{'p99 ms':>10}{'max ms':>10}"
    print(header)
    print("-" * len(header))
    for kind, rows in changes.shown.items():
        for what, values in (
            ("topic Metadata", [r.topic_s for r in rows]),
            ("all-topics Metadata", [r.all_s for r in rows if r.all_s is not None]),
        ):
            if values:
                print(
                    f"{kind:<16}{what:<22}{len(values):>4}{pct(values, 0.5) * 1000:>10.1f}"
                    f"{pct(values, 0.99) * 1000:>10.1f}{max(values) * 1000:>10.1f}"
                )
    rtts = changes.topic_rtts
    line = (
        f"resolution: one topic Metadata round trip p50 {pct(rtts, 0.5) * 1000:.1f} ms, "
        f"p99 {pct(rtts, 0.99) * 1000:.1f} ms ({len(rtts):,} polls)"
    )
    if changes.rebuild_rtts:
        rebuilds = changes.rebuild_rtts
        line += (
            f"; the all-topics answer showing a change (the node rebuilding its cached body) took "
            f"p50 {pct(rebuilds, 0.5) * 1000:.1f} ms, max {max(rebuilds) * 1000:.1f} ms"
        )
    print(line)
    print()


if __name__ == "__main__":
    raise SystemExit(main())
