"""Fast population of a Kafka-shaped ZooKeeper tree for benchmarks and large tests, with the pipelined create
multis of :mod:`controller.zk.bulk` (what ``snapshot restore`` writes with): the raw write rate every
population-bound benchmark is measured against.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from kazoo.client import KazooClient

from controller.zk.bulk import BulkWriteError, create_groups
from zkmodel.topics import PartitionState, TopicAssignment
from zkmodel.uuid import random_uuid

Node = tuple[str, bytes | None]


def populate(
    client: KazooClient,
    nodes: Iterable[Node],
    *,
    per_multi: int = 400,
    in_flight: int = 16,
    progress: Callable[[int], None] | None = None,
    timeout: float = 120.0,
) -> int:
    """Create ``nodes`` (parents before children, in order) with pipelined multis; returns the count.
    The parents of the first nodes must exist. Raises the first failed create's error."""
    try:
        return create_groups(
            client,
            ([node] for node in nodes),
            ops_per_multi=per_multi,
            in_flight=in_flight,
            progress=progress,
            timeout=timeout,
        )
    except BulkWriteError as exc:
        raise exc.cause from None


def topic_names(topics: int) -> list[str]:
    return [f"orders.events-{i:05d}" for i in range(topics)]


def kafka_topic_tree(
    topics: int, partitions: int, *, brokers: int = 6, replication: int = 3, controller_epoch: int = 7
) -> Iterator[Node]:
    """``/brokers/topics/<t>`` (v3 assignment with a topic id), ``.../partitions`` and
    ``.../partitions/<p>`` (null data, as Kafka creates them) and ``.../partitions/<p>/state``."""
    for i, name in enumerate(topic_names(topics)):
        assignment = {
            p: tuple((i + p + r) % brokers + 1 for r in range(min(replication, brokers))) for p in range(partitions)
        }
        base = f"/brokers/topics/{name}"
        yield base, TopicAssignment(assignment, topic_id=random_uuid()).encode()
        yield f"{base}/partitions", None
        for p, replicas in assignment.items():
            yield f"{base}/partitions/{p}", None
            state = PartitionState(
                leader=replicas[0], leader_epoch=3, controller_epoch=controller_epoch, isr=replicas
            ).encode()
            yield f"{base}/partitions/{p}/state", state


def data_paths(topics: int, partitions: int) -> list[str]:
    """The znodes a controller reads on failover: every topic znode and every partition state."""
    out = []
    for name in topic_names(topics):
        out.append(f"/brokers/topics/{name}")
        out.extend(f"/brokers/topics/{name}/partitions/{p}/state" for p in range(partitions))
    return out
