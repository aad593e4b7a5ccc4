"""Election, epoch fencing and broker registration against a real ZooKeeper (reference §2, §6 1-4, 10)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from controller.active.controller_election import active_controller, read_epoch, try_elect
from controller.active.feature import ensure_feature_znode
from controller.store.registration import BrokerIdInUse, Registrar, ensure_persistent_paths, get_or_create_cluster_id
from controller.zk.errors import ControllerMoved, SessionLost
from controller.zk.fenced_writer import FencedWriter, OpFailed
from controller.zk.ops import Create, Delete, Op, SetData
from controller.zk.session import ZkSession
from tests.zkharness import expire_session
from zkmodel import ibp, paths
from zkmodel.brokers import BrokerRegistration, EndPoint
from zkmodel.cluster import FEATURE_DISABLED, FEATURE_ENABLED, FeatureZnode
from zkmodel.election import ControllerZnode
from zkmodel.topics import PartitionState

pytestmark = pytest.mark.integration
IBP = ibp.LATEST_PRODUCTION


@pytest.fixture
def sessions(zk_hosts: str) -> Iterator[Callable[[], ZkSession]]:
    made: list[ZkSession] = []

    def make() -> ZkSession:
        s = ZkSession(zk_hosts, session_timeout_ms=6000, name=f"s{len(made)}")
        s.start()
        made.append(s)
        return s

    yield make
    for s in made:
        s.close()


def test_scenario_1_raw_epoch_operations(sessions: Callable[[], ZkSession]) -> None:
    s = sessions()
    with pytest.raises(NoNodeError):
        s.set_if_version(paths.CONTROLLER_EPOCH, b"1", 0)
    assert s.create_only(paths.CONTROLLER_EPOCH, b"0") is True
    assert s.create_only(paths.CONTROLLER_EPOCH, b"0") is False
    assert s.set_if_version(paths.CONTROLLER_EPOCH, b"1", 0).version == 1
    with pytest.raises(BadVersionError):
        s.set_if_version(paths.CONTROLLER_EPOCH, b"1", 0)


def test_scenario_10_first_election_on_empty_zookeeper(sessions: Callable[[], ZkSession], zk: KazooClient) -> None:
    s = sessions()
    elected = try_elect(s, 0, IBP)
    assert elected is not None and (elected.epoch, elected.epoch_zk_version) == (1, 1)
    data, stat = zk.get(paths.CONTROLLER)
    assert stat.ephemeralOwner == s.session_id
    assert ControllerZnode.decode(paths.CONTROLLER, data).broker_id == 0
    assert zk.get(paths.CONTROLLER_EPOCH)[0] == b"1"


def test_only_one_candidate_wins_and_the_next_gets_a_higher_epoch(sessions: Callable[[], ZkSession]) -> None:
    first, second = sessions(), sessions()
    won = try_elect(first, 1, IBP)
    assert won is not None
    assert try_elect(second, 2, IBP) is None
    assert active_controller(second) == 1

    first.close()  # "restart": the ephemeral /controller goes, the epoch stays
    assert active_controller(second) is None
    assert read_epoch(second)[0] == won.epoch
    again = try_elect(second, 2, IBP)
    assert again is not None and again.epoch == won.epoch + 1


@pytest.mark.parametrize(("version", "znode_version"), [("3.3-IV3", 1), ("3.4-IV0", 2), ("3.9", 2)])
def test_controller_znode_version_follows_ibp(
    sessions: Callable[[], ZkSession], zk: KazooClient, version: str, znode_version: int
) -> None:
    assert try_elect(sessions(), 3, ibp.parse_ibp(version)) is not None
    assert ControllerZnode.decode(paths.CONTROLLER, zk.get(paths.CONTROLLER)[0]).version == znode_version


def test_scenario_2_stale_epoch_version_writes_nothing(sessions: Callable[[], ZkSession], zk: KazooClient) -> None:
    s = sessions()
    ensure_persistent_paths(s)
    elected = try_elect(s, 0, IBP)
    assert elected is not None
    zk.create("/brokers/topics/t/partitions/0/state", PartitionState(0, 0, 1, (0,)).encode(), makepath=True)
    zk.create("/isr_change_notification/isr_change_0000000000", b"{}", makepath=True)
    before = {p: zk.get(p) for p in ("/brokers/topics/t/partitions/0/state", paths.CONTROLLER_EPOCH)}

    fenced: list[int] = []
    s.on_fenced = lambda: fenced.append(1)
    stale = FencedWriter(s, elected.epoch, elected.epoch_zk_version + 1)
    new_state = PartitionState(0, 1, 1, (0,)).encode()
    attempts: list[list[Op]] = [
        [SetData("/brokers/topics/t/partitions/0/state", new_state, 0)],  # updateLeaderAndIsr
        [Create("/brokers/topics/t/partitions/1", None), Create("/brokers/topics/t/partitions/1/state", new_state)],
        [Delete("/isr_change_notification/isr_change_0000000000")],  # deleteIsrChangeNotifications
        [Create(paths.REASSIGN_PARTITIONS, b'{"version":1,"partitions":[]}')],  # setOrCreatePartitionReassignment
        [Delete("/brokers/topics/t/partitions/0/state"), Delete("/brokers/topics/t/partitions/0")],  # deleteRecursive
    ]
    for ops in attempts:
        with pytest.raises(ControllerMoved, match="Expected zkVersion = 2") as info:
            stale.atomic(ops)
        assert info.value.code == 11  # STALE_CONTROLLER_EPOCH
        with pytest.raises(ControllerMoved):
            stale.each(ops)
    assert {p: zk.get(p) for p in before} == before
    # The fenced-writes metric: one per refused multi (atomic: one; each: one per op).
    assert len(fenced) == sum(1 + len(ops) for ops in attempts)
    assert zk.exists("/brokers/topics/t/partitions/1") is None
    assert zk.exists(paths.REASSIGN_PARTITIONS) is None
    assert zk.exists("/isr_change_notification/isr_change_0000000000") is not None

    # With the right version the same writes go through.
    good = FencedWriter(s, elected.epoch, elected.epoch_zk_version)
    refused = len(fenced)
    for ops in attempts[:4]:
        good.atomic(ops)
    assert len(fenced) == refused
    assert PartitionState.decode("x", zk.get("/brokers/topics/t/partitions/0/state")[0]).leader_epoch == 1
    assert zk.get("/brokers/topics/t/partitions/1")[0] is None  # Kafka's null data for parents


def test_fenced_op_failures_are_reported_per_op(sessions: Callable[[], ZkSession], zk: KazooClient) -> None:
    s = sessions()
    elected = try_elect(s, 0, IBP)
    assert elected is not None
    w = FencedWriter(s, elected.epoch, elected.epoch_zk_version)
    zk.create("/x", b"1")
    results = w.each([SetData("/x", b"2", 0), SetData("/x", b"3", 0), Create("/x", b"")])
    assert results[0].stat.version == 1
    assert isinstance(results[1], BadVersionError)  # a stale partition epoch: Kafka's partitionsToRetry
    assert isinstance(results[2], NodeExistsError)
    with pytest.raises(OpFailed) as info:
        w.atomic([SetData("/x", b"4", 1), Create("/x", b"")])
    assert info.value.index == 1
    assert zk.get("/x")[0] == b"2"  # all or nothing


def test_zombie_controller_after_real_session_expiry_writes_nothing(
    sessions: Callable[[], ZkSession], zk: KazooClient
) -> None:
    zombie, successor = sessions(), sessions()
    ensure_persistent_paths(zombie)
    old = try_elect(zombie, 1, IBP)
    assert old is not None
    zombie_writer = FencedWriter(zombie, old.epoch, old.epoch_zk_version)
    zombie_writer.atomic([Create("/brokers/topics/t", b"v1")])

    expire_session(zombie.client)  # the server drops the zombie's session and its /controller
    new = None
    for _ in range(100):
        new = try_elect(successor, 2, IBP)
        if new is not None:
            break
    assert new is not None and new.epoch == old.epoch + 1
    assert active_controller(successor) == 2

    # The zombie first learns that its session is gone (it must resign) ...
    with pytest.raises((SessionLost, ControllerMoved)):
        zombie_writer.atomic([SetData("/brokers/topics/t", b"zombie")])
    _wait_connected(zombie)
    # ... and once its client has a new session, its writes still carry the old epoch version.
    with pytest.raises(ControllerMoved):
        zombie_writer.atomic([SetData("/brokers/topics/t", b"zombie")])
    with pytest.raises(ControllerMoved):
        zombie_writer.each([SetData("/brokers/topics/t", b"zombie"), Delete("/brokers/topics/t")])
    assert zk.get("/brokers/topics/t")[0] == b"v1"


def _wait_connected(s: ZkSession) -> None:
    """kazoo opens a new session after LOST; wait for it (a harness wait, not a timing assertion)."""
    deadline = time.monotonic() + 20
    while not s.connected and time.monotonic() < deadline:
        time.sleep(0.05)
    assert s.connected


def _registration(port: int) -> BrokerRegistration:
    return BrokerRegistration((EndPoint("PLAINTEXT", "127.0.0.1", port, "PLAINTEXT"),), timestamp=1)


def test_scenario_4_broker_registration(sessions: Callable[[], ZkSession], zk: KazooClient) -> None:
    s, other = sessions(), sessions()
    ensure_persistent_paths(s)
    me = Registrar(s, 1)
    epoch = me.register(_registration(9092))
    data, stat = zk.get(paths.broker(1))
    assert stat.czxid == epoch and stat.version == 1 and stat.ephemeralOwner == s.session_id
    assert BrokerRegistration.decode(paths.broker(1), data) == _registration(9092)

    assert me.register(_registration(9092)) == epoch  # same session: no-op
    with pytest.raises(BrokerIdInUse, match=r"broker\.id=1"):
        Registrar(other, 1).register(_registration(9093))

    # Our previous (expired) session still shows as owner (ZOOKEEPER-2985): delete and re-create.
    stale = Registrar(other, 2)
    stale.register(_registration(9094))
    me2 = Registrar(s, 2)
    me2.registered_session_id = other.session_id
    new_epoch = me2.register(_registration(9095))
    _, stat2 = zk.get(paths.broker(2))
    assert stat2.ephemeralOwner == s.session_id and new_epoch == stat2.czxid != stale.broker_epoch

    with pytest.raises(NoNodeError):
        Registrar(s, 3).update(_registration(1))


def test_re_registration_after_session_expiry_gets_a_new_broker_epoch(
    sessions: Callable[[], ZkSession], zk: KazooClient
) -> None:
    s = sessions()
    ensure_persistent_paths(s)
    me = Registrar(s, 5)
    first = me.register(_registration(9092))
    expire_session(s.client)
    assert zk.exists(paths.broker(5)) is None
    with pytest.raises(SessionLost):
        s.get(paths.broker(5))
    _wait_connected(s)
    second = me.register(_registration(9092))
    assert second != first and zk.get(paths.broker(5))[1].ephemeralOwner == s.session_id


def test_persistent_paths_cluster_id_and_feature(sessions: Callable[[], ZkSession], zk: KazooClient) -> None:
    s = sessions()
    ensure_persistent_paths(s)
    for p in paths.PERSISTENT_PATHS:
        data, _ = zk.get(p)
        assert data is None  # null data, as Kafka's createRecursive leaves it
    cluster_id = get_or_create_cluster_id(s)
    assert get_or_create_cluster_id(sessions()) == cluster_id

    # Scenario 13: /feature by IBP.
    assert ensure_feature_znode(s, ibp.parse_ibp("2.6")).status == FEATURE_DISABLED
    v0 = zk.get(paths.FEATURE)[1].version
    assert ensure_feature_znode(s, ibp.parse_ibp("2.7")).status == FEATURE_ENABLED
    assert zk.get(paths.FEATURE)[1].version == v0 + 1  # status flip
    ensure_feature_znode(s, ibp.parse_ibp("2.7"))
    assert zk.get(paths.FEATURE)[1].version == v0 + 1  # no change
    zk.delete(paths.FEATURE)
    ensure_feature_znode(s, ibp.parse_ibp("3.9"))
    data, stat = zk.get(paths.FEATURE)
    assert stat.version == 0 and FeatureZnode.decode(paths.FEATURE, data) == FeatureZnode(2, FEATURE_ENABLED, {})
