"""The compose deployment, validated without a Docker engine (none runs here): compose.yaml against the Compose
Specification's JSON schema (check-jsonschema) and by ``docker-compose config`` (Debian's docker-compose, which
needs no engine for it) in both of its cases (the bundled ensemble's profile, an existing ensemble through
ZOOKEEPER_CONNECT), then read for what a reviewer checks; the Alertmanager and Prometheus configurations checked
by the real amtool and promtool; the Dockerfile parsed (dockerfile-parse). Each check is also shown to catch a
broken copy. The KAFKA_* environment mapping and ``bridgekeeper health`` are tested here too."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from controller.config import ConfigError, load_config
from controller.config.env import properties_from_env, property_name
from tests import deploycheck as d
from tests.netutil import free_port
from tests.promharness import check_config
from tests.zkharness import ZkServer

CHECK_JSONSCHEMA = str(Path(sys.executable).parent / "check-jsonschema")
BUNDLED = [d.ZOOKEEPER_PROFILE]
#: An existing ensemble, and every other variable away from its default.
EXTERNAL_ENV = {
    "ZOOKEEPER_CONNECT": "zk-a.example:2181,zk-b.example:2181/kafka-bridge",
    "BK1_BROKER_ID": "101",
    "BK2_BROKER_ID": "102",
    "BK3_BROKER_ID": "103",
    "EXTERNAL_HOST": "kafka.example",
    "BK1_EXTERNAL_PORT": "19192",
    "BK2_EXTERNAL_PORT": "29192",
    "BK3_EXTERNAL_PORT": "39192",
}


@pytest.fixture(scope="module")
def resolved() -> dict[str, Any]:
    """The bundled case: ``docker-compose --profile zookeeper config`` with no variables set."""
    return d.resolved_compose(profiles=BUNDLED)


@pytest.fixture(scope="module")
def external() -> dict[str, Any]:
    return d.resolved_compose(env=EXTERNAL_ENV)


@pytest.fixture(scope="module")
def prometheus() -> dict[str, Any]:
    config: dict[str, Any] = yaml.safe_load(d.PROMETHEUS.read_text())
    return config


def schema_check(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CHECK_JSONSCHEMA, "--builtin-schema", "vendor.compose-spec", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def node_envs(config: dict[str, Any]) -> dict[str, dict[str, str]]:
    return {n: d._env(s) for n, s in d.bridgekeeper_services(config).items()}


# -- validators --------------------------------------------------------------------------------------------------------
def test_compose_file_matches_the_compose_specification_schema() -> None:
    result = schema_check(d.COMPOSE)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_schema_check_rejects_a_misspelled_key(tmp_path: Path) -> None:
    broken = tmp_path / "compose.yaml"
    broken.write_text(d.COMPOSE.read_text().replace("  restart: unless-stopped\n", "  restarts: no\n", 1))
    assert broken.read_text() != d.COMPOSE.read_text()
    result = schema_check(broken)
    assert result.returncode != 0 and "restarts" in result.stdout + result.stderr


@pytest.mark.parametrize(
    ("profiles", "env"),
    [(BUNDLED, {}), ([], {"ZOOKEEPER_CONNECT": "zk-a:2181,zk-b:2181/kafka-bridge"})],
    ids=["bundled", "external"],
)
def test_docker_compose_config_accepts_both_cases(profiles: list[str], env: dict[str, str]) -> None:
    args = [a for p in profiles for a in ("--profile", p)]
    result = subprocess.run(
        ["docker-compose", "-f", str(d.COMPOSE), *args, "config", "-q"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=d.ROOT,
        env=d.compose_env(env),
    )
    assert result.returncode == 0, result.stderr


def test_docker_compose_config_refuses_what_only_compose_2_20_accepts(tmp_path: Path) -> None:
    """Why the nodes wait for zookeeper-ready instead of ``depends_on: {zk1: {required: false}}``: the
    docker-compose Debian ships (and CI validates with) refuses the key."""
    broken = tmp_path / "compose.yaml"
    old = "    zookeeper-ready: {condition: service_completed_successfully}\n"
    assert old in d.COMPOSE.read_text()
    broken.write_text(
        d.COMPOSE.read_text().replace(old, old + "    zk1: {condition: service_healthy, required: false}\n")
    )
    result = subprocess.run(
        ["docker-compose", "-f", str(broken), "config", "-q"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=d.ROOT,
        env=d.compose_env(),
    )
    assert result.returncode != 0 and "required" in result.stderr


# -- the two cases -----------------------------------------------------------------------------------------------------
def test_the_bundled_case_has_everything_in_place(resolved: dict[str, Any], prometheus: dict[str, Any]) -> None:
    assert d.compose_problems(resolved, prometheus, profiles=BUNDLED) == []
    assert d.grafana_problems(resolved) == []
    assert sorted(d.active_services(resolved, BUNDLED)) == [
        "alertmanager",
        "bk1",
        "bk2",
        "bk3",
        "grafana",
        "prometheus",
        "zk1",
        "zk2",
        "zk3",
        "zookeeper-ready",
    ]
    for env in node_envs(resolved).values():
        assert env["KAFKA_ZOOKEEPER_CONNECT"] == "zk1:2181,zk2:2181,zk3:2181/kafka"
    assert {n: e["KAFKA_BROKER_ID"] for n, e in node_envs(resolved).items()} == {"bk1": "1", "bk2": "2", "bk3": "3"}
    for name in ("zk1", "zk2", "zk3"):
        extra = d._env(resolved["services"][name])["ZOO_CFG_EXTRA"].split()
        assert f"metricsProvider.className={d.ZOOKEEPER_METRICS_PROVIDER}" in extra
        assert "metricsProvider.httpPort=7000" in extra


def test_the_external_case_has_everything_in_place(external: dict[str, Any], prometheus: dict[str, Any]) -> None:
    assert d.compose_problems(external, prometheus) == []
    running = d.active_services(external)
    assert not {"zk1", "zk2", "zk3"} & set(running)
    assert sorted(running) == ["alertmanager", "bk1", "bk2", "bk3", "grafana", "prometheus", "zookeeper-ready"]
    connect = EXTERNAL_ENV["ZOOKEEPER_CONNECT"]
    assert {e["KAFKA_ZOOKEEPER_CONNECT"] for e in node_envs(external).values()} == {connect}
    assert d._env(running[d.ZOOKEEPER_READY])["ZOOKEEPER_CONNECT"] == connect
    nodes = {n: load_config(None, properties_from_env(e)) for n, e in node_envs(external).items()}
    assert {n: c.broker_id for n, c in nodes.items()} == {"bk1": 101, "bk2": 102, "bk3": 103}
    assert {n: (c.zookeeper_servers, c.zookeeper_chroot) for n, c in nodes.items()} == {
        n: ((("zk-a.example", 2181), ("zk-b.example", 2181)), "/kafka-bridge") for n in nodes
    }
    for name, port in (("bk1", 19192), ("bk2", 29192), ("bk3", 39192)):
        external_endpoints = [e for e in nodes[name].advertised_endpoints if e.listener == "EXTERNAL"]
        assert [(e.host, e.port) for e in external_endpoints] == [("kafka.example", port)]
        assert d._published(running[name]) == {port}


def test_the_two_cases_differ_only_in_the_ensemble(resolved: dict[str, Any]) -> None:
    external = d.resolved_compose(env={"ZOOKEEPER_CONNECT": "zk-a:2181,zk-b:2181/kafka-bridge"})
    diff = d.differences(d.active(resolved, BUNDLED), d.active(external))
    assert diff == [
        "services.bk1.environment.KAFKA_ZOOKEEPER_CONNECT",
        "services.bk2.environment.KAFKA_ZOOKEEPER_CONNECT",
        "services.bk3.environment.KAFKA_ZOOKEEPER_CONNECT",
        "services.zk1",
        "services.zk2",
        "services.zk3",
        "services.zookeeper-ready.environment.ZOOKEEPER_CONNECT",
    ]


def test_neither_profile_nor_ensemble_is_reported(prometheus: dict[str, Any]) -> None:
    """With neither --profile zookeeper nor ZOOKEEPER_CONNECT the nodes would wait for servers that never start."""
    problems = d.compose_problems(d.resolved_compose(), prometheus)
    assert problems == [f"bk{n}: KAFKA_ZOOKEEPER_CONNECT names zk1, zk2, zk3, which do not run here" for n in (1, 2, 3)]


def test_the_ibp_comes_from_the_environment(resolved: dict[str, Any]) -> None:
    envs = node_envs(resolved).values()
    assert {e["KAFKA_INTER_BROKER_PROTOCOL_VERSION"] for e in envs} == {"3.4-IV0"}  # the default
    assert all(properties_from_env(e)["inter.broker.protocol.version"] == "3.4-IV0" for e in envs)


def test_every_image_is_pinned_to_an_exact_version(resolved: dict[str, Any]) -> None:
    images = {n: s["image"] for n, s in resolved["services"].items() if "build" not in s}
    assert sorted(images) == ["alertmanager", "grafana", "prometheus", "zk1", "zk2", "zk3"]
    assert all(d.image_is_exact(i) for i in images.values()), images


@pytest.mark.parametrize(
    "image",
    [
        "zookeeper:3.8",
        "zookeeper",
        "zookeeper:latest",
        "python:3.11-slim-bookworm",
        "prom/prometheus:v3",
        "grafana/grafana:12.4",
    ],
)
def test_the_pin_check_refuses_a_moving_tag(image: str) -> None:
    assert not d.image_is_exact(image)


def test_stop_grace_period_covers_controlled_shutdown(resolved: dict[str, Any]) -> None:
    for name, env in node_envs(resolved).items():
        node = load_config(None, properties_from_env(env))
        worst = d.controlled_shutdown_worst_case_s(node)
        assert worst == 3 * (30 + 5)  # Kafka's defaults: 3 retries, request.timeout.ms 30 s, back-off 5 s
        assert d.duration_seconds(resolved["services"][name]["stop_grace_period"]) > worst + d.STOP_MARGIN_S


@pytest.mark.parametrize(
    ("text", "seconds"), [("2m", 120), ("1m30s", 90), ("90s", 90), ("1h", 3600), ("500ms", 0.5), ("45", 45)]
)
def test_compose_durations(text: str, seconds: float) -> None:
    assert d.duration_seconds(text) == seconds


def mutate(resolved: dict[str, Any], edit: Any, profiles: list[str] = BUNDLED) -> list[str]:
    broken = copy.deepcopy(resolved)
    edit(broken["services"], broken)
    return d.compose_problems(broken, yaml.safe_load(d.PROMETHEUS.read_text()), profiles=profiles)


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (
            lambda s, _c: s["bk2"]["environment"].update({"KAFKA_INTER_BROKER_PROTOCL_VERSION": "3.4-IV0"}),
            "bk2: The configuration 'inter.broker.protocl.version' was supplied but isn't a known config.",
        ),
        (lambda s, _c: s["bk1"]["environment"].update({"KAFKA_BROKER_ID": "x"}), "bk1: its KAFKA_* variables"),
        (lambda s, _c: s["bk3"]["environment"].update({"BROKER_RACK": "a"}), "bk3: environment variables that are not"),
        (lambda s, _c: s["grafana"].pop("restart"), "grafana: no restart policy"),
        (lambda s, _c: s["zk2"].update(ports=[{"published": 2181, "target": 2181}]), "zk2: publishes host port 2181"),
        (
            lambda s, _c: s["zk3"].update(volumes=["/tmp/zk:/data:rw", "zk3-datalog:/datalog:rw"]),
            "zk3: /data is not on a named volume",
        ),
        (
            lambda s, _c: s["bk1"]["depends_on"].pop("zookeeper-ready"),
            "bk1: does not wait for zookeeper-ready to complete successfully",
        ),
        (lambda s, _c: s["bk2"].pop("healthcheck"), "bk2: the health check is not `bridgekeeper health`"),
        (
            lambda s, _c: s["bk3"]["environment"].update({"KAFKA_LOG4J_ROOT_LOGLEVEL": "LOUD"}),
            "bk3: KAFKA_LOG4J_ROOT_LOGLEVEL",
        ),
        (
            lambda s, _c: s["bk1"]["healthcheck"].update(test=["CMD", "bridgekeeper", "health"]),
            "bk1: the health check does not read the node's KAFKA_* variables",
        ),
        (
            lambda s, _c: s["bk3"].update(ports=[{"published": 39093, "target": 39092}]),
            "bk3: publishes host port 39093",
        ),
        (
            lambda s, _c: s["bk3"].update(ports=[{"published": 39093, "target": 39092}]),
            "bk3: advertises localhost:39092 but does not publish it",
        ),
        (
            lambda s, _c: s["bk2"]["environment"].update({"KAFKA_BRIDGEKEEPER_METRICS_PORT": "9405"}),
            "Prometheus scrapes",
        ),
        (lambda s, _c: s["bk3"]["environment"].update({"KAFKA_BROKER_ID": "1"}), "broker ids are not unique"),
        (lambda s, _c: s.pop("zk3"), "expected a 3-server ZooKeeper ensemble"),
        (lambda s, _c: s["zk1"].update(image="zookeeper:3.8"), "zk1: image 'zookeeper:3.8' is not pinned"),
        (lambda s, _c: s["prometheus"].update(image="prom/prometheus:latest"), "prometheus: image 'prom/prometheus"),
        (lambda s, _c: s["bk1"].pop("stop_grace_period"), "bk1: stop_grace_period 10 s is not longer"),
        (lambda s, _c: s["bk2"].update(stop_grace_period="1m"), "bk2: stop_grace_period 60 s is not longer"),
        (
            lambda s, _c: s["bk3"]["environment"].update({"KAFKA_REQUEST_TIMEOUT_MS": "60000"}),
            "bk3: stop_grace_period 120 s is not longer than controlled shutdown's worst case plus 10 s (205 s)",
        ),
        (lambda s, _c: s["alertmanager"].pop("ulimits"), "alertmanager: ulimits nofile is None"),
        (lambda s, _c: s["bk1"]["ulimits"]["nofile"].update(soft=1024), "bk1: ulimits nofile is 1024, below 100000"),
        (lambda s, _c: s["zk2"].pop("logging"), "zk2: container logs are not rotated"),
        (lambda s, _c: s["grafana"]["logging"]["options"].pop("max-file"), "grafana: container logs are not rotated"),
        (
            lambda s, _c: s["zk1"]["environment"].pop("ZOO_CFG_EXTRA"),
            "zk1: ZooKeeper's Prometheus metrics provider is not on :7000",
        ),
        (
            lambda s, _c: s["bk2"]["environment"].update(
                {"KAFKA_ZOOKEEPER_CONNECT": "zk1:2181,zk2:2181,zk3:2181/other"}
            ),
            "bk2: connects to zk1:2181,zk2:2181,zk3:2181/other, zookeeper-ready waits for",
        ),
        (
            lambda s, _c: s["bk1"].update(depends_on={"zk1": {"condition": "service_healthy"}}),
            "bk1: does not wait for zookeeper-ready",
        ),
        (lambda s, _c: s["zookeeper-ready"].update(restart="on-failure"), "zookeeper-ready: restarts"),
        (lambda s, _c: s["zookeeper-ready"].update(entrypoint=["true"]), "zookeeper-ready: does not ask ZooKeeper"),
        (lambda s, _c: s.pop("alertmanager"), "no Alertmanager service"),
        (
            lambda s, _c: s["alertmanager"].update(volumes=["alertmanager-data:/alertmanager"]),
            "Alertmanager reads /etc/alertmanager/alertmanager.yml, where deploy/alertmanager/alertmanager.yml is not",
        ),
        (
            lambda s, _c: s["prometheus"].update(volumes=["prometheus-data:/prometheus"]),
            "Prometheus loads /etc/prometheus/alerts.yaml, which compose does not mount",
        ),
    ],
    ids=[
        "typo'd variable",
        "bad value",
        "stray variable",
        "no restart",
        "extra host port",
        "bind-mounted data",
        "no ready wait",
        "no health check",
        "bad log level",
        "health without the node's variables",
        "extra node port",
        "unpublished listener",
        "metrics port",
        "duplicate id",
        "two servers",
        "floating zookeeper",
        "latest prometheus",
        "default grace",
        "short grace",
        "longer request timeout",
        "no ulimits",
        "low nofile",
        "no log rotation",
        "unbounded log files",
        "no zookeeper metrics",
        "split ensembles",
        "depends on zk directly",
        "ready restarts",
        "ready checks nothing",
        "no alertmanager",
        "alertmanager config unmounted",
        "rules unmounted",
    ],
)
def test_each_check_catches_its_breakage(resolved: dict[str, Any], edit: Any, expected: str) -> None:
    problems = mutate(resolved, edit)
    assert any(p.startswith(expected) for p in problems), problems


def test_a_dependency_on_the_bundled_servers_breaks_the_external_case(external: dict[str, Any]) -> None:
    """What `depends_on: zk1` in the nodes' anchor did: without the profile, zk1 is not part of the project."""
    problems = mutate(external, lambda s, _c: s["bk1"]["depends_on"].update(zk1={"condition": "service_healthy"}), [])
    assert "bk1: depends on zk1, which does not run here (profiles ['zookeeper'])" in problems


