"""``bridgekeeper pipeline`` refuses bad flags and inputs in one line, exit 2, before Spark starts."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from migrate.snapshot.rows import RowWriter
from migrate.snapshot.synthetic import ClusterSpec, cluster_nodes

# timing: its refusals or timeouts are asserted within a wall-clock budget of a few seconds, which a second test
# worker beside it on a 2-core machine can exceed; ./dev test runs it alone (docs/testing.md).
pytestmark = pytest.mark.timing

ROOT = Path(__file__).resolve().parents[2]


def bk(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "controller.cli", "pipeline", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )


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
        (
            ["plan", "rebalance", "{rows}", "-o", "{out}", "--brokers", "1"],
            "error: rebalance takes no --brokers (it plans over every registered broker)\n",
        ),
        (["report", "{tmp}/nope.parquet", "-o", "{out}"], "error: {tmp}/nope.parquet: no such file or directory\n"),
        (["report", "-o", "{out}"], "error: no inputs: give snapshot-row files or directories (or --model DIR)\n"),
        (["report", "{rows}", "--model", "{tmp}", "-o", "{out}"], "error: give snapshot inputs or --model, not both\n"),
        (["model", "a={rows}", "a={rows}", "-o", "{out}"], "error: cluster 'a' is given twice ({rows} and {rows})\n"),
        (["report", "--model", "{tmp}/nope", "-o", "{out}"], "error: --model {tmp}/nope: no such model directory\n"),
        (
            ["report", "--model", "{rows}", "-o", "{out}"],
            "error: --model {rows}: no such model directory (it is a file)\n",
        ),
        (
            ["plan", "rebalance", "--model", "{tmp}", "-o", "{out}"],
            "error: --model {tmp}: no 'brokers' model table here (write it with 'pipeline model')\n",
        ),
        (
            ["plan", "rebalance", "{rows}", "--cluster", "west", "-o", "{out}"],
            "error: --cluster west: no such cluster in the input (east)\n",
        ),
        (["model", "{rows}", "-o", "{rows}/out"], "error: --output {rows}/out: {rows} is a file, not a directory\n"),
    ],
)
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
        (["model", "x", "-o", "o", "--conf", "spark.driver.memory"], "expected KEY=VALUE"),
        (["model", "x", "-o", "o", "--conf", "driver.memory=2g"], "expected a Spark setting (spark.KEY=VALUE)"),
        (["model", "x", "-o", "o", "--conf", "spark.driver.memory="], "spark.driver.memory needs a value"),
        (["report", "x", "-o", "o", "--master", "lcoal[2]"], "expected a Spark master"),
    ],
)
def test_bad_flags_are_argparse_errors(args: list[str], fragment: str) -> None:
    result = bk(*args)
    assert result.returncode == 2 and fragment in result.stderr and "Traceback" not in result.stderr


def refused_before_spark(*args: str) -> subprocess.CompletedProcess[str]:
    """Exit 2 in well under the seconds a Spark start takes: the check ran first."""
    started = time.monotonic()
    result = bk(*args)
    took = time.monotonic() - started
    assert result.returncode == 2, result.stderr
    assert took < 5.0, f"refusal took {took:.1f} s"
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr
    return result


@pytest.mark.parametrize("command", [["model"], ["report"], ["plan", "rebalance"]])
def test_a_missing_input_is_refused_before_spark(tmp_path: Path, rows: Path, command: list[str]) -> None:
    result = refused_before_spark(*command, str(rows), f"west={tmp_path / 'west.parquet'}", "-o", str(tmp_path / "o"))
    assert result.stderr == f"error: {tmp_path / 'west.parquet'}: no such file or directory\n"
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("command", [["report"], ["plan", "rebalance"]])
def test_a_missing_model_directory_is_refused_before_spark(tmp_path: Path, command: list[str]) -> None:
    result = refused_before_spark(*command, "--model", str(tmp_path / "run1" / "model"), "-o", str(tmp_path / "o"))
    assert result.stderr == f"error: --model {tmp_path / 'run1' / 'model'}: no such model directory\n"


def test_a_model_directory_one_level_up_is_named(tmp_path: Path) -> None:
    """The run's output directory given for its model tables: the message says where they are."""
    from migrate.pipeline.model import TABLES

    for name in TABLES:
        (tmp_path / "run1" / "model" / name).mkdir(parents=True)
    result = refused_before_spark("report", "--model", str(tmp_path / "run1"), "-o", str(tmp_path / "o"))
    assert result.stderr.endswith(f"did you mean {tmp_path / 'run1' / 'model'}?\n")


def test_an_output_that_is_a_file_is_refused_before_spark(tmp_path: Path, rows: Path) -> None:
    out = tmp_path / "report.html"
    out.write_text("not a directory")
    result = refused_before_spark("report", str(rows), "-o", str(out))
    assert result.stderr == f"error: --output {out} is a file, not a directory\n"
    assert out.read_text() == "not a directory"


def test_rows_with_a_wrong_first_line_are_refused_before_spark(tmp_path: Path) -> None:
    rows = tmp_path / "east.jsonl"
    rows.write_text('{"znode": "/brokers"}\n')
    result = refused_before_spark("model", str(rows), "-o", str(tmp_path / "o"))
    assert result.stderr == f"error: {rows}: line 1 is not a snapshot row (needs 'path' and 'data')\n"
