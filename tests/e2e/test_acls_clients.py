"""ACL administration with real clients (librdkafka via confluent-kafka, and kafka-python) against the stack:
CreateAcls / DescribeAcls / DeleteAcls, and the znodes Kafka brokers would read."""

from __future__ import annotations

import json
from typing import Any

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)
from kafka.admin import (
    ACL,
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    KafkaAdminClient,
    ResourcePattern,
    ResourcePatternFilter,
)
from kafka.admin import ResourceType as KpResourceType

from tests.e2e.conftest import RunningStack

pytestmark = pytest.mark.e2e
#: Kafka serves the ACL APIs only with an authorizer; PLAINTEXT clients (User:ANONYMOUS) are super users here
#: so the ACLs these tests create never lock the test client out.
STACK_OVERRIDES = {
    "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
    "super.users": "User:ANONYMOUS",
}


def binding_tuples(bindings: list[AclBinding]) -> set[tuple[Any, ...]]:
    def name(value: Any) -> str:
        return str(value.name)

    return {
        (
            name(b.restype),
            b.name,
            name(b.resource_pattern_type),
            b.principal,
            b.host,
            name(b.operation),
            name(b.permission_type),
        )
        for b in bindings
    }


def ck_filter(*args: Any) -> AclBindingFilter:
    """confluent-kafka's stubs type the filter's name/principal/host as str, but None means any."""
    return AclBindingFilter(*args)


def test_confluent_kafka_acls(stack: RunningStack) -> None:
    admin = AdminClient({"bootstrap.servers": stack.bootstrap, "socket.timeout.ms": 10000})
    alice_read = AclBinding(
        ResourceType.TOPIC,
        "ck-orders",
        ResourcePatternType.LITERAL,
        "User:alice",
        "*",
        AclOperation.READ,
        AclPermissionType.ALLOW,
    )
    bob_prefix = AclBinding(
        ResourceType.TOPIC,
        "ck-",
        ResourcePatternType.PREFIXED,
        "User:bob",
        "*",
        AclOperation.WRITE,
        AclPermissionType.DENY,
    )
    group = AclBinding(
        ResourceType.GROUP,
        "ck-group",
        ResourcePatternType.LITERAL,
        "User:alice",
        "*",
        AclOperation.READ,
        AclPermissionType.ALLOW,
    )
    for future in admin.create_acls([alice_read, bob_prefix, group], request_timeout=30).values():
        assert future.result(timeout=30) is None

    data, _ = stack.zk.get("/kafka-acl/Topic/ck-orders")
    assert json.loads(data) == {
        "version": 1,
        "acls": [{"principal": "User:alice", "permissionType": "Allow", "host": "*", "operation": "Read"}],
    }
    assert stack.zk.exists("/kafka-acl-extended/prefixed/Topic/ck-") is not None

    match = ck_filter(
        ResourceType.TOPIC, "ck-orders", ResourcePatternType.MATCH, None, None, AclOperation.ANY, AclPermissionType.ANY
    )
    found = admin.describe_acls(match, request_timeout=30).result(timeout=30)
    assert binding_tuples(found) == {
        ("TOPIC", "ck-orders", "LITERAL", "User:alice", "*", "READ", "ALLOW"),
        ("TOPIC", "ck-", "PREFIXED", "User:bob", "*", "WRITE", "DENY"),
    }

    # A bad binding fails alone (CLUSTER must be named kafka-cluster): INVALID_REQUEST.
    bad = AclBinding(
        ResourceType.BROKER,
        "not-the-cluster",
        ResourcePatternType.LITERAL,
        "User:alice",
        "*",
        AclOperation.ALTER,
        AclPermissionType.ALLOW,
    )
    with pytest.raises(KafkaException) as info:
        admin.create_acls([bad], request_timeout=30)[bad].result(timeout=30)
    assert info.value.args[0].code() == 42

    prefixed_any = ck_filter(
        ResourceType.ANY, None, ResourcePatternType.PREFIXED, None, None, AclOperation.ANY, AclPermissionType.ANY
    )
    everything = ck_filter(
        ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY, AclPermissionType.ANY
    )
    deleted = admin.delete_acls([prefixed_any], request_timeout=30)[prefixed_any].result(timeout=30)
    assert binding_tuples(deleted) == {("TOPIC", "ck-", "PREFIXED", "User:bob", "*", "WRITE", "DENY")}
    assert stack.zk.exists("/kafka-acl-extended/prefixed/Topic/ck-") is None
    rest = admin.describe_acls(everything, request_timeout=30).result(timeout=30)
    assert {b.name for b in rest} >= {"ck-orders", "ck-group"}
    admin.delete_acls([everything], request_timeout=30)[everything].result(timeout=30)
    assert admin.describe_acls(everything, request_timeout=30).result(timeout=30) == []


def test_kafka_python_acls(stack: RunningStack) -> None:
    admin = KafkaAdminClient(bootstrap_servers=stack.bootstrap, request_timeout_ms=30000)
    try:
        read = ACL(
            "User:carol",
            "*",
            ACLOperation.READ,
            ACLPermissionType.ALLOW,
            ResourcePattern(KpResourceType.TOPIC, "kp-acl-topic"),
        )
        describe = ACL(
            "User:carol",
            "*",
            ACLOperation.DESCRIBE,
            ACLPermissionType.ALLOW,
            ResourcePattern(KpResourceType.TOPIC, "kp-acl-", ACLResourcePatternType.PREFIXED),
        )
        result = admin.create_acls([read, describe])
        assert len(result["succeeded"]) == 2 and result["failed"] == []

        name_match = ResourcePatternFilter(KpResourceType.TOPIC, "kp-acl-topic", ACLResourcePatternType.MATCH)
        match = ACLFilter("User:carol", None, ACLOperation.ANY, ACLPermissionType.ANY, name_match)
        acls, error = admin.describe_acls(match)
        assert error.errno == 0
        assert {(a.resource_pattern.resource_name, a.resource_pattern.pattern_type, a.operation) for a in acls} == {
            ("kp-acl-topic", ACLResourcePatternType.LITERAL, ACLOperation.READ),
            ("kp-acl-", ACLResourcePatternType.PREFIXED, ACLOperation.DESCRIBE),
        }

        exact = ResourcePatternFilter(KpResourceType.TOPIC, "kp-acl-topic", ACLResourcePatternType.LITERAL)
        literal = ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY, exact)
        [(_filter, matched, filter_error)] = admin.delete_acls([literal])
        assert filter_error.errno == 0
        assert [(a.principal, a.operation) for a in matched] == [("User:carol", ACLOperation.READ)]
        assert stack.zk.exists("/kafka-acl/Topic/kp-acl-topic") is None

        anything = ACLFilter(
            "User:carol",
            None,
            ACLOperation.ANY,
            ACLPermissionType.ANY,
            ResourcePatternFilter(KpResourceType.ANY, None, ACLResourcePatternType.ANY),
        )
        [(_filter, matched, _err)] = admin.delete_acls([anything])
        assert [a.resource_pattern.resource_name for a in matched] == ["kp-acl-"]
        acls, error = admin.describe_acls(anything)
        assert acls == []
    finally:
        admin.close()
