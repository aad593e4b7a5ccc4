"""The SparkSession: embedded ``local[*]`` by default, any ``--master`` (or ``spark-submit``) unchanged.

Three things this machine taught (runtime.md): without ``SPARK_LOCAL_IP`` Spark sends a DNS query off the
machine at start; without ``PYSPARK_PYTHON`` the Python workers may run another interpreter with other package
versions; the UI is a server nobody asked for. On a real cluster the executors need our code and its
dependencies: the driver ships ``zkmodel`` and ``migrate`` as one zip (``addPyFile``) with every run, and the
third-party packages as a packed environment (:mod:`migrate.pipeline.environment`, ``spark.archives``) unless the
operator chose the executors' Python (``spark.pyspark.python``, ``PYSPARK_PYTHON``) or archives
(``spark.archives``) themselves. ``local[*]`` needs neither: its workers run the driver's own interpreter.
"""

from __future__ import annotations

import os
import sys
import tempfile
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import migrate
import zkmodel

DEFAULT_MASTER = "local[*]"


def _local(master: str) -> bool:
    return master.startswith("local")


def ship_code(directory: str) -> str:
    """A zip of the ``zkmodel`` and ``migrate`` packages (sources only) for the executors' ``sys.path``."""
    target = Path(directory) / "bridgekeeper-pipeline.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as zf:
        for package in (zkmodel, migrate):
            root = Path(str(package.__file__)).parent
            for source in sorted(root.rglob("*")):
                if source.is_file() and source.suffix in (".py", ".j2", ".typed") and "__pycache__" not in source.parts:
                    zf.write(source, Path(package.__name__) / source.relative_to(root))
    return str(target)


def executors_environment(
    master: str | None, conf: Mapping[str, str], say: Callable[[str], None] | None = None
) -> dict[str, str]:
    """The settings that ship the packed environment to the executors of a non-local ``master`` (None: local, or
    the operator chose the executors' Python or archives), packing it if the cache has none."""
    if master is None or _local(master):
        return {}
    if "spark.archives" in conf or "spark.pyspark.python" in conf or os.environ.get("PYSPARK_PYTHON"):
        return {}
    from migrate.pipeline import environment

    archive = environment.build(say)
    return {"spark.archives": f"{archive}#{environment.ALIAS}", "spark.pyspark.python": environment.EXECUTOR_PYTHON}


def spark_session(master: str | None = None, conf: Mapping[str, str] | None = None, app: str = "bridgekeeper") -> Any:
    """Start (or join) the SparkSession. ``master`` None means: what spark-submit set, else ``local[*]``.

    ``spark.pyspark.python`` in ``conf`` is the executors' Python (PySpark reads only ``PYSPARK_PYTHON``, which
    spark-submit sets from that setting; here we do it)."""
    conf = dict(conf or {})
    # The CLI packs first (to refuse a packing failure with one line); any other caller gets the same default.
    conf.update(executors_environment(master or os.environ.get("MASTER") or None, conf))
    if "spark.pyspark.python" in conf:
        os.environ["PYSPARK_PYTHON"] = conf["spark.pyspark.python"]
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    chosen = master or os.environ.get("MASTER") or None
    if chosen is None or _local(chosen):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app)
    if chosen is not None:
        builder = builder.master(chosen)
    elif "spark.master" not in os.environ.get("PYSPARK_SUBMIT_ARGS", "") and not os.environ.get("SPARK_ENV_LOADED"):
        builder = builder.master(DEFAULT_MASTER)
    settings = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": str(max(4, 2 * (os.cpu_count() or 2))),
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.session.timeZone": "UTC",
        "spark.driver.memory": "2g",
    }
    settings.update(conf)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    if not _local(str(spark.sparkContext.master)):
        spark.sparkContext.addPyFile(ship_code(tempfile.mkdtemp(prefix="bk-pipeline-")))
    return spark
