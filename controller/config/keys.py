"""The key registry: the name of every key a node reads, the defaults given a name, and the set of known keys
(any other key only earns a warning).

A key that exists in Kafka keeps Kafka's name and default (``KafkaConfig``, ``SocketServerConfigs`` at
3.9.0-rc3); keys of our own start with ``bridgekeeper.``. The ``ssl.*`` and ``zookeeper.ssl.*`` keys are
named and read in :mod:`controller.config.tls`.
"""

from __future__ import annotations

import re

from zkmodel.brokers import SECURITY_PROTOCOLS

BROKER_ID = "broker.id"
NODE_ID = "node.id"
ZK_CONNECT = "zookeeper.connect"
PROCESS_ROLES = "process.roles"
LISTENERS = "listeners"
ADVERTISED_LISTENERS = "advertised.listeners"
LISTENER_SECURITY_PROTOCOL_MAP = "listener.security.protocol.map"
INTER_BROKER_LISTENER_NAME = "inter.broker.listener.name"
INTER_BROKER_SECURITY_PROTOCOL = "security.inter.broker.protocol"
INTER_BROKER_PROTOCOL_VERSION = "inter.broker.protocol.version"
ZK_SESSION_TIMEOUT_MS = "zookeeper.session.timeout.ms"
ZK_CONNECTION_TIMEOUT_MS = "zookeeper.connection.timeout.ms"
ZK_MAX_IN_FLIGHT_REQUESTS = "zookeeper.max.in.flight.requests"
BROKER_RACK = "broker.rack"
DELETE_TOPIC_ENABLE = "delete.topic.enable"
AUTO_CREATE_TOPICS_ENABLE = "auto.create.topics.enable"
NUM_PARTITIONS = "num.partitions"
DEFAULT_REPLICATION_FACTOR = "default.replication.factor"
CONTROLLED_SHUTDOWN_ENABLE = "controlled.shutdown.enable"
CONTROLLED_SHUTDOWN_MAX_RETRIES = "controlled.shutdown.max.retries"
CONTROLLED_SHUTDOWN_RETRY_BACKOFF_MS = "controlled.shutdown.retry.backoff.ms"
REQUEST_TIMEOUT_MS = "request.timeout.ms"
SUPER_USERS = "super.users"
MIGRATION_ENABLE = "zookeeper.metadata.migration.enable"
METRICS_PORT = "bridgekeeper.metrics.port"
METRICS_HOST = "bridgekeeper.metrics.host"
#: Where the node writes server.log, controller.log and state-change.log (Kafka's kafka.logs.dir); none: stderr.
LOG_DIR = "bridgekeeper.log.dir"
LOG_MAX_BYTES = "bridgekeeper.log.max.bytes"
LOG_BACKUP_COUNT = "bridgekeeper.log.backup.count"
#: Size-based rotation, where Kafka's log4j.properties rolls hourly and never deletes: at most
#: (1 + backups) x 100 MiB per file, so a busy controller cannot fill the disk.
DEFAULT_LOG_MAX_BYTES = 100 * 1024 * 1024
DEFAULT_LOG_BACKUP_COUNT = 10
FORWARDING_MIN_IBP = "bridgekeeper.forwarding.min.ibp"
FORWARDING_MAX_IN_FLIGHT = "bridgekeeper.forwarding.max.in.flight"
ZK_RETRY_DEADLINE_MS = "bridgekeeper.zk.retry.deadline.ms"
REPLICA_CATCHUP_BYTES_PER_PARTITION = "bridgekeeper.replica.catchup.bytes.per.partition"
REPLICA_CATCHUP_RATE_BYTES_PER_SEC = "bridgekeeper.replica.catchup.rate.bytes.per.sec"
SASL_ENABLED_MECHANISMS = "sasl.enabled.mechanisms"
FAILED_AUTHENTICATION_DELAY_MS = "connection.failed.authentication.delay.ms"
SASL_MECHANISM_INTER_BROKER = "sasl.mechanism.inter.broker.protocol"
AUTHORIZER_CLASS_NAME = "authorizer.class.name"
ALLOW_EVERYONE_IF_NO_ACL_FOUND = "allow.everyone.if.no.acl.found"
ZK_DIGEST = "bridgekeeper.zookeeper.digest"
ZK_CONTROLLER_DIGEST = "bridgekeeper.zookeeper.controller.digest"
ZK_SET_ACL = "zookeeper.set.acl"
#: Lets a node start in a chroot where brokers that are not bridgekeeper nodes (Apache Kafka brokers) are
#: registered; default false, and named so that nobody sets it by accident (controller.store.chroot_guard).
UNSAFE_JOIN_KAFKA_CHROOT = "bridgekeeper.unsafe.join.chroot.with.kafka.brokers"
#: Forwarded requests in flight per broker by default, and the most one may configure (each is a connection to
#: the controller, and a request the controller serves at once). Kafka keeps one; with 50 concurrent clients
#: that gave 0.55-0.75x the direct path's throughput, 16 gave 0.88-1.00x (bench/README.md, forwarding_concurrency).
DEFAULT_FORWARDING_MAX_IN_FLIGHT = 16
MAX_FORWARDING_IN_FLIGHT = 64
#: The authorizer class names Kafka's ZooKeeper mode used; both mean our ACL authorizer.
ACL_AUTHORIZERS = ("kafka.security.authorizer.AclAuthorizer", "kafka.security.auth.SimpleAclAuthorizer")

