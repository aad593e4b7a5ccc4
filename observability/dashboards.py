"""The four dashboards an operator keeps open during a bridge upgrade, as data: one table of panels a board,
which is why this module is long (:mod:`observability.grafana` turns them into Grafana dashboard JSON).

Each panel (:class:`~observability.grafana.Panel`) is declared with its title, what a bad value means (the panel
description), unit and queries.
"""

from __future__ import annotations

from collections.abc import Sequence

from observability.grafana import BAD, GOOD, WARN, Board, Panel, Query, Row, q, render
from observability.promql import JOB, quantile, rate, sel, whole

# -- (a) cluster and controller ---------------------------------------------------------------------------------------
CLUSTER = Board(
    "bridgekeeper-cluster",
    "bridgekeeper / Cluster and controller",
    "Is there exactly one controller, is it stable, and are all partitions led and in sync?",
    (
        Row(
            "Health",
            (
                Panel(
                    "stat",
                    "Active controllers",
                    "Nodes that say they are the active controller. Must be exactly "
                    "1: 0 means no controller (no leader elections, admin writes time out), more than 1 means a "
                    "node has not noticed it lost the election (its writes are fenced, but investigate).",
                    "none",
                    q(f"sum({whole('bridgekeeper_controller_active')})"),
                    width=4,
                    thresholds=((1, GOOD), (2, BAD)),
                    base=BAD,
                ),
                Panel(
                    "stat",
                    "Controller epoch",
                    "The active controller's epoch (/controller_epoch). It rises by "
                    "one with every election; a value that keeps rising means the controller is flapping.",
                    "none",
                    q(f"max({whole('bridgekeeper_controller_epoch')})"),
                    width=4,
                ),
                Panel(
                    "stat",
                    "Brokers up",
                    "Registered brokers the active controller sees (/brokers/ids). Fewer "
                    "than the cluster's size means a broker is down or lost its ZooKeeper session.",
                    "none",
                    q(f"max({whole('bridgekeeper_live_brokers')})"),
                    width=4,
                ),
                Panel(
                    "stat",
                    "Nodes scraped",
                    "bridgekeeper nodes Prometheus can scrape. A node below the count you run is down or unreachable.",
                    "none",
                    q(f"sum({whole('up', JOB)})"),
                    width=4,
                ),
                Panel(
                    "stat",
                    "Offline partitions",
                    "Partitions without a live leader: producers and consumers of "
                    "them are blocked. Anything above 0 is an outage (OfflinePartitionsCount).",
                    "none",
                    q(f"max({whole('bridgekeeper_offline_partitions')})"),
                    width=4,
                    thresholds=((1, BAD),),
                ),
                Panel(
                    "stat",
                    "Under-replicated partitions",
                    "Partitions whose ISR is smaller than their replica "
                    "set. Expected briefly while a broker restarts in a roll; if it stays above 0, a replica is "
                    "not catching up.",
                    "none",
                    q(f"max({whole('bridgekeeper_under_replicated_partitions')})"),
                    width=4,
                    thresholds=((1, WARN),),
                ),
            ),
        ),
        Row(
            "Controller",
            (
                Panel(
                    "timeseries",
                    "Active controller by node",
                    "1 on the node that is the active controller. "
                    "During a roll it should move once per controller restart, never to two nodes at once.",
                    "none",
                    q(f"max by (broker_id) ({sel('bridgekeeper_controller_active')})", "broker {{broker_id}}"),
                    min=0,
                    max=1,
                ),
                Panel(
                    "timeseries",
                    "Controller epoch changes",
                    "Elections in the last 15 minutes. Each planned "
                    "restart of the active controller explains one; more than that means the controller is "
                    "flapping (ZooKeeper session trouble, a crash loop).",
                    "none",
                    q(f"sum(increase({whole('bridgekeeper_controller_elections_won_total')}[15m]))", "elections"),
                    min=0,
                ),
                Panel(
                    "timeseries",
                    "Failover duration",
                    "How long the last failover took on each node that won an "
                    "election: reading and decoding the cluster's metadata before it serves. Grows with the "
                    "partition count; a jump at the same size means ZooKeeper is slow.",
                    "s",
                    q(
                        f"max by (broker_id) ({sel('bridgekeeper_controller_failover_seconds')})",
                        "broker {{broker_id}}",
                    ),
                    min=0,
                ),
                Panel(
                    "timeseries",
                    "Partitions: offline, under-replicated, reassigning",
                    "The controller's "
                    "partition health over time. Offline must stay 0; under-replicated should return to 0 after "
                    "each restart; reassigning falls to 0 when moves finish.",
                    "none",
                    (
                        Query(f"max({whole('bridgekeeper_offline_partitions')})", "offline"),
                        Query(f"max({whole('bridgekeeper_under_replicated_partitions')})", "under-replicated"),
                        Query(f"max({whole('bridgekeeper_reassigning_partitions')})", "reassigning"),
                    ),
                    min=0,
                ),
                Panel(
                    "timeseries",
                    "Topics and partitions",
                    "Topics and partitions the active controller knows "
                    "(GlobalTopicCount, GlobalPartitionCount). A sudden drop means topics were deleted.",
                    "none",
                    (
                        Query(f"max({whole('bridgekeeper_topics')})", "topics"),
                        Query(f"max({whole('bridgekeeper_partitions')})", "partitions"),
                    ),
                    min=0,
                ),
                Panel(
                    "timeseries",
                    "Controller event queue size",
                    "Events waiting for the controller thread "
                    "(EventQueueSize). A queue that keeps growing means the controller cannot keep up: requests "
                    "that need it will time out.",
                    "none",
                    q(
                        f"max by (broker_id) ({sel('bridgekeeper_controller_event_queue_size')})",
                        "broker {{broker_id}}",
                    ),
                    min=0,
                ),
                Panel(
                    "timeseries",
                    "Event queue time p99 by controller state",
                    "How long events waited before the "
                    "controller took them, by Kafka ControllerState (EventQueueTimeMs). Seconds here delay "
                    "leader elections and admin requests alike.",
                    "s",
                    q(quantile(0.99, "bridgekeeper_controller_event_queue_time_seconds", by="state"), "{{state}}"),
                    width=12,
                    min=0,
                ),
                Panel(
                    "timeseries",
                    "Event processing time p99 by controller state",
                    "How long the controller "
                    "spent on each kind of event (ControllerStats <State>RateAndTimeMs). A slow state points at "
                    "the work (and the ZooKeeper writes) behind it.",
                    "s",
                    q(quantile(0.99, "bridgekeeper_controller_event_duration_seconds", by="state"), "{{state}}"),
                    width=12,
                    min=0,
                ),
            ),
        ),
        Row(
            "Requests",
            (
                Panel(
                    "timeseries",
                    "Requests by API",
                    "Requests every node answered, per Kafka API "
                    "(RequestsPerSec). The shape of the client load; admin APIs are the ones forwarding moves.",
                    "reqps",
                    q(rate("bridgekeeper_requests_total", by="api"), "{{api}}"),
                    width=12,
                    min=0,
                ),
                Panel(
                    "timeseries",
                    "Errors by API and error code",
                    "Error codes in responses (ErrorsPerSec). "
                    "NOT_CONTROLLER and REQUEST_TIMED_OUT around a controller restart are expected and retried by "
                    "clients; anything persistent, or authorization errors, is not.",
                    "reqps",
                    q(rate("bridgekeeper_request_errors_total", by="api, error"), "{{api}} {{error}}"),
                    width=12,
                    min=0,
                ),
            ),
        ),
    ),
)

