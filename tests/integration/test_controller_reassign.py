"""KIP-455 reassignments and broker loss against a real ZooKeeper (reference §6 scenarios 11, 15-21, 23)."""

from __future__ import annotations

import pytest
from kazoo.client import KazooClient

from controller.active.api import IsrUpdate, NewTopic
from tests.integration.cluster import Cluster, cluster, wait_for
from zkmodel import errorcodes as E
from zkmodel import paths
from zkmodel.admin import PartitionReassignmentZnode, TopicPartition
from zkmodel.reassignment import ReplicaAssignment
from zkmodel.topics import PartitionState, TopicAssignment

pytestmark = pytest.mark.integration


def tp(topic: str, partition: int) -> TopicPartition:
    return TopicPartition(topic, partition)


def write_znode(zk: KazooClient, moves: dict[TopicPartition, tuple[int, ...]]) -> None:
    zk.create(paths.REASSIGN_PARTITIONS, PartitionReassignmentZnode(tuple(moves.items())).encode())


def finish(c: Cluster, *tps: TopicPartition) -> None:
    for p in tps:
        c.catch_up(p)


def test_scenario_11_reassignment_through_the_znode(zk_hosts: str, zk: KazooClient) -> None:
    with cluster(zk_hosts, zk) as c:
        c.start_broker(0)
        c.start_broker(1)
        controller = c.active()
        controlling = controller.broker_id
        other = 1 - controlling
        controller.create_topics([NewTopic("t", assignment={0: [controlling]})])
        write_znode(zk, {tp("t", 0): (other,)})
        wait_for(lambda: c.assignment("t").adding_replicas == {0: (other,)}, what="U1 write")
        assert c.assignment("t").partitions[0] == (other, controlling)
        # A1 is the controller's next write after U1, as in Kafka's onPartitionReassignment: not in the same
        # transaction, so a reader may see U1 alone for a moment.
        wait_for(lambda: c.state("t", 0).leader_epoch == 1, what="A1 write")
        assert c.reassignments() == {tp("t", 0): ReplicaAssignment((other, controlling), (other,), (controlling,))}

        c.catch_up(tp("t", 0))  # the leader reports the new replica in sync
        wait_for(lambda: zk.exists(paths.REASSIGN_PARTITIONS) is None, what="znode deletion")
        state = c.state("t", 0)
        assert (state.leader, state.leader_epoch, state.controller_epoch, state.isr) == (other, 3, 1, (other,))
        topic = c.assignment("t")
        assert topic.partitions == {0: (other,)} and topic.adding_replicas == {} and topic.removing_replicas == {}
        assert c.reassignments() == {}


def test_scenario_11_variant_target_offline_then_restarted(zk_hosts: str, zk: KazooClient) -> None:
    with cluster(zk_hosts, zk) as c:
        c.start_broker(0)
        controller = c.active()
        controller.create_topics([NewTopic("t", assignment={0: [0]})])
        write_znode(zk, {tp("t", 0): (1,)})  # broker 1 is not running: ZK entries skip validation
        wait_for(lambda: c.assignment("t").adding_replicas == {0: (1,)}, what="U1 write")
        assert c.state("t", 0).leader_epoch == 1
        assert zk.exists(paths.REASSIGN_PARTITIONS) is not None  # the znode remains

        c.start_broker(1, candidate=False)
        wait_for(lambda: c.state("t", 0).leader_epoch == 2, what="A1 again when the target broker starts")
        c.catch_up(tp("t", 0))
        wait_for(lambda: zk.exists(paths.REASSIGN_PARTITIONS) is None, what="completion")
        assert (c.state("t", 0).leader, c.state("t", 0).leader_epoch) == (1, 4)


def test_scenario_15_znode_written_while_all_brokers_are_down(zk_hosts: str, zk: KazooClient) -> None:
    with cluster(zk_hosts, zk) as c:
        c.start_broker(1)
        c.start_broker(2)
        c.active().create_topics([NewTopic("orders", assignment={0: [1, 2], 1: [1, 2]})])
        for b in (1, 2):
            c.stop_broker(b)
    write_znode(zk, {tp("orders", 0): (2, 1), tp("customers", 0): (1,)})
    with cluster(zk_hosts, zk) as c:
        c.start_broker(1)
        c.start_broker(2)
        c.active()
        wait_for(lambda: zk.exists(paths.REASSIGN_PARTITIONS) is None, what="znode deleted")
        assert c.assignment("orders").partitions == {0: (2, 1), 1: (1, 2)}
        assert zk.exists(paths.topic("customers")) is None


