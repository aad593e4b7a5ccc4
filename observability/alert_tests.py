"""promtool unit tests for the alert rules (``dashboards/alerts_test.yaml``), generated so the expected
annotations are the rules' own text: each case names the series it feeds, when it evaluates, and which alerts
(labels, expanded summary) must be firing then, or none. Cases cover firing, not firing yet (``for:``), clearing
and the healthy shape of each signal, and two clusters behind one Prometheus: one cluster's trouble raises an
alert naming that cluster only, and two healthy clusters (a controller each) raise none."""

from __future__ import annotations

from dataclasses import dataclass

import yaml

from observability.alerts import ALERTS, alert_annotations

BY_NAME = {a.name: a for a in ALERTS}
#: Series of cluster a's broker 1, broker 2; cluster b's broker 1 (broker ids repeat across clusters).
A1, A2, B1 = 'cluster="a", broker_id="1"', 'cluster="a", broker_id="2"', 'cluster="b", broker_id="1"'
UP_A1 = 'up{job="bridgekeeper", cluster="a", instance="bk1:9404"}'
IN_A = {"cluster": "a"}


@dataclass(frozen=True)
class Expect:
    at: str
    alert: str
    firing: tuple[tuple[dict[str, str], str], ...] = ()  # (labels beyond severity, expanded summary)


@dataclass(frozen=True)
class Case:
    name: str
    series: tuple[tuple[str, str], ...]
    expect: tuple[Expect, ...]
    interval: str = "15s"


