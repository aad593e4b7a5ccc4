"""``bridgekeeper rehearse`` end to end: a ZooKeeper ensemble and three node processes, real confluent-kafka and
kafka-python clients writing throughout, both rolls, a drill; then a deliberately misconfigured node that must
fail the rehearsal with the right check named. The report is opened in headless Chromium, as an operator would."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from migrate.rehearse.model import CHECK_IDS, OPS
from tests.htmlcheck import chromium

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]


def rehearse(out: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "controller.cli",
            "rehearse",
            "--from-ibp",
            "3.3-IV3",
            "--to-ibp",
            "3.4-IV0",
            "--nodes",
            "3",
            "--zk-servers",
            "3",
            "--rate",
            "12",
            "-o",
            str(out),
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=ROOT,
        check=False,
    )
    json_path = out / "rehearsal.json"
    assert json_path.exists(), f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr[-4000:]}"
    return proc, orjson.loads(json_path.read_bytes())


def failed(doc: dict[str, Any]) -> list[str]:
    return [
        f"{c['name']} @ step {c['step']}: {c['summary']} {c['evidence'][:8]}"
        for c in doc["checks"]
        if c["verdict"] == "fail"
    ]


def test_a_short_rehearsal_with_a_drill_passes_and_its_report_shows_the_steps(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc, doc = rehearse(out, "--drill", "kill-controller")
    assert proc.returncode == 0, "\n".join(failed(doc)) + "\n" + proc.stderr[-3000:]
    assert doc["passed"] and doc["exit_code"] == 0
    assert "rehearsal PASSED" in proc.stdout

    steps = doc["steps"]
    for phase in ("roll-1", "roll-2"):
        restarts = [s for s in steps if s["phase"] == phase and s["kind"] == "restart"]
        assert sorted(s["node"] for s in restarts) == [1, 2, 3], [s["name"] for s in steps]
        last = [s["name"] for s in restarts if s["name"].endswith("(the active controller, last)")]
        if phase == "roll-2":
            assert last == [restarts[-1]["name"]], [s["name"] for s in restarts]
        else:
            # the drill kills the controller mid-roll: the next one may be a node already rolled, which then
            # is not restarted again (Strimzi's order); if it is still waiting, it goes last
            assert last in ([], [restarts[-1]["name"]]), [s["name"] for s in restarts]
        assert all(s["outcome"] == "ok" and s["waits"] for s in restarts)
    assert all("with IBP 3.4-IV0" in s["name"] for s in steps if s["phase"] == "roll-2")
    drill = next(s for s in steps if s["kind"] == "drill")
    assert drill["name"] == "drill kill-controller" and "SIGKILL" in drill["detail"]
    assert any(e["kind"] == "drill" and "SIGKILL" in e["label"] for e in doc["events"])

    ops = doc["ops"]
    assert len(ops) >= 200, len(ops)
    assert {o["client"] for o in ops} == {"confluent-kafka", "kafka-python"}
    assert {o["op"] for o in ops} >= set(OPS) - {"alter_quota"}, sorted({o["op"] for o in ops})
    assert sum(o["ok"] for o in ops) >= 0.9 * len(ops)

    ran = {c["name"] for c in doc["checks"]}
    assert ran == set(CHECK_IDS), set(CHECK_IDS) - ran
    per_step = {s["index"]: {c["name"] for c in doc["checks"] if c["step"] == s["index"]} for s in steps}
    assert all(
        {"one-active-controller", "acknowledged-writes", "client-errors"} <= names for names in per_step.values()
    )
    post = [c for c in doc["checks"] if c["step"] == steps[-1]["index"]]
    share = next(c for c in post if c["name"] == "forwarding-share")
    assert share["summary"].startswith("100% of forwardable writes through the controller"), share
    writes = next(c for c in post if c["name"] == "no-broker-zk-writes")
    assert "all by the active controller's session" in writes["summary"], writes
    assert doc["routes"] and doc["routes"][-1]["nodes_forwarding"] == 3

    for artefact in doc["artefacts"]:
        assert (out / artefact["path"]).stat().st_size > 0, artefact
    assert {a["path"] for a in doc["artefacts"]} >= {
        "assignment-before.json",
        "assignment-after.json",
        "zookeeper-before.jsonl",
        "zookeeper-after.jsonl",
    }

    html = out / "report.html"
    dom = chromium(tmp_path, html, "--dump-dom")
    assert dom.count('class="main-svg"') >= 6, "plotly did not draw the figures offline"
    assert "PASSED" in dom
    shot = tmp_path / "report.png"
    chromium(tmp_path, html, f"--screenshot={shot}")
    from PIL import Image

    with Image.open(shot) as img:
        colours = img.convert("RGB").resize((140, 240)).getcolors(140 * 240) or []
    assert len(colours) > 50, "the screenshot is blank"
    if os.environ.get("BK_REHEARSE_SCREENSHOT"):
        shutil.copy(shot, os.environ["BK_REHEARSE_SCREENSHOT"])


def test_a_node_that_keeps_writing_zookeeper_after_the_bump_fails_the_rehearsal(tmp_path: Path) -> None:
    """Node 2's forwarding gate is set above the target IBP: after the bump it still writes configs to ZooKeeper
    itself. The rehearsal runs to the end, exits 1, and names the check."""
    out = tmp_path / "out"
    proc, doc = rehearse(out, "--node-set", "2:bridgekeeper.forwarding.min.ibp=3.5-IV0")
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert not doc["passed"] and doc["exit_code"] == 1
    bad = {c["name"] for c in doc["checks"] if c["verdict"] == "fail"}
    assert "forwarding-share" in bad, failed(doc)
    assert re.search(r"rehearsal FAILED: .*forwarding-share", proc.stdout), proc.stdout
    share = [c for c in doc["checks"] if c["name"] == "forwarding-share" and c["verdict"] == "fail"]
    assert "node(s) [2] still write ZooKeeper themselves after the bump to 3.4-IV0" in share[-1]["summary"]
    assert "node 2: IBP 3.4-IV0, gate 3.5-IV0, writing ZooKeeper itself" in share[-1]["evidence"]
    # everything else about the roll was fine: only the bridge's promise broke
    assert bad <= {"forwarding-share", "no-broker-zk-writes"}, failed(doc)
    assert all(s["outcome"] == "ok" for s in doc["steps"])
