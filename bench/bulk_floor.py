"""The Python a node cannot avoid for a bulk AlterPartitionReassignments, step by step, beside the part of the
raw writer's work it shares: why ≥ 0.7 of the raw writer's rate is out of reach in one process.

``bench.bulk_writes`` compares the node with a raw kazoo client writing pre-encoded payloads: the raw side's
Python is kazoo serializing its multis and reading the answers. The node pays the same kazoo work for the same
writes, and on top of it, per partition, at least the steps timed here, each on its own (no ZooKeeper, no
threads, no GIL hand-offs, warm caches: a floor, not an estimate of the real path):

- **decode**: the request frame through ``controller.wire.codec.parse_request`` (kio) and into the per-partition
  targets the handler hands the controller;
- **plan**: each partition's move (``ReplicaAssignment.reassign_to``) and each topic znode's new JSON (U1);
- **states**: each partition state's next leader epoch encoded and its setData op built (A1);
- **cache**: what the broker metadata cache does with a changed state even when it is handed the bytes
  instead of reading them: decode and build the served partition;
- **respond**: the per-partition results built and encoded;
- baseline, **kazoo**: kazoo's serialization of the same writes as the raw side sends them (per topic one
  multi of the topic znode and its states), which the raw side and the node both pay.

    .venv/bin/python -m bench.bulk_floor [--topics 10000] [--partitions 10] [--repeats 5]
"""

from __future__ import annotations

import argparse
import io
import statistics
import time
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

from kazoo.client import KazooClient
from kazoo.protocol.serialization import Transaction
from kio.schema.alter_partition_reassignments.v0 import request as areq
from kio.schema.alter_partition_reassignments.v0 import response as aresp
from kio.schema.errors import ErrorCode
from kio.schema.request_header.v2.header import RequestHeader
from kio.schema.types import BrokerId, TopicName
from kio.serial import entity_writer
from kio.static.primitive import i16, i32, i32Timedelta
from rich.console import Console
from rich.table import Table

from controller.image.snapshot import CachedPartition
from controller.wire.codec import encode_response, parse_request
from controller.zk.ops import Check, Op, SetData, build_transaction
from zkmodel import paths
from zkmodel.reassignment import ReplicaAssignment
from zkmodel.topics import PartitionState, TopicAssignment

API = 45
BROKERS = (1, 2, 3, 4, 5, 6)


def topic_names(count: int) -> list[str]:
    return [f"bulk-{i:06d}" for i in range(count)]


def current(p: int) -> tuple[int, ...]:
    return tuple(BROKERS[(p + i) % len(BROKERS)] for i in range(3))


def moved(replicas: Sequence[int]) -> tuple[int, ...]:
    return tuple(b for b in BROKERS if b not in replicas)[:3]


def request_frame(names: list[str], partitions: int) -> bytes:
    body = areq.AlterPartitionReassignmentsRequest(
        timeout=i32Timedelta.parse(timedelta(seconds=60)),
        topics=tuple(
            areq.ReassignableTopic(
                name=TopicName(n),
                partitions=tuple(
                    areq.ReassignablePartition(
                        partition_index=i32(p), replicas=tuple(BrokerId(b) for b in moved(current(p)))
                    )
                    for p in range(partitions)
                ),
            )
            for n in names
        ),
    )
    header = RequestHeader(
        request_api_key=i16(API), request_api_version=i16(0), correlation_id=i32(7), client_id="bench"
    )
    buf = io.BytesIO()
    entity_writer(RequestHeader)(buf, header)
    entity_writer(areq.AlterPartitionReassignmentsRequest)(buf, body)
    return buf.getvalue()


