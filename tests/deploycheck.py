"""Checks of the compose deployment a reviewer would make by eye, as functions that return the problems they
find (an empty list when all is well), so tests can show each check also catches a broken copy.

No Docker engine runs here: compose.yaml is validated (Compose specification schema, ``docker-compose config``)
and read, the Dockerfile parsed; neither is run.
"""

from __future__ import annotations

import io
import json
import shlex
import subprocess
from pathlib import Path
from typing import Any

import yaml
from dockerfile_parse import DockerfileParser

from controller.cli import build_parser
from controller.config import ConfigError, load_config
from controller.config_env import properties_from_env

ROOT = Path(__file__).resolve().parent.parent
COMPOSE = ROOT / "compose.yaml"
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"
PROMETHEUS = ROOT / "deploy" / "prometheus" / "prometheus.yml"
GRAFANA = ROOT / "deploy" / "grafana" / "provisioning"
#: The only ports an operator needs on the host: Grafana, Prometheus, one Kafka listener per node.
HOST_PORTS = {3000, 9090, 19092, 29092, 39092}


def resolved_compose(path: Path = COMPOSE) -> dict[str, Any]:
    """The file as ``docker-compose config`` resolves it (anchors merged, variables interpolated)."""
    result = subprocess.run(
        ["docker-compose", "-f", str(path), "config"], capture_output=True, text=True, timeout=120, cwd=path.parent
    )
    if result.returncode != 0:
        raise AssertionError(f"docker-compose config failed: {result.stderr}")
    config: dict[str, Any] = yaml.safe_load(result.stdout)
    return config


def _env(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) for item in env)
    return {str(k): str(v) for k, v in env.items()}


def _volume_sources(service: dict[str, Any]) -> dict[str, str]:
    """target -> source, from the short (``src:dst[:mode]``) or long syntax."""
    out: dict[str, str] = {}
    for volume in service.get("volumes") or []:
        if isinstance(volume, str):
            parts = volume.split(":")
            out[parts[1]] = parts[0]
        else:
            out[str(volume["target"])] = str(volume.get("source", ""))
    return out


def _published(service: dict[str, Any]) -> set[int]:
    out: set[int] = set()
    for port in service.get("ports") or []:
        if isinstance(port, dict):
            out.add(int(port["published"]))
        else:
            text = str(port).split("/")[0]
            out.add(int(text.split(":")[-2] if text.count(":") >= 1 else text))
    return out


