"""The rehearsal report, without a cluster: built from synthetic records (a passing run with both rolls, a drill and
lockdown; a run that fails the forwarding promise after the bump; a run aborted mid-roll with skipped steps; edge
cases: no ops, no routes, one step, huge evidence) and checked as text (verdict, failed checks named and linked,
untrusted strings escaped, nothing loaded from the network, every time plot shading every step), written
atomically with its JSON, and opened in a real headless Chromium to prove plotly draws every figure offline."""

from __future__ import annotations

import math
import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import cast

import orjson
import pytest

from migrate.htmlreport import label
from migrate.rehearse import report
from migrate.rehearse.model import (
    CHECKS,
    OPS,
    CheckRecord,
    EventRecord,
    OpRecord,
    Phase,
    Rehearsal,
    RouteSample,
    StepKind,
    StepRecord,
    WaitRecord,
)
from migrate.rehearse.report import build_view, render_html, write_report
from tests import htmlcheck
from tests.htmlcheck import CHROMIUM, Refs, chromium

T0 = 1_741_944_720.0  # 2025-03-14 09:32:00 UTC
FROM, TO = "3.3-IV3", "3.4-IV0"
HOSTILE_TOPIC = '<script>alert("topic")</script>'
HOSTILE_LINE = "<img src=x onerror=alert(1)> & 'q'"
TITLES = {cid: title for cid, title, _why in CHECKS}
ERRORS = ("NOT_CONTROLLER", "REQUEST_TIMED_OUT", "LEADER_NOT_AVAILABLE", "KafkaConnectionError")


