"""Latency of one admin request sent through a forwarding broker (KIP-590 Envelope) vs. straight to the
active controller, measured in the same run on the same three-node stack.

The request is an IncrementalAlterConfigs on one topic (a ZooKeeper multi on the controller either way).
Sends alternate between the two paths so drift in ZooKeeper or the machine hits both alike; p50 and p99 of
each and their ratios are printed. Targets: p50 ratio <= 1.3, p99 ratio <= 2.

    .venv/bin/python -m bench.forwarding_latency [--requests 400] [--warmup 50]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from kazoo.client import KazooClient

from bench.stackbench import controller_and_broker, create_topics, percentile, timed_alter
from controller.devstack.stack import Stack
from controller.wire.client import KafkaClient
from testing.stack import metric_sum, metrics_url

TOPIC = "bench-forwarding"


VALIDATE_ONLY = False


def alter(client: KafkaClient, value: int) -> float:
    return timed_alter(client, TOPIC, value, validate_only=VALIDATE_ONLY)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=400, help="requests per path (default 400)")
    parser.add_argument("--warmup", type=int, default=50, help="unmeasured requests per path first")
    args = parser.parse_args(argv)
    stack = Stack(nodes=3, data_dir=Path(tempfile.mkdtemp(prefix="bk-bench-")), ibp="3.4-IV0")
    print("starting a three-node stack at IBP 3.4-IV0 ...", file=sys.stderr)
    stack.start()
    zk = KazooClient(hosts=stack.zookeeper)
    zk.start(timeout=20)
    try:
        controller, broker = controller_and_broker(stack, zk)
        direct = KafkaClient("127.0.0.1", controller.port, client_id="bench-direct", timeout=30)
        forwarded = KafkaClient("127.0.0.1", broker.port, client_id="bench-forwarded", timeout=30)
        create_topics(direct, [TOPIC], timeout_s=30)
        for i in range(args.warmup):
            alter(direct, i)
            alter(forwarded, i)
        before = metric_sum(metrics_url(broker.ready), "bridgekeeper_forwarding_client_requests_total")
        times: dict[str, list[float]] = {"direct": [], "forwarded": []}
        for i in range(args.requests):
            times["direct"].append(alter(direct, 10_000 + i))
            times["forwarded"].append(alter(forwarded, 20_000 + i))
            if i % 50 == 49:
                print(f"  {i + 1}/{args.requests} per path", file=sys.stderr)
        moved = metric_sum(metrics_url(broker.ready), "bridgekeeper_forwarding_client_requests_total") - before
        if moved != args.requests:
            raise SystemExit(f"the broker forwarded {moved:.0f} requests, expected {args.requests}")
        print(f"IncrementalAlterConfigs, {args.requests} requests per path, alternating, 3 nodes, IBP 3.4-IV0")
        print(f"{'path':<12}{'p50 ms':>10}{'p99 ms':>10}{'mean ms':>10}")
        for path, values in times.items():
            print(
                f"{path:<12}{percentile(values, 0.5) * 1000:>10.2f}{percentile(values, 0.99) * 1000:>10.2f}"
                f"{statistics.fmean(values) * 1000:>10.2f}"
            )
        p50 = percentile(times["forwarded"], 0.5) / percentile(times["direct"], 0.5)
        p99 = percentile(times["forwarded"], 0.99) / percentile(times["direct"], 0.99)
        print(f"ratio forwarded/direct: p50 {p50:.2f} (target <= 1.3), p99 {p99:.2f} (target <= 2)")
        direct.close()
        forwarded.close()
    finally:
        zk.stop()
        zk.close()
        stack.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
