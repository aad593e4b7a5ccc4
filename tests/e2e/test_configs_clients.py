"""Topic and broker configs through real clients (confluent-kafka, kafka-python).

Needs ConfigApis registered on the stack's nodes (APIs 32, 33, 44)."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)
from kafka.admin import ConfigResource as KpConfigResource
from kafka.admin import ConfigResourceType, KafkaAdminClient

from tests.e2e.conftest import RunningStack

pytestmark = pytest.mark.e2e


def admin(stack: RunningStack) -> AdminClient:
    return AdminClient({"bootstrap.servers": stack.bootstrap, "socket.timeout.ms": 10000})


def topic_configs(a: AdminClient, name: str) -> dict[str, Any]:
    res = ConfigResource(ConfigResource.Type.TOPIC, name)
    return dict(a.describe_configs([res])[res].result(timeout=30))


def test_confluent_alter_and_describe(stack: RunningStack) -> None:
    a = admin(stack)
    a.create_topics([NewTopic("ck-cfg", 1, 1)])["ck-cfg"].result(timeout=30)
    res = ConfigResource(ConfigResource.Type.TOPIC, "ck-cfg", set_config={"retention.ms": "3600000"})
    a.alter_configs([res])[res].result(timeout=30)
    configs = topic_configs(a, "ck-cfg")
    assert configs["retention.ms"].value == "3600000"
    assert configs["retention.ms"].source == 1  # TOPIC_CONFIG
    assert configs["cleanup.policy"].value == "delete" and configs["cleanup.policy"].is_default

    inc = ConfigResource(
        ConfigResource.Type.TOPIC,
        "ck-cfg",
        incremental_configs=[
            ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND),
            ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE),
        ],
    )
    a.incremental_alter_configs([inc])[inc].result(timeout=30)
    configs = topic_configs(a, "ck-cfg")
    assert configs["cleanup.policy"].value == "delete,compact"
    assert configs["retention.ms"].value == "604800000" and configs["retention.ms"].source == 5

    bad = ConfigResource(ConfigResource.Type.TOPIC, "ck-cfg", set_config={"retention.ms": "abc"})
    with pytest.raises(KafkaException) as info:
        a.alter_configs([bad])[bad].result(timeout=30)
    assert "Not a number of type LONG" in str(info.value)
    missing = ConfigResource(ConfigResource.Type.TOPIC, "ck-cfg-missing")
    with pytest.raises(KafkaException):
        a.describe_configs([missing])[missing].result(timeout=30)


def test_confluent_broker_throttle(stack: RunningStack) -> None:
    a = admin(stack)
    res = ConfigResource(
        ConfigResource.Type.BROKER,
        "1",
        incremental_configs=[
            ConfigEntry("leader.replication.throttled.rate", "1048576", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    a.incremental_alter_configs([res])[res].result(timeout=30)
    described = ConfigResource(ConfigResource.Type.BROKER, "1")
    configs = a.describe_configs([described])[described].result(timeout=30)
    assert configs["leader.replication.throttled.rate"].value == "1048576"


def test_kafka_python_describe_and_alter(stack: RunningStack) -> None:
    a = admin(stack)
    a.create_topics([NewTopic("kp-cfg", 1, 1)])["kp-cfg"].result(timeout=30)
    kp = KafkaAdminClient(bootstrap_servers=stack.bootstrap, request_timeout_ms=30000)
    try:
        result = kp.alter_configs(
            [KpConfigResource(ConfigResourceType.TOPIC, "kp-cfg", configs={"segment.ms": "60000"})], incremental=False
        )
        assert "Error" not in repr(result), result
        described = kp.describe_configs([KpConfigResource(ConfigResourceType.TOPIC, "kp-cfg")])
        assert "segment.ms" in repr(described) and "60000" in repr(described)
    finally:
        kp.close()
    assert topic_configs(a, "kp-cfg")["segment.ms"].value == "60000"
