"""bench.bulk_writes at a tiny size: the replay of Kafka's ZooKeeper requests sends what the module documents and
leaves the same znodes as the raw writer; the whole bench runs with its three sides."""

from __future__ import annotations

import signal
from collections.abc import Iterator

import orjson
import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError

from bench import bulk_writes
from bench.kafka_replay import KAFKA_IN_FLIGHT, KafkaCreate, KafkaZk, kafka_reassign, kafka_reassign_steps
from bench.raw_writes import Counter, create_nodes, place, raw_multis, raw_set_multis, reassign_nodes
from bench.tree_compare import compare
from zkmodel import paths

pytestmark = pytest.mark.integration

EPOCH = 3
PARTITIONS = 3
#: Two names with a collision character (``.``, ``_``), one without.
NAMES = ["orders.events-00000", "plain-1", "under_score"]


@pytest.fixture
def sides(zk: KazooClient, zk_hosts: str) -> Iterator[dict[str, KazooClient]]:
    """A client on a chroot of its own for the raw and the kafka side."""
    made = {}
    for side in ("raw", "kafka"):
        zk.ensure_path(f"/{side}")
        made[side] = bulk_writes.kazoo(f"{zk_hosts}/{side}")
    try:
        yield made
    finally:
        for client in made.values():
            client.stop()
            client.close()


def test_kafka_replay_sends_kafkas_requests_and_writes_the_raw_sides_znodes(sides: dict[str, KazooClient]) -> None:
    raw, kafka = sides["raw"], sides["kafka"]
    zk = KafkaZk(kafka, in_flight=KAFKA_IN_FLIGHT)
    zk.prepare(EPOCH, broker_id=1)
    kafka_side, raw_side = place(["warm-0", *NAMES], PARTITIONS), place(["warm-0", *NAMES], PARTITIONS)
    warm = KafkaCreate(zk, kafka_side, ["warm-0"], EPOCH)
    warm.prime()
    warm.run(batch=1)

    create = KafkaCreate(zk, kafka_side, NAMES, EPOCH)
    create.prime()
    assert create.base == 1
    before = zk.sent.copy()
    create.run(batch=2)
    sent = zk.sent - before
    topics, colliding, parts = len(NAMES), 2, len(NAMES) * PARTITIONS
    assert 1 <= create.events <= topics
    assert sent == {
        "exists": 2 * topics,  # the delete marker, the topic
        "getChildren": colliding + create.events,  # the collision check; the controller's re-armed watch
        "getData": 2 * topics + topics,  # /controller, the topic id (handler); each new topic (controller)
        "multi": topics + topics + 2 * parts,  # the config's setData; .../partitions, partitions/<p>, state
        "create": 2 * topics,  # the config, the topic
    }
    for parent in (paths.BROKER_TOPICS, "/config/topics"):
        raw.ensure_path(parent)
    raw_multis(raw, [create_nodes(raw_side, n, EPOCH) for n in ["warm-0", *NAMES]], window=10, counter=Counter())
    assert compare({"raw": raw, "kafka": kafka}) == []

    before = zk.sent.copy()
    done = Counter()
    kafka_reassign(zk, [kafka_reassign_steps(kafka_side, n, EPOCH) for n in NAMES], done)
    assert done.done == topics
    assert zk.sent - before == {"exists": 1, "multi": 2 * parts, "getData": 2 * parts}
    raw_set_multis(raw, [reassign_nodes(raw_side, n, EPOCH) for n in NAMES], window=10, counter=Counter())
    assert compare({"raw": raw, "kafka": kafka}) == []
    for name in NAMES:  # the last rewrite of a topic znode carries every partition's move
        assert kafka.get(paths.topic(name))[0] == reassign_nodes(kafka_side, name, EPOCH)[0][1]
        for p in range(PARTITIONS):
            data, stat = kafka.get(paths.partition_state(name, p))
            assert (orjson.loads(data)["leader_epoch"], stat.version) == (1, 1)
    # the fenced writes checked the controller epoch znode, which nothing changed
    assert kafka.exists(paths.CONTROLLER_EPOCH).version == zk.epoch_version


def test_a_fenced_write_fails_once_the_controller_epoch_moved(sides: dict[str, KazooClient]) -> None:
    kafka = sides["kafka"]
    zk = KafkaZk(kafka, in_flight=2)
    zk.prepare(EPOCH, broker_id=1)
    kafka.set(paths.CONTROLLER_EPOCH, str(EPOCH + 1).encode())  # another controller took over
    side = place(NAMES[:1], PARTITIONS)
    create = KafkaCreate(zk, side, NAMES[:1], EPOCH)
    create.prime()
    with pytest.raises(BadVersionError):
        create.run(batch=1)
    assert kafka.exists(paths.topic_partitions(NAMES[0])) is None


def test_the_bench_runs_with_all_three_sides(capsys: pytest.CaptureFixture[str]) -> None:
    previous = signal.getsignal(signal.SIGTERM)
    try:
        code = bulk_writes.main(
            [
                *("--topics", "4", "--partitions", "2", "--batch", "2"),
                *("--warmup", "1", "--heap-mb", "256", "--rtt-samples", "20"),
            ]
        )
    finally:
        signal.signal(signal.SIGTERM, previous)
    printed = capsys.readouterr().out
    assert code == 0
    assert "after CreateTopics ours, raw, kafka hold the same 7-znode topics" in printed
    assert "after AlterPartitionReassignments ours, raw, kafka hold the same znodes" in printed
    assert "kafka AlterPartitionReassignments sent 33 requests (exists 1, getData 16, multi 16)" in printed
    assert "one round trip (median of 20 serial exists" in printed
