"""A reassignment driven by kafka-python (KIP-455 over the wire), completed by the brokers' replica model,
and brokers leaving and rejoining the ISR."""

from __future__ import annotations

from pathlib import Path

import pytest
from kafka import TopicPartition as KTP
from kafka.admin import KafkaAdminClient, NewTopic

from controller.stack import Stack
from tests.integration.cluster import wait_for
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
        wait_for(lambda: all(victim.broker_id not in s.isr and s.leader != victim.broker_id for s in states()), 60,
                 "leaders and ISRs without the stopped broker")  # fmt: skip
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
    from tests.stackutil import controller_id

    found = controller_id(zk)
    assert found is not None
    return found
