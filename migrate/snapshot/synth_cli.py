"""``bridgekeeper pipeline synth``: write synthetic clusters as snapshot rows (the pipeline's test and benchmark
inputs), one file per cluster."""

from __future__ import annotations

import argparse
from pathlib import Path

from controller.exits import CommandError, UsageError
from migrate.snapshot.rows import RowsOutputError, RowWriter, check_output, check_output_dir
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
    if args.clusters < 1:
        raise UsageError(f"--clusters {args.clusters}: at least one")
    specs = []
    for i, name in enumerate(names):  # every spec checked before any file is written
        try:
            specs.append(
                ClusterSpec(
                    name=name,
                    brokers=args.brokers,
                    racks=args.racks,
                    topics=args.topics,
                    min_partitions=args.partitions[0],
                    max_partitions=args.partitions[1],
                    replication_factor=args.replication_factor,
                    skew=args.skew,
                    defects=frozenset(defects),
                    seed=args.seed + i,
                )
            )
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    out = Path(args.output)
    suffix = ".jsonl" if args.format == "jsonl" else ".parquet"  # a directory's files, named for their format
    if args.clusters == 1:
        check_output(out, args.format)
    else:
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"-o {out}: cannot make the directory ({exc.strerror or exc})") from None
        check_output_dir(out / f"{names[0]}{suffix}")
    for spec in specs:
        target = out / f"{spec.name}{suffix}" if args.clusters > 1 else out
        try:
            with RowWriter(target, args.format) as writer:
                writer.write_all(cluster_nodes(spec))
        except RowsOutputError as exc:
            raise CommandError(str(exc)) from None
        print(f"{spec.name}: wrote {writer.count} znodes to {target}")
    return 0


def configure_synth(synth: argparse.ArgumentParser) -> None:
    synth.add_argument(
        "-o", "--output", required=True, help="file (.parquet, .jsonl: one cluster) or directory (--clusters > 1)"
    )
    synth.add_argument(
        "--format",
        choices=("parquet", "jsonl"),
        default=None,
        help="default: from the file name (.jsonl for JSON lines), else parquet",
    )
    synth.add_argument("--name", default="cluster", help="cluster name (the prefix with --clusters)")
    synth.add_argument("--clusters", type=int, default=1, help="how many clusters (seeds SEED, SEED+1, …)")
    synth.add_argument("--brokers", type=int, default=6)
    synth.add_argument("--racks", type=int, default=3, help="0 = no broker.rack")
    synth.add_argument("--topics", type=int, default=20)
    synth.add_argument(
        "--partitions",
        type=_partitions,
        default=(1, 12),
        metavar="N|MIN-MAX",
        help="partitions per topic, drawn uniformly",
    )
    synth.add_argument("--replication-factor", type=int, default=3)
    synth.add_argument("--skew", type=float, default=0.0, help="share of replicas piled on a third of the brokers")
    synth.add_argument(
        "--defect",
        action="append",
        default=[],
        choices=(*DEFECTS, "all"),
        help="seed a readiness finding (repeatable; 'all' for every one)",
    )
    synth.add_argument("--seed", type=int, default=0)
    synth.set_defaults(func=cmd_synth)
