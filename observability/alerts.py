"""Prometheus alert rules for bridge-release clusters, as data; :func:`render` writes ``dashboards/alerts.yaml``.

Every rule is grouped ``by (cluster)`` (the target label the scrape configuration puts on each node, ``up``
included), so one Prometheus watching several clusters raises each cluster's alerts apart and names the cluster
in the alert's labels. Every rule links its runbook (``runbook_url``): a section of ``docs/runbooks.md`` named
after the alert.

Each rule keeps its ``signal``: the expression without its threshold. A healthy cluster gives an alert
expression no series (that is the point of it), so the Prometheus test checks each signal returns series from
live nodes (the metric names and labels are right) and each full expression parses; ``dashboards/alerts_test.yaml``
(promtool) checks the thresholds and ``for:`` durations fire and clear as intended, and that two clusters'
alerts stay apart.

Thresholds follow Confluent's and Strimzi's Kafka rules where they have one (controller count, offline and
under-replicated partitions), with longer ``for:`` where a planned restart legitimately crosses them.
"""

from __future__ import annotations

from dataclasses import dataclass

import yaml

from observability.promql import CLUSTER_LABEL, JOB

GROUP = "bridgekeeper"
#: Where the runbooks are, relative to the repository's root. ``runbook_url`` is this path (plus the alert's
#: anchor) unless a base is given (``python -m observability alerts --runbook-base URL``): the repository
#: has no canonical address, so an absolute link would be a guess; a deployment knows where it keeps its copy.
RUNBOOKS = "docs/runbooks.md"

#: Active controllers per cluster. A cluster whose every node is down has no such series at all; its nodes'
#: ``up`` (0, still labelled with the cluster) stands in as 0, so the alert fires for that cluster by name.
ACTIVE = f"sum by ({CLUSTER_LABEL}) (bridgekeeper_controller_active)"
SCRAPED = f"sum by ({CLUSTER_LABEL}) (up{{{JOB}}})"


@dataclass(frozen=True)
class Alert:
    name: str
    expr: str
    signal: str
    for_: str
    severity: str
    summary: str
    description: str

    @property
    def anchor(self) -> str:
        """The runbook section's anchor: its heading is the alert's name, which Markdown renderers
        (GitHub, GitLab, mkdocs) turn into the lower-cased name."""
        return self.name.lower()

    def runbook_url(self, base: str = "") -> str:
        path = f"{RUNBOOKS}#{self.anchor}"
        return f"{base.rstrip('/')}/{path}" if base else path


