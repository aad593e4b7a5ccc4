"""A real Prometheus for the tests (Debian's ``prometheus`` package): on loopback, a free port, its own data
directory, stopped by the harness even when a test fails; and a small client for its HTTP query API.

The configuration is the one the compose deployment ships (``deploy/prometheus/prometheus.yml``) with only the
targets, the rule file's path and the intervals substituted: the tests check what operators will run.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import yaml

from tests.netutil import free_port

ROOT = Path(__file__).resolve().parent.parent
SHIPPED_CONFIG = ROOT / "deploy" / "prometheus" / "prometheus.yml"
RULES = ROOT / "dashboards" / "alerts.yaml"
JOB = "bridgekeeper"


class PromQLError(AssertionError):
    """Prometheus refused a query (it does not parse, or cannot be evaluated)."""


def config_for(targets: Sequence[str], *, interval: str = "1s", rules: Path = RULES) -> dict[str, Any]:
    """The shipped configuration with ``targets`` for the bridgekeeper job, ``rules`` as the only rule file and
    ``interval`` for scraping and rule evaluation. Fails if the shipped file lost the shape this relies on."""
    config: dict[str, Any] = yaml.safe_load(SHIPPED_CONFIG.read_text())
    jobs = [j for j in config["scrape_configs"] if j["job_name"] == JOB]
    assert len(jobs) == 1, f"{SHIPPED_CONFIG}: expected one scrape job named {JOB!r}"
    assert len(jobs[0]["static_configs"]) == 1, f"{SHIPPED_CONFIG}: expected one static_configs entry"
    assert len(config.get("rule_files", [])) == 1, f"{SHIPPED_CONFIG}: expected one rule file"
    jobs[0]["static_configs"][0]["targets"] = list(targets)
    jobs[0].pop("scrape_interval", None)
    config["global"]["scrape_interval"] = interval
    config["global"]["evaluation_interval"] = interval
    config["rule_files"] = [str(rules)]
    return config


@dataclass
class Prometheus:
    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def _get(self, path: str, params: dict[str, str]) -> Any:
        url = f"{self.url}{path}?{urllib.parse.urlencode(params)}"
        try:
            with urllib.request.urlopen(url, timeout=30) as response:
                body = orjson.loads(response.read())
        except urllib.error.HTTPError as exc:
            body = orjson.loads(exc.read() or b"{}")
            raise PromQLError(f"{params.get('query')!r}: {body.get('errorType')}: {body.get('error')}") from None
        if body.get("status") != "success":
            raise PromQLError(f"{params.get('query')!r}: {body}")
        return body["data"]

    def query(self, expr: str, at: float | None = None) -> list[dict[str, Any]]:
        params = {"query": expr} | ({"time": f"{at:.3f}"} if at is not None else {})
        data = self._get("/api/v1/query", params)
        return list(data["result"]) if data["resultType"] == "vector" else [data["result"]]

    def query_range(self, expr: str, start: float, end: float, step: float = 1.0) -> list[dict[str, Any]]:
        data = self._get(
            "/api/v1/query_range", {"query": expr, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": str(step)}
        )
        return list(data["result"])

    def targets_up(self) -> int:
        data = self._get("/api/v1/targets", {"state": "active"})
        return sum(1 for t in data["activeTargets"] if t["health"] == "up")

    def wait_scraped(self, n: int, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while self.targets_up() < n:
            if time.monotonic() > deadline:
                raise AssertionError(f"Prometheus scraped fewer than {n} targets in {timeout}s; log: {self.log}")
            time.sleep(0.25)


def promtool() -> str:
    path = shutil.which("promtool")
    assert path, "promtool not found (Debian's prometheus package; ./dev installs it)"
    return path


def check_config(path: Path) -> None:
    result = subprocess.run([promtool(), "check", "config", str(path)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


@contextlib.contextmanager
def running(config: dict[str, Any], workdir: Path, timeout: float = 30.0) -> Iterator[Prometheus]:
    """Start Prometheus with ``config`` (checked by promtool first); always stopped on the way out."""
    binary = shutil.which("prometheus")
    assert binary, "prometheus not found (Debian's prometheus package; ./dev installs it)"
    workdir.mkdir(parents=True, exist_ok=True)
    config_path = workdir / "prometheus.yml"
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    check_config(config_path)
    port = free_port()
    log = workdir / "prometheus.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [binary, f"--config.file={config_path}", f"--storage.tsdb.path={workdir / 'data'}",
             f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    prom = Prometheus(f"http://127.0.0.1:{port}", process, log)
    try:
        deadline = time.monotonic() + timeout
        while True:
            if process.poll() is not None:
                raise AssertionError(f"prometheus exited with {process.returncode}:\n{log.read_text()[-3000:]}")
            with contextlib.suppress(OSError), urllib.request.urlopen(f"{prom.url}/-/ready", timeout=2) as r:
                if r.status == 200:
                    break
            if time.monotonic() > deadline:
                raise AssertionError(f"prometheus not ready in {timeout}s:\n{log.read_text()[-3000:]}")
            time.sleep(0.2)
        yield prom
    finally:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
