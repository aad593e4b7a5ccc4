"""The node's configuration: :class:`NodeConfig`, validated from a Kafka broker style properties file plus
command-line overrides (:func:`load_config`, :func:`config_from_properties`).

Where a key exists in Kafka, a node reads it with the same default and the same parsing as a Kafka 3.9 broker
in ZooKeeper mode (``KafkaConfig``, ``ConfigDef``, ``SocketServerConfigs``); the sibling modules hold the
parsing rules and name their sources.

Deliberate differences from Kafka, because a bridgekeeper node is not a data broker:

* ``broker.id`` is required and must be >= 0 (no ``broker.id.generation.enable``); ``node.id`` is accepted
  as its synonym as in ``KafkaConfig.populateSynonyms`` and must agree with it when both are set.
* ``process.roles`` names *our* roles (which parts of the node run) and defaults to ``broker,controller``;
  it does not switch on KRaft.
* ``auto.create.topics.enable`` defaults to ``false``: a Metadata request must never become a metadata write
  behind the controller's back, and there is no data to produce anyway. Setting it to ``true`` is allowed.
* ``inter.broker.protocol.version`` rejects versions Kafka 3.9 marks non-production (``4.0-IV0``...); a ZK
  broker would accept them, but nothing here implements them.
* Stricter than Kafka where Kafka would fail later or silently: ``default.replication.factor`` >= 1,
  ``controlled.shutdown.*`` >= 0, ``broker.rack=`` (empty) means no rack, and the listener and
  ``zookeeper.connect`` checks of :mod:`.listeners` and :mod:`.zookeeper`.
* Timing invariants (``zookeeper.session.timeout.ms`` >= 1000, retry deadline < session timeout, positive
  connection and request timeouts) are checked at load, Patroni style, instead of misbehaving at runtime.
* Unknown keys never fail; each one yields Kafka's pre-3.6 warning text in :attr:`NodeConfig.warnings`
  (3.6+ logs one aggregated INFO line, "These configurations '[...]' were supplied but are not used yet.").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from controller.config.errors import ConfigError
from controller.config.keys import (
    ACL_AUTHORIZERS,
    ALLOW_EVERYONE_IF_NO_ACL_FOUND,
    AUTHORIZER_CLASS_NAME,
    AUTO_CREATE_TOPICS_ENABLE,
    BROKER_ID,
    BROKER_RACK,
    CONTROLLED_SHUTDOWN_ENABLE,
    CONTROLLED_SHUTDOWN_MAX_RETRIES,
    CONTROLLED_SHUTDOWN_RETRY_BACKOFF_MS,
    DEFAULT_FORWARDING_MAX_IN_FLIGHT,
    DEFAULT_LOG_BACKUP_COUNT,
    DEFAULT_LOG_MAX_BYTES,
    DEFAULT_PROCESS_ROLES,
    DEFAULT_REPLICATION_FACTOR,
    DELETE_TOPIC_ENABLE,
    FAILED_AUTHENTICATION_DELAY_MS,
    FORWARDING_MAX_IN_FLIGHT,
    FORWARDING_MIN_IBP,
    INTER_BROKER_PROTOCOL_VERSION,
    KNOWN_KEYS,
    LISTENER_PREFIXED_KEY,
    LOG_BACKUP_COUNT,
    LOG_DIR,
    LOG_MAX_BYTES,
    MAX_FORWARDING_IN_FLIGHT,
    METRICS_HOST,
    METRICS_PORT,
    MIGRATION_ENABLE,
    NODE_ID,
    NUM_PARTITIONS,
    PROCESS_ROLES,
    REPLICA_CATCHUP_BYTES_PER_PARTITION,
    REPLICA_CATCHUP_RATE_BYTES_PER_SEC,
    REQUEST_TIMEOUT_MS,
    UNSAFE_JOIN_KAFKA_CHROOT,
    ZK_CONNECT,
    ZK_CONNECTION_TIMEOUT_MS,
    ZK_CONTROLLER_DIGEST,
    ZK_DIGEST,
    ZK_MAX_IN_FLIGHT_REQUESTS,
    ZK_RETRY_DEADLINE_MS,
    ZK_SESSION_TIMEOUT_MS,
    ZK_SET_ACL,
)
from controller.config.listeners import read_listeners
from controller.config.properties import parse_properties
from controller.config.security import read_digest, read_sasl, read_super_users, read_tls
from controller.config.values import CSV_SPLIT, Values
from controller.config.zookeeper import format_host_port, parse_zookeeper_connect
from controller.security.settings import ListenerSasl, SaslCredentials, ZkDigest
from controller.security.tls import TlsSettings
from zkmodel.brokers import EndPoint
from zkmodel.ibp import LATEST_PRODUCTION, MetadataVersion, zk_migration_supported

_ROLES = ("broker", "controller")


@dataclass(frozen=True)
class NodeConfig:
    """One node's validated configuration. Build it with :func:`load_config` or :func:`config_from_properties`.

    Listener endpoints are as configured: an empty host (wildcard) or port 0 (ephemeral) is resolved by the
    node when it binds and registers, as Kafka does.
    """

    broker_id: int
    zookeeper_connect: str
    zookeeper_servers: tuple[tuple[str, int], ...]
    zookeeper_chroot: str | None
    process_roles: frozenset[str]
    listeners: tuple[EndPoint, ...]
    advertised_listeners: tuple[EndPoint, ...]
    listener_security_protocol_map: Mapping[str, str] = field(hash=False)
    inter_broker_listener_name: str
    inter_broker_protocol_version: MetadataVersion
    zookeeper_session_timeout_ms: int
    zookeeper_connection_timeout_ms: int
    zookeeper_max_in_flight_requests: int
    broker_rack: str | None
    delete_topic_enable: bool
    auto_create_topics_enable: bool
    num_partitions: int
    default_replication_factor: int
    controlled_shutdown_enable: bool
    controlled_shutdown_max_retries: int
    controlled_shutdown_retry_backoff_ms: int
    request_timeout_ms: int
    super_users: tuple[str, ...]
    zookeeper_metadata_migration_enable: bool
    metrics_port: int
    metrics_host: str
    forwarding_min_ibp: MetadataVersion
    #: How many forwarded requests a broker keeps in flight to the controller at once, each on a connection of
    #: its own (Kafka's ForwardingManager: 1). Order per client connection holds at any value.
    forwarding_max_in_flight: int
    zk_retry_deadline_ms: int
    replica_catchup_bytes_per_partition: int
    replica_catchup_rate_bytes_per_sec: int
    raw: Mapping[str, str] = field(hash=False, repr=False)
    warnings: tuple[str, ...] = field(repr=False)
    #: SASL server settings of each SASL_PLAINTEXT listener, by listener name.
    sasl_listeners: Mapping[str, ListenerSasl] = field(hash=False, default_factory=dict)
    #: Credentials for the inter-broker listener when it is a SASL listener.
    inter_broker_sasl: SaslCredentials | None = None
    #: TLS settings of each SSL and SASL_SSL listener, by listener name.
    tls_listeners: Mapping[str, TlsSettings] = field(hash=False, default_factory=dict)
    #: What this node connects to other nodes with when the inter-broker listener is SSL or SASL_SSL.
    inter_broker_tls: TlsSettings | None = None
    #: TLS to ZooKeeper (``zookeeper.ssl.client.enable``), None for plaintext.
    zookeeper_tls: TlsSettings | None = None
    acl_authorizer: bool = False
    allow_everyone_if_no_acl_found: bool = False
    zookeeper_digest: ZkDigest | None = None
    zookeeper_controller_digest: ZkDigest | None = None
    #: Kafka's ``zookeeper.set.acl``: znodes this node creates get CREATOR_ALL (+ world READ) ACLs.
    zookeeper_set_acl: bool = False
    #: Kafka delays closing a connection whose authentication failed, to slow down password guessing.
    failed_authentication_delay_ms: int = 100
    #: ``bridgekeeper.unsafe.join.chroot.with.kafka.brokers``: start even where foreign brokers are registered.
    unsafe_join_kafka_chroot: bool = False
    #: ``bridgekeeper.log.dir``: the directory of the node's log files, None for stderr only.
    log_dir: str | None = None
    #: A log file rolls over when it would grow past this many bytes (0: never).
    log_max_bytes: int = DEFAULT_LOG_MAX_BYTES
    #: How many rolled-over files of each log are kept (``server.log.1`` ...); 0 truncates instead.
    log_backup_count: int = DEFAULT_LOG_BACKUP_COUNT

    @property
    def zookeeper_hosts(self) -> str:
        """The server list without chroot, ``host:port,...`` (IPv6 bracketed): what kazoo's ``hosts`` takes."""
        return ",".join(format_host_port(h, p) for h, p in self.zookeeper_servers)

    @property
    def is_broker(self) -> bool:
        return "broker" in self.process_roles

    @property
    def is_controller(self) -> bool:
        return "controller" in self.process_roles

    @property
    def metrics_enabled(self) -> bool:
        return self.metrics_port != -1

    @property
    def advertised_endpoints(self) -> tuple[EndPoint, ...]:
        """What this node registers in ``/brokers/ids/<id>``."""
        return self.advertised_listeners

    @property
    def inter_broker_endpoint(self) -> EndPoint:
        """The advertised endpoint other nodes use to reach this one."""
        for ep in self.advertised_listeners:
            if ep.listener == self.inter_broker_listener_name:
                return ep
        raise AssertionError("validated at load: the inter-broker listener is advertised")

    @property
    def inter_broker_security_protocol(self) -> str:
        return self.listener_security_protocol_map[self.inter_broker_listener_name]

    def listener(self, name: str) -> EndPoint | None:
        """The bind endpoint of listener ``name`` (case-insensitive, like Kafka's normalised names)."""
        wanted = name.upper()
        return next((ep for ep in self.listeners if ep.listener == wanted), None)

    def advertised_listener(self, name: str) -> EndPoint | None:
        wanted = name.upper()
        return next((ep for ep in self.advertised_listeners if ep.listener == wanted), None)


