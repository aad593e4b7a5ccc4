"""``ControllerContext.counts`` (one pass, for the gauges) and ``ControllerContext.survey`` (one pass, for a
failover's state changes) must agree with the per-figure scans: offline, under-replicated and moving
partitions, partitions without state and replicas on dead brokers, on a context that has every case."""

from __future__ import annotations

from controller.active.context import ControllerContext, LiveBroker, PartitionInfo, TopicInfo
from zkmodel.admin import TopicPartition
from zkmodel.brokers import BrokerRegistration, EndPoint
from zkmodel.reassignment import ReplicaAssignment
from zkmodel.topics import PartitionState


def live(b: int) -> LiveBroker:
    return LiveBroker(b, BrokerRegistration((EndPoint("PLAINTEXT", "h", 9092, "PLAINTEXT"),), 0), b)


def context_with_every_case() -> ControllerContext:
    ctx = ControllerContext(3, 2)
    ctx.live_brokers = {b: live(b) for b in (1, 2, 3)}
    ctx.shutting_down = {3}
    t = TopicInfo("t", None)
    t.partitions = {
        0: PartitionInfo.of(0, ReplicaAssignment((1, 2)), PartitionState(1, 0, 3, (1, 2)), 0),  # healthy
        1: PartitionInfo.of(1, ReplicaAssignment((1, 2)), PartitionState(4, 0, 3, (1,)), 0),  # dead leader, short ISR
        2: PartitionInfo.of(2, ReplicaAssignment((3, 1)), PartitionState(3, 0, 3, (3, 1)), 0),  # leader shutting down
        3: PartitionInfo.of(3, ReplicaAssignment((1, 2)), None, -1),  # no state
        4: PartitionInfo.of(4, ReplicaAssignment((4, 1, 2), (4,), (2,)), PartitionState(1, 0, 3, (1, 2)), 0),  # moving
        5: PartitionInfo.of(5, ReplicaAssignment((1, 2)), PartitionState(-1, 0, 3, (2,)), 0),  # no leader
    }
    gone = TopicInfo("gone", None)
    gone.partitions = {0: PartitionInfo.of(0, ReplicaAssignment((1, 2)), PartitionState(5, 0, 3, (5,)), 0)}
    ctx.topics = {"t": t, "gone": gone}
    ctx.topics_to_delete = {"gone"}
    return ctx


def test_counts_match_the_scans() -> None:
    ctx = context_with_every_case()
    counts = ctx.counts()
    moving = [info.assignment for _tp, info in ctx.reassigning()]
    assert counts == {
        "offline": len(ctx.offline_partitions()),
        "under_replicated": len(ctx.under_replicated()),
        "reassigning": len(moving),
        "adding_replicas": sum(len(a.adding) for a in moving),
        "removing_replicas": sum(len(a.removing) for a in moving),
        "topics": 2,
        "partitions": 7,
        "live_brokers": 3,
    }
    assert (counts["offline"], counts["under_replicated"], counts["reassigning"]) == (4, 3, 1)


def test_the_survey_matches_the_scans() -> None:
    ctx = context_with_every_case()
    ctx.topics["gone"].put(1, PartitionInfo.of(1, ReplicaAssignment((1, 5), (5,), ()), None, -1))
    survey = ctx.survey()
    live = ctx.live_brokers.keys() - ctx.shutting_down
    kept = [(tp, info) for tp, info in ctx.all_partitions() if tp.topic not in ctx.topics_to_delete]
    assert survey.offline == ctx.offline_partitions()
    assert survey.no_state == [tp for tp, info in kept if info.state is None]
    assert survey.moving == [tp for tp, _info in ctx.reassigning()]
    assert survey.dead_replicas == {
        tp: [r for r in info.replicas if r not in live] for tp, info in kept if not live.issuperset(info.replicas)
    }
    # every case is there: a deleting topic's partitions only as moving, shutting-down brokers as dead
    assert [str(tp) for tp in survey.moving] == ["t-4", "gone-1"]
    assert survey.dead_replicas[TopicPartition("t", 2)] == [3]
    assert [str(tp) for tp in survey.no_state] == ["t-3"]
