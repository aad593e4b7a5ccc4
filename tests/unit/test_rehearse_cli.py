"""``bridgekeeper rehearse`` refuses bad flags and inventories in one line, exit 2, before it starts anything."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

ROOT = Path(__file__).resolve().parents[2]


def bk(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "controller.cli", "rehearse", *args], capture_output=True,
                          text=True, timeout=60, cwd=ROOT)  # fmt: skip


BASE = ["--from-ibp", "3.3-IV3", "--to-ibp", "3.4-IV0"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--from-ibp", "3.3-IV9", "--to-ibp", "3.4"], "error: --from-ibp: Version 3.3-IV9 is not a valid version\n"),
        (["--from-ibp", "3.3", "--to-ibp", "x"], "error: --to-ibp: Version x is not a valid version\n"),
        (["--from-ibp", "3.4-IV0", "--to-ibp", "3.3-IV3"],
         "error: --to-ibp 3.3-IV3 is below --from-ibp 3.4-IV0: an IBP cannot be lowered\n"),
        ([*BASE, "--node-set", "4:broker.rack=a"],
         "error: --node-set 4:broker.rack: there is no node 4 (nodes are 1..3)\n"),
        ([*BASE, "--set", "nonsense"], None),
        ([*BASE, "--attach", "{tmp}/inv.json", "--set", "a=b"],
         "error: --set and --node-set configure the nodes rehearse starts; with --attach, configure your nodes\n"),
        ([*BASE, "--attach", "{tmp}/missing.json"],
         "error: cannot read inventory {tmp}/missing.json: No such file or directory\n"),
        ([*BASE, "--out", "{full}"],
         "error: --out {full} is not empty (a rehearsal writes its report and artefacts there)\n"),
    ],
)  # fmt: skip
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
        ('{"zookeeper": "h:1", "nodes": [{"broker_id": "1"}]}',
         'inventory {inv}, nodes[0]: "broker_id" must be an integer, not a string'),
        ('{"zookeeper": "h:1", "nodes": [{"broker_id": 1, "bootstrap": "nohost"}]}',
         'inventory {inv}, nodes[0]: "bootstrap" must be host:port, not \'nohost\''),
        ('{"zookeeper": "h:1", "nodes": [{"broker_id": 1, "bootstrap": "h:9"}]}',
         'inventory {inv}, nodes[0]: missing "restart" (the shell command that restarts this node)'),
        ('{"zookeeper": "h:1", "nodes": [{"broker_id": 1, "bootstrap": "h:9", "restart": "true"},'
         ' {"broker_id": 1, "bootstrap": "h:8", "restart": "true"}]}', "inventory {inv}: broker ids repeat: [1, 1]"),
        ('{"zookeeper": "h:1", "nodes": [{"broker_id": 1, "bootstrap": "h:9", "restart": "true"}]}',
         'inventory {inv}: node 1 has no "config" (the server.properties whose inter.broker.protocol.version '
         "roll 2 sets)"),
        ('{"zookeeper": "h:1", "nodes": [{"broker_id": 1, "bootstrap": "h:9", "restart": "true", "config": "c"}]}',
         'inventory {inv}: drill kill-controller needs "kill" for node(s) [1]'),
    ],
)  # fmt: skip
def test_inventory_mistakes_name_the_key(tmp_path: Path, doc: str, message: str) -> None:
    inv = tmp_path / "inv.json"
    inv.write_text(doc)
    result = bk(*BASE, "--attach", str(inv), "--drill", "kill-controller")
    assert result.returncode == 2
    assert result.stderr.startswith("error: " + message.format(inv=inv)), result.stderr


def test_help_lists_the_drills() -> None:
    result = bk("--help")
    assert result.returncode == 0
    for drill in ("kill-controller", "pause-zookeeper", "restart-during-reassignment", "expire-session"):
        assert drill in result.stdout
    assert orjson.dumps(None)  # the JSON library the inventory is read with is importable here
