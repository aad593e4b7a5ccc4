"""``bridgekeeper node``: one node process, a broker front-end and (with the controller role) a candidate.

Start order follows a Kafka broker's: connect to ZooKeeper (creating the chroot if needed), make the
persistent paths, read or create the cluster id, register the broker, then join the controller election.

The module is long because it is the one place that owns the node's parts: the sessions, the wire, the
controller and the registration are started, re-registered and stopped (in reverse) by one class, which wires
each part to the others it needs.
"""

from __future__ import annotations

import logging
import tempfile
import threading
import time

from tenacity import Retrying, retry_if_exception, stop_after_delay, stop_when_event_set, wait_exponential

from controller.active.controller import Controller
from controller.broker.controlled_shutdown import ControlledShutdown
from controller.broker.forwarding import ForwardingManager
from controller.broker.metadata_cache import MetadataCache
from controller.broker.replicas import CatchUp, ReplicaManager, Throttles
from controller.config import NodeConfig
from controller.config.keys import UNSAFE_JOIN_KAFKA_CHROOT, ZK_CONTROLLER_DIGEST, ZK_DIGEST
from controller.logtags import UNEXPECTED
from controller.metrics import NodeMetrics
from controller.security.acl_cache import AclCache
from controller.security.authorizer import AclAuthorizer
from controller.security.scram import ScramCredential
from controller.security.settings import ZkDigest
from controller.store.chroot_guard import guard_chroot
from controller.store.entity_configs import read_entities_leniently
from controller.store.legacy_isr import LegacyIsrWriter
from controller.store.registration import (
    BrokerIdInUse,
    Registrar,
    ensure_persistent_paths,
    get_or_create_cluster_id,
)
from controller.store.scram import read_credential
from controller.store.tree_copy import refuse_unfinished_copy
from controller.wire.apikeys import supported_apis
from controller.wire.authz import ALLOW_ALL, Authz
from controller.wire.client import KafkaClient, open_channel
from controller.wire.dispatch import Dispatcher, routed_as_controller
from controller.wire.handlers.apis import Apis
from controller.wire.handlers.base import NodeView
from controller.wire.handlers.configs import ConfigApis
from controller.wire.handlers.kafka_acls import AclApis
from controller.wire.handlers.quotas import QuotaApis
from controller.wire.handlers.sasl import SaslApis
from controller.wire.handlers.scram import ScramApis
from controller.wire.runtime import WireRuntime
from controller.wire.server import DEFAULT_MAX_FRAME
from controller.zk.errors import KazooException, SessionLost, ZkUnavailable
from controller.zk.fenced_session import FencedSession
from controller.zk.session import ZkSession, ensure_chroot
from controller.zk.tls import ZkTls
from controller.zk.types import KazooState
from controller.zk.znode_acls import AclPolicy, kafka_policy
from zkmodel import ibp, paths
from zkmodel.brokers import BrokerRegistration, EndPoint
from zkmodel.configs import BROKERS, DEFAULT_ENTITY, TOPICS
from zkmodel.errors import ZnodeFormatError
from zkmodel.znode_acls import (
    ALL,
    CREATE,
    DELETE,
    READ,
    WORLD,
    Identities,
    desired_acl,
    digest_identity,
    in_scope,
    kafka_default_acl,
)

log = logging.getLogger(__name__)
#: What a re-registration after a session expiry retries: ZooKeeper away, a race lost with our old session's
#: ephemeral (Registrar's own retries gave up), the registration taken meanwhile by the old session's ghost.
REGISTRATION_RETRIABLE = (ZkUnavailable, KazooException, BrokerIdInUse)
#: How long a re-registration keeps trying before it logs its last error and leaves the broker unregistered.
REREGISTER_GIVE_UP_S = 300.0
#: How long start() waits for its own registration to reach its image before it serves anyway.
OWN_REGISTRATION_WAIT_S = 10.0


