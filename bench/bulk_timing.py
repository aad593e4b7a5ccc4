"""How :mod:`bench.bulk_writes` times its work: one phase at a time once the node and ZooKeeper are idle, with
its wall time and the CPU seconds of the node, ZooKeeper and this process, and one ZooKeeper round trip through
kazoo and over a bare socket (the kafka side's reassignment is four serial requests per partition, so
round-trip bound; the bare figure is nearer what Kafka's Java client pays)."""

from __future__ import annotations

import socket
import statistics
import threading
import time
from collections import Counter as Tally
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
from kazoo.protocol.serialization import (
    Close,
    Connect,
    Exists,
    int_int_struct,
    int_struct,
    reply_header_struct,
)

from bench import nodescale
from bench.failover_load import Progress

T = TypeVar("T")


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
