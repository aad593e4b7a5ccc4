"""Prometheus alert rules for a bridge-release cluster, as data; :func:`render` writes ``dashboards/alerts.yaml``.

Each rule keeps its ``signal``: the expression without its threshold. A healthy cluster gives an alert
expression no series (that is the point of it), so the Prometheus test checks each signal returns series from
live nodes (the metric names and labels are right) and each full expression parses; ``dashboards/alerts_test.yaml``
(promtool) checks the thresholds and ``for:`` durations fire and clear as intended.

Thresholds follow Confluent's and Strimzi's Kafka rules where they have one (controller count, offline and
under-replicated partitions), with longer ``for:`` where a planned restart legitimately crosses them.
"""

from __future__ import annotations

from dataclasses import dataclass

import yaml

from observability.promql import JOB

GROUP = "bridgekeeper"


@dataclass(frozen=True)
class Alert:
    name: str
    expr: str
    signal: str
    for_: str
    severity: str
    summary: str
    description: str
    runbook: str


ALERTS: tuple[Alert, ...] = (
    Alert(
        "BridgekeeperNoActiveController",
        "(sum(bridgekeeper_controller_active) or vector(0)) < 1",
        "sum(bridgekeeper_controller_active)",
        "30s",
        "critical",
        "No active controller",
        "No bridgekeeper node has been the active controller for 30s: no leader elections, reassignments or "
        "forwarded admin writes happen. A crashed controller is replaced once its ZooKeeper session expires "
        "(zookeeper.session.timeout.ms).",
        "Check that every node's ZooKeeper session is CONNECTED (ZooKeeper writer dashboard) and read the nodes' "
        "logs for 'resigned' or 'elected'; restart a node whose controller thread is stuck.",
    ),
    Alert(
        "BridgekeeperMultipleActiveControllers",
        "sum(bridgekeeper_controller_active) > 1",
        "sum(bridgekeeper_controller_active)",
        "30s",
        "critical",
        "{{ $value }} nodes claim to be the active controller",
        "More than one node has said it is the active controller for 30s. ZooKeeper fences the stale one's "
        "writes (controller epoch check), but it may still answer clients.",
        "Find the node whose epoch is lower (Cluster dashboard, Active controller by node) and restart it; check "
        "its ZooKeeper connectivity.",
    ),
    Alert(
        "BridgekeeperControllerFlapping",
        "sum(increase(bridgekeeper_controller_elections_won_total[15m])) > 3",
        "sum(increase(bridgekeeper_controller_elections_won_total[15m]))",
        "0s",
        "warning",
        "The controller is flapping",
        "More than 3 controller elections in 15 minutes. A rolling restart explains one per roll; more means "
        "sessions are expiring or a node is crash-looping.",
        "Compare elections with planned restarts; check ZooKeeper session expirations and node restarts "
        "(ZooKeeper writer dashboard) and the GC/CPU of the nodes.",
    ),
    Alert(
        "BridgekeeperOfflinePartitions",
        "max(bridgekeeper_offline_partitions) > 0",
        "max(bridgekeeper_offline_partitions)",
        "1m",
        "critical",
        "{{ $value }} partitions have no live leader",
        "Partitions without a live leader for 1 minute: their producers and consumers are blocked.",
        "List them with kafka-topics --describe --unavailable-partitions; bring back a broker of their replica "
        "set, or (accepting data loss) enable unclean leader election for the topic.",
    ),
    Alert(
        "BridgekeeperUnderReplicatedPartitions",
        "max(bridgekeeper_under_replicated_partitions) > 0",
        "max(bridgekeeper_under_replicated_partitions)",
        "10m",
        "warning",
        "{{ $value }} partitions are under-replicated",
        "Partitions whose ISR is smaller than their replica set for 10 minutes: longer than a rolling restart "
        "of one broker should take. Do not restart the next broker while this fires.",
        "kafka-topics --describe --under-replicated-partitions; check the lagging broker is up and registered, "
        "and that replication throttles are not starving it (Reassignments dashboard).",
    ),
    Alert(
        "BridgekeeperForwardingAuthorizationFailures",
        "sum by (broker_id) (increase(bridgekeeper_forwarding_authorization_failures_total[5m])) > 0",
        "sum by (broker_id) (increase(bridgekeeper_forwarding_authorization_failures_total[5m]))",
        "0s",
        "warning",
        "Broker {{ $labels.broker_id }}: forwarded requests refused (CLUSTER_AUTHORIZATION_FAILED)",
        "The controller refused Envelopes from this broker: its inter-broker principal lacks ClusterAction on "
        "the cluster. The clients' admin requests failed.",
        "Grant the broker principal ClusterAction (kafka-acls --add --allow-principal User:<broker> --operation "
        "ClusterAction --cluster) or add it to super.users.",
    ),
    Alert(
        "BridgekeeperForwardingQueueTimeHigh",
        "histogram_quantile(0.99, sum by (broker_id, le) "
        "(rate(bridgekeeper_forwarding_queue_time_seconds_bucket[5m]))) > 1",
        "histogram_quantile(0.99, sum by (broker_id, le) "
        "(rate(bridgekeeper_forwarding_queue_time_seconds_bucket[5m])))",
        "5m",
        "warning",
        "Broker {{ $labels.broker_id }}: forwarded requests wait more than 1s (p99)",
        "Forwarded admin requests have waited more than 1s (p99) on this broker for 5 minutes before being sent to "
        "the controller: the controller answers slower than clients ask.",
        "Look at the controller's event queue and waiting requests (Cluster and Forwarding dashboards) and "
        "ZooKeeper write latency; slow down the admin client load (batch topic creations).",
    ),
    Alert(
        "BridgekeeperReassignmentStuck",
        "max(bridgekeeper_reassigning_partitions) > 0 "
        "and sum(increase(bridgekeeper_reassignments_completed_total[30m])) == 0",
        "max(bridgekeeper_reassigning_partitions)",
        "30m",
        "warning",
        "Reassignments in flight, none completed in an hour",
        "Partitions have been reassigning with no reassignment completing for an hour: a target replica is "
        "not catching up (down broker, throttle too low).",
        "bridgekeeper reassign --verify (or kafka-reassign-partitions --verify) names the partitions; check the "
        "target brokers are up and the throttles (Reassignments dashboard); cancel with --cancel if needed.",
    ),
    Alert(
        "BridgekeeperZooKeeperSessionLost",
        'max by (broker_id, session) (bridgekeeper_zookeeper_session_state{state="CONNECTED"}) == 0',
        'max by (broker_id, session) (bridgekeeper_zookeeper_session_state{state="CONNECTED"})',
        "1m",
        "critical",
        "Node {{ $labels.broker_id }}: ZooKeeper {{ $labels.session }} session not connected",
        "The node's ZooKeeper session has not been CONNECTED for 1 minute: it cannot register, lead or write "
        "metadata, and its registration (and leadership) is gone once the session expires.",
        "Check the ensemble's health (zkServer.sh status on each server), the network between node and "
        "ZooKeeper, and zookeeper.connect / digest credentials in the node's configuration.",
    ),
    Alert(
        "BridgekeeperNodeDown",
        f"up{{{JOB}}} == 0",
        f"up{{{JOB}}}",
        "1m",
        "warning",
        "bridgekeeper node {{ $labels.instance }} cannot be scraped",
        "Prometheus has not reached the node's metrics endpoint for 1 minute: the node is down or unreachable.",
        "Check the node's process and logs; in a planned roll, wait for it to come back before the next restart.",
    ),
)


def rules() -> dict[str, object]:
    """The rule file's content, in Prometheus's rule-file schema."""
    return {
        "groups": [
            {
                "name": GROUP,
                "rules": [
                    {
                        "alert": a.name,
                        "expr": a.expr,
                        **({"for": a.for_} if a.for_ != "0s" else {}),
                        "labels": {"severity": a.severity},
                        "annotations": {"summary": a.summary, "description": a.description, "runbook": a.runbook},
                    }
                    for a in ALERTS
                ],
            }
        ]
    }


HEADER = "# Generated by `python -m observability write` from observability/alerts.py: edit that, not this file.\n"


def render() -> str:
    body: str = yaml.safe_dump(rules(), sort_keys=False, width=120, allow_unicode=True)
    return HEADER + body
