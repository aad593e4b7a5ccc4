"""Bulk admin writes three ways, on the same ZooKeeper in the same run: through a real client and our node,
as raw pipelined ZooKeeper writes of the same znodes, and as a replay of Apache Kafka 3.9's own ZooKeeper
requests for the same work. CreateTopics of ``--topics`` x ``--partitions`` (RF 3) in batches of ``--batch``,
then one AlterPartitionReassignments of every one of those partitions. Targets: raw time / our time >= 0.5 for
the creations and >= 0.33 for the reassignment; Kafka's replayed time / ours >= 2 and >= 5.

One standalone ZooKeeper (``forceSync=no``, as every local benchmark here), and per round one fresh chroot per
side (``--sides``, default ``ours,raw,kafka``):

- **ours**: a real ``bridgekeeper node`` (broker 1, ``process.roles=broker,controller``) on its chroot, with
  brokers 2-6 registered as fakes; CreateTopics through confluent-kafka, one batch after another, each awaited,
  then AlterPartitionReassignments through kafka-python, one request naming every partition, each moved to the
  three brokers that do not hold it; the moves stay pending, and the node stops once it has answered
  (:mod:`bench.bulk_node`).
- **raw**: a plain kazoo client on its chroot writes what the controller writes, payloads encoded beforehand
  (only the I/O is timed): per topic one multi of creates, then per topic one multi of setData for the
  reassignment, ``--window`` multis in flight; the setData of the topic znodes alone is shown too, for reference
  (:mod:`bench.raw_writes`).
- **kafka**: kazoo replaying, on its chroot, the ZooKeeper requests a Kafka 3.9 broker in ZooKeeper mode that
  is also the controller makes for the same work, read from Kafka's sources at tag 3.9.0-rc3, through one
  session with at most ``--kafka-in-flight`` (10) requests unanswered, as Kafka's ``ZooKeeperClient`` allows:
  CreateTopics as its request handler and its controller thread make it, AlterPartitionReassignments as its
  controller does, four serial requests per partition. :mod:`bench.kafka_replay` lists every request, its
  source in Kafka, and what is not replayed.

The first round checks that every side holds the same znodes: every path under ``/brokers/topics`` and
``/config/topics`` on each chroot, configs byte for byte, topic znodes and states by shape (replica counts,
epochs, version, topic id present; the placement itself is random in the controller, as in Kafka).

Phases rotate (round r starts with the r-th side: ours, raw, kafka in round 1, raw, kafka, ours in round 2),
after a warm-up of ``--warmup`` topics on every side, and each phase starts once the node and ZooKeeper are
idle again, so that the metadata cache's reaction to one phase does not slow the next. Between rounds the
chroots are deleted and a new node starts. Per phase the table shows wall time and the CPU seconds of the
node, ZooKeeper and this process (the clients). Each round also times one round trip after the warm-up (the
median of ``--rtt-samples`` serial exists on an idle ZooKeeper), through kazoo as the replay sends them and over
a bare socket without client threads (:func:`bench.bulk_timing.bare_round_trip`, nearer what Kafka's Java
client pays), shown beside the table with the kafka side's request counts times each: its reassignment is four
serial requests per partition, so round-trip bound, and the bare figure bounds what Kafka itself would take
from below. The machine is shared: load averages are printed at start and end.

    .venv/bin/python -m bench.bulk_writes [--topics 10000] [--partitions 10] [--batch 1000] [--rounds 1]
        [--window 1000] [--warmup 100] [--heap-mb 1024] [--profile DIR] [--sides ours,raw,kafka]
        [--kafka-in-flight 10] [--rtt-samples 1000]

The module is a little over 500 lines because this docstring is the benchmark's manual; what it holds is the
round, the report and the command line, and each side lives in its own module (:mod:`bench.bulk_node`,
:mod:`bench.raw_writes`, :mod:`bench.kafka_replay`).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import statistics
import sys
import tempfile
import time
from collections import Counter as Tally
from collections.abc import Callable, Sequence
from pathlib import Path

import confluent_kafka
import kafka
from confluent_kafka.admin import AdminClient
from kafka import KafkaAdminClient
from kafka import TopicPartition as KafkaTopicPartition
from kazoo.client import KazooClient
from kazoo.retry import KazooRetry
from rich.console import Console
from rich.table import Table

from bench import nodescale
from bench.bulk_node import NODE_OVERRIDES, ours_create, ours_reassign, read_side, wait_active
from bench.bulk_timing import Meter, Results, bare_round_trip, round_trip
from bench.failover_load import Progress
from bench.kafka_replay import (
    KAFKA_IN_FLIGHT,
    KafkaCreate,
    KafkaZk,
    handler_requests,
    kafka_reassign,
    kafka_reassign_steps,
)
from bench.raw_writes import (
    REPLICATION,
    REQUEST_TIMEOUT_S,
    Counter,
    Side,
    create_nodes,
    moved,
    place,
    raw_multis,
    raw_set_multis,
    raw_sets,
    reassign_nodes,
)
from bench.tree_compare import compare, wipe
from bench.zkpopulate import topic_names
from controller.devstack.localzk import LocalZooKeeper
from zkmodel import paths

ROOT = "/bk-bulk"
SIDES = ("ours", "raw", "kafka")
#: The controller epoch the kafka and raw sides write when no node runs (``--sides`` without ours).
DEFAULT_EPOCH = 1


def kazoo(connect: str) -> KazooClient:
    client = KazooClient(
        hosts=connect, timeout=30.0, connection_retry=KazooRetry(max_tries=-1, delay=0.1, max_delay=0.5)
    )
    client.start(timeout=30)
    return client


def rotated(sides: Sequence[str], rnd: int) -> list[str]:
    """The phase order of round ``rnd``: it starts with the ``rnd``-th side."""
    k = (rnd - 1) % len(sides)
    return [*sides[k:], *sides[:k]]


Step = tuple[str, Callable[[], None], Callable[[], str]]


def run_round(
    rnd: int, args: argparse.Namespace, server: LocalZooKeeper, root: KazooClient, progress: Progress, out: Results
) -> None:
    label = f"round {rnd}/{args.rounds}"
    sides: list[str] = args.sides
    chroots = {side: f"{ROOT}/r{rnd}-{side}" for side in sides}
    for chroot in chroots.values():
        root.ensure_path(chroot)
    names = topic_names(args.topics)
    warm = [f"warmup-{rnd}-{i:04d}" for i in range(args.warmup)]
    zk_process = server.members[0].process
    assert zk_process is not None
    zk_pid = zk_process.pid
    with tempfile.TemporaryDirectory(prefix="bk-bulk-") as tmp:
        clients = {side: kazoo(server.connect_string + chroot) for side, chroot in chroots.items()}
        extra: list[KazooClient] = []
        node: nodescale.Node | None = None
        try:
            epoch = DEFAULT_EPOCH
            admin: AdminClient | None = None
            if "ours" in sides:
                fakes = kazoo(server.connect_string + chroots["ours"])
                extra.append(fakes)
                nodescale.register_fake_brokers(fakes)
                progress.show(f"{label}: starting the node (broker 1, broker,controller) ...", force=True)
                node = nodescale.Node(
                    Path(tmp),
                    server.connect_string + chroots["ours"],
                    nodescale.CONTROLLER_ID,
                    "broker,controller",
                    NODE_OVERRIDES,
                )
                wait_active(node, clients["ours"])
                epoch = int(clients["ours"].get(paths.CONTROLLER_EPOCH)[0])
                progress.done(f"{label}: node serving at {node.bootstrap}, controller epoch {epoch}")
                # librdkafka's own log (connection refused by the fakes' listeners, which do not exist) is muted:
                # an error that matters fails the topic's future
                quiet = logging.getLogger("bench.bulk_writes.librdkafka")
                quiet.disabled = True
                admin = AdminClient({"bootstrap.servers": node.bootstrap, "socket.timeout.ms": 60_000}, logger=quiet)
            if "raw" in sides:
                for parent in (paths.BROKER_TOPICS, "/config/topics"):  # the node makes these in its chroot at start
                    clients["raw"].ensure_path(parent)
            kafka_zk: KafkaZk | None = None
            if "kafka" in sides:
                kafka_zk = KafkaZk(clients["kafka"], args.kafka_in_flight)
                kafka_zk.prepare(epoch, nodescale.CONTROLLER_ID)
            meter = Meter(progress, node.pid if node is not None else None, zk_pid, args.profile)
            raw_side = place([*warm, *names], args.partitions)
            kafka_side = place([*warm, *names], args.partitions)

            # warm-up: every side, a few topics each, untimed
            if warm:
                if admin is not None:
                    ours_create(admin, warm, args.partitions, args.batch, Counter())
                if "raw" in sides:
                    raw_multis(clients["raw"], [create_nodes(raw_side, n, epoch) for n in warm], args.window, Counter())
                if kafka_zk is not None:
                    warm_up = KafkaCreate(kafka_zk, kafka_side, warm, epoch)
                    warm_up.prime()
                    warm_up.run(args.batch)

            # one round trip, on an idle (and warmed-up) ZooKeeper
            meter.settle()
            out.round_trips.append(round_trip(root, ROOT, args.rtt_samples))
            out.bare_round_trips.append(bare_round_trip(server.connect_string, ROOT, args.rtt_samples))
            progress.done(
                f"{label}: one round trip {out.round_trips[-1] * 1000:.3f} ms through kazoo, "
                f"{out.bare_round_trips[-1] * 1000:.3f} ms over a bare socket (medians of serial exists)"
            )

            # CreateTopics
            creates = [create_nodes(raw_side, n, epoch) for n in names] if "raw" in sides else []
            per_topic = 3 + 2 * args.partitions
            steps: dict[str, Step] = {}
            if admin is not None:
                ours_done = Counter()
                ours_admin = admin
                steps["ours"] = (
                    "create ours",
                    lambda: ours_create(ours_admin, names, args.partitions, args.batch, ours_done),
                    lambda: f"{ours_done.done:,}/{len(names):,} topics",
                )
            if "raw" in sides:
                raw_done = Counter()
                steps["raw"] = (
                    "create raw",
                    lambda: raw_multis(clients["raw"], creates, args.window, raw_done),
                    lambda: f"{raw_done.done:,}/{len(names):,} topic multis",
                )
            if kafka_zk is not None:
                kafka_create = KafkaCreate(kafka_zk, kafka_side, names, epoch)
                kafka_create.prime()
                before = kafka_zk.sent.copy()
                steps["kafka"] = (
                    "create kafka",
                    lambda: kafka_create.run(args.batch),
                    lambda: (
                        f"{kafka_create.handled:,}/{len(names):,} topics handled, "
                        f"{kafka_create.done:,} with partition states"
                    ),
                )
            for side in rotated(sides, rnd):
                key, fn, status = steps[side]
                out.add(key, meter.run(f"{label}: {key}", fn, status)[0])
            if kafka_zk is not None:
                out.requests["create kafka"] = kafka_zk.sent - before
                out.events.append(kafka_create.events)
            ours_side: Side | None = None
            if "ours" in sides:
                progress.show(f"{label}: reading back ours' placement ...", force=True)
                ours_side = read_side(clients["ours"], names)
            if rnd == 1 and len(sides) > 1:
                progress.show(f"{label}: comparing the trees after CreateTopics ...", force=True)
                problems = compare(clients)
                progress.done(
                    f"{label}: after CreateTopics {', '.join(sides)} hold the same {per_topic}-znode topics"
                    if not problems
                    else f"{label}: MISMATCH after CreateTopics: " + "; ".join(problems)
                )
                if problems:
                    raise SystemExit(1)

            # AlterPartitionReassignments
            reassign: dict[str, list[Step]] = {}
            ra: KafkaAdminClient | None = None
            if node is not None and ours_side is not None:
                targets = {
                    KafkaTopicPartition(n, p): moved(r) for n in names for p, r in ours_side.assignments[n].items()
                }
                ra = KafkaAdminClient(
                    bootstrap_servers=node.bootstrap,
                    client_id="bench-bulk-writes",
                    request_timeout_ms=int((REQUEST_TIMEOUT_S + 60) * 1000),
                )
                # kafka-python asks a random known broker which one is the controller; the fakes have no listener
                ra._controller_id = nodescale.CONTROLLER_ID
                ours_ra = ra
                reassign["ours"] = [
                    (
                        "reassign ours",
                        lambda: ours_reassign(ours_ra, targets),
                        lambda: f"{len(targets):,} partitions in one request",
                    )
                ]
            if "raw" in sides:
                sets = [reassign_nodes(raw_side, n, epoch) for n in names]
                topic_sets = [s[0] for s in sets]
                raw_reassigned, topics_done = Counter(), Counter()
                reassign["raw"] = [
                    (
                        "reassign raw",
                        lambda: raw_set_multis(clients["raw"], sets, args.window, raw_reassigned),
                        lambda: f"{raw_reassigned.done:,}/{len(names):,} topic multis",
                    ),
                    (
                        "reassign raw, topic znodes only",
                        lambda: raw_sets(clients["raw"], topic_sets, args.window, topics_done),
                        lambda: f"{topics_done.done:,}/{len(names):,} setData",
                    ),
                ]
            if kafka_zk is not None:
                kafka_steps = [kafka_reassign_steps(kafka_side, n, epoch) for n in names]
                kafka_reassigned = Counter()
                zk = kafka_zk
                reassign["kafka"] = [
                    (
                        "reassign kafka",
                        lambda: kafka_reassign(zk, kafka_steps, kafka_reassigned),
                        lambda: (
                            f"{kafka_reassigned.done * args.partitions:,}/{len(names) * args.partitions:,} partitions"
                        ),
                    )
                ]
            try:
                for side in rotated(sides, rnd):
                    before = kafka_zk.sent.copy() if kafka_zk is not None else Tally()
                    for key, fn, status in reassign[side]:
                        out.add(key, meter.run(f"{label}: {key}", fn, status)[0])
                    if side == "kafka" and kafka_zk is not None:
                        out.requests["reassign kafka"] = kafka_zk.sent - before
                    if side == "ours" and node is not None:
                        # With the moves pending the node's replica manager re-reads every lagging topic's config
                        # each tick and never goes idle at full scale: it has done its part, so it stops here.
                        progress.show(f"{label}: stopping the node ...", force=True)
                        node.stop()
                        meter.node_pid = None
            finally:
                if ra is not None:
                    ra.close()
            if rnd == 1 and len(sides) > 1:
                progress.show(f"{label}: comparing the trees after AlterPartitionReassignments ...", force=True)
                problems = compare(clients)
                progress.done(
                    f"{label}: after AlterPartitionReassignments {', '.join(sides)} hold the same znodes"
                    if not problems
                    else f"{label}: MISMATCH after AlterPartitionReassignments: " + "; ".join(problems)
                )
                if problems:
                    raise SystemExit(1)
        finally:
            if node is not None:
                node.stop()
            for client in [*clients.values(), *extra]:
                client.stop()
                client.close()
    if rnd < args.rounds:
        progress.show(f"{label}: deleting the chroots ...", force=True)
        for chroot in chroots.values():
            wipe(root, chroot)
        progress.done(f"{label}: chroots deleted")


def report(args: argparse.Namespace, out: Results) -> None:
    topics, partitions = args.topics, args.partitions
    created = topics * (3 + 2 * partitions)
    reassigned = topics * (1 + partitions)
    table = Table(
        title=f"bulk admin writes, median of {args.rounds} round(s); ratio = the other side's time / our time "
        "(above 1: ours is faster)"
    )
    columns = (
        "operation",
        "znodes",
        "ours",
        "raw",
        "kafka",
        "raw/ours",
        "target",
        "kafka/ours",
        "CPU s ours: node/ZK/client",
        "CPU s raw: ZK/kazoo",
        "CPU s kafka: ZK/kazoo",
    )
    for column in columns:
        table.add_column(column, justify="left" if column == "operation" else "right")

    def seconds(key: str) -> str:
        return f"{out.median(key):.3f}s" if key and out.has(key) else "-"

    def ratio(other: str, ours: str) -> str:
        if not (other and out.has(other) and out.has(ours)):
            return "-"
        return f"[bold]{out.median(other) / out.median(ours):.2f}[/bold]"

    def clients_cpu(key: str) -> str:
        if not (key and out.has(key)):
            return "-"
        _node, zk, own = out.cpu(key)
        return f"{zk:.2f} / {own:.2f}"

    rows = [
        (
            f"CreateTopics {topics:,} x {partitions} (batches of {args.batch:,})",
            created,
            "create",
            ">= 0.5; kafka/ours >= 2",
            "",
        ),
        (
            f"AlterPartitionReassignments of {topics * partitions:,}",
            reassigned,
            "reassign",
            ">= 0.33; kafka/ours >= 5",
            "",
        ),
        ("  vs. raw setData of the topic znodes alone", topics, "reassign", "", ", topic znodes only"),
    ]
    for name, znodes, phase, target, raw_suffix in rows:
        ours_key, raw_key = f"{phase} ours", f"{phase} raw{raw_suffix}"
        kafka_key = "" if raw_suffix else f"{phase} kafka"
        ours_cpu = "-"
        if target and out.has(ours_key):
            node_cpu, zk_cpu, own_cpu = out.cpu(ours_key)
            ours_cpu = f"{node_cpu:.2f} / {zk_cpu:.2f} / {own_cpu:.2f}"
        table.add_row(
            name,
            f"{znodes:,}",
            seconds(ours_key),
            seconds(raw_key),
            seconds(kafka_key),
            ratio(raw_key, ours_key),
            target,
            ratio(kafka_key, ours_key),
            ours_cpu,
            clients_cpu(raw_key),
            clients_cpu(kafka_key),
        )
    Console(width=220).print(table)
    for key, samples in out.samples.items():
        print(f"  rounds, {key}: " + ", ".join(f"{s.seconds:.3f}s" for s in samples))
    rtt, bare = statistics.median(out.round_trips), statistics.median(out.bare_round_trips)

    def ms(values: Sequence[float]) -> str:
        return ", ".join(f"{v * 1000:.3f}" for v in values)

    print(
        f"one round trip (median of {args.rtt_samples} serial exists on an idle ZooKeeper): {rtt * 1000:.3f} ms "
        f"through kazoo (per round: {ms(out.round_trips)}), {bare * 1000:.3f} ms over a bare socket "
        f"(per round: {ms(out.bare_round_trips)})"
    )

    def floor(requests: int) -> str:
        return f"x one round trip = {requests * rtt:.1f} s through kazoo, {requests * bare:.1f} s bare"

    if "create kafka" in out.requests:
        sent = out.requests["create kafka"]
        serial = handler_requests(topic_names(topics))
        print(
            f"kafka CreateTopics sent {sum(sent.values()):,} requests ({_kinds(sent)}): the request handler's "
            f"{serial:,} one after another ({serial / topics:.0f} per topic; {floor(serial)}; the phase took "
            f"{out.median('create kafka') / topics * 1000:.2f} ms a topic), the controller's in "
            f"{statistics.median(out.events):.0f} topic-change events (per round: "
            f"{', '.join(str(e) for e in out.events)}), at most {args.kafka_in_flight} in flight in all"
        )
    if "reassign kafka" in out.requests:
        sent = out.requests["reassign kafka"]
        total = sum(sent.values())
        print(
            f"kafka AlterPartitionReassignments sent {total:,} requests ({_kinds(sent)}), all one after another: "
            f"{floor(total)}; the phase took {out.median('reassign kafka'):.1f} s, "
            f"{out.median('reassign kafka') / total * 1000:.3f} ms a request"
        )
    print(
        f"ours: confluent-kafka {confluent_kafka.version()} create_topics, kafka-python {kafka.__version__} "
        f"alter_partition_reassignments; raw: kazoo multis, {args.window} in flight; kafka: Kafka 3.9's ZooKeeper "
        f"requests replayed with kazoo, at most {args.kafka_in_flight} in flight"
    )


def _kinds(sent: Tally[str]) -> str:
    return ", ".join(f"{kind} {count:,}" for kind, count in sorted(sent.items()))


def parse_sides(text: str) -> list[str]:
    chosen = [s.strip() for s in text.split(",") if s.strip()]
    unknown = set(chosen) - set(SIDES)
    if unknown or not chosen or len(set(chosen)) != len(chosen):
        raise argparse.ArgumentTypeError(f"a comma-separated subset of {','.join(SIDES)}, each once")
    return [s for s in SIDES if s in chosen]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--topics", type=int, default=10_000)
    parser.add_argument("--partitions", type=int, default=10)
    parser.add_argument("--batch", type=int, default=1000, help="topics per CreateTopics request (1000)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--window", type=int, default=1000, help="raw multis in flight (1000)")
    parser.add_argument("--warmup", type=int, default=100, help="untimed topics created first on every side (100)")
    parser.add_argument("--heap-mb", type=int, default=1024, help="ZooKeeper JVM heap")
    parser.add_argument(
        "--profile", type=Path, metavar="DIR", help="py-spy of the node (GIL holder only) in each of its phases, in DIR"
    )
    parser.add_argument(
        "--sides",
        type=parse_sides,
        default=list(SIDES),
        help="which sides run, comma-separated (ours,raw,kafka); without ours no node starts",
    )
    parser.add_argument(
        "--kafka-in-flight",
        type=int,
        default=KAFKA_IN_FLIGHT,
        help=f"the kafka side's requests in flight: zookeeper.max.in.flight.requests ({KAFKA_IN_FLIGHT})",
    )
    parser.add_argument(
        "--rtt-samples", type=int, default=1000, help="serial exists timed per round for one round trip (1000)"
    )
    args = parser.parse_args(argv)
    if min(args.topics, args.partitions, args.batch, args.rounds, args.window) < 1 or args.warmup < 0:
        parser.error("--topics, --partitions, --batch, --rounds and --window must be at least 1")
    if min(args.kafka_in_flight, args.rtt_samples) < 1:
        parser.error("--kafka-in-flight and --rtt-samples must be at least 1")
    # SIGTERM unwinds like Ctrl-C, so that the node and ZooKeeper are stopped in order
    signal.signal(signal.SIGTERM, lambda _sig, _frame: sys.exit(143))
    wall = time.perf_counter()
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} cores)")
    print(
        f"CreateTopics of {args.topics:,} topics x {args.partitions} partitions (RF {REPLICATION}) in batches of "
        f"{args.batch:,}, then one AlterPartitionReassignments of {args.topics * args.partitions:,} partitions; "
        f"{args.rounds} round(s); sides {','.join(args.sides)}"
    )
    progress = Progress()
    out = Results()
    progress.show("starting ZooKeeper ...", force=True)
    with LocalZooKeeper(heap_mb=args.heap_mb) as server:
        progress.done(f"ZooKeeper serving at {server.connect_string}")
        root = kazoo(server.connect_string)
        try:
            for rnd in range(1, args.rounds + 1):
                run_round(rnd, args, server, root, progress, out)
        finally:
            root.stop()
            root.close()
    print()
    report(args, out)
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"wall time {time.perf_counter() - wall:.1f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
