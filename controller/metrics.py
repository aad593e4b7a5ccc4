"""Per-node Prometheus metrics: controller state, requests per API, ZooKeeper writes, KIP-590 forwarding and
KIP-511 client software. docs/observability.md maps each Kafka/KIP metric name to ours.

Each node has its own registry so several nodes in one process (tests) never share series. Label values
that can be known up front (API names, write kinds) are created at start, so a rate() over a counter that
has not moved yet is 0, not absent.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

from controller.active.events import CONTROLLER_STATES
from controller.wire.apikeys import api_name, forwardable
from controller.wire.dispatch import ROUTES
from controller.wire.health import DISCONNECTED_SECONDS, SESSION_TIMEOUT_SECONDS
from zkmodel import errorcodes as E

if TYPE_CHECKING:
    from controller.active.controller import Controller
    from controller.broker.replicas import CatchUpStatus
    from controller.wire.server import Connection

#: kazoo's session states (KazooState), the values of the session-state gauge's ``state`` label.
SESSION_STATES = ("CONNECTED", "SUSPENDED", "LOST")
#: Why a forwarded request was tried again (controller.broker.forwarding).
FORWARDING_RETRY_REASONS = ("no_controller", "unreachable", "connection_lost", "not_controller")
WRITE_KINDS = ("controller", "election", "registration", "config", "quota", "acl", "isr", "create", "set")
#: Request latency buckets (seconds): admin requests span sub-millisecond reads to multi-second creates.
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class NodeMetrics:
    def __init__(self, broker_id: int, api_keys: Iterable[int] = ()) -> None:
        self.registry = r = CollectorRegistry()
        self.broker_id = str(broker_id)
        b = self.broker_id

        def gauge(name: str, doc: str) -> Gauge:
            g = Gauge(name, doc, ["broker_id"], registry=r)
            g.labels(b).set(0)
            return g

        # -- controller --------------------------------------------------------------------------------------
        self.active = gauge(
            "bridgekeeper_controller_active", "1 if this node is the active controller (ActiveControllerCount)"
        )
        self.epoch = gauge("bridgekeeper_controller_epoch", "Controller epoch this node leads with, -1 if not active")
        self.elections_won = Counter(
            "bridgekeeper_controller_elections_won",
            "Controller elections this node won (one per epoch it led): "
            "summed over the cluster, how often the controller moved",
            ["broker_id"],
            registry=r,
        )
        self.elections_won.labels(b)
        self._led_epoch = -1
        self.offline = gauge(
            "bridgekeeper_offline_partitions", "Partitions without a live leader (OfflinePartitionsCount)"
        )
        self.under_replicated = gauge(
            "bridgekeeper_under_replicated_partitions", "Partitions whose ISR is smaller than their target replica set"
        )
        self.reassigning = gauge("bridgekeeper_reassigning_partitions", "Partitions being reassigned")
        self.adding = gauge(
            "bridgekeeper_reassignment_adding_replicas", "Replicas being added by in-flight reassignments (AR)"
        )
        self.removing = gauge(
            "bridgekeeper_reassignment_removing_replicas", "Replicas being removed by in-flight reassignments (RR)"
        )
        self.reassignments_completed = Counter(
            "bridgekeeper_reassignments_completed",
            "Partition reassignments this node completed as controller",
            ["broker_id"],
            registry=r,
        )
        self.reassignments_completed.labels(b)
        self.topics = gauge("bridgekeeper_topics", "Topics known to the active controller (GlobalTopicCount)")
        self.partitions = gauge(
            "bridgekeeper_partitions", "Partitions known to the active controller (GlobalPartitionCount)"
        )
        self.live_brokers = gauge(
            "bridgekeeper_live_brokers", "Registered brokers the active controller sees (0 on other nodes)"
        )
        self.event_queue_size = gauge(
            "bridgekeeper_controller_event_queue_size", "Controller events waiting (EventQueueSize)"
        )
        self.waiting_calls = gauge(
            "bridgekeeper_controller_waiting_requests",
            "Client requests queued on or running in this controller: clients waiting on the controller",
        )
        self.event_queue_seconds = Histogram(
            "bridgekeeper_controller_event_queue_time_seconds",
            "Time an event waited in the controller's queue, by Kafka ControllerState (EventQueueTimeMs)",
            ["broker_id", "state"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.failover_seconds = gauge("bridgekeeper_controller_failover_seconds", "Duration of the last failover load")
        self.controller_events = Histogram(
            "bridgekeeper_controller_event_duration_seconds",
            "Time the controller spent on each event, by Kafka ControllerState (ControllerStats <State>RateAndTimeMs)",
            ["broker_id", "state"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        for state in CONTROLLER_STATES:
            self.controller_events.labels(b, state)
            self.event_queue_seconds.labels(b, state)
        # -- requests ----------------------------------------------------------------------------------------
        self.requests = Counter(
            "bridgekeeper_requests", "Requests handled, per API (RequestsPerSec)", ["broker_id", "api"], registry=r
        )
        self.request_errors = Counter(
            "bridgekeeper_request_errors",
            "Error codes in responses, per API and error (ErrorsPerSec)",
            ["broker_id", "api", "error"],
            registry=r,
        )
        self.request_seconds = Histogram(
            "bridgekeeper_request_duration_seconds",
            "Time from a request's arrival to its response (TotalTimeMs)",
            ["broker_id", "api"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.admin_requests = Counter(
            "bridgekeeper_admin_requests",
            "Client requests of forwardable (admin write) APIs by the route they took "
            "to ZooKeeper: forwarded, controller (this node was the active controller) or direct (this broker "
            "wrote ZooKeeper itself): the bridge's progress",
            ["broker_id", "api", "route"],
            registry=r,
        )
        for key in sorted(set(api_keys)):
            self.requests.labels(b, api_name(key))
            self.request_seconds.labels(b, api_name(key))
            if forwardable(key):
                for route in ROUTES:
                    self.admin_requests.labels(b, api_name(key), route)
        # -- ZooKeeper writes --------------------------------------------------------------------------------
        self.zk_writes = Counter(
            "bridgekeeper_zookeeper_writes",
            "ZooKeeper writes made by this node, per kind",
            ["broker_id", "kind", "outcome"],
            registry=r,
        )
        self.zk_write_seconds = Histogram(
            "bridgekeeper_zookeeper_write_duration_seconds",
            "ZooKeeper write latency, retries included",
            ["broker_id", "kind"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        for kind in WRITE_KINDS:
            for outcome in ("ok", "failed"):
                self.zk_writes.labels(b, kind, outcome)
            self.zk_write_seconds.labels(b, kind)
        self.fenced_writes = Counter(
            "bridgekeeper_zookeeper_fenced_writes",
            "Controller multis ZooKeeper refused because the controller "
            "epoch moved on (a stale controller fenced off: Kafka's ControllerMovedException)",
            ["broker_id"],
            registry=r,
        )
        self.fenced_writes.labels(b)
        # Kafka's SessionExpireListener: SessionState, ZooKeeper{SyncConnects,Disconnects,Expires}PerSec. A
        # node has one session, or two when the controller has its own ZooKeeper identity (label "session").
        self.session_state = Gauge(
            "bridgekeeper_zookeeper_session_state",
            "1 for the ZooKeeper session's current state (SessionState)",
            ["broker_id", "session", "state"],
            registry=r,
        )
        self.session_events = Counter(
            "bridgekeeper_zookeeper_session_events",
            "ZooKeeper session transitions: connects (the first and "
            "every reconnect), disconnects (suspended) and expirations (lost)",
            ["broker_id", "session", "event"],
            registry=r,
        )
        # Read at scrape time from the session itself: what `bridgekeeper health` compares (controller.wire.health).
        self.session_disconnected = Gauge(
            DISCONNECTED_SECONDS,
            "Seconds the ZooKeeper session has been without a connection (0 when connected): past the session "
            "timeout the server has expired it",
            ["broker_id", "session"],
            registry=r,
        )
        self.session_timeout = Gauge(
            SESSION_TIMEOUT_SECONDS,
            "The ZooKeeper session timeout asked for (zookeeper.session.timeout.ms)",
            ["broker_id", "session"],
            registry=r,
        )
        # -- KIP-590 forwarding ------------------------------------------------------------------------------
        self.forwarding_enabled = gauge(
            "bridgekeeper_forwarding_enabled", "1 if this broker's IBP is at or above the forwarding gate"
        )
        #: The node's protocol versions as labels (value 1): a rolling IBP bump is watched from outside, and
        #: a rehearsal checks each restarted node really runs the IBP it was given, not what its file says.
        self.protocol = Gauge(
            "bridgekeeper_node_protocol_info",
            "1, labelled with this node's inter.broker.protocol.version and "
            "its forwarding gate (bridgekeeper.forwarding.min.ibp)",
            ["broker_id", "inter_broker_protocol_version", "forwarding_min_ibp"],
            registry=r,
        )
        self.forwarded = Counter(
            "bridgekeeper_forwarding_client_requests",
            "Client requests forwarded to the controller (KIP-590 num-client-forwarding-to-controller-rate/-count)",
            ["broker_id"],
            registry=r,
        )
        self.redirected = Counter(
            "bridgekeeper_forwarding_envelopes_sent",
            "Envelopes sent to the controller, retries included (KIP-590 num-messages-redirected-rate/-count)",
            ["broker_id"],
            registry=r,
        )
        self.auth_failures = Counter(
            "bridgekeeper_forwarding_authorization_failures",
            "Envelopes the controller refused with "
            "CLUSTER_AUTHORIZATION_FAILED (KIP-590 request-forwarding-to-controller-authorization-fail-count)",
            ["broker_id"],
            registry=r,
        )
        self.queue_seconds = Histogram(
            "bridgekeeper_forwarding_queue_time_seconds",
            "Time from queueing a forwarded request to sending it (ForwardingManager QueueTimeMs)",
            ["broker_id"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.remote_seconds = Histogram(
            "bridgekeeper_forwarding_remote_time_seconds",
            "Time from sending an Envelope to its response (ForwardingManager RemoteTimeMs)",
            ["broker_id"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.queue_len = gauge(
            "bridgekeeper_forwarding_queue_length",
            "Forwarded requests waiting or in flight (ForwardingManager QueueLength)",
        )
        self.forwarding_retries = Counter(
            "bridgekeeper_forwarding_retries",
            "Forwarding attempts tried again, by reason: no controller known, "
            "controller unreachable, connection lost mid-request, or NOT_CONTROLLER",
            ["broker_id", "reason"],
            registry=r,
        )
        for reason in FORWARDING_RETRY_REASONS:
            self.forwarding_retries.labels(b, reason)
        for c in (self.forwarded, self.redirected, self.auth_failures):
            c.labels(b)
        self.queue_seconds.labels(b)
        self.remote_seconds.labels(b)
        # -- replication (reassignment catch-up) --------------------------------------------------------------
        # No series until the broker's replica manager first scans the metadata (within its first tick): a
        # controller-only node has none, as Kafka's controller has no ReplicaManager, so counting these series
        # counts brokers (Strimzi's "Brokers Online").
        self.leader_partitions = Gauge(
            "bridgekeeper_leader_partitions",
            "Partitions this node leads (ReplicaManager LeaderCount)",
            ["broker_id"],
            registry=r,
        )
        self.replica_partitions = Gauge(
            "bridgekeeper_replica_partitions",
            "Partitions with a replica on this node (ReplicaManager PartitionCount)",
            ["broker_id"],
            registry=r,
        )
        self.catching_up = gauge(
            "bridgekeeper_replicas_catching_up", "Followers of partitions this broker leads still catching up"
        )
        self.throttled_replicas = Gauge(
            "bridgekeeper_replication_throttled_replicas",
            "Catching-up replicas slowed by a replication throttle "
            "(leader.|follower.replication.throttled.replicas) on this broker",
            ["broker_id", "direction"],
            registry=r,
        )
        self.throttle_rate = Gauge(
            "bridgekeeper_replication_throttle_rate_bytes",
            "This broker's replication throttle in force, bytes/s "
            "(leader.|follower.replication.throttled.rate; 0 = none, read only while replicas catch up)",
            ["broker_id", "direction"],
            registry=r,
        )
        for direction in ("leader", "follower"):
            self.throttled_replicas.labels(b, direction).set(0)
            self.throttle_rate.labels(b, direction).set(0)
        # -- connections (KIP-511) ---------------------------------------------------------------------------
        self.connections = Gauge(
            "bridgekeeper_connections",
            "Open client connections by client software (KIP-511 connections metric)",
            ["broker_id", "listener", "client_software_name", "client_software_version"],
            registry=r,
        )
        self.sasl_failures = Counter(
            "bridgekeeper_sasl_authentication_failures",
            "Failed SASL authentications (failed-authentication-total)",
            ["broker_id", "listener"],
            registry=r,
        )
        self.tls_failures = Counter(
            "bridgekeeper_tls_handshake_failures",
            "TLS handshakes refused on SSL and SASL_SSL listeners, by OpenSSL's reason "
            "(CERTIFICATE_VERIFY_FAILED, TLSV1_ALERT_UNKNOWN_CA, WRONG_VERSION_NUMBER, ...)",
            ["broker_id", "listener", "reason"],
            registry=r,
        )
        self._server: object | None = None
        self._thread: threading.Thread | None = None

    # -- controller ------------------------------------------------------------------------------------------
    def update(self, controller: Controller) -> None:
        summary = controller.summary
        b = self.broker_id
        self.active.labels(b).set(1 if controller.is_active else 0)
        self.epoch.labels(b).set(controller.epoch)
        if controller.is_active and controller.epoch != self._led_epoch:
            self._led_epoch = controller.epoch
            self.elections_won.labels(b).inc()
        for gauge, key in (
            (self.offline, "offline"),
            (self.under_replicated, "under_replicated"),
            (self.reassigning, "reassigning"),
            (self.adding, "adding_replicas"),
            (self.removing, "removing_replicas"),
            (self.topics, "topics"),
            (self.partitions, "partitions"),
            (self.live_brokers, "live_brokers"),
        ):
            gauge.labels(b).set(summary.get(key, 0) if controller.is_active else 0)
        self.event_queue_size.labels(b).set(controller.queue_size)
        self.waiting_calls.labels(b).set(controller.waiting_calls)
        if controller.failover_seconds is not None:
            self.failover_seconds.labels(b).set(controller.failover_seconds)

    def controller_event(self, state: str, seconds: float, queued_seconds: float = 0.0) -> None:
        self.controller_events.labels(self.broker_id, state).observe(seconds)
        self.event_queue_seconds.labels(self.broker_id, state).observe(queued_seconds)

    def reassignments_done(self, n: int) -> None:
        self.reassignments_completed.labels(self.broker_id).inc(n)

    # -- requests (controller.wire.dispatch.RequestMetrics) ----------------------------------------------------
    def request(self, api_key: int, seconds: float, errors: list[int]) -> None:
        name = api_name(api_key)
        self.requests.labels(self.broker_id, name).inc()
        self.request_seconds.labels(self.broker_id, name).observe(seconds)
        for code in errors:
            try:
                error = E.by_code(code).name
            except KeyError:
                error = str(code)
            self.request_errors.labels(self.broker_id, name, error).inc()

    def admin_request(self, api_key: int, route: str) -> None:
        self.admin_requests.labels(self.broker_id, api_name(api_key), route).inc()

    # -- ZooKeeper writes (ZkSession.on_write) -----------------------------------------------------------------
    def zk_write(self, kind: str, seconds: float, ok: bool) -> None:
        self.zk_writes.labels(self.broker_id, kind, "ok" if ok else "failed").inc()
        self.zk_write_seconds.labels(self.broker_id, kind).observe(seconds)

    def fenced_write(self) -> None:
        self.fenced_writes.labels(self.broker_id).inc()

    # -- ZooKeeper sessions (ZkSession.add_state_listener) -------------------------------------------------------
    def session_listener(self, session: str) -> Callable[[str], None]:
        """A state listener for one of the node's sessions ("broker" or "controller"). Series exist from the
        start: state LOST until the first connect."""
        b = self.broker_id
        for state in SESSION_STATES:
            self.session_state.labels(b, session, state).set(1 if state == "LOST" else 0)
        for event in ("connect", "disconnect", "expire"):
            self.session_events.labels(b, session, event)

        def on_state(state: str) -> None:
            name = str(state)
            for s in SESSION_STATES:
                self.session_state.labels(b, session, s).set(1 if s == name else 0)
            event = {"CONNECTED": "connect", "SUSPENDED": "disconnect", "LOST": "expire"}.get(name)
            if event is not None:
                self.session_events.labels(b, session, event).inc()

        return on_state

    def session_clock(self, session: str, disconnected_for: Callable[[], float], timeout_s: float) -> None:
        """Serve how long one of the node's sessions has been disconnected (``ZkSession.disconnected_for``, read
        at each scrape) beside its timeout."""
        self.session_disconnected.labels(self.broker_id, session).set_function(disconnected_for)
        self.session_timeout.labels(self.broker_id, session).set(timeout_s)

    # -- replication (controller.broker.replicas.ReplicaManager.on_status) ---------------------------------------
    def catch_up(self, status: CatchUpStatus) -> None:
        b = self.broker_id
        self.catching_up.labels(b).set(status.catching_up)
        self.throttled_replicas.labels(b, "leader").set(status.leader_throttled)
        self.throttled_replicas.labels(b, "follower").set(status.follower_throttled)
        self.throttle_rate.labels(b, "leader").set(status.leader_rate)
        self.throttle_rate.labels(b, "follower").set(status.follower_rate)

    def partition_counts(self, leaders: int, replicas: int) -> None:
        """ReplicaManager.on_counts: the partitions this node leads and those it holds a replica of."""
        self.leader_partitions.labels(self.broker_id).set(leaders)
        self.replica_partitions.labels(self.broker_id).set(replicas)

    # -- forwarding (controller.broker.forwarding.ForwardingMetrics) --------------------------------------------------
    def forwarded_request(self) -> None:
        self.forwarded.labels(self.broker_id).inc()

    def envelope_sent(self) -> None:
        self.redirected.labels(self.broker_id).inc()

    def authorization_failed(self) -> None:
        self.auth_failures.labels(self.broker_id).inc()

    def queue_length(self, n: int) -> None:
        self.queue_len.labels(self.broker_id).set(n)

    def queue_time(self, seconds: float) -> None:
        self.queue_seconds.labels(self.broker_id).observe(seconds)

    def remote_time(self, seconds: float) -> None:
        self.remote_seconds.labels(self.broker_id).observe(seconds)

    def retry(self, reason: str) -> None:
        self.forwarding_retries.labels(self.broker_id, reason).inc()

    # -- connections ---------------------------------------------------------------------------------------------
    def client_software(self, conn: Connection, name: str, version: str) -> None:
        """KIP-511: a connection told us what it runs (ApiVersions v3+); move it from "unknown"."""
        old = conn.client_software or ("unknown", "unknown")
        self.connections.labels(self.broker_id, conn.listener, *old).dec()
        conn.client_software = (name or "unknown", version or "unknown")
        self.connections.labels(self.broker_id, conn.listener, *conn.client_software).inc()

    def connection_opened(self, conn: Connection) -> None:
        self.connections.labels(self.broker_id, conn.listener, "unknown", "unknown").inc()

    def connection_closed(self, conn: Connection) -> None:
        software = conn.client_software or ("unknown", "unknown")
        self.connections.labels(self.broker_id, conn.listener, *software).dec()

    def sasl_failed(self, conn: Connection) -> None:
        self.sasl_failures.labels(self.broker_id, conn.listener).inc()

    def tls_failed(self, listener: str, reason: str) -> None:
        self.tls_failures.labels(self.broker_id, listener, reason).inc()

    def serve(self, host: str, port: int) -> int:
        """Start the HTTP endpoint; returns the bound port (port 0 picks a free one)."""
        server, thread = start_http_server(port, addr=host, registry=self.registry)
        self._server, self._thread = server, thread
        return int(server.server_port)

    def close(self) -> None:
        server = self._server
        if server is not None:
            server.shutdown()  # type: ignore[attr-defined]
            server.server_close()  # type: ignore[attr-defined]
