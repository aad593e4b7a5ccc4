"""A Spark standalone cluster on loopback for tests: one master and one worker started with ``spark-class`` from
the pyspark wheel (no Docker, no Spark download), each on free 127.0.0.1 ports, stopped by process group.

The worker's Python is a *minimal* one, as on an executor host that was given only PySpark: a venv of the
driver's base interpreter whose site-packages holds PySpark's own requirements (its ``sql`` extra: pandas,
pyarrow, numpy, py4j, and what they require) and nothing else -- not the project, not orjson, not OR-Tools.
It is made offline: a ``.pth`` file points at a directory of symlinks to exactly those distributions in the
driver's venv. The worker's environment carries no ``PYTHONPATH`` of the test run, so executors see none of the
checkout either.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import venv
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import pyspark

from tests.netutil import free_port

SPARK_HOME = Path(pyspark.__file__).parent
SPARK_CLASS = SPARK_HOME / "bin" / "spark-class"

#: PySpark's requirements for what the pipeline runs on executors (``pyspark[sql]``) and theirs.
MINIMAL = ("pyspark", "py4j", "pandas", "pyarrow", "numpy", "python-dateutil", "pytz", "tzdata", "six")


def minimal_python(root: Path) -> Path:
    """A Python with only :data:`MINIMAL` importable (those present in the driver's venv), made under ``root``."""
    prefix, linked = root / "venv", root / "site"
    venv.EnvBuilder(symlinks=True, with_pip=False).create(prefix)
    linked.mkdir()
    for name in MINIMAL:
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue  # an optional requirement this venv does not have (six, for new dateutils)
        tops = {f.parts[0] for f in dist.files or [] if f.parts and f.parts[0] != ".." and f.parts[0] != "__pycache__"}
        for top in tops:
            source = Path(str(dist.locate_file(top)))
            if source.exists() and not (linked / top).exists():
                (linked / top).symlink_to(source)
    site = prefix / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    (site / "minimal.pth").write_text(f"{linked}\n")
    return prefix / "bin" / "python"


@dataclass
class Standalone:
    """A running master and worker: the URL to pass as ``--master`` and the worker's Python."""

    master: str
    python: Path
    logs: Path


def _wait(what: str, ready: object, deadline: float, procs: list[subprocess.Popen[bytes]], logs: Path) -> None:
    while time.monotonic() < deadline:
        if callable(ready) and ready():
            return
        for p in procs:
            if p.poll() is not None:
                raise RuntimeError(f"{what}: a Spark daemon exited ({p.returncode}); logs in {logs}")
        time.sleep(0.3)
    raise RuntimeError(f"{what}: not ready in time; logs in {logs}")


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


@contextmanager
def standalone(root: Path, cores: int = 2, memory: str = "2g") -> Iterator[Standalone]:
    """Start master and worker under ``root`` (work dir, logs, the minimal Python); stop both on exit, whatever
    happened (each is its own process group, so the worker's executors go with it)."""
    python = minimal_python(root / "python")
    logs = root / "logs"
    logs.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYSPARK_PYTHON")}
    env.update(
        SPARK_HOME=str(SPARK_HOME),
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_LOG_DIR=str(logs),
        SPARK_WORKER_DIR=str(root / "work"),
        PYSPARK_PYTHON=str(python),
        SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false",
        # The worker deletes nothing between tests; its directory is the test's.
        SPARK_WORKER_OPTS="-Dspark.worker.cleanup.enabled=false",
    )
    port, ui = free_port(), free_port()
    master = f"spark://127.0.0.1:{port}"
    procs: list[subprocess.Popen[bytes]] = []
    try:
        with open(logs / "master.out", "wb") as out:
            procs.append(
                subprocess.Popen(
                    [
                        str(SPARK_CLASS),
                        "org.apache.spark.deploy.master.Master",
                        "--host",
                        "127.0.0.1",
                        "--port",
                        str(port),
                        "--webui-port",
                        str(ui),
                    ],
                    env=env,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )
        deadline = time.monotonic() + 60
        _wait("master", lambda: _listening(port), deadline, procs, logs)
        with open(logs / "worker.out", "wb") as out:
            procs.append(
                subprocess.Popen(
                    [
                        str(SPARK_CLASS),
                        "org.apache.spark.deploy.worker.Worker",
                        "--host",
                        "127.0.0.1",
                        "--port",
                        str(free_port()),
                        "--webui-port",
                        str(free_port()),
                        "--cores",
                        str(cores),
                        "--memory",
                        memory,
                        "--work-dir",
                        str(root / "work"),
                        master,
                    ],
                    env=env,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )
        registered = lambda: b"Registering worker" in (logs / "master.out").read_bytes()  # noqa: E731
        _wait("worker", registered, deadline, procs, logs)
        yield Standalone(master=master, python=python, logs=logs)
    finally:
        for p in reversed(procs):  # worker first: it stops its executors
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
                try:
                    p.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait()
