"""Session handling and the remaining ZooKeeper-level behaviours (reference §2, §3, §6 scenario 3)."""

from __future__ import annotations

import gc
import weakref

import pytest
from kazoo.client import KazooClient

from controller.active.api import NewTopic
from controller.active.controller import Controller
from controller.active.state_changes import update_states
from controller.devstack.localzk import LocalZooKeeper
from controller.store.registration import Registrar, ensure_persistent_paths
from controller.zk.session import ZkSession
from tests.integration.cluster import cluster, wait_for
from tests.zkharness import drop_connection, expire_session
from zkmodel import errorcodes as E
from zkmodel import ibp, paths
from zkmodel.admin import PartitionReassignmentZnode, TopicPartition
from zkmodel.brokers import BrokerRegistration, EndPoint
from zkmodel.topics import PartitionState

pytestmark = pytest.mark.integration


def test_legacy_znode_reacts_to_creation_only(zk_hosts: str, zk: KazooClient) -> None:
    with cluster(zk_hosts, zk) as c:
        for b in (1, 2, 3):
            c.start_broker(b, candidate=b == 1)
        controller = c.active()
        controller.create_topics([NewTopic("t", assignment={0: [1], 1: [1]})])
        zk.create(paths.REASSIGN_PARTITIONS, PartitionReassignmentZnode(((TopicPartition("t", 0), (2,)),)).encode())
        wait_for(lambda: TopicPartition("t", 0) in c.reassignments(), what="move from the created znode")
        # setData on the existing node is ignored, as in Kafka (PartitionReassignmentHandler: creation only).
        zk.set(paths.REASSIGN_PARTITIONS, PartitionReassignmentZnode(((TopicPartition("t", 1), (3,)),)).encode())
        controller.create_topics([NewTopic("marker", 1, 1)])  # a round trip through the event queue
        assert TopicPartition("t", 1) not in c.reassignments()
        assert c.assignment("t").partitions[1] == (1,)


def test_scenario_3_state_updates_with_mixed_partitions(zk_hosts: str, zk: KazooClient) -> None:
    with cluster(zk_hosts, zk) as c:
        c.start_broker(0)
        controller = c.active()
        controller.create_topics([NewTopic("topic1", assignment={0: [0], 1: [0]}), NewTopic("topic2", 1, 1)])

        def run(active):
            ctx = active.ctx
            # topic1-1 is changed behind the controller's back: its partition epoch in memory is stale
            zk.set(paths.partition_state("topic1", 1), PartitionState(0, 0, 1, (0,)).encode())
            zk.delete(paths.partition_state("topic2", 0))  # and topic2-0's state znode disappears

            def bump(_tp, info):
                s = info.state
                return PartitionState(s.leader, s.leader_epoch + 1, ctx.epoch, s.isr)

            tps = [TopicPartition("topic1", 0), TopicPartition("topic1", 1), TopicPartition("topic2", 0)]
            return update_states(ctx, active.writer, controller.session, tps, bump)

        written = controller.call("test", run)
        # matching epoch: written; stale epoch: re-read and retried; missing: reported, nothing crashes
        assert set(written) == {TopicPartition("topic1", 0), TopicPartition("topic1", 1)}
        assert c.state("topic1", 0).leader_epoch == 1
        assert zk.get(paths.partition_state("topic1", 1))[1].version == 2
        assert zk.exists(paths.partition_state("topic2", 0)) is None


def test_connection_drop_pauses_writes_and_keeps_leadership(zk_hosts: str, zk: KazooClient) -> None:
    with cluster(zk_hosts, zk) as c:
        c.start_broker(0)
        controller = c.active()
        epoch = controller.epoch
        drop_connection(controller.session.client)
        wait_for(lambda: "writes resumed" in controller.last_status, what="resume after reconnect")
        assert controller.is_active and controller.epoch == epoch
        assert controller.create_topics([NewTopic("after", 1, 1)])["after"][0] is E.NONE


def test_disconnected_longer_than_session_timeout_demotes_without_waiting_for_lost() -> None:
    with LocalZooKeeper(tick_ms=250) as server:
        session = ZkSession(server.connect_string, session_timeout_ms=2000, retry_deadline_ms=600, name="c")
        session.start()
        ensure_persistent_paths(session)
        Registrar(session, 1).register(BrokerRegistration((EndPoint("PLAINTEXT", "h", 1, "PLAINTEXT"),), 1))
        controller = Controller(session, 1, ibp.LATEST_PRODUCTION, tick_seconds=0.1)
        controller.start()
        try:
            wait_for(lambda: controller.is_active, what="election")
            server.pause(1)  # the server stops answering: the client sees SUSPENDED, never LOST
            wait_for(lambda: not controller.is_active, 30, "demotion while disconnected")
            assert "longer than the session timeout" in controller.last_status
            server.resume(1)
            wait_for(lambda: controller.is_active, 30, "re-election after the outage")
        finally:
            server.resume(1)
            controller.stop()
            session.close()


def test_expired_broker_re_registers_with_a_new_epoch(zk_hosts: str, zk: KazooClient) -> None:
    with cluster(zk_hosts, zk) as c:
        c.start_broker(0)
        follower = c.start_broker(1)
        controller = c.active()
        controller.create_topics([NewTopic("t", assignment={0: [1, 0]})])
        old_epoch = follower.registrar.broker_epoch
        expire_session(follower.session.client)
        wait_for(
            lambda: zk.exists(paths.broker(1)) is not None and follower.registrar.broker_epoch != old_epoch,
            what="re-registration",
        )
        assert zk.get(paths.broker(1))[1].czxid == follower.registrar.broker_epoch
        wait_for(
            lambda: controller.snapshot().live_brokers[1].epoch == follower.registrar.broker_epoch,
            what="the controller to see the new broker epoch",
        )


def test_an_expected_failure_through_the_retry_keeps_nothing_of_its_callers_alive(zk_hosts: str) -> None:
    """A NoNode answered through the session's retry is an answer (``get`` returns None), and the caller's
    locals are freed by reference counting when it returns: tenacity's retry state holds the exception, whose
    traceback holds those frames, so without the frames cleared they would wait for a full collection."""

    class Request:
        pass

    session = ZkSession(zk_hosts, session_timeout_ms=6000, name="cycle-check")
    session.start()
    gc.disable()
    try:

        def handle() -> weakref.ref[Request]:
            request = Request()  # the caller's local, as a request's maps are
            assert session.get("/no/such/znode") is None
            return weakref.ref(request)

        kept = handle()
        assert kept() is None
    finally:
        gc.enable()
        session.close()
