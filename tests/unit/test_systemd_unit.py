"""deploy/systemd: the unit passes ``systemd-analyze verify`` (and broken copies of it do not), it starts the
node as documented, gives controlled shutdown the time it may take, and the example server.properties is a
configuration the node loads without a warning, writing the log files where the unit lets it write."""

from __future__ import annotations

import inspect
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from controller.cli import build_parser
from controller.config import load_config
from controller.node_cli import cmd_node
from controller.wire.client import KafkaClient

REPO = Path(__file__).resolve().parents[2]
UNIT = REPO / "deploy" / "systemd" / "bridgekeeper.service"
EXAMPLE = REPO / "deploy" / "systemd" / "server.properties"
#: Where the unit expects the package (docs/deploy.md tells operators to install it there).
INSTALLED = "/opt/bridgekeeper/venv/bin/bridgekeeper"
#: This checkout's own entry point, so that verify finds an executable where the unit names one.
HERE = str(Path(sys.executable).parent / "bridgekeeper")


def settings(text: str) -> dict[str, dict[str, list[str]]]:
    """A unit file's ``[Section]`` -> key -> values (a key may repeat); comments and blank lines skipped."""
    out: dict[str, dict[str, list[str]]] = {}
    section: dict[str, list[str]] | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            section = out.setdefault(line[1:-1], {})
            continue
        assert section is not None, f"a setting outside any section: {line!r}"
        key, sep, value = line.partition("=")
        assert sep, f"not key=value: {line!r}"
        section.setdefault(key.strip(), []).append(value.strip())
    return out


def one(unit: dict[str, dict[str, list[str]]], section: str, key: str) -> str:
    values = unit.get(section, {}).get(key, [])
    assert len(values) == 1, f"[{section}] {key}: {values}"
    return values[0]


def verify(text: str, tmp_path: Path) -> tuple[int, str]:
    """``systemd-analyze verify`` on ``text`` with ExecStart pointing at this checkout's executable (verify checks
    that it exists): its exit code and everything it printed. It exits 0 on an unknown key or an unparsable value,
    with a warning, so the output counts too."""
    analyze = shutil.which("systemd-analyze")
    assert analyze is not None, "systemd-analyze is missing (Debian package systemd)"
    path = tmp_path / "bridgekeeper.service"
    path.write_text(text.replace(INSTALLED, HERE))
    result = subprocess.run(
        [analyze, "verify", "--man=no", str(path)], capture_output=True, text=True, timeout=60, check=False
    )
    return result.returncode, (result.stdout + result.stderr).strip()


UNIT_TEXT = UNIT.read_text()
UNIT_SETTINGS = settings(UNIT_TEXT)


def test_the_unit_passes_systemd_analyze_verify(tmp_path: Path) -> None:
    assert Path(HERE).is_file()
    assert verify(UNIT_TEXT, tmp_path) == (0, "")


@pytest.mark.parametrize(
    ("old", "new", "complaint"),
    [
        ("Restart=on-failure", "Restrat=on-failure", "Unknown key"),
        ("Restart=on-failure", "Restart=sometimes", "Failed to parse"),
        ("LimitNOFILE=100000", "LimitNOFILE=plenty", "Failed to parse"),
        (INSTALLED, "/opt/bridgekeeper/venv/bin/no-such-program", "is not executable"),
    ],
)
def test_a_broken_unit_fails_the_same_check(tmp_path: Path, old: str, new: str, complaint: str) -> None:
    assert UNIT_TEXT.count(old) == 1
    code, output = verify(UNIT_TEXT.replace(old, new), tmp_path)
    assert (code, output) != (0, "")
    assert complaint in output, output


def test_the_unit_runs_the_node_on_the_etc_properties_as_its_own_user() -> None:
    argv = shlex.split(one(UNIT_SETTINGS, "Service", "ExecStart"))
    assert argv[0] == INSTALLED
    assert argv[1:] == ["node", "--config-from-env", "/etc/bridgekeeper/server.properties"]
    args = build_parser().parse_args(argv[1:])  # what the node's own parser makes of it
    assert args.func is cmd_node and args.properties == "/etc/bridgekeeper/server.properties" and args.config_from_env
    # --config-from-env is what makes the optional environment file mean anything.
    assert one(UNIT_SETTINGS, "Service", "EnvironmentFile") == "-/etc/default/bridgekeeper"
    assert one(UNIT_SETTINGS, "Service", "User") == one(UNIT_SETTINGS, "Service", "Group") == "bridgekeeper"
    assert one(UNIT_SETTINGS, "Service", "Restart") == "on-failure"
    assert one(UNIT_SETTINGS, "Service", "RestartPreventExitStatus") == "2"  # a configuration error
    assert int(one(UNIT_SETTINGS, "Service", "LimitNOFILE")) >= 100000  # Kafka's documented minimum
    assert one(UNIT_SETTINGS, "Unit", "After") == "network-online.target"
    assert one(UNIT_SETTINGS, "Service", "NoNewPrivileges") == "yes"
    assert one(UNIT_SETTINGS, "Service", "ProtectSystem") in ("full", "strict")


def test_the_stop_timeout_covers_controlled_shutdown() -> None:
    """SIGTERM starts controlled shutdown (the node then exits 0: tests/integration/test_node_logs.py); systemd
    must not SIGKILL the node in the middle of it. Its worst case under the example's settings: every attempt
    waits out the client's timeouts for connecting and for the answer, with the capped backoff in between."""
    assert one(UNIT_SETTINGS, "Service", "KillSignal") == "SIGTERM"
    assert "SuccessExitStatus" not in UNIT_SETTINGS["Service"]
    config = load_config(str(EXAMPLE))
    client_timeout = inspect.signature(KafkaClient.__init__).parameters["timeout"].default
    attempts = config.controlled_shutdown_max_retries + 1
    backoff = min(config.controlled_shutdown_retry_backoff_ms / 1000, 1.0)
    worst = attempts * 2 * client_timeout + (attempts - 1) * backoff
    stop_timeout = one(UNIT_SETTINGS, "Service", "TimeoutStopSec")
    assert stop_timeout.isdigit() and int(stop_timeout) > worst, (stop_timeout, worst)


def test_the_example_properties_load_without_a_warning() -> None:
    config = load_config(str(EXAMPLE))
    assert config.warnings == ()  # every key is one the node reads
    assert config.zookeeper_chroot not in (None, "/kafka")  # a chroot of its own, not Kafka's usual one
    assert config.metrics_enabled and config.metrics_host == "0.0.0.0"
    assert config.is_broker and config.is_controller
    assert config.log_dir == "/var/log/bridgekeeper"
    # The unit creates that directory for its user and keeps it writable under ProtectSystem.
    assert one(UNIT_SETTINGS, "Service", "LogsDirectory") == "bridgekeeper"
    assert one(UNIT_SETTINGS, "Service", "ReadWritePaths") == config.log_dir
