"""A reassignment driven by kafka-python (KIP-455 over the wire), completed by the brokers' replica model,
and brokers leaving and rejoining the ISR."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from kafka import TopicPartition as KTP
from kafka.admin import KafkaAdminClient, NewTopic

from controller.devstack.stack import Stack
from testing.stack import controller_id
from tests.integration.cluster import wait_for
from tests.stackutil import every_node_sees_every_broker
from zkmodel import paths
from zkmodel.topics import PartitionState, TopicAssignment

pytestmark = pytest.mark.e2e


def test_reassignment_shows_progress_then_completes(tmp_path: Path) -> None:
    # Slow catch-up (10 MiB at 2 MiB/s = 5 s per follower) so the move is observable while it runs.
    stack = Stack(
        nodes=4, data_dir=tmp_path / "s", overrides={"bridgekeeper.replica.catchup.rate.bytes.per.sec": "2097152"}
    )
    stack.start()
    admin = None
    try:
        from kazoo.client import KazooClient

        zk = KazooClient(hosts=stack.zookeeper)
        zk.start(timeout=20)
        admin = KafkaAdminClient(
            bootstrap_servers=",".join(f"127.0.0.1:{n.port}" for n in stack.nodes), request_timeout_ms=60000
        )
        admin.create_topics([NewTopic("moving", num_partitions=1, replication_factor=2)], timeout_ms=30000)
        before = TopicAssignment.decode("t", zk.get(paths.topic("moving"))[0])
        replicas = list(before.partitions[0])
        target = [next(b for b in (1, 2, 3, 4) if b not in replicas), replicas[0]]  # swap one replica
        admin.alter_partition_reassignments({KTP("moving", 0): target})

        listed = admin.list_partition_reassignments()
        entry = listed[KTP("moving", 0)]
        assert entry["adding_replicas"] == [target[0]]
        assert entry["removing_replicas"] == [replicas[1]]
        assert entry["replicas"][: len(target)] == target

        def done() -> bool:
            topic = TopicAssignment.decode("t", zk.get(paths.topic("moving"))[0])
            return topic.partitions[0] == tuple(target) and not topic.adding_replicas and not topic.removing_replicas

        wait_for(done, 60, "the move to complete")
        after = TopicAssignment.decode("t", zk.get(paths.topic("moving"))[0])
        assert after.version == 3 and after.topic_id == before.topic_id
        state = PartitionState.decode("s", zk.get(paths.partition_state("moving", 0))[0])
        assert set(state.isr) == set(target) and state.leader in target
        assert admin.list_partition_reassignments() == {}
        zk.stop()
        zk.close()
    finally:
        if admin is not None:
            admin.close()
        stack.stop()


def test_stopped_broker_leaves_and_restarted_broker_rejoins_the_isr(tmp_path: Path) -> None:
    stack = Stack(nodes=3, data_dir=tmp_path / "s")
    stack.start()
    try:
        from kazoo.client import KazooClient

        zk = KazooClient(hosts=stack.zookeeper)
        zk.start(timeout=20)
        admin = KafkaAdminClient(bootstrap_servers=",".join(f"127.0.0.1:{n.port}" for n in stack.nodes))
        admin.create_topics([NewTopic("isr", num_partitions=6, replication_factor=3)], timeout_ms=30000)
        admin.close()

        def states() -> list[PartitionState]:
            return [PartitionState.decode("s", zk.get(paths.partition_state("isr", p))[0]) for p in range(6)]

        victim = next(n for n in stack.nodes if n.broker_id != _controller(zk))
        led = [p for p, s in enumerate(states()) if s.leader == victim.broker_id]
        assert led, "the victim leads some partitions"
        stack.stop_node(victim)  # graceful stop: a controlled shutdown first
        wait_for(
            lambda: all(victim.broker_id not in s.isr and s.leader != victim.broker_id for s in states()),
            60,
            "leaders and ISRs without the stopped broker",
        )
        assert all(s.leader >= 0 for s in states())  # nobody is left without a leader
        # Controlled, not crashed: leadership moved in writes made *before* its registration was deleted.
        deregistered = zk.exists(paths.BROKER_IDS).pzxid
        for p in led:
            assert zk.exists(paths.partition_state("isr", p)).mzxid < deregistered
        assert "controlled shutdown of broker" in victim.log_path.read_text()

        stack.restart_node(victim)
        wait_for(lambda: all(victim.broker_id in s.isr for s in states()), 60, "the restarted broker back in every ISR")
        zk.stop()
        zk.close()
    finally:
        stack.stop()


def _controller(zk) -> int:  # type: ignore[no-untyped-def]
    from testing.stack import controller_id

    found = controller_id(zk)
    assert found is not None
    return found


def test_replication_throttle_holds_a_move_until_it_is_removed(tmp_path: Path) -> None:
    """Kafka's throttles: a follower rate on the target broker plus the topic's throttled-replica list."""
    from confluent_kafka.admin import (  # type: ignore[attr-defined]
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
    )
    from kazoo.client import KazooClient

    stack = Stack(nodes=3, data_dir=tmp_path / "s")
    stack.start()
    try:
        zk = KazooClient(hosts=stack.zookeeper)
        zk.start(timeout=20)
        bootstrap = ",".join(f"127.0.0.1:{n.port}" for n in stack.nodes)
        ck = AdminClient({"bootstrap.servers": bootstrap})
        # A broker-config change goes to that broker, which librdkafka finds in its metadata; a node's view of
        # the registrations is a ZooKeeper watch behind, so wait until the whole cluster is listed.
        wait_for(lambda: len(ck.list_topics(timeout=10).brokers) == 3, 30, "every broker in the metadata")
        kp = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=60000)
        kp.create_topics([NewTopic("slow", num_partitions=1, replication_factor=1)], timeout_ms=30000)
        origin = TopicAssignment.decode("t", zk.get(paths.topic("slow"))[0]).partitions[0][0]
        target = next(b for b in (1, 2, 3) if b != origin)

        def alter(resource: Any, entries: list[Any]) -> None:
            for future in ck.incremental_alter_configs(
                [ConfigResource(resource[0], resource[1], incremental_configs=entries)]
            ).values():
                future.result(timeout=30)

        # 1 byte/s: the 10 MiB catch-up cannot finish while the throttle is in place.
        alter(
            ("BROKER", str(target)),
            [ConfigEntry("follower.replication.throttled.rate", "1", incremental_operation=AlterConfigOpType.SET)],
        )
        alter(
            ("TOPIC", "slow"),
            [
                ConfigEntry(
                    "follower.replication.throttled.replicas",
                    f"0:{target}",
                    incremental_operation=AlterConfigOpType.SET,
                )
            ],
        )
        kp.alter_partition_reassignments({KTP("slow", 0): [target]})
        for _ in range(3):  # the unthrottled catch-up would have finished long before this
            time.sleep(1)
            assert KTP("slow", 0) in kp.list_partition_reassignments()

        alter(
            ("TOPIC", "slow"),
            [
                ConfigEntry(
                    "follower.replication.throttled.replicas", "", incremental_operation=AlterConfigOpType.DELETE
                )
            ],
        )

        def done() -> bool:
            return TopicAssignment.decode("t", zk.get(paths.topic("slow"))[0]).partitions[0] == (target,)

        wait_for(done, 60, "the move to complete once the throttle is gone")
        kp.close()
        zk.stop()
        zk.close()
    finally:
        stack.stop()


def test_below_topic_ids_leaders_write_the_isr_and_reassignments_complete(tmp_path: Path) -> None:
    """IBP 2.7-IV1 predates AlterPartition and topic ids: leaders expand the ISR by writing the state znode
    (CAS on its zkVersion) and an /isr_change_notification, as Kafka's pre-2.7-IV2 brokers did, so a KIP-455
    move still completes and the controller cleans the notifications up."""
    from kazoo.client import KazooClient

    stack = Stack(nodes=3, data_dir=tmp_path / "s", ibp="2.7-IV1")
    stack.start()
    zk = KazooClient(hosts=stack.zookeeper)
    admin = None
    try:
        zk.start(timeout=20)
        admin = KafkaAdminClient(
            bootstrap_servers=",".join(f"127.0.0.1:{n.port}" for n in stack.nodes), request_timeout_ms=60000
        )
        # The nodes are ready before the elected controller has finished loading: until then it answers
        # NOT_CONTROLLER, which kafka-python retries only once ("Failed to find active controller id!").
        wait_for(lambda: controller_id(zk) is not None, 60, "a controller")
        every_node_sees_every_broker(stack)
        admin.create_topics([NewTopic("legacy", num_partitions=2, replication_factor=1)], timeout_ms=30000)
        before = TopicAssignment.decode("t", zk.get(paths.topic("legacy"))[0])
        assert before.topic_id is None  # no topic ids below 2.8-IV0
        target = {p: [r[0], next(b for b in (1, 2, 3) if b != r[0])] for p, r in before.partitions.items()}
        admin.alter_partition_reassignments({KTP("legacy", p): t for p, t in target.items()})

        def done() -> bool:
            topic = TopicAssignment.decode("t", zk.get(paths.topic("legacy"))[0])
            return (
                all(topic.partitions[p] == tuple(t) for p, t in target.items())
                and not topic.adding_replicas
                and not topic.removing_replicas
            )

        wait_for(done, 60, "the moves to complete")
        for p, t in target.items():
            state = PartitionState.decode("s", zk.get(paths.partition_state("legacy", p))[0])
            assert set(state.isr) == set(t)
        assert admin.list_partition_reassignments() == {}
        wait_for(lambda: zk.get_children(paths.ISR_CHANGE_NOTIFICATION) == [], 30, "notifications to be consumed")
    finally:
        if admin is not None:
            admin.close()
        zk.stop()
        zk.close()
        stack.stop()
