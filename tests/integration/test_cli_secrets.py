"""Credentials kept off the command line (controller/credential_flags.py) in the tools that take them: ``lockdown``'s
identities from a file or the environment, ``zk scram``'s password from a file; a secret file others may read
still works but is warned about; and what is wrong with them is refused before any connection is opened
(a closed port answers within 2 s with exit 2), while a closed port itself is exit 3 with one stderr line."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from kazoo.client import KazooClient

from controller.credential_flags import VISIBLE
from controller.security.scram import ScramClient, ScramServer, credential_from_string
from zkmodel import paths

# timing: its refusals or timeouts are asserted within a wall-clock budget of a few seconds, which a second test
# worker beside it on a 2-core machine can exceed; ./dev test runs it alone (docs/testing.md).
pytestmark = [pytest.mark.integration, pytest.mark.timing]

ROOT = Path(__file__).resolve().parents[2]
#: Bad input must be refused before a connection is tried: well under the connect timeout given below.
BEFORE_CONNECTING_S = 2.0
CONTROLLER = "digest:ctl:ctl-secret"


def run(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The command as an operator runs it: its own process, the identity variables only where a test sets them."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("BRIDGEKEEPER_")}
    return subprocess.run(
        [sys.executable, "-m", "controller.cli", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**base, **(env or {})},
    )


def refused_early(*argv: str) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` (pointed at a closed port, with a long connect timeout) and check it ended in exit 2 before
    it could have tried to connect."""
    started = time.monotonic()
    done = run(*argv, "--timeout", "30")
    elapsed = time.monotonic() - started
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert elapsed < BEFORE_CONNECTING_S, f"{elapsed:.1f} s: the input was not checked before connecting"
    assert "Traceback" not in done.stderr
    return done


