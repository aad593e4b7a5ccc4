"""The guard rail: a node never joins a chroot where Apache Kafka brokers are registered, nor takes a broker id
another live session holds. Nodes run as an operator runs them (``bridgekeeper node``, one process each) against
a real ZooKeeper; the Kafka brokers are ZooKeeper sessions that write exactly what a Kafka 3.x broker writes."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from controller.config.keys import UNSAFE_JOIN_KAFKA_CHROOT
from testing.stack import controller_id
from tests import stackutil
from tests.integration.cluster import wait_for
from zkmodel import paths
from zkmodel.brokers import BrokerRegistration, EndPoint

pytestmark = pytest.mark.integration
BIN = [sys.executable, "-m", "controller.cli"]
#: Short, so a killed node's registration goes within seconds (4 s is the floor of a 2 s-tick server too).
SESSION_TIMEOUT_MS = "4000"
#: The keys of a version-5 registration, as Kafka 3.x writes it (kafka-zk-facts §1): nothing of ours among them.
KAFKA_V5_KEYS = {
    "features",
    "listener_security_protocol_map",
    "endpoints",
    "jmx_port",
    "port",
    "host",
    "version",
    "timestamp",
}


def node_command(hosts: str, broker_id: int, *settings: str) -> list[str]:
    overrides = [
        f"broker.id={broker_id}",
        f"zookeeper.connect={hosts}",
        "listeners=PLAINTEXT://127.0.0.1:0",
        "bridgekeeper.metrics.port=-1",
        f"zookeeper.session.timeout.ms={SESSION_TIMEOUT_MS}",
        "controlled.shutdown.enable=false",
        *settings,
    ]
    return [*BIN, "node", *(arg for o in overrides for arg in ("--override", o))]


def refused(hosts: str, broker_id: int) -> str:
    """Run a node that must refuse to start: exit 1 and one error line, which is returned."""
    done = subprocess.run(node_command(hosts, broker_id), capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stderr
    assert done.stdout == "" and "Traceback" not in done.stderr, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, done.stderr
    return errors[0]


NodeStarter = Callable[..., tuple[subprocess.Popen[str], Path]]


@pytest.fixture
def start_node(zk_hosts: str, tmp_path: Path) -> Iterator[NodeStarter]:
    """Starts node processes (stderr to a file) and returns once each printed its READY line; every one is
    stopped at the end."""
    running: list[subprocess.Popen[str]] = []

    def launch(broker_id: int, *settings: str, wait: bool = True) -> tuple[subprocess.Popen[str], Path]:
        log = tmp_path / f"node-{broker_id}-{len(running)}.log"
        with log.open("w") as err:
            command = node_command(zk_hosts, broker_id, *settings)
            proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=err, text=True)
        running.append(proc)
        if wait:
            ready(proc, log)
        return proc, log

    yield launch
    for proc in running:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)


def ready(proc: subprocess.Popen[str], log: Path) -> None:
    try:
        stackutil.read_until(proc, "NODE-READY", timeout=60)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{log.read_text(errors='replace')[-3000:]}") from None


def kafka_broker(zk: KazooClient, broker_id: int) -> None:
    """Register ``broker_id`` as Kafka 3.x does (KafkaZkClient.registerBroker, a checked ephemeral): one multi,
    create (empty: kazoo's transactions cannot send ZooKeeper's null), then setData at version 0 with the
    version-5 JSON Kafka 3.x writes."""
    endpoint = EndPoint("PLAINTEXT", f"kafka-{broker_id}", 9092, "PLAINTEXT")
    registration = BrokerRegistration((endpoint,), timestamp=int(time.time() * 1000), version=5)
    t = zk.transaction()
    t.create(paths.broker(broker_id), b"", ephemeral=True)
    t.set_data(paths.broker(broker_id), registration.encode(), 0)
    assert not any(isinstance(r, Exception) for r in t.commit())


def kafka_chroot(zk_factory: Callable[..., KazooClient], broker_ids: tuple[int, ...]) -> None:
    """A chroot a running Kafka 3.x cluster left: its persistent paths, cluster id, controller epoch, one live
    session per broker, the first of them the controller."""
    admin = zk_factory()
    for path in paths.PERSISTENT_PATHS:
        admin.ensure_path(path)
    admin.create(paths.CLUSTER_ID, b'{"version":"1","id":"IOejp_IKSbWbySJc0sRrKw"}', makepath=True)
    admin.create(paths.CONTROLLER_EPOCH, b"1")
    sessions = [zk_factory() for _ in broker_ids]
    for session, b in zip(sessions, broker_ids, strict=True):
        kafka_broker(session, b)
    controller = b'{"version":2,"brokerid":%d,"timestamp":"1781706151854","kraftControllerEpoch":-1}' % broker_ids[0]
    sessions[0].create(paths.CONTROLLER, controller, ephemeral=True)


def tree(zk: KazooClient, path: str = "/") -> dict[str, tuple[int, int, int]]:
    """Every znode under ``path`` with (czxid, mzxid, pzxid): any write below it changes one of them."""
    stat = zk.exists(path)
    assert stat is not None
    out = {path: (stat.czxid, stat.mzxid, stat.pzxid)}
    for child in zk.get_children(path):
        out |= tree(zk, f"{path.rstrip('/')}/{child}")
    return out


def test_a_chroot_where_kafka_brokers_are_registered_is_refused_untouched(
    zk_factory: Callable[..., KazooClient], zk: KazooClient, zk_hosts: str, start_node: NodeStarter
) -> None:
    kafka_chroot(zk_factory, (1, 2))
    before = tree(zk)

    line = refused(zk_hosts, 3)
    assert "broker ids 1, 2 (Apache Kafka brokers?)" in line and UNSAFE_JOIN_KAFKA_CHROOT in line
    # nothing written: no registration, no marker, no election, not a persistent path
    assert tree(zk) == before
    assert zk.exists(paths.BRIDGEKEEPER) is None and controller_id(zk) == 1

    # its own id taken by a Kafka broker: named as such
    assert "this node's own broker.id=2" in refused(zk_hosts, 2)

    # the override: it starts, says what it joined, and registers beside them without taking /controller
    _proc, log = start_node(3, f"{UNSAFE_JOIN_KAFKA_CHROOT}=true")
    warning = next(line for line in log.read_text().splitlines() if UNSAFE_JOIN_KAFKA_CHROOT in line)
    assert "WARNING" in warning and "ids 1, 2)" in warning
    assert zk.exists(paths.node_marker(3)) is not None and controller_id(zk) == 1


def test_our_nodes_start_side_by_side_and_a_live_id_is_refused(
    zk: KazooClient, zk_hosts: str, start_node: NodeStarter
) -> None:
    # Three at once: each reads the others' registrations while they are being made.
    started = [start_node(b, wait=False) for b in (1, 2, 3)]
    for proc, log in started:
        ready(proc, log)
    for b in (1, 2, 3):
        data, stat = zk.get(paths.broker(b))
        marker_data, marker = zk.get(paths.node_marker(b))
        assert set(json.loads(data)) == KAFKA_V5_KEYS  # the registration's bytes are Kafka's alone
        assert (marker.czxid, marker.ephemeralOwner) == (stat.czxid, stat.ephemeralOwner)
        assert json.loads(marker_data) == {"version": 1, "broker_id": b, "software": "bridgekeeper"}
    wait_for(lambda: controller_id(zk) is not None, 30, "a controller")

    # a second node with a live id: refused, naming the id and the session holding it
    owner = zk.exists(paths.broker(2)).ephemeralOwner
    czxid = zk.exists(paths.broker(2)).czxid
    line = refused(zk_hosts, 2)
    assert f"broker id 2 is registered by another session, 0x{owner:x} (a bridgekeeper node)" in line
    assert zk.exists(paths.broker(2)).czxid == czxid

    # restarted with the same id: after a clean stop (session closed), and after a kill (session expired)
    first, second = started[0][0], started[1][0]
    first.terminate()
    first.wait(30)
    start_node(1)
    second.send_signal(signal.SIGKILL)
    second.wait(10)
    wait_for(lambda: zk.exists(paths.broker(2)) is None, 30, "the killed node's session to expire")
    assert zk.exists(paths.node_marker(2)) is None  # gone with it, in the same transaction
    start_node(2)
    assert sorted(zk.get_children(paths.BROKER_IDS)) == sorted(zk.get_children(paths.NODE_MARKERS)) == ["1", "2", "3"]
