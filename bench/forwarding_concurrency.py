"""Forwarded vs. direct admin requests under 50 concurrent clients: throughput and p50/p99 latency of each path,
measured side by side in one run on one three-node stack (IBP 3.4-IV0).

Every client has its own connection and its own topic, and sends ``--requests`` IncrementalAlterConfigs (SET
``retention.ms`` to a value that grows with each request) per phase, ``--pipeline`` of them in flight on its
connection at a time (1: a request waits for the previous answer); all clients of a phase start together.
Each of ``--rounds`` rounds runs one phase per path, direct first in odd rounds and forwarded first in even
ones, so that drift in ZooKeeper or the machine (shared with other work) hits both paths alike. A path's
throughput is its requests over the wall time of its phases; latency is per request, from send to answer.
Ratios forwarded/direct are printed against the targets (throughput >= 0.8, p99 <= 2), with the median and
range of the per-round throughput ratios to show how much the machine moved under the run.

Per-client ordering is checked, not assumed: every connection's answers must come back in the order its
requests were sent (correlation ids), each answer must be 0, and afterwards each client's topic must hold the
value of its last request (a later request overtaken by an earlier one would leave an older value).

    .venv/bin/python -m bench.forwarding_concurrency [--clients 50] [--requests 20] [--rounds 4] [--pipeline 1]
        [--max-in-flight N]   # bridgekeeper.forwarding.max.in.flight on every node (default: the node default)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import statistics
import struct
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import orjson
from kazoo.client import KazooClient
from kio.index import load_request_schema, load_response_schema
from kio.schema.incremental_alter_configs.v1.request import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
)
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i8, i16, i32

from bench.stackbench import controller_and_broker, create_topics, percentile
from controller.config.keys import FORWARDING_MAX_IN_FLIGHT
from controller.devstack.stack import Stack
from controller.wire.client import KafkaClient
from testing.stack import metric_sum, metrics_url

INCREMENTAL_ALTER_CONFIGS = 44
VERSION = 1
KEY = "retention.ms"


def topic_of(client: int) -> str:
    return f"bench-concurrency-{client}"


def frame(client: int, correlation: int, value: int) -> bytes:
    """One size-prefixed IncrementalAlterConfigs v1 request: SET retention.ms on the client's topic."""
    request_cls = load_request_schema(INCREMENTAL_ALTER_CONFIGS, VERSION)
    header_cls = request_cls.__header_schema__
    buf = io.BytesIO()
    entity_writer(header_cls)(
        buf,
        header_cls(
            request_api_key=i16(INCREMENTAL_ALTER_CONFIGS),
            request_api_version=i16(VERSION),
            correlation_id=i32(correlation),
            client_id=f"bench-{client}",
        ),
    )
    body = IncrementalAlterConfigsRequest(
        resources=(
            AlterConfigsResource(
                resource_type=i8(2),
                resource_name=topic_of(client),
                configs=(AlterableConfig(name=KEY, config_operation=i8(0), value=str(value)),),
            ),
        ),
        validate_only=False,
    )
    entity_writer(IncrementalAlterConfigsRequest)(buf, body)
    payload = buf.getvalue()
    return struct.pack(">i", len(payload)) + payload


def error_code(reply: bytes) -> int:
    response_cls = load_response_schema(INCREMENTAL_ALTER_CONFIGS, VERSION)
    _header, offset = entity_reader(response_cls.__header_schema__)(reply, 0)
    body: Any
    body, _ = entity_reader(response_cls)(reply, offset)
    codes = {int(r.error_code) for r in body.responses}
    return 0 if codes == {0} else max(codes)


@dataclass
class Phase:
    path: str
    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)
    errors: list[int] = field(default_factory=list)
    out_of_order: int = 0


