"""Controller election, failover and topic lifecycle against a real ZooKeeper (reference §6: 10, 12, 14, 22)."""

from __future__ import annotations

import pytest
from kazoo.client import KazooClient

from controller.active.api import NewTopic
from tests.integration.cluster import cluster, wait_for
from zkmodel import errorcodes as E
from zkmodel import paths
from zkmodel.admin import TopicPartition
from zkmodel.configs import EntityConfig
from zkmodel.errorcodes import KafkaApiError
from zkmodel.topics import TopicAssignment

pytestmark = pytest.mark.integration


def test_one_controller_and_epochs_grow_across_failover(zk_hosts: str, zk: KazooClient) -> None:
    with cluster(zk_hosts, zk) as c:
        for b in (1, 2, 3):
            c.start_broker(b)
        first = c.active()
        assert first.epoch == 1
        assert zk.get(paths.CONTROLLER_EPOCH)[0] == b"1"
        others = [n.controller for n in c.nodes.values() if n.controller is not first]
        with pytest.raises(KafkaApiError) as info:
            others[0].create_topics([NewTopic("t", 1, 1)])  # type: ignore[union-attr]
        assert info.value.error is E.NOT_CONTROLLER

        c.stop_broker(first.broker_id)
        second = c.active()
        assert second is not first and second.epoch == 2
        assert zk.get(paths.CONTROLLER_EPOCH)[0] == b"2"

        for b in list(c.nodes):  # one by one: a remaining broker may win one more election on the way
            c.stop_broker(b)
        assert zk.exists(paths.CONTROLLER) is None  # all brokers down: no controller ...
        last = int(zk.get(paths.CONTROLLER_EPOCH)[0])
        assert last >= 2  # ... but the epoch stays where the last controller left it
    with cluster(zk_hosts, zk) as c:
        c.start_broker(1)
        assert c.active().epoch == last + 1  # and the next controller continues from it


def test_create_topic_writes_kafka_znodes(zk_hosts: str, zk: KazooClient) -> None:
    with cluster(zk_hosts, zk) as c:
        for b in (0, 1, 2):
            c.start_broker(b)
        controller = c.active()
        result = controller.create_topics(
            [NewTopic("orders", 6, 3, configs={"cleanup.policy": "compact"}), NewTopic("bad name!", 1, 1)]
        )
        assert result["orders"][0] is E.NONE
        assert result["bad name!"][0] is E.INVALID_TOPIC_EXCEPTION

        topic = c.assignment("orders")
        assert topic.version == 3 and topic.topic_id is not None
        assert sorted(topic.partitions) == list(range(6))
        for p, replicas in topic.partitions.items():
            assert len(set(replicas)) == 3
            state = c.state("orders", p)
            assert state.leader == replicas[0] and state.isr == replicas and state.leader_epoch == 0
            assert state.controller_epoch == controller.epoch
            assert zk.get(paths.partition("orders", p))[0] is None  # null data, as Kafka writes it
        assert sorted(c.state("orders", p).leader for p in range(6)) == [0, 0, 1, 1, 2, 2]  # leaders spread
        config = EntityConfig.decode("c", zk.get(paths.entity_config("topics", "orders"))[0])
        assert config.config == {"cleanup.policy": "compact"}

        again = controller.create_topics([NewTopic("orders", 1, 1), NewTopic("x", 1, 4)])
        assert again["orders"] == (E.TOPIC_ALREADY_EXISTS, "Topic 'orders' already exists.")
        assert again["x"] == (E.INVALID_REPLICATION_FACTOR, "Replication factor: 4 larger than available brokers: 3.")
        # A name given twice is the handler's to answer (tests/unit/test_topic_handlers.py): not a request.
        with pytest.raises(ValueError, match=r"given more than once: \['d'\]"):
            controller.create_topics([NewTopic("d", 1, 1), NewTopic("d", 1, 1)])
        assert zk.exists(paths.topic("d")) is None
        explicit = controller.create_topics([NewTopic("e", assignment={0: [2, 1], 1: [1, 2]})])
        assert explicit["e"][0] is E.NONE
        assert c.assignment("e").partitions == {0: (2, 1), 1: (1, 2)}
        dup = controller.create_topics([NewTopic("f", assignment={0: [2, 2]})])
        assert dup["f"][0] is E.INVALID_REPLICA_ASSIGNMENT
        validate = controller.create_topics([NewTopic("g", 3, 2)], validate_only=True)
        assert validate["g"][0] is E.NONE and zk.exists(paths.topic("g")) is None


def test_version_2_topic_znodes_below_ibp_2_8(zk_hosts: str, zk: KazooClient) -> None:
    with cluster(zk_hosts, zk, "2.7-IV2") as c:
        c.start_broker(0)
        c.active().create_topics([NewTopic("old", 2, 1)])
        topic = c.assignment("old")
        assert topic.version == 2 and topic.topic_id is None


