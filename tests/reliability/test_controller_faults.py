"""Controller faults with real node processes: a frozen zombie controller, and SIGKILL mid-reassignment.

No wire protocol is needed: the cluster is driven the way pre-bridge tooling and pre-AlterPartition
brokers drive Kafka (topic znodes and /admin/reassign_partitions written by a legacy tool; at IBP
2.7-IV1 partition leaders write their ISR changes and leave /isr_change_notification entries).
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError

from controller.devstack.stack import Stack
from controller.zk.bulk_read import read_data
from testing.stack import controller_id
from tests.integration.cluster import wait_for
from tests.stackutil import metric
from zkmodel import paths
from zkmodel.admin import PartitionReassignmentZnode, TopicPartition
from zkmodel.election import decode_controller_epoch
from zkmodel.notifications import IsrChangeNotification
from zkmodel.topics import PartitionState, TopicAssignment

pytestmark = pytest.mark.reliability
SESSION_MS = "4000"


@pytest.fixture
def make_stack(tmp_path: Path) -> Iterator[list[Stack]]:
    stacks: list[Stack] = []
    yield stacks
    for stack in stacks:
        stack.stop()


def start(stacks: list[Stack], tmp_path: Path, nodes: int, ibp: str) -> tuple[Stack, KazooClient]:
    stack = Stack(
        nodes=nodes, data_dir=tmp_path / "stack", ibp=ibp, overrides={"zookeeper.session.timeout.ms": SESSION_MS}
    )
    stacks.append(stack)
    stack.start()
    zk = KazooClient(hosts=stack.zookeeper)
    zk.start(timeout=20)
    return stack, zk


def states(zk: KazooClient, topic: str, n: int) -> dict[int, tuple[PartitionState, object]]:
    found = read_data(zk, [paths.partition_state(topic, p) for p in range(n)], timeout=60)
    out = {}
    for p in range(n):
        result = found[paths.partition_state(topic, p)]
        if result is not None:
            out[p] = (PartitionState.decode("s", result[0]), result[1])
    return out


def leaders_report_caught_up(zk: KazooClient, topic: str, partitions: Sequence[int], replica: int) -> None:
    """What a pre-2.7-IV2 partition leader does when a follower catches up: write the state znode with
    the bigger ISR (conditional on its version), then leave an ISR change notification."""
    for start in range(0, len(partitions), 100):
        batch = partitions[start : start + 100]
        for p in batch:
            path = paths.partition_state(topic, p)
            while True:
                data, stat = zk.get(path)
                state = PartitionState.decode(path, data)
                if replica in state.isr:
                    break
                grown = PartitionState(state.leader, state.leader_epoch, state.controller_epoch, (*state.isr, replica))
                try:
                    zk.set(path, grown.encode(), version=stat.version)
                    break
                except BadVersionError:
                    continue  # the controller bumped the leader epoch meanwhile: re-read, as a leader would
        note = IsrChangeNotification(tuple(TopicPartition(topic, p) for p in batch))
        zk.create(paths.ISR_CHANGE_NOTIFICATION + "/isr_change_", note.encode(), sequence=True)


def test_sigkill_active_controller_mid_1000_partition_reassignment(make_stack: list[Stack], tmp_path: Path) -> None:
    stack, zk = start(make_stack, tmp_path, 3, "2.7-IV1")
    n = 1000
    wait_for(lambda: controller_id(zk) is not None, 60, "a controller")
    first = controller_id(zk)
    assert first is not None
    # Move everything onto a broker that survives: the one we kill must not be the move's target.
    target = next(b for b in (1, 2, 3) if b != first)
    origins = [b for b in (1, 2, 3) if b != target]
    zk.create(paths.topic("big"), TopicAssignment({p: (origins[p % 2],) for p in range(n)}, version=2).encode())
    wait_for(lambda: len(states(zk, "big", n)) == n, 120, "partition states for the new topic")

    moves = PartitionReassignmentZnode(tuple((TopicPartition("big", p), (target,)) for p in range(n)))
    zk.create(paths.REASSIGN_PARTITIONS, moves.encode())

    def u1_written() -> bool:
        return len(TopicAssignment.decode("t", zk.get(paths.topic("big"))[0]).adding_replicas) == n

    wait_for(u1_written, 120, "RS/AR/RR written for every partition")
    assert controller_id(zk) == first
    first_epoch = decode_controller_epoch("e", zk.get(paths.CONTROLLER_EPOCH)[0])

    leaders_report_caught_up(zk, "big", list(range(400)), replica=target)
    victim = stack.nodes[first - 1].process
    assert victim is not None
    victim.kill()  # SIGKILL while the controller works through ISR notifications
    victim.wait()
    leaders_report_caught_up(zk, "big", list(range(400, n)), replica=target)

    def done() -> bool:
        topic = TopicAssignment.decode("t", zk.get(paths.topic("big"))[0])
        moving = topic.adding_replicas or topic.removing_replicas or zk.exists(paths.REASSIGN_PARTITIONS)
        return not moving and not zk.get_children(paths.ISR_CHANGE_NOTIFICATION)  # every notification consumed

    wait_for(done, 180, "every partition at its target")
    second = controller_id(zk)
    assert second is not None and second != first
    assert decode_controller_epoch("e", zk.get(paths.CONTROLLER_EPOCH)[0]) > first_epoch
    topic = TopicAssignment.decode("t", zk.get(paths.topic("big"))[0])
    assert topic.partitions == {p: (target,) for p in range(n)}
    final = states(zk, "big", n)
    assert all(state.leader == target and state.isr == (target,) for state, _ in final.values())
    zk.stop()


def test_frozen_controller_resumes_as_a_zombie_and_writes_nothing(make_stack: list[Stack], tmp_path: Path) -> None:
    stack, zk = start(make_stack, tmp_path, 2, "3.9")
    wait_for(lambda: controller_id(zk) is not None, 60, "a controller")
    frozen_id = controller_id(zk)
    assert frozen_id is not None
    frozen = stack.nodes[frozen_id - 1]
    assert frozen.process is not None
    old_epoch = decode_controller_epoch("e", zk.get(paths.CONTROLLER_EPOCH)[0])

    # Big enough that the controller is usually still writing when frozen. Whether a pipelined write is
    # still unsent at that instant is up to scheduling, so the deterministic proof that a zombie's fenced
    # multi is refused lives in tests/integration/test_election_fencing.py; here the checks are that no
    # write made after the successor's election carries the old epoch, and that the zombie resigns.
    n = 20_000
    survivor = 3 - frozen_id  # the frozen node is a broker too: its replicas could not get a leader
    zk.create(paths.topic("wide"), TopicAssignment({p: (survivor,) for p in range(n)}, version=2).encode())
    wait_for(
        lambda: (
            len(zk.get_children(paths.topic_partitions("wide")) if zk.exists(paths.topic_partitions("wide")) else [])
            > 0
        ),
        60,
        "state creation to start",
    )
    os.kill(frozen.process.pid, signal.SIGSTOP)
    try:
        wait_for(lambda: controller_id(zk) not in (None, frozen_id), 60, "another controller after session expiry")
        successor = controller_id(zk)
        b_stat = zk.exists(paths.CONTROLLER)
        assert b_stat is not None
        new_epoch = decode_controller_epoch("e", zk.get(paths.CONTROLLER_EPOCH)[0])
        assert new_epoch == old_epoch + 1
        wait_for(lambda: len(states(zk, "wide", n)) == n, 120, "every state of the first topic")
        # The successor gets work of its own, done while the zombie is still frozen.
        zk.create(paths.topic("later"), TopicAssignment({p: (survivor,) for p in range(100)}, version=2).encode())
        wait_for(lambda: len(states(zk, "later", 100)) == 100, 60, "the successor to create the second topic")
    finally:
        os.kill(frozen.process.pid, signal.SIGCONT)

    # The zombie wakes up mid-write. ZooKeeper refuses its fenced writes and it resigns.
    wait_for(lambda: "resigned" in frozen.log_path.read_text(errors="replace"), 60, "the zombie to resign")
    url = f"http://127.0.0.1:{frozen.metrics_port}/metrics"
    wait_for(lambda: metric(url, "bridgekeeper_controller_active") == 0.0, 60, "zombie metrics to show inactive")
    assert controller_id(zk) == successor
    assert decode_controller_epoch("e", zk.get(paths.CONTROLLER_EPOCH)[0]) == new_epoch
    everything = [*states(zk, "wide", n).values(), *states(zk, "later", 100).values()]
    written_after = [state for state, stat in everything if stat.mzxid > b_stat.czxid]  # type: ignore[attr-defined]
    assert written_after, "the successor wrote states after its election"
    assert all(state.controller_epoch == new_epoch for state in written_after)
    assert frozen.process.poll() is None  # the zombie is alive and well, just not the controller
    zk.stop()


def test_a_broker_session_expired_alone_registers_again(make_stack: list[Stack], tmp_path: Path) -> None:
    """With a controller identity of its own (lockdown's layout) a node holds two sessions. The controller's
    re-registers the broker after an expiry of its own; the broker's expiring alone must do it too."""
    from testing.expire import expire_session

    stack = Stack(
        nodes=2,
        data_dir=tmp_path / "stack",
        ibp="3.9",
        overrides={
            "zookeeper.session.timeout.ms": SESSION_MS,
            "bridgekeeper.zookeeper.digest": "broker:b-secret",
            "bridgekeeper.zookeeper.controller.digest": "controller:c-secret",
        },
    )
    make_stack.append(stack)
    stack.start()
    zk = KazooClient(hosts=stack.zookeeper)
    zk.start(timeout=20)
    try:
        wait_for(lambda: controller_id(zk) is not None, 60, "a controller")
        node = controller_id(zk)
        assert node is not None
        _data, controller_stat = zk.get(paths.CONTROLLER)
        _data, broker_stat = zk.get(paths.broker(node))
        assert broker_stat.ephemeralOwner != controller_stat.ephemeralOwner  # two sessions
        assert expire_session(stack.zk.connect_string, broker_stat.ephemeralOwner)

        def registered_again() -> bool:
            stat = zk.exists(paths.broker(node))
            return stat is not None and stat.czxid != broker_stat.czxid

        wait_for(registered_again, 30, f"node {node} to register again with its new broker session")
        _data, now = zk.get(paths.CONTROLLER)
        assert now.ephemeralOwner == controller_stat.ephemeralOwner  # the controller was not touched
    finally:
        zk.stop()


def test_a_node_restarted_before_its_old_session_expired_exits_at_once(make_stack: list[Stack], tmp_path: Path) -> None:
    """Kafka refuses a broker id still registered by another session, and skips controlled shutdown when
    startup did not complete: the node exits within moments (it spent ~45 s asking itself to shut down), and
    starts normally once ZooKeeper expired the killed process's session."""
    from controller.devstack.stack import StackError

    stack = Stack(nodes=2, data_dir=tmp_path / "stack", ibp="3.9", overrides={"zookeeper.session.timeout.ms": "10000"})
    make_stack.append(stack)
    stack.start()
    zk = KazooClient(hosts=stack.zookeeper)
    zk.start(timeout=20)
    try:
        wait_for(lambda: controller_id(zk) is not None, 60, "a controller")
        active = controller_id(zk)
        assert active is not None
        victim = stack.nodes[active - 1]
        old = zk.exists(paths.broker(victim.broker_id))
        assert old is not None
        stack.signal_node(victim, signal.SIGKILL)
        started = time.monotonic()
        with pytest.raises(StackError, match="exited with code 1"):
            stack.start_node(victim, timeout=60)
        assert time.monotonic() - started < 10
        log = victim.log_path.read_text(errors="replace")
        assert "is registered by another session" in log
        assert "did not complete its start: no controlled shutdown" in log
        assert "controlled shutdown attempt" not in log
        wait_for(lambda: zk.exists(paths.broker(victim.broker_id)) is None, 30, "the old session to expire")
        stack.start_node(victim, timeout=60)
        stat = zk.exists(paths.broker(victim.broker_id))
        assert stat is not None and stat.czxid != old.czxid
    finally:
        zk.stop()
