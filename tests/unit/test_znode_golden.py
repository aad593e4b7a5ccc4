"""Golden bytes: every byte example in reference/kafka-zk-facts.md §1 and the zkmodel scenarios of §6.

Encoders must produce Kafka's bytes exactly (Scala 2.13 build); decoders must read Kafka's bytes, and
the same JSON in any key order.
"""

from __future__ import annotations

import orjson
import pytest

from zkmodel import paths
from zkmodel.admin import PartitionReassignmentZnode, PreferredReplicaElectionZnode, TopicPartition
from zkmodel.brokers import BrokerRegistration, EndPoint
from zkmodel.cluster import ClusterIdZnode, FeatureZnode, ProducerIdBlock
from zkmodel.configs import ConfigChangeNotification, EntityConfig
from zkmodel.election import ControllerZnode, decode_controller_epoch, encode_controller_epoch
from zkmodel.errors import ZnodeFormatError
from zkmodel.kafka_acls import (
    AclEntry,
    AclNode,
    AclOperation,
    PatternType,
    PermissionType,
    ResourcePattern,
    ResourceType,
    decode_extended_acl_change,
    decode_literal_acl_change,
    encode_extended_acl_change,
    encode_literal_acl_change,
)
from zkmodel.notifications import IsrChangeNotification, LogDirEventNotification
from zkmodel.registry import decode_znode
from zkmodel.topics import RECOVERING, PartitionState, TopicAssignment


def reordered(data: bytes) -> bytes:
    """The same JSON with every object's keys reversed, as another writer might order them."""

    def rev(v: object) -> object:
        if isinstance(v, dict):
            return {k: rev(v[k]) for k in reversed(list(v))}
        if isinstance(v, list):
            return [rev(x) for x in v]
        return v

    return orjson.dumps(rev(orjson.loads(data)))


def check(value: object, path: str, golden: bytes) -> None:
    """Encode equals Kafka's bytes; decoding Kafka's bytes (in any key order) gives the value back."""
    assert value.encode() == golden  # type: ignore[attr-defined]
    assert decode_znode(path, golden) == value
    assert decode_znode(path, reordered(golden)) == value


# -- /brokers/topics/<t> -------------------------------------------------------------------------


def test_topic_v3_with_topic_id() -> None:
    golden = (
        b'{"partitions":{"0":[1,0,2],"1":[0,2,1]},"topic_id":"W3mXDtj1RsWmsEhQrZjN5g",'
        b'"adding_replicas":{},"removing_replicas":{},"version":3}'
    )
    check(TopicAssignment({0: (1, 0, 2), 1: (0, 2, 1)}, topic_id="W3mXDtj1RsWmsEhQrZjN5g"), "/brokers/topics/t", golden)


def test_topic_v3_without_topic_id() -> None:
    golden = b'{"partitions":{"0":[1,0,2],"1":[0,2,1]},"adding_replicas":{},"removing_replicas":{},"version":3}'
    check(TopicAssignment({0: (1, 0, 2), 1: (0, 2, 1)}), "/brokers/topics/t", golden)


def test_topic_partition_key_order_is_scala_hashmap_order() -> None:
    eleven = TopicAssignment({p: (0,) for p in range(11)}).encode()
    assert list(orjson.loads(eleven)["partitions"]) == [str(p) for p in range(11)]
    twelve = TopicAssignment({p: (0,) for p in range(12)}).encode()
    assert list(orjson.loads(twelve)["partitions"]) == ["11", *(str(p) for p in range(11))]


def test_topic_with_reassignment_in_flight() -> None:
    value = TopicAssignment({0: (4, 5, 6, 1, 2, 3)}, {0: (4, 5, 6)}, {0: (1, 2, 3)})
    golden = (
        b'{"partitions":{"0":[4,5,6,1,2,3]},"adding_replicas":{"0":[4,5,6]},'
        b'"removing_replicas":{"0":[1,2,3]},"version":3}'
    )
    check(value, "/brokers/topics/t", golden)
    assert value.origin(0) == (1, 2, 3) and value.target(0) == (4, 5, 6) and value.is_reassigning(0)