def test_scenario_16_znode_has_precedence_at_startup(zk_hosts: str, zk: KazooClient) -> None:
    with cluster(zk_hosts, zk) as c:
        for b in (1, 2, 3):
            c.start_broker(b, candidate=b == 1)
        c.active().create_topics([NewTopic("orders", assignment={0: [1, 2], 3: [1, 2], 1: [1, 2], 2: [1, 2]})])
    # Offline edits, as if a controller died mid-move: AR/RR for orders-0 and orders-3, plus the znode.
    zk.set(
        paths.topic("orders"),
        TopicAssignment(
            {0: (3, 1, 2), 1: (1, 2), 2: (1, 2), 3: (3, 1, 2)}, {0: (3,), 3: (3,)}, {0: (2,), 3: (2,)}
        ).encode(),
    )
    write_znode(zk, {tp("orders", 0): (2, 3)})
    with cluster(zk_hosts, zk) as c:
        for b in (1, 2, 3):
            c.start_broker(b, candidate=b == 1)
        c.active()
        wait_for(lambda: c.assignment("orders").partitions[0][:2] == (2, 3), what="znode target applied")
        finish(c, tp("orders", 0), tp("orders", 3))
        wait_for(lambda: not c.assignment("orders").adding_replicas, what="moves complete")
        final = c.assignment("orders").partitions
        assert final[0] == (2, 3)  # the znode's target, not the AR/RR one (3, 1)
        assert final[3] == (3, 1)  # resumed from AR/RR
        assert zk.exists(paths.REASSIGN_PARTITIONS) is None


def test_scenario_17_api_then_znode_latest_wins(zk_hosts: str, zk: KazooClient) -> None:
    with cluster(zk_hosts, zk) as c:
        for b in (100, 101, 102):
            c.start_broker(b, candidate=b == 100)
        controller = c.active()
        controller.create_topics([NewTopic("a", assignment={0: [100]})])
        assert controller.alter_partition_reassignments({tp("a", 0): [101]})[tp("a", 0)][0] is E.NONE
        write_znode(zk, {tp("a", 0): (102,)})
        wait_for(lambda: c.assignment("a").partitions[0][0] == 102, what="znode retarget")
        finish(c, tp("a", 0))
        wait_for(lambda: c.assignment("a").partitions == {0: (102,)}, what="final 102")


def test_scenario_18_znode_then_api(zk_hosts: str, zk: KazooClient) -> None:
    with cluster(zk_hosts, zk) as c:
        for b in (100, 101, 102):
            c.start_broker(b, candidate=b == 100)
        controller = c.active()
        controller.create_topics([NewTopic("A", assignment={0: [100], 1: [100]}), NewTopic("B", assignment={0: [100]})])
        write_znode(zk, {tp("A", 0): (101,), tp("A", 1): (101,)})
        wait_for(lambda: len(c.reassignments()) == 2, what="znode moves started")
        results = controller.alter_partition_reassignments({tp("A", 1): [102], tp("B", 0): [102]})
        assert all(r[0] is E.NONE for r in results.values())
        znode = PartitionReassignmentZnode.decode("z", zk.get(paths.REASSIGN_PARTITIONS)[0])
        assert znode.as_dict() == {tp("A", 0): (101,)}  # the API call took A-1 out of the znode
        finish(c, tp("A", 0))
        wait_for(lambda: zk.exists(paths.REASSIGN_PARTITIONS) is None, what="znode deleted once A-0 finished")
        finish(c, tp("A", 1), tp("B", 0))
        wait_for(lambda: not c.reassignments(), what="all done")
        assert c.assignment("A").partitions == {0: (101,), 1: (102,)}
        assert c.assignment("B").partitions == {0: (102,)}


