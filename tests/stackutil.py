"""Helpers for tests that run real node processes (``bridgekeeper up`` style) against a real ZooKeeper; what
benchmarks need too (the controller's id, metrics, READY lines) is in :mod:`testing.stack`."""

from __future__ import annotations

import contextlib
import re
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient

from controller.devstack.stack import Stack
from controller.logtags import UNEXPECTED


def metric(url: str, name: str) -> float | None:
    with urllib.request.urlopen(url, timeout=5) as response:
        text = response.read().decode()
    match = re.search(rf"^{re.escape(name)}\{{[^}}]*\}} ([-0-9.e+]+)$", text, re.MULTILINE)
    return None if match is None else float(match.group(1))


def every_node_sees_every_broker(stack: Any, timeout: float = 30.0) -> None:
    """A node learns the others' registrations through a ZooKeeper watch, moments after it said it was ready
    (as Kafka's UpdateMetadata trails a registration): tests that address a given broker, or read from one
    node what another wrote, wait until every node's metadata lists every broker."""
    from kafka.admin import KafkaAdminClient

    from tests.integration.cluster import wait_for

    for n in stack.nodes:
        client = KafkaAdminClient(bootstrap_servers=f"127.0.0.1:{n.port}", request_timeout_ms=30000)
        try:
            wait_for(
                lambda c=client: len(c.describe_cluster()["brokers"]) == len(stack.nodes),  # type: ignore[misc]
                timeout,
                f"node {n.broker_id} to list every broker",
            )
        finally:
            client.close()


def error_codes(response: Any) -> list[int]:
    """Every ``error_code`` in a kafka-python response, top level and nested (per resource, filter, entry)."""
    found: list[int] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                if key == "error_code":
                    found.append(int(item))
                else:
                    walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(response.to_dict())
    assert found, f"no error codes in {response!r}"
    return found


def stop_stack(stack: Stack, zk: KazooClient | None) -> None:
    """A module fixture's teardown: the test's own ZooKeeper client closed (whatever state it is in), then
    every node and ZooKeeper stopped by the harness."""
    if zk is not None:
        with contextlib.suppress(Exception):
            zk.stop()
            zk.close()
    stack.stop()


def assert_no_unexpected(stack: Stack, data_dir: Path) -> None:
    """No node logged BK-UNEXPECTED (how an unexpected exception is logged) while the stack ran."""
    unexpected = [n.broker_id for n in stack.nodes if UNEXPECTED in n.log_path.read_text(errors="replace")]
    assert not unexpected, f"node(s) {unexpected} logged {UNEXPECTED} (logs under {data_dir})"


def read_until(proc: subprocess.Popen[str], prefix: str, timeout: float = 90.0) -> list[str]:
    """The lines a command printed up to and including the first that starts with ``prefix`` (its READY line);
    fails with everything it printed when it ends or ``timeout`` passes first."""
    assert proc.stdout is not None
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(line.rstrip())
        if line.startswith(prefix):
            return seen
    raise AssertionError(f"no {prefix!r} line; output: {seen}")