def test_prometheus_sends_alerts_to_the_alertmanager(resolved: dict[str, Any], prometheus: dict[str, Any]) -> None:
    broken = copy.deepcopy(prometheus)
    broken["alerting"]["alertmanagers"][0]["static_configs"][0]["targets"] = ["localhost:9093"]
    problems = d.compose_problems(resolved, broken, profiles=BUNDLED)
    assert problems == ["Prometheus sends alerts to ['localhost:9093'], the Alertmanager is ['alertmanager:9093']"]
    del broken["scrape_configs"][1]
    assert any(
        p.startswith("Prometheus's zookeeper job scrapes []")
        for p in d.compose_problems(resolved, broken, profiles=BUNDLED)
    )


def test_grafana_check_catches_a_wrong_mount(resolved: dict[str, Any]) -> None:
    broken = copy.deepcopy(resolved)
    broken["services"]["grafana"]["volumes"] = [
        v for v in broken["services"]["grafana"]["volumes"] if "dashboards" not in str(v)
    ]
    assert any("dashboards/ is not mounted" in p for p in d.grafana_problems(broken))


# -- zookeeper-ready, run against a real ZooKeeper ---------------------------------------------------------------------
def run_ready(resolved: dict[str, Any], connect: str, wait_s: int) -> tuple[subprocess.CompletedProcess[str], float]:
    """The service's script as the container's shell runs it (compose's ``$$`` is a literal ``$``), with the
    project's ``bridgekeeper`` first on PATH."""
    entrypoint = resolved["services"][d.ZOOKEEPER_READY]["entrypoint"]
    assert entrypoint[:2] == ["sh", "-c"]
    script = entrypoint[2].replace("$$", "$")
    env = {
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        "ZOOKEEPER_CONNECT": connect,
        "ZOOKEEPER_WAIT_SECONDS": str(wait_s),
    }
    started = time.monotonic()
    result = subprocess.run(["sh", "-c", script], env=env, capture_output=True, text=True, timeout=120)
    return result, time.monotonic() - started