def _broker_id(values: Values) -> int:
    broker_id = values.integer(BROKER_ID, -1) if values.given(BROKER_ID) else None
    node_id = values.integer(NODE_ID, -1) if values.given(NODE_ID) else None
    if broker_id is not None and node_id is not None and broker_id != node_id:
        raise ConfigError.invalid(
            NODE_ID, node_id, f"You must set `{NODE_ID}` to the same value as `{BROKER_ID}` ({broker_id})"
        )
    chosen = broker_id if broker_id is not None else node_id
    if chosen is None:
        raise ConfigError.missing(BROKER_ID)
    key = BROKER_ID if broker_id is not None else NODE_ID
    if chosen < 0:
        raise ConfigError.invalid(key, chosen, "Value must be at least 0 (bridgekeeper does not generate broker ids)")
    return chosen


def _process_roles(values: Values) -> frozenset[str]:
    text = values.string(PROCESS_ROLES, DEFAULT_PROCESS_ROLES) or ""
    roles = CSV_SPLIT.split(text) if text else []
    for role in roles:
        if role not in _ROLES:
            raise ConfigError.invalid(PROCESS_ROLES, role, f"String must be one of: {', '.join(_ROLES)}")
    if not roles:
        raise ConfigError.invalid(PROCESS_ROLES, text, f"at least one role is required ({', '.join(_ROLES)})")
    if len(set(roles)) != len(roles):
        raise ConfigError.invalid(PROCESS_ROLES, text, f"Duplicate role names found: {roles}")
    return frozenset(roles)


