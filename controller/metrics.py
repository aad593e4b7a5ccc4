"""Per-node Prometheus metrics (the controller set; forwarding and per-API metrics come with the wire layer).

Each node has its own registry so several nodes in one process (tests) never share series.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Gauge, start_http_server

if TYPE_CHECKING:
    from controller.controller import Controller


class NodeMetrics:
    def __init__(self, broker_id: int) -> None:
        self.registry = CollectorRegistry()
        labels = {"broker_id": str(broker_id)}
        self._labels = labels

        def gauge(name: str, doc: str) -> Gauge:
            g = Gauge(name, doc, list(labels), registry=self.registry)
            g.labels(**labels).set(0)
            return g

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
        self._server: object | None = None
        self._thread: threading.Thread | None = None

    def update(self, controller: Controller) -> None:
        summary = controller.summary
        l = self._labels  # noqa: E741
        self.active.labels(**l).set(1 if controller.is_active else 0)
        self.epoch.labels(**l).set(controller.epoch)
        for gauge, key in (
            (self.offline, "offline"),
            (self.under_replicated, "under_replicated"),
            (self.reassigning, "reassigning"),
            (self.topics, "topics"),
        ):
            gauge.labels(**l).set(summary.get(key, 0) if controller.is_active else 0)
        if controller.failover_seconds is not None:
            self.failover_seconds.labels(**l).set(controller.failover_seconds)

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
