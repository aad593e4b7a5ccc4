"""Checks of the compose deployment a reviewer would make by eye, as functions that return the problems they
find (an empty list when all is well), so tests can show each check also catches a broken copy.

No Docker engine runs here: compose.yaml is validated (Compose specification schema, ``docker-compose config``)
and read, the Dockerfile parsed; neither is run. Debian's docker-compose (1.29) prints every service whatever
``--profile`` says, so the Compose specification's rule for profiles is applied here (:func:`active_services`):
a service with ``profiles`` runs only when one of them is enabled.
"""

from __future__ import annotations

import io
import json
import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml
from dockerfile_parse import DockerfileParser

from controller.cli import build_parser
from controller.config import ConfigError, NodeConfig, load_config
from controller.config.env import properties_from_env
from controller.logs import LogSettingsError, levels_from_env

ROOT = Path(__file__).resolve().parent.parent
COMPOSE = ROOT / "compose.yaml"
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"
PROMETHEUS = ROOT / "deploy" / "prometheus" / "prometheus.yml"
ALERTMANAGER = ROOT / "deploy" / "alertmanager" / "alertmanager.yml"
GRAFANA = ROOT / "deploy" / "grafana" / "provisioning"
#: The profile that brings the bundled ensemble (zk1-3).
ZOOKEEPER_PROFILE = "zookeeper"
#: The one-shot service the nodes wait for: it exits 0 once the ensemble at ZOOKEEPER_CONNECT answers.
ZOOKEEPER_READY = "zookeeper-ready"
#: The host ports an operator needs besides each node's EXTERNAL listener: Grafana, Prometheus, Alertmanager.
UI_PORTS = {3000, 9090, 9093}
ALERTMANAGER_PORT = 9093
#: ZooKeeper's Prometheus metrics provider (3.6+), and the port compose.yaml gives it.
ZOOKEEPER_METRICS_PROVIDER = "org.apache.zookeeper.metrics.prometheus.PrometheusMetricsProvider"
ZOOKEEPER_METRICS_PORT = 7000
#: Kafka's advice for a broker's file descriptors ("at least 100000", its operations guide); the other services
#: get at least this.
NODE_NOFILE = 100_000
SERVICE_NOFILE = 65_536
#: Seconds a node may need beyond controlled shutdown to close its listeners and its ZooKeeper sessions.
STOP_MARGIN_S = 10.0
#: An exact image: a name (a registry host[:port]/ may lead) with a full version tag (3.8.6, v3.5.5,
#: 3.11.16-slim-bookworm), a digest, or both. A tag that moves (``3.8``, ``3.11-slim-bookworm``, ``latest``) or
#: none at all does not match.
EXACT_IMAGE = re.compile(
    r"^(?:[a-z0-9.-]+(?::\d+)?/)?[a-z0-9._/-]+"
    r"(?::v?\d+\.\d+\.\d+(?:-[A-Za-z0-9._-]+)?(?:@sha256:[0-9a-f]{64})?|@sha256:[0-9a-f]{64})$"
)


def image_is_exact(image: str) -> bool:
    return EXACT_IMAGE.fullmatch(image) is not None


def compose_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment ``docker-compose`` runs with: PATH and HOME only (a developer's or CI's own
    ZOOKEEPER_CONNECT or COMPOSE_PROFILES must not leak into what is checked), plus ``extra``."""
    env = {k: os.environ[k] for k in ("PATH", "HOME") if k in os.environ}
    return env | dict(extra or {})


def resolved_compose(
    path: Path = COMPOSE, *, profiles: Iterable[str] = (), env: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The file as ``docker-compose config`` resolves it (anchors merged, variables interpolated from ``env``
    alone), with every service, active or not; :func:`active_services` applies ``profiles``."""
    assert shutil.which("docker-compose"), "docker-compose (Debian package) is installed by ./dev"
    args = ["docker-compose", "-f", str(path)]
    for profile in profiles:
        args += ["--profile", profile]
    result = subprocess.run(
        [*args, "config"], capture_output=True, text=True, timeout=120, cwd=path.parent, env=compose_env(env)
    )
    if result.returncode != 0:
        raise AssertionError(f"docker-compose config failed: {result.stderr}")
    config: dict[str, Any] = yaml.safe_load(result.stdout)
    return config


