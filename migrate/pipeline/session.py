"""The SparkSession: embedded ``local[*]`` by default, any ``--master`` (or ``spark-submit``) unchanged.

Three things this machine taught (runtime.md): without ``SPARK_LOCAL_IP`` Spark sends a DNS query off the
machine at start; without ``PYSPARK_PYTHON`` the Python workers may run another interpreter with other package
versions; the UI is a server nobody asked for. On a real cluster the executors need our code: the driver ships
``zkmodel`` and ``migrate`` as one zip (``addPyFile``), so the same job runs there without installing
bridgekeeper on every executor (its third-party dependencies -- pyarrow, pandas, orjson, ortools -- must be on
the executors' Python, as for any PySpark job).
"""

from __future__ import annotations

import os
import sys
import tempfile
import zipfile
from collections.abc import Mapping
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


def spark_session(master: str | None = None, conf: Mapping[str, str] | None = None, app: str = "bridgekeeper") -> Any:
    """Start (or join) the SparkSession. ``master`` None means: what spark-submit set, else ``local[*]``."""
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
    settings.update(conf or {})
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    if not _local(str(spark.sparkContext.master)):
        spark.sparkContext.addPyFile(ship_code(tempfile.mkdtemp(prefix="bk-pipeline-")))
    return spark
