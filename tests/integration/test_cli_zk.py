"""The README's run command: `bridgekeeper zk run` serves on the printed address and stops on Ctrl-C."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from kazoo.client import KazooClient

from controller.devstack.localzk import server_mode
from tests.stackutil import read_until
from zkmodel.brokers import BrokerRegistration, EndPoint

pytestmark = pytest.mark.integration
BIN = [sys.executable, "-m", "controller.cli"]


def _read_ready(proc: subprocess.Popen[str], timeout: float = 60.0) -> tuple[str, list[str]]:
    seen = read_until(proc, "READY ", timeout)
    return seen[-1].split("zookeeper=", 1)[1].strip(), seen


@pytest.mark.parametrize("servers", [1, 3])
def test_zk_run_serves_and_stops_on_ctrl_c(tmp_path: Path, servers: int) -> None:
    proc = subprocess.Popen(
        [*BIN, "zk", "run", "--servers", str(servers), "--data-dir", str(tmp_path / "zk")],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        connect, _ = _read_ready(proc)
        addresses = connect.split(",")
        assert len(addresses) == servers
        modes = set()
        for address in addresses:
            host, port = address.split(":")
            assert host == "127.0.0.1"
            modes.add(server_mode(host, int(port)))
        assert modes == ({"standalone"} if servers == 1 else {"leader", "follower"})
        client = KazooClient(hosts=connect)
        client.start(timeout=20)
        client.create("/hello", b"world")
        client.stop()
        client.close()

        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0, out
        assert "stopped" in out
        for address in addresses:
            host, port = address.split(":")
            assert server_mode(host, int(port)) is None  # nothing answers any more
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_zk_run_rejects_bad_flags() -> None:
    result = subprocess.run([*BIN, "zk", "run", "--port", "70000"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "port must be 1-65535" in result.stderr
    result = subprocess.run([*BIN, "zk", "run", "--servers", "2"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "--servers" in result.stderr


def test_zk_get_decodes_with_kafka_rules(zk: KazooClient, zk_hosts: str) -> None:
    """0 and the decoded znode; 1 for a znode Kafka could not decode or one that is not there; 2 for a path
    that is not absolute (ZooKeeper would refuse it: nothing to ask it)."""
    registration = BrokerRegistration((EndPoint("PLAINTEXT", "h", 9092, "PLAINTEXT"),), timestamp=1, rack="r1")
    zk.create("/brokers/ids/7", registration.encode(), makepath=True)
    zk.create("/brokers/topics/bad", b'{"version":3,"partitions":{"0":[1,1]}}', makepath=True)
    env = {**os.environ}

    ok = subprocess.run([*BIN, "zk", "get", "/brokers/ids/7", "--zookeeper", zk_hosts], capture_output=True, env=env)
    assert ok.returncode == 0, ok.stderr
    shown = orjson.loads(ok.stdout)
    assert shown["decoded"]["rack"] == "r1"
    assert shown["decoded"]["endpoints"][0]["port"] == 9092

    bad = subprocess.run([*BIN, "zk", "get", "/brokers/topics/bad", "--zookeeper", zk_hosts], capture_output=True)
    assert bad.returncode == 1
    assert b"/brokers/topics/bad: " in bad.stderr and b"duplicate" in bad.stderr

    missing = subprocess.run([*BIN, "zk", "get", "/nope", "--zookeeper", zk_hosts], capture_output=True)
    assert missing.returncode == 1 and b"no znode at /nope" in missing.stderr

    relative = subprocess.run([*BIN, "zk", "get", "brokers/ids/7", "--zookeeper", zk_hosts], capture_output=True)
    assert relative.returncode == 2 and b"PATH must start with '/'" in relative.stderr