def active_services(config: dict[str, Any], profiles: Iterable[str] = ()) -> dict[str, dict[str, Any]]:
    """The services that run with ``profiles`` enabled (Compose specification, "Using profiles")."""
    enabled = set(profiles)
    return {n: s for n, s in config["services"].items() if not s.get("profiles") or enabled & set(s["profiles"])}


def active(config: dict[str, Any], profiles: Iterable[str] = ()) -> dict[str, Any]:
    """``config`` with only the services that run with ``profiles`` enabled."""
    return {**config, "services": active_services(config, profiles)}


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


def duration_seconds(value: object) -> float:
    """A Compose duration (``2m``, ``1m30s``, ``90s``, ``500ms``) in seconds; a bare number is seconds."""
    text = str(value).strip()
    if re.fullmatch(r"\d+(?:\.\d+)?", text):
        return float(text)
    units = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001, "us": 0.000001}
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|us|h|m|s)", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"not a duration: {value!r}")
    return sum(float(n) * units[u] for n, u in parts)


def controlled_shutdown_worst_case_s(config: NodeConfig) -> float:
    """How long controlled shutdown may take before a node gives up and stops anyway, as Kafka bounds it
    (KafkaServer.controlledShutdown): ``controlled.shutdown.max.retries`` attempts, each a request that may wait
    ``request.timeout.ms`` and then ``controlled.shutdown.retry.backoff.ms``. A node's own attempts wait less
    (its back-off is capped at 1 s), so this bound covers it too. 0 when controlled shutdown is off."""
    if not config.controlled_shutdown_enable:
        return 0.0
    per_attempt_ms = config.request_timeout_ms + config.controlled_shutdown_retry_backoff_ms
    return config.controlled_shutdown_max_retries * per_attempt_ms / 1000


