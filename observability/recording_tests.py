"""promtool unit tests for the recording rules (``dashboards/recording_rules_test.yaml``): bridgekeeper's series in,
Kafka's names out, with the labels Strimzi's dashboards filter on. Each case feeds series of two clusters whose
broker ids repeat (they must stay apart) and states, at an evaluation time, every series a recorded name must
have then, with its value."""

from __future__ import annotations

from dataclasses import dataclass

import yaml

from observability.recording import NAMESPACE, QUANTILES, RECORDINGS

#: (cluster, broker id, namespace the scrape configuration set or None) of the nodes the cases feed.
NODES = (("a", "1", None), ("a", "2", None), ("b", "1", "kafka-prod"))


def node_labels(cluster: str, broker: str, namespace: str | None) -> dict[str, str]:
    """What Prometheus's scrape gives a node's series: the node's ``broker_id``, the target's labels."""
    labels = {"broker_id": broker, "cluster": cluster, "instance": f"bk{broker}.{cluster}:9404", "job": "bridgekeeper"}
    return labels | ({"namespace": namespace} if namespace else {})


def strimzi(cluster: str, broker: str, namespace: str | None) -> dict[str, str]:
    """The labels every recorded series adds: Strimzi's PodMonitor's, made from ``cluster`` and ``broker_id``."""
    return {
        "namespace": namespace or NAMESPACE,
        "strimzi_io_cluster": cluster,
        "strimzi_io_name": f"{cluster}-kafka",
        "kubernetes_pod_name": f"{cluster}-kafka-{broker}",
    }


def series(name: str, labels: dict[str, str]) -> str:
    return name + "{" + ", ".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}"


@dataclass(frozen=True)
class Case:
    name: str
    inputs: tuple[tuple[str, str], ...]  # (series, promtool values)
    at: str
    #: recorded name -> (labels beyond the node's and Strimzi's, node index, value) of every series expected
    expect: dict[str, tuple[tuple[dict[str, str], int, float], ...]]
    interval: str = "15s"


def _inputs(metric: str, per_node: dict[int, str], **extra: str) -> tuple[tuple[str, str], ...]:
    return tuple((series(metric, node_labels(*NODES[i]) | extra), values) for i, values in per_node.items())


DIRECT = [r for r in RECORDINGS if r.expr.startswith("bridgekeeper_") and r.expr.isidentifier()]
#: Observations all in the (0.25 s, 0.5 s] bucket: Prometheus interpolates linearly inside it, so the quantile q
#: is 250 + 250 q milliseconds.
IN_BUCKET = {"0.1": "0x40", "0.25": "0x40", "0.5": "0+6x40", "1.0": "0+6x40", "+Inf": "0+6x40"}


def _histogram(metric: str, node: int, **extra: str) -> tuple[tuple[str, str], ...]:
    labels = node_labels(*NODES[node]) | extra
    buckets = [(series(f"{metric}_bucket", labels | {"le": le}), values) for le, values in IN_BUCKET.items()]
    return (*buckets, (series(f"{metric}_count", labels), "0+6x40"))


def _quantiles(node: int) -> tuple[tuple[dict[str, str], int, float], ...]:
    return tuple(({"quantile": q}, node, 250 + 250 * float(q)) for q in QUANTILES)