def test_scenario_14_topic_ids_backfilled_and_stable(zk_hosts: str, zk: KazooClient) -> None:
    with cluster(zk_hosts, zk, "2.7-IV0") as c:
        c.start_broker(0)
        c.active().create_topics([NewTopic("t", 2, 1)])
        assert c.assignment("t").topic_id is None
        c.stop_broker(0)
    # A v1 topic znode written by an old tool, too.
    zk.create(paths.topic("legacy"), b'{"version":1,"partitions":{"0":[0]}}')
    with cluster(zk_hosts, zk) as c:  # restart at the default IBP
        c.start_broker(0)
        c.active()
        wait_for(lambda: c.assignment("t").topic_id is not None, what="topic id backfill")
        topic_id = c.assignment("t").topic_id
        legacy = c.assignment("legacy")
        assert legacy.version == 3 and legacy.topic_id is not None
        assert c.state("legacy", 0).leader == 0  # its partition got a state, too
        c.start_broker(1)
        c.stop_broker(0)  # re-election
        c.active()
        assert c.assignment("t").topic_id == topic_id


def test_add_partitions_and_scenario_22(zk_hosts: str, zk: KazooClient) -> None:
    with cluster(zk_hosts, zk) as c:
        for b in (0, 1, 2):
            c.start_broker(b)
        controller = c.active()
        controller.create_topics([NewTopic("a", 2, 2), NewTopic("b", 1, 2)])
        result = controller.create_partitions({"a": (4, None), "b": (1, None), "nope": (2, None)})
        assert result["a"][0] is E.NONE
        assert result["b"] == (E.INVALID_PARTITIONS, "Topic already has 1 partitions.")
        assert result["nope"][0] is E.UNKNOWN_TOPIC_OR_PARTITION
        assert sorted(c.assignment("a").partitions) == [0, 1, 2, 3]
        assert c.state("a", 3).leader in (0, 1, 2)

        # Scenario 22: a topic with a move in flight cannot grow; other topics can.
        moving = c.assignment("b").partitions[0]
        target = [*[r for r in (0, 1, 2) if r not in moving][:1], moving[0]]
        assert (
            controller.alter_partition_reassignments({TopicPartition("b", 0): target})[TopicPartition("b", 0)][0]
            is E.NONE
        )
        result = controller.create_partitions({"b": (2, None), "a": (5, None)})
        assert result["b"][0] is E.REASSIGNMENT_IN_PROGRESS
        assert result["a"][0] is E.NONE


def test_delete_topic_at_once_or_by_marker_while_reassigning(zk_hosts: str, zk: KazooClient) -> None:
    with cluster(zk_hosts, zk) as c:
        for b in (0, 1):
            c.start_broker(b)
        controller = c.active()
        controller.create_topics([NewTopic("gone", 2, 2, configs={"retention.ms": "1"}), NewTopic("moving", 1, 1)])
        result = controller.delete_topics(["gone", "gone", "unknown"])
        assert result["gone"][0] is E.NONE
        assert result["unknown"][0] is E.UNKNOWN_TOPIC_OR_PARTITION
        for path in (paths.topic("gone"), paths.entity_config("topics", "gone"), paths.delete_topic_marker("gone")):
            assert zk.exists(path) is None

        tp = TopicPartition("moving", 0)
        other = 1 - c.assignment("moving").partitions[0][0]
        controller.alter_partition_reassignments({tp: [other]})
        controller.delete_topics(["moving"])
        assert zk.exists(paths.topic("moving")) is not None  # a topic being reassigned is not deleted yet
        assert zk.exists(paths.delete_topic_marker("moving")) is not None
        c.catch_up(tp)
        wait_for(lambda: zk.exists(paths.topic("moving")) is None, what="deletion after the move")
        assert zk.exists(paths.delete_topic_marker("moving")) is None


def test_topic_created_by_a_legacy_tool_gets_partition_states(zk_hosts: str, zk: KazooClient) -> None:
    with cluster(zk_hosts, zk) as c:
        for b in (0, 1):
            c.start_broker(b)
        c.active()
        zk.create(paths.topic("tool"), TopicAssignment({0: (1, 0), 1: (0, 1)}, version=2).encode())
        wait_for(lambda: zk.exists(paths.partition_state("tool", 1)) is not None, what="states for a new topic")
        assert c.state("tool", 0).leader == 1 and c.state("tool", 1).isr == (0, 1)
        wait_for(lambda: c.assignment("tool").topic_id is not None, what="topic id for a tool-made topic")


def test_scenario_12_controller_moved_mid_operation_resigns(zk_hosts: str, zk: KazooClient) -> None:
    with cluster(zk_hosts, zk) as c:
        c.start_broker(0)
        controller = c.active()
        # Another controller bumps the epoch behind our back (as a newly elected one would).
        _, stat = zk.get(paths.CONTROLLER_EPOCH)
        zk.set(paths.CONTROLLER_EPOCH, b"7", version=stat.version)
        with pytest.raises(KafkaApiError) as info:  # five pipelined fenced multis, every one refused
            controller.create_topics([NewTopic(f"t{i}", 1, 1) for i in range(5)])
        # Nothing was written and nothing can have been: NOT_CONTROLLER, so a forwarding broker sends it again.
        assert info.value.error is E.NOT_CONTROLLER
        assert not any(zk.exists(paths.topic(f"t{i}")) for i in range(5))
        wait_for(lambda: "resigned: controller moved" in controller.last_status or controller.is_active, what="resign")
        assert "resigned: controller moved" in controller.last_status