NO_CONTROLLER = "Cluster a: no active controller"
CASES: tuple[Case, ...] = (
    Case(
        "the controller goes away, then a new one is elected",
        (
            (f"bridgekeeper_controller_active{{{A1}}}", "1x8 0x8 1x8"),
            (f"bridgekeeper_controller_active{{{A2}}}", "0x24"),
        ),
        (
            Expect("1m", "BridgekeeperNoActiveController"),
            Expect("2m30s", "BridgekeeperNoActiveController"),  # 0 since 2m15s: pending, not firing yet
            Expect("3m", "BridgekeeperNoActiveController", ((IN_A, NO_CONTROLLER),)),
            Expect("5m", "BridgekeeperNoActiveController"),
        ),
    ),  # a new controller at 4m15s: cleared
    Case(
        "every node of a cluster is down: its series go stale, its targets stay and read down",
        (
            (f"bridgekeeper_controller_active{{{A1}}}", "1 1 1 1 stale"),
            (UP_A1, "1 1 1 1 0x8"),
        ),
        (
            Expect("45s", "BridgekeeperNoActiveController"),
            Expect("1m30s", "BridgekeeperNoActiveController", ((IN_A, NO_CONTROLLER),)),
        ),
    ),
    Case(
        "two clusters: every node of a is down, b keeps its controller; only a's alert fires, naming a",
        (
            (f"bridgekeeper_controller_active{{{A1}}}", "1 1 1 1 stale"),
            (UP_A1, "1 1 1 1 0x8"),
            (f"bridgekeeper_controller_active{{{B1}}}", "1x12"),
            ('up{job="bridgekeeper", cluster="b", instance="bk1.b:9404"}', "1x12"),
        ),
        (
            Expect("1m30s", "BridgekeeperNoActiveController", ((IN_A, NO_CONTROLLER),)),
            Expect("1m30s", "BridgekeeperNodeDown"),  # for: 1m, down since 1m
            Expect(
                "2m30s",
                "BridgekeeperNodeDown",
                (
                    (
                        {"job": "bridgekeeper", "cluster": "a", "instance": "bk1:9404"},
                        "Cluster a: bridgekeeper node bk1:9404 cannot be scraped",
                    ),
                ),
            ),
        ),
    ),
    Case(
        "two nodes of one cluster claim the controller",
        (
            (f"bridgekeeper_controller_active{{{A1}}}", "1x12"),
            (f"bridgekeeper_controller_active{{{A2}}}", "0x4 1x8"),
        ),
        (
            Expect("1m", "BridgekeeperMultipleActiveControllers"),
            Expect(
                "2m",
                "BridgekeeperMultipleActiveControllers",
                ((IN_A, "Cluster a: 2 nodes claim to be the active controller"),),
            ),
            Expect("2m", "BridgekeeperNoActiveController"),
        ),
    ),
    Case(
        "two healthy clusters, one controller each: neither too many controllers nor none",
        (
            (f"bridgekeeper_controller_active{{{A1}}}", "1x12"),
            (f"bridgekeeper_controller_active{{{A2}}}", "0x12"),
            (f"bridgekeeper_controller_active{{{B1}}}", "1x12"),
        ),
        (
            Expect("2m", "BridgekeeperMultipleActiveControllers"),
            Expect("2m", "BridgekeeperNoActiveController"),
        ),
    ),
    Case(
        "elections: one per planned restart is fine, a burst is flapping",
        (
            (f"bridgekeeper_controller_elections_won_total{{{A1}}}", "1 1 1 1 2 2 2 2 2 2 2 2"),
            (f"bridgekeeper_controller_elections_won_total{{{A2}}}", "0x11"),
        ),
        (Expect("2m", "BridgekeeperControllerFlapping"),),
    ),
    Case(
        "elections in a burst",
        ((f"bridgekeeper_controller_elections_won_total{{{A1}}}", "1+1x12"),),
        (Expect("2m", "BridgekeeperControllerFlapping", ((IN_A, "Cluster a: the controller is flapping"),)),),
    ),
    Case(
        "elections spread over two clusters: each within bounds, together above them",
        (
            (f"bridgekeeper_controller_elections_won_total{{{A1}}}", "0 0 0 0 1 1 1 1 2 2 2 2"),
            (f"bridgekeeper_controller_elections_won_total{{{B1}}}", "0 0 0 0 1 1 1 1 2 2 2 2"),
        ),
        (Expect("2m", "BridgekeeperControllerFlapping"),),
    ),
    Case(
        "offline partitions",
        ((f"bridgekeeper_offline_partitions{{{A1}}}", "0x4 3x8 0x4"),),
        (
            Expect("1m", "BridgekeeperOfflinePartitions"),
            Expect("1m30s", "BridgekeeperOfflinePartitions"),
            Expect("2m30s", "BridgekeeperOfflinePartitions", ((IN_A, "Cluster a: 3 partitions have no live leader"),)),
            Expect("4m", "BridgekeeperOfflinePartitions"),
        ),
    ),
    Case(
        "under-replicated partitions: a restart's dip does not fire, a lasting one does",
        ((f"bridgekeeper_under_replicated_partitions{{{A1}}}", "2x20 0x4 5x50"),),
        (
            Expect("5m", "BridgekeeperUnderReplicatedPartitions"),
            Expect(
                "17m",
                "BridgekeeperUnderReplicatedPartitions",
                ((IN_A, "Cluster a: 5 partitions are under-replicated"),),
            ),
        ),
        interval="15s",
    ),
    Case(
        "forwarding authorization failures",
        (
            (f"bridgekeeper_forwarding_authorization_failures_total{{{A1}}}", "0x8 1+1x8"),
            (f"bridgekeeper_forwarding_authorization_failures_total{{{A2}}}", "0x16"),
        ),
        (
            Expect("1m", "BridgekeeperForwardingAuthorizationFailures"),
            Expect(
                "3m",
                "BridgekeeperForwardingAuthorizationFailures",
                (
                    (
                        {"cluster": "a", "broker_id": "1"},
                        "Cluster a, broker 1: forwarded requests refused (CLUSTER_AUTHORIZATION_FAILED)",
                    ),
                ),
            ),
        ),
    ),
    Case(
        "forwarding queue time: slow on broker 1, fast on broker 2",
        (
            (f'bridgekeeper_forwarding_queue_time_seconds_bucket{{{A1}, le="0.5"}}', "0x60"),
            (f'bridgekeeper_forwarding_queue_time_seconds_bucket{{{A1}, le="1.0"}}', "0x60"),
            (f'bridgekeeper_forwarding_queue_time_seconds_bucket{{{A1}, le="2.5"}}', "0+10x60"),
            (f'bridgekeeper_forwarding_queue_time_seconds_bucket{{{A1}, le="+Inf"}}', "0+10x60"),
            (f'bridgekeeper_forwarding_queue_time_seconds_bucket{{{A2}, le="0.5"}}', "0+10x60"),
            (f'bridgekeeper_forwarding_queue_time_seconds_bucket{{{A2}, le="1.0"}}', "0+10x60"),
            (f'bridgekeeper_forwarding_queue_time_seconds_bucket{{{A2}, le="2.5"}}', "0+10x60"),
            (f'bridgekeeper_forwarding_queue_time_seconds_bucket{{{A2}, le="+Inf"}}', "0+10x60"),
        ),
        (
            Expect("3m", "BridgekeeperForwardingQueueTimeHigh"),
            Expect(
                "12m",
                "BridgekeeperForwardingQueueTimeHigh",
                (
                    (
                        {"cluster": "a", "broker_id": "1"},
                        "Cluster a, broker 1: forwarded requests wait more than 1s (p99)",
                    ),
                ),
            ),
        ),
    ),
    Case(
        "a reassignment with no completion for an hour is stuck",
        (
            (f"bridgekeeper_reassigning_partitions{{{A1}}}", "5x300"),
            (f"bridgekeeper_reassignments_completed_total{{{A1}}}", "0x300"),
        ),
        (
            Expect("20m", "BridgekeeperReassignmentStuck"),
            Expect(
                "65m",
                "BridgekeeperReassignmentStuck",
                ((IN_A, "Cluster a: reassignments in flight, none completed in an hour"),),
            ),
        ),
    ),
    Case(
        "a slow reassignment that keeps completing partitions is not stuck",
        (
            (f"bridgekeeper_reassigning_partitions{{{A1}}}", "5x300"),
            (f"bridgekeeper_reassignments_completed_total{{{A1}}}", "0+1x300"),
        ),
        (Expect("65m", "BridgekeeperReassignmentStuck"),),
    ),
    Case(
        "reassignments stuck in a, completing in b: only a is stuck",
        (
            (f"bridgekeeper_reassigning_partitions{{{A1}}}", "5x300"),
            (f"bridgekeeper_reassignments_completed_total{{{A1}}}", "0x300"),
            (f"bridgekeeper_reassigning_partitions{{{B1}}}", "5x300"),
            (f"bridgekeeper_reassignments_completed_total{{{B1}}}", "0+1x300"),
        ),
        (
            Expect(
                "65m",
                "BridgekeeperReassignmentStuck",
                ((IN_A, "Cluster a: reassignments in flight, none completed in an hour"),),
            ),
        ),
    ),
    Case(
        "a node's ZooKeeper session is lost",
        (
            (f'bridgekeeper_zookeeper_session_state{{{A2}, session="broker", state="CONNECTED"}}', "1x4 0x8 1x4"),
            (f'bridgekeeper_zookeeper_session_state{{{A2}, session="broker", state="LOST"}}', "0x4 1x8 0x4"),
            (f'bridgekeeper_zookeeper_session_state{{{A1}, session="broker", state="CONNECTED"}}', "1x16"),
        ),
        (
            Expect("1m30s", "BridgekeeperZooKeeperSessionLost"),
            Expect(
                "2m30s",
                "BridgekeeperZooKeeperSessionLost",
                (
                    (
                        {"cluster": "a", "broker_id": "2", "session": "broker"},
                        "Cluster a, node 2: ZooKeeper broker session not connected",
                    ),
                ),
            ),
            Expect("4m", "BridgekeeperZooKeeperSessionLost"),
        ),
    ),
    Case(
        "a node cannot be scraped",
        (
            ('up{job="bridgekeeper", cluster="a", instance="bk2:9404"}', "1x4 0x8"),
            (UP_A1, "1x12"),
        ),
        (
            Expect("1m30s", "BridgekeeperNodeDown"),
            Expect(
                "2m30s",
                "BridgekeeperNodeDown",
                (
                    (
                        {"job": "bridgekeeper", "cluster": "a", "instance": "bk2:9404"},
                        "Cluster a: bridgekeeper node bk2:9404 cannot be scraped",
                    ),
                ),
            ),
        ),
    ),
)


def tests() -> dict[str, object]:
    out: list[dict[str, object]] = []
    for case in CASES:
        checks: list[dict[str, object]] = []
        for e in case.expect:
            alert = BY_NAME[e.alert]
            checks.append(
                {
                    "eval_time": e.at,
                    "alertname": e.alert,
                    "exp_alerts": [
                        {
                            "exp_labels": {**labels, "severity": alert.severity},
                            "exp_annotations": {**alert_annotations(alert), "summary": summary},
                        }
                        for labels, summary in e.firing
                    ],
                }
            )
        out.append(
            {
                "name": case.name,
                "interval": case.interval,
                "input_series": [{"series": s, "values": v} for s, v in case.series],
                "alert_rule_test": checks,
            }
        )
    return {"rule_files": ["alerts.yaml"], "evaluation_interval": "15s", "tests": out}


HEADER = (
    "# Generated by `python -m observability write` from observability/alert_tests.py: run with promtool test rules.\n"
)


def render() -> str:
    body: str = yaml.safe_dump(tests(), sort_keys=False, width=120, allow_unicode=True)
    return HEADER + body
