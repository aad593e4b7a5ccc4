"""Repeated induced failovers under client load: the cycle of ``tests/reliability/test_failovers.py``
(:mod:`testing.failover_soak`) run as a soak, with live progress and a summary.

A 3-server ZooKeeper ensemble and 3 node processes of our own on 127.0.0.1, confluent-kafka and kafka-python
workers running the rehearsal's admin load; failovers cycle through the four kinds (a frozen controller's sessions
expired, the controller session expired on the server, SIGKILL of the controller, the ZooKeeper leader killed or
frozen), each checked with the load paused: one active controller, epochs, no write by a deposed controller in
ZooKeeper's transaction log, every reassignment finished, every acknowledged write present, nothing duplicated.

    .venv/bin/python -m bench.failover_soak [--failovers 50] [--rate 4] [--seed 0] [--session-timeout-ms 4000]
                                            [--keep DIR] [--json FILE]

Exit code 1 when any failover broke a promise (each violation is printed).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import orjson
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from testing.failover_soak import KINDS, Failover, FailoverSoak, SoakOptions, Summary


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f} s"


def _pcts(values: Sequence[float]) -> tuple[float | None, float | None, float | None]:
    s = Summary.of([Failover(0, "x", elected_s=v) for v in values], 0.0).elected
    return s["p50"], s["p99"], s["max"]


def cycle_line(c: Failover) -> str:
    mark = "[green]ok[/]" if c.ok else "[red]VIOLATION[/]"
    moved = f"controller {c.controller_before}->{c.controller_after}" if c.moved else "controller kept"
    errors = ", ".join(f"{e} {n}" for e, n in c.errors.most_common(3))
    return (
        f"{mark} #{c.index:>2} {c.kind:<18} {moved:<18} epoch {c.epoch_before}->{c.epoch_after}  "
        f"elected {_s(c.elected_s):>8}  recovered {_s(c.recovered_s):>8}  ops {c.acked} ok / {c.failed} failed"
        + (f" ({escape(errors)})" if errors else "")
    )


def summary_tables(cycles: Sequence[Failover], summary: Summary) -> list[Table]:
    by_kind = Table(
        title="failovers by kind (elected: fault to a new /controller session; healthy: fault to one "
        "active controller, every node registered, no offline partition)",
        title_justify="left",
    )
    for col in ("kind", "n", "moved", "elected p50", "p99", "max", "healthy p50", "max", "violations"):
        by_kind.add_column(col, justify="left" if col == "kind" else "right")
    for kind in KINDS:
        mine = [c for c in cycles if c.kind == kind]
        if not mine:
            continue
        p50, p99, top = _pcts([c.elected_s for c in mine if c.elected_s is not None])
        rec = [c.recovered_s for c in mine if c.recovered_s is not None]
        r50, _r99, rmax = _pcts(rec)
        by_kind.add_row(
            kind,
            str(len(mine)),
            str(sum(c.moved for c in mine)),
            _s(p50),
            _s(p99),
            _s(top),
            _s(r50),
            _s(rmax),
            str(sum(len(c.violations) for c in mine)),
        )
    totals = Table(title="all failovers", title_justify="left")
    totals.add_column("measure")
    totals.add_column("value", justify="right")
    e = summary.elected
    totals.add_row("failovers", str(summary.failovers))
    totals.add_row("time to a new controller p50 / p99 / max", f"{_s(e['p50'])} / {_s(e['p99'])} / {_s(e['max'])}")
    r = summary.recovered
    totals.add_row("time to a healthy cluster p50 / p99 / max", f"{_s(r['p50'])} / {_s(r['p99'])} / {_s(r['max'])}")
    totals.add_row("client operations acknowledged / failed", f"{summary.acked} / {summary.failed}")
    totals.add_row("failures by error", ", ".join(f"{k} {n}" for k, n in summary.errors.most_common()) or "-")
    totals.add_row("violations", str(len(summary.violations)))
    totals.add_row("wall time", f"{summary.took_s:.0f} s")
    return [by_kind, totals]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.failover_soak", description=__doc__.split("\n\n")[0])
    parser.add_argument("--failovers", type=int, default=50)
    parser.add_argument("--rate", type=float, default=4.0, help="client operations per second, all workers (4)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--session-timeout-ms", type=int, default=4000)
    parser.add_argument(
        "--keep",
        type=Path,
        default=None,
        metavar="DIR",
        help="keep the cluster's data, node logs and the client journal in DIR",
    )
    parser.add_argument("--json", type=Path, default=None, metavar="FILE", help="every failover's record as JSON")
    args = parser.parse_args(argv)
    if args.failovers < 1:
        parser.error("--failovers must be at least 1")
    console = Console()
    data_dir = args.keep or Path(tempfile.mkdtemp(prefix="bk-failover-soak-"))
    opts = SoakOptions(data_dir=data_dir, rate=args.rate, seed=args.seed, session_timeout_ms=args.session_timeout_ms)
    progress = Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    )
    task = progress.add_task("starting", total=args.failovers)
    shown = [0.0]

    def say(text: str) -> None:
        now = time.monotonic()
        if now - shown[0] >= 0.2:
            shown[0] = now
            progress.update(task, description=escape(text[:110]))

    soak = FailoverSoak(opts, say)
    try:
        with progress:
            soak.start()
            for i in range(args.failovers):
                c = soak.cycle(i)
                progress.advance(task)
                progress.console.print(cycle_line(c), highlight=False)
                for v in c.violations:
                    progress.console.print(f"    [red]{escape(v)}[/]", highlight=False)
            progress.update(task, description="done")
        summary = soak.summary()
    finally:
        soak.close()
        if args.keep is None:
            shutil.rmtree(data_dir, ignore_errors=True)
    console.print(
        f"[bold]failover_soak[/]: {summary.failovers} failovers, {opts.nodes} nodes, "
        f"{opts.zk_servers} ZooKeeper servers, session timeout {opts.session_timeout_ms} ms, load "
        f"{opts.rate:g} ops/s",
        highlight=False,
    )
    for table in summary_tables(soak.cycles, summary):
        console.print(table)
    if args.json is not None:
        args.json.write_bytes(
            orjson.dumps([{**c.__dict__, "errors": dict(c.errors)} for c in soak.cycles], option=orjson.OPT_INDENT_2)
        )
    for v in summary.violations:
        console.print(f"[red]{escape(v)}[/]", highlight=False)
    return 1 if summary.violations else 0


if __name__ == "__main__":
    sys.exit(main())
