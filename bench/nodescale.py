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

import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kazoo.client import KazooClient

from zkmodel.brokers import BrokerRegistration, EndPoint

FAKE_BROKERS = range(2, 7)
CONTROLLER_ID = 1
BROKER_ONLY_ID = 7
FAILOVER_METRIC = "bridgekeeper_controller_failover_seconds"
#: Let a started node settle (its first replica-model scan, the metadata snapshot) before reading its RSS.
SETTLE_S = 3.0


@dataclass
class NodeFigures:
    ready_s: float  # process start to NODE-READY (broker metadata cache loaded, registered)
    failover_s: float  # the controller's failover: load, watches, elections, resumed work (its own metric)
    controller_rss: int
    broker_rss: int
    empty_rss: int  # a node on an empty cluster: what the process costs without any partition


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
    """One ``bridgekeeper node`` process, stopped by :meth:`stop` (and killed if it does not stop)."""

    def __init__(self, work: Path, connect: str, broker_id: int, roles: str) -> None:
        config = work / f"node-{broker_id}.properties"
        config.write_text(
            f"broker.id={broker_id}\nzookeeper.connect={connect}\nlisteners=PLAINTEXT://127.0.0.1:0\n"
            "bridgekeeper.metrics.host=127.0.0.1\nbridgekeeper.metrics.port=0\n"
            f"process.roles={roles}\nzookeeper.session.timeout.ms=30000\n"
        )
        self.log = work / f"node-{broker_id}.log"
        started = time.monotonic()
        with self.log.open("w") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "controller.cli", "node", "--config", str(config)],
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
            )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        self.ready_s = time.monotonic() - started
        found = re.search(r"metrics=(\S+)", line)
        if found is None:
            self.stop()
            raise RuntimeError(f"node {broker_id} did not start; its log ends:\n{self.log.read_text()[-2000:]}")
        self.metrics = found.group(1)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)


def register_fake_brokers(client: KazooClient) -> None:
    for broker_id in FAKE_BROKERS:
        endpoint = EndPoint("PLAINTEXT", "127.0.0.1", 19_000 + broker_id, "PLAINTEXT")
        registration = BrokerRegistration((endpoint,), int(time.time() * 1000))
        client.create(f"/brokers/ids/{broker_id}", registration.encode(), ephemeral=True, makepath=True)


def measure(
    connect_string: str, chroot: str, *, empty_chroot: str = "/bk-nodescale-empty", say: Callable[[str], None] = print
) -> NodeFigures:
    """Start the controller node on ``connect_string + chroot``, wait for its failover, start a broker-only
    node, read both sizes; then a node on an empty chroot for the baseline."""
    with tempfile.TemporaryDirectory(prefix="bk-nodescale-") as tmp:
        work = Path(tmp)
        fakes = KazooClient(hosts=connect_string + chroot, timeout=30.0)
        fakes.start(timeout=30)
        try:
            register_fake_brokers(fakes)
            say("starting the controller node (broker metadata cache load, then election and failover) ...")
            controller = Node(work, connect_string + chroot, CONTROLLER_ID, "broker,controller")
            try:
                deadline = time.monotonic() + 1800
                failover = None
                while failover is None and time.monotonic() < deadline:
                    failover = metric(controller.metrics, FAILOVER_METRIC)
                    if failover is None:
                        time.sleep(0.5)
                if failover is None:
                    raise RuntimeError("the controller node never finished its failover")
                time.sleep(SETTLE_S)
                controller_rss = rss(controller.process.pid)
                say("starting a broker-only node ...")
                broker = Node(work, connect_string + chroot, BROKER_ONLY_ID, "broker")
                try:
                    time.sleep(SETTLE_S)
                    broker_rss = rss(broker.process.pid)
                finally:
                    broker.stop()
            finally:
                controller.stop()
        finally:
            fakes.stop()
            fakes.close()
        say("starting a node on an empty cluster (the process's own size) ...")
        empty = Node(work, connect_string + empty_chroot, CONTROLLER_ID, "broker,controller")
        try:
            time.sleep(SETTLE_S)
            empty_rss = rss(empty.process.pid)
        finally:
            empty.stop()
    return NodeFigures(controller.ready_s, failover, controller_rss, broker_rss, empty_rss)
