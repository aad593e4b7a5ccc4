"""``snapshot export`` and ``snapshot parse`` on a large Kafka-shaped tree, each beside its baseline in one run.

- export: our walk (multiRead levels for children and data, pipelined getACL) against plain kazoo
  (``get_children_async`` + ``get_async`` + ``get_acls_async`` per znode, 1,000 in flight), both producing the
  same nodes; znodes/s and the ratio, median of ``--rounds`` alternating rounds.
- parse: the server is restarted (ZooKeeper writes a snapshot after loading), then the snapshot file is parsed
  to Parquet against ``cat FILE > /dev/null`` of the same file: MB/s and the ratio.

    .venv/bin/python -m bench.snapshot_tools [--topics 1000] [--partitions 100] [--rounds 3]
    (``--topics 10000 --partitions 100`` is the 1M-partition tree: ~3M znodes, several minutes)
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from kazoo.client import KazooClient
from kazoo.retry import KazooRetry

from bench.failover_load import Progress, pipelined
from bench.zkpopulate import kafka_topic_tree, populate
from controller.devstack.localzk import LocalZooKeeper
from controller.zk.session import ZkSession
from migrate.snapshot import files
from migrate.snapshot.export import walk
from migrate.snapshot.rows import RowWriter


def baseline_walk(client: KazooClient, root: str) -> int:
    """Every znode under ``root`` with plain kazoo, level by level: children, data+stat and ACL per znode."""
    level, seen = [root], 0
    while level:
        kids = pipelined(client.get_children_async, level)
        pipelined(client.get_async, level)
        pipelined(client.get_acls_async, level)
        seen += len(level)
        level = [f"{p.rstrip('/')}/{c}" for p in level for c in (kids.get(p) or [])]
    return seen


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--topics", type=int, default=1000)
    parser.add_argument("--partitions", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--heap-mb", type=int, default=2048)
    args = parser.parse_args(argv)
    progress = Progress()
    work = Path(tempfile.mkdtemp(prefix="bk-snapbench-"))
    server = LocalZooKeeper(base_dir=work / "zk", heap_mb=args.heap_mb)
    server.start()
    try:
        client = KazooClient(
            server.connect_string, timeout=30.0, connection_retry=KazooRetry(max_tries=-1, delay=0.1, max_delay=0.5)
        )
        client.start(timeout=30)
        client.ensure_path("/brokers/topics")
        start = time.perf_counter()
        created = populate(
            client,
            kafka_topic_tree(args.topics, args.partitions),
            progress=lambda n: progress.show(f"populating {n:,} znodes"),
        )
        progress.done(f"populated {created:,} znodes in {time.perf_counter() - start:.1f}s")
        session = ZkSession(server.connect_string, session_timeout_ms=30_000)
        session.start()
        ours_s, base_s, count = [], [], 0
        for rnd in range(args.rounds):
            for which in ("ours", "base") if rnd % 2 == 0 else ("base", "ours"):
                t0 = time.perf_counter()
                if which == "ours":
                    count = sum(1 for _ in walk(session, ["/brokers"]))
                    ours_s.append(time.perf_counter() - t0)
                else:
                    base_count = baseline_walk(client, "/brokers")
                    base_s.append(time.perf_counter() - t0)
                    assert base_count == count or count == 0
            progress.done(f"round {rnd + 1}: ours {ours_s[-1]:.2f}s, kazoo {base_s[-1]:.2f}s ({count:,} znodes)")
        o, b = statistics.median(ours_s), statistics.median(base_s)
        print(f"export: {count:,} znodes  ours {count / o:,.0f}/s  kazoo {count / b:,.0f}/s  time ratio {o / b:.2f}")
        session.close()
        client.stop()
        client.close()
        server.stop()
        server.start()  # ZooKeeper writes a snapshot of what it loaded
        server.stop()
        snap = files.files_in(next((work / "zk").glob("zk*/data")))[0][-1]
        size = snap.stat().st_size
        parse_s, cat_s = [], []
        for rnd in range(args.rounds):
            t0 = time.perf_counter()
            subprocess.run(["cat", str(snap)], stdout=subprocess.DEVNULL, check=True)
            cat_s.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            with RowWriter(work / "rows.parquet") as out:
                info = files.read_snapshot(snap, out.write)
            parse_s.append(time.perf_counter() - t0)
            progress.done(f"round {rnd + 1}: parse {parse_s[-1]:.2f}s, cat {cat_s[-1]:.3f}s ({info.nodes:,} znodes)")
        p, c = statistics.median(parse_s), statistics.median(cat_s)
        print(
            f"parse: {snap.name} {size / 1e6:,.1f} MB  ours {size / p / 1e6:,.1f} MB/s  "
            f"cat {size / c / 1e6:,.0f} MB/s  time ratio {p / c:,.0f}"
        )
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
