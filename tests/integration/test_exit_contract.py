"""Every command through each class of the exit-code contract (controller/exits.py, the README's table).

The table below has one row per command of the root parser's table (a test fails when a command is added
without one). Each row gives, for the classes that apply to it, a command line that must end in that class:

- ``usage``: an unknown flag (every command): 2;
- ``input``: a missing or malformed input, with every address pointing at a tripwire (a loopback listener that
  never answers and counts who connected): 2, and nobody connected, which shows the input is read before any
  connection is tried;
- ``unreachable``: a closed port: 3 (``health`` answers 1, the container check's "unhealthy");
- ``found``: a real ZooKeeper holding what the command must object to: 1;
- ``done``: 0;
- ``interrupted``: SIGINT while the command waits on a server that accepts and never answers: 130.

``reassign`` keeps kafka-reassign-partitions' codes (1 for every failure) and is checked against those.
Commands run as the operator runs them: a process of their own, stdout and stderr captured.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest

from controller.cli import COMMANDS, RAW_COMMANDS
from tests.netutil import closed_port
from tests.zkharness import ZkServer

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


class Tripwire:
    """A loopback port that listens and never answers: a client that connects completes the TCP handshake in the
    backlog (so :meth:`touched` sees it) and then waits for an answer that never comes."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.setblocking(False)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.sock.getsockname()[1]}"

    def touched(self) -> bool:
        """Whether anyone connected since the last call (each pending connection is taken and closed)."""
        seen = False
        while True:
            try:
                conn, _ = self.sock.accept()
            except BlockingIOError:
                return seen
            conn.close()
            seen = True

    def close(self) -> None:
        self.sock.close()


@dataclass
class Env:
    """What the command lines are built from: a closed address (or, while set, the tripwire's), a scratch
    directory, the session's ZooKeeper."""

    tmp: Path
    zk: ZkServer
    chroot: str
    tripwire: Tripwire | None = None

    @property
    def closed(self) -> str:
        return self.tripwire.address if self.tripwire is not None else f"127.0.0.1:{closed_port()}"

    @property
    def missing(self) -> str:
        return str(self.tmp / "missing" / "nothing-here.json")

    @property
    def live(self) -> str:
        return self.zk.hosts + self.chroot


Argv = Callable[[Env], list[str]]


@dataclass(frozen=True)
class Row:
    input: list[Argv]
    unreachable: Argv | None
    found: Argv | None = None
    done: Argv | None = None
    #: why a class has no case here (an offline command cannot be unreachable; a Spark run is the pipeline
    #: suite's): the table says so rather than leaving it out silently
    not_here: str = ""


def _identity_file(e: Env) -> str:
    path = e.tmp / "controller.identity"
    path.write_text("digest:controller:secret\n")
    path.chmod(0o600)
    return str(path)


def _rows(e: Env, name: str = "clean", *defects: str) -> str:
    out = e.tmp / f"{name}.parquet"
    if not out.exists():
        extra = [a for d in defects for a in ("--defect", d)]
        run(["pipeline", "synth", "-o", str(out), "--brokers", "3", "--topics", "12", *extra], check=0)
    return str(out)


def _no_master(*argv: str) -> Argv:
    """A pipeline command against a Spark master nobody listens on: refused before a JVM starts."""
    return lambda e: [*argv, _rows(e), "-o", str(e.tmp / "out-unreachable"), "--master", f"spark://{e.closed}"]


def _node_props(e: Env, zookeeper: str) -> str:
    path = e.tmp / "server.properties"
    path.write_text(
        f"broker.id=1\nzookeeper.connect={zookeeper}\nzookeeper.connection.timeout.ms=1500\n"
        "listeners=PLAINTEXT://127.0.0.1:0\n"
    )
    return str(path)


def _lock(cmd: str, zookeeper: str, *extra: str, identity: str) -> list[str]:
    return ["lockdown", cmd, "--zookeeper", zookeeper, "--controller-identity-file", identity, *extra]


def _lockdown(cmd: str) -> Argv:
    return lambda e: [
        "lockdown",
        cmd,
        "--zookeeper",
        e.live,
        "--controller-identity-file",
        _identity_file(e),
        "--backup",
        str(e.tmp / f"backup-{cmd}.json"),
    ]