def test_partitions_added_by_a_legacy_tool_get_states(zk_hosts: str, zk: KazooClient) -> None:
    """Kafka's PartitionModificationsHandler: AdminZkClient.addPartitions only rewrites the topic znode."""
    with cluster(zk_hosts, zk) as c:
        for b in (0, 1):
            c.start_broker(b)
        controller = c.active()
        controller.create_topics([NewTopic("grow", assignment={0: [0, 1]})])
        topic = c.assignment("grow")
        grown = TopicAssignment({**topic.partitions, 1: (1, 0), 2: (0, 1)}, topic_id=topic.topic_id)
        zk.set(paths.topic("grow"), grown.encode())
        wait_for(lambda: zk.exists(paths.partition_state("grow", 2)) is not None, what="states for added partitions")
        assert c.state("grow", 1).leader == 1 and c.state("grow", 2).isr == (0, 1)
        assert c.state("grow", 0).leader_epoch == 0  # existing partitions untouched
        # A second controller loads the new partitions as its own.
        c.start_broker(2)
        c.stop_broker(controller.broker_id)
        assert sorted(c.active().snapshot().topics["grow"].partitions) == [0, 1, 2]


def test_many_topics_in_one_request_are_created_pipelined(zk_hosts: str, zk: KazooClient) -> None:
    """One CreateTopics of many topics: each topic is one fenced multi and the multis travel together. Every
    topic appears whole (znode, partitions, states) and the per-topic outcomes stay Kafka's: an existing
    topic, a stale config znode, and a name colliding with another topic of the same request."""
    with cluster(zk_hosts, zk) as c:
        for b in (0, 1, 2):
            c.start_broker(b)
        controller = c.active()
        assert controller.create_topics([NewTopic("exists", 1, 1)])["exists"][0] is E.NONE
        zk.create(paths.entity_config("topics", "stale"), EntityConfig({"retention.ms": "1"}).encode(), makepath=True)
        many = [NewTopic(f"bulk-{i:03d}", 4, 2) for i in range(300)]
        result = controller.create_topics(
            [
                *many,
                NewTopic("exists", 1, 1),
                NewTopic("stale", 2, 1, configs={"cleanup.policy": "compact"}),
                NewTopic("a.b", 1, 1),
                NewTopic("a_b", 1, 1),
            ]
        )
        assert all(result[t.name] == (E.NONE, None) for t in many)
        assert result["exists"] == (E.TOPIC_ALREADY_EXISTS, "Topic 'exists' already exists.")
        assert result["stale"] == (E.NONE, None)
        assert result["a.b"] == (E.NONE, None)
        assert result["a_b"][0] is E.INVALID_TOPIC_EXCEPTION and "collides with existing topics: a.b" in str(
            result["a_b"][1]
        )
        assert EntityConfig.decode("c", zk.get(paths.entity_config("topics", "stale"))[0]).config == {
            "cleanup.policy": "compact"
        }
        for t in (*many[::50], NewTopic("stale", 2, 1)):
            assignment = c.assignment(t.name)
            assert sorted(assignment.partitions) == list(range(t.num_partitions))
            for p in assignment.partitions:
                assert zk.exists(paths.partition_state(t.name, p)) is not None
        ctx = controller.active.ctx  # type: ignore[union-attr]
        assert all(ctx.topics[t.name].partitions[0].state is not None for t in many)


def test_deletion_of_a_tree_other_than_the_context_says_falls_back_to_reading_it(
    zk_hosts: str, zk: KazooClient
) -> None:
    """A topic a legacy tool wrote without a config znode, and one with a child no Kafka writes: the deletion
    from the controller's context fails as a whole (nothing is deleted), and the marker's path reads each tree
    and deletes it; a burst of plain topics in the same call goes at once."""
    with cluster(zk_hosts, zk) as c:
        for b in (0, 1):
            c.start_broker(b)
        controller = c.active()
        zk.create(paths.topic("tool"), TopicAssignment({0: (1, 0)}, version=2).encode())
        wait_for(lambda: zk.exists(paths.partition_state("tool", 0)) is not None, what="the tool topic's state")
        plain = [f"p{i}" for i in range(20)]
        controller.create_topics([NewTopic("odd", 1, 1)] + [NewTopic(n, 2, 1) for n in plain])
        zk.create(f"{paths.topic_partitions('odd')}/0/extra", b"")
        assert zk.exists(paths.entity_config("topics", "tool")) is None
        result = controller.delete_topics(["tool", "odd", *plain])
        assert all(error is E.NONE for error, _m in result.values()), result
        for name in ("tool", "odd", *plain):
            for path in (paths.topic(name), paths.entity_config("topics", name), paths.delete_topic_marker(name)):
                assert zk.exists(path) is None, path
        assert not zk.get_children(paths.DELETE_TOPICS)