def test_topic_v2_as_kafka_2_4_wrote_it() -> None:
    # 2.4-2.7 built an immutable Map4, so the top level keeps insertion order.
    golden = b'{"version":2,"partitions":{"0":[1,2]},"adding_replicas":{},"removing_replicas":{}}'
    check(TopicAssignment({0: (1, 2)}, version=2), "/brokers/topics/t", golden)


def test_topic_v1_ignores_reassignment_keys_and_topic_id() -> None:
    value = TopicAssignment.decode("/brokers/topics/t", b'{"version":1,"partitions":{"0":[1,2]}}')
    assert value == TopicAssignment({0: (1, 2)}, version=1)
    assert value.encode() == b'{"version":1,"partitions":{"0":[1,2]}}'


def test_scenario_6_assignment_with_adding_and_removing_round_trips() -> None:
    value = TopicAssignment({0: (1, 2, 3)}, {0: (1,)}, {0: (3,)})
    assert TopicAssignment.decode("/brokers/topics/t", value.encode()) == value


def test_missing_adding_and_removing_mean_empty() -> None:
    value = TopicAssignment.decode("/brokers/topics/t", b'{"version":2,"partitions":{"0":[1]}}')
    assert value.adding_replicas == {} and value.removing_replicas == {}


# -- partition state ---------------------------------------------------------------------------------


def test_partition_state() -> None:
    golden = b'{"controller_epoch":1,"leader":2,"version":1,"leader_epoch":0,"isr":[2,3,1]}'
    check(
        PartitionState(leader=2, leader_epoch=0, controller_epoch=1, isr=(2, 3, 1)),
        paths.partition_state("t", 0),
        golden,
    )


def test_partition_state_with_recovery_state() -> None:
    golden = b'{"controller_epoch":1,"leader":2,"version":1,"leader_recovery_state":1,"leader_epoch":0,"isr":[2]}'
    value = PartitionState(leader=2, leader_epoch=0, controller_epoch=1, isr=(2,), leader_recovery_state=RECOVERING)
    check(value, paths.partition_state("t", 0), golden)


# -- brokers -----------------------------------------------------------------------------------------


def test_broker_registration_v5() -> None:
    golden = (
        b'{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},'
        b'"endpoints":["PLAINTEXT://h:9092"],"jmx_port":-1,"port":9092,"host":"h","version":5,'
        b'"timestamp":"1781706151709"}'
    )
    value = BrokerRegistration((EndPoint("PLAINTEXT", "h", 9092, "PLAINTEXT"),), timestamp=1781706151709)
    check(value, paths.broker(0), golden)


def test_broker_v1_is_read_as_plaintext() -> None:
    value = BrokerRegistration.decode(
        "/brokers/ids/1", b'{"version":1,"host":"localhost","port":9092,"jmx_port":9999,"timestamp":"2233345666"}'
    )
    assert value.endpoints == (EndPoint("PLAINTEXT", "localhost", 9092, "PLAINTEXT"),)
    assert value.jmx_port == 9999 and value.timestamp == 2233345666


def test_broker_v4_without_protocol_map_uses_default_mapping_and_rack() -> None:
    data = (
        b'{"version":4,"host":"h","port":9092,"jmx_port":-1,"timestamp":"1",'
        b'"endpoints":["PLAINTEXT://h:9092","SASL_PLAINTEXT://h:9093"],"rack":"dc1"}'
    )
    value = BrokerRegistration.decode("/brokers/ids/1", data)
    assert [e.security_protocol for e in value.endpoints] == ["PLAINTEXT", "SASL_PLAINTEXT"]
    assert value.rack == "dc1"


def test_broker_without_plaintext_listener_writes_null_host() -> None:
    value = BrokerRegistration((EndPoint("CLIENT", "h", 9093, "SASL_PLAINTEXT"),), timestamp=5)
    encoded = orjson.loads(value.encode())
    assert encoded["host"] is None and encoded["port"] == -1
    assert BrokerRegistration.decode("/brokers/ids/2", value.encode()) == value


