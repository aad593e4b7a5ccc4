"""``bridgekeeper health``, the container health check: healthy against a live node, a one-line reason and a
non-zero exit against a port nothing listens on (refused, not waited out)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.e2e.conftest import RunningStack
from tests.promharness import free_port

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


def test_a_bad_address_is_named() -> None:
    result = health("no-port-here")
    assert result.returncode == 1
    assert result.stderr == "unhealthy: --bootstrap-server expects HOST:PORT, got 'no-port-here'\n"