def test_zookeeper_ready_passes_once_the_ensemble_answers(resolved: dict[str, Any], zk_server: ZkServer) -> None:
    # The chroot does not exist yet: the first node creates it, so the check must not need it.
    result, _ = run_ready(resolved, f"{zk_server.hosts}/kafka-bridge-not-created", 60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"ZooKeeper at {zk_server.hosts}/kafka-bridge-not-created answers"


def test_zookeeper_ready_gives_up_with_exit_3(resolved: dict[str, Any]) -> None:
    connect = f"127.0.0.1:{free_port()}/kafka"
    result, took = run_ready(resolved, connect, 1)
    assert result.returncode == 3
    assert f"error: ZooKeeper at {connect} did not answer within 1 s" in result.stderr
    assert took < 60


# -- Alertmanager and Prometheus, checked by their own tools -----------------------------------------------------------
def test_the_alertmanager_config_passes_amtool_and_has_the_expected_shape() -> None:
    result = d.amtool_check(d.ALERTMANAGER)
    assert result.returncode == 0, result.stdout + result.stderr
    assert d.alertmanager_problems(yaml.safe_load(d.ALERTMANAGER.read_text())) == []


def test_amtool_catches_a_route_to_an_undefined_receiver(tmp_path: Path) -> None:
    broken = tmp_path / "alertmanager.yml"
    text = d.ALERTMANAGER.read_text()
    assert "  receiver: webhook\n" in text
    broken.write_text(text.replace("  receiver: webhook\n", "  receiver: pager\n"))
    result = d.amtool_check(broken)
    assert result.returncode != 0 and 'undefined receiver "pager"' in result.stdout + result.stderr


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda c: c["route"].update(receiver="other"), "the default route goes to 'other'"),
        (lambda c: c["route"].update(group_by=["alertname"]), "the default route groups by ['alertname']"),
        (lambda c: c["receivers"][0]["webhook_configs"][0].pop("send_resolved"), "the webhook receiver does not send"),
        (lambda c: c["receivers"][0].update(webhook_configs=[]), "the webhook receiver is not one webhook"),
    ],
)
def test_the_alertmanager_shape_check_catches_its_breakage(edit: Any, expected: str) -> None:
    config = yaml.safe_load(d.ALERTMANAGER.read_text())
    edit(config)
    assert any(p.startswith(expected) for p in d.alertmanager_problems(config))


