"""A node process's log files (``bridgekeeper.log.dir``): Kafka's server.log / controller.log / state-change.log
split, size-based rotation, and levels from ``KAFKA_LOG4J_*`` as Kafka's image reads them."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka.admin import KafkaAdminClient, NewTopic

from controller.cli import build_parser
from controller.exits import UsageError
from controller.logs import levels_from_env
from testing.stack import listener_ports
from tests.integration.cluster import wait_for
from tests.stackutil import read_until

pytestmark = pytest.mark.integration
BIN = [sys.executable, "-m", "controller.cli", "node"]
#: Kafka's variables; anything of the test runner's own KAFKA_* environment would become node properties.
CLEAN_ENV = {k: v for k, v in os.environ.items() if not k.startswith("KAFKA_")}


@contextlib.contextmanager
def node(
    zk_hosts: str, tmp_path: Path, *extra: str, env: dict[str, str] | None = None
) -> Iterator[tuple[subprocess.Popen[str], int]]:
    """A node process (broker 1, controller candidate) and its client port; SIGTERM at the end, SIGKILL if that
    does not stop it. Its stderr goes to ``tmp_path/stderr``."""
    settings = {
        "broker.id": "1",
        "zookeeper.connect": zk_hosts,
        "listeners": "PLAINTEXT://127.0.0.1:0",
        "bridgekeeper.metrics.port": "-1",
        # A single node cannot move its leadership away: its controlled shutdown retries without waiting long.
        "controlled.shutdown.retry.backoff.ms": "50",
    }
    args = [arg for key, value in settings.items() for arg in ("--override", f"{key}={value}")]
    with (tmp_path / "stderr").open("w") as stderr:
        proc = subprocess.Popen(
            [*BIN, *args, *extra], stdout=subprocess.PIPE, stderr=stderr, text=True, env={**CLEAN_ENV, **(env or {})}
        )
    try:
        try:
            ready = read_until(proc, "NODE-READY", timeout=60)[-1]
        except AssertionError as exc:
            raise AssertionError(f"{exc}; stderr: {text(tmp_path / 'stderr')}") from None
        # NODE-READY is printed just before the node installs its SIGTERM handler: wait for the handler.
        wait_for(lambda: catches_sigterm(proc.pid), what="the node's SIGTERM handler")
        yield proc, listener_ports(ready)["PLAINTEXT"]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def catches_sigterm(pid: int) -> bool:
    """Whether the process has a handler for SIGTERM (Linux: the SigCgt mask of /proc/PID/status)."""
    status = Path(f"/proc/{pid}/status").read_text()
    caught = next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:"))
    return bool(int(caught, 16) >> (signal.SIGTERM - 1) & 1)


def text(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""


def create_topic(port: int, name: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=f"127.0.0.1:{port}", request_timeout_ms=30000)
    try:
        admin.create_topics([NewTopic(name, num_partitions=2, replication_factor=1)])
    finally:
        admin.close()


def test_server_controller_and_state_change_logs(zk_hosts: str, tmp_path: Path) -> None:
    logs = tmp_path / "logs" / "nested"  # created by the node, parents too, as log4j creates its files' parents
    with node(zk_hosts, tmp_path, "--override", f"bridgekeeper.log.dir={logs}") as (_proc, port):
        assert "node 1 started in cluster" in text(logs / "server.log")
        wait_for(lambda: "elected controller" in text(logs / "controller.log"), what="the election in controller.log")
        create_topic(port, "audit")
        wait_for(lambda: "changed partition audit-1 " in text(logs / "state-change.log"), what="state-change.log")
    state_change = text(logs / "state-change.log")
    assert "changed partition audit-0 from NewPartition to OnlinePartition with state (leader=1" in state_change
    controller = text(logs / "controller.log")
    assert "created topic audit" in controller
    assert "changed partition" not in controller  # state changes have their own file, as in Kafka
    server = text(logs / "server.log")
    stderr = text(tmp_path / "stderr")
    for out in (server, stderr):
        # Every record of the root goes to stderr and server.log alike; the controller's INFO records do not.
        assert "node 1 started in cluster" in out and "controlled shutdown: broker 1 still leads" in out
        assert "elected controller" not in out and "changed partition" not in out


def test_log_files_roll_over_by_size(zk_hosts: str, tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    limit = 400
    sizes = ("--override", f"bridgekeeper.log.max.bytes={limit}", "--override", "bridgekeeper.log.backup.count=2")
    with node(zk_hosts, tmp_path, "--override", f"bridgekeeper.log.dir={logs}", *sizes, "--log-level", "DEBUG"):
        wait_for(lambda: (logs / "server.log.2").exists(), what="server.log.2")
    names = sorted(p.name for p in logs.iterdir())
    assert {"server.log", "server.log.1", "server.log.2"} <= set(names)
    assert "server.log.3" not in names, names  # backup.count=2 keeps two
    for path in logs.glob("server.log*"):
        lines = path.read_text().splitlines()
        # A file grows past the limit only by a record that alone is larger.
        assert path.stat().st_size <= limit or len(lines) == 1, (path.name, path.stat().st_size, lines)


def test_root_level_and_loggers_from_kafkas_variables(zk_hosts: str, tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    env = {
        "KAFKA_LOG4J_ROOT_LOGLEVEL": "WARN",
        "KAFKA_LOG4J_LOGGERS": "state.change.logger=WARN,kafka.log.LogCleaner=INFO,kafka.log.LogCleaner=DEBUG",
        "KAFKA_BRIDGEKEEPER_LOG_DIR": str(logs),
    }
    with node(zk_hosts, tmp_path, "--config-from-env", env=env) as (_proc, port):
        wait_for(lambda: "elected controller" in text(logs / "controller.log"), what="the election in controller.log")
        create_topic(port, "quiet")
        wait_for(lambda: "created topic quiet" in text(logs / "controller.log"), what="the topic in controller.log")
    server = text(logs / "server.log")
    assert server, "nothing in server.log"
    assert " INFO " not in server  # the root at WARN: the startup line and controlled shutdown's are left out
    # An unknown logger name is named once and ignored.
    assert server.count("no logger 'kafka.log.LogCleaner' here") == 1, server
    # controller.log keeps its INFO records under a WARN root, as Kafka's kafka.controller logger has its own level;
    # state.change.logger=WARN (mapped to ours) leaves the state changes out.
    assert text(logs / "state-change.log") == ""


def test_log_level_flag_wins_over_the_environment(zk_hosts: str, tmp_path: Path) -> None:
    env = {"KAFKA_LOG4J_ROOT_LOGLEVEL": "ERROR"}
    with node(zk_hosts, tmp_path, "--config-from-env", "--log-level", "INFO", env=env):
        pass
    assert "node 1 started in cluster" in text(tmp_path / "stderr")  # no log dir: stderr, at the flag's INFO


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"KAFKA_LOG4J_ROOT_LOGLEVEL": "LOUD"}, "KAFKA_LOG4J_ROOT_LOGLEVEL: unknown log level 'LOUD'"),
        ({"KAFKA_LOG4J_LOGGERS": "kafka.controller"}, "KAFKA_LOG4J_LOGGERS: expected logger=LEVEL entries"),
        ({"KAFKA_LOG4J_LOGGERS": "kafka=INFO,kazoo=NOISY"}, "KAFKA_LOG4J_LOGGERS (kazoo): unknown log level 'NOISY'"),
    ],
)
def test_a_bad_level_is_a_usage_error(monkeypatch: pytest.MonkeyPatch, env: dict[str, str], named: str) -> None:
    """Exit 2, decided before any connection (the ZooKeeper address is a closed port, never tried)."""
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    args = build_parser().parse_args(
        ["node", "--config-from-env", "--override", "broker.id=1", "--override", "zookeeper.connect=127.0.0.1:1"]
    )
    with pytest.raises(UsageError, match=re.escape(named)):
        args.func(args)


def test_an_unwritable_log_dir_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a directory")
    args = build_parser().parse_args(
        [
            "node",
            "--override",
            "broker.id=1",
            "--override",
            "zookeeper.connect=127.0.0.1:1",
            "--override",
            f"bridgekeeper.log.dir={tmp_path / 'file'}",
        ]
    )
    with pytest.raises(UsageError, match=re.escape(f"cannot write log files in {tmp_path / 'file'}")):
        args.func(args)


MAPPED = "kafka.controller=TRACE, state.change.logger=ERROR,org.apache.zookeeper=INFO"
MAPPED_TO = {
    "controller.active": logging.DEBUG,
    "controller.active.state_changes": logging.ERROR,
    "kazoo": logging.INFO,
}
#: Our own names are taken as they are; one unknown name is one warning, however often it is named.
OWN_AND_UNKNOWN = "controller.zk.session=DEBUG,kafka.network=WARN,kafka.network=OFF"


@pytest.mark.parametrize(
    ("variables", "root", "loggers", "warnings"),
    [
        ({}, None, {}, 0),
        ({"KAFKA_LOG4J_ROOT_LOGLEVEL": " warn "}, logging.WARNING, {}, 0),  # log4j reads level names in any case
        ({"KAFKA_LOG4J_LOGGERS": MAPPED}, None, MAPPED_TO, 0),
        ({"KAFKA_LOG4J_LOGGERS": OWN_AND_UNKNOWN}, None, {"controller.zk.session": logging.DEBUG}, 1),
    ],
)
def test_levels_from_kafkas_variables(
    variables: dict[str, str], root: int | None, loggers: dict[str, int], warnings: int
) -> None:
    levels = levels_from_env(variables)
    assert (levels.root, dict(levels.loggers), len(levels.warnings)) == (root, loggers, warnings)
