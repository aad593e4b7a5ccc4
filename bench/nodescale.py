"""Real node processes on a populated tree: how long a new controller takes before it serves, and how much
memory the whole process holds per partition — the active controller node and a broker-only node.

Used by :mod:`bench.failover_load` after its read comparison, on the same ZooKeeper and tree. The tree's
replicas live on brokers 1-6 (:func:`bench.zkpopulate.kafka_topic_tree`); brokers 2-6 are registered here
(ephemeral znodes of this process's session) so that every leader is alive and the failover is the plain
load of a healthy cluster, as in Kafka's own failover figures, not a mass election. Node 1 is the
controller; node 7, a broker that hosts nothing, is the broker-only node. A node on an empty chroot gives the
process's own size, so the per-partition figures are shown both whole-process and above that baseline.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient

from controller.devstack.localzk import _die_with_parent
from zkmodel.brokers import BrokerRegistration, EndPoint

FAKE_BROKERS = range(2, 7)
CONTROLLER_ID = 1
FIRST_CONTROLLER_ID = 8
BROKER_ONLY_ID = 7
FAILOVER_METRIC = "bridgekeeper_controller_failover_seconds"
#: A process counts as idle when it used less than this share of one core over IDLE_WINDOW_S.
IDLE_SHARE = 0.1
IDLE_WINDOW_S = 0.5
CLK_TCK = os.sysconf("SC_CLK_TCK")


@dataclass
class NodeFigures:
    cold_ready_s: float  # the first controller node: process start to NODE-READY (broker cache loaded, registered)
    cold_failover_s: float  # its failover while the node itself is still starting (its own metric)
    failover_s: float  # node 1's failover when the first controller stops: a running broker takes over
    controller_rss: int  # node 1 as the active controller, hosting half the replicas
    broker_rss: int  # node 7, a broker-only node hosting nothing
    empty_rss: int  # a node on an empty cluster: what the process costs without any partition
    failover_log: str  # node 1's own account of its failover (its log line)


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process (all its threads) so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def settle(pids: Sequence[int], limit: float = 300.0) -> float:
    """Wait until every process is idle (see IDLE_SHARE), so that what runs next is measured alone; returns
    how long that took."""
    start = time.monotonic()
    while time.monotonic() - start < limit:
        before = [cpu_seconds(p) for p in pids]
        time.sleep(IDLE_WINDOW_S)
        if all(cpu_seconds(p) - b < IDLE_SHARE * IDLE_WINDOW_S for p, b in zip(pids, before, strict=True)):
            break
    return time.monotonic() - start


def rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for {pid}")


def metric(url: str, name: str) -> float | None:
    with urllib.request.urlopen(url, timeout=30) as response:
        text = response.read().decode()
    found = re.search(rf"^{name}(?:\{{[^}}]*\}})? ([-0-9.e+]+)$", text, re.MULTILINE)
    return float(found.group(1)) if found else None


class Node:
    """One ``bridgekeeper node`` process, with extra properties if given; dies with this process if that is
    killed, and is stopped by :meth:`stop` (killed if it does not stop)."""

    def __init__(
        self, work: Path, connect: str, broker_id: int, roles: str, overrides: Mapping[str, str] | None = None
    ) -> None:
        self.broker_id = broker_id
        config = work / f"node-{broker_id}.properties"
        lines = [
            f"broker.id={broker_id}",
            f"zookeeper.connect={connect}",
            "listeners=PLAINTEXT://127.0.0.1:0",
            "bridgekeeper.metrics.host=127.0.0.1",
            "bridgekeeper.metrics.port=0",
            f"process.roles={roles}",
            "zookeeper.session.timeout.ms=30000",
            # The benches register fake brokers (register_fake_brokers) that carry no bridgekeeper marker.
            "bridgekeeper.unsafe.join.chroot.with.kafka.brokers=true",
            *(f"{k}={v}" for k, v in (overrides or {}).items()),
        ]
        config.write_text("\n".join(lines) + "\n")
        self.log = work / f"node-{broker_id}.log"
        started = time.monotonic()
        with self.log.open("w") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "controller.cli", "node", "--config", str(config)],
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                preexec_fn=_die_with_parent,
            )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        self.ready_s = time.monotonic() - started
        metrics = re.search(r"metrics=(\S+)", line)
        endpoint = re.search(r"endpoints=\w+://([^,\s]+)", line)
        if metrics is None or endpoint is None:
            self.stop()
            raise RuntimeError(f"node {broker_id} did not start; its log ends:\n{self.log.read_text()[-2000:]}")
        self.metrics = metrics.group(1)
        self.bootstrap = endpoint.group(1)

    @property
    def pid(self) -> int:
        return self.process.pid

    def stop(self) -> None:
        terminate(self.process)
        if self.process.stdout is not None:
            self.process.stdout.close()


def terminate(process: subprocess.Popen[Any]) -> None:
    """SIGTERM a bench child and wait for it (a node stops gracefully); SIGKILL it if it takes over 30 s."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


