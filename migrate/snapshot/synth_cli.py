"""``bridgekeeper pipeline synth``: write synthetic clusters as snapshot rows (the pipeline's test and benchmark
inputs), one file per cluster."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from migrate.snapshot.rows import RowWriter
from migrate.snapshot.synthetic import DEFECTS, ClusterSpec, cluster_nodes


def _partitions(text: str) -> tuple[int, int]:
    low, sep, high = text.partition("-")
    try:
        lo, hi = int(low), int(high if sep else low)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected N or MIN-MAX, got {text!r}") from None
    if lo < 1 or hi < lo:
        raise argparse.ArgumentTypeError(f"expected 1 <= MIN <= MAX, got {text!r}")
    return lo, hi


def cmd_synth(args: argparse.Namespace) -> int:
    defects = set(DEFECTS) if "all" in args.defect else set(args.defect)
    names = [args.name] if args.clusters == 1 else [f"{args.name}-{i:02d}" for i in range(args.clusters)]
    out = Path(args.output)
    if args.clusters > 1:
        out.mkdir(parents=True, exist_ok=True)
    suffix = ".jsonl" if args.format == "jsonl" else ".parquet"  # a directory of clusters
    for i, name in enumerate(names):
        try:
            spec = ClusterSpec(
                name=name, brokers=args.brokers, racks=args.racks, topics=args.topics,
                min_partitions=args.partitions[0], max_partitions=args.partitions[1],
                replication_factor=args.replication_factor, skew=args.skew, defects=frozenset(defects),
                seed=args.seed + i,
            )  # fmt: skip
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        target = out / f"{name}{suffix}" if args.clusters > 1 else out
        with RowWriter(target, args.format) as writer:
            writer.write_all(cluster_nodes(spec))
        print(f"{name}: wrote {writer.count} znodes to {target}")
    return 0


def configure_synth(synth: argparse.ArgumentParser) -> None:
    synth.add_argument("-o", "--output", required=True, help="file (one cluster) or directory (--clusters > 1)")
    synth.add_argument("--format", choices=("parquet", "jsonl"), default=None,
                       help="default: from the file name (.jsonl for JSON lines), else parquet")  # fmt: skip
    synth.add_argument("--name", default="cluster", help="cluster name (the prefix with --clusters)")
    synth.add_argument("--clusters", type=int, default=1, help="how many clusters (seeds SEED, SEED+1, …)")
    synth.add_argument("--brokers", type=int, default=6)
    synth.add_argument("--racks", type=int, default=3, help="0 = no broker.rack")
    synth.add_argument("--topics", type=int, default=20)
    synth.add_argument("--partitions", type=_partitions, default=(1, 12), metavar="N|MIN-MAX",
                       help="partitions per topic, drawn uniformly")  # fmt: skip
    synth.add_argument("--replication-factor", type=int, default=3)
    synth.add_argument("--skew", type=float, default=0.0, help="share of replicas piled on a third of the brokers")
    synth.add_argument("--defect", action="append", default=[], choices=(*DEFECTS, "all"),
                       help="seed a readiness finding (repeatable; 'all' for every one)")  # fmt: skip
    synth.add_argument("--seed", type=int, default=0)
    synth.set_defaults(func=cmd_synth)
