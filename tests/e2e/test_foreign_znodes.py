"""Znodes written by other tools, not as Kafka writes them: topic znodes with bad JSON,
an unknown version, duplicate replicas, negative broker ids and a megabyte of payload, a partition state of
garbage, a topic config with a non-string value, a malformed legacy reassignment request. The nodes report
each with its path, skip it and keep serving real clients: before and after a controller failover, whose
load reads every one of them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import orjson
import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
)
from kafka.admin import KafkaAdminClient, NewTopic

from controller.devstack.stack import NodeProcess
from testing.stack import controller_id
from tests.e2e.conftest import RunningStack
from tests.integration.cluster import wait_for
from zkmodel import paths

pytestmark = pytest.mark.e2e

MEGABYTE = 1_000_000
FOREIGN_TOPICS = {
    "bad-json": b'{"version":3,"partitions":{"0":[1,',
    "bad-version": b'{"version":99,"partitions":{"0":[1]}}',
    "dup-replicas": b'{"version":2,"partitions":{"0":[1,2,1]},"adding_replicas":{},"removing_replicas":{}}',
    "negative-ids": b'{"version":2,"partitions":{"0":[-1,2]},"adding_replicas":{},"removing_replicas":{}}',
    "huge": b'{"version":3,"partitions":{"0":[' + b"3," * (MEGABYTE // 2) + b"3]}}",
}
GARBAGE_STATE = paths.partition_state("victim", 0)
BAD_CONFIG = paths.entity_config("topics", "victim")
BAD_REASSIGNMENT = b'{"version":1,"partitions":[{"topic":"victim","partition":0,"replicas":[1,1]}]}'
#: Every bad znode, and what its log line must say after the path.
BAD_PATHS = {
    **{
        paths.topic(t): reason
        for t, reason in zip(
            FOREIGN_TOPICS,
            ["invalid JSON", "unsupported version 99", "duplicate broker ids", "must be >= 0", "duplicate broker ids"],
            strict=True,
        )
    },
    GARBAGE_STATE: "invalid JSON",
    paths.REASSIGN_PARTITIONS: "duplicate broker ids",
}


@pytest.fixture(scope="module")
def admin(stack: RunningStack) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=stack.bootstrap, request_timeout_ms=30000)
    yield client
    client.close()


def create_and_list(stack: RunningStack, admin: KafkaAdminClient, name: str) -> None:
    """A normal CreateTopics (kafka-python), then Metadata from every node (confluent-kafka) lists it."""
    admin.create_topics([NewTopic(name, num_partitions=2, replication_factor=2)])
    for broker in stack.brokers:
        client = AdminClient({"bootstrap.servers": broker})

        def listed(c: AdminClient = client) -> bool:
            topics = c.list_topics(timeout=10).topics
            return name in topics and all(p.leader >= 0 for p in topics[name].partitions.values())

        wait_for(listed, 30, f"{name} with leaders in {broker}'s metadata")


def log_lines(node: NodeProcess, since: int = 0) -> list[str]:
    return node.log_path.read_bytes()[since:].decode(errors="replace").splitlines()


def named(lines: list[str], path: str) -> list[str]:
    """The log lines that report ``path`` as a bad znode: ``<path>: <reason>``."""
    return [line for line in lines if re.search(rf"{re.escape(path)}: \S", line)]


def test_foreign_znodes_are_reported_and_skipped_before_and_after_a_failover(
    stack: RunningStack, admin: KafkaAdminClient
) -> None:
    zk = stack.zk
    create_and_list(stack, admin, "victim")
    for topic, data in FOREIGN_TOPICS.items():
        zk.create(paths.topic(topic), data)
    zk.set(GARBAGE_STATE, b"\x00{garbage")
    zk.set(BAD_CONFIG, b'{"version":1,"config":{"retention.ms":86400000}}')
    zk.create(paths.REASSIGN_PARTITIONS, BAD_REASSIGNMENT)

    # The nodes keep serving: a new topic is created and every node's Metadata shows it with leaders.
    create_and_list(stack, admin, "after-foreign")
    listed = AdminClient({"bootstrap.servers": stack.bootstrap}).list_topics(timeout=10).topics
    assert not set(FOREIGN_TOPICS) & set(listed)  # skipped, not served half-read
    # The bad config is refused for its topic alone, naming the znode; the other topic is described.
    client = AdminClient({"bootstrap.servers": stack.bootstrap})
    victim, other = ConfigResource("topic", "victim"), ConfigResource("topic", "after-foreign")
    described = client.describe_configs([victim, other])
    with pytest.raises(KafkaException) as refused:
        described[victim].result(timeout=30)
    assert refused.value.args[0].code() == KafkaError.UNKNOWN and BAD_CONFIG in refused.value.args[0].str()
    assert described[other].result(timeout=30)["cleanup.policy"].value == "delete"
    # An incremental change needs the old config and is refused the same way; AlterConfigs replaces the whole
    # set without reading it, so it repairs the znode, as Kafka's AdminZkClient overwrites it.
    change = ConfigEntry("retention.ms", "1000", incremental_operation=AlterConfigOpType.SET)
    incremental = client.incremental_alter_configs([ConfigResource("topic", "victim", incremental_configs=[change])])
    with pytest.raises(KafkaException) as refused:
        incremental[victim].result(timeout=30)
    assert refused.value.args[0].code() == KafkaError.UNKNOWN and BAD_CONFIG in refused.value.args[0].str()
    client.alter_configs([ConfigResource("topic", "victim", set_config={"retention.ms": "1000"})])[victim].result(
        timeout=30
    )
    assert orjson.loads(zk.get(BAD_CONFIG)[0]) == {"version": 1, "config": {"retention.ms": "1000"}}

    def every_line() -> list[str]:
        return [line for node in stack.stack.nodes for line in log_lines(node)]

    expected = {**BAD_PATHS, BAD_CONFIG: "must have a string value"}
    for path in expected:
        wait_for(lambda p=path: named(every_line(), p), 30, f"{path} named in a node's log")  # type: ignore[misc]
    lines = every_line()
    for path, reason in expected.items():
        reports = named(lines, path)
        assert any(reason in line for line in reports), (path, reason, reports[:3])
        assert all(len(line) < 2000 for line in reports), f"a {max(map(len, reports))}-character log line"

    # Failover: the next controller loads the whole cluster, bad znodes included.
    first = controller_id(zk)
    assert first is not None
    old = stack.stack.nodes[first - 1]
    marks = {n.broker_id: n.log_path.stat().st_size for n in stack.stack.nodes}
    stack.stack.stop_node(old)
    try:
        wait_for(lambda: controller_id(zk) not in (None, first), 60, "another controller")
        second = controller_id(zk)
        assert second is not None
        new = stack.stack.nodes[second - 1]
        wait_for(lambda: any("elected controller" in ln for ln in log_lines(new, marks[second])), 60, "the load")
        survivors = RunningStack(stack.stack, ",".join(b for b in stack.brokers if not b.endswith(f":{old.port}")), zk)
        survivor_admin = KafkaAdminClient(bootstrap_servers=survivors.bootstrap, request_timeout_ms=30000)
        try:
            create_and_list(survivors, survivor_admin, "after-failover")
        finally:
            survivor_admin.close()
        loaded = log_lines(new, marks[second])
        for path, reason in BAD_PATHS.items():
            reports = [ln for ln in named(loaded, path) if "controller.active" in ln]
            assert any(reason in line for line in reports), (path, reason, named(loaded, path)[:3])
        assert zk.exists(paths.REASSIGN_PARTITIONS)  # left in place, as Kafka leaves a request it cannot read
    finally:
        stack.stack.start_node(old)
        for topic in FOREIGN_TOPICS:
            zk.delete(paths.topic(topic))
        zk.delete(paths.REASSIGN_PARTITIONS)
