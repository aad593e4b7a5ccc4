"""``bridgekeeper reassign`` reads and checks its files before it connects anywhere, as Kafka's tool does, and
with ``--output json`` reports every failure as one JSON object on stdout.

The subprocess cases run the command as an operator does, against a closed port: a file that cannot be used
must be reported in well under the 30 s a bootstrap would take to give up. The in-process cases replace the
admin client, to check what a run prints once it is past its inputs.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import orjson
import pytest

from migrate.reassign import admin as admin_module
from migrate.reassign import command
from migrate.reassign.inputs import read_inputs
from migrate.reassign.legacy import DEPRECATED, NEEDS_BOOTSTRAP, check_inputs
from migrate.reassign.options import parse_options
from migrate.reassign.output import ToolError
from migrate.reassign.plan_files import PlanFileError

# timing: its refusals or timeouts are asserted within a wall-clock budget of a few seconds, which a second test
# worker beside it on a 2-core machine can exceed; ./dev test runs it alone (docs/testing.md).
pytestmark = pytest.mark.timing

ROOT = Path(__file__).resolve().parents[2]
#: Far below the 30 s bootstrap timeout, and far above a fresh interpreter's start on a loaded 2-core machine (up
#: to ~3 s beside another test worker): the file was read before any connection was tried.
REFUSED_WITHIN_S = 10.0
BS = ["--bootstrap-server", "b:9092"]
PLAN = '{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2]}]}'


def reassign(*args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    """The command in a fresh interpreter (its imports included in the time), and how long it took."""
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "controller.cli", "reassign", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    return result, time.monotonic() - started


def shown(result: subprocess.CompletedProcess[str]) -> str:
    return f"exit {result.returncode}\nstdout: {result.stdout[-1500:]}\nstderr: {result.stderr[-1500:]}"


@pytest.fixture
def closed() -> str:
    """An address nothing listens on: a port the kernel just handed out, released again."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"127.0.0.1:{port}"


@pytest.fixture
def plan(tmp_path: Path) -> Path:
    path = tmp_path / "plan.json"
    path.write_text(PLAN)
    return path