def test_broker_version_below_1_is_rejected() -> None:
    with pytest.raises(ZnodeFormatError, match=r"/brokers/ids/1.*version"):
        BrokerRegistration.decode("/brokers/ids/1", b'{"version":0,"host":"h","port":1,"jmx_port":-1}')


# -- controller ----------------------------------------------------------------------------------------


def test_controller_v1() -> None:
    check(
        ControllerZnode(broker_id=0, timestamp=1535943857541, version=1),
        "/controller",
        b'{"version":1,"brokerid":0,"timestamp":"1535943857541"}',
    )


def test_controller_v2() -> None:
    check(
        ControllerZnode(broker_id=0, timestamp=1781706151854),
        "/controller",
        b'{"version":2,"brokerid":0,"timestamp":"1781706151854","kraftControllerEpoch":-1}',
    )


def test_controller_epoch_is_decimal_text() -> None:
    assert encode_controller_epoch(1) == b"1"
    assert decode_controller_epoch("/controller_epoch", b"17") == 17
    for bad in (b"", b"-1", b"1.0", b" 1", b'"1"', b"\xff"):
        with pytest.raises(ZnodeFormatError, match="/controller_epoch"):
            decode_controller_epoch("/controller_epoch", bad)


# -- admin -----------------------------------------------------------------------------------------------


def test_reassign_partitions() -> None:
    check(
        PartitionReassignmentZnode(((TopicPartition("foo", 0), (1, 2)),)),
        paths.REASSIGN_PARTITIONS,
        b'{"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[1,2]}]}',
    )


def test_scenario_5_invalid_reassignment_json_is_an_error() -> None:
    with pytest.raises(ZnodeFormatError, match="/admin/reassign_partitions: invalid JSON"):
        decode_znode(paths.REASSIGN_PARTITIONS, b'{"version":1,"partitions":[{"topic":"foo"')


def test_preferred_replica_election() -> None:
    check(
        PreferredReplicaElectionZnode((TopicPartition("foo", 0), TopicPartition("bar", 1))),
        paths.PREFERRED_REPLICA_ELECTION,
        b'{"version":1,"partitions":[{"topic":"foo","partition":0},{"topic":"bar","partition":1}]}',
    )


# -- configs ----------------------------------------------------------------------------------------------


def test_topic_config_without_overrides() -> None:
    check(EntityConfig(), paths.entity_config("topics", "foo"), b'{"version":1,"config":{}}')


def test_config_values_in_java_properties_order() -> None:
    config = {"cleanup.policy": "compact", "min.insync.replicas": "2", "segment.bytes": "1024", "retention.ms": "1"}
    golden = (
        b'{"version":1,"config":{"cleanup.policy":"compact","min.insync.replicas":"2",'
        b'"segment.bytes":"1024","retention.ms":"1"}}'
    )
    check(EntityConfig(config), paths.entity_config("topics", "foo"), golden)


def test_scenario_5_config_change_notification() -> None:
    assert paths.config_change(0) == "/config/changes/config_change_0000000000"
    check(ConfigChangeNotification("topics/foo"), paths.config_change(7), b'{"version":2,"entity_path":"topics/foo"}')
    # Kafka's KafkaZkClientTest passes a full path and pins these bytes.
    assert ConfigChangeNotification("/config/topics/topic1").encode() == (
        b'{"version":2,"entity_path":"/config/topics/topic1"}'
    )


def test_config_change_version_1_is_still_read() -> None:
    value = ConfigChangeNotification.decode(
        paths.config_change(1), b'{"version":1,"entity_type":"clients","entity_name":"app"}'
    )
    assert value.entity_path == "clients/app"


# -- notifications ------------------------------------------------------------------------------------


def test_scenario_5_isr_change_notification() -> None:
    check(
        IsrChangeNotification((TopicPartition("topic-a", 0), TopicPartition("topic-b", 0))),
        paths.isr_change(0),
        b'{"version":1,"partitions":[{"topic":"topic-a","partition":0},{"topic":"topic-b","partition":0}]}',
    )


