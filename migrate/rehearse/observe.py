"""What the rehearsal watches while it runs, twice a second: every node's metrics (forwardable writes by route,
the forwarding gate, ActiveControllerCount, the IBP it runs) and ZooKeeper's ``/controller`` and
``/controller_epoch``. The samples become the forwarding-share plot and the controller/epoch marks on the
timeline; the latest scrape answers the checks.

Metrics are per process, so a restarted node's counters start again at zero: each node's counters are summed
as increases, a drop read as a restart (Prometheus' ``increase`` does the same).
"""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from prometheus_client.parser import text_string_to_metric_families

from migrate.rehearse.model import EventRecord, RouteSample
from zkmodel import paths
from zkmodel.election import ControllerZnode, decode_controller_epoch
from zkmodel.errors import ZnodeFormatError

if TYPE_CHECKING:
    from controller.zk.session import ZkSession
    from migrate.rehearse.cluster import NodeView

ROUTES = ("forwarded", "controller", "direct")
ADMIN = "bridgekeeper_admin_requests"


@dataclass
class NodeScrape:
    """One node's metrics at one moment; ``up`` False when the node did not answer (stopped, frozen)."""

    up: bool
    routes: dict[str, float] = field(default_factory=dict)
    forwarding: bool = False
    active: bool = False
    ibp: str | None = None
    forwarding_min_ibp: str | None = None
    failover_seconds: float | None = None  # the node's last controller failover, election to serving


def scrape(url: str, timeout: float = 1.0) -> NodeScrape:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            text = response.read().decode()
    except (OSError, urllib.error.URLError, ValueError):
        return NodeScrape(up=False)
    out = NodeScrape(up=True, routes=dict.fromkeys(ROUTES, 0.0))
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == f"{ADMIN}_total" and s.labels.get("route") in out.routes:
                out.routes[s.labels["route"]] += s.value
            elif s.name == "bridgekeeper_forwarding_enabled":
                out.forwarding = s.value >= 1
            elif s.name == "bridgekeeper_controller_active":
                out.active = s.value >= 1
            elif s.name == "bridgekeeper_controller_failover_seconds":
                out.failover_seconds = s.value
            elif s.name == "bridgekeeper_node_protocol_info" and s.value >= 1:
                out.ibp = s.labels.get("inter_broker_protocol_version")
                out.forwarding_min_ibp = s.labels.get("forwarding_min_ibp")
    return out


class Monitor:
    def __init__(self, session: ZkSession, nodes: Sequence[NodeView], interval: float = 0.5) -> None:
        self.session = session
        self._nodes = list(nodes)
        self.interval = interval
        self.routes: list[RouteSample] = []
        self.events: list[EventRecord] = []
        self.latest: dict[int, NodeScrape] = {}
        self._raw: dict[int, dict[str, float]] = {}
        self._total = dict.fromkeys(ROUTES, 0.0)
        self._per_node: dict[int, dict[str, float]] = {}
        self._controller: int | None = None
        self._epoch: int | None = None
        #: Every controller failover a node reported (t, broker, seconds): how long becoming the serving
        #: controller takes at this cluster's scale.
        self.failovers: list[dict[str, float]] = []
        self._failover_seen: dict[int, float] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rehearse-monitor", daemon=True)

    def start(self) -> None:
        self.sample()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(10)

    def mark(self, kind: str, label: str) -> None:
        with self._lock:
            self.events.append({"t": time.time(), "kind": kind, "label": label})  # type: ignore[typeddict-item]

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def sample(self) -> None:
        with self._lock:
            nodes = list(self._nodes)
        scrapes = {n.broker_id: scrape(n.metrics, timeout=min(1.0, self.interval * 2)) for n in nodes if n.metrics}
        now = time.time()
        controller, epoch = self._read_controller()
        with self._lock:
            for broker_id, s in scrapes.items():
                self.latest[broker_id] = s
                if not s.up:
                    continue
                if s.failover_seconds and self._failover_seen.get(broker_id) != s.failover_seconds:  # 0: none yet
                    self._failover_seen[broker_id] = s.failover_seconds
                    self.failovers.append({"t": now, "broker": broker_id, "seconds": s.failover_seconds})
                last = self._raw.setdefault(broker_id, dict.fromkeys(ROUTES, 0.0))
                mine = self._per_node.setdefault(broker_id, dict.fromkeys(ROUTES, 0.0))
                for r in ROUTES:
                    value = s.routes.get(r, 0.0)
                    gained = value - last[r] if value >= last[r] else value  # a drop: the node restarted
                    self._total[r] += gained
                    mine[r] += gained
                    last[r] = value
            known = [s for s in self.latest.values()]
            self.routes.append(
                {
                    "t": now,
                    **self._total,  # type: ignore[typeddict-item]
                    "nodes_forwarding": sum(1 for s in known if s.forwarding),
                    "nodes": len(nodes),
                }
            )
            if controller is not None and controller != self._controller:
                who = "none" if controller < 0 else f"node {controller}"
                self.events.append({"t": now, "kind": "controller", "label": f"controller: {who}"})
                self._controller = controller
            if epoch is not None and epoch != self._epoch:
                if self._epoch is not None:
                    self.events.append({"t": now, "kind": "epoch", "label": f"controller epoch {epoch}"})
                self._epoch = epoch

    def _read_controller(self) -> tuple[int | None, int | None]:
        """(/controller's broker id or -1 when absent, epoch); (None, None) when ZooKeeper does not answer."""
        try:
            found = self.session.read_data([paths.CONTROLLER, paths.CONTROLLER_EPOCH], timeout=2.0)
        except Exception:  # ZooKeeper paused or unreachable: this sample says nothing about the controller
            return None, None
        controller, epoch = -1, None
        try:
            c = found.get(paths.CONTROLLER)
            if c is not None:
                controller = ControllerZnode.decode(paths.CONTROLLER, c[0]).broker_id
            e = found.get(paths.CONTROLLER_EPOCH)
            if e is not None:
                epoch = decode_controller_epoch(paths.CONTROLLER_EPOCH, e[0])
        except ZnodeFormatError:
            return None, None
        return controller, epoch

    def totals(self) -> dict[str, float]:
        with self._lock:
            return dict(self._total)

    def per_node(self) -> dict[int, dict[str, float]]:
        """Forwardable writes by route per node since the start, restarts corrected."""
        with self._lock:
            return {b: dict(v) for b, v in self._per_node.items()}

    def snapshot(self) -> tuple[list[RouteSample], list[EventRecord]]:
        with self._lock:
            return list(self.routes), list(self.events)
