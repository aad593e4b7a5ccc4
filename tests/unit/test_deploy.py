"""The compose deployment, validated without a Docker engine (none runs here): compose.yaml against the Compose
Specification's JSON schema (check-jsonschema) and by ``docker-compose config`` (Debian's docker-compose, which
needs no engine for it), then read for what a reviewer checks; the Dockerfile parsed (dockerfile-parse). Each
check is also shown to catch a broken copy. The KAFKA_* environment mapping and ``bridgekeeper health`` are
tested here too."""

from __future__ import annotations

import copy
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from controller.config import ConfigError
from controller.config_env import properties_from_env, property_name
from tests import deploycheck as d

CHECK_JSONSCHEMA = str(Path(sys.executable).parent / "check-jsonschema")


@pytest.fixture(scope="module")
def resolved() -> dict[str, Any]:
    return d.resolved_compose()


def schema_check(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CHECK_JSONSCHEMA, "--builtin-schema", "vendor.compose-spec", str(path)],
                          capture_output=True, text=True, timeout=120)  # fmt: skip


# -- validators --------------------------------------------------------------------------------------------------------
def test_compose_file_matches_the_compose_specification_schema() -> None:
    result = schema_check(d.COMPOSE)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_schema_check_rejects_a_misspelled_key(tmp_path: Path) -> None:
    broken = tmp_path / "compose.yaml"
    broken.write_text(
        d.COMPOSE.read_text().replace("    restart: unless-stopped\n    volumes:", "    restarts: no\n    volumes:", 1)
    )
    assert broken.read_text() != d.COMPOSE.read_text()
    result = schema_check(broken)
    assert result.returncode != 0 and "restarts" in result.stdout + result.stderr


def test_docker_compose_config_accepts_the_file() -> None:
    assert shutil.which("docker-compose"), "docker-compose (Debian package) is installed by ./dev"
    result = subprocess.run(["docker-compose", "-f", str(d.COMPOSE), "config", "-q"], capture_output=True, text=True,
                            timeout=120, cwd=d.ROOT)  # fmt: skip
    assert result.returncode == 0, result.stderr


# -- what a reviewer checks --------------------------------------------------------------------------------------------
def test_the_deployment_has_everything_in_place(resolved: dict[str, Any]) -> None:
    prometheus = yaml.safe_load(d.PROMETHEUS.read_text())
    assert d.compose_problems(resolved, prometheus) == []
    assert d.grafana_problems(resolved) == []
    assert sorted(resolved["services"]) == ["bk1", "bk2", "bk3", "grafana", "prometheus", "zk1", "zk2", "zk3"]


def test_the_ibp_comes_from_the_environment(resolved: dict[str, Any]) -> None:
    envs = [d._env(s) for s in d.bridgekeeper_services(resolved).values()]
    assert {e["KAFKA_INTER_BROKER_PROTOCOL_VERSION"] for e in envs} == {"3.4-IV0"}  # the default
    assert all(properties_from_env(e)["inter.broker.protocol.version"] == "3.4-IV0" for e in envs)


def mutate(resolved: dict[str, Any], edit: Any) -> list[str]:
    broken = copy.deepcopy(resolved)
    edit(broken["services"], broken)
    return d.compose_problems(broken, yaml.safe_load(d.PROMETHEUS.read_text()))


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda s, _c: s["bk2"]["environment"].update({"KAFKA_INTER_BROKER_PROTOCL_VERSION": "3.4-IV0"}),
         "bk2: The configuration 'inter.broker.protocl.version' was supplied but isn't a known config."),
        (lambda s, _c: s["bk1"]["environment"].update({"KAFKA_BROKER_ID": "x"}), "bk1: its KAFKA_* variables"),
        (lambda s, _c: s["bk3"]["environment"].update({"BROKER_RACK": "a"}), "bk3: environment variables that are not"),
        (lambda s, _c: s["grafana"].pop("restart"), "grafana: no restart policy"),
        (lambda s, _c: s["zk2"].update(ports=[{"published": 2181, "target": 2181}]), "zk2: publishes host port 2181"),
        (lambda s, _c: s["zk3"].update(volumes=["/tmp/zk:/data:rw", "zk3-datalog:/datalog:rw"]),
         "zk3: /data is not on a named volume"),
        (lambda s, _c: s["bk1"]["depends_on"].pop("zk2"), "bk1: does not wait for zk2 to be healthy"),
        (lambda s, _c: s["bk2"].pop("healthcheck"), "bk2: the health check is not `bridgekeeper health`"),
        (lambda s, _c: s["bk3"].update(ports=[{"published": 39093, "target": 39092}]),
         "bk3: advertises localhost:39092 but does not publish it"),
        (lambda s, _c: s["bk2"]["environment"].update({"KAFKA_BRIDGEKEEPER_METRICS_PORT": "9405"}),
         "Prometheus scrapes"),
        (lambda s, _c: s["bk3"]["environment"].update({"KAFKA_BROKER_ID": "1"}), "broker ids are not unique"),
        (lambda s, _c: s.pop("zk3"), "expected a 3-server ZooKeeper ensemble"),
    ],
    ids=["typo'd variable", "bad value", "stray variable", "no restart", "extra host port", "bind-mounted data",
         "no health wait", "no health check", "unpublished listener", "metrics port", "duplicate id", "two servers"],
)  # fmt: skip
def test_each_check_catches_its_breakage(resolved: dict[str, Any], edit: Any, expected: str) -> None:
    problems = mutate(resolved, edit)
    assert any(p.startswith(expected) for p in problems), problems