class Sim:
    """A rehearsal as run.py would record it: steps with their waits and the checks after them, client load
    (paused while the checks run) whose latency rises and errors appear while a node is down or the controller
    moves, the metric samples every half second and the controller/drill marks."""

    def __init__(self, nodes: int = 3, *, seed: int = 1, rate: float = 8.0, stuck: int | None = None) -> None:
        self.rnd = random.Random(seed)
        self.nodes = list(range(1, nodes + 1))
        self.rate = rate
        self.stuck = stuck  # a node whose forwarding gate is above the target IBP: it never forwards
        self.t = T0
        self.steps: list[StepRecord] = []
        self.checks: list[CheckRecord] = []
        self.events: list[EventRecord] = []
        self.loaded: list[tuple[float, float]] = []  # when the clients ran
        self.down: list[tuple[float, float, float]] = []  # (from, to, severity) when the clients felt a fault
        self.gate: list[tuple[float, int]] = []  # (time, node) a node passed the forwarding gate
        self.controller = self.nodes[-1]
        self.epoch = 7
        self.bumped = False
        self.mark("controller", f"controller: node {self.controller}")

    def mark(self, kind: str, text: str, at: float | None = None) -> None:
        self.events.append(cast(EventRecord, {"t": self.t if at is None else at, "kind": kind, "label": text}))

    def wait(self, step: StepRecord, what: str, seconds: float, ok: bool = True) -> None:
        step["waits"].append(WaitRecord(what=what, started=self.t, ended=self.t + seconds, ok=ok))
        self.t += seconds

    def step(self, name: str, phase: Phase, kind: StepKind, node: int | None) -> StepRecord:
        rec = StepRecord(
            index=len(self.steps),
            name=name,
            phase=phase,
            kind=kind,
            node=node,
            started=self.t,
            ended=self.t,
            outcome="ok",
            detail="",
            waits=[],
        )
        self.steps.append(rec)
        return rec

    def end(
        self, rec: StepRecord, *extra: CheckRecord, failing: dict[str, tuple[str, list[str]]] | None = None
    ) -> None:
        rec["ended"] = self.t
        self.loaded.append((rec["started"], rec["ended"]))
        for c in extra:
            self.checks.append(c)
        fail = failing or {}
        names = [
            "one-active-controller",
            "no-offline-partitions",
            "ids-unchanged",
            "controller-epoch-explained",
            "node-logs-clean",
            "client-errors",
            "forwarding-share",
            "acknowledged-writes",
        ]
        if rec["phase"] in ("pre-flight", "post-flight"):
            names += ["brokers-registered", "reassignments-finished"]
        if self.bumped:
            names.append("no-broker-zk-writes")
        for name in names:
            summary, evidence = fail.get(name, (f"{TITLES[name].lower()}: fine", [f"looked at {name} after step"]))
            self.checks.append(
                CheckRecord(
                    name=name,
                    step=rec["index"],
                    verdict="fail" if name in fail else "pass",
                    summary=summary,
                    evidence=evidence,
                )
            )
        self.t += self.rnd.uniform(1.2, 2.0)  # the checks, with the load paused

    def skip(self, name: str, phase: Phase, node: int | None) -> None:
        rec = self.step(name, phase, "restart", node)
        rec["outcome"], rec["detail"] = "skipped", "not run: an earlier step failed"

    def restart(self, phase: Phase, node: int, ibp: str | None) -> StepRecord:
        label = "roll 1" if phase == "roll-1" else "roll 2"
        name = f"{label}: restart node {node}" + (f" with IBP {ibp}" if ibp else "")
        if node == self.controller:
            name += " (the active controller, last)"
        rec = self.step(name, phase, "restart", node)
        self.wait(rec, f"node {node} safe to restart (min.insync.replicas)", 0.4)
        was_controller = node == self.controller
        down = self.t
        self.t += 1.0
        self.wait(rec, f"node {node} registered again", self.rnd.uniform(4.5, 6.5))
        if was_controller:
            self.controller = next(n for n in self.nodes if n != node)
            self.epoch += 1
            self.mark("controller", f"controller: node {self.controller}", down + 0.8)
            self.mark("epoch", f"controller epoch {self.epoch}", down + 0.8)
        self.down.append((down, self.t, 0.6 if was_controller else 0.3))
        self.wait(rec, f"node {node} back in every ISR", self.rnd.uniform(2.0, 4.0))
        if ibp and node != self.stuck:
            self.gate.append((self.t - 3, node))
        min_isr = CheckRecord(
            name="min-isr-safe",
            step=rec["index"],
            verdict="pass",
            summary=f"node {node} could be restarted without dropping below min.insync.replicas",
            evidence=[f"checked every partition holding node {node}"],
        )
        isr = CheckRecord(
            name="isr-rejoined",
            step=rec["index"],
            verdict="pass",
            summary=f"node {node} is back in every ISR it belongs to",
            evidence=[],
        )
        self.end(rec, min_isr, isr, failing=self.failing_after(rec))
        return rec

    def failing_after(self, rec: StepRecord) -> dict[str, tuple[str, list[str]]]:
        if self.stuck is None or not self.bumped:
            return {}
        return {
            "forwarding-share": (
                f"node(s) [{self.stuck}] still write ZooKeeper themselves after the bump to {TO}",
                [
                    "forwardable writes so far: forwarded 212, served by the controller 97, written by a broker itself "
                    "141 (69% via the controller)",
                    f"nodes past the forwarding gate: [1, 3] of {self.nodes}",
                    f"node {self.stuck}: IBP {TO}, gate 3.5-IV0, writing ZooKeeper itself",
                    f"topic {HOSTILE_TOPIC}: config written by node {self.stuck}",
                    HOSTILE_LINE,
                ],
            ),
        }

    def drill(self) -> None:
        victim = self.controller
        rec = self.step("drill kill-controller", "roll-1", "drill", victim)
        self.t += 0.3
        self.mark("drill", f"SIGKILL node {victim} (controller)")
        down = self.t
        self.wait(rec, "another controller elected", 2.6)
        self.controller = next(n for n in self.nodes if n != victim)
        self.epoch += 1
        self.mark("controller", f"controller: node {self.controller}")
        self.mark("epoch", f"controller epoch {self.epoch}")
        self.mark("drill", f"start node {victim}")
        self.wait(rec, f"node {victim} registered again", 5.5)
        self.wait(rec, f"node {victim} back in every ISR", 3.1)
        self.down.append((down, self.t - 3, 1.0))
        rec["detail"] = f"node {victim} killed with SIGKILL while it was the active controller, then started again"
        isr = CheckRecord(
            name="isr-rejoined",
            step=rec["index"],
            verdict="pass",
            summary=f"node {victim} is back in every ISR it belongs to",
            evidence=[],
        )
        self.end(rec, isr)

    def roll(self, phase: Phase, ibp: str | None, *, drill: bool = False, fail_at: int | None = None) -> bool:
        order = [n for n in self.nodes if n != self.controller] + [self.controller]
        for i, node in enumerate(order):
            if fail_at == i:
                label = "roll 1" if phase == "roll-1" else "roll 2"
                rec = self.step(f"{label}: restart node {node}", phase, "restart", node)
                self.wait(rec, f"node {node} safe to restart (min.insync.replicas)", 0.4)
                self.t += 1.0
                self.wait(rec, f"node {node} registered again", 5.0)
                self.wait(rec, f"node {node} back in every ISR", 12.0, ok=False)
                rec["waits"][-1]["what"] += f" (timed out after 12 s: 2 partition(s) without node {node} in the ISR)"
                rec["outcome"], rec["detail"] = "failed", f"node {node} did not rejoin every ISR"
                self.down.append((rec["started"] + 0.4, self.t, 0.2))
                isr = CheckRecord(
                    name="isr-rejoined",
                    step=rec["index"],
                    verdict="fail",
                    summary=f"node {node} did not rejoin 2 ISR(s) within 12 s",
                    evidence=[f"{HOSTILE_TOPIC}-0: ISR [1, 3]", "rh-guarded-4: ISR [1, 3]"],
                )
                self.end(rec, isr)
                for rest in order[i + 1 :]:
                    self.skip(f"{label}: restart node {rest}", phase, rest)
                return False
            self.restart(phase, node, ibp)
            if drill and i == 0:
                self.drill()
        return True

    def run(self, *, drill: bool = True, lockdown: bool = False, fail_at: int | None = None) -> Rehearsal:
        pre = self.step("pre-flight", "pre-flight", "check", None)
        self.wait(pre, "3 s of client load", 3.0)
        self.end(pre)
        aborted = not self.roll("roll-1", None, drill=drill, fail_at=fail_at)
        if aborted:
            self.skip(f"roll 2: restart every node with IBP {TO}", "roll-2", None)
        else:
            self.roll("roll-2", TO)
            self.bumped = True
            if lockdown:
                rec = self.step("lockdown", "lockdown", "lockdown", None)
                self.t += 2.2
                rec["detail"] = "lockdown applied: 214 znodes now carry the controller's and brokers' ACLs"
                self.end(rec, failing=self.failing_after(rec))
        post = self.step("post-flight", "post-flight", "check", None)
        self.wait(post, "3 s of client load", 3.0)
        self.wait(post, "every reassignment finished", 0.3)
        failing = self.failing_after(post)
        if self.stuck is not None:
            failing["no-broker-zk-writes"] = (
                f"3 znode write(s) after the bump by node {self.stuck}'s session, not the active controller's",
                [
                    f"the bump completed at zxid 0x{0x4A2:x} (last node's registration)",
                    f"/config/topics/{HOSTILE_TOPIC} set by session 0x1000a (broker {self.stuck})",
                ],
            )
        if aborted:
            failing["brokers-registered"] = (
                "the rolls did not finish",
                [s["name"] for s in self.steps if s["outcome"] != "ok"],
            )
        self.end(post, failing=failing)
        passed = all(c["verdict"] == "pass" for c in self.checks) and not aborted
        return Rehearsal(
            tool="bridgekeeper rehearse",
            version=1,
            mode="owned",
            from_ibp=FROM,
            to_ibp=TO,
            nodes=self.nodes,
            zk_servers=3,
            drills=["kill-controller"] if drill else [],
            lockdown=lockdown,
            settings={
                "rate": self.rate,
                "clients": ["confluent-kafka", "kafka-python"],
                "error_threshold": 0.05,
                "isr_timeout": 60.0,
                "min_isr_timeout": 60.0,
                "restart_timeout": 90.0,
                "reassignment_timeout": 120.0,
                "zk_pause": 4.0,
                "session_timeout_ms": 6000,
            },
            started=T0 - 4.0,
            ended=self.t + 1.0,
            passed=passed,
            exit_code=0 if passed else 1,
            steps=self.steps,
            checks=self.checks,
            ops=self.client_ops(),
            routes=self.samples(),
            events=sorted(self.events, key=lambda e: e["t"]),
            artefacts=[
                {
                    "name": "assignment before",
                    "path": "assignment-before.json",
                    "description": "every partition's replicas before the rehearsal (a rollback plan)",
                },
                {
                    "name": "ZooKeeper export before",
                    "path": "zookeeper-before.jsonl",
                    "description": "the Kafka subtrees of ZooKeeper before the rehearsal",
                },
                {
                    "name": "assignment after",
                    "path": "assignment-after.json",
                    "description": "every partition's replicas after the rehearsal",
                },
                {
                    "name": "ZooKeeper export after",
                    "path": "zookeeper-after.jsonl",
                    "description": "the Kafka subtrees of ZooKeeper after the rehearsal",
                },
            ],
        )

    def severity(self, t: float) -> float:
        return max((s for a, b, s in self.down if a <= t <= b), default=0.0)

    def client_ops(self) -> list[OpRecord]:
        ops: list[OpRecord] = []
        seq = {"w1": 0, "w2": 0}
        for a, b in self.loaded:
            t = a
            while True:
                t += self.rnd.expovariate(self.rate)
                if t >= b:
                    break
                worker = self.rnd.choice(("w1", "w2"))
                op = self.rnd.choices(OPS, weights=(3, 1, 1, 3, 2, 1, 1, 1, 4))[0]
                sev = self.severity(t)
                latency = self.rnd.lognormvariate(math.log(0.018), 0.5)
                if sev and self.rnd.random() < 0.5:
                    latency += self.rnd.uniform(0.2, 2.5) * sev
                ok = not (sev and self.rnd.random() < 0.12 * sev)
                topic = HOSTILE_TOPIC if seq[worker] == 5 else f"rh-{worker}-t{seq[worker] % 7}"
                ops.append(
                    OpRecord(
                        worker=worker,
                        client="confluent-kafka" if worker == "w1" else "kafka-python",
                        seq=seq[worker],
                        op=op,
                        entity=f"topic:{topic}",
                        args={"partitions": 3},
                        started=t,
                        ended=t + latency,
                        ok=ok,
                        error=None if ok else self.rnd.choice(ERRORS),
                        retriable=None if ok else True,
                        forwardable=op != "metadata",
                    )
                )
                seq[worker] += 1
        return ops

    def samples(self) -> list[RouteSample]:
        out: list[RouteSample] = []
        t, end = T0, self.t
        totals = {"forwarded": 0.0, "controller": 0.0, "direct": 0.0}
        while t <= end:
            forwarding = {n for at, n in self.gate if at <= t}
            if any(a <= t < b for a, b in self.loaded):
                for _ in range(self.rnd.choice((2, 3, 3, 4))):
                    node = self.rnd.choice(self.nodes)
                    route = (
                        "direct"
                        if node not in forwarding
                        else "controller"
                        if node == self.controller
                        else ("forwarded")
                    )
                    totals[route] += 1
            out.append(
                RouteSample(
                    t=t,
                    forwarded=totals["forwarded"],
                    controller=totals["controller"],
                    direct=totals["direct"],
                    nodes_forwarding=len(forwarding),
                    nodes=len(self.nodes),
                )
            )
            t += 0.5
        return out


