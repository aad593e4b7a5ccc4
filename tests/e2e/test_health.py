"""``bridgekeeper health``, the container health check: healthy against a live node, a one-line reason and a
non-zero exit against a port nothing listens on (refused, not waited out), exit 2 for a --command-config it
cannot use (the SSL case with a --command-config is in test_tls_stack.py). With the node's own ``KAFKA_*``
variables it checks a TLS-only node, and its ZooKeeper session: a node whose ZooKeeper is frozen past the session
timeout reads unhealthy although it still answers ApiVersions, and healthy again once ZooKeeper is back."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.config.env import property_name
from controller.config.properties import parse_properties
from controller.devstack.stack import Stack
from tests.e2e.conftest import RunningStack
from tests.integration.cluster import wait_for
from tests.netutil import free_port

pytestmark = pytest.mark.e2e


def health(address: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "controller.cli", "health", "--bootstrap-server", address, *extra],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_live_node_is_healthy(stack: RunningStack) -> None:
    for address in stack.brokers:
        result = health(address)
        assert result.returncode == 0, result.stderr
        assert result.stdout == f"healthy: {address} answers ApiVersions\n"


def test_a_closed_port_is_unhealthy_at_once() -> None:
    address = f"127.0.0.1:{free_port()}"
    result = health(address, "--timeout", "2")
    assert result.returncode == 1
    assert result.stderr.startswith(f"unhealthy: {address}: ") and "Connection refused" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_bad_address_is_a_usage_error_not_unhealthy() -> None:
    result = health("no-port-here")
    assert result.returncode == 2
    assert result.stderr == "error: --bootstrap-server expects HOST:PORT, got 'no-port-here'\n"


def test_a_command_config_it_cannot_use_is_named(tmp_path: Path) -> None:
    """Bad input to the health check: a missing file, an unknown security protocol, a PEM truststore with no
    certificate in it, each exit 2 with the file or key named; a plaintext protocol needs no TLS at all."""
    missing = tmp_path / "nope.properties"
    result = health("127.0.0.1:1", "--command-config", str(missing))
    assert result.returncode == 2 and result.stderr == f"error: {missing} (No such file or directory)\n"

    odd = tmp_path / "odd.properties"
    odd.write_text("security.protocol=TLS\n")
    result = health("127.0.0.1:1", "--command-config", str(odd))
    assert result.returncode == 2
    assert "Invalid value TLS for configuration security.protocol" in result.stderr

    empty_ca = tmp_path / "empty.crt"
    empty_ca.write_text("no certificate here\n")
    ssl_props = tmp_path / "ssl.properties"
    ssl_props.write_text(f"security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location={empty_ca}\n")
    result = health("127.0.0.1:1", "--command-config", str(ssl_props))
    assert result.returncode == 2 and "ssl.truststore.location" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_plaintext_command_config_probes_as_without_one(stack: RunningStack, tmp_path: Path) -> None:
    props = tmp_path / "plain.properties"
    props.write_text("security.protocol=PLAINTEXT\nclient.id=anything\n")
    result = health(stack.brokers[0], "--command-config", str(props))
    assert result.returncode == 0, result.stderr


@pytest.fixture(scope="module")
def tls_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """One TLS-only node (SSL listener, ZooKeeper over TLS) with a short session timeout, so that a frozen
    ZooKeeper expires it within seconds."""
    data_dir = tmp_path_factory.mktemp("health-tls")
    stack = Stack(nodes=1, data_dir=data_dir, tls=True, overrides={"zookeeper.session.timeout.ms": "4000"})
    stack.start()
    try:
        yield stack
    finally:
        stack.zk.resume(1)
        stack.stop()


def variable(key: str) -> str:
    """The KAFKA_* variable that sets ``key`` (Kafka's image encoding: ``_`` as ``__``, ``-`` as ``___``)."""
    name = "KAFKA_" + key.replace("_", "__").replace("-", "___").replace(".", "_").upper()
    assert property_name(name) == key
    return name


def node_environment(stack: Stack) -> dict[str, str]:
    """This environment without KAFKA_* variables, plus the node's configuration as the variables a container
    would set: its properties with the ports it actually bound (a container fixes them)."""
    node = stack.nodes[0]
    settings = parse_properties(node.config_path.read_text(), str(node.config_path))
    settings["listeners"] = f"SSL://127.0.0.1:{node.port}"
    settings["bridgekeeper.metrics.port"] = str(node.metrics_port)
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAFKA_")}
    return env | {variable(k): v for k, v in settings.items()}


def health_from_env(env: dict[str, str], *extra: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "controller.cli", "health", "--config-from-env", "--timeout", "4", *extra]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, env=env)


def test_a_tls_only_node_is_healthy_with_its_own_variables(tls_node: Stack) -> None:
    env = node_environment(tls_node)
    address = f"127.0.0.1:{tls_node.nodes[0].port}"
    done = health_from_env(env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"healthy: {address} answers ApiVersions; ZooKeeper broker session connected\n"
    # bound to every interface and advertised by name (as in a container): probed on loopback, the certificate
    # checked against the advertised name, which the node's certificate has or has not
    port = tls_node.nodes[0].port
    wildcard = {variable("listeners"): f"SSL://0.0.0.0:{port}"}
    named = health_from_env(env | wildcard | {variable("advertised.listeners"): f"SSL://localhost:{port}"})
    assert named.returncode == 0 and named.stdout.startswith(f"healthy: {address} answers"), named.stderr
    stranger = health_from_env(env | wildcard | {variable("advertised.listeners"): f"SSL://bk1.invalid:{port}"})
    assert stranger.returncode == 1 and "Hostname mismatch" in stranger.stderr, stranger.stderr
    # what the variables cannot give is bad input, before any connection
    bad = health_from_env(env, "--listener", "NOPE")
    assert bad.returncode == 2 and "the node has no such listener (it has SSL)" in bad.stderr, bad.stderr
    unbound = health_from_env(env | {variable("listeners"): "SSL://127.0.0.1:0"})
    assert unbound.returncode == 2 and "binds port 0" in unbound.stderr, unbound.stderr


def test_a_node_that_lost_zookeeper_reads_unhealthy_until_it_is_back(tls_node: Stack, tmp_path: Path) -> None:
    assert tls_node.tls_dir is not None
    client = tmp_path / "client.properties"
    client.write_text(
        f"security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location={tls_node.tls_dir}/ca.crt\n"
    )
    env = node_environment(tls_node)
    address = f"127.0.0.1:{tls_node.nodes[0].port}"
    tls_node.zk.pause(1)
    try:
        seen: list[subprocess.CompletedProcess[str]] = []

        def unhealthy() -> bool:
            seen.append(health_from_env(env))
            return seen[-1].returncode == 1

        wait_for(unhealthy, 40, "the frozen ZooKeeper to show in the health check")
        assert seen[-1].stderr.startswith("unhealthy: the broker ZooKeeper session has been disconnected for ")
        assert "longer than its session timeout (4 s)" in seen[-1].stderr
        # it still answers ApiVersions: a check of the listener alone calls it healthy
        listener_only = health(address, "--command-config", str(client), "--timeout", "4")
        assert listener_only.returncode == 0, listener_only.stderr
    finally:
        tls_node.zk.resume(1)
    wait_for(lambda: health_from_env(env).returncode == 0, 60, "the node's ZooKeeper session to be back")
