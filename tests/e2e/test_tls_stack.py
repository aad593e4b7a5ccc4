"""``bridgekeeper up --tls``'s stack: nodes that serve SSL, forward over SSL and reach ZooKeeper only
through its TLS-only port; and a node given ZooKeeper TLS material that cannot work (a CA that did not sign the
server, a hostname the server's certificate does not name) stops at once with the handshake's reason."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
from kazoo.client import KazooClient

from controller.config.properties import dump_properties, parse_properties
from controller.devstack import certs
from controller.devstack.localzk import LocalZooKeeper, ServerTls
from controller.devstack.stack import Stack
from tests.integration.cluster import wait_for

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def tls_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    stack = Stack(nodes=2, data_dir=tmp_path_factory.mktemp("up-tls"), tls=True)
    stack.start()
    try:
        yield stack
    finally:
        stack.stop()


def tls_zk(stack: Stack) -> KazooClient:
    assert stack.tls_dir is not None
    d = stack.tls_dir
    return KazooClient(
        hosts=stack.zookeeper,
        use_ssl=True,
        ca=str(d / "ca.crt"),
        certfile=str(d / "client.crt"),
        keyfile=str(d / "client.key"),
        verify_certs=True,
        check_hostname=True,
    )


def ssl_client_properties(path: Path, ca: Path) -> Path:
    """A Kafka client properties file for an SSL listener whose certificate ``ca`` signed."""
    path.write_text(
        dump_properties(
            {"security.protocol": "SSL", "ssl.truststore.type": "PEM", "ssl.truststore.location": str(ca)},
            comment="an SSL client",
        )
    )
    return path


def test_the_tls_stack_serves_ssl_clients_on_a_tls_only_zookeeper(tls_stack: Stack) -> None:
    assert tls_stack.tls_dir is not None
    secure = tls_stack.zk.secure_connect_string
    assert secure and secure != tls_stack.zk.connect_string
    for node in tls_stack.nodes:
        config = parse_properties(node.config_path.read_text(), str(node.config_path))
        assert config["zookeeper.connect"] == secure + "/kafka"  # the TLS-only port, nothing else
        assert config["listeners"].startswith("SSL://")
    zk = tls_zk(tls_stack)
    zk.start(timeout=20)
    try:
        # the same readiness the plaintext stack fixture waits for, read over TLS: a controller, both brokers
        wait_for(lambda: zk.exists("/controller") is not None, 60, "a controller")
        wait_for(lambda: len(zk.get_children("/brokers/ids")) == 2, 30, "both brokers registered")
        bootstrap = ",".join(f"127.0.0.1:{n.port}" for n in tls_stack.nodes)
        admin = AdminClient(
            {
                "bootstrap.servers": bootstrap,
                "security.protocol": "SSL",
                "ssl.ca.location": str(tls_stack.tls_dir / "ca.crt"),
            }
        )
        future = admin.create_topics([NewTopic("up-tls-t", 2, 2)], operation_timeout=30)["up-tls-t"]
        try:
            future.result(60)
        except Exception as exc:
            logs = "\n".join(n.log_path.read_text()[-3000:] for n in tls_stack.nodes)
            raise AssertionError(f"CreateTopics over SSL failed: {exc!r}\n{logs}") from exc
        assert zk.exists("/brokers/topics/up-tls-t") is not None
    finally:
        zk.stop()


def run_node(tmp: Path, settings: dict[str, str]) -> subprocess.CompletedProcess[str]:
    path = tmp / "server.properties"
    path.write_text(dump_properties(settings, comment="a node whose ZooKeeper TLS cannot work"))
    return subprocess.run(
        [sys.executable, "-m", "controller.cli", "node", "--config", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_zookeeper_tls_failures_stop_the_node_with_the_reason(tls_stack: Stack, tmp_path: Path) -> None:
    assert tls_stack.tls_dir is not None
    stranger = certs.make_ca("CN=another CA")
    other = certs.write_pem(tmp_path / "other", "node", certs.issue(stranger, "CN=node"), stranger)
    base = {
        "broker.id": "9",
        "zookeeper.connect": tls_stack.zookeeper,
        "listeners": "PLAINTEXT://127.0.0.1:0",
        "zookeeper.connection.timeout.ms": "4000",
        "zookeeper.ssl.client.enable": "true",
        "zookeeper.ssl.truststore.location": str(other.ca),
        "zookeeper.ssl.truststore.type": "PEM",
        "bridgekeeper.metrics.port": "-1",
    }
    done = run_node(tmp_path, base)
    assert done.returncode == 3, done.stderr
    assert "the TLS handshake failed" in done.stderr and "certificate verify failed" in done.stderr, done.stderr

    # a server certificate that does not name the host: refused with hostname verification, fine without
    ca = certs.make_ca()
    zk_files = certs.write_pem(tmp_path / "zk", "zk", certs.issue(ca, "CN=zk", hosts=("zk.invalid",)), ca)
    with LocalZooKeeper(1, base_dir=tmp_path / "zkdata", tls=ServerTls(zk_files.keystore, zk_files.ca)) as zk:
        zk.start()
        settings = {
            **base,
            "zookeeper.connect": zk.secure_connect_string + "/kafka",
            "zookeeper.ssl.truststore.location": str(zk_files.ca),
        }
        done = run_node(tmp_path, settings)
        assert done.returncode == 3 and "mismatch" in done.stderr, done.stderr
        settings["zookeeper.ssl.endpoint.identification.algorithm"] = ""
        path = tmp_path / "server.properties"
        path.write_text(dump_properties(settings, comment="hostname verification off"))
        node = subprocess.Popen(
            [sys.executable, "-m", "controller.cli", "node", "--config", str(path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert node.stdout is not None
            line = node.stdout.readline()
            assert line.startswith("NODE-READY broker=9"), node.stderr.read() if node.stderr else ""
        finally:
            node.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                node.wait(30)


def test_the_reassign_tool_over_ssl_with_its_command_config(tls_stack: Stack, tmp_path: Path) -> None:
    """Operators point ``bridgekeeper reassign`` at a TLS cluster as they point Kafka's tool: --command-config."""
    assert tls_stack.tls_dir is not None
    config = ssl_client_properties(tmp_path / "client.properties", tls_stack.tls_dir / "ca.crt")
    bootstrap = ",".join(f"127.0.0.1:{n.port}" for n in tls_stack.nodes)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "controller.cli",
            "reassign",
            "--bootstrap-server",
            bootstrap,
            "--command-config",
            str(config),
            "--list",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "No partition reassignments found." in done.stdout