ALERTS: tuple[Alert, ...] = (
    Alert(
        "BridgekeeperNoActiveController",
        f"({ACTIVE} or {SCRAPED} * 0) < 1",
        ACTIVE,
        "30s",
        "critical",
        "Cluster {{ $labels.cluster }}: no active controller",
        "No bridgekeeper node has been the active controller for 30s: no leader elections, reassignments or "
        "forwarded admin writes happen. A crashed controller is replaced once its ZooKeeper session expires "
        "(zookeeper.session.timeout.ms); this also fires when every node of the cluster is down.",
    ),
    Alert(
        "BridgekeeperMultipleActiveControllers",
        f"{ACTIVE} > 1",
        ACTIVE,
        "30s",
        "critical",
        "Cluster {{ $labels.cluster }}: {{ $value }} nodes claim to be the active controller",
        "More than one node has said it is the active controller for 30s. ZooKeeper fences the stale one's "
        "writes (controller epoch check), but it may still answer clients.",
    ),
    Alert(
        "BridgekeeperControllerFlapping",
        "sum by (cluster) (increase(bridgekeeper_controller_elections_won_total[15m])) > 3",
        "sum by (cluster) (increase(bridgekeeper_controller_elections_won_total[15m]))",
        "0s",
        "warning",
        "Cluster {{ $labels.cluster }}: the controller is flapping",
        "More than 3 controller elections in 15 minutes. A rolling restart explains one per roll; more means "
        "sessions are expiring or a node is crash-looping.",
    ),
    Alert(
        "BridgekeeperOfflinePartitions",
        "max by (cluster) (bridgekeeper_offline_partitions) > 0",
        "max by (cluster) (bridgekeeper_offline_partitions)",
        "1m",
        "critical",
        "Cluster {{ $labels.cluster }}: {{ $value }} partitions have no live leader",
        "Partitions without a live leader for 1 minute: their producers and consumers are blocked.",
    ),
    Alert(
        "BridgekeeperUnderReplicatedPartitions",
        "max by (cluster) (bridgekeeper_under_replicated_partitions) > 0",
        "max by (cluster) (bridgekeeper_under_replicated_partitions)",
        "10m",
        "warning",
        "Cluster {{ $labels.cluster }}: {{ $value }} partitions are under-replicated",
        "Partitions whose ISR is smaller than their replica set for 10 minutes: longer than a rolling restart "
        "of one broker should take. Do not restart the next broker while this fires.",
    ),
    Alert(
        "BridgekeeperForwardingAuthorizationFailures",
        "sum by (cluster, broker_id) (increase(bridgekeeper_forwarding_authorization_failures_total[5m])) > 0",
        "sum by (cluster, broker_id) (increase(bridgekeeper_forwarding_authorization_failures_total[5m]))",
        "0s",
        "warning",
        "Cluster {{ $labels.cluster }}, broker {{ $labels.broker_id }}: forwarded requests refused "
        "(CLUSTER_AUTHORIZATION_FAILED)",
        "The controller refused Envelopes from this broker: its inter-broker principal lacks ClusterAction on "
        "the cluster. The clients' admin requests failed.",
    ),
    Alert(
        "BridgekeeperForwardingQueueTimeHigh",
        "histogram_quantile(0.99, sum by (cluster, broker_id, le) "
        "(rate(bridgekeeper_forwarding_queue_time_seconds_bucket[5m]))) > 1",
        "histogram_quantile(0.99, sum by (cluster, broker_id, le) "
        "(rate(bridgekeeper_forwarding_queue_time_seconds_bucket[5m])))",
        "5m",
        "warning",
        "Cluster {{ $labels.cluster }}, broker {{ $labels.broker_id }}: forwarded requests wait more than 1s (p99)",
        "Forwarded admin requests have waited more than 1s (p99) on this broker for 5 minutes before being sent to "
        "the controller: the controller answers slower than clients ask.",
    ),
    Alert(
        "BridgekeeperReassignmentStuck",
        "max by (cluster) (bridgekeeper_reassigning_partitions) > 0 "
        "and sum by (cluster) (increase(bridgekeeper_reassignments_completed_total[30m])) == 0",
        "max by (cluster) (bridgekeeper_reassigning_partitions)",
        "30m",
        "warning",
        "Cluster {{ $labels.cluster }}: reassignments in flight, none completed in an hour",
        "Partitions have been reassigning with no reassignment completing for an hour: a target replica is "
        "not catching up (down broker, throttle too low).",
    ),
    Alert(
        "BridgekeeperZooKeeperSessionLost",
        'max by (cluster, broker_id, session) (bridgekeeper_zookeeper_session_state{state="CONNECTED"}) == 0',
        'max by (cluster, broker_id, session) (bridgekeeper_zookeeper_session_state{state="CONNECTED"})',
        "1m",
        "critical",
        "Cluster {{ $labels.cluster }}, node {{ $labels.broker_id }}: ZooKeeper {{ $labels.session }} session not "
        "connected",
        "The node's ZooKeeper session has not been CONNECTED for 1 minute: it cannot register, lead or write "
        "metadata, and its registration (and leadership) is gone once the session expires.",
    ),
    Alert(
        "BridgekeeperNodeDown",
        f"up{{{JOB}}} == 0",
        f"up{{{JOB}}}",
        "1m",
        "warning",
        "Cluster {{ $labels.cluster }}: bridgekeeper node {{ $labels.instance }} cannot be scraped",
        "Prometheus has not reached the node's metrics endpoint for 1 minute: the node is down or unreachable.",
    ),
)


def alert_annotations(alert: Alert, runbook_base: str = "") -> dict[str, str]:
    return {"summary": alert.summary, "description": alert.description, "runbook_url": alert.runbook_url(runbook_base)}


def rules(runbook_base: str = "") -> dict[str, object]:
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
                        "annotations": alert_annotations(a, runbook_base),
                    }
                    for a in ALERTS
                ],
            }
        ]
    }


HEADER = "# Generated by `python -m observability write` from observability/alerts.py: edit that, not this file.\n"


def render(runbook_base: str = "") -> str:
    """The rule file; ``runbook_base`` (a URL where the repository's files are browsed) makes the runbook links
    absolute, for a deployment whose alerts are read away from a checkout (Slack, e-mail, Grafana)."""
    body: str = yaml.safe_dump(rules(runbook_base), sort_keys=False, width=120, allow_unicode=True)
    return HEADER + body