def passing() -> Rehearsal:
    return Sim(seed=3).run(drill=True, lockdown=True)


def failing() -> Rehearsal:
    """Node 2's gate is above the target IBP, so it never forwards: forwarding-share and no-broker-zk-writes fail
    after post-flight (the first check after the bump); the rolls themselves were fine."""
    return Sim(seed=4, stuck=2).run(drill=True)


def aborted() -> Rehearsal:
    """Node 1 never rejoins its ISRs in roll 1: the step fails, the rest is skipped, post-flight still runs."""
    return Sim(seed=5).run(drill=False, fail_at=1)


def single_step() -> Rehearsal:
    doc = Sim(seed=6).run(drill=False)
    keep = doc["steps"][0]
    doc["steps"] = [keep]
    doc["checks"] = [c for c in doc["checks"] if c["step"] == 0]
    doc["ops"] = [o for o in doc["ops"] if o["ended"] <= keep["ended"]]
    doc["routes"] = [r for r in doc["routes"] if r["t"] <= keep["ended"]]
    doc["events"] = [e for e in doc["events"] if e["t"] <= keep["ended"]]
    doc["ended"] = keep["ended"] + 1
    return doc


def no_load() -> Rehearsal:
    """No client ops, no metric samples, no events, no artefacts (the load could not start, nothing scraped)."""
    doc = Sim(seed=7).run(drill=False)
    doc["ops"], doc["routes"], doc["events"], doc["artefacts"] = [], [], [], []
    return doc