def config_from_properties(raw: Mapping[str, str], *, warnings: tuple[str, ...] = ()) -> NodeConfig:
    """Validate a merged key/value map into a :class:`NodeConfig` (``warnings`` are carried in front)."""
    values = Values(raw)
    broker_id = _broker_id(values)
    zk_connect = values.required_string(ZK_CONNECT)
    zk_servers, zk_chroot = parse_zookeeper_connect(zk_connect)
    roles = _process_roles(values)
    protocol_map, listeners, advertised, inter = read_listeners(values)

    ibp = values.ibp(INTER_BROKER_PROTOCOL_VERSION, LATEST_PRODUCTION.version)
    if not ibp.is_production:
        raise ConfigError.invalid(
            INTER_BROKER_PROTOCOL_VERSION,
            ibp.version,
            f"{ibp.version} is not a production-ready version in Kafka 3.9 (unstable); "
            f"the newest production version is {LATEST_PRODUCTION.version}",
        )

    session_ms = values.integer(ZK_SESSION_TIMEOUT_MS, 18000)
    if session_ms < 1000:
        raise ConfigError.invalid(
            ZK_SESSION_TIMEOUT_MS, session_ms, "Value must be at least 1000 (a ZooKeeper session needs time to live)"
        )
    connection_ms = values.integer(ZK_CONNECTION_TIMEOUT_MS, session_ms)
    if connection_ms <= 0:
        raise ConfigError.invalid(ZK_CONNECTION_TIMEOUT_MS, connection_ms, "Value must be at least 1")
    request_timeout_ms = values.integer(REQUEST_TIMEOUT_MS, 30000)
    if request_timeout_ms <= 0:
        raise ConfigError.invalid(REQUEST_TIMEOUT_MS, request_timeout_ms, "Value must be at least 1")
    deadline_ms = values.integer(ZK_RETRY_DEADLINE_MS, session_ms // 3, long=True, at_least=1)
    if deadline_ms >= session_ms:
        raise ConfigError.invalid(
            ZK_RETRY_DEADLINE_MS,
            deadline_ms,
            f"{ZK_RETRY_DEADLINE_MS} ({deadline_ms}) must be less than {ZK_SESSION_TIMEOUT_MS} ({session_ms}), "
            "or a writer could keep retrying after its own ZooKeeper session has expired",
        )

    migration = values.boolean(MIGRATION_ENABLE, False)
    if migration and not zk_migration_supported(ibp):
        raise ConfigError.invalid(
            MIGRATION_ENABLE,
            "true",
            f"Cannot enable ZooKeeper migration without setting '{INTER_BROKER_PROTOCOL_VERSION}' to 3.4 or higher "
            f"({INTER_BROKER_PROTOCOL_VERSION}={ibp.version})",
        )

    forwarding_min_ibp = values.ibp(FORWARDING_MIN_IBP, "3.4-IV0")
    sasl_listeners, inter_sasl = read_sasl(values, listeners, protocol_map, inter)
    tls_listeners, inter_tls, zk_tls = read_tls(values, listeners, protocol_map, inter)
    authorizer = values.string(AUTHORIZER_CLASS_NAME, "") or ""
    if authorizer and authorizer not in ACL_AUTHORIZERS:
        raise ConfigError.invalid(
            AUTHORIZER_CLASS_NAME,
            authorizer,
            f"bridgekeeper implements the ZooKeeper ACL authorizer only ({' or '.join(ACL_AUTHORIZERS)})",
        )
    zk_digest = read_digest(values, ZK_DIGEST)
    zk_controller_digest = read_digest(values, ZK_CONTROLLER_DIGEST) or zk_digest
    zk_set_acl = values.boolean(ZK_SET_ACL, False)
    if zk_set_acl and zk_digest is None:
        # KafkaZkClient.createZkClient refuses secure ACLs without an identity to own them (SASL or mTLS there).
        raise ConfigError(
            f"{ZK_SET_ACL} is true, but no ZooKeeper identity is configured: set {ZK_DIGEST} (user:password), "
            f"or the znodes created would be owned by nobody",
            ZK_SET_ACL,
        )
    metrics_host = values.string(METRICS_HOST, "127.0.0.1") or ""
    if not metrics_host:
        raise ConfigError.invalid(METRICS_HOST, "", "must name an address to bind (0.0.0.0 for all interfaces)")

    warning_list = list(warnings)
    warning_list.extend(
        f"The configuration '{key}' was supplied but isn't a known config."
        for key in raw
        if key not in KNOWN_KEYS and not LISTENER_PREFIXED_KEY.fullmatch(key)
    )
    return NodeConfig(
        broker_id=broker_id,
        zookeeper_connect=zk_connect,
        zookeeper_servers=zk_servers,
        zookeeper_chroot=zk_chroot,
        process_roles=roles,
        listeners=listeners,
        advertised_listeners=advertised,
        listener_security_protocol_map=MappingProxyType(protocol_map),
        inter_broker_listener_name=inter,
        inter_broker_protocol_version=ibp,
        zookeeper_session_timeout_ms=session_ms,
        zookeeper_connection_timeout_ms=connection_ms,
        zookeeper_max_in_flight_requests=values.integer(ZK_MAX_IN_FLIGHT_REQUESTS, 10, at_least=1),
        broker_rack=values.string(BROKER_RACK, None) or None,
        delete_topic_enable=values.boolean(DELETE_TOPIC_ENABLE, True),
        auto_create_topics_enable=values.boolean(AUTO_CREATE_TOPICS_ENABLE, False),
        num_partitions=values.integer(NUM_PARTITIONS, 1, at_least=1),
        default_replication_factor=values.integer(DEFAULT_REPLICATION_FACTOR, 1, at_least=1),
        controlled_shutdown_enable=values.boolean(CONTROLLED_SHUTDOWN_ENABLE, True),
        controlled_shutdown_max_retries=values.integer(CONTROLLED_SHUTDOWN_MAX_RETRIES, 3, at_least=0),
        controlled_shutdown_retry_backoff_ms=values.integer(
            CONTROLLED_SHUTDOWN_RETRY_BACKOFF_MS, 5000, long=True, at_least=0
        ),
        request_timeout_ms=request_timeout_ms,
        super_users=read_super_users(values),
        zookeeper_metadata_migration_enable=migration,
        metrics_port=values.integer(METRICS_PORT, 0, at_least=-1, at_most=65535),
        metrics_host=metrics_host,
        forwarding_min_ibp=forwarding_min_ibp,
        forwarding_max_in_flight=values.integer(
            FORWARDING_MAX_IN_FLIGHT, DEFAULT_FORWARDING_MAX_IN_FLIGHT, at_least=1, at_most=MAX_FORWARDING_IN_FLIGHT
        ),
        zk_retry_deadline_ms=deadline_ms,
        replica_catchup_bytes_per_partition=values.integer(
            REPLICA_CATCHUP_BYTES_PER_PARTITION, 10 * 1024 * 1024, long=True, at_least=0
        ),
        replica_catchup_rate_bytes_per_sec=values.integer(
            REPLICA_CATCHUP_RATE_BYTES_PER_SEC, 100 * 1024 * 1024, long=True, at_least=1
        ),
        raw=MappingProxyType(dict(raw)),
        warnings=tuple(warning_list),
        sasl_listeners=MappingProxyType(sasl_listeners),
        inter_broker_sasl=inter_sasl,
        tls_listeners=MappingProxyType(tls_listeners),
        inter_broker_tls=inter_tls,
        zookeeper_tls=zk_tls,
        acl_authorizer=bool(authorizer),
        allow_everyone_if_no_acl_found=values.boolean(ALLOW_EVERYONE_IF_NO_ACL_FOUND, False),
        zookeeper_digest=zk_digest,
        zookeeper_controller_digest=zk_controller_digest,
        zookeeper_set_acl=zk_set_acl,
        failed_authentication_delay_ms=values.integer(FAILED_AUTHENTICATION_DELAY_MS, 100, at_least=0),
        unsafe_join_kafka_chroot=values.boolean(UNSAFE_JOIN_KAFKA_CHROOT, False),
        log_dir=values.string(LOG_DIR, None) or None,
        log_max_bytes=values.integer(LOG_MAX_BYTES, DEFAULT_LOG_MAX_BYTES, long=True, at_least=0),
        log_backup_count=values.integer(LOG_BACKUP_COUNT, DEFAULT_LOG_BACKUP_COUNT, at_least=0),
    )


_NO_OVERRIDES: Mapping[str, str] = MappingProxyType({})


def load_config(path: str | None, overrides: Mapping[str, str] = _NO_OVERRIDES) -> NodeConfig:
    """Read ``path`` (a Kafka-style properties file; None = none) and apply ``overrides`` on top.

    The file is decoded as ISO-8859-1, exactly as Kafka's ``Utils.loadProps`` reads it; a non-ASCII byte
    earns a warning because Kafka would read a UTF-8 file the same (mangled) way.
    """
    merged: dict[str, str] = {}
    warnings: list[str] = []
    if path is not None:
        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            raise ConfigError(f"Cannot read config file {path}: {exc.strerror or exc}") from exc
        if any(b > 0x7F for b in data):
            warnings.append(
                f"{path} contains non-ASCII bytes; like Kafka, they are read as ISO-8859-1 "
                "(write other characters as \\uXXXX escapes)"
            )
        merged.update(parse_properties(data.decode("iso-8859-1"), source=path))
    merged.update(overrides)
    return config_from_properties(merged, warnings=tuple(warnings))


def parse_overrides(values: Sequence[str]) -> dict[str, str]:
    """``key=value`` overrides from the command line (``node --override``, ``up --set``), later ones winning."""
    out = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--set expects key=value, got {item!r}")
        out[key.strip()] = value
    return out
