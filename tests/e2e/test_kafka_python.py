"""kafka-python's KafkaAdminClient against the stack (flexible request versions, DescribeCluster)."""

from __future__ import annotations

import pytest
from kafka.admin import KafkaAdminClient, NewPartitions, NewTopic
from kafka.errors import InvalidPartitionsError, TopicAlreadyExistsError, UnknownTopicOrPartitionError

from testing.stack import controller_id
from tests.e2e.conftest import RunningStack
from tests.integration.cluster import wait_for

pytestmark = pytest.mark.e2e


def test_topic_administration(stack: RunningStack) -> None:
    admin = KafkaAdminClient(bootstrap_servers=stack.bootstrap, request_timeout_ms=30000)
    try:
        admin.create_topics([NewTopic("kp-events", num_partitions=4, replication_factor=2)])

        # CreateTopics answers once the handling node's cache has the leaders (as Kafka's ZK-mode broker does);
        # each later request goes to the least-loaded node, whose cache may get there a watch later (it answers
        # UNKNOWN_TOPIC_OR_PARTITION until then, as a Kafka broker before its UpdateMetadata).
        def described() -> bool:
            topic = admin.describe_topics(["kp-events"])[0]
            return bool(topic["error_code"] == 0 and len(topic["partitions"]) == 4)

        wait_for(described, 30, "kp-events described with its 4 partitions")
        with pytest.raises(TopicAlreadyExistsError):
            admin.create_topics([NewTopic("kp-events", num_partitions=1, replication_factor=1)])
        admin.create_partitions({"kp-events": NewPartitions(total_count=6)})
        wait_for(lambda: len(admin.describe_topics(["kp-events"])[0]["partitions"]) == 6, 30, "6 partitions")
        with pytest.raises(InvalidPartitionsError):
            admin.create_partitions({"kp-events": NewPartitions(total_count=2)})
        cluster = admin.describe_cluster()
        assert cluster["controller_id"] == controller_id(stack.zk)
        assert sorted(b["broker_id"] for b in cluster["brokers"]) == [1, 2, 3]
        admin.delete_topics(["kp-events"])
        wait_for(lambda: "kp-events" not in admin.list_topics(), 30, "kp-events gone from every node")
        with pytest.raises(UnknownTopicOrPartitionError):
            admin.delete_topics(["kp-missing"])
    finally:
        admin.close()


def test_acl_apis_without_an_authorizer_answer_security_disabled(stack: RunningStack) -> None:
    """Kafka's AclApis: no authorizer.class.name -> SECURITY_DISABLED, for describe, create and delete."""
    from kafka.admin import (
        ACL,
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        ResourcePattern,
        ResourcePatternFilter,
    )
    from kafka.admin import ResourceType as KpResourceType
    from kafka.errors import SecurityDisabledError

    admin = KafkaAdminClient(bootstrap_servers=stack.bootstrap, request_timeout_ms=30000)
    try:
        any_acl = ACLFilter(
            principal=None,
            host=None,
            operation=ACLOperation.ANY,
            permission_type=ACLPermissionType.ANY,
            resource_pattern=ResourcePatternFilter(KpResourceType.ANY, None, ACLResourcePatternType.ANY),
        )
        with pytest.raises(SecurityDisabledError):
            admin.describe_acls(any_acl)
        acl = ACL(
            "User:alice",
            "*",
            ACLOperation.READ,
            ACLPermissionType.ALLOW,
            ResourcePattern(KpResourceType.TOPIC, "t", ACLResourcePatternType.LITERAL),
        )
        created = admin.create_acls([acl])
        assert created["succeeded"] == [] and len(created["failed"]) == 1
        assert created["failed"][0] is SecurityDisabledError
    finally:
        admin.close()


def test_controller_event_timers_move(stack: RunningStack) -> None:
    """ControllerStats: the active controller times the CreateTopics it handles under TopicChange."""
    from testing.stack import metric_sum, metrics_url

    cid = controller_id(stack.zk)
    node = next(n for n in stack.stack.nodes if n.broker_id == cid)
    url = metrics_url(node.ready)
    name = "bridgekeeper_controller_event_duration_seconds_count"
    before = metric_sum(url, name, state="TopicChange")
    admin = KafkaAdminClient(bootstrap_servers=stack.bootstrap, request_timeout_ms=30000)
    try:
        admin.create_topics([NewTopic("event-timers", 1, 1)])
    finally:
        admin.close()
    assert metric_sum(url, name, state="TopicChange") >= before + 1
    assert metric_sum(url, "bridgekeeper_controller_active") == 1