def huge_evidence() -> Rehearsal:
    doc = failing()
    bad = next(c for c in doc["checks"] if c["verdict"] == "fail")
    bad["evidence"] = ["y" * 50_000] + [f"line {i}: {'x' * 50}" for i in range(5000)]
    return doc


def empty() -> Rehearsal:
    """Nothing at all: the cluster never started."""
    doc = no_load()
    doc["steps"], doc["checks"], doc["passed"], doc["exit_code"], doc["ended"] = [], [], False, 1, doc["started"]
    return doc


def in_progress() -> Rehearsal:
    """The record as written mid-run: the last step and the rehearsal not ended yet (their ``ended`` is 0.0)."""
    doc = passing()
    doc["steps"][-1]["ended"] = 0.0
    doc["steps"][-1]["waits"][-1]["ended"] = 0.0
    doc["ended"] = 0.0
    return doc


ALL = [passing, failing, aborted, single_step, no_load, huge_evidence, empty, in_progress]


# --- the page as text -------------------------------------------------------------------------------------------------


def _banner(page: str) -> str:
    m = re.search(r'<div class="banner (\w+)" id="verdict">(.*?)</div>\s*<div class="stats">', page, re.S)
    assert m, "no verdict banner"
    return m.group(1) + " " + m.group(2)