class Node:
    def __init__(self, config: NodeConfig) -> None:
        self.config = config
        hosts = config.zookeeper_hosts + (config.zookeeper_chroot or "")
        self.forwarding_enabled = config.inter_broker_protocol_version >= config.forwarding_min_ibp
        self.supported = supported_apis(forwarding=self.forwarding_enabled)
        self.metrics = NodeMetrics(config.broker_id, self.supported)
        #: What this node connects to other nodes with when the inter-broker listener speaks TLS (built once).
        self.inter_tls = config.inter_broker_tls.client_context() if config.inter_broker_tls is not None else None

        acl_policy = _acl_policy(config)
        #: kazoo reads TLS material from files: the checked material, written once into a private directory that
        #: lives as long as the node (its key encrypted with a password held only in memory).
        self._zk_tls_dir: tempfile.TemporaryDirectory[str] | None = None
        self.zk_tls: ZkTls | None = None
        if config.zookeeper_tls is not None:
            self._zk_tls_dir = tempfile.TemporaryDirectory(prefix="bk-zk-tls-")
            ca, cert, key, password = config.zookeeper_tls.write_client_files(self._zk_tls_dir.name)
            self.zk_tls = ZkTls(ca, cert, key, password, check_hostname=config.zookeeper_tls.hostname_verification)

        def session(name: str, digest: ZkDigest | None, role: str) -> ZkSession:
            s = ZkSession(
                hosts,
                session_timeout_ms=config.zookeeper_session_timeout_ms,
                retry_deadline_ms=config.zk_retry_deadline_ms,
                auth=[digest.auth] if digest else (),
                name=name,
                acl_policy=acl_policy,
                tls=self.zk_tls,
            )
            s.on_write = self.metrics.zk_write
            s.on_fenced = self.metrics.fenced_write
            s.add_state_listener(self.metrics.session_listener(role))
            self.metrics.session_clock(role, s.disconnected_for, config.zookeeper_session_timeout_ms / 1000)
            return s

        self.session = session(f"node-{config.broker_id}", config.zookeeper_digest, "broker")
        #: The controller's own ZooKeeper identity, when it differs from the broker's (a separate session,
        #: so ZooKeeper ACLs can tell the two apart: lockdown lets only this one write metadata).
        self.controller_session = (
            session(f"controller-{config.broker_id}", config.zookeeper_controller_digest, "controller")
            if config.is_controller and config.zookeeper_controller_digest != config.zookeeper_digest
            else self.session
        )
        self._fenced_session = FencedSession(self.controller_session, self._epoch_zk_version)
        self.registrar = Registrar(self.session, config.broker_id)
        #: Set once start() returned: a node whose start failed (its broker id still registered by its previous
        #: process's session, ZooKeeper away) skips controlled shutdown, as Kafka's KafkaServer.shutdown does.
        self.startup_complete = False
        self._broker_session_expired = False
        if self.controller_session is not self.session:
            # The controller re-registers the broker after an expiry of its own session (Kafka's
            # RegisterBrokerAndReelect) only when the two share one; a separate broker session is watched here.
            self.session.add_state_listener(self._on_broker_session)
        self.controller: Controller | None = None
        self.forwarder: ForwardingManager | None = None
        self.acl_cache: AclCache | None = None
        self.metrics_port: int | None = None
        self.cluster_id = ""
        self.cache: MetadataCache | None = None
        self.wire: WireRuntime | None = None
        self.replicas: ReplicaManager | None = None
        #: Advertised endpoints with the ports actually bound (a configured port 0 picks a free one).
        self.endpoints: tuple[EndPoint, ...] = config.advertised_endpoints
        self._stopped = threading.Event()

    def registration(self) -> BrokerRegistration:
        return BrokerRegistration(
            endpoints=self.endpoints,
            timestamp=int(time.time() * 1000),
            version=ibp.broker_znode_version(self.config.inter_broker_protocol_version),
            rack=self.config.broker_rack,
        )

    def _ensure_chroot(self) -> None:
        """Kafka creates a missing chroot at start (KafkaServer.createChrootIfNecessary)."""
        chroot = self.config.zookeeper_chroot
        if not chroot:
            return
        ensure_chroot(
            self.config.zookeeper_hosts, chroot, self.config.zookeeper_connection_timeout_ms / 1000, self.zk_tls
        )

    def start(self) -> None:
        timeout = self.config.zookeeper_connection_timeout_ms / 1000
        self._ensure_chroot()
        self.session.start(timeout=timeout)
        refuse_unfinished_copy(self.session)
        # Before this node writes anything or joins the election: a chroot where Apache Kafka brokers are
        # registered is not ours to join, nor is a broker id another live session holds.
        foreign = guard_chroot(self.session, self.config.broker_id, allow_foreign=self.config.unsafe_join_kafka_chroot)
        if foreign:
            log.warning(
                "%s=true: joining a chroot where brokers that are not bridgekeeper nodes are registered (ids %s); "
                "this node contends with them for /controller, and if elected they wait for requests it never sends",
                UNSAFE_JOIN_KAFKA_CHROOT,
                ", ".join(map(str, foreign)),
            )
        if self.controller_session is not self.session:
            self.controller_session.start(timeout=timeout)
        # Probe multiRead support now: an old server answers UNIMPLEMENTED by dropping the connection, which
        # must happen before this node can hold leadership, not in the middle of a failover.
        self.session.probe_multi_read(timeout)
        # Metadata parents are the controller's to create (its identity owns them under lockdown's ACLs).
        owner = self.controller_session if self.config.is_controller else self.session
        ensure_persistent_paths(owner)
        self.cluster_id = get_or_create_cluster_id(owner)
        self.cache = MetadataCache(self.session)
        self.cache.start()
        self._start_controller()
        self._start_wire()
        self.registrar.register(self.registration())
        if self.config.is_broker:
            self._await_own_registration()
            self.replicas = ReplicaManager(
                self.config.broker_id,
                self.cache,
                lambda: self.registrar.broker_epoch,
                self.config.inter_broker_listener_name,
                CatchUp(
                    self.config.replica_catchup_bytes_per_partition, self.config.replica_catchup_rate_bytes_per_sec
                ),
                throttles=self._read_throttles,
                sasl=self.config.inter_broker_sasl,
                tls=self.inter_tls,
                legacy_isr=None
                if ibp.uses_topic_ids(self.config.inter_broker_protocol_version)
                else LegacyIsrWriter(self.session, self.config.broker_id).expand,
                on_status=self.metrics.catch_up,
                on_counts=self.metrics.partition_counts,
            )
            self.replicas.start()
        if self.config.metrics_enabled:
            host, port = self.config.metrics_host, max(self.config.metrics_port, 0)
            try:
                self.metrics_port = self.metrics.serve(host, port)
            except OSError as exc:
                raise ValueError(f"cannot serve metrics on {host}:{port} (bridgekeeper.metrics.port): {exc}") from exc
        self.startup_complete = True
        log.info("node %d started in cluster %s", self.config.broker_id, self.cluster_id)

    def _start_controller(self) -> None:
        if self.config.is_controller:
            self.controller = Controller(
                self.controller_session,
                self.config.broker_id,
                self.config.inter_broker_protocol_version,
                delete_topic_enable=self.config.delete_topic_enable,
                on_new_session=self._reregister if self.controller_session is self.session else None,
                standby=self.cache.catch_up if self.cache is not None else None,
                # The image takes the controller's writes in directly only on one session: ZooKeeper orders a
                # write's watch events before its answer per connection, which the cache's rule relies on.
                write_observer=self.cache if self.controller_session is self.session else None,
            )
            self.controller.on_step = self.metrics.update
            self.controller.on_event = self.metrics.controller_event
            self.controller.on_reassignments_completed = self.metrics.reassignments_done
            self.controller.start()

    def _is_active_controller(self) -> bool:
        return self.controller is not None and self.controller.is_active

    def _write_session(self) -> ZkSession:
        """Admin writes carry the controller's identity while this node is the active controller, and its epoch
        fence (:mod:`controller.zk.fenced_session`): a write still under way when this node is deposed is
        refused rather than made by a controller that is no longer one. A request the dispatcher routed writes
        as what this node was then (every write of the request alike); any other asks now."""
        routed = routed_as_controller()
        active = self._is_active_controller() if routed is None else routed
        return self._fenced_session if active else self.session

    def _epoch_zk_version(self) -> int | None:
        """The ``/controller_epoch`` version of this node's election while it is the active controller."""
        active = self.controller.active if self.controller is not None else None
        return active.writer.epoch_zk_version if active is not None else None

    def _authz(self) -> Authz:
        if not self.config.acl_authorizer:
            return ALLOW_ALL
        self.acl_cache = AclCache(self.session)
        self.acl_cache.start()
        cache = self.acl_cache
        authorizer = AclAuthorizer(
            cache.snapshot,
            super_users=self.config.super_users,
            allow_everyone_if_no_acl_found=self.config.allow_everyone_if_no_acl_found,
        )
        return Authz(authorizer, version=lambda: cache.version)

    def _scram_credential(self, mechanism: str, user: str) -> ScramCredential | None:
        """SCRAM credentials live in the user's entity config, as Kafka stores them in ZooKeeper mode."""
        try:
            return read_credential(self.session, user, mechanism)
        except (ZnodeFormatError, ValueError) as exc:
            log.warning("ignoring SCRAM credential of user %r: %s", user, exc)
            return None

    def _start_wire(self) -> None:
        """Bind every listener before registering, so the registration carries the real ports."""
        assert self.cache is not None
        authz = self._authz()
        view = NodeView(
            broker_id=self.config.broker_id,
            cluster_id=self.cluster_id,
            cache=self.cache,
            controller=self.controller,  # a ControllerApi to the handlers: mypy checks Controller is one here
            default_partitions=self.config.num_partitions,
            default_replication_factor=self.config.default_replication_factor,
            supported=self.supported,
            authz=authz,
            write_session=self._write_session,
            controller_wait_s=self.config.request_timeout_ms / 1000,
        )
        apis = Apis(view)
        handlers = apis.handlers()
        handlers |= ConfigApis(view, self.session).handlers()
        handlers |= QuotaApis(view, self.session).handlers()
        handlers |= ScramApis(view, self.session).handlers()
        handlers |= AclApis(
            self.session, self._write_session, authorizer_configured=self.config.acl_authorizer
        ).handlers()
        sasl_apis = SaslApis(
            self.config.sasl_listeners,
            self._scram_credential,
            on_failure=self.metrics.sasl_failed,
            failure_close_delay_s=self.config.failed_authentication_delay_ms / 1000,
        )
        handlers |= sasl_apis.handlers()
        if self.forwarding_enabled and self.config.is_broker:
            sasl, tls = self.config.inter_broker_sasl, self.inter_tls
            client_id = f"broker-{self.config.broker_id}-forwarding"
            self.forwarder = ForwardingManager(
                self.config.broker_id,
                self.cache.snapshot,
                self.config.inter_broker_listener_name,
                lambda host, port, timeout: KafkaClient(host, port, client_id=client_id, timeout=timeout, sasl=sasl),
                timeout_ms=self.config.request_timeout_ms,
                metrics=self.metrics,
                max_in_flight=self.config.forwarding_max_in_flight,
                open_async=None
                if tls is None
                else lambda host, port: open_channel(host, port, client_id=client_id, tls=tls, sasl=sasl),
            )
        self.metrics.forwarding_enabled.labels(str(self.config.broker_id)).set(1 if self.forwarding_enabled else 0)
        self.metrics.protocol.labels(
            str(self.config.broker_id),
            self.config.inter_broker_protocol_version.version,
            self.config.forwarding_min_ibp.version,
        ).set(1)
        dispatcher = Dispatcher(
            handlers,
            self.supported,
            is_active_controller=self._is_active_controller,
            forwarder=self.forwarder,
            accept_envelopes=self.forwarding_enabled,
            privileged_listener=self.config.inter_broker_listener_name,
            authz=authz,
            metrics=self.metrics,
            on_client_software=self.metrics.client_software,
        )
        self.wire = WireRuntime(
            handlers, self.supported, max_frame=DEFAULT_MAX_FRAME, raw_handlers=apis.raw_handlers(),
            dispatch=dispatcher, on_open=self.metrics.connection_opened, on_close=self.metrics.connection_closed,
            on_auth_failure=self.metrics.sasl_failed, tls=self.config.tls_listeners,
            on_tls_failure=self.metrics.tls_failed,
        )  # fmt: skip
        bound = {e.listener: e for e in self.wire.start(self.config.listeners)}
        self.endpoints = tuple(
            EndPoint(e.listener, e.host, bound[e.listener].port, e.security_protocol)
            if e.port == 0 and e.listener in bound
            else e
            for e in self.config.advertised_endpoints
        )

    def _read_throttles(self, topics: set[str]) -> Throttles:
        """Replication throttles from the dynamic configs: broker rates (per broker, else the cluster
        default) and the topics' throttled-replica lists. Read only while something is catching up."""
        assert self.cache is not None
        brokers = sorted(self.cache.snapshot().brokers)
        configs = read_entities_leniently(
            self.session,
            [(BROKERS, DEFAULT_ENTITY), *((BROKERS, str(b)) for b in brokers), *((TOPICS, t) for t in sorted(topics))],
            timeout=10,
        )
        return Throttles.from_configs(
            configs[(BROKERS, DEFAULT_ENTITY)],
            {b: configs[(BROKERS, str(b))] for b in brokers},
            {t: configs[(TOPICS, t)] for t in sorted(topics)},
        )

    def _await_own_registration(self) -> None:
        """Until the image lists this broker, its Metadata answers leave it out, and a client that bootstrapped
        from it cannot address it (kafka-python raises UnknownBrokerIdError for a broker-level request): a
        broker is ready once it knows itself. The registration's watch event brings it within milliseconds; if
        ZooKeeper is too slow for that, start anyway and say so."""
        broker_id = self.config.broker_id
        assert self.cache is not None  # start() built it before registering
        try:
            self.cache.wait_for(lambda snapshot: broker_id in snapshot.brokers, timeout=OWN_REGISTRATION_WAIT_S)
        except TimeoutError:
            log.warning(
                "broker %d: not yet in this node's metadata %.0f s after registering; serving without it until the "
                "registration's watch event arrives",
                broker_id,
                OWN_REGISTRATION_WAIT_S,
            )

    def _reregister(self) -> None:
        """After a session expiry: a new registration, hence a new broker epoch (Kafka's
        RegisterBrokerAndReelect)."""
        self.registrar.register(self.registration())

    def _on_broker_session(self, state: KazooState) -> None:
        """The broker's own session (when the controller has another): once a new session replaces an expired
        one, register again. Runs on kazoo's thread, so the registration runs on a thread of its own."""
        if state == KazooState.LOST:
            self._broker_session_expired = True
        elif state == KazooState.CONNECTED and self._broker_session_expired:
            self._broker_session_expired = False
            if self.startup_complete and not self._stopped.is_set():
                threading.Thread(target=self._register_again, name="broker-reregister", daemon=True).start()

    def _register_again(self) -> None:
        """Register with the new session, retrying while ZooKeeper is unreachable or a race is lost; a further
        expiry ends this attempt (the next new session starts another), as does the node stopping."""

        def worth_retrying(exc: BaseException) -> bool:
            return isinstance(exc, REGISTRATION_RETRIABLE) and not isinstance(exc, SessionLost)

        retrying = Retrying(
            retry=retry_if_exception(worth_retrying),
            stop=stop_when_event_set(self._stopped) | stop_after_delay(REREGISTER_GIVE_UP_S),
            wait=wait_exponential(multiplier=0.1, max=2.0),
            reraise=True,
        )
        try:
            retrying(self._reregister)
        except Exception as exc:
            if not self._stopped.is_set():
                log.warning("broker %d: re-registration after a session expiry failed: %r", self.config.broker_id, exc)

    def controlled_shutdown(self) -> list[str]:
        """Kafka's controlled shutdown: ask the controller to move leadership off this broker (and out of
        ISRs) before it deregisters, retrying as ``controlled.shutdown.max.retries`` says. Returns the
        partitions it still leads (single-replica ones cannot move)."""
        if not (self.config.is_broker and self.config.controlled_shutdown_enable):
            return []
        if not self.startup_complete:
            log.info("broker %d did not complete its start: no controlled shutdown", self.config.broker_id)
            return []
        if self.cache is None:
            return []
        return ControlledShutdown(
            broker_id=self.config.broker_id,
            broker_epoch=lambda: self.registrar.broker_epoch,
            cache=self.cache,
            listener=self.config.inter_broker_listener_name,
            sasl=self.config.inter_broker_sasl,
            tls=self.inter_tls,
            max_retries=self.config.controlled_shutdown_max_retries,
            retry_backoff_ms=self.config.controlled_shutdown_retry_backoff_ms,
            local=self.controller.controlled_shutdown if self.controller is not None else None,
            local_active=self._is_active_controller,
        ).run()

    def stop(self) -> None:
        if self._stopped.is_set():
            return
        self._stopped.set()
        try:
            self.controlled_shutdown()
        except Exception:
            log.exception("%s controlled shutdown of broker %d failed", UNEXPECTED, self.config.broker_id)
        if self.replicas is not None:
            self.replicas.stop()
        if self.wire is not None:
            self.wire.stop()
        if self.forwarder is not None:
            self.forwarder.stop()
        if self.acl_cache is not None:
            self.acl_cache.stop()
        if self.controller is not None:
            self.controller.stop()
        if self.cache is not None:
            self.cache.stop()
        if self.controller_session is not self.session:
            self.controller_session.close()
        self.session.close()
        self.metrics.close()
        if self._zk_tls_dir is not None:
            self._zk_tls_dir.cleanup()

    def ready_line(self) -> str:
        metrics = f"http://{self.config.metrics_host}:{self.metrics_port}/metrics" if self.metrics_port else "-"
        endpoints = ",".join(e.connection_string for e in self.endpoints)
        return (
            f"NODE-READY broker={self.config.broker_id} endpoints={endpoints} metrics={metrics} "
            f"cluster={self.cluster_id}"
        )