def _client_config(e: Env) -> str:
    """Kafka client properties that give up on an unreachable cluster after a second."""
    path = e.tmp / "client.properties"
    path.write_text("default.api.timeout.ms=1000\n")
    return str(path)


def _backup(e: Env) -> str:
    """A backup ``lockdown apply`` wrote (revert's input), made on this test's chroot."""
    path = e.tmp / "backup-apply.json"
    if not path.exists():
        run(_lockdown("apply")(e), check=0)
    return str(path)


CONTRACT: dict[str, Row] = {
    "version": Row(input=[], unreachable=None, done=lambda e: ["version"], not_here="reads nothing"),
    "node": Row(
        input=[
            lambda e: ["node", e.missing],
            lambda e: ["node", "--set", "broker.id=x", "--set", f"zookeeper.connect={e.closed}"],
        ],
        unreachable=lambda e: ["node", _node_props(e, e.closed)],
        not_here="found/done: a node serves until stopped (tests/integration/test_stack.py)",
    ),
    "health": Row(
        input=[
            lambda e: ["health", "--bootstrap-server", "no-port-here"],
            lambda e: ["health", "--bootstrap-server", e.closed, "--command-config", e.missing],
        ],
        unreachable=lambda e: ["health", "--bootstrap-server", e.closed, "--timeout", "1"],
        not_here="done: needs a node (tests/e2e/test_health.py)",
    ),
    "up": Row(
        input=[lambda e: ["up", "--from-snapshot", e.missing]],
        unreachable=None,
        not_here="starts its own servers (tests/integration/test_stack.py, tests/e2e/test_twin.py)",
    ),
    "zk run": Row(input=[], unreachable=None, not_here="starts its own server (tests/integration/test_cli_zk.py)"),
    "zk get": Row(
        input=[lambda e: ["zk", "get", "brokers/ids", "--zookeeper", e.closed]],
        unreachable=lambda e: ["zk", "get", "/brokers", "--zookeeper", e.closed, "--timeout", "1"],
        found=lambda e: ["zk", "get", "/no/such/znode", "--zookeeper", e.live],
        done=lambda e: ["zk", "get", "/", "--zookeeper", e.live],
    ),
    "zk scram": Row(
        input=[
            lambda e: ["zk", "scram", "--zookeeper", e.closed, "--user", "u", "--password-file", e.missing],
            lambda e: [
                "zk",
                "scram",
                "--zookeeper",
                e.closed,
                "--user",
                "u",
                "--password",
                "p",
                "--mechanism",
                "SCRAM-SHA-1",
            ],
        ],
        unreachable=lambda e: [
            "zk",
            "scram",
            "--zookeeper",
            e.closed,
            "--user",
            "u",
            "--password",
            "p",
            "--timeout",
            "1",
        ],
        found=lambda e: ["zk", "scram", "--zookeeper", e.live, "--user", "nobody", "--delete"],
        done=lambda e: ["zk", "scram", "--zookeeper", e.live, "--user", "u", "--password", "p"],
    ),
    "snapshot export": Row(
        input=[
            lambda e: ["snapshot", "export", "--zookeeper", e.closed, "-o", str(e.tmp / "out.csv")],
            lambda e: [
                "snapshot",
                "export",
                "--zookeeper",
                e.closed,
                "-o",
                str(e.tmp / "o.parquet"),
                "--zk-identity-file",
                e.missing,
            ],
        ],
        unreachable=lambda e: [
            "snapshot",
            "export",
            "--zookeeper",
            e.closed,
            "-o",
            str(e.tmp / "u.parquet"),
            "--timeout",
            "1",
        ],
        done=lambda e: ["snapshot", "export", "--zookeeper", e.live, "-o", str(e.tmp / "live.parquet")],
        not_here="found: it copies what is there and objects to nothing",
    ),
    "snapshot parse": Row(
        input=[
            lambda e: ["snapshot", "parse", e.missing, "-o", str(e.tmp / "p.parquet")],
            lambda e: ["snapshot", "parse", str(e.tmp), "-o", str(e.tmp / "p.csv")],
        ],
        unreachable=None,
        not_here="reads files only; done: tests/integration/test_snapshot_files.py",
    ),
    "snapshot check": Row(
        input=[lambda e: ["snapshot", "check", e.missing]],
        unreachable=None,
        found=lambda e: ["snapshot", "check", _rows(e, "defects", "topic_v1")],
        done=lambda e: ["snapshot", "check", _rows(e)],
        not_here="unreachable: reads a file only",
    ),
    "snapshot restore": Row(
        input=[lambda e: ["snapshot", "restore", e.missing, "--zookeeper", e.closed + "/twin"]],
        unreachable=lambda e: ["snapshot", "restore", _rows(e), "--zookeeper", e.closed + "/twin", "--timeout", "1"],
        found=lambda e: ["snapshot", "restore", _rows(e), "--zookeeper", e.live],
        done=lambda e: ["snapshot", "restore", _rows(e), "--zookeeper", e.live + "/fresh"],
    ),
    "lockdown plan": Row(
        input=[
            lambda e: _lock("plan", e.closed, identity=e.missing),
            lambda e: ["lockdown", "plan", "--zookeeper", e.closed, "--controller-identity", "user:pw"],
        ],
        unreachable=lambda e: _lock("plan", e.closed, "--timeout", "1", identity=_identity_file(e)),
        done=_lockdown("plan"),
        not_here="found: a plan is what would change, not a problem",
    ),
    "lockdown apply": Row(
        input=[lambda e: _lock("apply", e.closed, "--backup", e.missing, identity=_identity_file(e))],
        unreachable=lambda e: _lock("apply", e.closed, "--timeout", "1", identity=_identity_file(e)),
        done=_lockdown("apply"),
        not_here="found: apply changes what verify would then find",
    ),
    "lockdown verify": Row(
        input=[lambda e: ["lockdown", "verify", "--zookeeper", e.closed]],
        unreachable=lambda e: _lock("verify", e.closed, "--timeout", "1", identity=_identity_file(e)),
        found=_lockdown("verify"),
        done=lambda e: _lock("verify", e.live, "--backup", _backup(e), identity=_identity_file(e)),
    ),
    "lockdown revert": Row(
        input=[lambda e: _lock("revert", e.closed, "--backup", e.missing, identity=_identity_file(e))],
        unreachable=lambda e: _lock(
            "revert", e.closed, "--backup", _backup(e), "--timeout", "1", identity=_identity_file(e)
        ),
        done=lambda e: _lock("revert", e.live, "--backup", _backup(e), identity=_identity_file(e)),
        not_here="found: revert puts back what the backup holds",
    ),
    "rehearse": Row(
        input=[
            lambda e: ["rehearse", "--from-ibp", "3.3-IV3", "--to-ibp", "3.4-IV0", "--attach", e.missing],
            lambda e: ["rehearse", "--from-ibp", "9.9-IV9", "--to-ibp", "3.4-IV0"],
        ],
        unreachable=None,
        not_here="starts its own cluster; found/done: tests/e2e/test_rehearse*.py",
    ),
    "pipeline model": Row(
        input=[lambda e: ["pipeline", "model", e.missing, "-o", str(e.tmp / "m")]],
        unreachable=_no_master("pipeline", "model"),
        not_here="Spark runs: tests/spark",
    ),
    "pipeline report": Row(
        input=[lambda e: ["pipeline", "report", e.missing, "-o", str(e.tmp / "r")]],
        unreachable=_no_master("pipeline", "report"),
        not_here="Spark runs: tests/spark",
    ),
    "pipeline plan": Row(
        input=[lambda e: ["pipeline", "plan", "rebalance", e.missing, "-o", str(e.tmp / "pl")]],
        unreachable=_no_master("pipeline", "plan", "rebalance"),
        not_here="Spark runs: tests/spark",
    ),
    "pipeline package": Row(
        input=[lambda e: ["pipeline", "package", "-o", str(e.tmp)]],
        unreachable=None,
        not_here="offline, finds nothing; done packs ~140 MB: tests/spark/test_standalone.py",
    ),
    "pipeline synth": Row(
        input=[lambda e: ["pipeline", "synth", "-o", str(e.tmp / "s.csv")]],
        unreachable=None,
        done=lambda e: ["pipeline", "synth", "-o", str(e.tmp / "s.jsonl")],
        not_here="writes made-up clusters: nothing to find",
    ),
}

