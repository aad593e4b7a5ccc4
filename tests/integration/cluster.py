"""A controller-level test cluster on a real ZooKeeper: each broker has its own session, registration and
controller candidate, as separate nodes would. Partition leaders are played by ``catch_up``, which sends
AlterPartition exactly as a leader whose followers caught up would (the replica model comes later)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from kazoo.client import KazooClient

from controller.active.api import IsrUpdate
from controller.active.controller import Controller
from controller.broker.metadata_cache import MetadataCache
from controller.store.registration import Registrar, ensure_persistent_paths
from controller.zk.session import ZkSession
from zkmodel import ibp, paths
from zkmodel.admin import TopicPartition
from zkmodel.brokers import BrokerRegistration, EndPoint
from zkmodel.reassignment import ReplicaAssignment
from zkmodel.topics import PartitionState, TopicAssignment


def wait_for(predicate: Callable[[], object], timeout: float = 30.0, what: str = "condition") -> None:
    """Poll until true: a harness wait for asynchronous effects, never a timing assertion."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@dataclass
class Node:
    broker_id: int
    session: ZkSession
    registrar: Registrar
    controller: Controller | None = None
    #: The node's metadata image, when started with one: a won election then loads from it.
    cache: MetadataCache | None = None

    def registration(self) -> BrokerRegistration:
        return BrokerRegistration((EndPoint("PLAINTEXT", "127.0.0.1", 9000 + self.broker_id, "PLAINTEXT"),), 1)


@dataclass
class Cluster:
    hosts: str
    zk: KazooClient
    version: ibp.MetadataVersion
    nodes: dict[int, Node] = field(default_factory=dict)

    def start_broker(self, broker_id: int, *, candidate: bool = True, image: bool = False) -> Node:
        session = ZkSession(self.hosts, session_timeout_ms=6000, name=f"broker-{broker_id}")
        session.start()
        ensure_persistent_paths(session)
        registrar = Registrar(session, broker_id)
        node = Node(broker_id, session, registrar)
        if image:
            node.cache = MetadataCache(session, name=f"metadata-cache-{broker_id}")
            node.cache.start()
        registrar.register(node.registration())
        if candidate:

            def reregister() -> None:
                registrar.register(node.registration())

            node.controller = Controller(
                session,
                broker_id,
                self.version,
                on_new_session=reregister,
                standby=node.cache.catch_up if node.cache is not None else None,
                write_observer=node.cache,
            )
            node.controller.start()
        self.nodes[broker_id] = node
        return node

    def stop_broker(self, broker_id: int) -> None:
        node = self.nodes.pop(broker_id)
        if node.controller is not None:
            node.controller.stop()
        if node.cache is not None:
            node.cache.stop()
        node.session.close()

    def active(self, timeout: float = 30.0) -> Controller:
        found: list[Controller] = []

        def one() -> bool:
            found[:] = [n.controller for n in self.nodes.values() if n.controller and n.controller.is_active]
            return len(found) == 1

        wait_for(one, timeout, "one active controller")
        controller = found[0]
        # ... that has also processed every registration, so liveness-dependent results are deterministic.
        wait_for(lambda: set(controller.snapshot().live_brokers) == set(self.nodes), timeout, "all brokers known")
        return controller

    # -- reading ZooKeeper as the truth ----------------------------------------------------------------
    def state(self, topic: str, partition: int) -> PartitionState:
        return PartitionState.decode("s", self.zk.get(paths.partition_state(topic, partition))[0])

    def assignment(self, topic: str) -> TopicAssignment:
        return TopicAssignment.decode(paths.topic(topic), self.zk.get(paths.topic(topic))[0])

    # -- playing the partition leader -----------------------------------------------------------------------
    def catch_up(self, tp: TopicPartition, replicas: list[int] | None = None) -> None:
        """The leader reports that ``replicas`` (default: all live assigned replicas) joined the ISR."""
        controller = self.active()
        for _ in range(50):
            data, stat = self.zk.get(paths.partition_state(tp.topic, tp.partition))
            state = PartitionState.decode("s", data)
            assignment = self.assignment(tp.topic).partitions[tp.partition]
            joining = replicas if replicas is not None else [r for r in assignment if r in self.nodes]
            isr = tuple(dict.fromkeys([*state.isr, *joining]))
            leader = self.nodes[state.leader]
            error, results = controller.alter_partition(
                state.leader,
                leader.registrar.broker_epoch,
                {tp: IsrUpdate(state.leader_epoch, isr, stat.version)},
            )
            assert error.code == 0, error
            # A real leader that lost a race with the controller learns the new epoch and tries again.
            if results[tp].error.name not in ("FENCED_LEADER_EPOCH", "INVALID_UPDATE_VERSION", "NOT_CONTROLLER"):
                assert results[tp].error.code == 0, results[tp]
                return
            time.sleep(0.05)
        raise AssertionError(f"could not catch up {tp}")

    def reassignments(self) -> dict[TopicPartition, ReplicaAssignment]:
        return self.active().list_partition_reassignments()


@contextlib.contextmanager
def cluster(zk_hosts: str, zk: KazooClient, version: str = "3.9") -> Iterator[Cluster]:
    c = Cluster(zk_hosts, zk, ibp.parse_ibp(version))
    try:
        yield c
    finally:
        for broker_id in list(c.nodes):
            with contextlib.suppress(Exception):
                c.stop_broker(broker_id)