def only_json(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """stdout as exactly one JSON object (orjson refuses anything after it), with the process's exit code."""
    doc = orjson.loads(result.stdout)
    assert isinstance(doc, dict), shown(result)
    assert result.stdout.count("\n") == 1, shown(result)
    assert doc["exit_code"] == result.returncode != 0, shown(result)
    assert isinstance(doc["error"], str) and doc["error"], shown(result)
    return doc


# ---- inputs before connections (subprocess) ---------------------------------------------------------------


@pytest.mark.parametrize(
    "action",
    [
        ["--execute", "--reassignment-json-file"],
        ["--verify", "--reassignment-json-file"],
        ["--cancel", "--reassignment-json-file"],
        ["--generate", "--broker-list", "1,2", "--topics-to-move-json-file"],
    ],
    ids=["execute", "verify", "cancel", "generate"],
)
def test_a_missing_file_is_reported_before_connecting(action: list[str], closed: str, tmp_path: Path) -> None:
    missing = tmp_path / "nothing-here.json"
    result, elapsed = reassign(*action, str(missing), "--bootstrap-server", closed)
    assert result.returncode == 1, shown(result)
    assert elapsed < REFUSED_WITHIN_S, f"{elapsed:.1f} s: the file was not read first\n{shown(result)}"
    # Kafka's Utils.readFileAsString: "Unable to read file PATH" (ours adds the reason), printed by main on stdout.
    assert result.stdout == f"Error: Unable to read file {missing} (No such file or directory)\n", shown(result)
    assert result.stderr == ""


def test_a_missing_file_is_reported_before_zookeeper_is_opened(closed: str, tmp_path: Path) -> None:
    missing = tmp_path / "nothing-here.json"
    result, elapsed = reassign("--verify", "--zookeeper", closed, "--reassignment-json-file", str(missing))
    assert result.returncode == 1, shown(result)
    assert elapsed < REFUSED_WITHIN_S, f"{elapsed:.1f} s: the file was not read first\n{shown(result)}"
    assert result.stdout.splitlines() == [
        DEPRECATED,
        f"Error: Unable to read file {missing} (No such file or directory)",
    ]


def test_malformed_json_is_reported_before_connecting(closed: str, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"version":1,"partitions":[')
    result, elapsed = reassign("--execute", "--bootstrap-server", closed, "--reassignment-json-file", str(bad))
    assert result.returncode == 1, shown(result)
    assert elapsed < REFUSED_WITHIN_S, f"{elapsed:.1f} s: the file was not parsed first\n{shown(result)}"
    assert result.stdout.startswith("Error: The reassignment JSON is not valid JSON: line 1, column "), shown(result)


def test_a_plan_execute_refuses_is_reported_before_connecting(closed: str, tmp_path: Path) -> None:
    empty = tmp_path / "empty.json"
    empty.write_text('{"version":1,"partitions":[]}')
    result, elapsed = reassign("--execute", "--bootstrap-server", closed, "--reassignment-json-file", str(empty))
    assert (result.returncode, result.stdout) == (1, "Error: Partition reassignment list cannot be empty\n")
    assert elapsed < REFUSED_WITHIN_S, f"{elapsed:.1f} s\n{shown(result)}"


def test_a_missing_command_config_is_reported_before_connecting(closed: str, plan: Path, tmp_path: Path) -> None:
    missing = tmp_path / "admin.properties"
    result, elapsed = reassign(
        "--execute",
        "--bootstrap-server",
        closed,
        "--reassignment-json-file",
        str(plan),
        "--command-config",
        str(missing),
    )
    assert result.returncode == 1, shown(result)
    assert elapsed < REFUSED_WITHIN_S, f"{elapsed:.1f} s: the properties were not read first\n{shown(result)}"
    assert result.stdout == f"Error: {missing} (No such file or directory)\n", shown(result)


def test_the_command_config_is_read_before_the_plan(closed: str, tmp_path: Path) -> None:
    # Kafka's main loads the properties, then handleAction reads the JSON file.
    missing = tmp_path / "admin.properties"
    result, _ = reassign(
        "--verify",
        "--bootstrap-server",
        closed,
        "--reassignment-json-file",
        str(tmp_path / "no-plan.json"),
        "--command-config",
        str(missing),
    )
    assert result.stdout == f"Error: {missing} (No such file or directory)\n", shown(result)


def test_an_unreachable_cluster_is_one_line_naming_the_address_and_the_timeout(closed: str, tmp_path: Path) -> None:
    config = tmp_path / "admin.properties"
    config.write_text("default.api.timeout.ms=1000\n")  # how long Kafka's admin calls wait for a broker
    result, _ = reassign("--list", "--bootstrap-server", closed, "--command-config", str(config))
    assert result.returncode == 1, shown(result)
    assert result.stdout == (
        f"Error: org.apache.kafka.common.errors.TimeoutException: Unable to bootstrap from {closed} within 1 s\n"
    )
    assert result.stderr == "", "kafka-python's log records stay off stderr without --verbose"
    verbose, _ = reassign("--list", "--bootstrap-server", closed, "--command-config", str(config), "--verbose")
    assert verbose.stdout == result.stdout
    assert "kafka" in verbose.stderr, "--verbose shows the client's log records"


# ---- --output json (subprocess) ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["--output", "json", "--no-such-flag"],
        ["--no-such-flag", "--output=json"],
        ["--output", "json", "--list"],  # no --bootstrap-server: a usage error, the table goes to stderr
        ["--output", "json", *BS],  # no action
        ["--output", "json", "--list", *BS, "--throttle", "1"],
        # Kafka prints this one on stdout in text mode:
        ["--output", "json", "--execute", *BS, "--reassignment-json-file", "p", "--throttle", "fast"],
        ["--output", "json", "--output", "json", "--list", *BS],
        ["--output", "json", "--help"],
    ],
)
def test_a_usage_error_in_json_mode_is_one_object_on_stdout(argv: list[str]) -> None:
    result, elapsed = reassign(*argv)
    doc = only_json(result)
    assert set(doc) == {"error", "exit_code"} and doc["exit_code"] == 1
    assert doc["error"] in result.stderr, "the person at the terminal still reads Kafka's text"
    assert elapsed < REFUSED_WITHIN_S


def test_json_mode_names_the_unrecognized_option_without_the_jvms_framing() -> None:
    result, _ = reassign("--output", "json", "--no-such-flag")
    assert only_json(result)["error"] == "no-such-flag is not a recognized option"
    assert result.stderr.startswith('Exception in thread "main" joptsimple.UnrecognizedOptionException: ')


def test_a_missing_file_in_json_mode_is_one_object_on_stdout(closed: str, tmp_path: Path) -> None:
    missing = tmp_path / "nothing-here.json"
    result, elapsed = reassign(
        "--execute", "--output", "json", "--bootstrap-server", closed, "--reassignment-json-file", str(missing)
    )
    doc = only_json(result)
    assert doc == {"error": f"Unable to read file {missing} (No such file or directory)", "exit_code": 1}
    assert result.stderr == f"Error: {doc['error']}\n"
    assert elapsed < REFUSED_WITHIN_S


def test_a_bad_plan_over_zookeeper_in_json_mode_is_one_object_on_stdout(closed: str, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    result, elapsed = reassign(
        "--verify", "--zookeeper", closed, "--reassignment-json-file", str(bad), "--output", "json"
    )
    assert only_json(result)["error"].startswith("The reassignment JSON is not valid JSON: ")
    assert result.stderr.startswith(DEPRECATED + "\n")
    assert elapsed < REFUSED_WITHIN_S


def test_version_in_json_mode_is_no_failure() -> None:
    result, _ = reassign("--version", "--output", "json")
    assert result.returncode == 0 and "error" not in result.stdout and result.stdout.strip()


# ---- past the inputs (in-process, with a stand-in admin client) -------------------------------------------


class FakeAdmin:
    """The admin client a run builds once its inputs are read: records its settings, answers --list."""

    settings: ClassVar[dict[str, Any]] = {}
    raise_on_list: ClassVar[BaseException | None] = None

    def __init__(self, settings: dict[str, Any]) -> None:
        FakeAdmin.settings = dict(settings)

    def __enter__(self) -> FakeAdmin:
        return self

    def __exit__(self, *_exc: object) -> None:
        pass

    def list_reassignments(self, tps: Any = None) -> dict[Any, Any]:
        if FakeAdmin.raise_on_list is not None:
            raise FakeAdmin.raise_on_list
        return {}


@pytest.fixture
def fake_admin(monkeypatch: pytest.MonkeyPatch) -> Iterator[type[FakeAdmin]]:
    monkeypatch.setattr(admin_module, "ReassignAdmin", FakeAdmin)
    FakeAdmin.settings, FakeAdmin.raise_on_list = {}, None
    yield FakeAdmin
    FakeAdmin.raise_on_list = None


def test_a_run_that_succeeds_in_json_mode_prints_its_document_unchanged(
    fake_admin: type[FakeAdmin], capsys: pytest.CaptureFixture[str]
) -> None:
    assert command.main(["--list", "--bootstrap-server", "b:9092", "--output", "json"]) == 0
    out, err = capsys.readouterr()
    assert (out, err) == ('{"reassignments":[]}\n', "")
    assert command.main(["--list", "--bootstrap-server", "b:9092"]) == 0
    assert capsys.readouterr().out == "No partition reassignments found.\n"


def test_a_failure_after_connecting_in_json_mode_carries_the_exit_code(
    fake_admin: type[FakeAdmin], capsys: pytest.CaptureFixture[str]
) -> None:
    fake_admin.raise_on_list = admin_module.AdminError("org.apache.kafka.common.errors.TimeoutException: late")
    assert command.main(["--list", "--bootstrap-server", "b:9092", "--output", "json"]) == 1
    out, err = capsys.readouterr()
    assert orjson.loads(out) == {"error": "org.apache.kafka.common.errors.TimeoutException: late", "exit_code": 1}
    assert err == "Error: org.apache.kafka.common.errors.TimeoutException: late\n"


def test_an_interrupted_run_exits_130_and_says_so_in_json(
    fake_admin: type[FakeAdmin], capsys: pytest.CaptureFixture[str]
) -> None:
    fake_admin.raise_on_list = KeyboardInterrupt()
    assert command.main(["--list", "--bootstrap-server", "b:9092", "--output", "json"]) == 130
    assert orjson.loads(capsys.readouterr().out) == {"error": "Interrupted", "exit_code": 130}
    assert command.main(["--list", "--bootstrap-server", "b:9092"]) == 130
    assert capsys.readouterr().out == "Error: Interrupted\n"


def test_the_admin_client_waits_for_the_cluster_as_long_as_the_command_config_says(
    fake_admin: type[FakeAdmin], tmp_path: Path
) -> None:
    assert command.main(["--list", "--bootstrap-server", "a:1,b:2"]) == 0
    assert fake_admin.settings["bootstrap_servers"] == ["a:1", "b:2"]
    assert fake_admin.settings["bootstrap_timeout_ms"] == 30_000
    config = tmp_path / "admin.properties"
    config.write_text("default.api.timeout.ms=2500\n")
    assert command.main(["--list", "--bootstrap-server", "a:1", "--command-config", str(config)]) == 0
    assert fake_admin.settings["bootstrap_timeout_ms"] == 2500


def test_the_unreachable_line_names_every_server_and_the_timeout() -> None:
    text = admin_module.unreachable_text({"bootstrap_servers": ["a:1", "b:2"], "bootstrap_timeout_ms": 1500})
    assert text == "org.apache.kafka.common.errors.TimeoutException: Unable to bootstrap from a:1,b:2 within 1.5 s"


def test_an_unreachable_zookeeper_is_one_line_naming_the_address_and_the_timeout(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], closed: str, plan: Path
) -> None:
    monkeypatch.setattr(command, "CONNECT_TIMEOUT_S", 1.0)
    assert command.main(["--verify", "--zookeeper", closed, "--reassignment-json-file", str(plan)]) == 1
    out, err = capsys.readouterr()
    assert out.splitlines() == [DEPRECATED, f"Error: could not connect to ZooKeeper at {closed} within 1 s"]
    assert err == "", "kazoo's reconnect records stay off stderr without --verbose"


# ---- read_inputs ------------------------------------------------------------------------------------------


def test_generate_reads_the_topics_file_before_it_checks_the_broker_list(tmp_path: Path) -> None:
    # handleAction reads the file, then parseGenerateAssignmentArgs refuses a repeated broker.
    missing = tmp_path / "topics.json"
    opts = parse_options(
        [
            "--generate",
            "--bootstrap-server",
            "b:9092",
            "--broker-list",
            "1,1",
            "--topics-to-move-json-file",
            str(missing),
        ]
    )
    with pytest.raises(PlanFileError, match="Unable to read file"):
        read_inputs(opts)
    missing.write_text('{"topics":[{"topic":"a"}]}')
    with pytest.raises(ToolError, match=r"Broker list contains duplicate entries: \[1\]"):
        read_inputs(opts)


def test_inputs_hold_what_each_action_reads(tmp_path: Path) -> None:
    topics = tmp_path / "topics.json"
    topics.write_text('{"topics":[{"topic":"a"},{"topic":"b"}],"version":1}')
    generate = read_inputs(
        parse_options(
            ["--generate", "--zookeeper", "z:2181", "--broker-list", "1,2", "--topics-to-move-json-file", str(topics)]
        )
    )
    assert (generate.topics, generate.planned, generate.settings) == (("a", "b"), (), None)
    plan = tmp_path / "plan.json"
    plan.write_text(PLAN)
    verify = read_inputs(
        parse_options(["--verify", "--bootstrap-server", "b:9092", "--reassignment-json-file", str(plan)])
    )
    assert [(p.topic, p.partition, p.replicas) for p in verify.planned] == [("t", 0, (1, 2))]
    assert verify.settings is not None and verify.settings["client_id"] == "reassign-partitions-tool"


def test_only_execute_makes_executes_checks_when_reading(tmp_path: Path) -> None:
    plan = tmp_path / "twice.json"
    plan.write_text('{"partitions":[{"topic":"t","partition":0,"replicas":[1,1]}]}')
    common = ["--bootstrap-server", "b:9092", "--reassignment-json-file", str(plan)]
    with pytest.raises(PlanFileError, match="may not contain duplicate entries"):
        read_inputs(parse_options(["--execute", *common]))
    assert len(read_inputs(parse_options(["--verify", *common])).planned) == 1
    assert len(read_inputs(parse_options(["--cancel", *common])).planned) == 1


def test_the_legacy_path_refuses_log_dir_moves_from_the_file_alone(tmp_path: Path) -> None:
    plan = tmp_path / "dirs.json"
    plan.write_text('{"partitions":[{"topic":"t","partition":0,"replicas":[1],"log_dirs":["/data"]}]}')
    for action in ("--execute", "--verify"):
        opts = parse_options([action, "--zookeeper", "z:2181", "--reassignment-json-file", str(plan)])
        with pytest.raises(ToolError, match=NEEDS_BOOTSTRAP):
            check_inputs(opts, read_inputs(opts))
    anywhere = tmp_path / "any.json"
    anywhere.write_text('{"partitions":[{"topic":"t","partition":0,"replicas":[1],"log_dirs":["any"]}]}')
    opts = parse_options(["--execute", "--zookeeper", "z:2181", "--reassignment-json-file", str(anywhere)])
    check_inputs(opts, read_inputs(opts))