ZK_LATENCY = "kafka_server_zookeeperclientmetrics_zookeeperrequestlatencyms"
ELECTION = "kafka_controller_controllerstats_leaderelectionrateandtimems"
CASES: tuple[Case, ...] = (
    Case(
        "gauges keep the node's labels and gain Strimzi's; a namespace the scrape set is kept",
        tuple(x for k, r in enumerate(DIRECT) for x in _inputs(r.expr, {0: f"{k}x4", 1: "0x4", 2: f"{k + 10}x4"})),
        "1m",
        {r.record: (({}, 0, float(k)), ({}, 1, 0.0), ({}, 2, float(k + 10))) for k, r in enumerate(DIRECT)},
    ),
    Case(
        "session transitions: the broker session's, one counter per kind",
        _inputs("bridgekeeper_zookeeper_session_events_total", {0: "1x4", 2: "3x4"}, session="broker", event="connect")
        + _inputs("bridgekeeper_zookeeper_session_events_total", {0: "2x4"}, session="broker", event="expire")
        + _inputs("bridgekeeper_zookeeper_session_events_total", {0: "5x4"}, session="controller", event="expire")
        + _inputs("bridgekeeper_zookeeper_session_events_total", {0: "0x4"}, session="broker", event="disconnect"),
        "1m",
        {
            "kafka_server_sessionexpirelistener_zookeepersyncconnects_total": (({}, 0, 1.0), ({}, 2, 3.0)),
            "kafka_server_sessionexpirelistener_zookeeperexpires_total": (({}, 0, 2.0),),
            "kafka_server_sessionexpirelistener_zookeeperdisconnects_total": (({}, 0, 0.0),),
        },
    ),
    Case(
        "session state: the current state only, by ZooKeeper's name for it",
        _inputs(
            "bridgekeeper_zookeeper_session_state", {0: "1x4", 1: "0x4", 2: "1x4"}, session="broker", state="CONNECTED"
        )
        + _inputs(
            "bridgekeeper_zookeeper_session_state", {0: "0x4", 1: "1x4", 2: "0x4"}, session="broker", state="SUSPENDED"
        )
        + _inputs(
            "bridgekeeper_zookeeper_session_state", {0: "0x4", 1: "0x4", 2: "0x4"}, session="broker", state="LOST"
        )
        + _inputs("bridgekeeper_zookeeper_session_state", {0: "0x4"}, session="controller", state="LOST"),
        "1m",
        {
            "kafka_server_sessionexpirelistener_sessionstate": (
                ({"state": "CONNECTED"}, 0, 1.0),
                ({"state": "CONNECTING"}, 1, 1.0),
                ({"state": "CONNECTED"}, 2, 1.0),
            ),
        },
    ),
    Case(
        "ZooKeeper latency: quantiles in milliseconds per node, over every kind of write; the count summed",
        _histogram("bridgekeeper_zookeeper_write_duration_seconds", 0, kind="controller")
        + _histogram("bridgekeeper_zookeeper_write_duration_seconds", 0, kind="config")
        + _histogram("bridgekeeper_zookeeper_write_duration_seconds", 2, kind="registration"),
        "10m",
        {
            ZK_LATENCY: _quantiles(0) + _quantiles(2),
            f"{ZK_LATENCY}_count": (({}, 0, 480.0), ({}, 2, 240.0)),
        },
    ),
    Case(
        "a histogram that observed nothing for five minutes gives no quantiles, only its count",
        tuple(
            (series(f"bridgekeeper_zookeeper_write_duration_seconds_{suffix}", node_labels(*NODES[1]) | extra), values)
            for suffix, extra, values in (
                ("bucket", {"kind": "isr", "le": "0.5"}, "0+1x10 10x30"),
                ("bucket", {"kind": "isr", "le": "+Inf"}, "0+1x10 10x30"),
                ("count", {"kind": "isr"}, "0+1x10 10x30"),
            )
        ),
        "10m",
        {ZK_LATENCY: (), f"{ZK_LATENCY}_count": (({}, 1, 10.0),)},
    ),
    Case(
        "leader elections: the BrokerChange state's timer, not the others'",
        _histogram("bridgekeeper_controller_event_duration_seconds", 0, state="BrokerChange")
        + _histogram("bridgekeeper_controller_event_duration_seconds", 1, state="TopicChange")
        + _inputs("bridgekeeper_controller_event_duration_seconds_count", {1: "0x40"}, state="BrokerChange"),
        "10m",
        {ELECTION: _quantiles(0), f"{ELECTION}_count": (({}, 0, 240.0), ({}, 1, 0.0))},
    ),
    Case(
        "event queue time: every state's waits together",
        _histogram("bridgekeeper_controller_event_queue_time_seconds", 0, state="BrokerChange")
        + _histogram("bridgekeeper_controller_event_queue_time_seconds", 0, state="TopicChange"),
        "10m",
        {
            "kafka_controller_controllereventmanager_eventqueuetimems": _quantiles(0),
            "kafka_controller_controllereventmanager_eventqueuetimems_count": (({}, 0, 480.0),),
        },
    ),
    Case(
        "connections: per listener, and by client software in Kafka's camelCase labels",
        _inputs(
            "bridgekeeper_connections",
            {0: "2x4", 2: "1x4"},
            listener="PLAINTEXT",
            client_software_name="apache-kafka-java",
            client_software_version="3.9.0",
        )
        + _inputs(
            "bridgekeeper_connections",
            {0: "1x4"},
            listener="PLAINTEXT",
            client_software_name="unknown",
            client_software_version="unknown",
        ),
        "1m",
        {
            "kafka_server_socket_server_metrics_connection_count": (
                ({"listener": "PLAINTEXT"}, 0, 3.0),
                ({"listener": "PLAINTEXT"}, 2, 1.0),
            ),
            "kafka_server_socket_server_metrics_connections_software": (
                (
                    {
                        "listener": "PLAINTEXT",
                        "clientSoftwareName": "apache-kafka-java",
                        "clientSoftwareVersion": "3.9.0",
                    },
                    0,
                    2.0,
                ),
                (
                    {"listener": "PLAINTEXT", "clientSoftwareName": "unknown", "clientSoftwareVersion": "unknown"},
                    0,
                    1.0,
                ),
                (
                    {
                        "listener": "PLAINTEXT",
                        "clientSoftwareName": "apache-kafka-java",
                        "clientSoftwareVersion": "3.9.0",
                    },
                    2,
                    1.0,
                ),
            ),
        },
    ),
)


def tests() -> dict[str, object]:
    out: list[dict[str, object]] = []
    for case in CASES:
        checks = [
            {
                "expr": record,
                "eval_time": case.at,
                "exp_samples": [
                    {"labels": series(record, node_labels(*NODES[i]) | strimzi(*NODES[i]) | extra), "value": value}
                    for extra, i, value in expected
                ],
            }
            for record, expected in case.expect.items()
        ]
        inputs = [{"series": s, "values": v} for s, v in case.inputs]
        out.append({"name": case.name, "interval": case.interval, "input_series": inputs, "promql_expr_test": checks})
    return {"rule_files": ["recording_rules.yaml"], "evaluation_interval": "15s", "tests": out}


HEADER = (
    "# Generated by `python -m observability write` from observability/recording_tests.py: run with promtool test "
    "rules.\n"
)


def render() -> str:
    body: str = yaml.safe_dump(tests(), sort_keys=False, width=120, allow_unicode=True)
    return HEADER + body