def test_a_passing_rehearsal_says_passed_with_what_it_covered():
    doc = passing()
    assert doc["passed"] and len([s for s in doc["steps"] if s["kind"] == "restart"]) == 6
    page = render_html(doc)
    banner = _banner(page)
    assert banner.startswith("passed ") and '<span class="verdict">PASSED</span>' in banner
    assert "exit code 0" in banner
    assert "IBP 3.3-IV3 → 3.4-IV0 on 3 nodes, 3 ZooKeeper servers" in banner
    ops = doc["ops"]
    acked = sum(o["ok"] for o in ops)
    assert f"{len(ops):,} client operations ({acked:,} acknowledged, {len(ops) - acked:,} failed)" in banner
    assert "failed after" not in banner
    assert "<dt>Drills</dt><dd>kill-controller</dd>" in page
    assert "<dt>Lockdown</dt><dd>yes" in page
    assert "<title>Rehearsal PASSED — IBP 3.3-IV3 → 3.4-IV0</title>" in page
    # every step has its row and every check result is in the grid
    for s in doc["steps"]:
        assert f'<tr id="step-{s["index"]}"' in page
    assert page.count('<td class="pass"') == len({(c["name"], c["step"]) for c in doc["checks"]})
    assert '<td class="fail"' not in page and 'id="failures"' not in page
    assert page.count('<details class="passed"') == len({c["name"] for c in doc["checks"]})


def test_a_failed_check_is_named_in_the_header_and_links_to_its_evidence():
    doc = failing()
    assert not doc["passed"] and doc["exit_code"] == 1
    page = render_html(doc)
    banner = _banner(page)
    assert banner.startswith("failed ") and '<span class="verdict">FAILED</span>' in banner and "exit code 1" in banner
    bad = [(k, c) for k, c in enumerate(doc["checks"]) if c["verdict"] == "fail"]
    assert {c["name"] for _, c in bad} == {"forwarding-share", "no-broker-zk-writes"}
    steps = {s["index"]: s["name"] for s in doc["steps"]}
    assert "Forwarding share</span> failed after" in banner
    assert "No broker writes to ZooKeeper</span> failed after" in banner
    post = next(k for k, c in bad if c["name"] == "no-broker-zk-writes")
    assert f'<a href="#check-{post}">post-flight</a>' in banner
    for k, c in bad:
        assert f'href="#check-{k}"' in page  # from the grid (and the header for the first six per check)
        m = re.search(
            rf'<li class="failure" id="check-{k}" data-check="{c["name"]}">(.*?)</li>\s*(?:<li class|</ol>)', page, re.S
        )
        assert m, k
        detail = m.group(1)
        assert TITLES[c["name"]] in detail and steps[c["step"]] in detail
        assert c["summary"].replace("'", "&#39;") in detail
    # passed checks are collapsed; failed ones are not
    assert "<details" not in re.search(r'<ol class="failures">(.*?)</ol>', page, re.S).group(1)  # type: ignore[union-attr]
    assert page.count('<td class="fail"') == len({(c["name"], c["step"]) for _, c in bad})


def test_an_aborted_rehearsal_names_the_failed_step_and_the_skipped_ones():
    doc = aborted()
    page = render_html(doc)
    banner = _banner(page)
    failed = next(s for s in doc["steps"] if s["outcome"] == "failed")
    skipped = [s for s in doc["steps"] if s["outcome"] == "skipped"]
    assert len(skipped) == 2
    assert f'Step failed:</span> <a href="#step-{failed["index"]}">{failed["name"]}</a>' in banner
    assert "2 steps skipped" in banner
    assert "Restarted node back in every ISR</span> failed after" in banner
    assert page.count('class="skipped"') == 2
    assert "timed out after 12 s" in page
    view = build_view(doc)
    assert [v.status for v in view.steps].count("skipped") == 2
    timeline = report.figures(doc)["timeline"]
    assert timeline is not None
    assert any(t.name == "skipped" for t in timeline.data) and any(t.name == "wait timed out" for t in timeline.data)


