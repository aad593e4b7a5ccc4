"""Controller failover read: multiRead batches (controller.zk.bulk_read) vs. kazoo's pipelined get_async.

Builds a Kafka-shaped tree in a private standalone ZooKeeper (``/brokers/topics/<t>`` with a v3
assignment, ``.../partitions`` and ``.../partitions/<p>`` with null data, ``.../partitions/<p>/state``),
then measures, interleaved and repeated (median of ``--rounds``), in one run on the same data:

- discovery: get_children of /brokers/topics, then of every topic's ``partitions``;
- data: every topic znode and partition state (topics * (1 + partitions) znodes).

The baseline is plain kazoo, ``get_async``/``get_children_async`` with 1,000 requests in flight; ours is
``read_children``/``read_data`` with their defaults (multiRead, 1,000 ops per request, 8 in flight).

Then ``load_context`` (read, decode, context, and the per-topic watches: the controller's whole load), and
real node processes on the same tree (:mod:`bench.nodescale`): the failover time a running broker takes to
become the serving controller (its own metric), and the controller and broker-only nodes' resident size.

    .venv/bin/python -m bench.failover_load [--topics 10000] [--partitions 10] [--rounds 3]
        [--no-nodes | --nodes-only] [--profile-failover FILE] [--profile-cold FILE]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
from kazoo.retry import KazooRetry

from bench import nodescale
from bench.zkpopulate import data_paths, kafka_topic_tree, populate
from controller.active.failover import load_context
from controller.devstack.localzk import LocalZooKeeper
from controller.zk.bulk_read import DEFAULT_MAX_RESPONSE_BYTES, ReadStats, read_children, read_data
from controller.zk.session import ZkSession

TOPICS_ROOT = "/brokers/topics"
BASELINE_IN_FLIGHT = 1000


class Progress:
    """One live status line (rewritten in place on a terminal, a few plain lines otherwise)."""

    def __init__(self) -> None:
        self.tty = sys.stdout.isatty()
        self.last = 0.0
        self.width = 0

    def show(self, text: str, *, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self.last < (0.2 if self.tty else 5.0):
            return
        self.last = now
        if self.tty:
            sys.stdout.write("\r" + text.ljust(self.width))
            self.width = len(text)
        else:
            sys.stdout.write(text + "\n")
        sys.stdout.flush()

    def done(self, text: str) -> None:
        if self.tty:
            sys.stdout.write("\r" + text.ljust(self.width) + "\n")
        else:
            sys.stdout.write(text + "\n")
        self.width = 0
        sys.stdout.flush()


def pipelined(
    call: Callable[[str], Any], paths: Sequence[str], progress: Callable[[int], None] | None = None
) -> dict[str, Any]:
    """kazoo's own calls, BASELINE_IN_FLIGHT outstanding; a missing znode reads as None."""
    out: dict[str, Any] = {}
    window: deque[tuple[str, Any]] = deque()

    def drain() -> None:
        path, result = window.popleft()
        try:
            out[path] = result.get(timeout=60)
        except NoNodeError:
            out[path] = None

    for i, path in enumerate(paths):
        window.append((path, call(path)))
        if len(window) >= BASELINE_IN_FLIGHT:
            drain()
        if progress is not None and i % 1000 == 0:
            progress(len(out))
    while window:
        drain()
    return out


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    gc.collect()
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def partitions_dirs(topics: Sequence[str]) -> list[str]:
    return [f"{TOPICS_ROOT}/{t}/partitions" for t in topics]


def discover_baseline(client: KazooClient, progress: Callable[[int], None]) -> dict[str, list[str]]:
    topics = client.get_children(TOPICS_ROOT)
    listing = pipelined(client.get_children_async, partitions_dirs(topics), progress)
    return {TOPICS_ROOT: topics, **listing}


def discover_ours(client: KazooClient) -> dict[str, list[str] | None]:
    topics = read_children(client, [TOPICS_ROOT])[TOPICS_ROOT] or []
    listing = read_children(client, partitions_dirs(topics))
    return {TOPICS_ROOT: topics, **listing}


Measured = tuple[dict[str, Any], dict[str, Any]]


def measure_baseline(
    client: KazooClient,
    paths: Sequence[str],
    label: str,
    progress: Progress,
    times: dict[str, list[float]],
    stats: ReadStats,
) -> Measured:
    def live(what: str, total: int) -> Callable[[int], None]:
        return lambda n: progress.show(f"{label}: baseline {what} {n:,}/{total:,}")

    topics = len(paths) - sum("/partitions/" in p for p in paths)
    t, disc = timed(lambda: discover_baseline(client, live("listings", topics)))
    times["disc_base"].append(t)
    progress.done(f"{label}: baseline discovery   {t:7.3f}s")
    t, data = timed(lambda: pipelined(client.get_async, paths, live("reads", len(paths))))
    times["data_base"].append(t)
    progress.done(f"{label}: baseline data reads  {t:7.3f}s")
    return disc, data