# -- (b) forwarding ----------------------------------------------------------------------------------------------------
ADMIN = "bridgekeeper_admin_requests_total"
THROUGH_CONTROLLER = 'route=~"forwarded|controller"'
FORWARDING = Board(
    "bridgekeeper-forwarding",
    "bridgekeeper / Forwarding (KIP-590)",
    "Are admin writes reaching ZooKeeper through the controller, and how long do clients wait for it?",
    (
        Row(
            "Bridge progress",
            (
                Panel(
                    "gauge",
                    "Bridge progress",
                    "Share of forwardable admin writes (the last hour) that reached "
                    "ZooKeeper through the active controller, forwarded or handled by it, rather than written by "
                    "a broker itself. It reaches 100% once every broker's IBP is past the forwarding gate; below "
                    "that after the IBP bump, some broker still writes ZooKeeper directly.",
                    "percentunit",
                    q(f"sum(increase({whole(ADMIN, THROUGH_CONTROLLER)}[1h])) / sum(increase({whole(ADMIN)}[1h]))"),
                    thresholds=((0.5, WARN), (1, GOOD)),
                    base=BAD,
                    min=0,
                    max=1,
                ),
                Panel(
                    "stat",
                    "Brokers forwarding",
                    "Nodes whose inter.broker.protocol.version is at or above the "
                    "forwarding gate, out of all nodes scraped. Rises during the second (IBP) roll.",
                    "none",
                    (
                        Query(f"sum({whole('bridgekeeper_forwarding_enabled')})", "forwarding"),
                        Query(f"count({whole('bridgekeeper_forwarding_enabled')})", "nodes"),
                    ),
                ),
                Panel(
                    "timeseries",
                    "Admin writes by route",
                    "Forwardable admin requests per second by route: "
                    "forwarded (an Envelope to the controller), controller (this node was the controller), "
                    "direct (a broker wrote ZooKeeper itself). Direct must fall to 0 after the IBP bump.",
                    "reqps",
                    q(rate(ADMIN, by="route"), "{{route}}"),
                    min=0,
                ),
            ),
        ),
        Row(
            "Forwarded requests",
            (
                Panel(
                    "timeseries",
                    "Forwarded requests by API and broker",
                    "Client requests each broker forwarded "
                    "to the controller in an Envelope, per API (KIP-590 num-client-forwarding-to-controller-rate).",
                    "reqps",
                    q(rate(ADMIN, 'route="forwarded"', by="broker_id, api"), "{{broker_id}} {{api}}"),
                    min=0,
                ),
                Panel(
                    "timeseries",
                    "Envelopes and retries",
                    "Envelopes sent (retries included) and why requests "
                    "were tried again. Retries for no_controller or not_controller during a controller restart "
                    "are expected; unreachable or connection_lost outside one means the inter-broker path is "
                    "broken.",
                    "reqps",
                    (
                        Query(rate("bridgekeeper_forwarding_envelopes_sent_total"), "envelopes"),
                        Query(rate("bridgekeeper_forwarding_retries_total", by="reason"), "retry: {{reason}}"),
                    ),
                    min=0,
                ),
                Panel(
                    "timeseries",
                    "Forwarding authorization failures",
                    "Envelopes the controller refused with "
                    "CLUSTER_AUTHORIZATION_FAILED: the broker's principal lacks ClusterAction on the cluster. "
                    "Any value is a misconfiguration; those client requests failed.",
                    "short",
                    q(
                        f"sum by (broker_id) (increase({sel('bridgekeeper_forwarding_authorization_failures_total')}"
                        "[$__rate_interval]))",
                        "broker {{broker_id}}",
                    ),
                    min=0,
                ),
            ),
        ),
        Row(
            "Waiting on the controller",
            (
                Panel(
                    "timeseries",
                    "Clients waiting on the controller",
                    "Client requests queued on or running in "
                    "the active controller (forwarded ones included). A rising line means the controller is the "
                    "bottleneck; requests waiting longer than request.timeout.ms fail.",
                    "none",
                    q(
                        f"sum by (broker_id) ({sel('bridgekeeper_controller_waiting_requests')})",
                        "controller {{broker_id}}",
                    ),
                    min=0,
                ),
                Panel(
                    "timeseries",
                    "Forwarding queue length",
                    "Forwarded requests waiting or in flight on each "
                    "broker (ForwardingManager QueueLength). One is in flight at a time per broker; a queue "
                    "that grows means the controller answers slower than clients ask.",
                    "none",
                    q(f"sum by (broker_id) ({sel('bridgekeeper_forwarding_queue_length')})", "broker {{broker_id}}"),
                    min=0,
                ),
                Panel(
                    "timeseries",
                    "Forwarding queue and remote time",
                    "p50 and p99 of the time a forwarded "
                    "request waited on the broker (QueueTimeMs) and then at the controller (RemoteTimeMs). Queue "
                    "time high with remote time low: the broker's single channel is the bottleneck.",
                    "s",
                    (
                        Query(quantile(0.5, "bridgekeeper_forwarding_queue_time_seconds"), "queue p50"),
                        Query(quantile(0.99, "bridgekeeper_forwarding_queue_time_seconds"), "queue p99"),
                        Query(quantile(0.5, "bridgekeeper_forwarding_remote_time_seconds"), "remote p50"),
                        Query(quantile(0.99, "bridgekeeper_forwarding_remote_time_seconds"), "remote p99"),
                    ),
                    min=0,
                ),
                Panel(
                    "timeseries",
                    "Connections by client software",
                    "Open client connections by the software "
                    "they announced (KIP-511). Shows which clients and versions are live through the upgrade.",
                    "none",
                    q(
                        f"sum by (client_software_name, client_software_version) ({sel('bridgekeeper_connections')})",
                        "{{client_software_name}} {{client_software_version}}",
                    ),
                    width=24,
                    min=0,
                ),
            ),
        ),
    ),
)