def test_scenario_19_one_call_mixing_cancel_and_set(zk_hosts: str, zk: KazooClient) -> None:
    with cluster(zk_hosts, zk) as c:
        for b in (100, 101, 102):
            c.start_broker(b, candidate=b == 100)
        controller = c.active()
        controller.create_topics([NewTopic("t", assignment={p: [100] for p in range(4)})])
        controller.alter_partition_reassignments({tp("t", 0): [101]})
        results = controller.alter_partition_reassignments(
            {tp("t", 0): None, tp("t", 1): [102], tp("t", 2): [101], tp("t", 3): None}
        )
        assert results[tp("t", 0)][0] is E.NONE
        assert results[tp("t", 1)][0] is E.NONE and results[tp("t", 2)][0] is E.NONE
        assert results[tp("t", 3)][0] is E.NO_REASSIGNMENT_IN_PROGRESS
        finish(c, tp("t", 1), tp("t", 2))
        wait_for(lambda: not c.reassignments(), what="moves done")
        assert c.assignment("t").partitions == {0: (100,), 1: (102,), 2: (101,), 3: (100,)}


def test_scenario_20_cancel_through_the_api(zk_hosts: str, zk: KazooClient) -> None:
    with cluster(zk_hosts, zk) as c:
        for b in (100, 101, 102):
            c.start_broker(b, candidate=b == 100)
        controller = c.active()
        controller.create_topics([NewTopic("t", assignment={0: [100, 101]}), NewTopic("z", assignment={0: [100]})])
        controller.alter_partition_reassignments({tp("t", 0): [102, 101]})
        assert c.assignment("t").partitions[0] == (102, 101, 100)
        controller.alter_partition_reassignments({tp("t", 0): None})
        assert sorted(c.assignment("t").partitions[0]) == [100, 101]
        assert c.assignment("t").adding_replicas == {}
        assert 102 not in c.state("t", 0).isr

        write_znode(zk, {tp("z", 0): (101,)})  # a znode-triggered move, cancelled through the API
        wait_for(lambda: tp("z", 0) in c.reassignments(), what="znode move")
        controller.alter_partition_reassignments({tp("z", 0): None})
        assert c.assignment("z").partitions[0] == (100,)
        assert zk.exists(paths.REASSIGN_PARTITIONS) is None


def test_scenario_21_same_set_new_order(zk_hosts: str, zk: KazooClient) -> None:
    with cluster(zk_hosts, zk) as c:
        for b in (100, 101, 102):
            c.start_broker(b, candidate=b == 100)
        controller = c.active()
        controller.create_topics([NewTopic("t", assignment={0: [100, 101, 102]})])
        controller.alter_partition_reassignments({tp("t", 0): [102, 101, 100]})
        assert c.assignment("t").partitions == {0: (102, 101, 100)}
        assert c.reassignments() == {}