def _acl_policy(config: NodeConfig) -> AclPolicy:
    """What ACL the znodes this node creates get. ``zookeeper.set.acl`` with one identity: Kafka's own
    (CREATOR_ALL + world READ). With a separate controller identity CREATOR_ALL cannot work (brokers and the
    controller create under each other's parents), so new znodes get lockdown's ACLs for their path, naming
    both identities: what ``bridgekeeper lockdown verify`` expects of them."""
    broker, controller = config.zookeeper_digest, config.zookeeper_controller_digest
    if not config.zookeeper_set_acl or broker is None or controller is None or controller == broker:
        return kafka_policy(config.zookeeper_set_acl)
    who = Identities(
        digest_identity(f"digest:{controller.auth[1]}", ZK_CONTROLLER_DIGEST),
        digest_identity(f"digest:{broker.auth[1]}", ZK_DIGEST),
    )
    # The markers' parent takes each broker's marker, as /brokers/ids takes its registration (lockdown leaves
    # /bridgekeeper alone: it is not Kafka's).
    markers = [(ALL, *who.controller), (CREATE | DELETE | READ, *who.brokers), (READ, *WORLD)]
    return lambda path: (
        markers
        if path == paths.NODE_MARKERS
        else desired_acl(path, who)
        if in_scope(path)
        else kafka_default_acl(path, True)
    )
