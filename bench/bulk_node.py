"""The ours side of :mod:`bench.bulk_writes`: a real ``bridgekeeper node`` (``process.roles=broker,controller``, broker
1) on its chroot, with brokers 2-6 registered as fakes (:func:`bench.nodescale.register_fake_brokers`), so RF 3 over
brokers 1-6 places like a six-broker cluster. CreateTopics goes through confluent-kafka's
``AdminClient.create_topics``, one batch after another, each awaited; the node answers once its metadata cache shows
every new partition's leader (``controller/wire/handlers/topics.py``), which is part of the timed path.
AlterPartitionReassignments goes through kafka-python's ``KafkaAdminClient.alter_partition_reassignments``
(confluent-kafka 2.16 has no such call; the client is told the controller's id up front, as it would otherwise ask a
random known broker, and the fakes have no listener), one request naming every partition, each moved to the three
brokers that do not hold it; the clock stops when the request is answered, i.e. once the controller has written
RS/AR/RR into every topic znode and, as Kafka's controller does (phase A1), bumped the leader epoch of every moving
partition's state. The fake brokers never fetch and the node's own replica catch-up is set too slow to finish
(``bridgekeeper.replica.catchup.rate.bytes.per.sec=1``), so the moves stay pending and no completion work runs beside
the next measurement; the node is stopped once it has answered (with the moves pending, its replica manager re-reads
every lagging topic's config each 0.1 s tick, which at full scale keeps it busy).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import orjson
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin import NewTopic as KafkaNewTopic  # type: ignore[attr-defined]
from kafka import KafkaAdminClient
from kafka import TopicPartition as KafkaTopicPartition
from kazoo.client import KazooClient

from bench import nodescale
from bench.raw_writes import REPLICATION, REQUEST_TIMEOUT_S, Counter, Side
from controller.zk.bulk_read import read_data
from zkmodel import paths

#: The node's replica catch-up never finishes at 1 byte/s: reassignments stay pending (see the docstring). No
#: controlled shutdown: stopping the node must leave the states as the reassignment wrote them (for the check).
#: The fake brokers are registrations without a node marker, which a node refuses to join unless told to.
NODE_OVERRIDES = {
    "bridgekeeper.replica.catchup.rate.bytes.per.sec": "1",
    "controlled.shutdown.enable": "false",
    "bridgekeeper.unsafe.join.chroot.with.kafka.brokers": "true",
}


def wait_active(node: nodescale.Node, zk: KazooClient, timeout: float = 120.0) -> None:
    """Until the node's controller has finished its failover (its own metric) and ``zk`` (a client on the
    node's chroot) sees it in ``/controller`` and ``/controller_epoch``."""
    deadline = time.monotonic() + timeout
    while True:
        if nodescale.metric(node.metrics, nodescale.FAILOVER_METRIC):  # 0 until the failover finished
            found = zk.exists(paths.CONTROLLER) and zk.exists(paths.CONTROLLER_EPOCH)
            if found and orjson.loads(zk.get(paths.CONTROLLER)[0])["brokerid"] == node.broker_id:
                return
        if node.process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(
                f"the node never became the active controller (znodes {sorted(zk.get_children('/'))}); "
                f"its log ends:\n{node.log.read_text()[-2000:]}"
            )
        time.sleep(0.2)


def read_side(client: KazooClient, names: Sequence[str]) -> Side:
    """Topic ids and assignments as the topic znodes hold them."""
    side = Side()
    found = read_data(client, [paths.topic(n) for n in names], timeout=300)
    for name in names:
        result = found[paths.topic(name)]
        if result is None or result[0] is None:
            raise RuntimeError(f"topic {name} was not created")
        obj = orjson.loads(result[0])
        side.assignments[name] = {int(p): tuple(r) for p, r in obj["partitions"].items()}
        side.topic_ids[name] = obj["topic_id"]
    return side


def ours_create(admin: AdminClient, names: Sequence[str], partitions: int, batch: int, counter: Counter) -> None:
    """confluent-kafka CreateTopics, ``batch`` topics per request, each request awaited before the next."""
    for start in range(0, len(names), batch):
        chunk = names[start : start + batch]
        futures = admin.create_topics(
            [KafkaNewTopic(n, num_partitions=partitions, replication_factor=REPLICATION) for n in chunk],
            operation_timeout=REQUEST_TIMEOUT_S,
            request_timeout=REQUEST_TIMEOUT_S + 60,
        )
        for future in futures.values():
            future.result()  # raises KafkaException with the topic's error
        counter.done += len(chunk)


def ours_reassign(admin: KafkaAdminClient, targets: dict[KafkaTopicPartition, list[int]]) -> None:
    """kafka-python AlterPartitionReassignments, every partition in one request."""
    answered = admin.alter_partition_reassignments(targets, timeout_ms=int(REQUEST_TIMEOUT_S * 1000))
    failed = {tp: err for tp, err in answered.items() if err is not None}
    if failed or len(answered) != len(targets):
        shown = ", ".join(f"{tp.topic}-{tp.partition}: {err}" for tp, err in list(failed.items())[:5])
        raise RuntimeError(f"AlterPartitionReassignments: {len(answered)}/{len(targets)} answered; failed: {shown}")