def bridgekeeper_services(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {n: s for n, s in config["services"].items() if "build" in s}


def zookeeper_services(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {n: s for n, s in config["services"].items() if str(s.get("image", "")).startswith("zookeeper:")}


def compose_problems(config: dict[str, Any], prometheus: dict[str, Any] | None = None) -> list[str]:
    problems: list[str] = []
    services: dict[str, dict[str, Any]] = config["services"]
    named = set(config.get("volumes") or {})
    zks, bks = zookeeper_services(config), bridgekeeper_services(config)
    if len(zks) != 3:
        problems.append(f"expected a 3-server ZooKeeper ensemble, found {sorted(zks)}")
    if len(bks) != 3:
        problems.append(f"expected three bridgekeeper nodes built from the Dockerfile, found {sorted(bks)}")
    for name, service in services.items():
        if service.get("restart") not in ("always", "unless-stopped", "on-failure"):
            problems.append(f"{name}: no restart policy")
        for port in _published(service) - HOST_PORTS:
            problems.append(f"{name}: publishes host port {port}, which an operator does not need")
    for name, service in zks.items():
        volumes = _volume_sources(service)
        for target in ("/data", "/datalog"):
            if volumes.get(target) not in named:
                problems.append(f"{name}: {target} is not on a named volume")
        if not service.get("healthcheck"):
            problems.append(f"{name}: no health check")
    metrics_targets: set[str] = set()
    broker_ids: set[str] = set()
    for name, service in bks.items():
        test = (service.get("healthcheck") or {}).get("test") or []
        if "health" not in test or "bridgekeeper" not in test:
            problems.append(f"{name}: the health check is not `bridgekeeper health`")
        depends = service.get("depends_on") or {}
        for zk in zks:
            if not isinstance(depends, dict) or (depends.get(zk) or {}).get("condition") != "service_healthy":
                problems.append(f"{name}: does not wait for {zk} to be healthy")
        env = _env(service)
        strays = sorted(k for k in env if not k.startswith("KAFKA_"))
        if strays:
            problems.append(f"{name}: environment variables that are not KAFKA_* properties: {strays}")
        try:
            config_ = load_config(None, properties_from_env(env))
        except ConfigError as exc:
            problems.append(f"{name}: its KAFKA_* variables do not make a valid node configuration: {exc}")
            continue
        # A typo'd variable maps to a key nothing reads: the node's own "isn't a known config" warning.
        problems += [f"{name}: {warning}" for warning in config_.warnings]
        broker_ids.add(str(config_.broker_id))
        metrics_targets.add(f"{name}:{config_.metrics_port}")
        external = [e for e in config_.advertised_endpoints if e.host == "localhost"]
        for endpoint in external:
            if endpoint.port not in _published(service):
                problems.append(f"{name}: advertises localhost:{endpoint.port} but does not publish it")
    if len(broker_ids) != len(bks):
        problems.append(f"broker ids are not unique: {sorted(broker_ids)}")
    if prometheus is not None:
        jobs = [j for j in prometheus["scrape_configs"] if j["job_name"] == "bridgekeeper"]
        targets = {t for j in jobs for c in j["static_configs"] for t in c["targets"]}
        if targets != metrics_targets:
            problems.append(
                f"Prometheus scrapes {sorted(targets)}, the nodes serve metrics on {sorted(metrics_targets)}"
            )
    return problems


def grafana_problems(config: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    datasources = yaml.safe_load((GRAFANA / "datasources" / "prometheus.yaml").read_text())["datasources"]
    if [d.get("uid") for d in datasources] != ["prometheus"] or datasources[0]["url"] != "http://prometheus:9090":
        problems.append("Grafana's datasource is not the compose Prometheus with uid 'prometheus'")
    providers = yaml.safe_load((GRAFANA / "dashboards" / "bridgekeeper.yaml").read_text())["providers"]
    grafana = next((s for s in config["services"].values() if str(s.get("image", "")).startswith("grafana/")), None)
    if grafana is None:
        return [*problems, "no Grafana service"]
    mounts = _volume_sources(grafana)
    for provider in providers:
        source = mounts.get(provider["options"]["path"], "")
        if not source.rstrip("/").endswith("dashboards"):
            problems.append(
                f"Grafana's dashboard provider reads {provider['options']['path']}, where dashboards/ is not mounted"
            )
    return problems


def dockerfile_problems(text: str) -> list[str]:
    # From a file object: DockerfileParser given only content writes it to ./Dockerfile.
    parser = DockerfileParser(fileobj=io.StringIO(text))
    problems: list[str] = []
    instructions = parser.structure
    base = parser.baseimage or ""
    if not (base.startswith("python:3.11-slim")):
        problems.append(f"base image {base!r} is not a slim Python 3.11")
    order = [i["instruction"] for i in instructions]
    users = [i["value"].strip() for i in instructions if i["instruction"] == "USER"]
    if not users or users[-1].split(":")[0] in ("root", "0"):
        problems.append("no USER instruction with a non-root user")
    elif "ENTRYPOINT" in order and max(j for j, op in enumerate(order) if op == "USER") > order.index("ENTRYPOINT"):
        problems.append("USER comes after ENTRYPOINT")
    for op in ("ENTRYPOINT", "CMD", "HEALTHCHECK"):
        for i in instructions:
            if i["instruction"] != op:
                continue
            value = i["value"]
            if op == "HEALTHCHECK":
                value = value[value.find("CMD") + 3 :].strip() if "CMD" in value else value
            if not value.lstrip().startswith("["):
                problems.append(f"{op} is not in exec (JSON) form: {i['value']!r}")
    for i in instructions:
        if i["instruction"] == "ADD" and "://" in i["value"]:
            problems.append(f"ADD of a URL: {i['value']!r}")
        if i["instruction"] == "RUN" and "pip install" in i["value"] and "--no-cache-dir" not in i["value"]:
            problems.append("pip install without --no-cache-dir")
    entry = next((_argv(i["value"]) for i in instructions if i["instruction"] == "ENTRYPOINT"), None)
    if entry is None:
        problems.append("no ENTRYPOINT")
    else:
        problems += _cli_problems("ENTRYPOINT", entry, expect="node")
    health = next((i["value"] for i in instructions if i["instruction"] == "HEALTHCHECK"), None)
    if health is None:
        problems.append("no HEALTHCHECK")
    elif "CMD" in health:
        command = health[health.find("CMD") + 3 :].strip()
        problems += _cli_problems("HEALTHCHECK", _argv(command), expect="health")
    return problems


def _argv(value: str) -> list[str]:
    """An instruction's command, exec (JSON) or shell form."""
    value = value.strip()
    if value.startswith("["):
        argv: list[str] = json.loads(value)
        return argv
    return shlex.split(value)


def _cli_problems(what: str, argv: list[str], *, expect: str) -> list[str]:
    if not argv or argv[0] != "bridgekeeper":
        return [f"{what} does not run bridgekeeper: {argv}"]
    try:
        args = build_parser().parse_args(argv[1:])
    except SystemExit:
        return [f"{what}: bridgekeeper does not accept {argv[1:]}"]
    if args.command != expect:
        return [f"{what} runs `bridgekeeper {args.command}`, not `bridgekeeper {expect}`"]
    return []


def dockerignore_problems(text: str) -> list[str]:
    entries = {line.strip().rstrip("/") for line in text.splitlines() if line.strip() and not line.startswith("#")}
    return [f".dockerignore does not exclude {e}" for e in (".venv", ".git") if e not in entries]
