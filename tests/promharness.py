"""A real Prometheus and Alertmanager for the tests (Debian's ``prometheus`` and ``prometheus-alertmanager``
packages): on loopback, free ports, their own data directories, stopped by the harness even when a test fails;
and a small client for Prometheus's HTTP query API.

The configurations are the ones the compose deployment ships (``deploy/prometheus/prometheus.yml``,
``deploy/alertmanager/alertmanager.yml``) with only addresses, rule paths, intervals and waits substituted: the
tests check what operators will run.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import yaml

from tests.netutil import free_port

ROOT = Path(__file__).resolve().parent.parent
SHIPPED_CONFIG = ROOT / "deploy" / "prometheus" / "prometheus.yml"
SHIPPED_ALERTMANAGER = ROOT / "deploy" / "alertmanager" / "alertmanager.yml"
ALERT_RULES = ROOT / "dashboards" / "alerts.yaml"
RECORDING_RULES = ROOT / "dashboards" / "recording_rules.yaml"
RULES = (ALERT_RULES, RECORDING_RULES)
JOB = "bridgekeeper"


class PromQLError(AssertionError):
    """Prometheus refused a query (it does not parse, or cannot be evaluated)."""


def config_for(
    targets: Sequence[str] | Mapping[str, Sequence[str]],
    *,
    interval: str = "1s",
    rules: Sequence[Path] = RULES,
    alertmanager: str | None = None,
    others: Mapping[str, Sequence[str]] | None = None,
) -> dict[str, Any]:
    """The shipped configuration with ``targets`` for the bridgekeeper job, ``rules`` as the rule files and
    ``interval`` for scraping and rule evaluation. ``targets`` is a list (one cluster, labelled as the shipped
    file labels it) or cluster name -> list (one static_configs entry per cluster, as the shipped file tells
    operators to add one). Alerts go to ``alertmanager`` (host:port) when given, nowhere otherwise; the other
    scrape jobs are dropped unless ``others`` gives their targets. Fails if the shipped file lost the shape this
    relies on."""
    config: dict[str, Any] = yaml.safe_load(SHIPPED_CONFIG.read_text())
    jobs = {j["job_name"]: j for j in config["scrape_configs"]}
    job = jobs.get(JOB)
    assert job is not None, f"{SHIPPED_CONFIG}: expected one scrape job named {JOB!r}"
    assert len(job["static_configs"]) == 1, f"{SHIPPED_CONFIG}: expected one static_configs entry"
    shipped = job["static_configs"][0]
    assert shipped.get("labels", {}).get("cluster"), f"{SHIPPED_CONFIG}: the targets carry no cluster label"
    assert config.get("rule_files"), f"{SHIPPED_CONFIG}: no rule files"
    if isinstance(targets, Mapping):
        job["static_configs"] = [
            {"targets": list(t), "labels": {**shipped["labels"], "cluster": name}} for name, t in targets.items()
        ]
    else:
        shipped["targets"] = list(targets)
    job.pop("scrape_interval", None)
    kept = [job]
    for name, other_targets in (others or {}).items():
        assert name in jobs and len(jobs[name]["static_configs"]) == 1, f"{SHIPPED_CONFIG}: no job {name!r}"
        jobs[name]["static_configs"][0]["targets"] = list(other_targets)
        jobs[name].pop("scrape_interval", None)
        kept.append(jobs[name])
    config["scrape_configs"] = kept
    config["global"]["scrape_interval"] = interval
    config["global"]["evaluation_interval"] = interval
    config["rule_files"] = [str(r) for r in rules]
    if alertmanager is None:
        config.pop("alerting", None)
    else:
        managers = config.get("alerting", {}).get("alertmanagers", [])
        assert len(managers) == 1 and len(managers[0]["static_configs"]) == 1, f"{SHIPPED_CONFIG}: one Alertmanager"
        managers[0]["static_configs"][0]["targets"] = [alertmanager]
    return config


def alert_rules_with_for(workdir: Path, for_: Mapping[str, str]) -> Path:
    """The shipped alert rules with the ``for:`` of the alerts named in ``for_`` replaced (a test cannot wait
    the production durations); written under ``workdir``."""
    rules: dict[str, Any] = yaml.safe_load(ALERT_RULES.read_text())
    found = set()
    for group in rules["groups"]:
        for rule in group["rules"]:
            if rule.get("alert") in for_:
                rule["for"] = for_[rule["alert"]]
                found.add(rule["alert"])
    assert found == set(for_), f"no such alerts: {sorted(set(for_) - found)}"
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / "alerts.yaml"
    path.write_text(yaml.safe_dump(rules, sort_keys=False))
    return path


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
def _serving(argv: list[str], url: str, log: Path, timeout: float) -> Iterator[subprocess.Popen[bytes]]:
    """Run ``argv`` (its output to ``log``) until ``url``/-/ready answers; always stopped on the way out."""
    name = Path(argv[0]).name
    with log.open("wb") as out:
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + timeout
        while True:
            if process.poll() is not None:
                raise AssertionError(f"{name} exited with {process.returncode}:\n{log.read_text()[-3000:]}")
            with contextlib.suppress(OSError), urllib.request.urlopen(f"{url}/-/ready", timeout=2) as r:
                if r.status == 200:
                    break
            if time.monotonic() > deadline:
                raise AssertionError(f"{name} not ready in {timeout}s:\n{log.read_text()[-3000:]}")
            time.sleep(0.2)
        yield process
    finally:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


@contextlib.contextmanager
def running(config: dict[str, Any], workdir: Path, timeout: float = 30.0) -> Iterator[Prometheus]:
    """Start Prometheus with ``config`` (checked by promtool first); always stopped on the way out."""
    binary = shutil.which("prometheus")
    assert binary, "prometheus not found (Debian's prometheus package; ./dev installs it)"
    workdir.mkdir(parents=True, exist_ok=True)
    config_path = workdir / "prometheus.yml"
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    check_config(config_path)
    url = f"http://127.0.0.1:{free_port()}"
    log = workdir / "prometheus.log"
    argv = [
        binary,
        f"--config.file={config_path}",
        f"--storage.tsdb.path={workdir / 'data'}",
        f"--web.listen-address={url.removeprefix('http://')}",
        "--log.level=warn",
    ]
    with _serving(argv, url, log, timeout) as process:
        yield Prometheus(url, process, log)


# -- Alertmanager ------------------------------------------------------------------------------------------------------
def alertmanager_config_for(webhook: str, *, wait: str = "1s") -> dict[str, Any]:
    """The shipped Alertmanager configuration with its webhook receiver's URL replaced by ``webhook`` and the
    route's ``group_wait`` / ``group_interval`` shortened to ``wait`` (the shipped ones are minutes long). Fails if
    the shipped file lost the shape this relies on: a route to one receiver with one webhook."""
    config: dict[str, Any] = yaml.safe_load(SHIPPED_ALERTMANAGER.read_text())
    receivers = {r["name"]: r for r in config["receivers"]}
    receiver = receivers.get(config["route"]["receiver"])
    assert receiver is not None, f"{SHIPPED_ALERTMANAGER}: the route's receiver is not defined"
    hooks = receiver.get("webhook_configs", [])
    assert len(hooks) == 1, f"{SHIPPED_ALERTMANAGER}: expected the default route to go to one webhook"
    hooks[0]["url"] = webhook
    config["route"]["group_wait"] = wait
    config["route"]["group_interval"] = wait
    return config


@dataclass
class Alertmanager:
    url: str
    address: str  # host:port, what Prometheus's alerting configuration names
    process: subprocess.Popen[bytes]
    log: Path


def amtool() -> str:
    path = shutil.which("amtool")
    assert path, "amtool not found (Debian's prometheus-alertmanager package; ./dev installs it)"
    return path


def check_alertmanager_config(path: Path) -> str:
    result = subprocess.run([amtool(), "check-config", str(path)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


@contextlib.contextmanager
def alertmanager_running(config: dict[str, Any], workdir: Path, timeout: float = 30.0) -> Iterator[Alertmanager]:
    """Start Alertmanager with ``config`` (checked by amtool first), clustering off (no gossip port); always
    stopped on the way out."""
    binary = shutil.which("prometheus-alertmanager") or shutil.which("alertmanager")
    assert binary, "prometheus-alertmanager not found (Debian's prometheus-alertmanager package; ./dev installs it)"
    workdir.mkdir(parents=True, exist_ok=True)
    config_path = workdir / "alertmanager.yml"
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    check_alertmanager_config(config_path)
    address = f"127.0.0.1:{free_port()}"
    log = workdir / "alertmanager.log"
    argv = [
        binary,
        f"--config.file={config_path}",
        f"--storage.path={workdir / 'data'}",
        f"--web.listen-address={address}",
        "--cluster.listen-address=",
        "--log.level=warn",
    ]
    with _serving(argv, f"http://{address}", log, timeout) as process:
        yield Alertmanager(f"http://{address}", address, process, log)