#: reassign: Kafka's codes (1 for every failure), the same classes of input.
REASSIGN: dict[str, tuple[Argv, int]] = {
    "usage": (lambda e: ["reassign", "--no-such-flag"], 1),
    "input": (
        lambda e: ["reassign", "--execute", "--bootstrap-server", e.closed, "--reassignment-json-file", e.missing],
        1,
    ),
    "unreachable": (
        lambda e: ["reassign", "--list", "--bootstrap-server", e.closed, "--command-config", _client_config(e)],
        1,
    ),
}

#: Commands that open a ZooKeeper session, interrupted while connecting.
INTERRUPTIBLE: dict[str, Callable[[Env, str], list[str]]] = {
    "zk get": lambda e, a: ["zk", "get", "/", "--zookeeper", a, "--timeout", "60"],
    "snapshot export": lambda e, a: [
        "snapshot",
        "export",
        "--zookeeper",
        a,
        "-o",
        str(e.tmp / "i.parquet"),
        "--timeout",
        "60",
    ],
    "lockdown plan": lambda e, a: [
        "lockdown",
        "plan",
        "--zookeeper",
        a,
        "--controller-identity-file",
        _identity_file(e),
        "--timeout",
        "60",
    ],
}


def run(argv: list[str], *, check: int | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, "-m", "controller.cli", *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    if check is not None:
        assert result.returncode == check, (argv, result.returncode, result.stdout[-2000:], result.stderr[-2000:])
    return result


def _shown(result: subprocess.CompletedProcess[str]) -> str:
    return f"exit {result.returncode}\nstdout: {result.stdout[-1500:]}\nstderr: {result.stderr[-1500:]}"


@pytest.fixture
def env(tmp_path: Path, zk_server: ZkServer, zk_chroot: str) -> Env:
    return Env(tmp_path, zk_server, zk_chroot)


def test_every_command_has_a_row() -> None:
    paths = {c.path for c in COMMANDS}
    assert paths == set(CONTRACT), f"rows missing: {paths - set(CONTRACT)}; stale: {set(CONTRACT) - paths}"
    assert set(RAW_COMMANDS) == {"reassign"}, "a raw command needs its own rows here"
    for path, row in CONTRACT.items():
        covered = bool(row.input) and row.unreachable is not None and row.found is not None and row.done is not None
        assert covered or row.not_here, f"{path}: say in not_here why a class has no case"


@pytest.mark.parametrize("path", sorted(CONTRACT))
def test_an_unknown_flag_is_a_usage_error(path: str) -> None:
    result = run([*path.split(), "--no-such-flag"])
    assert result.returncode == 2, _shown(result)
    assert "Traceback" not in result.stderr
    assert result.stderr.rstrip().splitlines()[-1].startswith("error: bridgekeeper"), _shown(result)


@pytest.mark.parametrize("path", sorted(p for p, row in CONTRACT.items() if row.input))
def test_bad_input_is_refused_before_connecting(path: str, env: Env) -> None:
    env.tripwire = Tripwire()
    try:
        for make in CONTRACT[path].input:
            argv = make(env)
            result = run(argv, timeout=60)
            assert not env.tripwire.touched(), f"{argv}: connected before checking its input\n{_shown(result)}"
            _refused_as_input(argv, result)
    finally:
        env.tripwire.close()


def _refused_as_input(argv: list[str], result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode == 2, f"{argv}\n{_shown(result)}"
    lines = [ln for ln in result.stderr.splitlines() if ln.strip() and not ln.startswith("usage:")]
    assert lines and lines[-1].startswith(("error:", "bridgekeeper")), _shown(result)
    assert "Traceback" not in result.stderr and "kazoo" not in result.stderr, _shown(result)


@pytest.mark.parametrize("path", sorted(p for p, row in CONTRACT.items() if row.unreachable))
def test_a_closed_port_is_unreachable(path: str, env: Env) -> None:
    make = CONTRACT[path].unreachable
    assert make is not None
    argv = make(env)
    result = run(argv)
    expected = 1 if path == "health" else 3
    assert result.returncode == expected, f"{argv}\n{_shown(result)}"
    if path != "node":  # the daemon logs its own connection attempts
        errors = [ln for ln in result.stderr.splitlines() if ln.strip()]
        assert len(errors) == 1 and "127.0.0.1:" in errors[0], _shown(result)


@pytest.mark.parametrize("path", sorted(p for p, row in CONTRACT.items() if row.found))
def test_a_problem_found_is_1(path: str, env: Env) -> None:
    make = CONTRACT[path].found
    assert make is not None
    if path == "snapshot restore":  # a target that already holds Kafka's tree
        run(["snapshot", "restore", _rows(env), "--zookeeper", env.live], check=0)
    result = run(make(env))
    assert result.returncode == 1, _shown(result)
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("path", sorted(p for p, row in CONTRACT.items() if row.done))
def test_done_is_0(path: str, env: Env) -> None:
    make = CONTRACT[path].done
    assert make is not None
    if path == "lockdown revert":
        _backup(env)
    result = run(make(env))
    assert result.returncode == 0, _shown(result)


@pytest.mark.parametrize("klass", sorted(REASSIGN))
def test_reassign_keeps_kafkas_codes(klass: str, env: Env) -> None:
    make, expected = REASSIGN[klass]
    if klass == "input":
        env.tripwire = Tripwire()
    try:
        result = run(make(env), timeout=60)
        assert result.returncode == expected, _shown(result)
        if env.tripwire is not None:
            assert not env.tripwire.touched(), f"the plan file was not read first\n{_shown(result)}"
            assert "nothing-here.json" in result.stdout + result.stderr
    finally:
        if env.tripwire is not None:
            env.tripwire.close()


def test_json_mode_errors_are_one_object_on_stdout(env: Env) -> None:
    cases = [
        (["snapshot", "check", env.missing, "--format", "json"], 2),
        (["snapshot", "check", "--format", "json", "--no-such-flag", env.missing], 2),
        (
            [
                "reassign",
                "--verify",
                "--output",
                "json",
                "--bootstrap-server",
                env.closed,
                "--reassignment-json-file",
                env.missing,
            ],
            1,
        ),
        (["reassign", "--output", "json", "--no-such-flag"], 1),
    ]
    for argv, code in cases:
        result = run(argv)
        assert result.returncode == code, f"{argv}\n{_shown(result)}"
        doc = orjson.loads(result.stdout)
        assert doc["exit_code"] == code and isinstance(doc["error"], str) and doc["error"], doc


@contextlib.contextmanager
def _silent_server() -> Iterator[tuple[str, socket.socket]]:
    """A port that accepts connections and never answers: the command waits, as on a hung server."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(16)
        yield f"127.0.0.1:{s.getsockname()[1]}", s


def _interrupted(path: str, env: Env, send: Callable[[subprocess.Popen[str]], None]) -> tuple[int, str, str]:
    """The command connecting to a ZooKeeper that never answers, ``send`` called once it has connected."""
    with _silent_server() as (address, server):
        argv = [sys.executable, "-m", "controller.cli", *INTERRUPTIBLE[path](env, address)]
        # SIGINT at its default in the child even when this suite runs with it ignored (a background job)
        proc = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        try:
            server.settimeout(30)
            conn, _ = server.accept()  # the command is connecting now
            send(proc)
            out, err = proc.communicate(timeout=30)
            conn.close()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return proc.returncode, out, err


@pytest.mark.parametrize("path", sorted(INTERRUPTIBLE))
def test_ctrl_c_is_130(path: str, env: Env) -> None:
    code, out, err = _interrupted(path, env, lambda proc: proc.send_signal(signal.SIGINT))
    assert code == 130, f"exit {code}\n{out}\n{err}"
    assert "Traceback" not in err


def _to_every_other_thread(proc: subprocess.Popen[str]) -> None:
    """SIGINT through each thread but the main one: Linux gives a signal sent with a thread's id to that thread
    first, as it may give a Ctrl-C to any thread that does not block it."""
    others = [int(tid) for tid in os.listdir(f"/proc/{proc.pid}/task") if int(tid) != proc.pid]
    assert others, "the command connects from a thread of its own"
    for tid in others:
        os.kill(tid, signal.SIGINT)


@pytest.mark.parametrize("path", sorted(INTERRUPTIBLE))
def test_ctrl_c_taken_by_another_thread_is_130(path: str, env: Env) -> None:
    """Only the main thread runs Python's handlers; one that another thread took would leave the main thread
    waiting out the whole connect timeout (60 s here)."""
    code, out, err = _interrupted(path, env, _to_every_other_thread)
    assert code == 130, f"exit {code}\n{out}\n{err}"
    assert "Traceback" not in err
