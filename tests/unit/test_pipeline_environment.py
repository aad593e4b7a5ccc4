"""The executors' environment without a cluster: what is packed, and the one line each executor failure becomes
(the texts are Spark 4's, as the standalone test sees them; tests/spark/test_standalone.py runs them for real)."""

from __future__ import annotations

import pytest

from migrate.pipeline import environment
from tests.netutil import closed_port

MISSING = """PythonException: An exception was thrown from the Python worker:
Traceback (most recent call last):
  File "./bridgekeeper-pipeline.zip/zkmodel/fields.py", line 10, in <module>
    import orjson
ModuleNotFoundError: No module named 'orjson'"""
NO_PROGRAM = """An error occurred while calling o123.collectToPython.
: org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage 2.0 failed 1 times, most recent
failure: Lost task 0.0 in stage 2.0 (TID 2) (127.0.0.1 executor 0):
java.io.IOException: Cannot run program "/nowhere/python": error=2, No such file or directory
\tat java.base/java.lang.ProcessBuilder.start(ProcessBuilder.java:1143)"""
VERSION = """[PYTHON_VERSION_MISMATCH] Python in worker has different version: 3.12 than that in driver: 3.11, PySpark
cannot run with different minor versions."""

WORKER_DIED = """org.apache.spark.SparkException:
Error from python worker:
  pyenv: python3.12: command not found
PYTHONPATH was:
  /tmp/spark/python/lib/pyspark.zip
org.apache.spark.SparkException: EOFException occurred while reading the port number from pyspark.daemon's stdout"""


@pytest.mark.parametrize(
    ("text", "code", "says"),
    [
        (MISSING, 2, "lacks the module 'orjson'"),
        (NO_PROGRAM, 2, "cannot run Python '/nowhere/python'"),
        (VERSION, 2, "run Python 3.12, the driver 3.11"),
        (WORKER_DIED, 2, "could not start PySpark's worker (pyenv: python3.12: command not found)"),
        ("Exception: All masters are unresponsive! Giving up.", 3, "could not reach the Spark master"),
    ],
)
def test_executor_failures_are_one_line(text: str, code: int, says: str) -> None:
    explained = environment.explain(RuntimeError(text))
    assert explained is not None
    assert explained[0] == code and says in explained[1] and "\n" not in explained[1], explained


def test_other_failures_are_left_to_the_caller() -> None:
    assert environment.explain(RuntimeError("AnalysisException: column x not found")) is None


def test_what_is_packed() -> None:
    names = {d.metadata["Name"].lower().replace("_", "-") for d in environment.distributions()}
    assert {"orjson", "ortools", "pandas", "pyarrow", "numpy", "cramjam"} <= names
    assert not names & {"pyspark", "py4j", "plotly", "jinja2", "pytest", "bridgekeeper"}, names


def test_the_cache_key_follows_the_packed_versions() -> None:
    dists = environment.distributions()
    assert environment.cache_key(dists) == environment.cache_key(list(dists))
    assert environment.cache_key(dists) != environment.cache_key(dists[1:])


def test_master_endpoints() -> None:
    assert environment._endpoints("spark://a:7077,b:7078") == [("a", 7077), ("b", 7078)]
    assert environment._endpoints("k8s://https://api.example:6443") == [("api.example", 6443)]
    assert environment._endpoints("k8s://api.example") == [("api.example", 443)]
    assert environment._endpoints("yarn") == [] and environment._endpoints("local[2]") == []


def test_an_unanswering_master_is_one_line() -> None:
    port = closed_port()
    line = environment.unreachable(f"spark://127.0.0.1:{port}", timeout=1)
    assert line is not None and f"127.0.0.1:{port}" in line and "\n" not in line
    assert environment.unreachable("yarn") is None
