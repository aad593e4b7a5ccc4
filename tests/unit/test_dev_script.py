"""``./dev`` as a developer runs it, with the host's package manager and service manager replaced by recorders:
``./dev up`` installs only what ``bridgekeeper up`` needs, neither command touches a service of the host, and the
venv's stamps never reinstall a level already installed (nor need the network in this test).

Every run uses a venv made here (``BRIDGEKEEPER_VENV``): its ``python`` records pip calls instead of running them,
its ``bridgekeeper`` runs the real command line, so the checkout's own ``.venv`` is never installed into.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEV = ROOT / "dev"
#: Packages only the tests use: ``./dev up`` must never install them.
TEST_ONLY = ("kcat", "prometheus", "chromium", "docker-compose")
#: A service verb on any unit (systemctl VERB UNIT, service UNIT VERB).
SERVICE_VERBS = ("stop", "start", "restart", "reload", "disable", "enable", "mask", "kill")


def _script(path: Path, body: str) -> None:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)


def recorders(directory: Path, log: Path) -> Path:
    """``systemctl``, ``service``, ``apt-get`` and ``sudo`` that append their argv to ``log``. ``systemctl
    is-active`` says "active" (exit 0), so a script that stops services when they run would try here."""
    directory.mkdir()
    for name in ("systemctl", "service", "apt-get"):
        _script(directory / name, f'echo "{name} $*" >> "{log}"\nexit 0\n')
    _script(directory / "sudo", f'echo "sudo $*" >> "{log}"\nexec "$@"\n')
    return directory


def stamp_name(level: str) -> str:
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()[:16]
    return f".installed-{digest}-{level}"


def fake_venv(directory: Path, pip_log: Path, stamps: tuple[str, ...] = ()) -> Path:
    """A venv whose ``python`` only records what it was asked (pip installs), whose ``bridgekeeper`` is the real
    command line, and whose lint and test tools succeed at once (so ``./dev test`` reaches its end in a second)."""
    bin_dir = directory / "bin"
    bin_dir.mkdir(parents=True)
    _script(bin_dir / "python", f'echo "python $*" >> "{pip_log}"\nexit 0\n')
    _script(bin_dir / "bridgekeeper", f'exec "{sys.executable}" -m controller.cli "$@"\n')
    for tool in ("ruff", "mypy", "lint-imports", "pytest"):
        _script(bin_dir / tool, f'echo "{tool} $*" >> "{pip_log}"\nexit 0\n')
    for level in stamps:
        (directory / stamp_name(level)).touch()
    return directory


def dev(*args: str, path: str, venv: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": path, "BRIDGEKEEPER_VENV": str(venv), "PYTHONPATH": str(ROOT)}
    env.pop("PYTHON", None)
    return subprocess.run([str(DEV), *args], capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)


def service_calls(log: Path) -> list[str]:
    lines = log.read_text().splitlines() if log.exists() else []
    calls = []
    for line in lines:
        words = line.split()
        if words and words[0] == "sudo":
            words = words[1:]
        if words and words[0] in ("systemctl", "service") and any(v in words[1:] for v in SERVICE_VERBS):
            calls.append(line)
    return calls


def test_up_help_runs_the_real_command_and_leaves_host_services_alone(tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    fakes = recorders(tmp_path / "fakes", log)
    venv = fake_venv(tmp_path / "venv", tmp_path / "pip.log", stamps=("test",))  # as ./dev test leaves it
    result = dev("up", "--help", path=f"{fakes}:{os.environ['PATH']}", venv=venv)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: bridgekeeper up "), result.stdout
    assert "--base-port" in result.stdout and "--from-snapshot" in result.stdout
    assert service_calls(log) == [], log.read_text()
    assert not (tmp_path / "pip.log").exists()  # a venv ./dev test set up serves ./dev up: nothing reinstalled


def test_up_installs_none_of_the_test_tools(tmp_path: Path) -> None:
    """A PATH with none of the test tools (nor java, so the package manager is asked for something): the
    packages ./dev up asks for are its own only."""
    log = tmp_path / "calls.log"
    fakes = recorders(tmp_path / "fakes", log)
    tools = tmp_path / "tools"
    tools.mkdir()
    for name in ("bash", "env", "dirname", "id", "sha256sum", "cut", "rm", "touch", "python3"):
        found = shutil.which(name)
        assert found, f"{name} is not on this machine's PATH"
        (tools / name).symlink_to(found)
    assert not any((tools / name).exists() for name in (*TEST_ONLY, "java"))
    venv = fake_venv(tmp_path / "venv", tmp_path / "pip.log", stamps=("test",))
    result = dev("up", "--help", path=f"{fakes}:{tools}", venv=venv)
    assert result.returncode == 0, result.stderr
    installs = [line for line in log.read_text().splitlines() if " install " in f" {line} "]
    assert installs and "default-jre-headless" in installs[0], log.read_text()  # the one package up needs here
    for package in TEST_ONLY:
        assert not re.search(rf"\b{re.escape(package)}\b", log.read_text()), f"./dev up installed {package}"
    assert service_calls(log) == []


def test_the_script_has_no_service_commands() -> None:
    text = DEV.read_text()
    code = "\n".join(line.split("#", 1)[0] for line in text.splitlines())
    assert not re.search(r"\b(systemctl|service|invoke-rc\.d)\b", code), "./dev must not manage host services"


@pytest.mark.parametrize(
    ("stamps", "installed"),
    [
        ((), "-e ."),  # a new venv: the project without extras
        (("base",), None),  # ./dev up ran before
        (("test",), None),  # ./dev test ran before: test includes base
    ],
)
def test_up_installs_the_base_level_once(tmp_path: Path, stamps: tuple[str, ...], installed: str | None) -> None:
    fakes = recorders(tmp_path / "fakes", tmp_path / "calls.log")
    pip_log = tmp_path / "pip.log"
    venv = fake_venv(tmp_path / "venv", pip_log, stamps=stamps)
    result = dev("up", "--help", path=f"{fakes}:{os.environ['PATH']}", venv=venv)
    assert result.returncode == 0, result.stderr
    pip = [line for line in (pip_log.read_text().splitlines() if pip_log.exists() else []) if " -e " in line]
    assert [line.split(" -e ", 1)[1] for line in pip] == ([installed.removeprefix("-e ")] if installed else [])


def test_levels_go_up_and_never_down(tmp_path: Path) -> None:
    """up (base), then test ([test]), then up again: the last one installs nothing; a changed pyproject.toml
    (a stamp of another hash) installs again."""
    fakes = recorders(tmp_path / "fakes", tmp_path / "calls.log")
    pip_log = tmp_path / "pip.log"
    venv = fake_venv(tmp_path / "venv", pip_log)
    path = f"{fakes}:{os.environ['PATH']}"

    def installs() -> list[str]:
        lines = pip_log.read_text().splitlines() if pip_log.exists() else []
        return [line.split(" -e ", 1)[1] for line in lines if line.startswith("python ") and " -e " in line]

    assert dev("up", "--help", path=path, venv=venv).returncode == 0
    assert installs() == ["."]
    tested = dev("test", "-q", path=path, venv=venv)
    assert tested.returncode == 0, tested.stderr
    assert installs() == [".", ".[test]"]
    ran = pip_log.read_text()  # ./dev test ran its steps after installing: both parts, each with the args given
    assert "pytest -n 2 --dist loadfile --part parallel -q" in ran
    assert "pytest --part serial -q" in ran
    assert dev("up", "--help", path=path, venv=venv).returncode == 0
    assert installs() == [".", ".[test]"]
    assert sorted(p.name for p in venv.glob(".installed-*")) == [stamp_name("test")]
    (venv / stamp_name("test")).rename(venv / ".installed-0000000000000000-test")
    assert dev("up", "--help", path=path, venv=venv).returncode == 0
    assert installs() == [".", ".[test]", "."]
    assert service_calls(tmp_path / "calls.log") == []
