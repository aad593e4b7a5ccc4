"""Alerts arrive, and two clusters' alerts stay apart.

Debian's real Prometheus and Alertmanager run on loopback with the configurations compose.yaml ships: the
Alertmanager's webhook URL and Prometheus's targets, rule paths and Alertmanager address substituted, the
intervals, Alertmanager's group waits and the ``for:`` of the two alerts awaited shortened (the shipped ones are
minutes). Prometheus scrapes two one-node stacks whose targets carry different ``cluster`` labels, as the shipped
configuration tells operators to list their clusters. A webhook receiver runs in the test.

Every node of one cluster is stopped: Prometheus fires that cluster's no-active-controller (and node-down)
alerts, naming it, and nothing for the other cluster, which keeps its controller; Alertmanager delivers them to
the webhook, labels, runbook link and all.
"""

from __future__ import annotations

import contextlib
import http.server
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest
from kazoo.client import KazooClient

from controller.devstack.stack import Stack
from observability import alerts
from testing.stack import controller_id
from tests import promharness
from tests.integration.cluster import wait_for

pytestmark = pytest.mark.e2e

STOPPED, KEPT = "alpha", "beta"
NO_CONTROLLER = "BridgekeeperNoActiveController"
NODE_DOWN = "BridgekeeperNodeDown"
#: ``for:`` of the alerts this test waits for (30 s and 1 m shipped).
FAST = {NO_CONTROLLER: "2s", NODE_DOWN: "2s"}


@dataclass
class Webhook:
    """An Alertmanager webhook receiver: every notification it was sent, in order."""

    url: str
    received: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def alerts(self) -> list[dict[str, Any]]:
        with self.lock:
            return [alert for notification in self.received for alert in notification["alerts"]]

    def wait(self, found: Callable[[list[dict[str, Any]]], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not found(self.alerts()):
            assert time.monotonic() < deadline, f"no {what} arrived in {timeout}s; received: {self.received}"
            time.sleep(0.2)


@contextlib.contextmanager
def webhook() -> Iterator[Webhook]:
    hook = Webhook("")

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            with hook.lock:
                hook.received.append(orjson.loads(body))
            self.send_response(200)
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    hook.url = f"http://127.0.0.1:{server.server_port}/alerts"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield hook
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


@pytest.fixture(scope="module")
def stacks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Stack]]:
    """One single-node stack per cluster, each with its own ZooKeeper."""
    started: dict[str, Stack] = {}
    try:
        for name in (STOPPED, KEPT):
            stack = Stack(nodes=1, data_dir=tmp_path_factory.mktemp(f"stack-{name}"))
            started[name] = stack
            stack.start()
        for stack in started.values():
            wait_for_controller(stack)
        yield started
    finally:
        for stack in started.values():
            stack.stop()


def wait_for_controller(stack: Stack) -> None:
    zk = KazooClient(hosts=stack.zookeeper)
    zk.start(timeout=20)
    try:
        wait_for(lambda: controller_id(zk) is not None, 60, "a controller")
    finally:
        zk.stop()
        zk.close()


def test_the_alert_arrives_at_the_webhook_naming_only_its_cluster(stacks: dict[str, Stack], tmp_path: Path) -> None:
    targets = {name: [f"127.0.0.1:{n.metrics_port}" for n in stack.nodes] for name, stack in stacks.items()}
    rules = [promharness.alert_rules_with_for(tmp_path / "rules", FAST), promharness.RECORDING_RULES]
    with (
        webhook() as hook,
        promharness.alertmanager_running(promharness.alertmanager_config_for(hook.url), tmp_path / "am") as am,
        promharness.running(
            promharness.config_for(targets, rules=rules, alertmanager=am.address), tmp_path / "prom"
        ) as prom,
    ):
        prom.wait_scraped(2)
        active = alerts.ACTIVE
        wait_for(lambda: len(prom.query(f"{active} == 1")) == 2, 30, "one controller in each cluster")
        assert prom.query('ALERTS{alertstate="firing"}') == []

        for node in stacks[STOPPED].nodes:
            stacks[STOPPED].stop_node(node)
        hook.wait(
            lambda got: {(a["labels"]["alertname"], a["status"]) for a in got} >= {(NO_CONTROLLER, "firing")},
            60,
            f"{NO_CONTROLLER} notification",
        )

        arrived = next(a for a in hook.alerts() if a["labels"]["alertname"] == NO_CONTROLLER)
        rule = next(a for a in alerts.ALERTS if a.name == NO_CONTROLLER)
        assert arrived["labels"] == {"alertname": NO_CONTROLLER, "cluster": STOPPED, "severity": "critical"}
        assert arrived["annotations"]["summary"] == f"Cluster {STOPPED}: no active controller"
        assert arrived["annotations"]["runbook_url"] == rule.runbook_url()
        notification = next(
            n for n in hook.received if any(a["labels"]["alertname"] == NO_CONTROLLER for a in n["alerts"])
        )
        assert notification["receiver"] == "webhook" and notification["groupLabels"]["cluster"] == STOPPED

        # Only the stopped cluster: in Prometheus, and at the webhook.
        firing = prom.query('ALERTS{alertstate="firing"}')
        assert {s["metric"]["cluster"] for s in firing} == {STOPPED}, firing
        assert {s["metric"]["alertname"] for s in firing} <= {NO_CONTROLLER, NODE_DOWN}
        assert {a["labels"]["cluster"] for a in hook.alerts()} == {STOPPED}
        kept = prom.query(f'sum(bridgekeeper_controller_active{{cluster="{KEPT}"}})')
        assert [float(s["value"][1]) for s in kept] == [1.0]  # the kept cluster still has its controller
