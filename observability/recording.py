"""Recording rules that give bridgekeeper's figures the names Kafka's own metrics have on the dashboards operators
already run; :func:`render` writes ``dashboards/recording_rules.yaml``.

The names are what Strimzi's jmx_exporter configuration makes of Kafka's MBeans (strimzi/strimzi-kafka-operator
0.45.2, the last release with ZooKeeper, ``packaging/examples/metrics/kafka-metrics.yaml``; lowercased):

- a gauge's ``Value`` → ``kafka_<domain>_<type>_<name>``
  (``kafka.controller:type=KafkaController,name=ActiveControllerCount`` →
  ``kafka_controller_kafkacontroller_activecontrollercount``);
- a meter's ``Count`` (``…PerSec``) → ``kafka_<domain>_<type>_<name without PerSec>_total``;
- a timer's or histogram's ``Count`` → ``…_count``, its ``<N>thPercentile`` attributes → the bare name with
  ``quantile="0.<N>"`` (``0.50`` … ``0.999``), in Kafka's unit (milliseconds), no ``_sum``;
- ``socket-server-metrics`` attributes → ``kafka_server_socket_server_metrics_<attribute>`` by listener.

Only what bridgekeeper measures gets a rule: no min-ISR state (``…underminisr…``, ``…atminisr…``), no
unclean-election count; data-plane metrics (bytes, messages, log sizes) have no
counterpart in a control plane. ``docs/observability.md`` lists the mapping and the gaps.

Strimzi's dashboards select a cluster by labels its PodMonitor adds from Kubernetes: ``namespace``,
``strimzi_io_cluster``, ``strimzi_io_name`` (``<cluster>-kafka``) and ``kubernetes_pod_name``
(``<cluster>-kafka-<n>``, the broker variable being what follows ``<cluster>-``). Every rule adds them from the
``cluster`` target label and ``broker_id``; a ``namespace`` the scrape configuration set (nodes on Kubernetes) is
kept, otherwise it is :data:`NAMESPACE`. The node's own labels (``cluster``, ``broker_id``, ``instance``, ``job``)
stay, so the same series serve bridgekeeper's dashboards and alerts.

The recorded names deliberately break Prometheus's ``level:metric:operations`` convention for recording rules:
the point is that dashboards written for Kafka find them.
"""

from __future__ import annotations

from dataclasses import dataclass

import yaml

from observability.promql import CLUSTER_LABEL

GROUP = "bridgekeeper-kafka-names"
#: The ``namespace`` label of a cluster the scrape configuration did not place in one: Strimzi's dashboard
#: lists namespaces first, and bridgekeeper's clusters are found under this one.
NAMESPACE = "bridgekeeper"
#: Strimzi's rules turn ``<N>thPercentile`` into ``quantile="0.<N>"``; Kafka's histograms have these six.
QUANTILES = ("0.50", "0.75", "0.95", "0.98", "0.99", "0.999")
#: Kafka's Yammer histograms (exponentially decaying reservoirs) weigh about the last five minutes.
WINDOW = "5m"

#: Kafka's ControllerState whose ControllerStats timer keeps the old name LeaderElectionRateAndTimeMs
#: (kafka.controller.ControllerState.BrokerChange): broker failures and returns, and the elections they cause.
LEADER_ELECTION_STATE = "BrokerChange"


def _indent(text: str, spaces: int) -> str:
    return "\n".join(" " * spaces + line for line in text.splitlines())


def strimzi_labels(expr: str) -> str:
    """``expr`` with the labels Strimzi's dashboards filter on, derived from ``cluster`` and ``broker_id`` (laid
    out one function per line, so the rule file reads as it is built)."""
    return "\n".join(
        (
            "label_join(",
            "  label_replace(",
            "    label_replace(",
            "      label_replace(",
            _indent(expr, 8) + ",",
            f'        "namespace", "{NAMESPACE}", "namespace", ""),',
            f'      "strimzi_io_cluster", "$1", "{CLUSTER_LABEL}", "(.*)"),',
            f'    "strimzi_io_name", "$1-kafka", "{CLUSTER_LABEL}", "(.+)"),',
            '  "kubernetes_pod_name", "-", "strimzi_io_name", "broker_id")',
        )
    )