KNOWN_KEYS: frozenset[str] = frozenset(
    {
        BROKER_ID,
        NODE_ID,
        ZK_CONNECT,
        PROCESS_ROLES,
        LISTENERS,
        ADVERTISED_LISTENERS,
        LISTENER_SECURITY_PROTOCOL_MAP,
        INTER_BROKER_LISTENER_NAME,
        INTER_BROKER_SECURITY_PROTOCOL,
        INTER_BROKER_PROTOCOL_VERSION,
        ZK_SESSION_TIMEOUT_MS,
        ZK_CONNECTION_TIMEOUT_MS,
        ZK_MAX_IN_FLIGHT_REQUESTS,
        BROKER_RACK,
        DELETE_TOPIC_ENABLE,
        AUTO_CREATE_TOPICS_ENABLE,
        NUM_PARTITIONS,
        DEFAULT_REPLICATION_FACTOR,
        CONTROLLED_SHUTDOWN_ENABLE,
        CONTROLLED_SHUTDOWN_MAX_RETRIES,
        CONTROLLED_SHUTDOWN_RETRY_BACKOFF_MS,
        REQUEST_TIMEOUT_MS,
        SUPER_USERS,
        MIGRATION_ENABLE,
        METRICS_PORT,
        METRICS_HOST,
        LOG_DIR,
        LOG_MAX_BYTES,
        LOG_BACKUP_COUNT,
        FORWARDING_MIN_IBP,
        FORWARDING_MAX_IN_FLIGHT,
        ZK_RETRY_DEADLINE_MS,
        REPLICA_CATCHUP_BYTES_PER_PARTITION,
        REPLICA_CATCHUP_RATE_BYTES_PER_SEC,
        SASL_ENABLED_MECHANISMS,
        FAILED_AUTHENTICATION_DELAY_MS,
        SASL_MECHANISM_INTER_BROKER,
        AUTHORIZER_CLASS_NAME,
        ALLOW_EVERYONE_IF_NO_ACL_FOUND,
        ZK_DIGEST,
        ZK_CONTROLLER_DIGEST,
        ZK_SET_ACL,
        UNSAFE_JOIN_KAFKA_CHROOT,
    }
)
"""Every key :func:`controller.config.node.load_config` reads; anything else only produces a warning."""

DEFAULT_LISTENERS = "PLAINTEXT://127.0.0.1:9092"
# SocketServerConfigs.LISTENER_SECURITY_PROTOCOL_MAP_DEFAULT lists a HashMap; the order carries no meaning.
DEFAULT_LISTENER_SECURITY_PROTOCOL_MAP = ",".join(f"{p}:{p}" for p in SECURITY_PROTOCOLS)
DEFAULT_PROCESS_ROLES = "broker,controller"
DEFAULT_ZK_PORT = 2181
#: The listener-prefixed keys we read: a listener's SASL mechanisms and its per-mechanism JAAS entries.
LISTENER_PREFIXED_KEY = re.compile(
    r"listener\.name\.[a-z0-9_.-]+\.(sasl\.enabled\.mechanisms|(plain|scram-sha-256|scram-sha-512)\.sasl\.jaas\.config)"
)
