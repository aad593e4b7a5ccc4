"""The record's steps as the report shows them (a short name, a status, the checks after each), read by both the
page (:mod:`.view`) and the plots (:mod:`.figures`)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from migrate.htmlreport import label
from migrate.rehearse.model import CheckRecord, Rehearsal, StepRecord


def short_name(step: StepRecord) -> str:
    """A step's name short enough for a band label or a timeline row (the full name is in the hover and the
    tables): ``r1 n2``, ``r2 n3 ctl``, ``kill-controller``, ``pre-flight``."""
    name, phase, node = step["name"], step["phase"], step["node"]
    if step["kind"] == "restart" and phase in ("roll-1", "roll-2"):
        text = "r1" if phase == "roll-1" else "r2"
        text += f" n{node}" if node is not None else " (every node)"
        if "controller" in name:
            text += " ctl"
        return text
    if step["kind"] == "drill":
        return name.removeprefix("drill ")[:24]
    if step["kind"] in ("check", "lockdown") and name == phase:
        return name
    return name if len(name) <= 24 else name[:23] + "\N{HORIZONTAL ELLIPSIS}"


def ended(step: StepRecord) -> float:
    """A step's end; its start while it runs (the record is written as it grows, an unfinished step has 0.0)."""
    return max(step["ended"], step["started"])


@dataclass
class WaitView:
    what: str
    seconds: float
    ok: bool


@dataclass
class StepView:
    step: StepRecord
    short: str
    row: str  # the timeline's category: the short name, made unique
    anchor: str
    status: str  # "ok", "failed" (the step itself), "checks-failed" (a check after it), "skipped"
    start: float  # seconds since the rehearsal started
    seconds: float
    passed: int
    failed: int
    waits: list[WaitView]


def step_views(doc: Rehearsal) -> list[StepView]:
    checks_at: dict[int, list[CheckRecord]] = {}
    for c in doc["checks"]:
        checks_at.setdefault(c["step"], []).append(c)
    seen: Counter[str] = Counter()
    views = []
    for s in doc["steps"]:
        short = short_name(s)
        seen[short] += 1
        row = label(short if seen[short] == 1 else f"{short} ({seen[short]})")
        mine = checks_at.get(s["index"], [])
        failed = sum(1 for c in mine if c["verdict"] != "pass")
        if s["outcome"] == "skipped":
            status = "skipped"
        elif s["outcome"] != "ok":
            status = "failed"
        else:
            status = "checks-failed" if failed else "ok"
        waits = [WaitView(w["what"], max(w["ended"] - w["started"], 0.0), w["ok"]) for w in s["waits"]]
        views.append(
            StepView(
                step=s,
                short=short,
                row=row,
                anchor=f"step-{s['index']}",
                status=status,
                start=s["started"] - doc["started"],
                seconds=ended(s) - s["started"],
                passed=len(mine) - failed,
                failed=failed,
                waits=waits,
            )
        )
    return views
