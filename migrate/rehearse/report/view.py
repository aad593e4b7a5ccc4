"""What the report shows, computed from the record: verdicts, steps, the check grid, the header's numbers. No
plotting here (the plots are :mod:`.figures`', the colours and formats :mod:`.style`'s), so the page's text is
tested apart from the plots."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from markupsafe import Markup

from migrate import htmlreport
from migrate.rehearse.model import CHECKS, Rehearsal
from migrate.rehearse.report.figures import figure_divs
from migrate.rehearse.report.step_views import StepView, step_views
from migrate.rehearse.report.style import duration, plural, seconds

TITLES = {cid: title for cid, title, _why in CHECKS}
WHY = {cid: why for cid, _title, why in CHECKS}
#: Evidence beyond this many lines per check (already capped upstream) or characters per line is cut here.
EVIDENCE_LINES = 120
EVIDENCE_CHARS = 2_000


# -- small helpers -----------------------------------------------------------------------------------------------
def anchor(prefix: str, text: str) -> str:
    return f"{prefix}-" + (re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-") or "x")


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile of sorted ``values``."""
    if not values:
        return math.nan
    return values[min(len(values) - 1, max(0, math.ceil(q * len(values)) - 1))]


def safe_href(path: str) -> str | None:
    """A link to an artefact only when it is a plain relative path: a ``javascript:`` or ``https:`` one, an
    absolute path or one climbing out of the report's directory is shown as text, never as a link."""
    if not path or re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", path) or path.startswith(("/", "\\")):
        return None
    if any(part == ".." for part in re.split(r"[/\\]", path)):
        return None
    return quote(path, safe="/")


# -- the view ------------------------------------------------------------------------------------------------------
@dataclass
class Cell:
    state: str  # "pass", "fail", "" (not run at this step)
    title: str
    href: str | None


@dataclass
class CheckRow:
    cid: str
    title: str
    why: str
    anchor: str
    cells: list[Cell]
    passed: int
    failed: int


@dataclass
class Detail:
    anchor: str
    cid: str
    title: str
    why: str
    step: StepView | None
    step_name: str
    summary: str
    evidence: list[str]
    more: int  # evidence lines cut here


@dataclass
class PassGroup:
    cid: str
    title: str
    why: str
    records: list[Detail]


@dataclass
class FailedCheck:
    """One header line: a check that failed, with every step after which it did."""

    title: str
    cid: str
    at: list[tuple[str, str]]  # (step name, detail anchor)


@dataclass
class ArtefactView:
    name: str
    path: str
    href: str | None
    description: str


@dataclass
class Stat:
    value: str
    label: str
    tone: str = ""  # "", "ok", "warn", "bad"


@dataclass
class View:
    doc: Rehearsal
    passed: bool
    verdict: str
    headline: str
    meta: list[tuple[str, str]]
    settings: list[tuple[str, str]]
    stats: list[Stat]
    failed_checks: list[FailedCheck]
    failed_steps: list[StepView]
    skipped: int
    steps: list[StepView]
    columns: list[StepView | None]
    column_names: list[str]
    rows: list[CheckRow]
    failures: list[Detail]
    passes: list[PassGroup]
    artefacts: list[ArtefactView]
    figures: dict[str, Markup | None]
    notes: dict[str, str] = field(default_factory=dict)
    plotly_version: str = ""


def _cut(evidence: Sequence[str]) -> tuple[list[str], int]:
    lines = [
        str(e) if len(str(e)) <= EVIDENCE_CHARS else str(e)[:EVIDENCE_CHARS] + " …" for e in evidence[:EVIDENCE_LINES]
    ]
    return lines, max(len(evidence) - EVIDENCE_LINES, 0)


