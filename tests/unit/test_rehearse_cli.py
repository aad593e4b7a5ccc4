"""``bridgekeeper rehearse`` refuses bad flags and inventories in one line, exit 2, before it starts anything."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from controller import cli
from controller.exits import Unreachable

# timing: its refusals or timeouts are asserted within a wall-clock budget of a few seconds, which a second test
# worker beside it on a 2-core machine can exceed; ./dev test runs it alone (docs/testing.md).
pytestmark = pytest.mark.timing

ROOT = Path(__file__).resolve().parents[2]


def bk(*args: str) -> subprocess.CompletedProcess[str]:
    """The command as an operator runs it: a fresh interpreter, so the timings below include its imports."""
    return subprocess.run(
        [sys.executable, "-m", "controller.cli", "rehearse", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )


BASE = ["--from-ibp", "3.3-IV3", "--to-ibp", "3.4-IV0"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--from-ibp", "3.3-IV9", "--to-ibp", "3.4"], "error: --from-ibp: Version 3.3-IV9 is not a valid version\n"),
        (["--from-ibp", "3.3", "--to-ibp", "x"], "error: --to-ibp: Version x is not a valid version\n"),
        (
            ["--from-ibp", "3.4-IV0", "--to-ibp", "3.3-IV3"],
            "error: --to-ibp 3.3-IV3 is below --from-ibp 3.4-IV0: an IBP cannot be lowered\n",
        ),
        (
            [*BASE, "--node-set", "4:broker.rack=a"],
            "error: --node-set 4:broker.rack: there is no node 4 (nodes are 1..3)\n",
        ),
        ([*BASE, "--set", "nonsense"], None),
        (
            [*BASE, "--attach", "{tmp}/inv.json", "--set", "a=b"],
            "error: --set and --node-set configure the nodes rehearse starts; with --attach, configure your nodes\n",
        ),
        (
            [*BASE, "--attach", "{tmp}/missing.json"],
            "error: cannot read inventory {tmp}/missing.json: No such file or directory\n",
        ),
        (
            [*BASE, "-o", "{full}"],
            "error: --output {full} is not empty (a rehearsal writes its report and artefacts there)\n",
        ),
        (
            [*BASE, "--out", "{full}"],  # the hidden alias reaches the same check
            "error: --output {full} is not empty (a rehearsal writes its report and artefacts there)\n",
        ),
        ([*BASE, "--output", "{full}/x"], "error: --output {full}/x is a file, not a directory\n"),
        (
            [*BASE, "--attach", "{tmp}/inv.json", "--nodes", "2"],
            "error: --nodes sets how many nodes rehearse starts; with --attach, the inventory lists them\n",
        ),
        ([*BASE, "--from-snapshot", "{tmp}/rows.parquet"], "error: {tmp}/rows.parquet: no such file or directory\n"),
        (
            [*BASE, "--from-snapshot", "{full}/x"],
            "error: {full}/x: not a snapshot-rows file (expected .parquet or .jsonl)\n",
        ),
    ],
)
def test_refusals_are_one_line_exit_2(tmp_path: Path, args: list[str], message: str | None) -> None:
    full = tmp_path / "full"
    full.mkdir()
    (full / "x").write_text("x")
    fill = {"tmp": str(tmp_path), "full": str(full)}
    result = bk(*[a.format(**fill) for a in args])
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: "), result.stderr
    if message is not None:
        assert result.stderr == message.format(**fill)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["full"]  # nothing started, nothing written


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        ([*BASE, "--drill", "explode"], "invalid choice: 'explode'"),
        ([*BASE, "--drill", "expire-session"], "argument --drill: drill 'expire-session' is now 'freeze-controller'"),
        ([*BASE, "--error-threshold", "2"], "expected a fraction between 0 and 1, got '2'"),
        ([*BASE, "--isr-timeout", "0"], "expected a positive number of seconds, got '0'"),
        ([*BASE, "--node-set", "x=y"], "expected BROKER_ID:KEY=VALUE, got 'x=y'"),
        (["--to-ibp", "3.4"], "the following arguments are required: --from-ibp"),
    ],
)
def test_argument_errors_name_the_flag(args: list[str], fragment: str) -> None:
    result = bk(*args)
    assert result.returncode == 2
    assert fragment in result.stderr


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ("[]", "inventory {inv}: expected a JSON object"),
        ("{", "inventory {inv} is not JSON"),
        ('{"nodes": []}', 'inventory {inv}: missing "zookeeper"'),
        ('{"zookeeper": "h:1", "nodes": []}', 'inventory {inv}: "nodes" is empty'),
        (
            '{"zookeeper": "h:1", "nodes": [{"broker_id": "1"}]}',
            'inventory {inv}, nodes[0]: "broker_id" must be an integer, not a string',
        ),
        (
            '{"zookeeper": "h:1", "nodes": [{"broker_id": 1, "bootstrap": "nohost"}]}',
            "inventory {inv}, nodes[0]: \"bootstrap\" must be host:port, not 'nohost'",
        ),
        (
            '{"zookeeper": "h:1", "nodes": [{"broker_id": 1, "bootstrap": "h:9"}]}',
            'inventory {inv}, nodes[0]: missing "restart" (the shell command that restarts this node)',
        ),
        (
            '{"zookeeper": "h:1", "nodes": [{"broker_id": 1, "bootstrap": "h:9", "restart": "true"},'
            ' {"broker_id": 1, "bootstrap": "h:8", "restart": "true"}]}',
            "inventory {inv}: broker ids repeat: [1, 1]",
        ),
        (
            '{"zookeeper": "h:1", "nodes": [{"broker_id": 1, "bootstrap": "h:9", "restart": "true"}]}',
            'inventory {inv}: node 1 has no "config" (the server.properties whose inter.broker.protocol.version '
            "roll 2 sets)",
        ),
        (
            '{"zookeeper": "h:1", "nodes": [{"broker_id": 1, "bootstrap": "h:9", "restart": "true", "config": "c"}]}',
            'inventory {inv}: drill kill-controller needs "kill" for node(s) [1]',
        ),
    ],
)
def test_inventory_mistakes_name_the_key(tmp_path: Path, doc: str, message: str) -> None:
    inv = tmp_path / "inv.json"
    inv.write_text(doc)
    result = bk(*BASE, "--attach", str(inv), "--drill", "kill-controller")
    assert result.returncode == 2
    assert result.stderr.startswith("error: " + message.format(inv=inv)), result.stderr


def test_help_lists_the_drills() -> None:
    result = bk("--help")
    assert result.returncode == 0
    for drill in ("kill-controller", "pause-zookeeper", "restart-during-reassignment", "freeze-controller"):
        assert drill in result.stdout
    assert orjson.dumps(None)  # the JSON library the inventory is read with is importable here


def refused_quickly(*args: str) -> subprocess.CompletedProcess[str]:
    """Refused with exit 2 well under the 2 s budget: decided before anything is started or connected to."""
    started = time.monotonic()
    result = bk(*args)
    took = time.monotonic() - started
    assert result.returncode == 2, result.stderr
    assert took < 2.0, f"refusal took {took:.1f} s"
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr
    return result


def test_a_missing_inventory_is_refused_within_2_s(tmp_path: Path) -> None:
    result = refused_quickly(*BASE, "--attach", str(tmp_path / "absent.json"), "-o", str(tmp_path / "out"))
    assert f"cannot read inventory {tmp_path / 'absent.json'}" in result.stderr
    assert not (tmp_path / "out").exists()


def test_a_malformed_inventory_is_refused_within_2_s(tmp_path: Path) -> None:
    inv = tmp_path / "inv.json"
    inv.write_text('{"zookeeper": "127.0.0.1:1", "nodes": [{"broker_id": 1}')
    result = refused_quickly(*BASE, "--attach", str(inv), "-o", str(tmp_path / "out"))
    assert f"inventory {inv} is not JSON" in result.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("flag", "value"), [("--from-ibp", "3.3-IV9"), ("--to-ibp", "banana")])
def test_an_ibp_that_is_not_one_is_refused_within_2_s(tmp_path: Path, flag: str, value: str) -> None:
    ibps = {"--from-ibp": "3.3-IV3", "--to-ibp": "3.4-IV0", flag: value}
    result = refused_quickly(*[a for kv in ibps.items() for a in kv], "-o", str(tmp_path / "out"))
    assert result.stderr.startswith(f"error: {flag}: Version {value} is not a valid version")


def test_rows_that_are_not_rows_are_refused_before_zookeeper_starts(tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"path": "/brokers", "data": null}\nnot json\n')
    result = refused_quickly(*BASE, "--from-snapshot", str(rows), "-o", str(tmp_path / "out"))
    assert result.stderr.startswith(f"error: {rows}: line 2 is not a snapshot row")
    assert not (tmp_path / "out").exists()


def test_an_unreachable_zookeeper_is_exit_3(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An attached cluster whose ZooKeeper does not answer: exit 3, one line naming it, no rehearsal report."""
    import migrate.connect

    def unreachable(zookeeper: str, **_kw: object) -> None:
        raise Unreachable(f"cannot connect to ZooKeeper at {zookeeper} within 30 s")

    monkeypatch.setattr(migrate.connect, "connect", unreachable)
    inv = tmp_path / "inv.json"
    node = {"broker_id": 1, "bootstrap": "127.0.0.1:9", "restart": "true", "config": str(tmp_path / "c")}
    inv.write_bytes(orjson.dumps({"zookeeper": "127.0.0.1:9/kafka", "nodes": [node]}))
    out = tmp_path / "out"
    code = cli.main(["rehearse", *BASE, "--attach", str(inv), "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 3, err
    assert "error: cannot connect to ZooKeeper at 127.0.0.1:9/kafka within 30 s\n" in err
    assert not (out / "rehearsal.json").exists()


def test_kafka_unreachable_before_the_rolls_is_exit_3(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No broker answers the rehearsal's first request (its topics): Unreachable, not a failed check."""
    from migrate.rehearse import admin
    from migrate.rehearse.cluster import NodeView
    from migrate.rehearse.host import Options
    from migrate.rehearse.run import Rehearsal

    def no_broker(bootstrap: list[str], _topics: object) -> None:
        raise admin.KafkaUnreachable(f"cannot reach the cluster at {','.join(bootstrap)}: Unable to bootstrap")

    class Cluster:
        mode = "attached"

        def nodes(self) -> list[NodeView]:
            return [NodeView(1, "127.0.0.1:9", None, None)]

    class Display:
        def status(self, _text: str) -> None:
            pass

    monkeypatch.setattr(admin, "create_topics", no_broker)
    rehearsal = Rehearsal(Options("3.3-IV3", "3.4-IV0", tmp_path), Cluster(), Display())  # type: ignore[arg-type]
    with pytest.raises(Unreachable, match=r"cannot reach the cluster at 127\.0\.0\.1:9"):
        rehearsal._preflight_setup()