def test_the_health_check_over_ssl_with_its_command_config(tls_stack: Stack, tmp_path: Path) -> None:
    """The compose health check on a TLS-only listener: ``bridgekeeper health`` takes Kafka's client properties
    as Kafka's tools do; without them it reports the node unhealthy, with unusable ones it exits 2 naming why."""
    assert tls_stack.tls_dir is not None
    good = ssl_client_properties(tmp_path / "client.properties", tls_stack.tls_dir / "ca.crt")
    broken = ssl_client_properties(tmp_path / "broken.properties", tmp_path / "missing.crt")
    address = f"127.0.0.1:{tls_stack.nodes[0].port}"

    def health(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "controller.cli", "health", "--bootstrap-server", address, "--timeout", "5", *extra],
            capture_output=True,
            text=True,
            timeout=60,
        )

    done = health("--command-config", str(good))
    assert done.returncode == 0, done.stderr
    assert f"healthy: {address} answers ApiVersions" in done.stdout
    plain = health()
    assert plain.returncode == 1 and plain.stderr.startswith("unhealthy: ")
    bad = health("--command-config", str(broken))
    assert bad.returncode == 2
    assert "ssl.truststore.location" in bad.stderr and "missing.crt" in bad.stderr
    assert "Traceback" not in bad.stderr + plain.stderr


def test_the_zookeeper_tools_over_tls_with_kafkas_zk_tls_config_file(tls_stack: Stack, tmp_path: Path) -> None:
    """``zk get``, ``snapshot export`` and ``lockdown plan`` reach the TLS-only ZooKeeper with Kafka's
    --zk-tls-config-file (the zookeeper.ssl.* keys a broker takes); without it they cannot connect, and a file
    they cannot use is named."""
    assert tls_stack.tls_dir is not None
    d = tls_stack.tls_dir
    config = tmp_path / "zk-tls.properties"
    config.write_text(
        dump_properties(
            {
                "zookeeper.ssl.client.enable": "true",
                "zookeeper.ssl.keystore.type": "PEM",
                "zookeeper.ssl.keystore.location": str(d / "node.keystore.pem"),
                "zookeeper.ssl.truststore.type": "PEM",
                "zookeeper.ssl.truststore.location": str(d / "ca.crt"),
            },
            comment="ZooKeeper over TLS",
        )
    )

    def cli(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "controller.cli", *argv], capture_output=True, text=True, timeout=120
        )

    got = cli("zk", "get", "/controller", "--zookeeper", tls_stack.zookeeper, "--zk-tls-config-file", str(config))
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout)["decoded"]["broker_id"] in {n.broker_id for n in tls_stack.nodes}

    out = tmp_path / "snapshot.jsonl"
    exported = cli(
        "snapshot",
        "export",
        "--zookeeper",
        tls_stack.zookeeper,
        "--zk-tls-config-file",
        str(config),
        "--output",
        str(out),
    )
    assert exported.returncode == 0, exported.stderr
    assert any('"/brokers/ids' in line for line in out.read_text().splitlines())

    plan = cli(
        "lockdown",
        "plan",
        "--zookeeper",
        tls_stack.zookeeper,
        "--zk-tls-config-file",
        str(config),
        "--controller-identity",
        "digest:kafka:secret",
    )
    assert plan.returncode == 0, plan.stderr

    plain = cli("zk", "get", "/controller", "--zookeeper", tls_stack.zookeeper, "--timeout", "3")
    assert plain.returncode == 3 and "cannot connect to ZooKeeper" in plain.stderr

    bad = tmp_path / "bad.properties"
    bad.write_text(
        "zookeeper.ssl.client.enable=true\nzookeeper.ssl.truststore.type=PEM\n"
        f"zookeeper.ssl.truststore.location={tmp_path / 'missing.pem'}\n"
    )
    refused = cli("zk", "get", "/controller", "--zookeeper", tls_stack.zookeeper, "--zk-tls-config-file", str(bad))
    assert refused.returncode == 2
    assert "--zk-tls-config-file" in refused.stderr and "zookeeper.ssl.truststore.location" in refused.stderr
    assert "Traceback" not in refused.stderr + plain.stderr


def test_controlled_shutdown_over_the_ssl_inter_broker_listener(tls_stack: Stack) -> None:
    """Last in this module (it stops a node): a broker's ControlledShutdown reaches the controller over SSL."""
    zk = tls_zk(tls_stack)
    zk.start(timeout=20)
    try:
        data, _stat = zk.get("/controller")
        cid = int(json.loads(data)["brokerid"])
    finally:
        zk.stop()
    broker = next(n for n in tls_stack.nodes if n.broker_id != cid)
    tls_stack.stop_node(broker)
    log = broker.log_path.read_text(errors="replace")
    assert f"controlled shutdown of broker {broker.broker_id} succeeded" in log, log[-3000:]
    assert "controlled shutdown attempt" not in log