def bridgekeeper_services(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The nodes: built from the Dockerfile, long-running (``zookeeper-ready`` is the same image, run once)."""
    return {n: s for n, s in config["services"].items() if "build" in s and n != ZOOKEEPER_READY}


def zookeeper_services(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {n: s for n, s in config["services"].items() if str(s.get("image", "")).startswith("zookeeper:")}


def _connect_hosts(connect: str) -> set[str]:
    """The host names of a ``host:port[,host:port][/chroot]`` string."""
    return {address.rsplit(":", 1)[0] for address in connect.split("/", 1)[0].split(",") if address}


def compose_problems(
    config: dict[str, Any], prometheus: dict[str, Any] | None = None, *, profiles: Iterable[str] = ()
) -> list[str]:
    """What is wrong with the project that runs when ``profiles`` are enabled (``config`` holds every service,
    as ``docker-compose config`` prints it)."""
    problems: list[str] = []
    every = config["services"]
    services = active_services(config, profiles)
    project = {**config, "services": services}
    named = set(config.get("volumes") or {})
    zks, bks = zookeeper_services(project), bridgekeeper_services(project)
    if zks and len(zks) != 3:
        problems.append(f"expected a 3-server ZooKeeper ensemble, found {sorted(zks)}")
    if len(bks) != 3:
        problems.append(f"expected three bridgekeeper nodes built from the Dockerfile, found {sorted(bks)}")
    external_ports: set[int] = set()
    for service in bks.values():
        try:
            node = load_config(None, properties_from_env(_env(service)))
        except ConfigError:
            continue  # reported below, with the node's other checks
        external_ports |= {e.port for e in node.advertised_endpoints if e.listener != node.inter_broker_listener_name}
    for name, service in services.items():
        image = str(service.get("image", ""))
        if "build" not in service and not image_is_exact(image):
            problems.append(f"{name}: image {image!r} is not pinned to an exact version")
        for dependency in service.get("depends_on") or {}:
            if dependency not in services:
                why = f"profiles {every[dependency].get('profiles')}" if dependency in every else "no such service"
                problems.append(f"{name}: depends on {dependency}, which does not run here ({why})")
        if name == ZOOKEEPER_READY:
            continue
        if service.get("restart") not in ("always", "unless-stopped", "on-failure"):
            problems.append(f"{name}: no restart policy")
        logging = service.get("logging") or {}
        options = logging.get("options") or {}
        if logging.get("driver") not in ("json-file", "local") or not {"max-size", "max-file"} <= set(options):
            problems.append(f"{name}: container logs are not rotated (logging: json-file with max-size and max-file)")
        nofile = (service.get("ulimits") or {}).get("nofile")
        want = NODE_NOFILE if name in bks else SERVICE_NOFILE
        soft = nofile.get("soft") if isinstance(nofile, dict) else nofile
        if soft is None or int(soft) < want:
            problems.append(f"{name}: ulimits nofile is {soft}, below {want}")
        allowed = external_ports if name in bks else UI_PORTS
        for port in _published(service) - allowed:
            problems.append(f"{name}: publishes host port {port}, which an operator does not need")
    for name, service in zks.items():
        volumes = _volume_sources(service)
        for target in ("/data", "/datalog"):
            if volumes.get(target) not in named:
                problems.append(f"{name}: {target} is not on a named volume")
        if not service.get("healthcheck"):
            problems.append(f"{name}: no health check")
        extra = dict(e.split("=", 1) for e in _env(service).get("ZOO_CFG_EXTRA", "").split() if "=" in e)
        if extra.get("metricsProvider.className") != ZOOKEEPER_METRICS_PROVIDER or extra.get(
            "metricsProvider.httpPort"
        ) != str(ZOOKEEPER_METRICS_PORT):
            problems.append(f"{name}: ZooKeeper's Prometheus metrics provider is not on :{ZOOKEEPER_METRICS_PORT}")
    problems += _ready_problems(services.get(ZOOKEEPER_READY))
    ready_connect = _env(services.get(ZOOKEEPER_READY) or {}).get("ZOOKEEPER_CONNECT")
    metrics_targets: set[str] = set()
    broker_ids: set[str] = set()
    connects: set[str] = set()
    for name, service in bks.items():
        problems += [f"{name}: {p}" for p in _health_problems((service.get("healthcheck") or {}).get("test") or [])]
        ready = (service.get("depends_on") or {}).get(ZOOKEEPER_READY) or {}
        if ready.get("condition") != "service_completed_successfully":
            problems.append(f"{name}: does not wait for {ZOOKEEPER_READY} to complete successfully")
        env = _env(service)
        strays = sorted(k for k in env if not k.startswith("KAFKA_"))
        if strays:
            problems.append(f"{name}: environment variables that are not KAFKA_* properties: {strays}")
        try:
            node = load_config(None, properties_from_env(env))
        except ConfigError as exc:
            problems.append(f"{name}: its KAFKA_* variables do not make a valid node configuration: {exc}")
            continue
        # A typo'd variable maps to a key nothing reads: the node's own "isn't a known config" warning.
        problems += [f"{name}: {warning}" for warning in node.warnings]
        try:
            problems += [f"{name}: {warning}" for warning in levels_from_env(env).warnings]
        except LogSettingsError as exc:
            problems.append(f"{name}: {exc}")
        broker_ids.add(str(node.broker_id))
        metrics_targets.add(f"{name}:{node.metrics_port}")
        connects.add(node.zookeeper_connect)
        if ready_connect is not None and node.zookeeper_connect != ready_connect:
            problems.append(
                f"{name}: connects to {node.zookeeper_connect}, {ZOOKEEPER_READY} waits for {ready_connect}"
            )
        missing = sorted(h for h in _connect_hosts(node.zookeeper_connect) if h in every and h not in services)
        if missing:
            problems.append(f"{name}: KAFKA_ZOOKEEPER_CONNECT names {', '.join(missing)}, which do not run here")
        if zks and _connect_hosts(node.zookeeper_connect) != set(zks):
            problems.append(
                f"{name}: KAFKA_ZOOKEEPER_CONNECT {node.zookeeper_connect} is not the bundled {sorted(zks)}"
            )
        for endpoint in node.advertised_endpoints:
            if endpoint.listener != node.inter_broker_listener_name and endpoint.port not in _published(service):
                problems.append(f"{name}: advertises {endpoint.host}:{endpoint.port} but does not publish it")
        worst = controlled_shutdown_worst_case_s(node) + STOP_MARGIN_S
        grace = duration_seconds(service.get("stop_grace_period", "10s"))
        if grace <= worst:
            problems.append(
                f"{name}: stop_grace_period {grace:g} s is not longer than controlled shutdown's worst case "
                f"plus {STOP_MARGIN_S:g} s ({worst:g} s): Docker would kill the node mid-shutdown"
            )
    if len(broker_ids) != len(bks):
        problems.append(f"broker ids are not unique: {sorted(broker_ids)}")
    if len(connects) > 1:
        problems.append(f"the nodes connect to different ensembles: {sorted(connects)}")
    if prometheus is not None:
        problems += _prometheus_problems(project, prometheus, metrics_targets, zks)
    return problems


def _health_problems(test: list[str]) -> list[str]:
    """A node's health check must be ``bridgekeeper health --config-from-env``: reading the node's own variables
    is what makes it probe a TLS-only listener with its TLS settings and watch the ZooKeeper session."""
    argv = test[1:] if test[:1] == ["CMD"] else []
    problems = _cli_problems("the health check", argv, expect="health")
    if problems:
        return [f"the health check is not `bridgekeeper health`: {problems[0]}"]
    if "--config-from-env" not in argv:
        return ["the health check does not read the node's KAFKA_* variables (--config-from-env)"]
    return []


def _ready_problems(service: dict[str, Any] | None) -> list[str]:
    if service is None:
        return [f"no {ZOOKEEPER_READY} service"]
    problems = []
    if service.get("restart") != "no":
        problems.append(f"{ZOOKEEPER_READY}: restarts (a one-shot check must exit once)")
    script = " ".join(str(part) for part in service.get("entrypoint") or [])
    if "bridgekeeper zk get" not in script or "ZOOKEEPER_CONNECT" not in script:
        problems.append(f"{ZOOKEEPER_READY}: does not ask ZooKeeper at ZOOKEEPER_CONNECT")
    return problems


def _prometheus_problems(
    project: dict[str, Any], prometheus: dict[str, Any], metrics_targets: set[str], zks: dict[str, Any]
) -> list[str]:
    problems = []

    def targets(job: str) -> set[str]:
        jobs = [j for j in prometheus["scrape_configs"] if j["job_name"] == job]
        return {t for j in jobs for c in j.get("static_configs", []) for t in c["targets"]}

    if targets("bridgekeeper") != metrics_targets:
        problems.append(
            f"Prometheus scrapes {sorted(targets('bridgekeeper'))}, the nodes serve on {sorted(metrics_targets)}"
        )
    if zks and targets("zookeeper") != {f"{n}:{ZOOKEEPER_METRICS_PORT}" for n in zks}:
        problems.append(f"Prometheus's zookeeper job scrapes {sorted(targets('zookeeper'))}, not {sorted(zks)}")
    alertmanagers = {
        target
        for manager in (prometheus.get("alerting") or {}).get("alertmanagers", [])
        for group in manager["static_configs"]
        for target in group["targets"]
    }
    services = project["services"]
    expected = {f"{n}:{ALERTMANAGER_PORT}" for n, s in services.items() if "alertmanager" in str(s.get("image"))}
    if not expected:
        problems.append("no Alertmanager service")
    elif alertmanagers != expected:
        problems.append(f"Prometheus sends alerts to {sorted(alertmanagers)}, the Alertmanager is {sorted(expected)}")
    else:
        am = next(s for n, s in services.items() if f"{n}:{ALERTMANAGER_PORT}" in expected)
        flags = dict(a.split("=", 1) for a in am.get("command") or [] if "=" in a)
        path = flags.get("--config.file", "/etc/alertmanager/alertmanager.yml")
        if not _volume_sources(am).get(path, "").endswith("deploy/alertmanager/alertmanager.yml"):
            problems.append(f"Alertmanager reads {path}, where deploy/alertmanager/alertmanager.yml is not mounted")
    try:
        prometheus_rule_sources(project, prometheus)
    except ValueError as exc:
        problems.append(str(exc))
    return problems


def prometheus_rule_sources(config: dict[str, Any], prometheus: dict[str, Any]) -> dict[str, Path]:
    """Each rule file Prometheus loads (a path in its container) -> the repository file compose mounts there.
    ValueError names one that is not mounted from the repository."""
    service = next(s for s in config["services"].values() if str(s.get("image", "")).startswith("prom/prometheus"))
    mounts = _volume_sources(service)
    out: dict[str, Path] = {}
    for rule_file in prometheus.get("rule_files") or []:
        source = mounts.get(rule_file)
        if source is None or not Path(source).is_file():
            raise ValueError(f"Prometheus loads {rule_file}, which compose does not mount from a repository file")
        out[rule_file] = Path(source)
    return out


def promtool_config(config: dict[str, Any], prometheus: dict[str, Any]) -> dict[str, Any]:
    """The shipped Prometheus configuration with each rule file's container path replaced by its repository
    source, for ``promtool check config`` outside a container."""
    sources = prometheus_rule_sources(config, prometheus)
    return {**prometheus, "rule_files": [str(sources[r]) for r in prometheus.get("rule_files") or []]}


def differences(a: Any, b: Any, path: str = "") -> list[str]:
    """Dotted paths where ``a`` and ``b`` differ (a key present on one side only is one difference)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[str] = []
        for key in sorted(set(a) | set(b), key=str):
            where = f"{path}.{key}" if path else str(key)
            if key not in a or key not in b:
                out.append(where)
            else:
                out += differences(a[key], b[key], where)
        return out
    return [] if a == b else [path]


def alertmanager_problems(config: dict[str, Any]) -> list[str]:
    """The shape other tools rely on: every alert routed to the ``webhook`` receiver, grouped by alert and
    cluster, and that receiver one webhook that also reports resolutions."""
    problems = []
    route = config.get("route") or {}
    if route.get("receiver") != "webhook":
        problems.append(f"the default route goes to {route.get('receiver')!r}, not the webhook receiver")
    if not {"alertname", "cluster"} <= set(route.get("group_by") or []):
        problems.append(f"the default route groups by {route.get('group_by')}, not by alertname and cluster")
    receivers = {r.get("name"): r for r in config.get("receivers") or []}
    hooks = (receivers.get("webhook") or {}).get("webhook_configs") or []
    if len(hooks) != 1 or not str(hooks[0].get("url", "")).startswith("http"):
        problems.append("the webhook receiver is not one webhook with an http(s) url")
    elif hooks[0].get("send_resolved") is not True:
        problems.append("the webhook receiver does not send resolved notifications")
    return problems


def amtool() -> str:
    path = shutil.which("amtool")
    assert path, "amtool not found (Debian's prometheus-alertmanager package; ./dev installs it)"
    return path


def amtool_check(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([amtool(), "check-config", str(path)], capture_output=True, text=True, timeout=60)


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
    if not re.match(r"python:3\.11(?:\.\d+)?-slim", base):
        problems.append(f"base image {base!r} is not a slim Python 3.11")
    elif not image_is_exact(base):
        problems.append(f"base image {base!r} is not pinned to an exact version")
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
        command = _argv(health[health.find("CMD") + 3 :].strip())
        cli = _cli_problems("HEALTHCHECK", command, expect="health")
        if not cli and "--config-from-env" not in command:
            cli = ["HEALTHCHECK does not read the node's KAFKA_* variables (--config-from-env)"]
        problems += cli
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
    # .env: compose.yaml's variables, which may hold a password, stay out of the build context.
    return [f".dockerignore does not exclude {e}" for e in (".venv", ".git", ".env") if e not in entries]
