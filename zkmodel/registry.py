"""Decode any Kafka znode by its path, for tools that walk a foreign cluster's tree."""

import re
from collections.abc import Callable
from typing import Any

from zkmodel.admin import PartitionReassignmentZnode, PreferredReplicaElectionZnode
from zkmodel.brokers import BrokerRegistration
from zkmodel.cluster import ClusterIdZnode, FeatureZnode, MigrationZnode, ProducerIdBlock
from zkmodel.configs import ConfigChangeNotification, EntityConfig
from zkmodel.election import ControllerZnode, decode_controller_epoch
from zkmodel.kafka_acls import AclNode, decode_extended_acl_change, decode_literal_acl_change
from zkmodel.notifications import IsrChangeNotification, LogDirEventNotification
from zkmodel.topics import PartitionState, TopicAssignment

Decoder = Callable[[str, bytes | None], Any]

#: Znodes Kafka creates with null data and reads as "nothing yet" (makeSurePersistentPathExists at start-up;
#: ZkProducerIdManager allocates the first block when there is no data).
NULL_IS_EMPTY = frozenset({"/latest_producer_id_block"})

_SEQ = r"\d{10}"
_NAME = r"[^/]+"

_RULES: list[tuple[re.Pattern[str], Decoder]] = [
    (re.compile(r"^/controller$"), ControllerZnode.decode),
    (re.compile(r"^/controller_epoch$"), decode_controller_epoch),
    (re.compile(r"^/cluster/id$"), ClusterIdZnode.decode),
    (re.compile(r"^/feature$"), FeatureZnode.decode),
    (re.compile(r"^/migration$"), MigrationZnode.decode),
    (re.compile(r"^/latest_producer_id_block$"), ProducerIdBlock.decode),
    (re.compile(r"^/brokers/ids/\d+$"), BrokerRegistration.decode),
    (re.compile(rf"^/brokers/topics/{_NAME}$"), TopicAssignment.decode),
    (re.compile(rf"^/brokers/topics/{_NAME}/partitions/\d+/state$"), PartitionState.decode),
    (re.compile(r"^/admin/reassign_partitions$"), PartitionReassignmentZnode.decode),
    (re.compile(r"^/admin/preferred_replica_election$"), PreferredReplicaElectionZnode.decode),
    (re.compile(rf"^/config/changes/config_change_{_SEQ}$"), ConfigChangeNotification.decode),
    (re.compile(rf"^/config/(topics|clients|users|brokers|ips)/{_NAME}$"), EntityConfig.decode),
    (re.compile(rf"^/config/users/{_NAME}/clients/{_NAME}$"), EntityConfig.decode),
    (re.compile(rf"^/isr_change_notification/isr_change_{_SEQ}$"), IsrChangeNotification.decode),
    (re.compile(rf"^/log_dir_event_notification/log_dir_event_{_SEQ}$"), LogDirEventNotification.decode),
    (re.compile(rf"^/kafka-acl/{_NAME}/{_NAME}$"), AclNode.decode),
    (re.compile(rf"^/kafka-acl-extended/{_NAME}/{_NAME}/{_NAME}$"), AclNode.decode),
    (re.compile(rf"^/kafka-acl-changes/acl_changes_{_SEQ}$"), decode_literal_acl_change),
    (re.compile(rf"^/kafka-acl-extended-changes/acl_changes_{_SEQ}$"), decode_extended_acl_change),
]


def decoder_for(path: str) -> Decoder | None:
    """The decoder for a path, or None for structural nodes (parents, markers, ``/brokers/seqid``)."""
    for pattern, decoder in _RULES:
        if pattern.match(path):
            return decoder
    return None


def decode_znode(path: str, data: bytes | None) -> Any:
    """Decode by path; structural nodes decode to None. Raises only ZnodeFormatError on bad data."""
    decoder = decoder_for(path)
    return None if decoder is None else decoder(path, data)
