"""`bridgekeeper up` and `bridgekeeper node` as an operator runs them: separate processes, READY line, stop."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from controller.logtags import UNEXPECTED
from testing.stack import controller_id
from tests import stackutil
from tests.integration.cluster import wait_for
from tests.stackutil import metric
from zkmodel import paths
from zkmodel.brokers import BrokerRegistration

# timing: its refusals or timeouts are asserted within a wall-clock budget of a few seconds, which a second test
# worker beside it on a 2-core machine can exceed; ./dev test runs it alone (docs/testing.md).
pytestmark = [pytest.mark.integration, pytest.mark.timing]
BIN = [sys.executable, "-m", "controller.cli"]


def read_until(proc: subprocess.Popen[str], prefix: str, timeout: float = 90.0) -> str:
    return stackutil.read_until(proc, prefix, timeout)[-1].strip()


def fields(line: str) -> dict[str, str]:
    return dict(part.split("=", 1) for part in line.split()[1:])


def test_up_runs_zookeeper_and_three_nodes_until_ctrl_c(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [*BIN, "up", "--data-dir", str(tmp_path / "stack"), "--ibp", "3.4", "--set", "broker.rack=r1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        ready = fields(read_until(proc, "READY "))
        bootstrap = ready["bootstrap"].split(",")
        metrics = ready["metrics"].split(",")
        assert len(bootstrap) == 3 and len(metrics) == 3
        # A second stack on the same data directory is refused while this one runs, naming its pid.
        again = subprocess.run([*BIN, "up", "--data-dir", str(tmp_path / "stack")], capture_output=True, text=True)
        held = f"--data-dir {tmp_path / 'stack'} is in use by a running stack (pid {proc.pid})"
        assert (again.returncode, again.stderr) == (1, f"error: {held}: stop it, or choose another --data-dir\n")
        assert ready["zookeeper"].endswith("/kafka")
        zk = KazooClient(hosts=ready["zookeeper"])
        zk.start(timeout=20)
        try:
            assert sorted(zk.get_children(paths.BROKER_IDS)) == ["1", "2", "3"]
            reg = BrokerRegistration.decode("b", zk.get(paths.broker(2))[0])
            assert reg.rack == "r1" and reg.version == 5
            assert f"127.0.0.1:{reg.endpoints[0].port}" == bootstrap[1]
            wait_for(lambda: controller_id(zk) is not None, what="a controller")
            active = controller_id(zk)
            assert active is not None
            wait_for(lambda: metric(metrics[active - 1], "bridgekeeper_controller_active") == 1.0, what="metrics")
            assert sum(metric(m, "bridgekeeper_controller_active") or 0 for m in metrics) == 1
        finally:
            zk.stop()
            zk.close()
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=90)
        assert proc.returncode == 0, out
        assert "stopping node 1" in out and out.rstrip().endswith("stopped")
        for node in (1, 2, 3):
            assert (tmp_path / "stack" / f"node-{node}" / "server.properties").exists()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_up_rejects_a_bad_setting_naming_the_key() -> None:
    result = subprocess.run(
        [*BIN, "up", "--set", "zookeeper.session.timeout.ms=soon"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    assert "zookeeper.session.timeout.ms" in result.stderr


@pytest.mark.parametrize(
    ("overrides", "key"),
    [
        (["broker.id=-5"], "broker.id"),
        (["broker.id=1", "zookeeper.connect=127.0.0.1:2181", "listeners=PLAINTEXT://127.0.0.1:nope"], "listeners"),
        (["broker.id=1"], "zookeeper.connect"),
        (
            ["broker.id=1", "zookeeper.connect=h:1", "inter.broker.protocol.version=9.9"],
            "inter.broker.protocol.version",
        ),
    ],
)
def test_node_config_errors_name_the_key(overrides: list[str], key: str) -> None:
    args = [arg for o in overrides for arg in ("--override", o)]
    result = subprocess.run([*BIN, "node", *args], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2, result.stderr
    assert key in result.stderr


def test_node_refuses_a_broker_id_already_registered(zk_hosts: str, zk: KazooClient, tmp_path: Path) -> None:
    zk.create("/brokers/ids/4", b'{"version":5}', ephemeral=True, makepath=True)
    result = subprocess.run(
        [
            *BIN,
            "node",
            "--override",
            "broker.id=4",
            "--override",
            f"zookeeper.connect={zk_hosts}",
            "--override",
            "listeners=PLAINTEXT://127.0.0.1:0",
            "--override",
            "bridgekeeper.metrics.port=-1",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert "broker.id=4" in result.stderr


def test_node_logs_carry_no_unexpected_errors_after_a_stack_run(tmp_path: Path) -> None:
    """Node processes log to files: check them for the unexpected-error tag too."""
    proc = subprocess.Popen(
        [*BIN, "up", "--nodes", "2", "--data-dir", str(tmp_path / "s")], stdout=subprocess.PIPE, text=True
    )
    try:
        ready = fields(read_until(proc, "READY "))
        zk = KazooClient(hosts=ready["zookeeper"])
        zk.start(timeout=20)
        try:
            wait_for(lambda: controller_id(zk) is not None, what="a controller")  # READY may precede the election
        finally:
            zk.stop()
            zk.close()
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    logs = [(tmp_path / "s" / f"node-{i}" / "node.log").read_text() for i in (1, 2)]
    assert sum("elected controller" in text for text in logs) >= 1
    assert not any(UNEXPECTED in text for text in logs)


def refused(args: list[str], budget: float = 5.0) -> subprocess.CompletedProcess[str]:
    """Run a command that must refuse before starting anything: well within ``budget`` (no JVM was started)."""
    started = time.monotonic()
    result = subprocess.run([*BIN, *args], capture_output=True, text=True, timeout=60)
    took = time.monotonic() - started
    assert took < budget, f"{args}: refused after {took:.1f} s"
    return result


def _free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@pytest.mark.parametrize("held", ["zookeeper", "node 2"])
def test_up_refuses_a_base_port_in_use_naming_it(tmp_path: Path, held: str) -> None:
    """ZooKeeper listens on P, node i on P+i (its metrics on P+100+i): a listener on either is named, before
    anything starts. The ports checked before the held one must be free, or the first of them is named."""
    for _ in range(20):
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        base = port if held == "zookeeper" else port - 2
        if held == "zookeeper" or all(_free(p) for p in (base, base + 1, base + 101)):
            break
        listener.close()  # another process holds a port checked first: try elsewhere
    with listener:
        result = refused(["up", "--base-port", str(base), "--data-dir", str(tmp_path / "stack")])
    assert result.returncode == 1, result.stderr
    assert result.stderr == f"error: port {port} is in use: choose another --base-port, or omit it for free ports\n"
    assert result.stdout == ""  # not even "starting ZooKeeper"
    assert not (tmp_path / "stack" / "zookeeper").exists()


def test_up_refuses_a_data_dir_that_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "stack").write_text("not a directory")
    result = refused(["up", "--data-dir", str(tmp_path / "stack")])
    assert result.returncode == 2
    assert result.stderr == f"error: --data-dir {tmp_path / 'stack'} is a file, not a directory\n"


def test_zk_run_refuses_a_port_in_use_and_a_data_dir_that_is_a_file(tmp_path: Path) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        result = refused(["zk", "run", "--port", str(port), "--data-dir", str(tmp_path / "zk")])
    assert result.returncode == 1
    assert result.stderr == f"error: port {port} is in use: choose another --port, or omit it for a free port\n"
    (tmp_path / "file").write_text("x")
    result = refused(["zk", "run", "--data-dir", str(tmp_path / "file")])
    assert result.returncode == 2
    assert result.stderr == f"error: --data-dir {tmp_path / 'file'} is a file, not a directory\n"
