"""What a twin costs to start: ``bridgekeeper up --from-snapshot`` on a synthetic production tree, timed phase by
phase from its own output, with every process's memory read from /proc once it is READY, beside an empty
one-node stack measured the same way in the same run (the per-partition figure is a twin node's RSS above it).

    python -m bench.twin --topics 10000 --partitions 10 --brokers 30 --racks 3     # 100k partitions, 30 nodes

Prints the phases (rows written, restore, nodes ready, election, READY), each node's RSS (min/median/max), the
sandbox ZooKeeper's, the total, and bytes per partition per node. No assertion: the figures go in bench/README.md.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

BIN = [sys.executable, "-m", "controller.cli"]
MIB = 1024 * 1024


def _children(pid: int) -> list[int]:
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            kids = (task / "children").read_text().split()
        except OSError:
            continue
        for kid in map(int, kids):
            out += [kid, *_children(kid)]
    return out


def _rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def _cmdline(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")


@dataclass
class Run:
    lines: list[tuple[float, str]] = field(default_factory=list)
    nodes: list[int] = field(default_factory=list)  # RSS per node process
    zookeeper: int = 0
    launcher: int = 0
    ready_s: float = 0.0

    def at(self, prefix: str, containing: str = "") -> float | None:
        return next((t for t, line in self.lines if line.startswith(prefix) and containing in line), None)


def measure(args: list[str], timeout: float) -> Run:
    """Run ``up`` with ``args`` until READY, read every process's RSS, stop it (Ctrl-C)."""
    run = Run()
    started = time.monotonic()
    proc = subprocess.Popen([*BIN, "up", *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    try:
        for line in proc.stdout:
            now = time.monotonic() - started
            run.lines.append((now, line.strip()))
            print(f"  {now:7.1f} s  {line.rstrip()}", flush=True)
            if line.startswith("READY "):
                run.ready_s = now
                break
            if now > timeout:
                raise SystemExit(f"no READY line in {timeout:.0f} s")
        if not run.ready_s:
            raise SystemExit(f"up exited with code {proc.wait()} before its READY line")
        time.sleep(5)  # the elected controller's failover and the caches settle
        run.launcher = _rss(proc.pid)
        for pid in _children(proc.pid):
            cmd = _cmdline(pid)
            if "controller.cli node" in cmd:
                run.nodes.append(_rss(pid))
            elif "java" in cmd:
                run.zookeeper += _rss(pid)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(300)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return run


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--topics", type=int, default=10_000)
    ap.add_argument("--partitions", type=int, default=10, help="partitions per topic")
    ap.add_argument("--brokers", type=int, default=30)
    ap.add_argument("--racks", type=int, default=3)
    ap.add_argument("--max-nodes", type=int, default=None)
    ap.add_argument("--timeout", type=float, default=3600.0)
    o = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bk-bench-twin-") as tmp:
        rows = Path(tmp) / "prod.parquet"
        t0 = time.monotonic()
        subprocess.run(
            [
                *BIN,
                "pipeline",
                "synth",
                "-o",
                str(rows),
                "--brokers",
                str(o.brokers),
                "--racks",
                str(o.racks),
                "--topics",
                str(o.topics),
                "--partitions",
                str(o.partitions),
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        partitions = o.topics * o.partitions
        print(
            f"rows: {partitions:,} partitions on {o.brokers} brokers, {rows.stat().st_size / MIB:,.1f} MiB, "
            f"written in {time.monotonic() - t0:.1f} s",
            flush=True,
        )
        print("an empty one-node stack (the baseline):", flush=True)
        empty = measure(["--nodes", "1", "--data-dir", str(Path(tmp) / "empty")], 300)
        print(f"a twin of {o.brokers} brokers:", flush=True)
        extra = ["--max-nodes", str(o.max_nodes)] if o.max_nodes else []
        twin = measure(["--from-snapshot", str(rows), "--data-dir", str(Path(tmp) / "twin"), *extra], o.timeout)
    base = empty.nodes[0]
    restore = twin.at("restored ", " znodes into ") or 0.0
    first = twin.at("node ") or 0.0
    elected = twin.at("broker ") or 0.0
    rss = sorted(twin.nodes)
    print(f"\ntwin of {partitions:,} partitions, {len(rss)} nodes, on {os.cpu_count()} cores:")
    print(
        f"  restore done at {restore:.1f} s; first node ready {first:.1f} s; election released and won "
        f"{elected:.1f} s; READY {twin.ready_s:.1f} s"
    )
    print(
        f"  node RSS min {rss[0] / MIB:,.0f} / median {statistics.median(rss) / MIB:,.0f} / max {rss[-1] / MIB:,.0f}"
        f" MiB; an empty node {base / MIB:,.0f} MiB"
    )
    print(f"  per node above an empty one: {(statistics.median(rss) - base) / partitions:,.0f} B/partition (median)")
    print(f"  sandbox ZooKeeper RSS {twin.zookeeper / MIB:,.0f} MiB ({twin.zookeeper / partitions:,.0f} B/partition)")
    total = sum(rss) + twin.zookeeper + twin.launcher
    print(
        f"  total {total / MIB:,.0f} MiB (nodes {sum(rss) / MIB:,.0f}, ZooKeeper {twin.zookeeper / MIB:,.0f}, "
        f"launcher {twin.launcher / MIB:,.0f})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