def quantiles_ms(histogram: str, selector: str = "", without: str = "") -> str:
    """The :data:`QUANTILES` of a Prometheus histogram in milliseconds, each labelled ``quantile``, summed
    ``without`` a label of ours Kafka's metric does not have. A histogram that observed nothing in the window
    gives no series (rather than NaN)."""
    buckets = f"rate({histogram}_bucket{selector}[{WINDOW}])"
    summed = f"sum without ({without}) ({buckets})" if without else buckets
    parts = [
        f'label_replace(\n  histogram_quantile({q}, {summed}) * 1000 >= 0,\n  "quantile", "{q}", "quantile", ".*")'
        for q in QUANTILES
    ]
    return "\nor\n".join(parts)


def rename(expr: str, **labels: str) -> str:
    """``expr`` with each label ``old`` renamed to ``labels[old]`` (jmx_exporter keeps Kafka's camelCase tags)."""
    for old, new in labels.items():
        expr = f'label_replace({expr}, "{new}", "$1", "{old}", "(.*)")'
        expr = f'label_replace({expr}, "{old}", "", "{old}", ".*")'  # an empty value removes the label
    return expr


def count(histogram: str, selector: str = "", without: str = "") -> str:
    series = f"{histogram}_count{selector}"
    return f"sum without ({without}) ({series})" if without else series


@dataclass(frozen=True)
class Recording:
    """One recorded name: ``expr`` over bridgekeeper's series (before :func:`strimzi_labels`), the Kafka MBean
    it stands for, and how bridgekeeper's figure differs from Kafka's, if it does."""

    record: str
    expr: str
    mbean: str
    note: str = ""


def _timer(name: str, histogram: str, mbean: str, note: str, selector: str = "", without: str = "") -> list[Recording]:
    return [
        Recording(name, quantiles_ms(histogram, selector, without), f"{mbean} (<N>thPercentile, ms)", note),
        Recording(f"{name}_count", count(histogram, selector, without), f"{mbean} (Count)", note),
    ]


CONTROLLER_VIEW = (
    "Kafka counts on each broker the partitions it leads; bridgekeeper's figure is the cluster's, on the active "
    "controller's series (0 on the others): the sum over brokers, which dashboards and alerts use, agrees."
)
SESSION = 'session="broker"'

