"""``bridgekeeper pipeline`` refuses bad flags and inputs in one line, exit 2, before Spark starts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from migrate.snapshot.rows import RowWriter
from migrate.snapshot.synthetic import ClusterSpec, cluster_nodes

ROOT = Path(__file__).resolve().parents[2]


def bk(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "controller.cli", "pipeline", *args], capture_output=True,
                          text=True, timeout=60, cwd=ROOT)  # fmt: skip


@pytest.fixture
def rows(tmp_path: Path) -> Path:
    path = tmp_path / "east.parquet"
    with RowWriter(path) as w:
        w.write_all(cluster_nodes(ClusterSpec(topics=2, seed=1)))
    return path


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["plan", "decommission", "{rows}", "-o", "{out}"], "error: decommission needs --brokers\n"),
        (["plan", "rebalance", "{rows}", "-o", "{out}", "--brokers", "1"],
         "error: rebalance takes no --brokers (it plans over every registered broker)\n"),
        (["report", "{tmp}/nope.parquet", "-o", "{out}"], "error: {tmp}/nope.parquet: no such file or directory\n"),
        (["report", "-o", "{out}"], "error: no inputs: give snapshot-row files or directories (or --model DIR)\n"),
        (["report", "{rows}", "--model", "{tmp}", "-o", "{out}"], "error: give snapshot inputs or --model, not both\n"),
        (["model", "a={rows}", "a={rows}", "-o", "{out}"],
         "error: cluster 'a' is given twice ({rows} and {rows})\n"),
    ],
)  # fmt: skip
def test_refusals_are_one_line_exit_2_and_write_nothing(
    tmp_path: Path, rows: Path, args: list[str], message: str
) -> None:
    fill = {"rows": str(rows), "out": str(tmp_path / "out"), "tmp": str(tmp_path)}
    result = bk(*[a.format(**fill) for a in args])
    assert (result.returncode, result.stderr, result.stdout) == (2, message.format(**fill), "")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["plan", "decommission", "x", "-o", "o", "--brokers", "1,x"], "expected broker ids like 1,2,3"),
        (["plan", "add-brokers", "x", "-o", "o", "--brokers", "7", "--rack", "7"], "expected BROKER=RACK"),
        (["plan", "rebalance", "x", "-o", "o", "--max-moves-per-broker", "0"], "expected a positive integer"),
        (["plan", "shuffle", "x", "-o", "o"], "invalid choice: 'shuffle'"),
    ],
)
def test_bad_flags_are_argparse_errors(args: list[str], fragment: str) -> None:
    result = bk(*args)
    assert result.returncode == 2 and fragment in result.stderr and "Traceback" not in result.stderr
