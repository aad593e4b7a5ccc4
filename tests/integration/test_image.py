"""A hot standby against a real ZooKeeper: the node's image catches up with every committed write on demand, a
context built from it equals a full read of ZooKeeper, and an elected standby serves from it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kazoo.client import KazooClient

from controller.active.api import IsrUpdate, NewTopic
from controller.active.context import ControllerContext
from controller.active.failover import load_context
from controller.active.standby import context_from_image
from controller.broker.metadata_cache import MetadataCache
from controller.image.snapshot import MetadataSnapshot
from controller.zk.session import ZkSession
from tests.integration.cluster import cluster, wait_for
from tests.integration.test_metadata_cache import truth, view
from zkmodel import paths
from zkmodel.admin import PartitionReassignmentZnode, TopicPartition
from zkmodel.brokers import BrokerRegistration, EndPoint
from zkmodel.topics import RECOVERING, PartitionState, TopicAssignment

pytestmark = pytest.mark.integration

TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"


@pytest.fixture
def session(zk_hosts: str) -> Iterator[ZkSession]:
    s = ZkSession(zk_hosts, session_timeout_ms=6000, name="standby")
    s.start()
    yield s
    s.close()


@pytest.fixture
def cache(session: ZkSession) -> Iterator[MetadataCache]:
    # A long coalescing pause: without the catch-up's wait, every snapshot read right after a write is stale.
    c = MetadataCache(session, coalesce_seconds=0.2)
    c.start()
    yield c
    c.stop()


def _topic(zk: KazooClient, name: str, assignment: TopicAssignment, states: dict[int, bytes | None]) -> None:
    zk.create(paths.topic(name), assignment.encode(), makepath=True)
    for p in assignment.partitions:
        zk.create(f"{paths.topic(name)}/partitions/{p}", b"", makepath=True)
        data = states.get(p, PartitionState(p % 3 + 1, 4, 2, (1, 2, 3)).encode())
        if data is not None:
            zk.create(paths.partition_state(name, p), data)


def _tree(zk: KazooClient) -> None:
    """Every shape a load must carry over: topic ids present and missing, old JSON versions, reassignments in
    flight, a missing and an unreadable state, KIP-704's recovery state, deletions and the legacy znode."""
    for b in (1, 2, 3):
        reg = BrokerRegistration((EndPoint("PLAINTEXT", "127.0.0.1", 9000 + b, "PLAINTEXT"),), 5, rack=f"r{b % 2}")
        zk.create(paths.broker(b), reg.encode(), makepath=True)
    _topic(zk, "plain", TopicAssignment({0: (1, 2, 3), 1: (2, 3, 1), 2: (3, 1, 2)}, topic_id=TOPIC_ID), {})
    _topic(zk, "old", TopicAssignment({0: (1, 2)}, version=2), {})
    _topic(
        zk,
        "moving",
        TopicAssignment(
            {0: (4, 1, 2, 3), 1: (2, 3)},
            adding_replicas={0: (4,)},
            removing_replicas={0: (3,)},
            topic_id="AAAAAAAAAAAAAAAAAAAAAg",
        ),
        {},
    )
    _topic(
        zk,
        "odd",
        TopicAssignment({0: (1,), 1: (2,), 2: (3,)}, topic_id="AAAAAAAAAAAAAAAAAAAAAw"),
        {0: None, 1: b"{not json", 2: PartitionState(3, 9, 7, (3,), RECOVERING).encode()},
    )
    zk.set(paths.partition_state("plain", 1), PartitionState(2, 5, 3, (2, 3)).encode())  # zkVersion 1
    zk.create(f"{paths.DELETE_TOPICS}/old", b"", makepath=True)
    legacy = PartitionReassignmentZnode([(TopicPartition("plain", 0), (3, 2, 1))])
    zk.create(paths.REASSIGN_PARTITIONS, legacy.encode(), makepath=True)


