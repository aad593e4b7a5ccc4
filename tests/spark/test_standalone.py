"""The pipeline on a real Spark standalone cluster (master + worker on loopback, :mod:`tests.spark.standalone`)
whose worker's Python has only PySpark's own requirements: ``pipeline plan`` (which runs the report too) ships the
packed environment and writes the same plans and findings as a ``local[2]`` run on the same input; executors
whose Python lacks a module end the command with one line, exit 2, no traceback. The other executor failures (a
Python that does not exist, another minor version, a worker that dies before serving) take the same path with
Spark's own texts, which tests/unit/test_pipeline_environment.py feeds to the classifier: each live case here
costs a driver JVM and an executor.

Each command runs as the operator runs it: a subprocess of ``bridgekeeper``, its own driver JVM.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.spark.standalone import Standalone, standalone

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Standalone]:
    with standalone(tmp_path_factory.mktemp("standalone")) as running:
        yield running


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two small synthetic clusters (9 brokers over 3 racks, RF 3)."""
    out = tmp_path_factory.mktemp("fleet")
    done = bk(
        out,
        "pipeline",
        "synth",
        "-o",
        str(out / "in"),
        "--clusters",
        "2",
        "--brokers",
        "9",
        "--racks",
        "3",
        "--topics",
        "20",
        "--partitions",
        "4",
        "--replication-factor",
        "3",
    )
    assert done.returncode == 0, done.stderr
    return out / "in"


def bk(cache: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``bridgekeeper ARGS`` as an operator's shell runs it: no PYSPARK_PYTHON chosen, the packed environment
    cached under ``cache``, everything on loopback."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "MASTER")}
    env.update(PYTHONPATH=str(ROOT), BRIDGEKEEPER_CACHE=str(cache / "cache"), SPARK_LOCAL_IP="127.0.0.1")
    return subprocess.run(
        [sys.executable, "-m", "controller.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cache,
        check=False,
    )


def submit(cache: Path, cluster: Standalone, *args: str) -> subprocess.CompletedProcess[str]:
    """``spark-submit`` of ``bridgekeeper ARGS`` with the archive and launcher ``pipeline package`` wrote in
    ``cache`` (client mode: this process's Python is the driver's)."""
    from tests.spark.standalone import SPARK_HOME

    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "MASTER")}
    env.update(PYTHONPATH=str(ROOT), SPARK_LOCAL_IP="127.0.0.1", SPARK_HOME=str(SPARK_HOME))
    argv = [
        str(SPARK_HOME / "bin" / "spark-submit"),
        "--master",
        cluster.master,
        "--archives",
        f"{cache / 'env.tar.gz'}#bkenv",
        "--conf",
        "spark.pyspark.python=./bkenv/bin/python",
        "--conf",
        f"spark.pyspark.driver.python={sys.executable}",
        str(cache / "bridgekeeper-submit.py"),
        *args,
    ]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, cwd=cache, check=False)


def report(
    cache: Path, fleet: Path, out: str, master: str, *conf: str, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """``bridgekeeper pipeline report FLEET -o CACHE/OUT --master MASTER`` with ``--conf`` settings ``conf``."""
    settings = [arg for setting in conf for arg in ("--conf", setting)]
    return bk(
        cache,
        "pipeline",
        "report",
        str(fleet),
        "-o",
        str(cache / out),
        "--quiet",
        "--master",
        master,
        *settings,
        timeout=timeout,
    )


def plan_outputs(out: Path) -> tuple[dict[str, bytes], list[Any], list[Any]]:
    """The plan files byte for byte, and the report's findings and plan figures without paths and timings."""
    files = {p.name: p.read_bytes() for p in sorted(out.glob("cluster-*.json"))}
    report = orjson.loads((out / "report.json").read_bytes())
    plans = [{k: v for k, v in p.items() if k not in ("plan_file", "seconds")} for p in report["plans"]]
    return files, report["clusters"], plans


def one_line(stderr: str) -> str:
    """The command's own stderr (the JVM's log lines before the log level is set are Spark's, not ours): exactly
    one ``error:`` line, and no Python traceback anywhere."""
    assert "Traceback" not in stderr, stderr
    ours = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert len(ours) == 1, stderr
    assert stderr.rstrip().endswith(ours[0]), stderr
    return ours[0]


def test_plans_on_the_standalone_cluster_equal_local(cluster: Standalone, fleet: Path, tmp_path: Path) -> None:
    """``pipeline report`` with ``--master spark://`` (the environment packed, cached and shipped on the fly),
    then ``pipeline plan`` through spark-submit with what ``pipeline package`` wrote: the same findings and the
    same plans, byte for byte, as a ``local[2]`` run. Each run on the cluster costs a round of tasks per stage,
    so each command runs there once."""
    args = ["pipeline", "plan", "decommission", str(fleet), "--brokers", "1", "--quiet"]
    local = bk(tmp_path, *args, "-o", str(tmp_path / "local"), "--master", "local[2]")
    assert local.returncode == 0, local.stderr
    remote = report(tmp_path, fleet, "remote", cluster.master)
    assert remote.returncode == 0, remote.stderr
    assert "Traceback" not in remote.stderr
    findings = orjson.loads((tmp_path / "remote" / "report.json").read_bytes())["clusters"]
    assert findings == plan_outputs(tmp_path / "local")[1]
    cached = list((tmp_path / "cache").glob("pipeline-env-*.tar.gz"))
    assert len(cached) == 1, "the packed environment is cached"
    packed = bk(tmp_path, "pipeline", "package", "-o", str(tmp_path / "env.tar.gz"), "--quiet")
    assert packed.returncode == 0, packed.stderr
    assert (tmp_path / "env.tar.gz").read_bytes() == cached[0].read_bytes(), "package copies the cached archive"
    assert "--archives" in packed.stdout and "spark.pyspark.python=./bkenv/bin/python" in packed.stdout
    # spark-submit with what 'package' wrote (the archive and the launcher beside it), as docs/pipeline.md shows.
    submitted = submit(tmp_path, cluster, *args, "-o", str(tmp_path / "submitted"))
    assert submitted.returncode == 0, submitted.stderr
    files, findings, plans = plan_outputs(tmp_path / "submitted")
    assert files and len(plans) == 2
    assert (files, findings, plans) == plan_outputs(tmp_path / "local")
    # The executors ran the packed environment, not the worker's minimal Python (which lacks orjson).
    unpacked = list((cluster.logs.parent / "work").glob("app-*/*/bkenv/bin/python"))
    assert len(unpacked) >= 2, "an executor of each run unpacked the environment"


def test_executors_lacking_a_module_end_in_one_line(cluster: Standalone, fleet: Path, tmp_path: Path) -> None:
    """The issue's case: the executors' Python is the worker's own, with PySpark and nothing of ours."""
    done = report(
        tmp_path, fleet, "out", cluster.master, f"spark.pyspark.python={cluster.python}", "spark.task.maxFailures=1"
    )
    assert done.returncode == 2, done.stderr
    line = one_line(done.stderr)
    assert "lacks the module 'orjson'" in line and "packed environment" in line, line


def test_an_unreachable_master_is_one_line_exit_3(fleet: Path, tmp_path: Path) -> None:
    from tests.netutil import closed_port

    done = report(tmp_path, fleet, "out", f"spark://127.0.0.1:{closed_port()}", timeout=60)
    assert done.returncode == 3, done.stderr
    assert done.stderr.count("\n") == 1 and "could not reach the Spark master" in done.stderr, done.stderr