RECORDINGS: tuple[Recording, ...] = (
    Recording(
        "kafka_controller_kafkacontroller_activecontrollercount",
        "bridgekeeper_controller_active",
        "kafka.controller:type=KafkaController,name=ActiveControllerCount",
    ),
    Recording(
        "kafka_controller_kafkacontroller_offlinepartitionscount",
        "bridgekeeper_offline_partitions",
        "kafka.controller:type=KafkaController,name=OfflinePartitionsCount",
    ),
    Recording(
        "kafka_controller_kafkacontroller_globaltopiccount",
        "bridgekeeper_topics",
        "kafka.controller:type=KafkaController,name=GlobalTopicCount",
    ),
    Recording(
        "kafka_controller_kafkacontroller_globalpartitioncount",
        "bridgekeeper_partitions",
        "kafka.controller:type=KafkaController,name=GlobalPartitionCount",
    ),
    Recording(
        "kafka_server_replicamanager_underreplicatedpartitions",
        "bridgekeeper_under_replicated_partitions",
        "kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions",
        CONTROLLER_VIEW,
    ),
    Recording(
        "kafka_server_replicamanager_leadercount",
        "bridgekeeper_leader_partitions",
        "kafka.server:type=ReplicaManager,name=LeaderCount",
        "Broker nodes only (a controller-only node has no series), so counting the series counts brokers.",
    ),
    Recording(
        "kafka_server_replicamanager_partitioncount",
        "bridgekeeper_replica_partitions",
        "kafka.server:type=ReplicaManager,name=PartitionCount",
        "Every replica in the assignment, a reassignment's adding and removing ones included, as Kafka's "
        "controller sends LeaderAndIsr to all of them.",
    ),
    Recording(
        "kafka_server_replicamanager_reassigningpartitions",
        "bridgekeeper_reassigning_partitions",
        "kafka.server:type=ReplicaManager,name=ReassigningPartitions",
        CONTROLLER_VIEW,
    ),
    *_timer(
        "kafka_controller_controllerstats_leaderelectionrateandtimems",
        "bridgekeeper_controller_event_duration_seconds",
        "kafka.controller:type=ControllerStats,name=LeaderElectionRateAndTimeMs",
        "The controller's BrokerChange events (Kafka keeps this old name for that state's timer).",
        selector=f'{{state="{LEADER_ELECTION_STATE}"}}',
        without="state",
    ),
    Recording(
        "kafka_controller_controllereventmanager_eventqueuesize",
        "bridgekeeper_controller_event_queue_size",
        "kafka.controller:type=ControllerEventManager,name=EventQueueSize",
    ),
    *_timer(
        "kafka_controller_controllereventmanager_eventqueuetimems",
        "bridgekeeper_controller_event_queue_time_seconds",
        "kafka.controller:type=ControllerEventManager,name=EventQueueTimeMs",
        "",
        without="state",
    ),
    *(
        Recording(
            f"kafka_server_sessionexpirelistener_zookeeper{kafka}_total",
            f'sum without (session, event) (bridgekeeper_zookeeper_session_events_total{{{SESSION}, event="{ours}"}})',
            f"kafka.server:type=SessionExpireListener,name=ZooKeeper{meter}PerSec",
            "The broker's session (a controller with its own ZooKeeper identity has a second one, not counted "
            "here: Kafka's controller shares the broker's).",
        )
        for kafka, meter, ours in (
            ("syncconnects", "SyncConnects", "connect"),
            ("disconnects", "Disconnects", "disconnect"),
            ("expires", "Expires", "expire"),
        )
    ),
    Recording(
        "kafka_server_sessionexpirelistener_sessionstate",
        "label_replace(label_replace("
        f"sum without (session) (bridgekeeper_zookeeper_session_state{{{SESSION}}} == 1), "
        '"state", "CONNECTING", "state", "SUSPENDED"), "state", "CLOSED", "state", "LOST")',
        "kafka.server:type=SessionExpireListener,name=SessionState",
        "Kafka's gauge is a string (ZooKeeper's client state), which Strimzi's rules drop; this is what a rule "
        "with `value: 1` and the state as a label (as Strimzi's raft current-state rule) would give: 1 for the "
        "current state, labelled `state` with ZooKeeper's name for it (kazoo's SUSPENDED is CONNECTING, LOST is "
        "CLOSED).",
    ),
    *_timer(
        "kafka_server_zookeeperclientmetrics_zookeeperrequestlatencyms",
        "bridgekeeper_zookeeper_write_duration_seconds",
        "kafka.server:type=ZooKeeperClientMetrics,name=ZooKeeperRequestLatencyMs",
        "Writes only (retries included): bridgekeeper does not time its ZooKeeper reads.",
        without="kind",
    ),
    Recording(
        "kafka_server_socket_server_metrics_connection_count",
        "sum without (client_software_name, client_software_version) (bridgekeeper_connections)",
        "kafka.server:type=socket-server-metrics,listener=<L>,networkProcessor=<N> (connection-count)",
        "Per listener; there are no network processors, so no networkProcessor label.",
    ),
    Recording(
        "kafka_server_socket_server_metrics_connections_software",
        rename(
            "bridgekeeper_connections",
            client_software_name="clientSoftwareName",
            client_software_version="clientSoftwareVersion",
        ),
        "kafka.server:type=socket-server-metrics,clientSoftwareName=<S>,clientSoftwareVersion=<V>,listener=<L>,"
        "networkProcessor=<N> (connections)",
        "KIP-511's connections by client software, per listener (no networkProcessor label).",
    ),
)


def rules() -> dict[str, object]:
    """The rule file's content, in Prometheus's rule-file schema."""
    return {
        "groups": [{"name": GROUP, "rules": [{"record": r.record, "expr": strimzi_labels(r.expr)} for r in RECORDINGS]}]
    }


HEADER = (
    "# Generated by `python -m observability write` from observability/recording.py: edit that, not this file.\n"
    "# bridgekeeper's figures under the names Strimzi's jmx_exporter rules give Kafka's metrics, with the labels\n"
    "# Strimzi's dashboards filter on (docs/observability.md, 'Kafka's metric names').\n"
)


class _Dumper(yaml.SafeDumper):
    """Multi-line strings (the expressions) as literal blocks."""


_Dumper.add_representer(
    str,
    lambda dumper, text: dumper.represent_scalar("tag:yaml.org,2002:str", text, style="|" if "\n" in text else None),
)


def render() -> str:
    body: str = yaml.dump(rules(), Dumper=_Dumper, sort_keys=False, width=120, allow_unicode=True)
    return HEADER + body