def _view(ctx: ControllerContext) -> dict[str, Any]:
    """Everything a load puts into a context, in plain values."""
    return {
        "brokers": {b: (lb.registration, lb.epoch) for b, lb in ctx.live_brokers.items()},
        "topics": {
            name: (
                t.topic_id,
                t.znode_json_version,
                {
                    p: (i.assignment.replicas, i.assignment.adding, i.assignment.removing, i.state, i.partition_epoch)
                    for p, i in t.partitions.items()
                },
            )
            for name, t in ctx.topics.items()
        },
        "deleting": ctx.topics_to_delete,
        "legacy": ctx.zk_reassignments,
        "epochs": (ctx.epoch, ctx.epoch_zk_version),
    }


def test_catch_up_holds_every_write_committed_before_it(zk: KazooClient, cache: MetadataCache) -> None:
    _topic(zk, "t", TopicAssignment({0: (1,)}, topic_id=TOPIC_ID), {})
    caught = cache.catch_up(10)
    assert caught is not None and caught.partition("t", 0) is not None
    for epoch in range(5, 25):
        zk.set(paths.partition_state("t", 0), PartitionState(1, epoch, 2, (1,)).encode())
        snap = cache.catch_up(10)
        assert snap is not None
        part = snap.partition("t", 0)
        assert part is not None and part.leader_epoch == epoch
    _topic(zk, "u", TopicAssignment({0: (2,)}), {})
    zk.delete(paths.topic("t"), recursive=True)
    snap = cache.catch_up(10)
    assert snap is not None and set(snap.topics) == {"u"}


def test_catch_up_says_none_when_the_cache_is_not_running(session: ZkSession) -> None:
    cache = MetadataCache(session)
    assert cache.catch_up(1) is None
    cache.start()
    cache.stop()
    assert cache.catch_up(1) is None


def test_a_context_from_the_image_equals_a_full_read(zk: KazooClient, session: ZkSession, cache: MetadataCache) -> None:
    _tree(zk)
    snap = cache.catch_up(10)
    assert snap is not None
    for uses_topic_ids in (True, False):
        from_image, image_report = context_from_image(snap, session, 7, 6, uses_topic_ids=uses_topic_ids)
        from_zk, zk_report = load_context(session, 7, 6, uses_topic_ids=uses_topic_ids)
        assert _view(from_image) == _view(from_zk)
        assert sorted(image_report.topics_to_upgrade) == sorted(zk_report.topics_to_upgrade)
        assert (image_report.brokers, image_report.topics, image_report.partitions) == (3, 4, 9)
        assert (image_report.source, zk_report.source) == ("image", "zookeeper")
        # what could not be read is reported by both, in the same words
        assert image_report.bad_znodes == zk_report.bad_znodes and len(zk_report.bad_znodes) == 1
    assert set(snap.unreadable) == {paths.partition_state("odd", 1)}
    odd = from_image.topics["odd"].partitions
    assert odd[0].state is None and odd[0].partition_epoch == -1  # missing
    assert odd[1].state is None and odd[1].partition_epoch == 0  # unreadable: its zkVersion still fences
    assert odd[2].state == PartitionState(3, 9, 7, (3,), RECOVERING)


def test_an_elected_standby_loads_from_its_image_and_serves_what_zookeeper_holds(
    zk_hosts: str, zk: KazooClient
) -> None:
    with cluster(zk_hosts, zk) as c:
        c.start_broker(1, image=True)
        first = c.active()
        assert first.broker_id == 1
        for b in (2, 3):
            c.start_broker(b, image=True)
        c.active()
        created = first.create_topics([NewTopic("a", 6, 3), NewTopic("b", 3, 2)])
        assert all(error.code == 0 for error, _m in created.values())
        before = _view(first.snapshot())
        c.stop_broker(1)  # a clean resignation: another candidate wins with a new epoch
        second = c.active()
        assert second.last_load is not None and second.last_load.source == "image"
        wait_for(lambda: set(second.snapshot().live_brokers) == {2, 3}, what="broker 1 gone")
        after = _view(second.snapshot())
        assert after["topics"].keys() == before["topics"].keys()
        # The new controller moved leadership off broker 1 (its own fenced writes): its context must equal a
        # fresh full read of ZooKeeper.
        cold, _r = load_context(c.nodes[2].session, second.epoch, -1, uses_topic_ids=True)
        cold.epoch_zk_version = second.snapshot().epoch_zk_version
        assert _view(second.snapshot()) == _view(cold)