def _checks(
    doc: Rehearsal, steps: list[StepView]
) -> tuple[list[StepView | None], list[str], list[CheckRow], list[Detail], list[PassGroup]]:
    """The grid (a column per step, plus any step index a check names that the record does not have), the failed
    records in the order they happened, and the passed ones grouped per check."""
    by_index = {v.step["index"]: v for v in steps}
    extra = sorted({c["step"] for c in doc["checks"]} - set(by_index))
    columns: list[StepView | None] = [*steps, *([None] * len(extra))]
    names = [v.short for v in steps] + [f"step {i}" for i in extra]
    position = {v.step["index"]: i for i, v in enumerate(steps)} | {x: len(steps) + i for i, x in enumerate(extra)}
    known = [cid for cid, _t, _w in CHECKS]
    ids = known + sorted({c["name"] for c in doc["checks"]} - set(known))
    failures: list[Detail] = []
    passes: dict[str, list[Detail]] = {}
    grid: dict[str, list[list[Detail]]] = {cid: [[] for _ in columns] for cid in ids}
    verdicts: dict[str, list[list[str]]] = {cid: [[] for _ in columns] for cid in ids}
    for k, c in enumerate(doc["checks"]):
        cid = c["name"]
        step = by_index.get(c["step"])
        evidence, more = _cut(c["evidence"])
        d = Detail(
            anchor=f"check-{k}",
            cid=cid,
            title=TITLES.get(cid, cid),
            why=WHY.get(cid, ""),
            step=step,
            step_name=step.step["name"] if step else f"step {c['step']}",
            summary=c["summary"],
            evidence=evidence,
            more=more,
        )
        col = position[c["step"]]
        grid[cid][col].append(d)
        verdicts[cid][col].append(c["verdict"])
        if c["verdict"] == "pass":
            passes.setdefault(cid, []).append(d)
        else:
            failures.append(d)
    rows = []
    for cid in ids:
        cells = []
        for col, (details, vs) in enumerate(zip(grid[cid], verdicts[cid], strict=True)):
            if not vs:
                cells.append(Cell("", f"{TITLES.get(cid, cid)}: not run after {names[col]}", None))
                continue
            bad = [d for d, v in zip(details, vs, strict=True) if v != "pass"]
            shown = bad[0] if bad else details[0]
            state = "fail" if bad else "pass"
            cells.append(
                Cell(
                    state,
                    f"{TITLES.get(cid, cid)} after {shown.step_name}: {shown.summary}",
                    f"#{shown.anchor}" if bad else None,
                )
            )
        failed = sum(1 for c in cells if c.state == "fail")
        rows.append(
            CheckRow(
                cid,
                TITLES.get(cid, cid),
                WHY.get(cid, ""),
                anchor("row", cid),
                cells,
                sum(1 for c in cells if c.state == "pass"),
                failed,
            )
        )
    groups = [PassGroup(cid, TITLES.get(cid, cid), WHY.get(cid, ""), passes[cid]) for cid in ids if cid in passes]
    return columns, names, rows, failures, groups


def _failed_checks(failures: Sequence[Detail]) -> list[FailedCheck]:
    out: dict[str, FailedCheck] = {}
    for d in failures:
        f = out.setdefault(d.cid, FailedCheck(d.title, d.cid, []))
        f.at.append((d.step_name, d.anchor))
    return list(out.values())


def _ops_stats(doc: Rehearsal) -> tuple[list[Stat], str]:
    """The client load in numbers. Failed operations are red only when the client-errors check failed: a few
    retriable errors while a node restarts are what clients see in any rolling restart, so amber otherwise."""
    ops = doc["ops"]
    acked = [o for o in ops if o["ok"]]
    failed = len(ops) - len(acked)
    lat = sorted(max(o["ended"] - o["started"], 0.0) for o in acked)
    clients = sorted({o["client"] for o in ops})
    judged = any(c["name"] == "client-errors" and c["verdict"] != "pass" for c in doc["checks"])
    stats = [
        Stat(f"{len(acked):,}", "ops acknowledged", "ok" if acked else ""),
        Stat(
            f"{failed:,}",
            "ops failed" + (f" ({failed / len(ops):.1%})" if ops else ""),
            "bad" if judged else "warn" if failed else "ok",
        ),
        Stat(seconds(percentile(lat, 0.5)), "median latency"),
        Stat(seconds(percentile(lat, 0.99)), "p99 latency"),
        Stat(seconds(lat[-1] if lat else math.nan), "slowest op"),
    ]
    text = f"{len(ops):,} client operations ({len(acked):,} acknowledged, {failed:,} failed)"
    if clients:
        text += " from " + ", ".join(clients)
    return stats, text


