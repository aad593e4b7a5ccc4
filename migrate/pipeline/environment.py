"""What the executors run on: a packed Python environment shipped with the job, and one line when they cannot run.

PySpark documents three ways to give executors a job's third-party packages (Python Package Management in its
user guide): a packed environment (conda-pack or venv-pack) through ``spark.archives``, or a PEX file. We ship a
venv-pack archive, because it can be built here without a network and without a package index:

- The driver's own venv cannot be packed as it is: the project is usually installed editable (venv-pack refuses
  that, and an editable install points at a checkout the executors do not have), and it holds test and driver
  tools the executors never import (pytest, plotly, ...), hundreds of megabytes for nothing.
- So :func:`build` makes a venv for the purpose (``venv``, no pip, the driver's base interpreter) and copies into
  its site-packages, file by file from the driver's installed distributions' RECORDs, exactly the distributions
  the executors import: the closure of the project's runtime requirements and its ``spark`` extra, minus PySpark
  and Py4J (the cluster's Spark puts its own on the executors' path, and they must match the cluster's version,
  not ours) and minus what only the driver uses (the report's jinja2 and plotly). Then venv-pack packs it.
- Our own code is not in the archive: the driver ships ``zkmodel`` and ``migrate`` as a zip with every run
  (:func:`migrate.pipeline.session.ship_code`), so a cached environment never runs stale code.

The archive is cached under the user's cache directory, keyed by the interpreter (implementation, version, path,
platform) and the name and version of every packed distribution: a new dependency version packs a new archive,
a new commit of ours does not. Executors unpack it as ``./bkenv`` and run ``./bkenv/bin/python``.

What an executor host must have: Java and Spark (as for any Spark executor), and the same Python as the driver's
base interpreter at the same path (``bin/python`` in a venv-pack archive is a symlink to it; venv-pack does not
carry the interpreter). Nothing of the project or its dependencies.

Failures: an executor whose environment is wrong fails every task with a Python traceback inside a Py4J error
(several screens). :func:`explain` turns the recognised causes into one line and an exit code (2: the user's
environment; 3: the cluster could not be reached), and :func:`unreachable` checks a ``spark://`` or ``k8s://``
master's port before any JVM starts.
"""

from __future__ import annotations

import hashlib
import os
import platform
import re
import shutil
import socket
import sys
import tempfile
import venv
from collections.abc import Callable, Iterable
from importlib import metadata
from pathlib import Path

#: The name executors unpack the archive under (``spark.archives=PATH#bkenv``) and their interpreter in it.
ALIAS = "bkenv"
EXECUTOR_PYTHON = f"./{ALIAS}/bin/python"

#: The project's distribution (its requirements are the roots of what is packed) and the extra the pipeline needs.
PROJECT = "bridgekeeper"
EXTRA = "spark"

#: Not packed: the cluster's Spark provides PySpark and Py4J on the executors' path (and they must match it);
#: the report is rendered and the archive packed on the driver.
NOT_SHIPPED = frozenset({"pyspark", "py4j", "jinja2", "plotly", "venv-pack"})

#: Cache of packed archives: ``$BRIDGEKEEPER_CACHE``, else ``$XDG_CACHE_HOME/bridgekeeper``, else ~/.cache/...
CACHE_ENV = "BRIDGEKEEPER_CACHE"


class PackError(Exception):
    """The environment cannot be packed here (a requirement not installed in the driver's Python, ...)."""


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def distributions(project: str = PROJECT, extra: str = EXTRA) -> list[metadata.Distribution]:
    """The installed distributions the executors import: the closure of ``project``'s requirements (with
    ``extra``) minus :data:`NOT_SHIPPED`, sorted by name."""
    from packaging.requirements import Requirement

    def requirements(dist: str, extras: Iterable[str]) -> list[str]:
        out = []
        for text in metadata.requires(dist) or []:
            req = Requirement(text)
            wanted = req.marker is None or any(req.marker.evaluate({"extra": e}) for e in ("", *extras))
            if wanted and _canonical(req.name) not in NOT_SHIPPED:
                out.append(_canonical(req.name))
        return out

    try:
        todo = requirements(project, (extra,))
    except metadata.PackageNotFoundError:
        raise PackError(f"{project} is not installed in {sys.executable} (pip install '{project}[{extra}]')") from None
    found: dict[str, metadata.Distribution] = {}
    while todo:
        name = todo.pop()
        if name in found:
            continue
        try:
            found[name] = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            raise PackError(f"{name} (required by {project}[{extra}]) is not installed in {sys.executable}") from None
        todo.extend(requirements(name, ()))
    return [found[k] for k in sorted(found)]


def cache_key(dists: Iterable[metadata.Distribution]) -> str:
    """What makes two archives interchangeable: the interpreter they link to and every packed name==version."""
    h = hashlib.sha256()
    base = getattr(sys, "_base_executable", sys.executable)  # a venv's interpreter: what bin/python links to
    for part in (platform.python_implementation(), platform.python_version(), base, sys.platform, platform.machine()):
        h.update(f"{part}\n".encode())
    for d in dists:
        h.update(f"{_canonical(d.metadata['Name'])}=={d.version}\n".encode())
    return h.hexdigest()[:16]


def cache_dir() -> Path:
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "bridgekeeper"


