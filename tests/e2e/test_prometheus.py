"""Every dashboard query and alert rule, evaluated by a real Prometheus scraping a live stack.

Prometheus runs with the configuration compose.yaml ships (targets, rule path and intervals substituted) and
scrapes a three-node stack while a workload forwards admin writes, fails one on purpose, reassigns partitions
under a throttle and SIGKILLs the active controller once. Then, through Prometheus's HTTP API:

- every PromQL expression of every panel of every dashboard parses and returns at least one series over the
  run (Grafana's ``$broker`` and ``$__rate_interval`` substituted as Grafana would);
- every alert rule's expression parses, and its signal (the expression without its threshold) returns series:
  the metric names and labels it relies on are live;
- the no-controller alert's expression holds while no node is the controller after the kill (Prometheus puts
  the alert in ``pending``; it fires only after 30s, longer than this failover), and both clear once a new
  controller is elected.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewTopic
from kafka.errors import TopicAlreadyExistsError

from observability import alerts, dashboards
from tests import promharness
from tests.e2e.conftest import RunningStack
from tests.integration.cluster import wait_for
from tests.stackutil import controller_id, every_node_sees_every_broker, metric_sum, metrics_url

pytestmark = pytest.mark.e2e

#: A 6 s session makes the killed controller's /controller znode (and so the no-controller window) last ~6 s;
#: 2 MB per partition at the default catch-up rate, slowed by the reassignment's throttle, takes seconds.
STACK_OVERRIDES = {
    "zookeeper.session.timeout.ms": "6000",
    "bridgekeeper.replica.catchup.bytes.per.partition": str(2 * 1024 * 1024),
}
TOPIC = "prom-moves"
#: What Grafana substitutes: every broker, and a rate window of a few 1 s scrapes.
GRAFANA_VARIABLES = {"$broker": ".*", "$__rate_interval": "10s"}
NO_CONTROLLER = next(a for a in alerts.ALERTS if a.name == "BridgekeeperNoActiveController")


def grafana(expr: str) -> str:
    for variable, value in GRAFANA_VARIABLES.items():
        expr = expr.replace(variable, value)
    assert "$" not in expr, f"unsubstituted Grafana variable in {expr!r}"
    return expr


@dataclass
class Run:
    prom: promharness.Prometheus
    start: float
    killed: float
    elected: float
    end: float


def reassign(stack: RunningStack, tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "controller.cli", "reassign", "--bootstrap-server", stack.bootstrap, *args],
        capture_output=True, text=True, timeout=120, cwd=tmp,
    )  # fmt: skip


def forwarded_writes(stack: RunningStack, controller: int, value: str) -> None:
    """A dynamic config change on each non-controller broker, sent to that broker: it forwards it (kafka-python
    sends a BROKER resource's change to that broker). A rate alone throttles nothing (no replica is listed)."""
    admin = KafkaAdminClient(bootstrap_servers=stack.bootstrap, request_timeout_ms=30000)
    try:
        for node in stack.stack.nodes:
            if node.broker_id != controller:
                resource = ConfigResource(
                    ConfigResourceType.BROKER, str(node.broker_id), {"follower.replication.throttled.rate": value}
                )
                admin.alter_configs([resource])
    finally:
        admin.close()


@pytest.fixture(scope="module")
def run(stack: RunningStack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    tmp = tmp_path_factory.mktemp("prometheus")
    targets = [f"127.0.0.1:{n.metrics_port}" for n in stack.stack.nodes]
    with promharness.running(promharness.config_for(targets), tmp) as prom:
        prom.wait_scraped(len(targets))
        start = time.time()
        controller = controller_id(stack.zk)
        assert controller is not None

        # Admin writes: through the controller (kafka-python sends CreateTopics to it), one refused on purpose
        # (TOPIC_ALREADY_EXISTS: a series for the error panel), and forwarded ones.
        others = [n.broker_id for n in stack.stack.nodes if n.broker_id != controller]
        assignment = [[controller, others[0]], [others[0], others[1]], [others[1], controller]]
        topic = NewTopic(TOPIC, replica_assignments=dict(enumerate(assignment)))
        admin = KafkaAdminClient(bootstrap_servers=stack.bootstrap, request_timeout_ms=30000)
        try:
            admin.create_topics([topic], timeout_ms=30000)
            with pytest.raises(TopicAlreadyExistsError):
                admin.create_topics([topic], timeout_ms=30000)
        finally:
            admin.close()
        forwarded_writes(stack, controller, "1000000000")

        # A throttled reassignment, verified until complete (which also removes the throttles).
        ids = sorted(n.broker_id for n in stack.stack.nodes)
        moves = {"version": 1, "partitions": [
            {"topic": TOPIC, "partition": p, "replicas": [r for r in ids if r not in replicas][:1] + replicas[:1]}
            for p, replicas in enumerate(assignment)
        ]}  # fmt: skip
        plan = tmp / "plan.json"
        plan.write_text(json.dumps(moves))
        executed = reassign(stack, tmp, "--execute", "--reassignment-json-file", str(plan), "--throttle", "1048576")
        assert executed.returncode == 0, executed.stdout + executed.stderr
        wait_for(lambda: "is still in progress" not in reassign(stack, tmp, "--verify", "--reassignment-json-file",
                                                                 str(plan)).stdout, 90, "the reassignment")  # fmt: skip
        time.sleep(3)  # a few scrapes of the finished state

        # SIGKILL the active controller: no node is the controller until its ZooKeeper session expires.
        victim = next(n for n in stack.stack.nodes if n.broker_id == controller)
        assert victim.process is not None
        killed = time.time()
        victim.process.kill()
        victim.process.wait(10)
        wait_for(lambda: controller_id(stack.zk) not in (None, controller), 60, "a new controller")
        elected = time.time()
        # Back on the same metrics port, so Prometheus's static target finds it again.
        stack.stack.restart_node(victim, overrides={"bridgekeeper.metrics.port": str(victim.metrics_port)})
        every_node_sees_every_broker(stack.stack)
        prom.wait_scraped(len(targets))
        new_controller = controller_id(stack.zk)
        assert new_controller is not None
        forwarded_writes(stack, new_controller, "2000000000")
        time.sleep(12)  # past the longest Grafana rate window substituted above, and rule evaluations
        yield Run(prom, start, killed, elected, time.time())


def dashboard_queries() -> list[tuple[str, str, str]]:
    return dashboards.expressions()


@pytest.mark.parametrize(
    ("board", "panel", "expr"),
    dashboard_queries(),
    ids=[f"{b}:{p}:{i}" for i, (b, p, _e) in enumerate(dashboard_queries())],
)
def test_every_dashboard_query_returns_series(run: Run, board: str, panel: str, expr: str) -> None:
    result = run.prom.query_range(grafana(expr), run.start, run.end)
    assert result, f"{board} / {panel}: no series for {grafana(expr)}"


@pytest.mark.parametrize("alert", alerts.ALERTS, ids=[a.name for a in alerts.ALERTS])
def test_every_alert_parses_and_its_signal_is_live(run: Run, alert: alerts.Alert) -> None:
    run.prom.query(alert.expr)  # raises PromQLError if it does not parse
    assert run.prom.query_range(alert.signal, run.start, run.end), f"{alert.name}: no series for {alert.signal}"


def test_no_controller_alert_holds_during_the_failover_then_clears(run: Run) -> None:
    window = run.prom.query_range(NO_CONTROLLER.expr, run.killed, run.elected + 2)
    assert window, "no moment without an active controller was seen after the kill"
    seen = [float(t) for t, _v in window[0]["values"]]
    assert run.killed - 1 <= min(seen) <= run.elected + 2
    states = run.prom.query_range(f'ALERTS{{alertname="{NO_CONTROLLER.name}"}}', run.killed, run.elected + 2)
    assert {s["metric"]["alertstate"] for s in states} == {"pending"}  # for: 30s outlasts a 6 s failover
    # Cleared: a controller again, and Prometheus no longer holds the alert.
    assert run.prom.query(NO_CONTROLLER.expr) == []
    assert run.prom.query(f'ALERTS{{alertname="{NO_CONTROLLER.name}"}}') == []
    assert [float(s["value"][1]) for s in run.prom.query(NO_CONTROLLER.signal)] == [1.0]
    # Before the kill, exactly one controller all along.
    before = run.prom.query_range(NO_CONTROLLER.signal, run.start, run.killed - 1)
    assert {float(v) for _t, v in before[0]["values"]} == {1.0}


def test_what_the_workload_did_is_what_the_panels_show(run: Run, stack: RunningStack) -> None:
    """Values, not just series: every admin write took the controller's path (100% bridge progress), the
    reassignment completed and held a throttle, the kill cost one election and one scrape target for a while."""
    progress = run.prom.query(grafana(dashboards.FORWARDING.panels()[0].queries[0].expr))
    assert [float(s["value"][1]) for s in progress] == [1.0]
    forwarded = run.prom.query('sum(bridgekeeper_admin_requests_total{route="forwarded"})')
    assert float(forwarded[0]["value"][1]) >= 2  # the restarted node's counters start again; the others' remain
    completed = run.prom.query_range(
        "sum(increase(bridgekeeper_reassignments_completed_total[1h]))", run.start, run.killed
    )
    assert max(float(v) for _t, v in completed[0]["values"]) >= 2
    throttled = run.prom.query_range(
        'max(bridgekeeper_replication_throttle_rate_bytes{direction="leader"})', run.start, run.killed
    )
    assert max(float(v) for _t, v in throttled[0]["values"]) == 1048576
    down = run.prom.query_range('count(up{job="bridgekeeper"} == 0)', run.killed, run.elected + 2)
    assert down and max(float(v) for _t, v in down[0]["values"]) == 1
    elections = run.prom.query("sum(increase(bridgekeeper_controller_elections_won_total[1h]))")
    assert float(elections[0]["value"][1]) >= 1
    # Cross-check one gauge against the node itself.
    active = [metric_sum(metrics_url(n.ready), "bridgekeeper_controller_active") for n in stack.stack.nodes]
    assert sum(active) == 1


def test_the_checks_above_can_fail(run: Run) -> None:
    """A misspelled metric gives no series and a syntax error is refused: the two ways a query here can be wrong."""
    assert run.prom.query_range("sum(bridgekeeper_controller_activ)", run.start, run.end) == []
    with pytest.raises(promharness.PromQLError, match="parse error"):
        run.prom.query("sum(rate(bridgekeeper_requests_total[5m])")