def test_untrusted_strings_are_escaped_in_the_page_and_the_figures():
    doc = failing()
    doc["steps"][1]["detail"] = HOSTILE_TOPIC
    doc["artefacts"].append({"name": "<b>bold</b>", "path": "javascript:alert(1)", "description": HOSTILE_LINE})
    doc["artefacts"].append({"name": "outside", "path": "../../etc/passwd", "description": "climbs out"})
    doc["artefacts"].append({"name": "absolute", "path": "https://example.com/x", "description": "a host"})
    doc["settings"]["note"] = HOSTILE_TOPIC
    doc["ops"][0]["error"] = HOSTILE_LINE
    doc["ops"][0]["ok"] = False
    page = render_html(doc)
    assert any(HOSTILE_TOPIC in e for c in doc["checks"] for e in c["evidence"])
    assert any(HOSTILE_TOPIC in o["entity"] for o in doc["ops"])
    # HTML: escaped once, never raw
    assert HOSTILE_TOPIC not in page and "<script>alert" not in page
    assert "<img src=x" not in page and "<b>bold</b>" not in page
    assert "&lt;script&gt;alert(&#34;topic&#34;)&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=alert(1)&gt; &amp; &#39;q&#39;" in page
    assert "&amp;lt;script" not in page.split("<script>", 2)[0]  # not twice in the HTML part
    # figures: plotly reads markup in labels, so hover texts carry entities (and plotly's JSON escapes < > /)
    assert r"\u003cscript\u003ealert" not in page and r"\u003cimg src=x" not in page
    assert '&lt;script&gt;alert(\\"topic\\")&lt;\\u002fscript&gt;' in page
    # artefact links: only plain relative paths become links
    refs = Refs()
    refs.feed(page)
    assert [u for u in refs.urls if not u.startswith("#")] == [
        "assignment-before.json",
        "zookeeper-before.jsonl",
        "assignment-after.json",
        "zookeeper-after.jsonl",
    ]
    assert "<code>javascript:alert(1)</code>" in page and "<code>../../etc/passwd</code>" in page


@pytest.mark.parametrize("make", ALL)
def test_the_page_loads_nothing_from_the_network(make):
    page = render_html(make())
    refs = Refs()
    refs.feed(page)
    assert refs.urls, "no link at all: the navigation is missing"
    external = [u for u in refs.urls if re.match(r"^([a-z][a-z0-9+.-]*:|//)", u, re.I)]
    assert not external, external
    assert refs.scripts and all("src" not in s for s in refs.scripts)
    css = "\n".join(refs.styles)
    assert "@import" not in css and "url(" not in css
    assert '<meta http-equiv="Content-Security-Policy" content="default-src \'none\';' in page
    assert page.count("* plotly.js v") == 1  # inline, once
    assert len(page) < 6_500_000


@pytest.mark.parametrize("make", ALL)
def test_every_time_plot_shades_every_step_that_ran(make):
    doc = make()
    ran = [s for s in doc["steps"] if s["outcome"] != "skipped"]
    figs = report.figures(doc)
    assert (figs["timeline"] is None) == (not doc["steps"])
    assert (figs["latency"] is None) == (figs["errors"] is None) == (not doc["ops"])
    assert (figs["forwarding"] is None) == (not doc["routes"])
    drills = [e for e in doc["events"] if e["kind"] == "drill"]
    for name in ("latency", "errors", "forwarding"):
        fig = figs[name]
        if fig is None:
            continue
        shapes = fig.layout.shapes
        bands = [s for s in shapes if s.type == "rect"]
        assert len(bands) == len(ran) and len(shapes) >= len(ran) + len(drills), name
        labels = {a.text for a in fig.layout.annotations}
        assert {label(report.short_name(s)) for s in ran} <= labels, name
        assert all(b.yref == "paper" and b.xref == "x" for b in bands)
        # one time axis for every plot: same range, same margins, so the bands line up down the page
        assert list(fig.layout.xaxis.range) == list(
            figs["latency"].layout.xaxis.range if figs["latency"] else fig.layout.xaxis.range
        )
        assert fig.layout.margin.l == report.MARGIN["l"] and fig.layout.margin.r == report.MARGIN["r"]
    page = render_html(doc)
    present = re.findall(r'<div id="(fig-[^"]+)" class="plotly-graph-div"', page)
    assert present == [f"fig-{k}" for k, f in figs.items() if f is not None]