async def client_run(
    port: int, client: int, values: list[int], pipeline: int, phase: Phase, start: asyncio.Event, correlation_base: int
) -> None:
    """One connection: send the requests, at most ``pipeline`` unanswered, and read the answers in order."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    frames = [frame(client, correlation_base + i, v) for i, v in enumerate(values)]
    sent_at: list[float] = [0.0] * len(frames)
    window = asyncio.Semaphore(pipeline)
    replies: list[bytes] = []

    async def send_all() -> None:
        for i, f in enumerate(frames):
            await window.acquire()
            sent_at[i] = time.perf_counter()
            writer.write(f)
            await writer.drain()

    await start.wait()
    sender = asyncio.create_task(send_all())
    try:
        for i in range(len(frames)):
            (size,) = struct.unpack(">i", await reader.readexactly(4))
            reply = await reader.readexactly(size)
            phase.latencies.append(time.perf_counter() - sent_at[i])
            window.release()
            if struct.unpack_from(">i", reply, 0)[0] != correlation_base + i:
                phase.out_of_order += 1
            replies.append(reply)
        await sender
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
    phase.errors.extend(code for code in map(error_code, replies) if code != 0)


async def run_phase(port: int, clients: int, requests: int, pipeline: int, phase: Phase, first_value: int) -> None:
    start = asyncio.Event()
    values = [first_value + i for i in range(requests)]
    tasks = [
        asyncio.create_task(client_run(port, c, values, pipeline, phase, start, correlation_base=1000 * c))
        for c in range(clients)
    ]
    await asyncio.sleep(0.2)  # every connection open and its frames encoded before the clock starts
    started = time.perf_counter()
    start.set()
    await asyncio.gather(*tasks)
    phase.seconds += time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=50, help="concurrent clients, one connection each (50)")
    parser.add_argument("--requests", type=int, default=20, help="requests per client per phase (20)")
    parser.add_argument("--rounds", type=int, default=4, help="rounds of one phase per path (4)")
    parser.add_argument("--pipeline", type=int, default=1, help="requests a client keeps in flight (1)")
    parser.add_argument("--max-in-flight", type=int, default=None, help=f"{FORWARDING_MAX_IN_FLIGHT} on the nodes")
    parser.add_argument("--warmup", type=int, default=3, help="unmeasured requests per client and path first (3)")
    args = parser.parse_args(argv)
    if min(args.clients, args.requests, args.rounds, args.pipeline) < 1 or args.clients > 1000:
        parser.error("--clients (at most 1000), --requests, --rounds and --pipeline must be at least 1")
    overrides = {} if args.max_in_flight is None else {FORWARDING_MAX_IN_FLIGHT: str(args.max_in_flight)}
    stack = Stack(nodes=3, ibp="3.4-IV0", overrides=overrides)  # in a temporary directory it removes at stop
    print("starting a three-node stack at IBP 3.4-IV0 ...", file=sys.stderr)
    stack.start()
    zk = KazooClient(hosts=stack.zookeeper)
    zk.start(timeout=20)
    try:
        controller, broker = controller_and_broker(stack, zk)
        admin = KafkaClient("127.0.0.1", controller.port, client_id="bench-setup", timeout=60)
        create_topics(admin, [topic_of(c) for c in range(args.clients)])
        admin.close()
        ports = {"direct": controller.port, "forwarded": broker.port}
        value = 1
        for path in ("direct", "forwarded"):
            warm = Phase(path)
            asyncio.run(run_phase(ports[path], args.clients, args.warmup, 1, warm, value))
            value += args.warmup
            if warm.errors:
                raise SystemExit(f"warm-up on the {path} path answered errors {sorted(set(warm.errors))}")
        url = metrics_url(broker.ready)
        before = metric_sum(url, "bridgekeeper_forwarding_client_requests_total")
        phases = {"direct": Phase("direct"), "forwarded": Phase("forwarded")}
        round_ratios = []
        for r in range(args.rounds):
            rates = {}
            for path in ("direct", "forwarded") if r % 2 == 0 else ("forwarded", "direct"):
                one = Phase(path)
                asyncio.run(run_phase(ports[path], args.clients, args.requests, args.pipeline, one, value))
                value += args.requests
                rates[path] = len(one.latencies) / one.seconds
                p = phases[path]
                p.seconds += one.seconds
                p.latencies += one.latencies
                p.errors += one.errors
                p.out_of_order += one.out_of_order
            round_ratios.append(rates["forwarded"] / rates["direct"])
            print(
                f"  round {r + 1}/{args.rounds}: direct {rates['direct']:.0f} req/s, forwarded "
                f"{rates['forwarded']:.0f} req/s",
                file=sys.stderr,
            )
        moved = metric_sum(url, "bridgekeeper_forwarding_client_requests_total") - before
        per_path = args.rounds * args.clients * args.requests
        if moved != per_path:
            raise SystemExit(f"the broker forwarded {moved:.0f} requests, expected {per_path}")
        stored = {
            c: orjson.loads(zk.get(f"/config/topics/{topic_of(c)}")[0])["config"].get(KEY) for c in range(args.clients)
        }
        stale = {c: v for c, v in stored.items() if v != str(value - 1)}
        in_flight = args.max_in_flight if args.max_in_flight is not None else "node default"
        print(
            f"IncrementalAlterConfigs, {args.clients} clients x {args.requests} requests per phase, "
            f"{args.rounds} rounds, pipeline {args.pipeline}, 3 nodes, IBP 3.4-IV0, "
            f"{FORWARDING_MAX_IN_FLIGHT}={in_flight}"
        )
        print(f"{'path':<12}{'req/s':>10}{'p50 ms':>10}{'p99 ms':>10}{'mean ms':>10}{'errors':>8}{'disorder':>10}")
        for path, p in phases.items():
            print(
                f"{path:<12}{len(p.latencies) / p.seconds:>10.0f}{percentile(p.latencies, 0.5) * 1000:>10.2f}"
                f"{percentile(p.latencies, 0.99) * 1000:>10.2f}{statistics.fmean(p.latencies) * 1000:>10.2f}"
                f"{len(p.errors):>8}{p.out_of_order:>10}"
            )
        d, f = phases["direct"], phases["forwarded"]
        throughput = (len(f.latencies) / f.seconds) / (len(d.latencies) / d.seconds)
        p50 = percentile(f.latencies, 0.5) / percentile(d.latencies, 0.5)
        p99 = percentile(f.latencies, 0.99) / percentile(d.latencies, 0.99)
        print(
            f"ratio forwarded/direct: throughput {throughput:.2f} (target >= 0.8), p50 {p50:.2f}, "
            f"p99 {p99:.2f} (target <= 2); per round: median {statistics.median(round_ratios):.2f}, "
            f"{min(round_ratios):.2f}-{max(round_ratios):.2f}"
        )
        ordered = not (d.out_of_order or f.out_of_order or stale)
        print(
            f"per-client order: answers in send order on every connection and each topic holding its client's "
            f"last value: {'yes' if ordered else f'NO ({len(stale)} topics with another value)'}"
        )
        if d.errors or f.errors or not ordered:
            return 1
    finally:
        zk.stop()
        zk.close()
        stack.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