def test_the_prometheus_config_passes_promtool(
    resolved: dict[str, Any], prometheus: dict[str, Any], tmp_path: Path
) -> None:
    """The shipped file as Prometheus reads it in compose, the rule files at their repository paths."""
    path = tmp_path / "prometheus.yml"
    path.write_text(yaml.safe_dump(d.promtool_config(resolved, prometheus), sort_keys=False))
    check_config(path)


def test_promtool_catches_a_misspelled_alerting_key(
    resolved: dict[str, Any], prometheus: dict[str, Any], tmp_path: Path
) -> None:
    broken = d.promtool_config(resolved, prometheus)
    broken["alerting"]["alertmanagers"][0]["static_config"] = broken["alerting"]["alertmanagers"][0].pop(
        "static_configs"
    )
    path = tmp_path / "prometheus.yml"
    path.write_text(yaml.safe_dump(broken, sort_keys=False))
    with pytest.raises(AssertionError, match="field static_config not found"):
        check_config(path)


# -- the Dockerfile ----------------------------------------------------------------------------------------------------
def test_dockerfile_and_dockerignore_pass_their_checks() -> None:
    assert d.dockerfile_problems(d.DOCKERFILE.read_text()) == []
    assert d.dockerignore_problems(d.DOCKERIGNORE.read_text()) == []


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("USER bridgekeeper\n", "", "no USER instruction with a non-root user"),
        ("USER bridgekeeper\n", "USER root\n", "no USER instruction with a non-root user"),
        ("FROM python:3.11.16-slim-bookworm", "FROM python:3.11", "base image 'python:3.11' is not a slim Python 3.11"),
        (
            "FROM python:3.11.16-slim-bookworm",
            "FROM python:3.11-slim-bookworm",
            "base image 'python:3.11-slim-bookworm' is not pinned to an exact version",
        ),
        (
            'ENTRYPOINT ["bridgekeeper", "node", "--config-from-env"]',
            "ENTRYPOINT bridgekeeper node",
            "ENTRYPOINT is not in exec (JSON) form",
        ),
        ('"node", "--config-from-env"]', '"nodes"]', "ENTRYPOINT: bridgekeeper does not accept ['nodes']"),
        (
            'CMD ["bridgekeeper", "health", "--config-from-env", "--timeout", "4"]',
            'CMD ["bridgekeeper", "version"]',
            "HEALTHCHECK runs `bridgekeeper version`",
        ),
        (
            '"health", "--config-from-env"',
            '"health", "--config-from-envs"',
            "HEALTHCHECK: bridgekeeper does not accept",
        ),
        ('"health", "--config-from-env", ', '"health", ', "HEALTHCHECK does not read the node's KAFKA_* variables"),
        ("pip install --no-cache-dir .", "pip install .", "pip install without --no-cache-dir"),
        ("COPY pyproject.toml README.md ./", "ADD https://example.com/x.tgz /src/", "ADD of a URL"),
    ],
)
def test_each_dockerfile_check_catches_its_breakage(old: str, new: str, expected: str) -> None:
    text = d.DOCKERFILE.read_text()
    assert old in text
    problems = d.dockerfile_problems(text.replace(old, new))
    assert any(p.startswith(expected) for p in problems), problems


