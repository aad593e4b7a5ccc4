"""The readiness report as one self-contained HTML file, and the summary beside it as JSON.

The HTML is read where the clusters are: on a bastion, attached to a change ticket, opened from a file share,
often with no internet. So it loads nothing: plotly.js is embedded once, inline, from the installed plotly
package, the CSS is inline, there are no fonts or images, and a Content-Security-Policy forbids any fetch so
that a mistake (ours or plotly's) shows up as a blank plot in review rather than as a silent call home.

Topic names, rack names, cluster names and paths come from foreign clusters, so jinja2 autoescapes everything;
the only markup let through unescaped is plotly's (its figure JSON escapes ``<``, ``>`` and ``/``) and plotly.js
itself (checked to contain no ``</script``).

The page is laid out from a *view* built here in Python (typed, tested) so the template only places things.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import jinja2
import orjson
import plotly.graph_objects as go
from markupsafe import Markup

from migrate import htmlreport
from migrate.htmlreport import plotly_js
from migrate.pipeline.outputs import write_atomic
from migrate.pipeline.report import figures
from migrate.pipeline.summary import CHECKS, ClusterSummary, Finding, PlanSummary, Severity, Summary

WHY = {cid: why for cid, _sev, _title, why in CHECKS}
RANK: dict[Severity, int] = {"blocker": 0, "warning": 1, "info": 2}
#: The findings matrix's columns: blockers, then warnings, then info, in CHECKS order within each.
COLUMNS = sorted(CHECKS, key=lambda c: RANK[c[1]])
VERDICTS = ("blockers", "warnings", "ready")  # worst first


@dataclass
class Cell:
    count: int
    severity: Severity
    title: str
    unit: str


@dataclass
class FindingView:
    finding: Finding
    why: str
    more: int  # affected items beyond the examples shown
    unit: str  # the finding's unit, singular for a count of one


@dataclass
class ClusterView:
    anchor: str
    summary: ClusterSummary
    verdict: str  # "blockers", "warnings", "ready"
    blockers: int  # checks with a non-zero count, per severity
    warnings: int
    infos: int
    cells: list[Cell]
    found: list[FindingView]
    clean: list[str]  # titles of the checks that found nothing
    unregistered: list[int]
    racked: bool
    brokers_fig: Markup | None
    racks_fig: Markup | None


@dataclass
class PlanView:
    plan: PlanSummary
    anchor: str
    cluster_anchor: str | None
    ratio: str
    kafka: str
    figure: Markup | None


@dataclass
class View:
    summary: Summary
    verdict: str
    worst: str  # the worst cluster verdict: the header's colour
    plans_verdict: str
    clusters: list[ClusterView]
    plans: list[PlanView]
    columns: list[tuple[str, Severity, str, str]]
    groups: list[tuple[Severity, int]]  # severity, number of columns
    fleet_fig: Markup | None
    stages: list[tuple[str, float]]
    plotly_version: str


def _anchor(name: str, taken: set[str]) -> str:
    """A stable, URL-safe fragment for a cluster: its name where that is safe, made unique."""
    base = "cluster-" + (re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-") or "x")
    anchor, n = base, 2
    while anchor in taken:
        anchor, n = f"{base}-{n}", n + 1
    taken.add(anchor)
    return anchor


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def _cluster_view(c: ClusterSummary, anchor: str) -> ClusterView:
    """A cluster's section: its matrix row, its findings worst first (an operator fixes blockers first, whatever
    order CHECKS lists them in), the checks that passed, and its figures."""
    by_check = {f["check"]: f for f in c["findings"]}
    cells = []
    for cid, sev, title, _why in COLUMNS:
        f = by_check.get(cid)
        n = f["count"] if f else 0
        cells.append(Cell(count=n, severity=sev, title=title, unit=figures.unit_for(n, f["unit"]) if f else ""))
    nonzero = sorted((f for f in c["findings"] if f["count"] > 0), key=lambda f: RANK[f["severity"]])
    counts = {s: sum(1 for f in nonzero if f["severity"] == s) for s in RANK}
    verdict = "blockers" if counts["blocker"] else "warnings" if counts["warning"] else "ready"
    found = [
        FindingView(
            f, WHY.get(f["check"], ""), max(f["count"] - len(f["examples"]), 0), figures.unit_for(f["count"], f["unit"])
        )
        for f in nonzero
    ]
    clean = [title for cid, _sev, title, _why in CHECKS if not by_check.get(cid) or not by_check[cid]["count"]]
    brokers_fig = figures.brokers_figure(c)
    racks_fig = figures.racks_figure(c)
    return ClusterView(
        anchor=anchor,
        summary=c,
        verdict=verdict,
        blockers=counts["blocker"],
        warnings=counts["warning"],
        infos=counts["info"],
        cells=cells,
        found=found,
        clean=clean,
        unregistered=sorted(b["broker"] for b in c["brokers"] if not b["registered"]),
        racked=any(b["rack"] for b in c["brokers"] if b["registered"]),
        brokers_fig=_div(brokers_fig, f"fig-{anchor}-brokers"),
        racks_fig=_div(racks_fig, f"fig-{anchor}-racks"),
    )


def _div(fig: go.Figure | None, div_id: str) -> Markup | None:
    if fig is None:
        return None
    return htmlreport.to_div(fig, div_id)


def _plan_view(i: int, p: PlanSummary, anchors: dict[str, str]) -> PlanView:
    """A plan's card: its moves against the lower bound (how close to minimal) and against Kafka's own
    ``--generate`` (what the operator would otherwise have run)."""
    lb = p["lower_bound"]
    if lb:
        ratio = f"{p['moves'] / lb:.2f}\N{MULTIPLICATION SIGN} the lower bound"
    else:
        ratio = "at the lower bound" if not p["moves"] else "no lower bound"
    k = p["kafka_generate_moves"]
    if k is None:
        kafka = "could not plan"
    elif p["moves"]:
        kafka = f"{k:,} moves ({k / p['moves']:.1f}\N{MULTIPLICATION SIGN} this plan's)"
    else:
        kafka = f"{k:,} moves"
    anchor = f"plan-{i + 1}"
    return PlanView(
        plan=p,
        anchor=anchor,
        cluster_anchor=anchors.get(p["cluster"]),
        ratio=ratio,
        kafka=kafka,
        figure=_div(figures.plan_figure(p), f"fig-{anchor}"),
    )


def _fleet_verdict(views: Sequence[ClusterView]) -> str:
    """The first line an operator reads: how many clusters, how many can't take the bridge yet."""
    if not views:
        return "No clusters in the inputs."
    blocked = sum(1 for v in views if v.verdict == "blockers")
    warned = sum(1 for v in views if v.verdict == "warnings")
    text = _plural(len(views), "cluster")
    if not blocked and not warned:
        return f"{text}, none with blockers or warnings"
    text += f", {blocked:,} with blockers" if blocked else ", none with blockers"
    if warned:
        text += f", {warned:,} with warnings only"
    return text