def timed(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    """The median of ``repeats`` runs, and the last run's result."""
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--topics", type=int, default=10_000)
    parser.add_argument("--partitions", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    if min(args.topics, args.partitions, args.repeats) < 1:
        parser.error("--topics, --partitions and --repeats must be at least 1")
    names = topic_names(args.topics)
    count = args.topics * args.partitions
    frame = request_frame(names, args.partitions)
    states = {p: PartitionState(current(p)[0], 4, 1, current(p)) for p in range(args.partitions)}
    client = KazooClient(hosts="127.0.0.1:1/bench")  # never started: only its serialization is used

    def decode() -> Any:
        request = parse_request(frame, {API: (0, 0)})
        targets = {
            (t.name, int(p.partition_index)): [int(r) for r in p.replicas]
            for t in request.body.topics
            for p in t.partitions
        }
        return request, targets

    _s, (request, targets) = timed(decode, 1)

    def plan() -> list[tuple[str, bytes]]:
        moves = {tp: ReplicaAssignment(current(tp[1])).reassign_to(t) for tp, t in targets.items()}
        out = []
        for n in names:
            parts = {p: moves[(n, p)] for p in range(args.partitions)}
            out.append(
                (
                    paths.topic(n),
                    TopicAssignment(
                        partitions={p: a.replicas for p, a in parts.items()},
                        adding_replicas={p: a.adding for p, a in parts.items()},
                        removing_replicas={p: a.removing for p, a in parts.items()},
                        topic_id="AAAAAAAAAAAAAAAAAAAAAA",
                        version=3,
                    ).encode(),
                )
            )
        return out

    def bump() -> list[Op]:
        ops: list[Op] = []
        for n in names:
            for p, s in states.items():
                new = PartitionState(s.leader, s.leader_epoch + 1, 2, s.isr, s.leader_recovery_state)
                ops.append(SetData(paths.partition_state(n, p), new.encode(), 4))
        return ops

    _s, topic_writes = timed(plan, 1)
    _s, state_ops = timed(bump, 1)

    def cache() -> int:
        built = 0
        for op in state_ops:
            assert isinstance(op, SetData)
            s = PartitionState.decode(op.path, op.data)
            CachedPartition(0, s.isr, s.isr, s.leader, s.leader_epoch, (), (), 5)
            built += 1
        return built

    def respond() -> bytes:
        topics = tuple(
            aresp.ReassignableTopicResponse(
                name=t.name,
                partitions=tuple(
                    aresp.ReassignablePartitionResponse(
                        partition_index=p.partition_index, error_code=ErrorCode.none, error_message=None
                    )
                    for p in t.partitions
                ),
            )
            for t in request.body.topics
        )
        body = aresp.AlterPartitionReassignmentsResponse(
            throttle_time=i32Timedelta.parse(timedelta(0)),
            error_code=ErrorCode.none,
            error_message=None,
            responses=topics,
        )
        return encode_response(request, body)

    per_topic = args.partitions

    def kazoo() -> int:
        size = 0
        for i, (path, data) in enumerate(topic_writes):
            ops: list[Op] = [Check(paths.CONTROLLER_EPOCH, 0), SetData(path, data, 3)]
            ops.extend(state_ops[i * per_topic : (i + 1) * per_topic])
            size += len(Transaction(build_transaction(client, ops).operations).serialize())
        return size

    rows = [
        ("decode", decode, True),
        ("plan", plan, True),
        ("states", bump, True),
        ("cache", cache, True),
        ("respond", respond, True),
        ("kazoo (baseline: both sides)", kazoo, False),
    ]
    figures = {name: timed(fn, args.repeats)[0] for name, fn, _own in rows}
    table = Table(title=f"Python per step, {count:,} partitions ({args.topics:,} topics), median of {args.repeats}")
    for column in ("step", "seconds", "µs / partition", "x kazoo"):
        table.add_column(column, justify="left" if column == "step" else "right")
    base = figures["kazoo (baseline: both sides)"]
    for name, _fn, _own in rows:
        table.add_row(name, f"{figures[name]:.3f}", f"{figures[name] / count * 1e6:.1f}", f"{figures[name] / base:.2f}")
    own = sum(figures[name] for name, _fn, is_own in rows if is_own)
    table.add_row("node-only floor (sum)", f"{own:.3f}", f"{own / count * 1e6:.1f}", f"{own / base:.2f}")
    Console(width=120).print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