def test_dockerignore_check_catches_a_missing_venv_or_env() -> None:
    assert d.dockerignore_problems(".git\n.env\n") == [".dockerignore does not exclude .venv"]
    assert d.dockerignore_problems(".git\n.venv\n") == [".dockerignore does not exclude .env"]


# -- KAFKA_* environment variables (Apache Kafka's image convention) ---------------------------------------------------
@pytest.mark.parametrize(
    ("variable", "key"),
    [
        ("KAFKA_INTER_BROKER_PROTOCOL_VERSION", "inter.broker.protocol.version"),
        ("KAFKA_BRIDGEKEEPER_METRICS_PORT", "bridgekeeper.metrics.port"),
        ("KAFKA_LISTENER_NAME_INTERNAL_SASL_ENABLED__MECHANISMS", "listener.name.internal.sasl.enabled_mechanisms"),
        (
            "KAFKA_LISTENER_NAME_SASL__PLAINTEXT_SCRAM___SHA___256_SASL_JAAS_CONFIG",
            "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config",
        ),
        ("KAFKA_ABC_DEF", "abc.def"),
        ("KAFKA_ABC___DEF", "abc-def"),
        ("KAFKA_ABC__DEF", "abc_def"),
    ],
)
def test_variable_names_map_to_property_keys(variable: str, key: str) -> None:
    assert property_name(variable) == key


