"""The leader-side catch-up model: copy progress, ISR growth, and replication throttles."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from controller.broker.replicas import CatchUp, ReplicaManager, Throttles

TOPIC_ID = "W3mXDtj1RsWmsEhQrZjN5g"


def snapshot(
    isr: tuple[int, ...] = (1,), replicas: tuple[int, ...] = (1, 2), partitions: int = 1, removing: tuple[int, ...] = ()
) -> Any:
    parts = {
        p: SimpleNamespace(
            partition=p, replicas=replicas, isr=isr, leader=1, leader_epoch=4, partition_epoch=7, removing=removing
        )
        for p in range(partitions)
    }
    topic = SimpleNamespace(name="t", topic_id=TOPIC_ID, partitions=parts)
    return SimpleNamespace(topics={"t": topic}, brokers={1: object(), 2: object()}, controller_id=1)


def manager(rate: int = 100) -> ReplicaManager:
    return ReplicaManager(1, None, lambda: 1, "PLAINTEXT", CatchUp(bytes_per_partition=1000, rate_bytes_per_sec=rate))


def test_follower_joins_once_it_copied_the_partition() -> None:
    m = manager(rate=100)  # 1000 bytes at 100 B/s: 10 s
    snap = snapshot()
    assert m.ready(snap, 0.0) == {}
    assert m.ready(snap, 9.0) == {}
    assert m.ready(snap, 10.5) == {("t", TOPIC_ID, 0): (4, (1, 2), 7)}  # leader epoch, grown ISR, partition epoch


def test_a_replica_in_the_isr_or_on_a_dead_broker_is_not_tracked() -> None:
    m = manager()
    assert m.ready(snapshot(isr=(1, 2)), 0.0) == {}
    dead = snapshot(replicas=(1, 3))  # broker 3 is not registered
    assert m.ready(dead, 0.0) == {} and m.ready(dead, 100.0) == {}


def test_a_replica_being_removed_is_never_added_back() -> None:
    """Between the controller shrinking the ISR of a reassignment's removed replicas and writing the final
    assignment, the old replica is still listed; Kafka has stopped it, so the leader must not re-add it."""
    m = manager()
    leaving = snapshot(replicas=(1, 2), removing=(2,))
    assert m.ready(leaving, 0.0) == {} and m.ready(leaving, 100.0) == {}


def test_follower_throttle_slows_the_copy_and_is_shared() -> None:
    throttled = Throttles({}, {2: 50.0}, {}, {"t": "*"})  # 50 B/s shared by the two lagging partitions
    m = manager(rate=1000)
    snap = snapshot(partitions=2)
    m.ready(snap, 0.0, throttled)
    assert m.ready(snap, 39.0, throttled) == {}  # 25 B/s each: 1000 bytes need 40 s
    assert len(m.ready(snap, 41.0, throttled)) == 2


def test_leader_throttle_applies_only_to_listed_replicas() -> None:
    m = manager(rate=1000)
    snap = snapshot(partitions=2)
    throttles = Throttles({1: 10.0}, {}, {"t": "0:1"}, {})  # only partition 0 is throttled on leader 1
    m.ready(snap, 0.0, throttles)
    ready = m.ready(snap, 2.0, throttles)
    assert set(ready) == {("t", TOPIC_ID, 1)}


def test_applies_matches_kafka_throttled_replica_lists() -> None:
    assert Throttles.applies("*", 3, 7)
    assert Throttles.applies("0:1, 3:7", 3, 7)
    assert not Throttles.applies("0:1,3:8", 3, 7)
    assert not Throttles.applies("", 3, 7) and not Throttles.applies(None, 3, 7)


def test_status_reports_lagging_and_throttled_replicas_and_the_rates_in_force() -> None:
    from controller.broker.replicas import CatchUpStatus

    seen: list[CatchUpStatus] = []
    m = ReplicaManager(1, None, lambda: 1, "PLAINTEXT", CatchUp(1000, 1000), on_status=seen.append)
    snap = snapshot(partitions=2)
    m.ready(snap, 0.0, Throttles({1: 10.0}, {1: 5.0}, {"t": "0:1"}, {}))
    assert seen[-1] == CatchUpStatus(
        catching_up=2, leader_throttled=1, follower_throttled=0, leader_rate=10.0, follower_rate=5.0
    )
    m.ready(snapshot(isr=(1, 2), partitions=2), 1.0)  # caught up, no throttles read
    assert seen[-1] == CatchUpStatus()


def test_throttles_are_read_again_only_after_a_multiple_of_their_cost(monkeypatch: Any) -> None:
    """A read costing c seconds is reused for THROTTLE_COST_FACTOR * c (with 10,000 topics catching up, every
    0.1 s tick re-read them all), but never for a topic it did not cover."""
    clock = [100.0]
    monkeypatch.setattr("controller.broker.replicas.time.monotonic", lambda: clock[0])
    reads: list[set[str]] = []

    def read(topics: set[str]) -> Throttles:
        reads.append(set(topics))
        clock[0] += 0.01  # each read costs 10 ms: reused for 0.2 s
        return Throttles({}, {}, {t: "*" for t in topics}, {})

    m = ReplicaManager(1, None, lambda: 1, "PLAINTEXT", CatchUp(1000, 1000), throttles=read)
    first = m._throttles_for({"a", "b"})
    clock[0] += 0.1
    assert m._throttles_for({"a"}) is first and len(reads) == 1  # covered and recent
    assert m._throttles_for({"a", "c"}).leader_replicas == {"a": "*", "c": "*"} and len(reads) == 2  # c is new
    clock[0] += 0.25
    m._throttles_for({"a"})
    assert reads == [{"a", "b"}, {"a", "c"}, {"a"}]  # older than 20 x 10 ms: read again


def test_leader_and_replica_counts_cover_every_partition_once_per_snapshot() -> None:
    """Kafka's LeaderCount and PartitionCount for broker 1: partitions it leads, and those with a replica on it
    (a reassignment's adding replica included), topics without an id included although their ISR cannot grow
    through AlterPartition; reported when a new snapshot is scanned, not on every tick."""

    def part(p: int, leader: int, replicas: tuple[int, ...]) -> SimpleNamespace:
        return SimpleNamespace(
            partition=p,
            replicas=replicas,
            isr=replicas[:1],
            leader=leader,
            leader_epoch=0,
            partition_epoch=0,
            removing=(),
        )

    parts = {0: part(0, 1, (1, 2)), 1: part(1, 2, (2, 1)), 2: part(2, 2, (2, 3)), 3: part(3, 2, (2, 3, 1))}
    topics = {
        "t": SimpleNamespace(name="t", topic_id=TOPIC_ID, partitions=parts),
        "no-id": SimpleNamespace(name="no-id", topic_id="", partitions={0: part(0, 1, (1, 2)), 1: part(1, -1, (1,))}),
    }
    snap = SimpleNamespace(topics=topics, brokers={1: object(), 2: object()}, controller_id=1)
    seen: list[tuple[int, int]] = []
    m = ReplicaManager(1, None, lambda: 1, "PLAINTEXT", CatchUp(1000, 100), on_counts=lambda n, r: seen.append((n, r)))
    m.ready(snap, 0.0)
    m.ready(snap, 1.0)
    assert (m.leader_count, m.partition_count) == (2, 5)  # led: t-0, no-id-0; hosted: t-0, t-1, t-3, no-id-0/1
    assert seen == [(2, 5)]
    assert {(t.name, p.partition, f) for t, p, f in m._lagging(snap)} == {("t", 0, 2)}  # no-id-0: no AlterPartition
    deleted = SimpleNamespace(topics={"t": topics["t"]}, brokers=snap.brokers, controller_id=1)
    m.ready(deleted, 2.0)
    assert seen == [(2, 5), (1, 3)]