def _twin_meta(twin: dict[str, Any] | None, failovers: list[float]) -> list[tuple[str, str]]:
    """The twin's scale and the failover times measured at it, for the report's header."""
    out = []
    if twin:
        aside = twin.get("absent") or []
        out += [
            ("Twin of", str(twin["source"])),
            (
                "Twin scale",
                f"{twin['brokers']:,} brokers run, {twin['topics']:,} topics, {twin['partitions']:,} partitions",
            ),
            (
                "Production brokers not run",
                ", ".join(map(str, aside)) + " (their partitions not judged)" if aside else "none",
            ),
        ]
    if failovers:
        ordered = sorted(failovers)
        out.append(
            (
                "Controller failover (election to serving)",
                f"median {seconds(ordered[len(ordered) // 2])}, "
                f"slowest {seconds(ordered[-1])} over {len(ordered)} failover(s)",
            )
        )
    return out


def build_view(doc: Rehearsal) -> View:
    """Everything the template shows, computed here (typed, tested) so the template only places it."""
    steps = step_views(doc)
    columns, names, rows, failures, passes = _checks(doc, steps)
    op_stats, ops_text = _ops_stats(doc)
    passed = bool(doc["passed"])
    nodes = doc["nodes"]
    took = max(doc["ended"] - doc["started"], 0.0)
    drills = ", ".join(doc["drills"]) if doc["drills"] else "none"
    headline = (
        f"IBP {doc['from_ibp']} → {doc['to_ibp']} on {plural(len(nodes), 'node')}, "
        f"{plural(doc['zk_servers'], 'ZooKeeper server')}; {ops_text}"
    )
    twin, failovers = doc.get("twin"), [f["seconds"] for f in doc.get("failovers") or []]
    if twin:
        headline = (
            f"Twin of {twin['source']}: {plural(twin['brokers'], 'broker')}, {twin['topics']:,} topics, "
            f"{twin['partitions']:,} partitions; " + headline
        )
    meta = [
        ("Nodes", ", ".join(str(n) for n in nodes) or "none"),
        ("ZooKeeper servers", f"{doc['zk_servers']:,}"),
        ("Cluster", "started by the rehearsal" if doc["mode"] == "owned" else "attached (an existing cluster)"),
        *_twin_meta(twin, failovers),
        ("Drills", drills),
        ("Lockdown", "yes (ZooKeeper ACLs locked after the bump)" if doc["lockdown"] else "no"),
        ("Started", datetime.fromtimestamp(doc["started"], tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")),
        ("Duration", duration(took)),
    ]
    settings = [
        (str(k), ", ".join(map(str, v)) if isinstance(v, list) else str(v)) for k, v in sorted(doc["settings"].items())
    ]
    counts = Counter(v.status for v in steps)
    n_failed = sum(r.failed for r in rows)
    n_passed = sum(r.passed for r in rows)
    stats = [
        Stat(
            f"{len(steps) - counts['skipped']:,}/{len(steps):,}",
            "steps run" + (f", {counts['skipped']:,} skipped" if counts["skipped"] else ""),
            "bad" if counts["skipped"] or counts["failed"] else "ok",
        ),
        Stat(f"{n_passed:,}", "checks passed", "ok" if n_passed else ""),
        Stat(f"{n_failed:,}", "checks failed", "bad" if n_failed else "ok"),
        *op_stats,
        *([Stat(seconds(max(failovers)), f"slowest controller failover of {len(failovers)}")] if failovers else []),
    ]
    artefacts = [ArtefactView(a["name"], a["path"], safe_href(a["path"]), a["description"]) for a in doc["artefacts"]]
    figures, notes = figure_divs(doc, steps)
    return View(
        doc=doc,
        passed=passed,
        verdict="PASSED" if passed else "FAILED",
        headline=headline,
        meta=meta,
        settings=settings,
        stats=stats,
        failed_checks=_failed_checks(failures),
        failed_steps=[v for v in steps if v.status == "failed"],
        skipped=counts["skipped"],
        steps=steps,
        columns=columns,
        column_names=names,
        rows=rows,
        failures=failures,
        passes=passes,
        artefacts=artefacts,
        figures=figures,
        notes=notes,
        plotly_version=htmlreport.plotly_version(),
    )
