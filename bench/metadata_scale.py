"""Metadata at scale: all-topics Metadata for a 100k-partition cluster served to 20 concurrent clients, cached
vs. uncached, and the time from a ZooKeeper change to Metadata serving it.

Everything runs on one private standalone ZooKeeper holding a Kafka-shaped tree of ``--topics`` x
``--partitions`` partitions (RF 3 on brokers 1-6, :mod:`bench.zkpopulate`); brokers 1-6 are registered by this
process (fake endpoints, so that every leader is alive). There is no controller: Metadata is a broker's answer
from its metadata cache, and the bench writes partition states itself, as a controller would; a live one would
only add its own work and hold stale copies of what the bench rewrites.

**Throughput and latency.** The node has no setting to switch its Metadata response cache off, so both
variants are served by one server process started for the purpose (``--serve``; a process of its own, so the
clients do not share its GIL): it loads the node's real broker metadata cache
(:class:`controller.broker.metadata_cache.MetadataCache`, watches and all) from the tree and runs two wire
servers on it (:class:`controller.wire.runtime.WireRuntime` with the node's :class:`Apis`), one with
``cache_metadata=True`` (the encoded all-topics body kept per metadata snapshot, what the node does) and one
with ``cache_metadata=False`` (every answer built and encoded again). A third column is a real node process
(``python -m controller.cli node``, broker-only, id 7, on the same tree): what operators run, cached, behind the
node's dispatcher and metrics. ``--clients`` client processes (forked before anything else starts), each on its
own connection, send all-topics Metadata v12 (``topics=null``) with ``--window`` requests in flight (1: the next
is sent when the previous is answered), for ``--seconds``; a client's last request is still answered and
counted, and a phase lasts until the last answer. Requests/s is all answers over that time; latency is per
request, send to the last byte of the answer, pooled over rounds. ``--rounds`` rounds run one phase per
variant, the order rotated each round, so that drift on this shared machine hits every variant. One answer of
each variant is compared byte for byte first (the cache must serve exactly what the uncached path builds).

**Change to serve.** Against the node process: ``--changes`` times, one partition's state znode is rewritten
with kazoo (its leader moved to the next ISR member, leader epoch + 1, in Kafka's partition-state JSON), then
that topic's Metadata is polled on one connection in a tight loop until the new leader and epoch show; the
figure is the time from the write's completion (kazoo's reply) to the first answer showing it. Then
``--new-topics`` topics are created the same way (topic znode, ``partitions``, every partition and its state
in one multi) until the topic appears with its leaders. For the first ``--all-topics-changes`` of each kind,
all-topics Metadata is polled too, until its body differs from the one before the write: what a client that
polls all topics waits, the node's cache update plus one rebuild of the whole cached body (built in a thread
off the node's event loop, once per snapshot however many clients ask meanwhile). The round trip of one
topic poll is printed with the figures: it is their resolution (and a poll holds the node's GIL meanwhile).

Live progress while it runs, then a table; ``os.getloadavg()`` at start and end (the machine is shared).

    .venv/bin/python -m bench.metadata_scale [--topics 10000] [--partitions 10] [--clients 20] [--seconds 10]
        [--rounds 3] [--window 1] [--changes 50] [--new-topics 20] [--all-topics-changes 10] [--no-node-column]
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import math
import os
import signal
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from kazoo.client import KazooClient
from kazoo.retry import KazooRetry

from bench import nodescale
from bench.failover_load import Progress
from bench.metadata_changes import FAKE_BROKERS, Changes, change_to_serve, register_brokers
from bench.metadata_clients import ClientPool, PhaseResult
from bench.metadata_server import NODE_ID, serve, start_node, start_server
from bench.metadata_wire import VERSION, decode_metadata, fetch, metadata_frame
from bench.zkpopulate import kafka_topic_tree, populate
from controller.devstack.localzk import LocalZooKeeper

VARIANTS = ("cached", "uncached", "node")

log = logging.getLogger("bench.metadata_scale")


def pct(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0..1) of ``values``."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


@dataclass
class Pooled:
    phases: list[PhaseResult] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return sum(p.answers for p in self.phases) / sum(p.seconds for p in self.phases)

    @property
    def latencies(self) -> list[float]:
        return [x for p in self.phases for x in p.latencies]


def slower(a: Pooled, b: Pooled, q: float) -> float:
    """How many times ``a``'s latency percentile ``q`` is ``b``'s."""
    return pct(a.latencies, q) / pct(b.latencies, q)


def loadavg() -> str:
    return "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def check_same_answers(ports: dict[str, int]) -> tuple[int, Any, str]:
    """One all-topics answer from each variant (correlation id 1): the size, the decoded body, and whether
    every variant answered the same bytes."""
    frame = metadata_frame(None)
    answers = {name: fetch(port, frame) for name, port in ports.items()}
    first = next(iter(answers.values()))
    differ = [name for name, body in answers.items() if body != first]
    verdict = "identical" if not differ else f"DIFFER ({', '.join(differ)} from {next(iter(answers))})"
    return len(first), decode_metadata(first), verdict


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--topics", type=int, default=10_000)
    parser.add_argument("--partitions", type=int, default=10)
    parser.add_argument("--clients", type=int, default=20, help="client processes, one connection each")
    parser.add_argument("--seconds", type=float, default=10.0, help="each phase's sending time")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--window", type=int, default=1, help="requests in flight per client")
    parser.add_argument("--changes", type=int, default=50, help="partition leader moves timed to Metadata")
    parser.add_argument("--new-topics", type=int, default=20, help="topic creations timed to Metadata")
    parser.add_argument("--all-topics-changes", type=int, default=10, help="of each kind, also timed all-topics")
    parser.add_argument("--no-node-column", action="store_true", help="throughput: only the cached/uncached server")
    parser.add_argument("--heap-mb", type=int, default=1024, help="ZooKeeper JVM heap")
    parser.add_argument("--serve", metavar="ZK", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        return serve(args.serve)

    # SIGTERM unwinds like Ctrl-C, so that every process and server below is stopped in order.
    def terminated(_signum: int, _frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, terminated)
    wall = time.perf_counter()
    load_start = loadavg()
    print(
        f"Metadata at scale: {args.topics:,} topics x {args.partitions} partitions = "
        f"{args.topics * args.partitions:,} partitions (RF 3), {args.clients} clients"
    )
    print(f"load average at start: {load_start} ({os.cpu_count()} cores)", flush=True)
    pool = ClientPool(args.clients)  # forked first: no thread, server or socket to inherit yet
    try:
        with contextlib.ExitStack() as stack:
            stack.callback(pool.close)  # unwound last: after the servers, the node and ZooKeeper
            run(args, stack, pool)
    except KeyboardInterrupt:
        print("\ninterrupted: every process stopped", file=sys.stderr)
        return 130
    print(f"load average at end: {loadavg()} (at start: {load_start}); wall time {time.perf_counter() - wall:.0f}s")
    return 0


def run(args: argparse.Namespace, stack: contextlib.ExitStack, pool: ClientPool) -> None:
    """The whole bench; everything it starts is stopped by ``stack``, in reverse order, however it ends."""
    progress = Progress()
    work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bk-metadata-scale-")))
    progress.show("starting ZooKeeper ...", force=True)
    zk = stack.enter_context(LocalZooKeeper(heap_mb=args.heap_mb))
    progress.done(f"ZooKeeper serving at {zk.connect_string}")
    client = KazooClient(
        hosts=zk.connect_string, timeout=30.0, connection_retry=KazooRetry(max_tries=-1, delay=0.1, max_delay=0.5)
    )
    stack.callback(client.close)
    stack.callback(client.stop)
    client.start(timeout=30)
    client.ensure_path("/brokers/topics")
    started = time.perf_counter()
    total = args.topics * (2 + 2 * args.partitions)

    def show_populate(n: int) -> None:
        progress.show(f"populating {n:,}/{total:,} znodes ({n / (time.perf_counter() - started):,.0f}/s)")

    created = populate(client, kafka_topic_tree(args.topics, args.partitions), progress=show_populate)
    progress.done(f"populated {created:,} znodes in {time.perf_counter() - started:.1f}s")
    register_brokers(client)

    progress.show(f"starting node {NODE_ID} (broker-only; loads its metadata cache) ...", force=True)
    started = time.perf_counter()
    node, node_port = start_node(zk.connect_string, work)
    stack.callback(node.stop)
    node_ready = time.perf_counter() - started
    progress.done(f"node {NODE_ID} serving Metadata on port {node_port}, ready in {node_ready:.1f}s")

    progress.show("starting the cached/uncached server (loads the same cache) ...", force=True)
    server, info = start_server(zk.connect_string, work)
    stack.callback(server.stop)
    progress.done(
        f"server: cache loaded in {info['load_s']:.2f}s ({info['topics']:,} topics, {info['partitions']:,} "
        f"partitions); cached on port {info['cached']}, uncached on port {info['uncached']}"
    )
    variants = [v for v in VARIANTS if not (v == "node" and args.no_node_column)]
    ports = {"cached": info["cached"], "uncached": info["uncached"], "node": node_port}
    ports = {v: ports[v] for v in variants}
    progress.show("one answer from each variant (this also builds the cached bodies) ...", force=True)
    size, body, verdict = check_same_answers(ports)
    progress.done(
        f"all-topics answer: {size:,} bytes, {len(body.topics):,} topics, "
        f"{sum(len(t.partitions) for t in body.topics):,} partitions, {len(body.brokers)} brokers; "
        f"the variants' answers are {verdict}"
    )
    pooled = {v: Pooled() for v in variants}
    for rnd in range(1, args.rounds + 1):
        shift = (rnd - 1) % len(variants)
        for variant in variants[shift:] + variants[:shift]:
            label = f"round {rnd}/{args.rounds} {variant:>8}"
            phase = pool.run(variant, ports[variant], args, progress, label)
            pooled[variant].phases.append(phase)
            progress.done(
                f"{label}: {phase.rate:9,.1f} req/s, p50 {pct(phase.latencies, 0.5) * 1000:8.1f} ms, "
                f"p99 {pct(phase.latencies, 0.99) * 1000:8.1f} ms ({phase.answers:,} answers in {phase.seconds:.1f}s)"
            )
    rss = {"server": nodescale.rss(server.pid), "node": nodescale.rss(node.pid)}
    server.stop()  # its cache and wire would take CPU from the node below
    report_load(args, info, size, verdict, pooled, rss, node_ready)
    if args.changes or args.new_topics:
        progress.show("change to serve ...", force=True)
        report_changes(change_to_serve(client, node_port, args, progress))


def report_load(
    args: argparse.Namespace,
    info: dict[str, Any],
    size: int,
    verdict: str,
    pooled: dict[str, Pooled],
    rss: dict[str, int],
    node_ready: float,
) -> None:
    mib = 2**20
    print()
    print(
        f"all-topics Metadata v{VERSION}: {info['topics']:,} topics, {info['partitions']:,} partitions, "
        f"{len(FAKE_BROKERS) + 1} brokers, answer {size:,} bytes ({verdict}); {args.clients} client processes, "
        f"{args.window} in flight each, {args.rounds} rounds x {args.seconds:g}s per variant"
    )
    header = f"{'variant':<22}{'req/s':>10}{'MB/s':>9}{'p50 ms':>10}{'p99 ms':>10}{'max ms':>10}   per-round req/s"
    print(header)
    print("-" * len(header))
    names = {"cached": "cached (server)", "uncached": "uncached (server)", "node": f"node {NODE_ID} (cached)"}
    for variant, figures in pooled.items():
        lat = figures.latencies
        rounds = ", ".join(f"{p.rate:,.1f}" for p in figures.phases)
        print(
            f"{names[variant]:<22}{figures.rate:>10,.1f}{figures.rate * size / 1e6:>9,.1f}"
            f"{pct(lat, 0.5) * 1000:>10.1f}{pct(lat, 0.99) * 1000:>10.1f}{max(lat) * 1000:>10.1f}   {rounds}"
        )
    c, u = pooled["cached"], pooled["uncached"]
    per_round = ", ".join(f"{cp.rate / up.rate:.1f}x" for cp, up in zip(c.phases, u.phases, strict=True))
    print(
        f"cached/uncached: throughput {c.rate / u.rate:.1f}x (per round {per_round}); latency uncached/cached "
        f"p50 {slower(u, c, 0.5):.1f}x, p99 {slower(u, c, 0.99):.1f}x"
    )
    if "node" in pooled:
        n = pooled["node"]
        print(
            f"node/cached server: throughput {n.rate / c.rate:.2f}x, latency p50 "
            f"{slower(n, c, 0.5):.2f}x, p99 {slower(n, c, 0.99):.2f}x "
            "(the same cached path, behind the node's dispatcher and metrics, beside its other threads)"
        )
    cost = info["build_s"] + info["encode_s"]
    print(
        f"one uncached answer in the server: build {info['build_s'] * 1000:,.1f} ms + kio encode "
        f"{info['encode_s'] * 1000:,.1f} ms = {cost * 1000:,.1f} ms ({cost / max(info['partitions'], 1) * 1e6:.1f} us "
        f"per partition)"
    )
    print(
        f"metadata cache load: server {info['load_s']:.2f}s, node ready in {node_ready:.1f}s; RSS server "
        f"{rss['server'] / mib:,.0f} MiB, node {rss['node'] / mib:,.0f} MiB"
    )
    print(flush=True)


def report_changes(changes: Changes) -> None:
    print()
    print(
        f"change to serve, node {NODE_ID}: from the ZooKeeper write's completion to the first Metadata answer "
        "showing it (tight polling, one connection)"
    )
    header = f"{'change':<16}{'polled':<22}{'n':>4}{'p50 ms':>10}{'p99 ms':>10}{'max ms':>10}"
    print(header)
    print("-" * len(header))
    for kind, rows in changes.shown.items():
        for what, values in (
            ("topic Metadata", [r.topic_s for r in rows]),
            ("all-topics Metadata", [r.all_s for r in rows if r.all_s is not None]),
        ):
            if values:
                print(
                    f"{kind:<16}{what:<22}{len(values):>4}{pct(values, 0.5) * 1000:>10.1f}"
                    f"{pct(values, 0.99) * 1000:>10.1f}{max(values) * 1000:>10.1f}"
                )
    rtts = changes.topic_rtts
    line = (
        f"resolution: one topic Metadata round trip p50 {pct(rtts, 0.5) * 1000:.1f} ms, "
        f"p99 {pct(rtts, 0.99) * 1000:.1f} ms ({len(rtts):,} polls)"
    )
    if changes.rebuild_rtts:
        rebuilds = changes.rebuild_rtts
        line += (
            f"; the all-topics answer showing a change (the node rebuilding its cached body) took "
            f"p50 {pct(rebuilds, 0.5) * 1000:.1f} ms, max {max(rebuilds) * 1000:.1f} ms"
        )
    print(line)
    print()


if __name__ == "__main__":
    raise SystemExit(main())