def test_the_figures_show_what_happened():
    doc = failing()
    figs = report.figures(doc)
    lat = figs["latency"]
    assert lat is not None and lat.layout.yaxis.type == "log" and lat.layout.xaxis.type == "date"
    failed = [o for o in doc["ops"] if not o["ok"]]
    assert failed, "the simulation makes some operations fail during restarts"
    cross = next(t for t in lat.data if t.name.startswith("failed"))
    assert len(cross.x) == len(failed) and all("failed: " in h for h in cross.hovertext)
    assert sum(len(t.x) for t in lat.data) == len(doc["ops"])
    timeline = figs["timeline"]
    assert timeline is not None
    names = {t.name for t in timeline.data}
    assert {
        "drill",
        "drill fault",
        "controller moved",
        "controller epoch +1",
        "wait",
        "a check failed after it",
    } <= names
    rows = list(timeline.layout.yaxis.categoryarray)
    assert rows[:2] == ["drill faults", "controller"] and len(rows) == 2 + len(doc["steps"])
    assert len(set(rows)) == len(rows)
    fwd = figs["forwarding"]
    assert fwd is not None
    gate = next(t for t in fwd.data if t.name == "nodes past the forwarding gate")
    assert max(gate.y) < 100  # node 2 never passes the gate
    share = next(t for t in fwd.data if t.name == "writes through the controller")
    assert min(y for y in share.y if y is not None) < 100
    ok = report.figures(passing())["forwarding"]
    assert ok is not None and any(a.text == " every node past the gate" for a in ok.layout.annotations)
    errors = figs["errors"]
    assert errors is not None
    assert any(a.text.startswith("per-step threshold 5 %") for a in errors.layout.annotations)


def test_edge_cases_render_with_a_note_instead_of_a_figure():
    page = render_html(no_load())
    assert "No client operation was recorded." in page
    assert "No forwarding samples were recorded" in page and "No artefact was written." in page
    page = render_html(empty())
    assert "No step was recorded." in page and "No check ran." in page and "FAILED" in _banner(page)
    assert "did not complete" in _banner(page)
    page = render_html(single_step())
    assert page.count('<tr id="step-') == 1
    figs = report.figures(in_progress())
    assert all(f is None or f.layout.xaxis.range[0].startswith("2025-03-14") for f in figs.values())
    page = render_html(huge_evidence())
    assert "and 4,881 more lines in rehearsal.json" in page
    assert "y" * 2_000 + " …" in page and "y" * 2_001 not in page
    assert len(page) < 6_500_000


def test_thinning_keeps_the_slowest_and_every_failure():
    doc = passing()
    shift = 0.01
    many = [
        cast(
            OpRecord, {**o, "seq": i, "started": o["started"] + (i % 7) * shift, "ended": o["ended"] + (i % 7) * shift}
        )
        for i, o in enumerate(doc["ops"] * 40)
    ]
    doc["ops"] = many
    fig = report.figures(doc)["latency"]
    assert fig is not None
    failed = sum(not o["ok"] for o in many)
    assert len(next(t for t in fig.data if t.name.startswith("failed")).x) == failed
    drawn = sum(len(t.x) for t in fig.data)
    assert drawn <= report.MAX_POINTS + len(many) // 100 + failed
    slowest = max(o["ended"] - o["started"] for o in many if o["ok"])
    assert any(math.isclose(max(t.y), slowest) for t in fig.data if not t.name.startswith("failed"))
    assert "acknowledged operations drawn" in render_html(doc)


def test_render_is_deterministic():
    assert render_html(failing()) == render_html(failing())


def test_short_names_and_buckets():
    def step(name: str, phase: str, kind: str, node: int | None) -> StepRecord:
        return cast(StepRecord, {"name": name, "phase": phase, "kind": kind, "node": node})

    assert report.short_name(step("roll 1: restart node 2", "roll-1", "restart", 2)) == "r1 n2"
    assert (
        report.short_name(
            step("roll 2: restart node 3 with IBP 3.4-IV0 (the active controller, last)", "roll-2", "restart", 3)
        )
        == "r2 n3 ctl"
    )
    assert report.short_name(step("drill pause-zookeeper", "roll-1", "drill", None)) == "pause-zookeeper"
    assert report.short_name(step("post-flight", "post-flight", "check", None)) == "post-flight"
    assert report.nice_bucket(0) == 1 and report.nice_bucket(59) == 1 and report.nice_bucket(300) == 5
    assert report.nice_bucket(3600) == 60
    assert report.safe_href("zookeeper-after.jsonl") == "zookeeper-after.jsonl"
    assert report.safe_href("sub dir/a#b.json") == "sub%20dir/a%23b.json"
    assert [report.safe_href(p) for p in ("javascript:x", "/etc/passwd", "../x", "a/../../x", "//host/x", "")] == [
        None
    ] * 6


