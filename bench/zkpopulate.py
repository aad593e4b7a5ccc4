"""Fast population of a Kafka-shaped ZooKeeper tree for benchmarks and large tests.

kazoo's ``create_async`` manages ~4,000 znodes/s on this machine; a write ``multi`` (opcode 14) of a few
hundred creates, pipelined, is far faster. The multi is serialized here in one pass (kazoo's
``TransactionRequest`` would rebuild every op in Python and cannot write null data, which Kafka's
``/partitions`` nodes have), and its answer is decoded by kazoo's own ``Transaction.deserialize``.
"""

from __future__ import annotations

import struct
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any, ClassVar

from kazoo.client import KazooClient
from kazoo.exceptions import RuntimeInconsistency
from kazoo.protocol.serialization import Transaction

from zkmodel.topics import PartitionState, TopicAssignment
from zkmodel.uuid import random_uuid

_HEADER = struct.Struct("!iBi")
_INT = struct.Struct("!i")
_CREATE_HEADER = _HEADER.pack(1, False, -1)
_DONE = _HEADER.pack(-1, True, -1)
# vector<ACL> with world:anyone ALL (OPEN_ACL_UNSAFE), then flags = 0 (persistent)
_OPEN_ACL_AND_FLAGS = _INT.pack(1) + _INT.pack(31) + _INT.pack(5) + b"world" + _INT.pack(6) + b"anyone" + _INT.pack(0)

Node = tuple[str, bytes | None]


class CreateMulti:
    """A write ``multi`` of persistent creates (open ACL) for kazoo's connection; ``paths`` must carry the
    client's chroot already. The result is kazoo's: created paths, or exceptions if the multi failed."""

    type: ClassVar[int] = Transaction.type

    def __init__(self, nodes: list[Node]) -> None:
        self.nodes = nodes

    def __repr__(self) -> str:
        return f"CreateMulti({len(self.nodes)} creates)"

    def serialize(self) -> bytes:
        parts: list[bytes] = []
        for path, data in self.nodes:
            raw = path.encode()
            parts += (_CREATE_HEADER, _INT.pack(len(raw)), raw)
            parts += (_INT.pack(-1),) if data is None else (_INT.pack(len(data)), data)
            parts.append(_OPEN_ACL_AND_FLAGS)
        parts.append(_DONE)
        return b"".join(parts)

    deserialize = Transaction.deserialize


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
    chroot = client.chroot or ""
    window: deque[tuple[Any, int]] = deque()
    created = 0
    deadline = time.monotonic() + timeout

    def drain_one() -> None:
        nonlocal created
        result, count = window.popleft()
        answers = result.get(timeout=max(deadline - time.monotonic(), 0.001))
        for answer in answers:
            if isinstance(answer, Exception) and not isinstance(answer, RuntimeInconsistency):
                raise answer
        created += count
        if progress is not None:
            progress(created)

    chunk: list[Node] = []
    for path, data in nodes:
        chunk.append((chroot + path, data))
        if len(chunk) >= per_multi:
            _send(client, chunk, window)
            chunk = []
            if len(window) >= in_flight:
                drain_one()
    if chunk:
        _send(client, chunk, window)
    while window:
        drain_one()
    return created


def _send(client: KazooClient, chunk: list[Node], window: deque[tuple[Any, int]]) -> None:
    result = client.handler.async_result()
    client._call(CreateMulti(chunk), result)
    window.append((result, len(chunk)))


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
