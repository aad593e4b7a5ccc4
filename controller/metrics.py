"""Per-node Prometheus metrics: controller state, requests per API, ZooKeeper writes, KIP-590 forwarding and
KIP-511 client software. The README maps each Kafka/KIP metric name to ours.

Each node has its own registry so several nodes in one process (tests) never share series. Label values
that can be known up front (API names, write kinds) are created at start, so a rate() over a counter that
has not moved yet is 0, not absent.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

from controller.active.events import CONTROLLER_STATES
from controller.wire.apikeys import api_name
from zkmodel import errorcodes as E

if TYPE_CHECKING:
    from controller.active.loop import Controller
    from controller.wire.server import Connection

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
        self.offline = gauge(
            "bridgekeeper_offline_partitions", "Partitions without a live leader (OfflinePartitionsCount)"
        )
        self.under_replicated = gauge(
            "bridgekeeper_under_replicated_partitions", "Partitions whose ISR is smaller than their target replica set"
        )
        self.reassigning = gauge("bridgekeeper_reassigning_partitions", "Partitions being reassigned")
        self.topics = gauge("bridgekeeper_topics", "Topics known to the active controller")
        self.failover_seconds = gauge("bridgekeeper_controller_failover_seconds", "Duration of the last failover load")
        self.controller_events = Histogram(
            "bridgekeeper_controller_event_duration_seconds",
            "Time the controller spent on each event, by Kafka ControllerState (ControllerStats <State>RateAndTimeMs)",
            ["broker_id", "state"], buckets=LATENCY_BUCKETS, registry=r,
        )  # fmt: skip
        for state in CONTROLLER_STATES:
            self.controller_events.labels(b, state)
        # -- requests ----------------------------------------------------------------------------------------
        self.requests = Counter("bridgekeeper_requests", "Requests handled, per API (RequestsPerSec)",
                                ["broker_id", "api"], registry=r)  # fmt: skip
        self.request_errors = Counter(
            "bridgekeeper_request_errors", "Error codes in responses, per API and error (ErrorsPerSec)",
            ["broker_id", "api", "error"], registry=r,
        )  # fmt: skip
        self.request_seconds = Histogram(
            "bridgekeeper_request_duration_seconds", "Time from a request's arrival to its response (TotalTimeMs)",
            ["broker_id", "api"], buckets=LATENCY_BUCKETS, registry=r,
        )  # fmt: skip
        for key in sorted(set(api_keys)):
            self.requests.labels(b, api_name(key))
            self.request_seconds.labels(b, api_name(key))
        # -- ZooKeeper writes --------------------------------------------------------------------------------
        self.zk_writes = Counter("bridgekeeper_zookeeper_writes", "ZooKeeper writes made by this node, per kind",
                                 ["broker_id", "kind", "outcome"], registry=r)  # fmt: skip
        self.zk_write_seconds = Histogram(
            "bridgekeeper_zookeeper_write_duration_seconds", "ZooKeeper write latency, retries included",
            ["broker_id", "kind"], buckets=LATENCY_BUCKETS, registry=r,
        )  # fmt: skip
        for kind in WRITE_KINDS:
            for outcome in ("ok", "failed"):
                self.zk_writes.labels(b, kind, outcome)
            self.zk_write_seconds.labels(b, kind)
        # -- KIP-590 forwarding ------------------------------------------------------------------------------
        self.forwarding_enabled = gauge(
            "bridgekeeper_forwarding_enabled", "1 if this broker's IBP is at or above the forwarding gate"
        )
        self.forwarded = Counter(
            "bridgekeeper_forwarding_client_requests", "Client requests forwarded to the controller "
            "(KIP-590 num-client-forwarding-to-controller-rate/-count)", ["broker_id"], registry=r,
        )  # fmt: skip
        self.redirected = Counter(
            "bridgekeeper_forwarding_envelopes_sent", "Envelopes sent to the controller, retries included "
            "(KIP-590 num-messages-redirected-rate/-count)", ["broker_id"], registry=r,
        )  # fmt: skip
        self.auth_failures = Counter(
            "bridgekeeper_forwarding_authorization_failures", "Envelopes the controller refused with "
            "CLUSTER_AUTHORIZATION_FAILED (KIP-590 request-forwarding-to-controller-authorization-fail-count)",
            ["broker_id"], registry=r,
        )  # fmt: skip
        self.queue_seconds = Histogram(
            "bridgekeeper_forwarding_queue_time_seconds", "Time from queueing a forwarded request to sending it "
            "(ForwardingManager QueueTimeMs)", ["broker_id"], buckets=LATENCY_BUCKETS, registry=r,
        )  # fmt: skip
        self.remote_seconds = Histogram(
            "bridgekeeper_forwarding_remote_time_seconds", "Time from sending an Envelope to its response "
            "(ForwardingManager RemoteTimeMs)", ["broker_id"], buckets=LATENCY_BUCKETS, registry=r,
        )  # fmt: skip
        self.queue_len = gauge(
            "bridgekeeper_forwarding_queue_length",
            "Forwarded requests waiting or in flight (ForwardingManager QueueLength)",
        )
        for c in (self.forwarded, self.redirected, self.auth_failures):
            c.labels(b)
        self.queue_seconds.labels(b)
        self.remote_seconds.labels(b)
        # -- connections (KIP-511) ---------------------------------------------------------------------------
        self.connections = Gauge(
            "bridgekeeper_connections", "Open client connections by client software (KIP-511 connections metric)",
            ["broker_id", "listener", "client_software_name", "client_software_version"], registry=r,
        )  # fmt: skip
        self.sasl_failures = Counter("bridgekeeper_sasl_authentication_failures",
                                     "Failed SASL authentications (failed-authentication-total)",
                                     ["broker_id", "listener"], registry=r)  # fmt: skip
        self._server: object | None = None
        self._thread: threading.Thread | None = None

    # -- controller ------------------------------------------------------------------------------------------
    def update(self, controller: Controller) -> None:
        summary = controller.summary
        b = self.broker_id
        self.active.labels(b).set(1 if controller.is_active else 0)
        self.epoch.labels(b).set(controller.epoch)
        for gauge, key in (
            (self.offline, "offline"),
            (self.under_replicated, "under_replicated"),
            (self.reassigning, "reassigning"),
            (self.topics, "topics"),
        ):
            gauge.labels(b).set(summary.get(key, 0) if controller.is_active else 0)
        if controller.failover_seconds is not None:
            self.failover_seconds.labels(b).set(controller.failover_seconds)

    def controller_event(self, state: str, seconds: float) -> None:
        self.controller_events.labels(self.broker_id, state).observe(seconds)

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

    # -- ZooKeeper writes (ZkSession.on_write) -----------------------------------------------------------------
    def zk_write(self, kind: str, seconds: float, ok: bool) -> None:
        self.zk_writes.labels(self.broker_id, kind, "ok" if ok else "failed").inc()
        self.zk_write_seconds.labels(self.broker_id, kind).observe(seconds)

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