def test_without_an_image_a_won_election_reads_zookeeper(zk_hosts: str, zk: KazooClient) -> None:
    with cluster(zk_hosts, zk) as c:
        c.start_broker(1)
        active = c.active()
        assert active.last_load is not None and active.last_load.source == "zookeeper"


def test_the_controllers_own_writes_reach_its_image_without_being_read_back(zk_hosts: str, zk: KazooClient) -> None:
    with cluster(zk_hosts, zk) as c:
        node = c.start_broker(1, image=True)
        for b in (2, 3):
            c.start_broker(b, candidate=False)
        controller = c.active()
        assert controller.broker_id == 1 and node.cache is not None
        cache = node.cache
        assert cache.catch_up(10) is not None
        read_before = cache.znodes_read
        created = controller.create_topics([NewTopic(f"t{i}", 5, 2) for i in range(20)])
        assert all(error.code == 0 for error, _m in created.values())
        snap = cache.catch_up(10)
        assert snap is not None and all(_has_leaders(snap, f"t{i}") for i in range(20))
        # 20 topic znodes and 100 state znodes were written, and none of them was read back
        assert cache.znodes_read - read_before == 0
        assert view(snap) == truth(zk)

        # Another writer after the controller's write: the watch re-armed at the write's zxid still fires.
        data, stat = zk.get(paths.partition_state("t3", 2))
        foreign = PartitionState.decode("s", data)._replace(leader_epoch=40)
        zk.set(paths.partition_state("t3", 2), foreign.encode(), version=stat.version)
        snap = cache.catch_up(10)
        assert snap is not None
        part = snap.partition("t3", 2)
        assert part is not None and part.state == foreign and part.partition_epoch == stat.version + 1
        assert cache.znodes_read - read_before == 1

        # The controller's next writes: each leader of t7 shrinks its ISR to itself (AlterPartition, setData at
        # the state's version).
        for p in range(5):
            data, stat = zk.get(paths.partition_state("t7", p))
            state = PartitionState.decode("s", data)
            leader = c.nodes[state.leader]
            error, results = controller.alter_partition(
                state.leader,
                leader.registrar.broker_epoch,
                {TopicPartition("t7", p): IsrUpdate(state.leader_epoch, (state.leader,), stat.version)},
            )
            assert error.code == 0 and results[TopicPartition("t7", p)].error.code == 0
        snap = cache.catch_up(10)
        assert snap is not None and view(snap) == truth(zk)
        assert cache.znodes_read - read_before == 1
        assert all(
            part.isr == (part.leader,) and part.partition_epoch == 1 for part in snap.topics["t7"].partitions.values()
        )

        # Deletion through the controller: the image drops the topic without reading anything.
        deleted = controller.delete_topics(["t5"])
        assert all(error.code == 0 for error, _m in deleted.values())
        wait_for(lambda: "t5" not in cache.snapshot().topics, what="t5 gone from the image")
        assert cache.znodes_read - read_before == 1
        assert view(cache.catch_up(10) or cache.snapshot()) == truth(zk)


def _has_leaders(snap: MetadataSnapshot, name: str) -> bool:
    topic = snap.topics.get(name)
    return topic is not None and bool(topic.partitions) and all(p.leader >= 0 for p in topic.partitions.values())
