"""Every dashboard query, alert rule and recording rule, evaluated by a real Prometheus scraping a live stack.

Prometheus runs with the configuration compose.yaml ships (targets with their cluster label, rule paths and
intervals substituted) and scrapes a three-node stack while a workload forwards admin writes, fails one on
purpose, reassigns partitions under a throttle and SIGKILLs the active controller once. Then, through
Prometheus's HTTP API:

- every PromQL expression of every panel of every dashboard parses and returns at least one series over the
  run (Grafana's ``$cluster``, ``$broker`` and ``$__rate_interval`` substituted as Grafana would);
- every alert rule's expression parses, and its signal (the expression without its threshold) returns series:
  the metric names and labels it relies on are live;
- every recording rule (Kafka's metric names) records series, and the panels of Strimzi's Kafka dashboard that
  bridgekeeper can fill return series, their PromQL read from Strimzi's own JSON (``tests/data/strimzi/``) with
  its variables substituted for this cluster; the panels it cannot fill are listed, each with the reason; its
  Namespace, Cluster Name and Broker variables, evaluated as Grafana does, list this cluster and its brokers;
- the no-controller alert's expression holds while no node is the controller after the kill (Prometheus puts
  the alert in ``pending``; it fires only after 30s, longer than this failover), and both clear once a new
  controller is elected.
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewTopic
from kafka.errors import TopicAlreadyExistsError

from observability import alerts, dashboards, recording
from testing.stack import controller_id, metric_sum, metrics_url
from tests import promharness
from tests.e2e.conftest import RunningStack
from tests.integration.cluster import wait_for
from tests.stackutil import every_node_sees_every_broker
from zkmodel import paths
from zkmodel.topics import PartitionState, TopicAssignment

# timing: the panels are checked against what Prometheus scraped every second while a node was killed and
# re-elected; a second test worker on the same 2 cores delays scrapes past those windows; ./dev test runs it
# alone (docs/testing.md).
pytestmark = [pytest.mark.e2e, pytest.mark.timing]

#: A 6 s session makes the killed controller's /controller znode (and so the no-controller window) last ~6 s;
#: 2 MB per partition at the default catch-up rate, slowed by the reassignment's throttle, takes seconds.
STACK_OVERRIDES = {
    "zookeeper.session.timeout.ms": "6000",
    "bridgekeeper.replica.catchup.bytes.per.partition": str(2 * 1024 * 1024),
}
TOPIC = "prom-moves"
#: The ``cluster`` label the scrape configuration gives this stack's targets.
CLUSTER = "e2e"
#: What Grafana substitutes: this cluster, every broker, and a rate window of a few 1 s scrapes.
GRAFANA_VARIABLES = {"$cluster": CLUSTER, "$broker": ".*", "$__rate_interval": "10s"}
NO_CONTROLLER = next(a for a in alerts.ALERTS if a.name == "BridgekeeperNoActiveController")

#: Strimzi's Kafka dashboard (0.45.2, the last with ZooKeeper), vendored unmodified with its source and license.
STRIMZI = Path(__file__).resolve().parents[1] / "data" / "strimzi" / "strimzi-kafka.json"
#: What Grafana substitutes in it for this cluster: the namespace and cluster name the recording rules give it,
#: and "All" (each variable's allValue) for brokers, topics and partitions.
STRIMZI_VARIABLES = {
    "$kubernetes_namespace": recording.NAMESPACE,
    "$strimzi_cluster_name": CLUSTER,
    "$kafka_broker": ".*",
    "$kafka_topic": ".+",
    "$kafka_partition": ".*",
}
#: The panels bridgekeeper fills through dashboards/recording_rules.yaml.
STRIMZI_FILLED = (
    "Brokers Online",
    "Online Replicas",
    "Active Controllers",
    "Offline Partitions Count",
    "Under Replicated Partitions",
    "Connection Count per Listener",
    "ZK request latecy",  # sic
)
NOT_MEASURED = "not measured by bridgekeeper"
KUBERNETES = "Kubernetes container, volume or pod metrics (cAdvisor, kubelet), not a node's"
JVM = "JVM metrics: a node is a Python process"
DATA_PLANE = "data plane: nodes serve no Produce or Fetch and keep no logs"
#: Every other panel of the dashboard, and why bridgekeeper cannot fill it.
STRIMZI_NOT_FILLED = {
    "Unclean Leader Election Rate": f"a count of unclean leader elections: {NOT_MEASURED}",
    "Partitions at minimum ISR": f"min.insync.replicas state per partition: {NOT_MEASURED}",
    "Partitions under minimum ISR": f"min.insync.replicas state per partition: {NOT_MEASURED}",
    "Memory Usage": KUBERNETES,
    "CPU Usage": KUBERNETES,
    "Available Disk Space": KUBERNETES,
    "Open File Descriptors": KUBERNETES,
    "JVM Memory Used": JVM,
    "JVM GC Time": JVM,
    "JVM GC Count": JVM,
    "JVM Thread Count": JVM,
    "Network Processor Avg Idle Percent": "Kafka's network thread pool: a node has none (asyncio)",
    "Request Handler Avg Idle Percent": "Kafka's request handler pool: a node has none (asyncio)",
    "Total Incoming Byte Rate": DATA_PLANE,
    "Total Outgoing Byte Rate": DATA_PLANE,
    "Incoming Messages Rate": DATA_PLANE,
    "Total Produce Request Rate": DATA_PLANE,
    "Byte Rate": DATA_PLANE,
    "Messages In Per Second": DATA_PLANE,
    "Produce Request Rate": DATA_PLANE,
    "Fetch Request Rate": DATA_PLANE,
    "Disk Writes": DATA_PLANE,
    "Disk Reads": DATA_PLANE,
    "Log Size": DATA_PLANE,
}


def substitute(expr: str, variables: dict[str, str]) -> str:
    # Longest names first: none is a prefix of another today, but $kafka_broker must not eat $kafka_brokers.
    for variable in sorted(variables, key=len, reverse=True):
        expr = expr.replace(variable, variables[variable])
    assert "$" not in expr, f"unsubstituted Grafana variable in {expr!r}"
    return expr


def grafana(expr: str) -> str:
    return substitute(expr, GRAFANA_VARIABLES)


def strimzi_panels() -> dict[str, list[str]]:
    """Panel title -> the PromQL of its targets, rows' nested panels included."""
    panels: dict[str, list[str]] = {}

    def walk(items: list[dict[str, Any]]) -> None:
        for panel in items:
            walk(panel.get("panels", []))
            exprs = [str(t["expr"]) for t in panel.get("targets", []) if t.get("expr")]
            if exprs:
                panels.setdefault(str(panel["title"]), []).extend(exprs)

    walk(json.loads(STRIMZI.read_text())["panels"])
    return panels