def test_alter_reassignment_validation_order_and_messages(zk_hosts: str, zk: KazooClient) -> None:
    with cluster(zk_hosts, zk) as c:
        c.start_broker(0)
        c.start_broker(1, candidate=False)
        controller = c.active()
        controller.create_topics([NewTopic("t", assignment={0: [0]})])
        results = controller.alter_partition_reassignments(
            {
                tp("t", 0): [],
                tp("t", 1): [1, 1],
                tp("t", 2): [-1],
                tp("u", 0): [7],  # unknown partition with a dead target: validation comes first
                tp("u", 1): [1],
                tp("u", 2): None,
            }
        )
        assert results[tp("t", 0)] == (
            E.INVALID_REPLICA_ASSIGNMENT,
            "Empty replica list specified in partition reassignment.",
        )
        assert results[tp("t", 1)] == (
            E.INVALID_REPLICA_ASSIGNMENT,
            "Duplicate replica ids in partition reassignment replica list: List(1, 1)",
        )
        assert results[tp("t", 2)] == (E.INVALID_REPLICA_ASSIGNMENT, "Invalid broker id in replica list: List(-1)")
        assert results[tp("u", 0)][0] is E.INVALID_REPLICA_ASSIGNMENT
        assert "not alive" in (results[tp("u", 0)][1] or "")
        assert results[tp("u", 1)] == (E.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist.")
        assert results[tp("u", 2)] == (E.NO_REASSIGNMENT_IN_PROGRESS, None)


def test_scenario_23_cancel_shape_and_second_cancel(zk_hosts: str, zk: KazooClient) -> None:
    with cluster(zk_hosts, zk) as c:
        for b in (0, 1, 2, 3):
            c.start_broker(b, candidate=b == 0)
        controller = c.active()
        controller.create_topics([NewTopic("foo", assignment={0: [0, 1, 2]})])
        controller.alter_partition_reassignments({tp("foo", 0): [0, 1, 3]})
        assert c.assignment("foo").partitions[0] == (0, 1, 3, 2)
        first = controller.alter_partition_reassignments({tp("foo", 0): None})
        assert first[tp("foo", 0)][0] is E.NONE
        second = controller.alter_partition_reassignments({tp("foo", 0): None})
        assert second[tp("foo", 0)][0] is E.NO_REASSIGNMENT_IN_PROGRESS
        assert 3 not in c.assignment("foo").partitions[0]


def test_broker_loss_moves_leaders_from_isr_and_return_restores_them(zk_hosts: str, zk: KazooClient) -> None:
    with cluster(zk_hosts, zk) as c:
        for b in (0, 1, 2):
            c.start_broker(b, candidate=b == 0)
        controller = c.active()
        controller.create_topics(
            [
                NewTopic("t", assignment={0: [1, 2], 1: [2, 1]}),
                NewTopic("s", assignment={0: [1]}),
                NewTopic("p", assignment={0: [1, 2]}),
            ]
        )
        c.stop_broker(1)
        wait_for(lambda: c.state("t", 0).leader == 2, what="new leader from the ISR")
        assert c.state("t", 0).isr == (2,)
        assert c.state("t", 1).isr == (2,) and c.state("t", 1).leader == 2
        wait_for(lambda: c.state("s", 0).leader == -1, what="offline partition")
        assert c.state("s", 0).isr == (1,)  # the ISR is never emptied

        c.start_broker(1, candidate=False)
        wait_for(lambda: c.state("s", 0).leader == 1, what="offline partition back")
        c.catch_up(tp("t", 0))  # the leader lets the returning follower back into the ISR
        assert c.state("t", 0).isr == (2, 1)
        results = controller.elect_leaders(0, [tp("t", 0), tp("t", 1), tp("p", 0), tp("nope", 0)])
        assert results[tp("t", 0)][0] is E.NONE and c.state("t", 0).leader == 1
        assert results[tp("t", 1)][0] is E.ELECTION_NOT_NEEDED  # its preferred replica 2 already leads
        assert results[tp("p", 0)][0] is E.PREFERRED_LEADER_NOT_AVAILABLE  # 1 is back but not yet in the ISR
        assert results[tp("nope", 0)][0] is E.UNKNOWN_TOPIC_OR_PARTITION


def test_alter_partition_checks(zk_hosts: str, zk: KazooClient) -> None:
    with cluster(zk_hosts, zk) as c:
        for b in (0, 1, 2):
            c.start_broker(b, candidate=b == 0)
        controller = c.active()
        controller.create_topics([NewTopic("t", assignment={0: [1, 2]})])
        p = tp("t", 0)
        epoch1 = c.nodes[1].registrar.broker_epoch
        _, stat = zk.get(paths.partition_state("t", 0))
        assert (
            controller.alter_partition(1, epoch1 + 999, {p: IsrUpdate(0, (1,), stat.version)})[0]
            is E.STALE_BROKER_EPOCH
        )
        _, results = controller.alter_partition(1, epoch1, {p: IsrUpdate(0, (1,), stat.version)})
        written = results[p].state
        assert results[p].error is E.NONE and written is not None and written.isr == (1,)
        stale = controller.alter_partition(1, epoch1, {p: IsrUpdate(0, (1, 2), stat.version)})[1][p]
        assert stale.error is E.INVALID_UPDATE_VERSION
        newer = controller.alter_partition(1, epoch1, {p: IsrUpdate(5, (1, 2), stat.version + 1)})[1][p]
        assert newer.error is E.NOT_CONTROLLER
        dead = controller.alter_partition(1, epoch1, {p: IsrUpdate(0, (1, 7), stat.version + 1)})[1][p]
        assert dead.error is E.INELIGIBLE_REPLICA
        same = controller.alter_partition(1, epoch1, {p: IsrUpdate(0, (1,), stat.version + 1)})[1][p]
        assert same.error is E.NONE  # already in the desired state
        assert controller.alter_partition(1, epoch1, {tp("x", 0): IsrUpdate(0, (1,), 0)})[1][tp("x", 0)].error is (
            E.UNKNOWN_TOPIC_OR_PARTITION
        )


def test_controlled_shutdown_moves_leadership_first(zk_hosts: str, zk: KazooClient) -> None:
    with cluster(zk_hosts, zk) as c:
        for b in (0, 1, 2):
            c.start_broker(b, candidate=b == 0)
        controller = c.active()
        controller.create_topics([NewTopic("t", assignment={0: [1, 2], 1: [2, 1]}), NewTopic("s", assignment={0: [1]})])
        error, remaining = controller.controlled_shutdown(1, c.nodes[1].registrar.broker_epoch)
        assert error is E.NONE
        assert remaining == [tp("s", 0)]  # a single-replica partition cannot move
        assert c.state("t", 0).leader == 2 and c.state("t", 0).isr == (2,)
        assert c.state("t", 1).isr == (2,)


def test_a1_reads_a_state_changed_behind_the_controllers_back(zk_hosts: str, zk: KazooClient) -> None:
    """The A1 epoch bump is written conditional on the state's zkVersion the controller knows instead of after
    re-reading every state (Kafka re-reads): a state a legacy broker changed meanwhile fails that write, is read
    again, and a move the fresh ISR already satisfies completes at once, as Kafka's read would have found."""
    with cluster(zk_hosts, zk) as c:
        c.start_broker(0)
        c.start_broker(1, candidate=False)
        controller = c.active()
        assert controller.broker_id == 0
        controller.create_topics([NewTopic("t", assignment={0: [0]})])
        path = paths.partition_state("t", 0)
        data, stat = zk.get(path)
        old = PartitionState.decode(path, data)
        # a broker at IBP < 2.7 writes the ISR itself; its change notification has not been processed
        behind = PartitionState(old.leader, old.leader_epoch, old.controller_epoch, (0, 1), old.leader_recovery_state)
        zk.set(path, behind.encode(), version=stat.version)

        results = controller.alter_partition_reassignments({tp("t", 0): [1, 0]})

        assert results[tp("t", 0)] == (E.NONE, None)
        assert c.reassignments() == {}  # complete: target (1, 0) is in the ISR ZooKeeper holds
        assert c.assignment("t").partitions == {0: (1, 0)}
        assert c.assignment("t").adding_replicas == {}
        state = c.state("t", 0)
        assert state.isr == (0, 1) and state.leader == 0 and state.leader_epoch > old.leader_epoch


def test_own_topic_writes_are_not_read_back_and_a_later_change_is(
    zk_hosts: str, zk: KazooClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The topic watches a reassignment's own topic znode writes fire (before the writes are answered) are set
    again relative to each write, not read; a legacy tool's change after the write still fires and is read."""
    with cluster(zk_hosts, zk) as c:
        for b in (100, 101, 102):
            c.start_broker(b, candidate=b == 100)
        controller = c.active()
        names = [f"t{i}" for i in range(20)]
        controller.create_topics([NewTopic(n, assignment={0: [100, 101]}) for n in names])
        session = c.nodes[100].session
        read: list[str] = []
        real = session.read_data

        def spy(znodes: list[str], **kwargs: object) -> object:
            read.extend(znodes)
            return real(znodes, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(session, "read_data", spy)
        controller.alter_partition_reassignments({tp(n, 0): [102, 101] for n in names})
        assert all(c.assignment(n).adding_replicas == {0: (102,)} for n in names)
        controller.list_partition_reassignments(None)  # handled after the watch events of the writes above
        assert not [p for p in read if p.startswith(paths.BROKER_TOPICS)]

        topic = c.assignment("t3")
        grown = TopicAssignment(
            {**topic.partitions, 1: (101, 100)}, topic.adding_replicas, topic.removing_replicas, topic.topic_id
        )
        zk.set(paths.topic("t3"), grown.encode())
        wait_for(lambda: zk.exists(paths.partition_state("t3", 1)) is not None, what="a state for the added partition")
        assert paths.topic("t3") in read
        assert c.state("t3", 1).leader == 101
