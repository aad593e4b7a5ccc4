"""``bridgekeeper health``, the container health check: healthy against a live node, a one-line reason and a
non-zero exit against a port nothing listens on (refused, not waited out), exit 2 for a --command-config it
cannot use (the SSL case is in test_tls_stack.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import RunningStack
from tests.netutil import free_port

pytestmark = pytest.mark.e2e


def health(address: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "controller.cli", "health", "--bootstrap-server", address, *extra],
                          capture_output=True, text=True, timeout=60)  # fmt: skip


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
