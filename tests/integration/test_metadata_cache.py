"""The broker's metadata cache against a real ZooKeeper, with real controllers changing topics and leaders."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
from kazoo.protocol.states import EventType, KazooState, WatchedEvent

from controller.active.api import NewTopic
from controller.broker.metadata_cache import MetadataCache
from controller.devstack.localzk import LocalZooKeeper
from controller.image.snapshot import MetadataSnapshot
from controller.zk.protocol.paths import server_path
from controller.zk.session import ZkSession
from tests.integration.cluster import cluster, wait_for
from tests.zkharness import drop_connection, expire_session, new_client
from zkmodel import paths
from zkmodel.admin import TopicPartition
from zkmodel.brokers import BrokerRegistration, EndPoint
from zkmodel.election import ControllerZnode
from zkmodel.errors import ZnodeFormatError
from zkmodel.topics import PartitionState, TopicAssignment

pytestmark = pytest.mark.integration

TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"  # a valid Kafka Uuid


@pytest.fixture
def cache_session(zk_hosts: str) -> Iterator[ZkSession]:
    session = ZkSession(zk_hosts, session_timeout_ms=6000, name="cache")
    session.start()
    yield session
    session.close()


@pytest.fixture
def make_cache(cache_session: ZkSession) -> Iterator[Callable[..., MetadataCache]]:
    made: list[MetadataCache] = []

    def make(**kwargs: Any) -> MetadataCache:
        cache = MetadataCache(cache_session, **kwargs)
        cache.start()
        made.append(cache)
        return cache

    yield make
    for cache in made:
        cache.stop()


# -- ZooKeeper as the truth, in the cache's terms ----------------------------------------------------------------


def truth(zk: KazooClient) -> dict[str, Any]:
    """What ZooKeeper holds, read directly (call it when nothing is changing)."""
    brokers = {}
    for child in zk.get_children(paths.BROKER_IDS) if zk.exists(paths.BROKER_IDS) else []:
        data, stat = zk.get(paths.broker(int(child)))
        with contextlib.suppress(ZnodeFormatError):
            brokers[int(child)] = (BrokerRegistration.decode("b", data), stat.czxid)
    topics = {}
    for name in zk.get_children(paths.BROKER_TOPICS) if zk.exists(paths.BROKER_TOPICS) else []:
        try:
            assignment = TopicAssignment.decode("t", zk.get(paths.topic(name))[0])
        except ZnodeFormatError:
            continue
        partitions = {}
        for p, replicas in assignment.partitions.items():
            isr: tuple[int, ...] = ()
            leader, leader_epoch, version = -1, -1, -1
            if zk.exists(paths.partition_state(name, p)):
                data, stat = zk.get(paths.partition_state(name, p))
                version = stat.version
                try:
                    state = PartitionState.decode("s", data)
                    leader, isr, leader_epoch = state.leader, state.isr, state.leader_epoch
                except ZnodeFormatError:
                    pass
            partitions[p] = (replicas, isr, leader, leader_epoch, version)
        topics[name] = (assignment.topic_id, partitions)
    controller = -1
    with contextlib.suppress(NoNodeError, ZnodeFormatError):  # one read: the ephemeral can go between two
        controller = ControllerZnode.decode("c", zk.get(paths.CONTROLLER)[0]).broker_id
    return {"brokers": brokers, "topics": topics, "controller": controller}


def view(s: MetadataSnapshot) -> dict[str, Any]:
    """The same shape from a snapshot."""
    return {
        "brokers": {b.broker_id: (b.registration, b.epoch) for b in s.brokers.values()},
        "topics": {
            t.name: (
                t.topic_id,
                {
                    p.partition: (p.replicas, p.isr, p.leader, p.leader_epoch, p.partition_epoch)
                    for p in t.partitions.values()
                },
            )
            for t in s.topics.values()
        },
        "controller": s.controller_id,
    }


def in_sync(cache: MetadataCache, zk: KazooClient, timeout: float = 30.0) -> MetadataSnapshot:
    expected = truth(zk)
    try:
        return cache.wait_for(lambda s: view(s) == expected, timeout)
    except TimeoutError:
        assert view(cache.snapshot()) == expected  # shows the difference
        raise


def leaders_set(topic: str, count: int) -> Callable[[MetadataSnapshot], bool]:
    def check(s: MetadataSnapshot) -> bool:
        t = s.topics.get(topic)
        return t is not None and len(t.partitions) == count and all(p.leader >= 0 for p in t.partitions.values())

    return check


def registration(port: int) -> bytes:
    return BrokerRegistration((EndPoint("PLAINTEXT", "127.0.0.1", port, "PLAINTEXT"),), 1).encode()


def create_topic_znodes(zk: KazooClient, name: str, assignment: dict[int, tuple[int, ...]], states: bool) -> None:
    zk.create(paths.topic(name), TopicAssignment(assignment, topic_id=TOPIC_ID).encode(), makepath=True)
    if states:
        for p, replicas in assignment.items():
            state = PartitionState(replicas[0], 0, 1, replicas).encode()
            zk.create(paths.partition_state(name, p), state, makepath=True)


def tp(topic: str, partition: int) -> TopicPartition:
    return TopicPartition(topic, partition)


# -- tests ---------------------------------------------------------------------------------------------------------


def test_initial_load_equals_zookeeper(
    zk_hosts: str, zk: KazooClient, make_cache: Callable[..., MetadataCache]
) -> None:
    with cluster(zk_hosts, zk) as c:
        for b in (0, 1, 2):
            c.start_broker(b)
        controller = c.active()
        controller.create_topics(
            [
                NewTopic("a", 3, 2),
                NewTopic("b", assignment={0: [2, 0], 1: [0, 1]}),
                NewTopic("__consumer_offsets", 2, 3),
            ]
        )
        cache = make_cache()
        s = in_sync(cache, zk)
        assert cache.full_loads == 1
        assert s.alive_broker_ids == (0, 1, 2) and s.controller_id == controller.broker_id
        assert s.brokers[1].epoch == c.nodes[1].registrar.broker_epoch
        assert s.topics["__consumer_offsets"].is_internal and not s.topics["a"].is_internal
        assert s.topics["a"].topic_id == c.assignment("a").topic_id is not None
        assert s.topics["b"].partitions[0].replicas == (2, 0) and s.topics["b"].partitions[0].leader == 2
        assert s.offline_replicas("b", 1) == ()
        with pytest.raises(KeyError):
            s.offline_replicas("b", 7)


def test_topic_created_extended_and_deleted(
    zk_hosts: str, zk: KazooClient, make_cache: Callable[..., MetadataCache]
) -> None:
    cache = make_cache()  # on an empty ZooKeeper: not even /brokers/ids exists yet
    assert cache.snapshot().topics == {} and cache.snapshot().brokers == {}
    with cluster(zk_hosts, zk) as c:
        for b in (0, 1, 2):
            c.start_broker(b)
        controller = c.active()
        cache.wait_for(lambda s: s.alive_broker_ids == (0, 1, 2))
        controller.create_topics([NewTopic("t", 3, 2)])
        s = cache.wait_for(leaders_set("t", 3))
        assert all(p.isr == p.replicas and p.leader == p.replicas[0] for p in s.topics["t"].partitions.values())

        controller.create_partitions({"t": (5, None)})
        s = cache.wait_for(leaders_set("t", 5))
        assert s.topics["t"].topic_id == c.assignment("t").topic_id
        in_sync(cache, zk)

        controller.delete_topics(["t"])
        cache.wait_for(lambda s: "t" not in s.topics)
        controller.create_topics([NewTopic("t", 2, 1)])  # the same name again: a new topic
        s = cache.wait_for(leaders_set("t", 2))
        assert s.topics["t"].topic_id == c.assignment("t").topic_id
        in_sync(cache, zk)


def test_leader_and_isr_changes_and_brokers_leaving_and_joining(
    zk_hosts: str, zk: KazooClient, make_cache: Callable[..., MetadataCache]
) -> None:
    with cluster(zk_hosts, zk) as c:
        for b in (0, 1, 2):
            c.start_broker(b, candidate=b == 0)
        controller = c.active()
        controller.create_topics([NewTopic("t", assignment={0: [1, 2], 1: [2, 1]}), NewTopic("s", assignment={0: [1]})])
        cache = make_cache()
        before = in_sync(cache, zk)
        old_epoch = before.brokers[1].epoch

        c.stop_broker(1)  # the controller moves leadership away and shrinks the ISRs
        s = cache.wait_for(lambda s: (p := s.partition("t", 0)) is not None and p.leader == 2 and p.isr == (2,))
        assert 1 not in s.brokers
        assert s.offline_replicas("t", 0) == (1,)
        t0 = s.partition("t", 0)
        assert t0 is not None and t0.leader_epoch > before.topics["t"].partitions[0].leader_epoch
        assert t0.partition_epoch > before.topics["t"].partitions[0].partition_epoch
        s = cache.wait_for(lambda s: (p := s.partition("s", 0)) is not None and p.leader == -1)
        assert s.offline_replicas("s", 0) == (1,)

        c.start_broker(1, candidate=False)  # re-registers: a new broker epoch
        s = cache.wait_for(lambda s: 1 in s.brokers and (p := s.partition("s", 0)) is not None and p.leader == 1)
        assert s.brokers[1].epoch == c.nodes[1].registrar.broker_epoch != old_epoch
        c.catch_up(tp("t", 0))  # the leader lets the returning follower back into the ISR
        cache.wait_for(lambda s: (p := s.partition("t", 0)) is not None and p.isr == (2, 1))
        in_sync(cache, zk)


def test_controller_changes(zk_hosts: str, zk: KazooClient, make_cache: Callable[..., MetadataCache]) -> None:
    with cluster(zk_hosts, zk) as c:
        for b in (0, 1, 2):
            c.start_broker(b)
        first = c.active()
        cache = make_cache()
        cache.wait_for(lambda s: s.controller_id == first.broker_id)
        c.stop_broker(first.broker_id)
        second = c.active()
        cache.wait_for(lambda s: s.controller_id == second.broker_id and first.broker_id not in s.brokers)
        for b in list(c.nodes):
            c.stop_broker(b)
        cache.wait_for(lambda s: s.controller_id == -1 and not s.brokers)


def test_garbage_znodes_are_skipped_and_the_rest_served(
    zk: KazooClient, make_cache: Callable[..., MetadataCache], caplog: pytest.LogCaptureFixture
) -> None:
    zk.create(paths.broker(1), registration(9001), makepath=True, ephemeral=True)
    zk.create(paths.broker(5), b"garbage", ephemeral=True)
    create_topic_znodes(zk, "good", {0: (1,)}, states=True)
    zk.create(paths.topic("bad"), b"{not json", makepath=True)
    zk.create(paths.CONTROLLER, b"[]")
    with caplog.at_level(logging.ERROR, "controller.broker.metadata_cache"):
        cache = make_cache()
    s = cache.snapshot()
    assert set(s.topics) == {"good"} and s.alive_broker_ids == (1,) and s.controller_id == -1
    assert any("bad" in r.getMessage() for r in caplog.records)

    # the same while running: bad data in, good data still flowing
    zk.create(paths.topic("bad2"), b'{"version": 3, "partitions": {"0": "x"}}')
    zk.set(paths.partition_state("good", 0), b"not a state")
    create_topic_znodes(zk, "good2", {0: (1,), 1: (1,)}, states=True)
    s = cache.wait_for(leaders_set("good2", 2))
    assert "bad2" not in s.topics
    s = cache.wait_for(lambda s: (p := s.partition("good", 0)) is not None and p.leader == -1)
    assert s.topics["good"].partitions[0].partition_epoch == 1 and s.topics["good"].partitions[0].replicas == (1,)

    # the cache keeps watching the bad znodes: fixing them brings the topics back
    zk.set(paths.topic("bad"), TopicAssignment({0: (1,)}).encode())
    zk.set(paths.partition_state("good", 0), PartitionState(1, 3, 1, (1,)).encode())
    zk.set(paths.CONTROLLER, ControllerZnode(1, 0).encode())
    zk.set(paths.broker(5), registration(9005))
    s = cache.wait_for(
        lambda s: (
            "bad" in s.topics
            and (p := s.partition("good", 0)) is not None
            and p.leader_epoch == 3
            and s.controller_id == 1
            and 5 in s.brokers
        )
    )
    assert s.partition("bad", 0) is not None
    in_sync(cache, zk)


def test_partition_state_created_after_the_topic(zk: KazooClient, make_cache: Callable[..., MetadataCache]) -> None:
    zk.ensure_path(paths.BROKER_IDS)
    create_topic_znodes(zk, "late", {0: (1, 2), 1: (2, 1)}, states=False)
    cache = make_cache()
    p0 = cache.snapshot().partition("late", 0)
    assert p0 is not None and (p0.leader, p0.isr, p0.leader_epoch, p0.partition_epoch) == (-1, (), -1, -1)
    zk.create(paths.partition_state("late", 1), PartitionState(2, 0, 1, (2, 1)).encode(), makepath=True)
    s = cache.wait_for(lambda s: (p := s.partition("late", 1)) is not None and p.leader == 2)
    assert s.topics["late"].partitions[1].isr == (2, 1) and s.topics["late"].partitions[1].partition_epoch == 0

    # the same for a topic that appears while the cache runs (a legacy tool writes only the topic znode)
    create_topic_znodes(zk, "tool", {0: (1,)}, states=False)
    s = cache.wait_for(lambda s: "tool" in s.topics)
    assert s.topics["tool"].partitions[0].leader == -1
    zk.create(paths.partition_state("tool", 0), PartitionState(1, 0, 1, (1,)).encode(), makepath=True)
    cache.wait_for(lambda s: (p := s.partition("tool", 0)) is not None and p.leader == 1)

    # a topic deleted and re-created in one transaction: only the topic znode's watch says so
    tx = zk.transaction()
    tx.delete(paths.partition_state("late", 1))
    tx.delete(paths.partition("late", 1))
    tx.delete(paths.topic_partitions("late"))
    tx.delete(paths.topic("late"))
    tx.create(paths.topic("late"), TopicAssignment({0: (3,)}, topic_id="AAAAAAAAAAAAAAAAAAAAAg").encode())
    tx.create(paths.topic_partitions("late"))
    tx.create(paths.partition("late", 0))
    tx.create(paths.partition_state("late", 0), PartitionState(3, 0, 1, (3,)).encode())
    assert not any(isinstance(r, Exception) for r in tx.commit())
    s = cache.wait_for(lambda s: (t := s.topics.get("late")) is not None and t.topic_id == "AAAAAAAAAAAAAAAAAAAAAg")
    assert s.partition("late", 0) is not None and list(s.topics["late"].partitions) == [0]
    in_sync(cache, zk)


def test_snapshots_are_immutable_and_listener_sees_every_version(
    zk: KazooClient, make_cache: Callable[..., MetadataCache]
) -> None:
    zk.ensure_path(paths.BROKER_IDS)
    create_topic_znodes(zk, "t", {0: (1,)}, states=True)
    seen: list[int] = []
    cache = make_cache(listener=lambda s: seen.append(s.version))
    old = cache.snapshot()
    old_view = view(old)
    with pytest.raises(TypeError):
        old.topics["x"] = old.topics["t"]  # type: ignore[index]
    with pytest.raises(TypeError):
        old.topics["t"].partitions[0] = old.topics["t"].partitions[0]  # type: ignore[index]
    # A partition record is immutable by contract (CachedPartition's docstring says why it is not frozen): the
    # check below that the old snapshot reads as before after every change is what holds the cache to it.

    zk.set(paths.partition_state("t", 0), PartitionState(1, 1, 1, (1,)).encode())
    create_topic_znodes(zk, "u", {0: (1,)}, states=True)
    zk.create(paths.broker(1), registration(9001), ephemeral=True)
    new = cache.wait_for(lambda s: "u" in s.topics and 1 in s.brokers and s.topics["t"].partitions[0].leader_epoch == 1)
    assert view(old) == old_view and "u" not in old.topics and old.topics["t"].partitions[0].leader_epoch == 0
    assert new.version > old.version
    assert seen == list(range(old.version, new.version + 1))  # the listener got each one, in order

    cache.stop()
    zk.create(paths.topic("after_stop"), TopicAssignment({0: (1,)}).encode())
    barrier = make_cache()  # a second cache on the same connection: the stopped cache's watch has fired by now
    barrier.wait_for(lambda s: "after_stop" in s.topics)
    assert cache.snapshot() is new and seen[-1] == new.version


def test_reload_after_session_expiry_catches_up(
    zk_hosts: str, zk: KazooClient, cache_session: ZkSession, make_cache: Callable[..., MetadataCache]
) -> None:
    with cluster(zk_hosts, zk) as c:
        for b in (0, 1, 2):
            c.start_broker(b, candidate=b == 0)
        controller = c.active()
        controller.create_topics([NewTopic("t", assignment={0: [1, 2], 1: [2, 1]}), NewTopic("gone", 1, 1)])
        cache = make_cache()
        in_sync(cache, zk)
        expire_session(cache_session.client)  # every watch of the cache is gone on the server now
        controller.create_topics([NewTopic("new", 2, 2)])
        controller.delete_topics(["gone"])
        c.stop_broker(1)
        wait_for(lambda: c.state("t", 0).leader == 2, what="leader moved")
        s = in_sync(cache, zk)
        assert cache.full_loads >= 2
        assert "new" in s.topics and "gone" not in s.topics and 1 not in s.brokers
        # and the reload left working watches behind
        controller.create_partitions({"new": (3, None)})
        cache.wait_for(leaders_set("new", 3))


def test_connection_drop_also_reloads(
    zk_hosts: str, zk: KazooClient, cache_session: ZkSession, make_cache: Callable[..., MetadataCache]
) -> None:
    """kazoo 2.11 forgets every watch on a plain disconnect too (no SetWatches on reconnect)."""
    zk.ensure_path(paths.BROKER_IDS)
    create_topic_znodes(zk, "t", {0: (1,)}, states=True)
    cache = make_cache()
    drop_connection(cache_session.client)
    zk.set(paths.partition_state("t", 0), PartitionState(1, 5, 1, (1,)).encode())
    cache.wait_for(lambda s: s.topics["t"].partitions[0].leader_epoch == 5)
    wait_for(lambda: cache.full_loads >= 2, what="a reload after the reconnect")
    zk.set(paths.partition_state("t", 0), PartitionState(1, 6, 1, (1,)).encode())
    cache.wait_for(lambda s: s.topics["t"].partitions[0].leader_epoch == 6)


def test_zookeeper_outage_keeps_the_last_snapshot(caplog: pytest.LogCaptureFixture) -> None:
    with LocalZooKeeper(tick_ms=250) as server:
        writer = new_client(server.connect_string)
        writer.start(timeout=20)
        session = ZkSession(server.connect_string, session_timeout_ms=2000, retry_deadline_ms=600, name="cache")
        session.start()
        cache = MetadataCache(session)
        try:
            create_topic_znodes(writer, "t", {0: (1,)}, states=True)
            served = cache.start()
            assert "t" in served.topics
            server.pause(1)
            # a watch event whose re-read meets an unreachable ZooKeeper
            with caplog.at_level(logging.WARNING, "controller.broker.metadata_cache"):
                cache._on_watch(WatchedEvent(EventType.CHILD, KazooState.CONNECTED, paths.BROKER_TOPICS))
                wait_for(
                    lambda: any(
                        r.name == "controller.broker.metadata_cache" and "unavailable" in r.getMessage()
                        for r in caplog.records
                    ),
                    what="a failed retry",
                )
            assert cache.snapshot() is served
            server.resume(1)
            writer.retry(create_topic_znodes, writer, "u", {0: (1,)}, True)
            cache.wait_for(lambda s: "u" in s.topics)
        finally:
            server.resume(1)
            cache.stop()
            session.close()
            writer.stop()
            writer.close()


def test_load_of_2000_partitions(zk_hosts: str, zk: KazooClient, make_cache: Callable[..., MetadataCache]) -> None:
    with cluster(zk_hosts, zk) as c:
        for b in (0, 1, 2):
            c.start_broker(b, candidate=b == 0)
        c.active().create_topics([NewTopic("big", 1500, 2), *(NewTopic(f"small{i}", 50, 2) for i in range(10))])
        started = time.monotonic()
        cache = make_cache()
        loaded = time.monotonic() - started
        s = cache.snapshot()
        assert sum(len(t.partitions) for t in s.topics.values()) == 2000
        assert leaders_set("big", 1500)(s)
        c.stop_broker(1)  # about 1,300 partitions change leader or ISR
        started = time.monotonic()
        cache.wait_for(lambda s: all(1 not in p.isr for t in s.topics.values() for p in t.partitions.values()), 60)
        moved = time.monotonic() - started
        in_sync(cache, zk, 60)
        print(f"\nmetadata cache: 2000 partitions loaded in {loaded:.2f}s; ISR shrink seen after {moved:.2f}s")


def test_bulk_updates_read_and_rewatch_as_a_load_does(
    zk: KazooClient, cache_session: ZkSession, make_cache: Callable[..., MetadataCache]
) -> None:
    """400 states changed at once (as a reassignment's epoch bump does) are read as a full load reads them
    (multiRead + SetWatches, watched.BULK_UPDATE): every change served, every watch armed again so that the
    next bulk change is seen too; the topic's deletion is seen as well."""
    assignment: dict[int, tuple[int, ...]] = {p: (1, 2) for p in range(400)}
    create_topic_znodes(zk, "bulk", assignment, states=True)
    cache = make_cache()
    in_sync(cache, zk)
    for epoch in (1, 2):
        txn = zk.transaction()
        for p in assignment:
            txn.set_data(paths.partition_state("bulk", p), PartitionState(2, epoch, 1, (2, 1)).encode())
        txn.commit()
        s = in_sync(cache, zk)
        assert {p.leader_epoch for p in s.topics["bulk"].partitions.values()} == {epoch}
    client = cache_session.client
    watched = client._data_watchers  # kazoo's table, keyed by the server's path (the chroot included)
    armed = [p for p in assignment if server_path(client, paths.partition_state("bulk", p)) in watched]
    assert len(armed) == len(assignment)
    zk.delete(paths.topic("bulk"), recursive=True)
    cache.wait_for(lambda s: "bulk" not in s.topics, 30)


def _server_watches(client: KazooClient, prefix: str) -> list[str]:
    """The paths under ``prefix`` (server paths) the server holds a watch on for ``client``'s session
    (ZooKeeper's ``wchc``: watches by session)."""
    session = f"0x{client.client_id[0]:x}"
    found, current = [], None
    for line in client.command(b"wchc").splitlines():
        if line.startswith("0x"):
            current = line.strip()
        elif current == session and line.strip().startswith(prefix):
            found.append(line.strip())
    return found


def test_a_deleted_topic_leaves_no_watches(
    zk_hosts: str, zk: KazooClient, cache_session: ZkSession, make_cache: Callable[..., MetadataCache]
) -> None:
    """Kafka deletes a topic's partition states before its topic znode, so the cache, still seeing the topic,
    re-arms each vanished state with an exists watch; once the topic znode is gone those are removed, in
    kazoo's table and on the server, instead of staying for the session's life."""
    with cluster(zk_hosts, zk) as c:
        for b in (0, 1):
            c.start_broker(b)
        controller = c.active()
        cache = make_cache()
        client = cache_session.client
        controller.create_topics([NewTopic("kept", 2, 2), NewTopic("gone", 4, 2)])
        cache.wait_for(lambda s: leaders_set("gone", 4)(s) and leaders_set("kept", 2)(s))
        gone = server_path(client, "/brokers/topics/gone")
        kept = [server_path(client, paths.partition_state("kept", p)) for p in range(2)]
        states = [server_path(client, paths.partition_state("gone", p)) for p in range(4)]
        assert all(p in client._data_watchers for p in states + kept)  # watched while the topic lives
        assert len(_server_watches(client, gone)) >= 4

        # the deletion as Kafka's controller does it, the states first and the topic znode a moment later
        for p in range(4):
            zk.delete(paths.partition_state("gone", p))
        wait_for(lambda: cache.snapshot().topics["gone"].partitions[0].leader < 0, what="the states seen gone")
        assert all(p in client._data_watchers for p in states)  # exists watches: a state may come back
        zk.delete(paths.topic("gone"), recursive=True)
        cache.wait_for(lambda s: "gone" not in s.topics)

        wait_for(lambda: not any(p in client._data_watchers for p in states), what="kazoo's table emptied")
        wait_for(lambda: not _server_watches(client, gone), what="the server's watches removed")
        assert all(p in client._data_watchers for p in kept)  # the other topic keeps its watches
        assert len(_server_watches(client, server_path(client, "/brokers/topics/kept"))) == 3  # znode, 2 states

        controller.create_topics([NewTopic("gone", 2, 1)])  # the name again: a new topic, watched afresh
        cache.wait_for(leaders_set("gone", 2))
        assert all(p in client._data_watchers for p in states[:2])
        in_sync(cache, zk)