# -- (c) reassignments -------------------------------------------------------------------------------------------------
REASSIGNMENTS = Board(
    "bridgekeeper-reassignments",
    "bridgekeeper / Reassignments",
    "Which partitions are moving, how fast, and under which throttles?",
    (
        Row(
            "In flight",
            (
                Panel(
                    "stat",
                    "Partitions reassigning",
                    "Partitions with a reassignment in flight. It should fall "
                    "to 0; one that stays means a target replica is not catching up.",
                    "none",
                    q(f"max({whole('bridgekeeper_reassigning_partitions')})"),
                    width=6,
                ),
                Panel(
                    "stat",
                    "Replicas being added",
                    "Replicas being added by in-flight reassignments (AR): data still being copied.",
                    "none",
                    q(f"max({whole('bridgekeeper_reassignment_adding_replicas')})"),
                    width=6,
                ),
                Panel(
                    "stat",
                    "Replicas being removed",
                    "Replicas in-flight reassignments will remove (RR) once the new ones are in sync.",
                    "none",
                    q(f"max({whole('bridgekeeper_reassignment_removing_replicas')})"),
                    width=6,
                ),
                Panel(
                    "stat",
                    "Completed (last hour)",
                    "Partition moves the controller completed in the last hour.",
                    "none",
                    q(f"sum(increase({whole('bridgekeeper_reassignments_completed_total')}[1h]))"),
                    width=6,
                ),
                Panel(
                    "timeseries",
                    "In-flight reassignments",
                    "Reassigning partitions and the replicas they add "
                    "and remove over time. A flat non-zero line is a stuck reassignment.",
                    "none",
                    (
                        Query(f"max({whole('bridgekeeper_reassigning_partitions')})", "partitions"),
                        Query(f"max({whole('bridgekeeper_reassignment_adding_replicas')})", "adding replicas"),
                        Query(f"max({whole('bridgekeeper_reassignment_removing_replicas')})", "removing replicas"),
                    ),
                    width=12,
                    min=0,
                ),
                Panel(
                    "timeseries",
                    "Completion rate",
                    "Partition moves completed per second. Zero while partitions "
                    "are reassigning means nothing is finishing: check the throttles and the lagging replicas.",
                    "ops",
                    q(rate("bridgekeeper_reassignments_completed_total"), "completed"),
                    width=12,
                    min=0,
                ),
            ),
        ),
        Row(
            "Catch-up and throttles",
            (
                Panel(
                    "timeseries",
                    "Replicas catching up by leader",
                    "Followers of partitions each broker leads "
                    "that are not yet in the ISR: the copying a reassignment (or a restart) waits for.",
                    "none",
                    q(f"max by (broker_id) ({sel('bridgekeeper_replicas_catching_up')})", "leader {{broker_id}}"),
                    min=0,
                ),
                Panel(
                    "timeseries",
                    "Throttled replicas",
                    "Catching-up replicas slowed by a replication throttle "
                    "(leader.|follower.replication.throttled.replicas). Throttles left in place after a "
                    "reassignment slow later recovery: remove them with --verify.",
                    "none",
                    q(
                        f"max by (broker_id, direction) ({sel('bridgekeeper_replication_throttled_replicas')})",
                        "{{broker_id}} {{direction}}",
                    ),
                    min=0,
                ),
                Panel(
                    "timeseries",
                    "Replication throttle in force",
                    "Each broker's replication throttle rate "
                    "while replicas catch up (leader.|follower.replication.throttled.rate; 0 = none). Too low and "
                    "moves never finish; too high and they crowd out client traffic.",
                    "Bps",
                    q(
                        f"max by (broker_id, direction) ({sel('bridgekeeper_replication_throttle_rate_bytes')})",
                        "{{broker_id}} {{direction}}",
                    ),
                    min=0,
                ),
                Panel(
                    "timeseries",
                    "Reassignment requests",
                    "AlterPartitionReassignments and "
                    "ListPartitionReassignments requests per second (bridgekeeper reassign, Kafka's tool, "
                    "Cruise Control).",
                    "reqps",
                    q(
                        rate(
                            "bridgekeeper_requests_total",
                            'api=~"AlterPartitionReassignments|ListPartitionReassignments"',
                            by="api",
                        ),
                        "{{api}}",
                    ),
                    width=24,
                    min=0,
                ),
            ),
        ),
    ),
)