def _copy_distribution(dist: metadata.Distribution, site: Path) -> None:
    """Every file of ``dist`` that lives in site-packages (its RECORD), compiled caches left out."""
    files = dist.files
    if files is None:
        raise PackError(f"{dist.metadata['Name']} has no RECORD of its files; reinstall it with pip")
    for rel in files:
        if rel.parts and (rel.parts[0] == ".." or "__pycache__" in rel.parts):
            continue  # scripts outside site-packages (bin/): executors run none of them
        source = Path(str(dist.locate_file(rel)))
        if not source.is_file():
            continue  # a RECORD entry the installer did not write (or an editable install's finder)
        target = site / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)


def build(say: Callable[[str], None] | None = None) -> Path:
    """The packed executors' environment, from the cache or packed now (tens of seconds, once per key)."""
    import venv_pack

    dists = distributions()
    target = cache_dir() / f"pipeline-env-{cache_key(dists)}.tar.gz"
    if target.is_file():
        return target
    if say is not None:
        say(f"packing the executors' Python environment ({len(dists)} distributions) into {target} (once)")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="bk-env-", dir=target.parent) as tmp:
        prefix = Path(tmp) / "env"
        venv.EnvBuilder(symlinks=True, with_pip=False).create(prefix)
        site = prefix / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
        for dist in dists:
            _copy_distribution(dist, site)
        partial = Path(tmp) / "env.tar.gz"
        # Level 1: a fraction of the time of the default for a few percent more bytes (mostly compiled code).
        venv_pack.pack(prefix=str(prefix), output=str(partial), format="tar.gz", compress_level=1, force=True)
        os.replace(partial, target)  # same filesystem: a reader sees no archive or the whole one
    return target


# --- failures -------------------------------------------------------------------------------------------------

_MISSING_MODULE = re.compile(r"ModuleNotFoundError: No module named '([^']+)'")
_NO_PROGRAM = re.compile(r'Cannot run program "([^"]+)"')
#: Spark 4: "[PYTHON_VERSION_MISMATCH] Python in worker has different version: 3.12 than that in driver: 3.11";
#: Spark 3 wrote the same without the colons.
_VERSION = re.compile(r"Python in worker has different version:?\s*(\d[\d.]*\d)\s+than that in driver:?\s*(\d[\d.]*\d)")
#: PySpark's worker (or its daemon) exited before it served: what it printed follows this.
_WORKER_DIED = re.compile(r"Error from python worker:\s*\n\s*(\S[^\n]*)")
_MASTERS_GONE = ("All masters are unresponsive", "Master removed our application", "Failed to connect to master")


def explain(exc: BaseException) -> tuple[int, str] | None:
    """One line and an exit code for a Spark failure caused by the executors' environment or an unreachable
    cluster; None for anything else (the caller's usual handling)."""
    text = str(exc)
    found = _VERSION.search(text)
    if found:
        return 2, (
            f"the executors run Python {found.group(1)}, the driver {found.group(2)}: give them the "
            f"driver's Python (the default packed environment, built by 'pipeline package'), or run the "
            f"driver with theirs"
        )
    found = _NO_PROGRAM.search(text)
    if found:
        return 2, (
            f"the executors cannot run Python {found.group(1)!r}: it does not exist on them (set "
            f"spark.pyspark.python / PYSPARK_PYTHON to a Python they have, or leave it unset to ship the "
            f"packed environment)"
        )
    found = _MISSING_MODULE.search(text)
    if found:
        return 2, (
            f"the executors' Python lacks the module {found.group(1)!r}: ship the packed environment "
            f"(leave spark.pyspark.python and spark.archives unset, or pass 'pipeline package' output as "
            f"--archives PATH#{ALIAS} with PYSPARK_PYTHON={EXECUTOR_PYTHON})"
        )
    found = _WORKER_DIED.search(text)
    if found:
        return 2, (
            f"the executors' Python could not start PySpark's worker ({found.group(1).strip()[:160]}): "
            f"give them a working Python (the default packed environment, or spark.pyspark.python)"
        )
    if any(marker in text for marker in _MASTERS_GONE):
        return 3, "could not reach the Spark master (it did not accept the application)"
    return None


def _endpoints(master: str) -> list[tuple[str, int]]:
    """The (host, port)s a ``spark://`` (possibly several, comma-separated) or ``k8s://`` master listens on."""
    if master.startswith("spark://"):
        out = []
        for part in master[len("spark://") :].split(","):
            host, _, port = part.rpartition(":")
            if host and port.isdigit():
                out.append((host.strip("[]"), int(port)))
        return out
    if master.startswith("k8s://"):
        url = master[len("k8s://") :]
        scheme, sep, rest = url.partition("://")
        if not sep:
            scheme, rest = "https", url
        hostport = rest.split("/", 1)[0]
        host, _, port = hostport.rpartition(":")
        if not host:
            host, port = hostport, "443" if scheme == "https" else "80"
        return [(host.strip("[]"), int(port))] if port.isdigit() else []
    return []


def unreachable(master: str, timeout: float = 3.0) -> str | None:
    """Why no endpoint of ``master`` accepts a TCP connection (one line), or None when one does (or the master
    names no endpoint to try: local, yarn)."""
    endpoints = _endpoints(master)
    if not endpoints:
        return None
    reasons = []
    for host, port in endpoints:
        try:
            with socket.create_connection((host, port), timeout=timeout):
                return None
        except OSError as exc:
            reasons.append(f"{host}:{port} ({exc.strerror or exc})")
    return f"could not reach the Spark master {master}: {', '.join(reasons)}"