def _plans_verdict(plans: Sequence[PlanSummary]) -> str:
    if not plans:
        return ""
    bad = sum(1 for p in plans if p["violations"])
    return _plural(len(plans), "plan") + (f", {bad:,} with violations" if bad else ", all meet every hard constraint")


def build_view(summary: Summary) -> View:
    """Everything the template shows, computed: verdicts, orderings, figures (as HTML fragments)."""
    taken: set[str] = set()
    clusters = summary["clusters"]
    anchors = [_anchor(c["cluster"], taken) for c in clusters]
    fleet = figures.fleet_heatmap(clusters) if any(f["count"] for c in clusters for f in c["findings"]) else None
    fleet_fig = _div(fleet, "fig-fleet")
    views = [_cluster_view(c, a) for c, a in zip(clusters, anchors, strict=True)]
    by_name = {c["cluster"]: a for c, a in zip(clusters, anchors, strict=True)}
    plans = [_plan_view(i, p, by_name) for i, p in enumerate(summary["plans"])]
    groups = [(s, sum(1 for c in COLUMNS if c[1] == s)) for s in RANK]
    worst = min((v.verdict for v in views), key=VERDICTS.index, default="ready")
    return View(
        summary=summary,
        verdict=_fleet_verdict(views),
        worst=worst,
        plans_verdict=_plans_verdict(summary["plans"]),
        clusters=views,
        plans=plans,
        columns=COLUMNS,
        groups=[(s, n) for s, n in groups if n],
        fleet_fig=fleet_fig,
        stages=list(summary.get("stages", {}).items()),
        plotly_version=htmlreport.plotly_version(),
    )


@functools.cache
def _environment() -> jinja2.Environment:
    env = htmlreport.environment("migrate.pipeline.report")
    env.filters["num"] = lambda n: f"{n:,}"
    env.filters["short"] = lambda cid: figures.SHORT_TITLES.get(cid, cid)
    return env


def render_html(summary: Summary) -> str:
    """The whole report page for ``summary``: deterministic (the same summary renders the same bytes)."""
    view = build_view(summary)
    template = _environment().get_template("report.html.j2")
    return template.render(v=view, plotly_js=plotly_js())


def summary_json(summary: Summary) -> bytes:
    """``report.json``: indented, for people reading it and for diffs between runs."""
    return orjson.dumps(summary, option=orjson.OPT_INDENT_2) + b"\n"


def write_report(summary: Summary, html_path: str | Path, json_path: str | Path | None = None) -> None:
    """Write the HTML report (and the summary as JSON when ``json_path`` is given). Both are rendered before
    either is written, and each goes to a temporary file in its directory renamed into place, so a failed or
    interrupted run leaves the previous report whole, never half of a new one."""
    page = render_html(summary)
    data = summary_json(summary) if json_path is not None else None
    write_atomic(html_path, page)
    if json_path is not None and data is not None:
        write_atomic(json_path, data)