def measure_ours(
    client: KazooClient,
    paths: Sequence[str],
    label: str,
    progress: Progress,
    times: dict[str, list[float]],
    stats: ReadStats,
) -> Measured:
    progress.show(f"{label}: multiRead discovery ...", force=True)
    t, disc = timed(lambda: discover_ours(client))
    times["disc_ours"].append(t)
    progress.done(f"{label}: multiRead discovery  {t:7.3f}s")
    progress.show(f"{label}: multiRead data reads ...", force=True)
    this_read = ReadStats()
    t, data = timed(lambda: read_data(client, paths, stats=this_read))
    vars(stats).update(vars(this_read))
    times["data_ours"].append(t)
    progress.done(f"{label}: multiRead data reads {t:7.3f}s")
    return disc, data


def same_listing(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a.keys() == b.keys() and all(sorted(a[k] or []) == sorted(b[k] or []) for k in a)


def report_reads(
    rounds: int, topics: int, paths: Sequence[str], times: dict[str, list[float]], stats: ReadStats, loaded: int
) -> None:
    """The read comparison's table: kazoo's pipelined reads vs. multiRead vs. the whole load_context."""
    med = {k: statistics.median(v) for k, v in times.items()}
    listed = topics + 1
    rows = [
        ("discovery (getChildren)", listed, med["disc_base"], med["disc_ours"]),
        ("data (getData)", len(paths), med["data_base"], med["data_ours"]),
        (
            "total",
            listed + len(paths),
            med["disc_base"] + med["data_base"],
            med["disc_ours"] + med["data_ours"],
        ),
    ]
    print()
    print(f"median of {rounds} interleaved rounds; baseline = kazoo get_async/get_children_async, 1,000 in flight")
    print(
        f"ours = controller.zk.bulk_read (multiRead, <=1,000 ops per request, 8 in flight): {stats.requests} requests"
    )
    print(
        f"per data read, largest response {stats.largest_response_bytes:,} bytes, "
        f"{stats.oversized_responses} over the {DEFAULT_MAX_RESPONSE_BYTES:,}-byte budget"
    )
    print()
    header = f"{'phase':<25}{'reads':>9}{'baseline':>11}{'ours':>10}{'base/s':>11}{'ours/s':>12}{'ours/baseline':>15}"
    print(header)
    print("-" * len(header))
    for name, n, base, ours in rows:
        print(f"{name:<25}{n:>9,}{base:>10.3f}s{ours:>9.3f}s{n / base:>11,.0f}{n / ours:>12,.0f}{ours / base:>15.3f}")
    print()
    base_total = med["disc_base"] + med["data_base"]
    print(
        f"controller failover load (load_context: read + decode + context, {loaded:,} partitions): "
        f"{med['load']:.3f}s vs baseline read {base_total:.3f}s -> ratio {med['load'] / base_total:.3f} (target <= 1.0)"
    )
    for key, label in (("data_base", "baseline data"), ("data_ours", "ours data"), ("load", "load_context")):
        print(f"  rounds, {label}: " + ", ".join(f"{t:.3f}s" for t in times[key]))
    print(
        f"  load_context vs ZooKeeper's multiRead limit (ours discovery + data): "
        f"{med['load'] / (med['disc_ours'] + med['data_ours']):.2f}x"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--topics", type=int, default=10_000)
    parser.add_argument("--partitions", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--heap-mb", type=int, default=1024, help="ZooKeeper JVM heap")
    parser.add_argument(
        "--no-nodes", action="store_true", help="skip the real node processes (whole-path failover and memory)"
    )
    parser.add_argument(
        "--nodes-only", action="store_true", help="skip the read comparison: populate, then the node processes"
    )
    parser.add_argument(
        "--profile-failover",
        type=Path,
        metavar="FILE",
        help="py-spy (collapsed stacks) of the node taking over, written to FILE",
    )
    parser.add_argument(
        "--profile-cold",
        type=Path,
        metavar="FILE",
        help="py-spy (collapsed stacks, the GIL holder only) of the first node until its cold failover ends",
    )
    args = parser.parse_args(argv)
    if args.nodes_only and args.no_nodes:
        parser.error("--nodes-only and --no-nodes exclude each other")
    if args.nodes_only:
        args.rounds = 0
    topics, partitions = args.topics, args.partitions
    paths = data_paths(topics, partitions)
    total_nodes = 2 + topics * (2 + 2 * partitions)
    progress = Progress()
    wall = time.perf_counter()

    print(f"failover read: {topics:,} topics x {partitions} partitions = {len(paths):,} znodes to read")
    progress.show("starting ZooKeeper ...", force=True)
    with LocalZooKeeper(heap_mb=args.heap_mb) as server:
        progress.done(f"ZooKeeper serving at {server.connect_string}")
        client = KazooClient(
            hosts=server.connect_string,
            timeout=30.0,
            connection_retry=KazooRetry(max_tries=-1, delay=0.1, max_delay=0.5),
        )
        client.start(timeout=30)
        try:
            client.ensure_path(TOPICS_ROOT)
            start = time.perf_counter()

            def show_populate(n: int) -> None:
                rate = n / max(time.perf_counter() - start, 1e-9)
                progress.show(f"populating {n:,}/{total_nodes - 2:,} znodes ({rate:,.0f}/s)")

            created = populate(client, kafka_topic_tree(topics, partitions), progress=show_populate)
            took = time.perf_counter() - start
            progress.done(f"populated {created:,} znodes in {took:.1f}s ({created / took:,.0f}/s, pipelined multis)")

            # warm both paths (JIT on the server, imports and caches on the client)
            read_data(client, paths[:2000])
            pipelined(client.get_async, paths[:2000])

            times: dict[str, list[float]] = {
                k: [] for k in ("disc_base", "disc_ours", "data_base", "data_ours", "load")
            }
            stats = ReadStats()
            session = ZkSession(server.connect_string, session_timeout_ms=30_000)
            session.start()
            loaded = 0
            for rnd in range(1, args.rounds + 1):
                label = f"round {rnd}/{args.rounds}"
                steps = [measure_baseline, measure_ours] if rnd % 2 else [measure_ours, measure_baseline]
                results = [step(client, paths, label, progress, times, stats) for step in steps]
                progress.show(f"{label}: controller failover load (load_context) ...", force=True)
                took, (ctx, _report) = timed(
                    lambda: load_context(session, 1, 0, uses_topic_ids=True, topic_watch=lambda _event: None)
                )
                times["load"].append(took)
                loaded = sum(len(t.partitions) for t in ctx.topics.values())
                progress.done(
                    f"{label}: load_context built {len(ctx.topics):,} topics / {loaded:,} partitions in {took:.3f}s"
                )
                if rnd == 1:
                    (disc_a, data_a), (disc_b, data_b) = results
                    if not same_listing(disc_a, disc_b) or data_a != data_b:
                        print("MISMATCH: multiRead results differ from get_async results", file=sys.stderr)
                        return 1
                    missing = sum(v is None for v in data_a.values())
                    print(f"{label}: results identical ({len(data_a):,} znodes, {missing} missing)")
            session.close()
            nodes = (
                None
                if args.no_nodes
                else nodescale.measure(
                    server.connect_string,
                    "",
                    say=progress.done,
                    profile=args.profile_failover,
                    profile_cold=args.profile_cold,
                )
            )
        finally:
            client.stop()
            client.close()

    if args.rounds:
        report_reads(args.rounds, topics, paths, times, stats, loaded)
    else:
        loaded = topics * partitions
    if nodes is not None:
        mib = 2**20
        print()
        print(f"real node processes on the same tree ({loaded:,} partitions, brokers 1-6 registered):")
        print(
            f"  failover of a running broker (node 1 taking over from a stopped controller): {nodes.failover_s:.2f}s "
            f"(target: <= 0.2 s at 100k partitions, <= 1.0 s at 1M)"
        )
        print(f"    its log: ...{nodes.failover_log}")
        print(
            f"  cold: a starting node (ready in {nodes.cold_ready_s:.2f}s) elected at once, failover "
            f"{nodes.cold_failover_s:.2f}s (overlaps its own start; target <= 30 s at 1M)"
        )
        print(
            f"  controller node RSS {nodes.controller_rss / mib:,.0f} MiB = "
            f"{nodes.controller_rss / loaded:,.0f} B/partition "
            f"({(nodes.controller_rss - nodes.empty_rss) / loaded:,.0f} B/partition above an empty node's "
            f"{nodes.empty_rss / mib:,.0f} MiB; target at 1M: <= 800)"
        )
        print(
            f"  broker-only node RSS {nodes.broker_rss / mib:,.0f} MiB = {nodes.broker_rss / loaded:,.0f} B/partition "
            f"({(nodes.broker_rss - nodes.empty_rss) / loaded:,.0f} B/partition above the empty node; target at 1M: "
            f"<= 700)"
        )
    print(f"wall time {time.perf_counter() - wall:.1f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