def test_grafana_check_catches_a_wrong_mount(resolved: dict[str, Any]) -> None:
    broken = copy.deepcopy(resolved)
    broken["services"]["grafana"]["volumes"] = [v for v in broken["services"]["grafana"]["volumes"]
                                                if "dashboards" not in str(v)]  # fmt: skip
    assert any("dashboards/ is not mounted" in p for p in d.grafana_problems(broken))


# -- the Dockerfile ----------------------------------------------------------------------------------------------------
def test_dockerfile_and_dockerignore_pass_their_checks() -> None:
    assert d.dockerfile_problems(d.DOCKERFILE.read_text()) == []
    assert d.dockerignore_problems(d.DOCKERIGNORE.read_text()) == []


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("USER bridgekeeper\n", "", "no USER instruction with a non-root user"),
        ("USER bridgekeeper\n", "USER root\n", "no USER instruction with a non-root user"),
        ("FROM python:3.11-slim-bookworm", "FROM python:3.11", "base image 'python:3.11' is not a slim Python 3.11"),
        ('ENTRYPOINT ["bridgekeeper", "node", "--config-from-env"]', "ENTRYPOINT bridgekeeper node",
         "ENTRYPOINT is not in exec (JSON) form"),
        ('"node", "--config-from-env"]', '"nodes"]', "ENTRYPOINT: bridgekeeper does not accept ['nodes']"),
        ('CMD ["bridgekeeper", "health", "--bootstrap-server", "127.0.0.1:9092", "--timeout", "4"]',
         'CMD ["bridgekeeper", "version"]', "HEALTHCHECK runs `bridgekeeper version`"),
        ("pip install --no-cache-dir .", "pip install .", "pip install without --no-cache-dir"),
        ("COPY pyproject.toml README.md ./", "ADD https://example.com/x.tgz /src/", "ADD of a URL"),
    ],
)  # fmt: skip
def test_each_dockerfile_check_catches_its_breakage(old: str, new: str, expected: str) -> None:
    text = d.DOCKERFILE.read_text()
    assert old in text
    problems = d.dockerfile_problems(text.replace(old, new))
    assert any(p.startswith(expected) for p in problems), problems


def test_dockerignore_check_catches_a_missing_venv() -> None:
    assert d.dockerignore_problems(".git\n") == [".dockerignore does not exclude .venv"]


# -- KAFKA_* environment variables (Apache Kafka's image convention) ---------------------------------------------------
@pytest.mark.parametrize(
    ("variable", "key"),
    [
        ("KAFKA_INTER_BROKER_PROTOCOL_VERSION", "inter.broker.protocol.version"),
        ("KAFKA_BRIDGEKEEPER_METRICS_PORT", "bridgekeeper.metrics.port"),
        ("KAFKA_LISTENER_NAME_INTERNAL_SASL_ENABLED__MECHANISMS", "listener.name.internal.sasl.enabled_mechanisms"),
        ("KAFKA_LISTENER_NAME_SASL__PLAINTEXT_SCRAM___SHA___256_SASL_JAAS_CONFIG",
         "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config"),
        ("KAFKA_ABC_DEF", "abc.def"),
        ("KAFKA_ABC___DEF", "abc-def"),
        ("KAFKA_ABC__DEF", "abc_def"),
    ],
)  # fmt: skip
def test_variable_names_map_to_property_keys(variable: str, key: str) -> None:
    assert property_name(variable) == key


def test_the_images_own_variables_and_others_are_not_properties() -> None:
    env = {"KAFKA_HEAP_OPTS": "-Xmx1g", "KAFKA_OPTS": "-D", "KAFKA_LOG4J_ROOT_LOGLEVEL": "INFO", "PATH": "/bin",
           "KAFKA_BROKER_ID": "3", "kafka_broker_id": "4"}  # fmt: skip
    assert properties_from_env(env) == {"broker.id": "3"}


@pytest.mark.parametrize(
    ("variable", "reason"),
    [("KAFKA_", "not KAFKA_ followed by"), ("KAFKA_A-B", "not KAFKA_ followed by"),
     ("KAFKA__A", "maps to '.a'"), ("KAFKA_A_", "maps to 'a.', which has an empty name segment")],
)  # fmt: skip
def test_a_variable_that_cannot_be_a_property_is_refused_by_name(variable: str, reason: str) -> None:
    with pytest.raises(ConfigError, match=f"environment variable {variable}: {reason}"):
        properties_from_env({variable: "x"})


def test_node_refuses_a_bad_variable_with_exit_2_and_no_traceback() -> None:
    env = {"PATH": "/usr/bin:/bin", "KAFKA_BROKER_ID": "1", "KAFKA_ZOOKEEPER_CONNECT": "127.0.0.1:1", "KAFKA_A_": "x"}
    result = subprocess.run([sys.executable, "-m", "controller.cli", "node", "--config-from-env"], env=env,
                            capture_output=True, text=True, timeout=60, cwd=d.ROOT)  # fmt: skip
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