@pytest.fixture
def closed() -> str:
    """An address nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


def secret_file(tmp_path: Path, name: str, text: str, mode: int = 0o600) -> Path:
    path = tmp_path / name
    path.write_text(text + "\n")
    path.chmod(mode)
    return path


def plan_output_is_a_plan(done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == 0, done.stderr
    assert "/: [world:anyone:rwcda] -> [digest:ctl:…:rwcda, world:anyone:r]" in done.stdout
    assert done.stdout.rstrip().endswith("znode(s) would change")


def test_lockdown_reads_the_controller_identity_from_a_private_file(zk_hosts: str, tmp_path: Path) -> None:
    identity = secret_file(tmp_path, "controller.id", CONTROLLER)
    done = run("lockdown", "plan", "--zookeeper", zk_hosts, "--controller-identity-file", str(identity))
    plan_output_is_a_plan(done)
    assert "warning" not in done.stderr


def test_lockdown_reads_the_controller_identity_from_the_environment(zk_hosts: str) -> None:
    done = run("lockdown", "plan", "--zookeeper", zk_hosts, env={"BRIDGEKEEPER_CONTROLLER_IDENTITY": CONTROLLER})
    plan_output_is_a_plan(done)


def test_a_flag_wins_over_the_environment(zk_hosts: str) -> None:
    """The environment holds a malformed identity; the flag given is used and the variable never read."""
    done = run(
        "lockdown",
        "plan",
        "--zookeeper",
        zk_hosts,
        "--controller-identity",
        CONTROLLER,
        env={"BRIDGEKEEPER_CONTROLLER_IDENTITY": "not-an-identity"},
    )
    plan_output_is_a_plan(done)


def test_an_identity_file_others_may_read_works_with_a_warning(zk_hosts: str, tmp_path: Path) -> None:
    identity = secret_file(tmp_path, "shared.id", CONTROLLER, mode=0o644)
    done = run("lockdown", "plan", "--zookeeper", zk_hosts, "--controller-identity-file", str(identity))
    plan_output_is_a_plan(done)
    warnings = [ln for ln in done.stderr.splitlines() if ln.startswith("warning:")]
    assert len(warnings) == 1 and str(identity) in warnings[0], done.stderr
    assert CONTROLLER not in done.stderr + done.stdout  # the secret itself is never echoed


def test_identity_problems_are_refused_before_connecting(closed: str, tmp_path: Path) -> None:
    missing = tmp_path / "nothing.id"
    done = refused_early("lockdown", "plan", "--zookeeper", closed, "--controller-identity-file", str(missing))
    assert f"--controller-identity-file {missing}" in done.stderr

    done = refused_early("lockdown", "verify", "--zookeeper", closed)  # no flag, no file, no variable
    assert "$BRIDGEKEEPER_CONTROLLER_IDENTITY" in done.stderr

    empty = secret_file(tmp_path, "empty.id", "")
    done = refused_early("lockdown", "plan", "--zookeeper", closed, "--controller-identity-file", str(empty))
    assert "empty" in done.stderr

    malformed = secret_file(tmp_path, "malformed.id", "ctl:ctl-secret")  # no scheme
    done = refused_early("lockdown", "plan", "--zookeeper", closed, "--controller-identity-file", str(malformed))
    assert f"--controller-identity-file {malformed} must be digest:USER:PASSWORD" in done.stderr
    assert "ctl-secret" not in done.stderr

    identity = secret_file(tmp_path, "controller.id", CONTROLLER)
    done = refused_early(
        "lockdown",
        "plan",
        "--zookeeper",
        closed,
        "--controller-identity-file",
        str(identity),
        "--broker-identity",
        "brk:brk-secret",
    )
    assert "--broker-identity must be digest:USER:PASSWORD" in done.stderr


def test_lockdown_backups_are_checked_before_connecting(closed: str, tmp_path: Path) -> None:
    common = ("--zookeeper", closed, "--controller-identity", CONTROLLER)
    done = refused_early("lockdown", "revert", *common, "--backup", "/nonexistent")
    assert "/nonexistent" in done.stderr

    foreign = tmp_path / "not-a-backup.json"
    foreign.write_text('{"version": 1, "acls": {"/brokers": "open"}}')
    for command in ("revert", "apply"):  # apply merges into a backup already there: it must be one
        done = refused_early("lockdown", command, *common, "--backup", str(foreign))
        assert f"{foreign}: not a lockdown backup" in done.stderr
    foreign.write_text("{")
    done = refused_early("lockdown", "revert", *common, "--backup", str(foreign))
    assert f"{foreign}: not JSON" in done.stderr

    nowhere = tmp_path / "no-such-dir" / "acls.json"
    done = refused_early("lockdown", "apply", *common, "--backup", str(nowhere))
    assert f"the directory {nowhere.parent} does not exist" in done.stderr
    done = refused_early("lockdown", "apply", *common, "--backup", str(tmp_path))
    assert "is a directory" in done.stderr


def logs_in(stored: str, mechanism: str, user: str, password: str) -> bool:
    """Whether a SCRAM exchange with ``password`` succeeds against the credential ``stored``."""
    server = ScramServer(mechanism, lambda name: credential_from_string(stored) if name == user else None)
    client = ScramClient(mechanism, user, password)
    try:
        client.verify(server.evaluate(client.final(server.evaluate(client.first()))))
    except Exception:
        return False
    return server.complete


def test_zk_scram_takes_the_password_from_a_file(zk: KazooClient, zk_hosts: str, tmp_path: Path) -> None:
    password = secret_file(tmp_path, "broker.pw", "b-secret with spaces ")
    done = run(
        "zk",
        "scram",
        "--zookeeper",
        zk_hosts,
        "--user",
        "broker",
        "--mechanism",
        "SCRAM-SHA-512",
        "--password-file",
        str(password),
        "--iterations",
        "8192",
    )
    assert done.returncode == 0, done.stderr
    assert "updated SCRAM-SHA-512 credential of user 'broker'" in done.stdout
    stored = orjson.loads(zk.get(paths.entity_config("users", "broker"))[0])["config"]["SCRAM-SHA-512"]
    assert credential_from_string(stored).iterations == 8192
    assert logs_in(stored, "SCRAM-SHA-512", "broker", "b-secret with spaces ")  # the newline dropped, nothing else
    assert not logs_in(stored, "SCRAM-SHA-512", "broker", "b-secret with spaces")

    shown = run("zk", "get", paths.entity_config("users", "broker"), "--zookeeper", zk_hosts)
    assert shown.returncode == 0, shown.stderr
    assert "SCRAM-SHA-512" in orjson.loads(shown.stdout)["raw"]


def test_zk_scram_writes_as_the_identity_a_locked_tree_needs(zk_hosts: str, tmp_path: Path) -> None:
    """After lockdown only the controller identity may write credentials: without it the write is refused
    (1, naming the user), with it from a file (or the old ``--zk-digest`` spelling) it goes through."""
    identity = secret_file(tmp_path, "controller.id", CONTROLLER)
    locked = run(
        "lockdown",
        "apply",
        "--zookeeper",
        zk_hosts,
        "--controller-identity-file",
        str(identity),
        "--backup",
        str(tmp_path / "acls.json"),
    )
    assert locked.returncode == 0, locked.stderr
    scram = ("zk", "scram", "--zookeeper", zk_hosts, "--user", "alice", "--password", "a-pw")

    try:
        anonymous = run(*scram)
        assert anonymous.returncode == 1, anonymous.stderr
        assert "not authorised to write the credentials of user 'alice' as no identity" in anonymous.stderr
        assert run(*scram, "--zk-identity-file", str(identity)).returncode == 0
        assert run(*scram, "--zk-digest", "ctl:ctl-secret").returncode == 0
        assert run(*scram, env={"BRIDGEKEEPER_ZK_IDENTITY": CONTROLLER}).returncode == 0
    finally:  # open again, so that the chroot can be removed
        run(
            "lockdown",
            "revert",
            "--zookeeper",
            zk_hosts,
            "--controller-identity-file",
            str(identity),
            "--backup",
            str(tmp_path / "acls.json"),
        )


def test_zk_scram_input_is_refused_before_connecting(closed: str, tmp_path: Path) -> None:
    common = ("zk", "scram", "--zookeeper", closed, "--user", "u")
    done = refused_early(*common, "--password-file", str(tmp_path / "missing.pw"))
    assert "--password-file" in done.stderr and "missing.pw" in done.stderr
    done = refused_early(*common, "--password", "p", "--mechanism", "SCRAM-SHA-1")
    assert "invalid choice: 'SCRAM-SHA-1'" in done.stderr
    for count in ("4095", "16385"):
        done = refused_early(*common, "--password", "p", "--iterations", count)
        assert f"--iterations must be 4096-16384 for SCRAM-SHA-256, got {count}" in done.stderr
    done = refused_early(*common, "--password", "p", "--zk-identity-file", str(tmp_path / "missing.id"))
    assert "--zk-identity-file" in done.stderr
    done = refused_early(*common, "--password", "p", "--zk-digest", "no-password")
    assert "--zk-digest must be USER:PASSWORD" in done.stderr
    done = refused_early(*common, "--password", "p", "--zk-tls-config-file", str(tmp_path / "missing.properties"))
    assert "--zk-tls-config-file" in done.stderr
    refused_early(*common, "--password", "p", "--delete")  # one of the three, argparse's own refusal


@pytest.mark.parametrize(
    "argv",
    [
        ("zk", "get", "/brokers"),
        ("zk", "scram", "--user", "u", "--password", "p"),
        ("lockdown", "plan", "--controller-identity", CONTROLLER),
    ],
    ids=["zk get", "zk scram", "lockdown plan"],
)
def test_a_closed_port_is_one_line_and_exit_3(argv: tuple[str, ...], closed: str) -> None:
    done = run(*argv, "--zookeeper", closed, "--timeout", "1")
    assert done.returncode == 3, (done.stdout, done.stderr)
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert lines == [f"error: cannot connect to ZooKeeper at {closed} within 1 s"], done.stderr


def test_help_says_which_flags_other_users_can_see() -> None:
    for argv in (("lockdown", "plan"), ("lockdown", "apply"), ("zk", "scram")):
        shown = run(*argv, "--help")
        assert shown.returncode == 0
        text = " ".join(shown.stdout.split())  # argparse wraps help text at any space
        assert VISIBLE in text, argv
    assert "--zk-digest" not in run("zk", "scram", "--help").stdout  # the old spelling works but is not offered