def test_scenario_5_log_dir_event_notification() -> None:
    check(LogDirEventNotification(broker=3), paths.log_dir_event(0), b'{"version":1,"broker":3,"event":1}')


# -- ACLs ---------------------------------------------------------------------------------------------------


def test_acl_node() -> None:
    value = AclNode((AclEntry("User:alice", PermissionType.ALLOW, "*", AclOperation.READ),))
    golden = b'{"acls":[{"principal":"User:alice","permissionType":"Allow","host":"*","operation":"Read"}],"version":1}'
    check(value, paths.acl(ResourceType.TOPIC, "foo"), golden)
    assert paths.acl(ResourceType.TOPIC, "foo") == "/kafka-acl/Topic/foo"
    assert paths.acl(ResourceType.TRANSACTIONAL_ID, "t", PatternType.PREFIXED) == (
        "/kafka-acl-extended/prefixed/TransactionalId/t"
    )


def test_acl_operation_names_are_pascal_case() -> None:
    entry = AclEntry("User:bob", PermissionType.DENY, "10.0.0.1", AclOperation.DESCRIBE_CONFIGS)
    assert entry.as_json()["operation"] == "DescribeConfigs" and entry.as_json()["permissionType"] == "Deny"


def test_literal_acl_change() -> None:
    resource = ResourcePattern(ResourceType.TOPIC, "foo")
    assert encode_literal_acl_change(resource) == b"TOPIC:foo"
    assert decode_literal_acl_change("/kafka-acl-changes/acl_changes_0000000000", b"topic:foo") == resource


def test_extended_acl_change() -> None:
    resource = ResourcePattern(ResourceType.TOPIC, "foo", PatternType.PREFIXED)
    golden = b'{"version":1,"resourceType":"TOPIC","name":"foo","patternType":"PREFIXED"}'
    assert encode_extended_acl_change(resource) == golden
    assert decode_extended_acl_change("/kafka-acl-extended-changes/acl_changes_0000000000", golden) == resource


# -- cluster-wide -------------------------------------------------------------------------------------------


def test_feature_v2_enabled() -> None:
    check(FeatureZnode(), paths.FEATURE, b'{"features":{},"version":2,"status":1}')


def test_feature_v1_has_min_and_max_levels() -> None:
    value = FeatureZnode(version=1, status=1, features={"metadata.version": 3})
    golden = b'{"features":{"metadata.version":{"max_version_level":3,"min_version_level":3}},"version":1,"status":1}'
    check(value, paths.FEATURE, golden)


def test_cluster_id() -> None:
    value = ClusterIdZnode("IOejp_IKSbWbySJc0sRrKw")
    check(value, paths.CLUSTER_ID, b'{"version":"1","id":"IOejp_IKSbWbySJc0sRrKw"}')
    assert value.is_uuid


def test_producer_id_block() -> None:
    value = ProducerIdBlock(broker=0, block_start=0, block_end=999)
    check(value, paths.LATEST_PRODUCER_ID_BLOCK, b'{"version":1,"broker":0,"block_start":"0","block_end":"999"}')
    assert value.next(2) == ProducerIdBlock(2, 1000, 1999)


def test_structural_nodes_have_no_payload_decoder() -> None:
    for path in ("/brokers/seqid", "/admin/delete_topics/foo", "/brokers/topics/t/partitions/0", "/brokers"):
        assert decode_znode(path, None) is None


def test_persistent_paths_match_kafka() -> None:
    assert paths.PERSISTENT_PATHS == (
        "/consumers",
        "/brokers/ids",
        "/brokers/topics",
        "/config/changes",
        "/admin/delete_topics",
        "/brokers/seqid",
        "/isr_change_notification",
        "/latest_producer_id_block",
        "/log_dir_event_notification",
        "/config/topics",
        "/config/clients",
        "/config/users",
        "/config/brokers",
        "/config/ips",
    )