def register_fake_brokers(client: KazooClient) -> None:
    for broker_id in FAKE_BROKERS:
        endpoint = EndPoint("PLAINTEXT", "127.0.0.1", 19_000 + broker_id, "PLAINTEXT")
        registration = BrokerRegistration((endpoint,), int(time.time() * 1000))
        client.create(f"/brokers/ids/{broker_id}", registration.encode(), ephemeral=True, makepath=True)


def elected_line(node: Node) -> str:
    """The node's own account of its last failover (the end of its "elected controller" log line)."""
    lines = [line for line in node.log.read_text().splitlines() if "elected controller with epoch" in line]
    return lines[-1].split("elected controller", 1)[1] if lines else "(no failover line in its log)"


def wait_failover(node: Node, timeout: float = 1800) -> float:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        failover = metric(node.metrics, FAILOVER_METRIC)
        if failover:  # the gauge reads 0 until the node's first failover finished
            return failover
        if node.process.poll() is not None:
            break
        # Each scrape of a million-partition node takes it ~12 ms of its one core of Python; Prometheus scrapes
        # every 15-60 s. The gauge is the node's own timing, so polling less often changes only when we read it.
        time.sleep(2.0)
    tail = node.log.read_text()[-2000:]
    raise RuntimeError(f"the controller node never finished its failover; its log ends:\n{tail}")


@contextlib.contextmanager
def profiled(pid: int, out: Path | None, *, gil: bool = False) -> Iterator[None]:
    """py-spy (``pip install py-spy``) recording ``pid`` while the block runs, as collapsed stacks in ``out``;
    ``gil``: only the thread holding the GIL, i.e. where a GIL-bound process's one core of Python goes."""
    if out is None:
        yield
        return
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(spy).exists():
        raise SystemExit("--profile records with py-spy, which is not installed here: pip install py-spy")
    recorder = subprocess.Popen(
        [
            spy,
            "record",
            "--pid",
            str(pid),
            "--rate",
            "200",
            "--format",
            "raw",
            "--threads",
            "--output",
            str(out),
            *(["--gil"] if gil else []),
        ],
        stdout=subprocess.DEVNULL,
    )
    time.sleep(1.0)  # attached before the block starts
    try:
        yield
    finally:
        recorder.send_signal(2)  # SIGINT: py-spy writes what it recorded and exits
        recorder.wait(60)


def measure(
    connect_string: str,
    chroot: str,
    *,
    empty_chroot: str = "/bk-nodescale-empty",
    say: Callable[[str], None] = print,
    profile: Path | None = None,
    profile_cold: Path | None = None,
) -> NodeFigures:
    """The failover a running cluster sees, and each node's size. Node 8 (hosting nothing) starts first and
    becomes the controller: its failover overlaps its own start (cache load, wire, replica model), the cold
    case. Node 1 (broker and controller, hosting half the replicas) starts and settles, then node 8 stops
    (SIGTERM: controlled shutdown, resignation) and node 1 takes over: the failover of a broker already
    running, which is what a controller failover is in a cluster, and node 1's size is then that of the
    active controller node. Node 7 is a broker-only node; a node on an empty chroot gives the baseline."""
    with tempfile.TemporaryDirectory(prefix="bk-nodescale-") as tmp:
        work = Path(tmp)
        connect = connect_string + chroot
        fakes = KazooClient(hosts=connect, timeout=30.0)
        fakes.start(timeout=30)
        started: list[Node] = []
        try:
            register_fake_brokers(fakes)
            say("starting the first controller node (broker metadata cache load, then election and failover) ...")
            first = Node(work, connect, FIRST_CONTROLLER_ID, "broker,controller")
            started.append(first)
            with profiled(first.process.pid, profile_cold, gil=True):
                cold_failover = wait_failover(first)
            say(f"first controller: ready in {first.ready_s:.2f}s, cold failover {cold_failover:.2f}s")
            say(f"  its log: ...{elected_line(first)}")
            say("starting node 1 (broker and controller, hosting half the replicas) and a broker-only node ...")
            node = Node(work, connect, CONTROLLER_ID, "broker,controller")
            started.append(node)
            broker = Node(work, connect, BROKER_ONLY_ID, "broker")
            started.append(broker)
            waited = settle([node.process.pid, broker.process.pid, first.process.pid])
            say(f"nodes idle after {waited:.1f}s; stopping the first controller: node 1 takes over ...")
            with profiled(node.process.pid, profile):
                first.stop()
                failover = wait_failover(node)
            settle([node.process.pid, broker.process.pid])
            failover_log = elected_line(node)
            controller_rss = rss(node.process.pid)
            broker_rss = rss(broker.process.pid)
        finally:
            for n in reversed(started):
                n.stop()
            fakes.stop()
            fakes.close()
        say("starting a node on an empty cluster (the process's own size) ...")
        empty = Node(work, connect_string + empty_chroot, CONTROLLER_ID, "broker,controller")
        try:
            settle([empty.process.pid])
            empty_rss = rss(empty.process.pid)
        finally:
            empty.stop()
    return NodeFigures(first.ready_s, cold_failover, failover, controller_rss, broker_rss, empty_rss, failover_log)