def test_the_images_own_variables_and_others_are_not_properties() -> None:
    env = {
        "KAFKA_HEAP_OPTS": "-Xmx1g",
        "KAFKA_OPTS": "-D",
        "KAFKA_LOG4J_ROOT_LOGLEVEL": "INFO",
        "PATH": "/bin",
        "KAFKA_BROKER_ID": "3",
        "kafka_broker_id": "4",
    }
    assert properties_from_env(env) == {"broker.id": "3"}


@pytest.mark.parametrize(
    ("variable", "reason"),
    [
        ("KAFKA_", "not KAFKA_ followed by"),
        ("KAFKA_A-B", "not KAFKA_ followed by"),
        ("KAFKA__A", "maps to '.a'"),
        ("KAFKA_A_", "maps to 'a.', which has an empty name segment"),
    ],
)
def test_a_variable_that_cannot_be_a_property_is_refused_by_name(variable: str, reason: str) -> None:
    with pytest.raises(ConfigError, match=f"environment variable {variable}: {reason}"):
        properties_from_env({variable: "x"})


def test_node_refuses_a_bad_variable_with_exit_2_and_no_traceback() -> None:
    env = {"PATH": "/usr/bin:/bin", "KAFKA_BROKER_ID": "1", "KAFKA_ZOOKEEPER_CONNECT": "127.0.0.1:1", "KAFKA_A_": "x"}
    result = subprocess.run(
        [sys.executable, "-m", "controller.cli", "node", "--config-from-env"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=d.ROOT,
    )
    assert result.returncode == 2
    assert "error: environment variable KAFKA_A_: maps to 'a.', which has an empty name segment" in result.stderr
    assert "Traceback" not in result.stderr


def test_file_then_environment_then_set(tmp_path: Path) -> None:
    """The precedence `bridgekeeper node` applies, read back from the configuration it would run with."""
    from controller.config import load_config, parse_overrides

    props = tmp_path / "server.properties"
    props.write_text("broker.id=1\nzookeeper.connect=a:2181\nnum.partitions=2\ndefault.replication.factor=1\n")
    settings = properties_from_env({"KAFKA_NUM_PARTITIONS": "5", "KAFKA_DEFAULT_REPLICATION_FACTOR": "2"})
    settings.update(parse_overrides(["default.replication.factor=3"]))
    config = load_config(str(props), settings)
    assert (config.broker_id, config.num_partitions, config.default_replication_factor) == (1, 5, 3)
