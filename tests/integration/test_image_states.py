"""The node image against a real ZooKeeper, as a state machine: random interleavings of the controller's own
writes, writes by other processes (a legacy tool adding partitions, a broker below the forwarding gate changing
an ISR), session expiries and controller failovers. Once things settle, every node's image equals a fresh read
of ZooKeeper, and the active controller's context equals a cold load: a standby that won serves what a
cold-loaded node would."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test
from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NoNodeError

from controller.active.api import IsrUpdate, NewTopic
from controller.active.failover import load_context
from tests.integration.cluster import Cluster, cluster, wait_for
from tests.integration.test_image import _view
from tests.integration.test_metadata_cache import truth, view
from tests.zkharness import expire_session
from zkmodel import paths
from zkmodel.admin import TopicPartition
from zkmodel.errors import ZnodeFormatError
from zkmodel.notifications import IsrChangeNotification
from zkmodel.topics import PartitionState, TopicAssignment

pytestmark = pytest.mark.integration

NAMES = ("a", "b", "c")
IMAGED = (1, 2)  # controller candidates with an image; broker 3 is a plain broker


def _settle(c: Cluster, zk: KazooClient, timeout: float = 30.0) -> None:
    """Wait until every image equals ZooKeeper and the active controller's context equals a cold load."""

    def settled() -> bool:
        expected = truth(zk)
        for broker_id in IMAGED:
            cache = c.nodes[broker_id].cache
            assert cache is not None
            snap = cache.catch_up(5)
            if snap is None or view(snap) != expected:
                return False
        active = c.active()
        ctx = active.snapshot()
        cold, _r = load_context(c.nodes[active.broker_id].session, ctx.epoch, ctx.epoch_zk_version, uses_topic_ids=True)
        return _view(ctx) == _view(cold)

    wait_for(settled, timeout, "every image equal to ZooKeeper, the controller's context equal to a cold load")


def test_the_image_follows_every_writer(zk_hosts: str, zk: KazooClient) -> None:
    with cluster(zk_hosts, zk) as c:
        for broker_id in IMAGED:
            c.start_broker(broker_id, image=True)
        c.start_broker(3, candidate=False)
        c.active()

        class Machine(RuleBasedStateMachine):
            @rule(name=st.sampled_from(NAMES), partitions=st.integers(1, 3), rf=st.integers(1, 3))
            def create(self, name: str, partitions: int, rf: int) -> None:
                c.active().create_topics([NewTopic(name, partitions, rf)])

            @rule(name=st.sampled_from(NAMES))
            def delete(self, name: str) -> None:
                c.active().delete_topics([name])

            @rule(name=st.sampled_from(NAMES))
            def legacy_tool_adds_a_partition(self, name: str) -> None:
                """AdminZkClient.addPartitions of a pre-KIP-590 tool: the topic znode rewritten at its version."""
                with contextlib.suppress(NoNodeError, BadVersionError, ZnodeFormatError):
                    data, stat = zk.get(paths.topic(name))
                    old = TopicAssignment.decode(paths.topic(name), data)
                    if old.adding_replicas or old.removing_replicas:
                        return
                    grown = dict(old.partitions)
                    grown[len(grown)] = tuple(sorted(grown[0]))
                    zk.set(
                        paths.topic(name), TopicAssignment(grown, topic_id=old.topic_id).encode(), version=stat.version
                    )

            @rule(name=st.sampled_from(NAMES), partition=st.integers(0, 3))
            def broker_below_the_gate_shrinks_an_isr(self, name: str, partition: int) -> None:
                """A broker below IBP 2.7 writes its partition's state itself, at the version it read."""
                with contextlib.suppress(NoNodeError, BadVersionError, ZnodeFormatError):
                    data, stat = zk.get(paths.partition_state(name, partition))
                    state = PartitionState.decode("s", data)
                    if len(state.isr) > 1 and state.leader in state.isr:
                        shrunk = state._replace(isr=(state.leader,))
                        zk.set(paths.partition_state(name, partition), shrunk.encode(), version=stat.version)
                        # and tells the controller, as ReplicationUtils.propagateIsrChanges does
                        notice = IsrChangeNotification((TopicPartition(name, partition),)).encode()
                        prefix = f"{paths.ISR_CHANGE_NOTIFICATION}/{paths.ISR_CHANGE_PREFIX}"
                        zk.create(prefix, notice, sequence=True, makepath=True)

            @rule(name=st.sampled_from(NAMES), partition=st.integers(0, 3))
            def leader_shrinks_an_isr_through_the_controller(self, name: str, partition: int) -> None:
                with contextlib.suppress(NoNodeError, ZnodeFormatError, KeyError):
                    data, stat = zk.get(paths.partition_state(name, partition))
                    state = PartitionState.decode("s", data)
                    if len(state.isr) > 1 and state.leader in c.nodes:
                        leader = c.nodes[state.leader]
                        c.active().alter_partition(
                            state.leader,
                            leader.registrar.broker_epoch,
                            {
                                TopicPartition(name, partition): IsrUpdate(
                                    state.leader_epoch, (state.leader,), stat.version
                                )
                            },
                        )

            @rule(broker_id=st.sampled_from(IMAGED))
            def session_expires(self, broker_id: int) -> None:
                expire_session(c.nodes[broker_id].session.client)

            @rule()
            def controller_moves(self) -> None:
                """Deleting /controller is how an operator forces a re-election; a candidate wins with its image."""
                with contextlib.suppress(NoNodeError):
                    zk.delete(paths.CONTROLLER)

            @invariant()
            def every_image_equals_zookeeper(self) -> None:
                _settle(c, zk)

        settings_: Any = settings(
            max_examples=6,
            stateful_step_count=12,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            derandomize=True,
        )
        run_state_machine_as_test(Machine, settings=settings_)
