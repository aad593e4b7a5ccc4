"""librdkafka (confluent-kafka's AdminClient) against the stack: metadata and topic administration."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic  # type: ignore[attr-defined]

from testing.stack import controller_id
from tests.e2e.conftest import RunningStack
from tests.integration.cluster import wait_for

pytestmark = pytest.mark.e2e


def admin(stack: RunningStack) -> AdminClient:
    return AdminClient({"bootstrap.servers": stack.bootstrap, "socket.timeout.ms": 10000})


def error_of(future) -> int:  # type: ignore[no-untyped-def]
    with pytest.raises(KafkaException) as info:
        future.result(timeout=30)
    return int(info.value.args[0].code())


def test_metadata_lists_brokers_and_controller(stack: RunningStack) -> None:
    # A broker's registration reaches the other nodes' metadata caches through a ZooKeeper watch, a few
    # milliseconds after that broker said it was ready (as Kafka's UpdateMetadata does): wait for it.
    client = admin(stack)
    wait_for(lambda: len(client.list_topics(timeout=30).brokers) == 3, 30, "every broker in the metadata")
    md = client.list_topics(timeout=30)
    assert sorted(md.brokers) == [1, 2, 3]
    assert sorted(f"{b.host}:{b.port}" for b in md.brokers.values()) == sorted(stack.brokers)
    assert md.controller_id == controller_id(stack.zk)
    assert md.cluster_id


def test_create_describe_grow_delete(stack: RunningStack) -> None:
    a = admin(stack)
    result = a.create_topics([NewTopic("ck-orders", 6, 3, config={"cleanup.policy": "compact"})])
    result["ck-orders"].result(timeout=30)
    topic = a.list_topics(topic="ck-orders", timeout=30).topics["ck-orders"]
    assert topic.error is None and sorted(topic.partitions) == list(range(6))
    for p in topic.partitions.values():
        assert len(p.replicas) == 3 and p.leader == p.replicas[0] and sorted(p.isrs) == sorted(p.replicas)

    assert error_of(a.create_topics([NewTopic("ck-orders", 1, 1)])["ck-orders"]) == KafkaError.TOPIC_ALREADY_EXISTS
    assert error_of(a.create_topics([NewTopic("bad name", 1, 1)])["bad name"]) == KafkaError.TOPIC_EXCEPTION
    assert error_of(a.create_topics([NewTopic("ck-x", 1, 4)])["ck-x"]) == KafkaError.INVALID_REPLICATION_FACTOR
    assert error_of(a.create_topics([NewTopic("ck-y", 0, 1)])["ck-y"]) == KafkaError.INVALID_PARTITIONS
    bad_config = a.create_topics([NewTopic("ck-z", 1, 1, config={"retention.ms": "soon"})])["ck-z"]
    assert error_of(bad_config) == KafkaError.INVALID_CONFIG
    unknown_config = a.create_topics([NewTopic("ck-w", 1, 1, config={"no.such.config": "1"})])["ck-w"]
    assert error_of(unknown_config) == KafkaError.INVALID_CONFIG

    a.create_partitions([NewPartitions("ck-orders", 8)])["ck-orders"].result(timeout=30)
    assert len(a.list_topics(topic="ck-orders", timeout=30).topics["ck-orders"].partitions) == 8
    assert error_of(a.create_partitions([NewPartitions("ck-orders", 4)])["ck-orders"]) == KafkaError.INVALID_PARTITIONS

    a.delete_topics(["ck-orders"], operation_timeout=30)["ck-orders"].result(timeout=30)
    assert "ck-orders" not in a.list_topics(timeout=30).topics
    assert error_of(a.delete_topics(["ck-nope"])["ck-nope"]) == KafkaError.UNKNOWN_TOPIC_OR_PART


def test_validate_only_creates_nothing(stack: RunningStack) -> None:
    a = admin(stack)
    a.create_topics([NewTopic("ck-dry", 3, 1)], validate_only=True)["ck-dry"].result(timeout=30)
    assert "ck-dry" not in a.list_topics(timeout=30).topics
