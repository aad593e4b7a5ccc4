"""The fleet pipeline at a million partitions: wall time per stage, plan quality, peak memory.

    python -m bench.pipeline_fleet --topics 100000 --partitions 10 --brokers 200 --racks 6 --master local[2]
    python -m bench.pipeline_fleet ... --master spark://127.0.0.1:7077 --conf spark.executor.memory=3g

Two synthetic clusters of the same shape (``pipeline synth``; generated once into --workdir and reused): a
Kafka-placed one, decommissioned by 3 brokers, and a skewed one (30 % of replicas piled on a third of the
brokers), fully rebalanced. Side by side in the same run:

* time: the Spark ingest (read + decode on the executors) beside the baseline a driver-only tool would be --
  one Python process reading the same Parquet with pyarrow and decoding every row with the same zkmodel
  decoders (``decode_znode_records``) -- as a ratio;
* moves: each plan beside the lower bound (target <= 1.05x) and beside Kafka's ``--generate`` on the same input;
* memory: peak resident size of the whole local Spark (the driver JVM, which runs the executors in local mode,
  plus its Python workers) sampled from /proc, and the Python driver's own peak.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from migrate.pipeline import planning
from migrate.pipeline.decode import decode_znode_records
from migrate.pipeline.inputs import resolve
from migrate.pipeline.progress import Stages
from migrate.pipeline.run import Run
from migrate.pipeline.session import spark_session


def _tree_rss(pid: int) -> int:
    """Resident bytes of ``pid`` and all its descendants (the JVM and the Python workers it forks)."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
            with open(f"/proc/{p}/task/{p}/children") as f:
                todo.extend(int(c) for c in f.read().split())
        except OSError:
            continue
    return total


class PeakSampler:
    def __init__(self, pid: int) -> None:
        self.pid, self.peak, self._stop = pid, 0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.25):
            self.peak = max(self.peak, _tree_rss(self.pid))

    def __enter__(self) -> PeakSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def generate(path: Path, args: argparse.Namespace, skew: float, seed: int) -> None:
    if path.exists():
        return
    print(f"generating {path} …", file=sys.stderr)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "controller.cli",
            "pipeline",
            "synth",
            "-o",
            str(path),
            "--brokers",
            str(args.brokers),
            "--racks",
            str(args.racks),
            "--topics",
            str(args.topics),
            "--partitions",
            str(args.partitions),
            "--skew",
            str(skew),
            "--seed",
            str(seed),
        ],
        check=True,
    )


def baseline_decode(path: Path) -> tuple[float, int]:
    """A driver-only decode of every row: what the pipeline would cost without Spark's executors."""
    import pyarrow.parquet as pq

    start, records = time.perf_counter(), 0
    for batch in pq.ParquetFile(str(path)).iter_batches(batch_size=65536, columns=["path", "data"]):
        for p, d in zip(batch.column(0).to_pylist(), batch.column(1).to_pylist(), strict=True):
            records += len(decode_znode_records("c", p, d))
    return time.perf_counter() - start, records


def run_one(spark: Any, sampler: PeakSampler, source: Path, out: Path, request: planning.PlanRequest) -> dict[str, Any]:
    run = Run(spark=spark, out=out, stages=Stages(spark))
    run.ingest(resolve([str(source)]))
    run.report()
    (plan,) = run.plan(request)
    return {"stages": dict(run.stages.seconds), "plan": plan, "peak": sampler.peak}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--topics", type=int, default=100_000)
    ap.add_argument("--partitions", type=int, default=10)
    ap.add_argument("--brokers", type=int, default=200)
    ap.add_argument("--racks", type=int, default=6)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--workdir", default="/tmp/bench-pipeline")
    ap.add_argument("--skip-baseline", action="store_true")
    ap.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="Spark setting (executor memory)")
    args = ap.parse_args()
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    clean, skewed = work / "clean.parquet", work / "skewed.parquet"
    generate(clean, args, 0.0, 1)
    generate(skewed, args, 0.3, 2)

    # A non-local master gets the packed executors' environment from spark_session, as the CLI's runs do.
    spark = spark_session(args.master, {"spark.driver.memory": "3g", **dict(c.split("=", 1) for c in args.conf)})
    jvm_pid = int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
    results = {}
    with PeakSampler(jvm_pid) as sampler:
        last = args.brokers
        decommission = planning.PlanRequest("decommission", brokers=(last - 2, last - 1, last))
        results["decommission 3"] = run_one(spark, sampler, clean, work / "out-clean", decommission)
        results["rebalance (skewed)"] = run_one(
            spark, sampler, skewed, work / "out-skewed", planning.PlanRequest("rebalance")
        )
    spark.stop()
    baseline = None if args.skip_baseline else baseline_decode(clean)

    partitions = args.topics * args.partitions
    print(
        f"\n{partitions:,} partitions, {args.brokers} brokers, {args.racks} racks, RF 3, {args.master}, "
        f"{os.cpu_count()} cores"
    )
    print("| run | ingest | model | report | plan | moves | lower bound | ratio | Kafka --generate | waves |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, r in results.items():
        s, p = r["stages"], r["plan"]
        ratio = p["moves"] / p["lower_bound"] if p["lower_bound"] else float("nan")
        print(
            f"| {name} | {s['ingest']:.1f} s | {s['model']:.1f} s | {s['report']:.1f} s | {s['plan']:.1f} s | "
            f"{p['moves']:,} | {p['lower_bound']:,} | {ratio:.3f} | {p['kafka_generate_moves'] or 0:,} | "
            f"{p['waves']} |"
        )
    print(f"peak RSS, local Spark (driver JVM + Python workers): {sampler.peak / 2**30:.2f} GiB")
    print(f"peak RSS, Python driver: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.2f} GiB")
    if baseline is not None:
        seconds, records = baseline
        ingest = results["decommission 3"]["stages"]["ingest"]
        print(
            f"baseline driver-only decode of the same rows: {seconds:.1f} s ({records:,} records); "
            f"Spark ingest {ingest:.1f} s: ratio {seconds / ingest:.2f}x"
        )


if __name__ == "__main__":
    main()