def strimzi_variables() -> dict[str, tuple[str, str]]:
    """Variable name -> the PromQL inside its ``query_result(...)`` and the regular expression Grafana applies to
    each result (without its slashes), for the dashboard's query variables."""
    out: dict[str, tuple[str, str]] = {}
    for variable in json.loads(STRIMZI.read_text())["templating"]["list"]:
        query = str(variable.get("query") or "")
        if query.startswith("query_result(") and query.endswith(")"):
            out[str(variable["name"])] = (query[len("query_result(") : -1], str(variable["regex"]).strip("/"))
    return out


def as_grafana_lists(series: dict[str, Any]) -> str:
    """A series as Grafana's ``query_result`` shows it to a variable's regular expression: name, labels, value."""
    labels = dict(series["metric"])
    name = labels.pop("__name__", "")
    text = ", ".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    return f"{name}{{{text}}} {series['value'][1]}"


def replication_in_zookeeper(stack: RunningStack) -> tuple[dict[int, int], dict[int, int]]:
    """Per broker, from the znodes the controller writes: the partitions it leads and those it holds a replica of
    (Kafka's LeaderCount and PartitionCount)."""
    leaders: dict[int, int] = {}
    hosted: dict[int, int] = {}
    for name in stack.zk.get_children(paths.BROKER_TOPICS):
        assignment = TopicAssignment.decode(paths.topic(name), stack.zk.get(paths.topic(name))[0])
        for partition, replicas in assignment.partitions.items():
            for broker in replicas:
                hosted[broker] = hosted.get(broker, 0) + 1
            state_path = paths.partition_state(name, partition)
            leader = PartitionState.decode(state_path, stack.zk.get(state_path)[0]).leader
            if leader >= 0:
                leaders[leader] = leaders.get(leader, 0) + 1
    return leaders, hosted


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
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp,
    )


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
    with promharness.running(promharness.config_for({CLUSTER: targets}), tmp) as prom:
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
        moves = {
            "version": 1,
            "partitions": [
                {"topic": TOPIC, "partition": p, "replicas": [r for r in ids if r not in replicas][:1] + replicas[:1]}
                for p, replicas in enumerate(assignment)
            ],
        }
        plan = tmp / "plan.json"
        plan.write_text(json.dumps(moves))
        executed = reassign(stack, tmp, "--execute", "--reassignment-json-file", str(plan), "--throttle", "1048576")
        assert executed.returncode == 0, executed.stdout + executed.stderr
        wait_for(
            lambda: (
                "is still in progress"
                not in reassign(stack, tmp, "--verify", "--reassignment-json-file", str(plan)).stdout
            ),
            90,
            "the reassignment",
        )
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


@pytest.mark.parametrize("record", sorted({r.record for r in recording.RECORDINGS}))
def test_every_recording_rule_records_series_for_the_cluster(run: Run, stack: RunningStack, record: str) -> None:
    """Kafka's names, with the labels Strimzi's dashboards select this cluster by."""
    selector = f'{record}{{strimzi_io_cluster="{CLUSTER}", namespace="{recording.NAMESPACE}"}}'
    result = run.prom.query_range(selector, run.start, run.end)
    assert result, f"no series recorded for {selector}"
    pods = {s["metric"]["kubernetes_pod_name"] for s in result}
    assert pods <= {f"{CLUSTER}-kafka-{n.broker_id}" for n in stack.stack.nodes}, pods