# --- writing ----------------------------------------------------------------------------------------------------------


def test_write_report_writes_both_files_and_the_json_round_trips(tmp_path):
    doc = failing()
    out = tmp_path / "out"
    html, json_path = write_report(doc, out)
    assert (html, json_path) == (out / "report.html", out / "rehearsal.json")
    assert sorted(p.name for p in out.iterdir()) == ["rehearsal.json", "report.html"]  # no temporary file left
    assert html.read_text() == render_html(doc)
    assert orjson.loads(json_path.read_bytes()) == doc
    assert json_path.read_text().startswith('{\n  "tool": "bridgekeeper rehearse"')
    # the record alone renders the same page again (an operator can re-render it anywhere)
    assert render_html(orjson.loads(json_path.read_bytes())) == html.read_text()


def test_a_failed_write_leaves_the_previous_report_whole(tmp_path, monkeypatch):
    write_report(passing(), tmp_path)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}

    def fail(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        write_report(failing(), tmp_path)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


# --- in a real browser ------------------------------------------------------------------------------------------------


@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is missing (./dev installs Debian's chromium)")
@pytest.mark.parametrize("make", [failing, passing, aborted], ids=["failing", "passing", "aborted"])
def test_chromium_draws_every_figure_offline(tmp_path, make):
    doc = make()
    html, _ = write_report(doc, tmp_path / "out")
    figures = re.findall(r'<div id="(fig-[^"]+)" class="plotly-graph-div"', html.read_text())
    assert figures == ["fig-timeline", "fig-latency", "fig-errors", "fig-forwarding"]
    dom = chromium(tmp_path, html, "--dump-dom")
    drawn = htmlcheck.drawn(dom)
    assert list(drawn) == figures and all(n >= 1 for n in drawn.values()), drawn
    assert "every node past the gate" in dom or make is not passing
    png = tmp_path / "report.png"
    chromium(tmp_path, html, f"--screenshot={png}")
    if make is failing and (target := os.environ.get("BK_REHEARSE_SCREENSHOT")):
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(png, target)
    from PIL import Image

    with Image.open(png) as im:
        rgb = im.convert("RGB")
    assert rgb.size == (1400, 2400)
    colours = htmlcheck.colours(rgb)
    assert len(colours) > 500, f"only {len(colours)} colours: the page looks blank"
    white = next((n for n, c in colours if c == (255, 255, 255)), 0)
    assert white < 0.9 * 1400 * 2400
    # The verdict reads at a glance: the banner at the top is green or red.
    top = rgb.crop((0, 0, 1400, 260))
    want = (27, 122, 27) if doc["passed"] else (179, 38, 30)  # --ok / --bad: the banner's edge and its word
    near = sum(n for n, c in htmlcheck.colours(top) if sum(abs(a - b) for a, b in zip(c, want, strict=True)) < 30)
    assert near > 3_000, f"only {near} verdict-coloured pixels in the banner"
    # Below the header the plots are drawn: saturated pixels are plotly's (bands, points, bars).
    plots = rgb.crop((0, 500, 1400, 2400))
    saturated = sum(n for n, (r, g, b) in htmlcheck.colours(plots) if max(r, g, b) - min(r, g, b) > 80)
    assert saturated > 20_000, f"only {saturated} saturated pixels below the header: no plot was drawn"


def test_the_report_needs_no_spark():
    """``rehearse`` is installed without the pipeline's extra: the report must render with pyspark (and pandas,
    which plotly would use if present) unimportable."""
    code = (
        "import sys\n"
        "for m in ('pyspark', 'pandas', 'ortools', 'numpy'):\n"
        "    sys.modules[m] = None\n"
        "sys.path.insert(0, 'tests/unit')\n"
        "import test_rehearse_report as t\n"
        "from migrate.rehearse.report import render_html\n"
        "assert 'fig-latency' in render_html(t.failing())\n"
        "assert not any(m.startswith(('pyspark', 'migrate.pipeline')) for m in sys.modules if sys.modules[m])\n"
    )
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