# -- (d) ZooKeeper writer ---------------------------------------------------------------------------------------------
ZK_WRITES = "bridgekeeper_zookeeper_writes_total"
CONNECTED = 'state="CONNECTED"'
ZOOKEEPER = Board(
    "bridgekeeper-zookeeper",
    "bridgekeeper / ZooKeeper writer",
    "Who writes ZooKeeper, how fast, and is the single writer fenced and connected?",
    (
        Row(
            "Writes",
            (
                Panel(
                    "timeseries",
                    "Writes by kind",
                    "Successful ZooKeeper writes per second, by kind: controller "
                    "(fenced multis of the active controller), registration, config, quota, acl, isr, create, "
                    "set. After the bridge, config/quota/acl writes come only from the controller's node.",
                    "wps",
                    q(rate(ZK_WRITES, 'outcome="ok"', by="kind"), "{{kind}}"),
                    width=12,
                    min=0,
                ),
                Panel(
                    "timeseries",
                    "Write latency p99 by kind",
                    "ZooKeeper write latency, retries included. "
                    "Hundreds of milliseconds means ZooKeeper (its disk, usually) is slow; every controller action "
                    "waits for it.",
                    "s",
                    q(quantile(0.99, "bridgekeeper_zookeeper_write_duration_seconds", by="kind"), "{{kind}}"),
                    width=12,
                    min=0,
                ),
                Panel(
                    "timeseries",
                    "Failed writes by kind",
                    "Writes that failed (lost races included, which are "
                    "retried). A steady rate of failed controller writes means the controller cannot write.",
                    "wps",
                    q(rate(ZK_WRITES, 'outcome="failed"', by="kind"), "{{kind}}"),
                    width=12,
                    min=0,
                ),
                Panel(
                    "timeseries",
                    "Fenced writes (stale controller epoch)",
                    "Controller writes ZooKeeper refused "
                    "because another controller was elected since (the epoch check failed). The fence doing its "
                    "job: a few at a failover are harmless; a steady rate means a zombie controller keeps trying.",
                    "short",
                    q(
                        f"sum by (broker_id) (increase({sel('bridgekeeper_zookeeper_fenced_writes_total')}"
                        "[$__rate_interval]))",
                        "broker {{broker_id}}",
                    ),
                    width=12,
                    min=0,
                ),
                Panel(
                    "timeseries",
                    "Writes by node",
                    "Successful ZooKeeper writes per second by node and kind. Once every broker forwards, "
                    "config, quota, acl and create writes come from one node only, the active controller; another "
                    "node writing them is a broker still below the forwarding gate.",
                    "wps",
                    q(rate(ZK_WRITES, 'outcome="ok"', by="broker_id, kind"), "{{broker_id}} {{kind}}"),
                    width=24,
                    min=0,
                ),
            ),
        ),
        Row(
            "Sessions",
            (
                Panel(
                    "timeseries",
                    "Sessions not connected",
                    "ZooKeeper sessions (a node's broker session, and "
                    "its controller session when the controller has its own identity) that are not CONNECTED. "
                    "A node without a session cannot register, lead or write.",
                    "none",
                    q(
                        f"sum by (broker_id, session) (1 - {sel('bridgekeeper_zookeeper_session_state', CONNECTED)})",
                        "{{broker_id}} {{session}}",
                    ),
                    width=12,
                    min=0,
                ),
                Panel(
                    "timeseries",
                    "Connects, disconnects and expirations",
                    "ZooKeeper session transitions "
                    "(SessionExpireListener's SyncConnects, Disconnects, Expires). Expirations lose leadership "
                    "and registrations; disconnects pause the controller's writes.",
                    "short",
                    q(
                        f"sum by (broker_id, event) (increase({sel('bridgekeeper_zookeeper_session_events_total')}"
                        "[$__rate_interval]))",
                        "{{broker_id}} {{event}}",
                    ),
                    width=12,
                    min=0,
                ),
            ),
        ),
    ),
)

BOARDS: tuple[Board, ...] = (CLUSTER, FORWARDING, REASSIGNMENTS, ZOOKEEPER)


def files() -> dict[str, str]:
    """File name under ``dashboards/`` -> content."""
    return {f"{board.uid.removeprefix('bridgekeeper-')}.json": render(board) for board in BOARDS}


def expressions(boards: Sequence[Board] = BOARDS) -> list[tuple[str, str, str]]:
    """(dashboard uid, panel title, PromQL) for every query of every panel."""
    return [(b.uid, p.title, query.expr) for b in boards for p in b.panels() for query in p.queries]
