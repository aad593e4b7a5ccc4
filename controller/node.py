"""``bridgekeeper node``: one node process, a broker front-end and (with the controller role) a candidate.

Start order follows a Kafka broker's: connect to ZooKeeper (creating the chroot if needed), make the
persistent paths, read or create the cluster id, register the broker, then join the controller election.
"""

from __future__ import annotations

import logging
import sys
import threading
import time

from kazoo.client import KazooClient

from controller.config import NodeConfig
from controller.controller import Controller
from controller.metrics import NodeMetrics
from controller.multiread import supports_multi_read
from controller.registration import Registrar, ensure_persistent_paths, get_or_create_cluster_id
from controller.zksession import ZkSession
from zkmodel import ibp
from zkmodel.brokers import BrokerRegistration

log = logging.getLogger(__name__)


class Node:
    def __init__(self, config: NodeConfig) -> None:
        self.config = config
        hosts = config.zookeeper_hosts + (config.zookeeper_chroot or "")
        self.session = ZkSession(
            hosts,
            session_timeout_ms=config.zookeeper_session_timeout_ms,
            retry_deadline_ms=config.zk_retry_deadline_ms,
            name=f"node-{config.broker_id}",
        )
        self.registrar = Registrar(self.session, config.broker_id)
        self.controller: Controller | None = None
        self.metrics = NodeMetrics(config.broker_id)
        self.metrics_port: int | None = None
        self.cluster_id = ""
        self._stopped = threading.Event()

    def registration(self) -> BrokerRegistration:
        for endpoint in self.config.advertised_endpoints:
            if endpoint.port == 0:
                raise ValueError(f"listener {endpoint.listener} has port 0; give every node an explicit port")
        return BrokerRegistration(
            endpoints=self.config.advertised_endpoints,
            timestamp=int(time.time() * 1000),
            version=ibp.broker_znode_version(self.config.inter_broker_protocol_version),
            rack=self.config.broker_rack,
        )

    def _ensure_chroot(self) -> None:
        """Kafka creates a missing chroot at start (KafkaServer.createChrootIfNecessary)."""
        chroot = self.config.zookeeper_chroot
        if not chroot:
            return
        root = KazooClient(
            hosts=self.config.zookeeper_hosts, timeout=self.config.zookeeper_connection_timeout_ms / 1000
        )
        root.start(timeout=self.config.zookeeper_connection_timeout_ms / 1000)
        try:
            root.ensure_path(chroot)
        finally:
            root.stop()
            root.close()

    def start(self) -> None:
        timeout = self.config.zookeeper_connection_timeout_ms / 1000
        self._ensure_chroot()
        self.session.start(timeout=timeout)
        # Probe multiRead support now: an old server answers UNIMPLEMENTED by dropping the connection, which
        # must happen before this node can hold leadership, not in the middle of a failover.
        supports_multi_read(self.session.client, timeout=timeout)
        ensure_persistent_paths(self.session)
        self.cluster_id = get_or_create_cluster_id(self.session)
        self.registrar.register(self.registration())
        if self.config.metrics_enabled:
            host, port = self.config.metrics_host, max(self.config.metrics_port, 0)
            try:
                self.metrics_port = self.metrics.serve(host, port)
            except OSError as exc:
                raise ValueError(f"cannot serve metrics on {host}:{port} (bridgekeeper.metrics.port): {exc}") from exc
        if self.config.is_controller:
            self.controller = Controller(
                self.session,
                self.config.broker_id,
                self.config.inter_broker_protocol_version,
                delete_topic_enable=self.config.delete_topic_enable,
                on_new_session=self._reregister,
            )
            self.controller.on_step = self.metrics.update
            self.controller.start()
        log.info("node %d started in cluster %s", self.config.broker_id, self.cluster_id)

    def _reregister(self) -> None:
        """After a session expiry: a new registration, hence a new broker epoch (Kafka's
        RegisterBrokerAndReelect)."""
        self.registrar.register(self.registration())

    def stop(self) -> None:
        if self._stopped.is_set():
            return
        self._stopped.set()
        if self.controller is not None:
            self.controller.stop()
        self.session.close()
        self.metrics.close()

    def ready_line(self) -> str:
        metrics = f"http://{self.config.metrics_host}:{self.metrics_port}/metrics" if self.metrics_port else "-"
        endpoints = ",".join(e.connection_string for e in self.config.advertised_endpoints)
        return (
            f"NODE-READY broker={self.config.broker_id} endpoints={endpoints} metrics={metrics} "
            f"cluster={self.cluster_id}"
        )


def configure_logging(level: str = "INFO") -> None:
    logging.basicConfig(
        stream=sys.stderr,
        level=level,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    logging.getLogger("kazoo").setLevel(logging.WARNING)