def test_strimzi_panels_are_all_accounted_for() -> None:
    """Each panel of the vendored dashboard is either filled or listed with why not: a newer dashboard's new
    panels show up here."""
    titles, listed = set(strimzi_panels()), set(STRIMZI_FILLED) | set(STRIMZI_NOT_FILLED)
    assert titles == listed, titles ^ listed
    assert not set(STRIMZI_FILLED) & set(STRIMZI_NOT_FILLED)


@pytest.mark.parametrize("panel", STRIMZI_FILLED)
def test_strimzi_kafka_dashboard_panels_bridgekeeper_fills_return_series(run: Run, panel: str) -> None:
    for expr in strimzi_panels()[panel]:
        query = substitute(expr, STRIMZI_VARIABLES)
        assert run.prom.query_range(query, run.start, run.end), f"Strimzi's {panel!r}: no series for {query}"


def test_strimzi_panels_show_what_bridgekeeper_shows(run: Run) -> None:
    """Values, not just series: one active controller, nothing offline, the same figures as our own panels."""
    panels = strimzi_panels()

    def now(title: str) -> list[float]:
        return [float(s["value"][1]) for s in run.prom.query(substitute(panels[title][0], STRIMZI_VARIABLES))]

    assert now("Active Controllers") == [1.0]
    assert now("Brokers Online") == [3.0]
    assert now("Offline Partitions Count") == [0.0]
    ours = run.prom.query(f'max(bridgekeeper_under_replicated_partitions{{cluster="{CLUSTER}"}})')
    assert now("Under Replicated Partitions") == [float(ours[0]["value"][1])]
    pods = run.prom.query(substitute(panels["Connection Count per Listener"][0], STRIMZI_VARIABLES))
    assert {s["metric"]["listener"] for s in pods} == {"PLAINTEXT"}
    latency = run.prom.query_range(substitute(panels["ZK request latecy"][0], STRIMZI_VARIABLES), run.start, run.end)
    assert any(float(v) > 0 for s in latency for _t, v in s["values"])  # milliseconds summed over quantiles


def test_strimzi_variables_list_this_cluster_and_its_brokers(run: Run, stack: RunningStack) -> None:
    """Namespace, Cluster Name and Broker, read from kafka_server_replicamanager_leadercount as the dashboard's
    variables read them, give what the panels above were queried with."""
    variables = strimzi_variables()

    def values(name: str) -> set[str]:
        query, regex = variables[name]
        query, regex = substitute(query, STRIMZI_VARIABLES), substitute(regex, STRIMZI_VARIABLES)
        found = {re.fullmatch(regex, as_grafana_lists(s)) for s in run.prom.query(query)}
        return {m.group(1) for m in found if m is not None}

    assert values("kubernetes_namespace") == {recording.NAMESPACE}
    assert values("strimzi_cluster_name") == {CLUSTER}
    assert values("kafka_broker") == {f"kafka-{n.broker_id}" for n in stack.stack.nodes}


def test_leader_and_replica_counts_add_up_to_what_zookeeper_holds(run: Run, stack: RunningStack) -> None:
    """Per broker, LeaderCount and PartitionCount as ZooKeeper's assignments and partition states give them; so
    Strimzi's panels sum to the partitions with a leader and to the replicas in all."""
    panels = strimzi_panels()
    pods = {f"{CLUSTER}-kafka-{n.broker_id}": n.broker_id for n in stack.stack.nodes}

    def by_broker(record: str) -> dict[int, int]:
        query = f'{record}{{strimzi_io_cluster="{CLUSTER}", namespace="{recording.NAMESPACE}"}}'
        return {pods[s["metric"]["kubernetes_pod_name"]]: int(float(s["value"][1])) for s in run.prom.query(query)}

    def counted() -> tuple[dict[int, int], dict[int, int]]:
        leaders = by_broker("kafka_server_replicamanager_leadercount")
        return leaders, by_broker("kafka_server_replicamanager_partitioncount")

    def expected() -> tuple[dict[int, int], dict[int, int]]:
        leaders, hosted = replication_in_zookeeper(stack)
        return {b: leaders.get(b, 0) for b in pods.values()}, {b: hosted.get(b, 0) for b in pods.values()}

    with contextlib.suppress(AssertionError):  # Prometheus sees a change a scrape and a rule evaluation late
        wait_for(lambda: counted() == expected(), 30, "the counts to reach Prometheus")
    leaders, hosted = expected()
    assert counted() == (leaders, hosted)
    assert sum(leaders.values()) >= 3 and sum(hosted.values()) >= 6  # prom-moves: 3 partitions, 2 replicas each
    online = run.prom.query(substitute(panels["Online Replicas"][0], STRIMZI_VARIABLES))
    assert [float(s["value"][1]) for s in online] == [float(sum(hosted.values()))]
    led = run.prom.query(f'sum(kafka_server_replicamanager_leadercount{{strimzi_io_cluster="{CLUSTER}"}})')
    assert [float(s["value"][1]) for s in led] == [float(sum(leaders.values()))]


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
