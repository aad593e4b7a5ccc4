"""Every znode path Kafka's ZooKeeper mode uses, built in one place (``ZkData`` in Kafka)."""

from zkmodel.configs import entity_path
from zkmodel.kafka_acls import PatternType, ResourceType

CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
CLUSTER = "/cluster"
CLUSTER_ID = "/cluster/id"
FEATURE = "/feature"
MIGRATION = "/migration"
BROKERS = "/brokers"
BROKER_IDS = "/brokers/ids"
BROKER_TOPICS = "/brokers/topics"
BROKER_SEQID = "/brokers/seqid"
ADMIN = "/admin"
DELETE_TOPICS = "/admin/delete_topics"
REASSIGN_PARTITIONS = "/admin/reassign_partitions"
PREFERRED_REPLICA_ELECTION = "/admin/preferred_replica_election"
CONFIG = "/config"
CONFIG_CHANGES = "/config/changes"
CONFIG_CHANGE_PREFIX = "config_change_"
ISR_CHANGE_NOTIFICATION = "/isr_change_notification"
ISR_CHANGE_PREFIX = "isr_change_"
LOG_DIR_EVENT_NOTIFICATION = "/log_dir_event_notification"
LOG_DIR_EVENT_PREFIX = "log_dir_event_"
LATEST_PRODUCER_ID_BLOCK = "/latest_producer_id_block"
CONSUMERS = "/consumers"
DELEGATION_TOKEN = "/delegation_token"
ACL_LITERAL = "/kafka-acl"
ACL_LITERAL_CHANGES = "/kafka-acl-changes"
ACL_EXTENDED = "/kafka-acl-extended"
ACL_EXTENDED_CHANGES = "/kafka-acl-extended-changes"
ACL_CHANGE_PREFIX = "acl_changes_"
#: Present while ``snapshot restore`` copies a tree into a chroot, removed when the copy is whole: a node
#: refuses to start on a chroot holding it, so a copy that stopped halfway is never served as a cluster.
RESTORE_IN_PROGRESS = "/bridgekeeper_restore_in_progress"
#: bridgekeeper's mark on its own nodes, beside the registrations Kafka's tools read (whose bytes stay Kafka's):
#: ``/bridgekeeper/nodes/<id>``, an ephemeral created in the same multi as ``/brokers/ids/<id>`` (so it shares
#: that registration's session, czxid and lifetime). A registration without its marker is not a bridgekeeper
#: node: an Apache Kafka broker, which a node refuses to join (controller.store.chroot_guard).
BRIDGEKEEPER = "/bridgekeeper"
NODE_MARKERS = "/bridgekeeper/nodes"
#: What ``snapshot restore`` refuses to write over: a chroot holding any of these already holds a cluster.
KAFKA_METADATA_ROOTS = (BROKERS, CONTROLLER, CONFIG, ADMIN)

#: Kafka's secure roots (ZkData.SecureRootPaths + ZkAclStore.securePaths): lockdown covers them with their
#: subtrees, and a node's controller identity owns them.
SECURE_ROOTS = (
    ADMIN,
    BROKERS,
    CLUSTER,
    CONFIG,
    CONTROLLER,
    CONTROLLER_EPOCH,
    ISR_CHANGE_NOTIFICATION,
    LATEST_PRODUCER_ID_BLOCK,
    LOG_DIR_EVENT_NOTIFICATION,
    DELEGATION_TOKEN,
    ACL_LITERAL,
    ACL_LITERAL_CHANGES,
    ACL_EXTENDED,
    ACL_EXTENDED_CHANGES,
    MIGRATION,
    FEATURE,
)
#: ZkData.SensitiveRootPaths: where credentials live (SCRAM users, broker configs with passwords, delegation
#: tokens); Kafka's default ACLs give these subtrees no world read, and a snapshot redacts what lies below them.
SENSITIVE_ROOTS = ("/config/users", "/config/brokers", "/delegation_token/tokens")
#: Every root of Kafka's ZooKeeper layout, which a snapshot exports: the secure roots and ``/consumers`` (the old
#: consumers' offsets, world-writable in Kafka and left alone by ZkSecurityMigrator, so not a secure root).
KAFKA_ROOTS = (*SECURE_ROOTS, CONSUMERS)

#: ZkData.PersistentZkPaths: created (empty) by every broker at start.
PERSISTENT_PATHS = (
    CONSUMERS,
    BROKER_IDS,
    BROKER_TOPICS,
    CONFIG_CHANGES,
    DELETE_TOPICS,
    BROKER_SEQID,
    ISR_CHANGE_NOTIFICATION,
    LATEST_PRODUCER_ID_BLOCK,
    LOG_DIR_EVENT_NOTIFICATION,
    *(f"{CONFIG}/{t}" for t in ("topics", "clients", "users", "brokers", "ips")),
)


def broker(broker_id: int) -> str:
    return f"{BROKER_IDS}/{broker_id}"


def node_marker(broker_id: int) -> str:
    return f"{NODE_MARKERS}/{broker_id}"


def topic(name: str) -> str:
    return f"{BROKER_TOPICS}/{name}"


def topic_partitions(name: str) -> str:
    return f"{BROKER_TOPICS}/{name}/partitions"


def partition(name: str, partition_id: int) -> str:
    return f"{BROKER_TOPICS}/{name}/partitions/{partition_id}"


def partition_state(name: str, partition_id: int) -> str:
    return f"{BROKER_TOPICS}/{name}/partitions/{partition_id}/state"


def delete_topic_marker(name: str) -> str:
    return f"{DELETE_TOPICS}/{name}"


def entity_config(entity_type: str, name: str) -> str:
    return f"{CONFIG}/{entity_path(entity_type, name)}"


def config_change(sequence: int) -> str:
    return f"{CONFIG_CHANGES}/{CONFIG_CHANGE_PREFIX}{sequence:010d}"


def isr_change(sequence: int) -> str:
    return f"{ISR_CHANGE_NOTIFICATION}/{ISR_CHANGE_PREFIX}{sequence:010d}"


def log_dir_event(sequence: int) -> str:
    return f"{LOG_DIR_EVENT_NOTIFICATION}/{LOG_DIR_EVENT_PREFIX}{sequence:010d}"


def acl_store(pattern_type: PatternType) -> str:
    if pattern_type is PatternType.LITERAL:
        return ACL_LITERAL
    return f"{ACL_EXTENDED}/{pattern_type.name.lower()}"


def acl_changes(pattern_type: PatternType) -> str:
    return ACL_LITERAL_CHANGES if pattern_type is PatternType.LITERAL else ACL_EXTENDED_CHANGES


def acl(resource_type: ResourceType, name: str, pattern_type: PatternType = PatternType.LITERAL) -> str:
    return f"{acl_store(pattern_type)}/{resource_type.pascal}/{name}"


def acl_change(pattern_type: PatternType, sequence: int) -> str:
    return f"{acl_changes(pattern_type)}/{ACL_CHANGE_PREFIX}{sequence:010d}"
