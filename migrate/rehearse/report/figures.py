"""The report's four plots on one time axis: the step timeline, client latency, client errors and forwarding
share, each with the steps shaded as bands and the drills drawn as dashed lines.

The module is long because the four plots are one figure set: they share the time span, the step bands, the
drill marks and the layout, and a change to one axis is a change to all four.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go
from markupsafe import Markup

from migrate import htmlreport
from migrate.htmlreport import TEMPLATE, label
from migrate.rehearse.model import OPS, OpRecord, Rehearsal, RouteSample
from migrate.rehearse.report.step_views import StepView, ended, step_views
from migrate.rehearse.report.style import (
    CONTROLLER,
    DRILL,
    FAILED,
    FAILED_DARK,
    LATENCY_TICKS,
    MARGIN,
    MAX_POINTS,
    OK,
    OP_COLOURS,
    PHASE_COLOURS,
    SKIPPED,
    clock,
    iso,
    nice_bucket,
    plural,
    seconds,
)


# -- figures -------------------------------------------------------------------------------------------------------
@dataclass
class Span:
    """The time every plot shows (the whole rehearsal and anything recorded outside it), padded a little."""

    t0: float
    t1: float

    @classmethod
    def of(cls, doc: Rehearsal) -> Span:
        times = [doc["started"], doc["ended"]]
        times += [t for s in doc["steps"] for t in (s["started"], s["ended"])]
        times += [t for o in doc["ops"] for t in (o["started"], o["ended"])]
        times += [r["t"] for r in doc["routes"]] + [e["t"] for e in doc["events"]]
        known = [t for t in times if t > 0] or [0.0]  # 0.0: not ended yet (a record written mid-run)
        t0, t1 = min(known), max(known)
        return cls(t0, max(t1, t0 + 1.0))

    def range(self) -> list[str]:
        pad = (self.t1 - self.t0) * 0.01
        return [iso(self.t0 - pad), iso(self.t1 + pad)]


def _colour(v: StepView) -> str:
    if v.status in ("failed", "checks-failed"):
        return FAILED
    if v.status == "skipped":
        return SKIPPED
    if v.step["kind"] == "drill":
        return DRILL
    return PHASE_COLOURS.get(v.step["phase"], "#8a8a8a")


def _layout(fig: go.Figure, span: Span, height: int, **more: Any) -> None:
    fig.update_layout(
        template=TEMPLATE,
        height=height,
        margin=MARGIN,
        hovermode="closest",
        xaxis={
            "type": "date",
            "range": span.range(),
            "title": {"text": "time (UTC)"},
            "automargin": False,
            "showgrid": True,
            "gridcolor": "#f0f0f0",
        },
        **more,
    )
    fig.update_yaxes(automargin=False)


def _bands(fig: go.Figure, steps: Sequence[StepView], drills: Sequence[tuple[float, str]]) -> None:
    """Every step that ran as a shaded band with its short name at the top, each drill fault as a dashed line:
    the same on every time plot, so any spike reads against the step that caused it."""
    for v in steps:
        if v.status == "skipped":
            continue
        s = v.step
        colour = _colour(v)
        fig.add_shape(
            type="rect",
            xref="x",
            yref="paper",
            x0=iso(s["started"]),
            x1=iso(ended(s)),
            y0=0,
            y1=1,
            fillcolor=colour,
            opacity=0.2 if v.status != "ok" else 0.13,
            line_width=0,
            layer="below",
        )
        fig.add_annotation(
            x=iso((s["started"] + ended(s)) / 2),
            y=1,
            xref="x",
            yref="paper",
            text=label(v.short),
            showarrow=False,
            textangle=-90,
            xanchor="center",
            yanchor="top",
            font={"size": 10, "color": _dark(colour)},
            bgcolor="rgba(255,255,255,0.6)",
        )
    for t, _what in drills:
        fig.add_shape(
            type="line",
            xref="x",
            yref="paper",
            x0=iso(t),
            x1=iso(t),
            y0=0,
            y1=1,
            line={"color": DRILL, "width": 1.5, "dash": "dash"},
            layer="above",
        )


def _dark(colour: str) -> str:
    """The band's colour darkened for its label, so a label is legible on its band."""
    r, g, b = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"#{int(r * 0.6):02x}{int(g * 0.6):02x}{int(b * 0.6):02x}"


def timeline_figure(doc: Rehearsal, steps: Sequence[StepView], span: Span) -> go.Figure | None:
    """A bar per step from its start to its end (phase colour; orange a drill; red a step that failed or after
    which a check failed; a grey ring a skipped step), the waits inside it as thin dark bars (red when they timed
    out), and two lanes on top: drill faults and controller moves (the new controller's id) or epoch bumps."""
    if not steps:
        return None
    fig = go.Figure()
    drills = [e for e in doc["events"] if e["kind"] == "drill"]
    moves = [e for e in doc["events"] if e["kind"] in ("controller", "epoch")]
    lanes = (["drill faults"] if drills else []) + (["controller"] if moves else [])
    order = lanes + [v.row for v in steps]
    groups: dict[str, tuple[str, dict[str, Any], list[StepView]]] = {}
    to_ibp = label(doc["to_ibp"])
    names = {
        "pre-flight": "pre-/post-flight",
        "post-flight": "pre-/post-flight",
        "roll-1": "roll 1 (same IBP)",
        "roll-2": f"roll 2 (IBP {to_ibp})",
        "lockdown": "lockdown",
    }
    for v in steps:
        if v.status == "skipped":
            continue
        if v.status == "failed":
            key, marker = "step failed", {"color": FAILED, "line": {"color": FAILED_DARK, "width": 1}}
        elif v.status == "checks-failed":
            key = "a check failed after it"
            marker = {
                "color": "#f7c6c6",
                "line": {"color": FAILED, "width": 2},
                "pattern": {"shape": "/", "fgcolor": FAILED, "size": 6},
            }
        elif v.step["kind"] == "drill":
            key, marker = "drill", {"color": DRILL}
        else:
            key = names.get(v.step["phase"], label(v.step["phase"]))
            marker = {"color": PHASE_COLOURS.get(v.step["phase"], "#8a8a8a")}
        groups.setdefault(key, (key, marker, []))[2].append(v)
    rank = [
        "pre-/post-flight",
        "roll 1 (same IBP)",
        f"roll 2 (IBP {to_ibp})",
        "drill",
        "lockdown",
        "a check failed after it",
        "step failed",
    ]
    for key, marker, vs in sorted(groups.values(), key=lambda g: rank.index(g[0]) if g[0] in rank else 99):
        fig.add_trace(
            go.Bar(
                y=[v.row for v in vs],
                x=[max(v.seconds, 0.001) * 1000 for v in vs],
                base=[iso(v.step["started"]) for v in vs],
                orientation="h",
                name=key,
                marker=marker,
                width=0.72,
                hovertext=[_step_hover(v) for v in vs],
                hovertemplate="%{hovertext}<extra></extra>",
            )
        )
    flagged = [v for v in steps if v.status in ("failed", "checks-failed")]
    if flagged:  # said in words beside the bar, where the row is empty (steps run one after another)
        fig.add_trace(
            go.Scatter(
                y=[v.row for v in flagged],
                x=[iso(v.step["started"]) for v in flagged],
                mode="text",
                text=[_flag(v) for v in flagged],
                textposition="middle left",
                showlegend=False,
                hoverinfo="skip",
                textfont={"color": FAILED_DARK, "size": 11},
                cliponaxis=False,
            )
        )
    waits = [(v, w) for v in steps for w in v.step["waits"] if w["ended"] > w["started"]]
    for ok, name, colour in ((True, "wait", "rgba(30,30,30,0.62)"), (False, "wait timed out", FAILED_DARK)):
        pick = [(v, w) for v, w in waits if bool(w["ok"]) == ok]
        if not pick:
            continue
        fig.add_trace(
            go.Bar(
                y=[v.row for v, _ in pick],
                x=[(w["ended"] - w["started"]) * 1000 for _, w in pick],
                base=[iso(w["started"]) for _, w in pick],
                orientation="h",
                name=name,
                width=0.22,
                marker={"color": colour},
                hovertemplate="%{hovertext}<extra></extra>",
                hovertext=[
                    f"<b>{label(v.step['name'])}</b><br>waited for {label(w['what'])}<br>"
                    f"{w['ended'] - w['started']:.1f} s{'' if ok else ', timed out'}"
                    for v, w in pick
                ],
            )
        )
    skipped = [v for v in steps if v.status == "skipped"]
    if skipped:
        fig.add_trace(
            go.Scatter(
                y=[v.row for v in skipped],
                x=[iso(v.step["started"]) for v in skipped],
                mode="markers+text",
                name="skipped",
                marker={"symbol": "circle-open", "size": 10, "color": "#777", "line": {"width": 2}},
                text=["skipped"] * len(skipped),
                textposition="middle right",
                textfont={"color": "#666", "size": 11},
                hovertext=[_step_hover(v) for v in skipped],
                hovertemplate="%{hovertext}<extra></extra>",
                cliponaxis=False,
            )
        )
    if drills:
        fig.add_trace(
            go.Scatter(
                y=["drill faults"] * len(drills),
                x=[iso(e["t"]) for e in drills],
                mode="markers",
                name="drill fault",
                marker={
                    "symbol": "triangle-down",
                    "size": 13,
                    "color": DRILL,
                    "line": {"color": "#8a4a00", "width": 1},
                },
                hovertext=[f"{clock(e['t'])} {label(e['label'])}" for e in drills],
                hovertemplate="%{hovertext}<extra></extra>",
            )
        )
        for e in drills:
            fig.add_shape(
                type="line",
                xref="x",
                yref="paper",
                x0=iso(e["t"]),
                x1=iso(e["t"]),
                y0=0,
                y1=1,
                line={"color": DRILL, "width": 1, "dash": "dash"},
                layer="below",
            )
    for kind, name, symbol, size in (
        ("controller", "controller moved", "diamond", 11),
        ("epoch", "controller epoch +1", "circle", 7),
    ):
        marks = [e for e in moves if e["kind"] == kind]
        if not marks:
            continue
        fig.add_trace(
            go.Scatter(
                y=["controller"] * len(marks),
                x=[iso(e["t"]) for e in marks],
                name=name,
                mode="markers+text" if kind == "controller" else "markers",
                marker={"symbol": symbol, "size": size, "color": CONTROLLER if kind == "controller" else "#7d9cc9"},
                text=[_controller_text(e["label"]) for e in marks] if kind == "controller" else None,
                textposition="top center",
                textfont={"size": 10, "color": CONTROLLER},
                cliponaxis=False,
                hovertext=[f"{clock(e['t'])} {label(e['label'])}" for e in marks],
                hovertemplate="%{hovertext}<extra></extra>",
            )
        )
    _layout(
        fig,
        span,
        150 + 28 * len(order),
        barmode="overlay",
        bargap=0.2,
        legend={
            "orientation": "h",
            "yanchor": "bottom",
            "y": 1.0,
            "x": 0,
            "xanchor": "left",
            "font": {"size": 11},
            "traceorder": "normal",
        },
    )
    fig.update_layout(margin={**MARGIN, "t": 70})
    fig.update_yaxes(
        type="category",
        categoryorder="array",
        categoryarray=order,
        autorange="reversed",
        showgrid=False,
        ticks="",
        tickfont={"size": 11},
    )
    return fig


def _flag(v: StepView) -> str:
    if v.status == "failed":
        return "step failed \N{BALLOT X} "
    return f"{plural(v.failed, 'check')} failed \N{BALLOT X} "


def _controller_text(text: str) -> str:
    m = re.search(r"node (\d+)", text)
    return f"n{m.group(1)}" if m else ("none" if "none" in text else "")


def _step_hover(v: StepView) -> str:
    s = v.step
    out = f"<b>{label(s['name'])}</b><br>{label(s['phase'])}, {label(s['kind'])}"
    if s["node"] is not None:
        out += f", node {s['node']}"
    out += f"<br>+{v.start:.1f} s for {v.seconds:.1f} s, {label(s['outcome'])}"
    if v.passed or v.failed:
        out += f"<br>checks: {v.passed} passed, {v.failed} failed"
    if s["detail"]:
        detail = s["detail"] if len(s["detail"]) <= 160 else s["detail"][:159] + "…"
        out += f"<br>{label(detail)}"
    return out


def _drill_marks(doc: Rehearsal) -> list[tuple[float, str]]:
    return [(e["t"], e["label"]) for e in doc["events"] if e["kind"] == "drill"]


def _thin(acked: list[OpRecord]) -> tuple[list[OpRecord], str]:
    """Every acknowledged op up to MAX_POINTS; beyond, every k-th plus the slowest 1 % (the tail is the point)."""
    if len(acked) <= MAX_POINTS:
        return acked, ""
    k = math.ceil(len(acked) / (MAX_POINTS * 0.9))
    by_latency = sorted(range(len(acked)), key=lambda i: acked[i]["ended"] - acked[i]["started"])
    keep = set(range(0, len(acked), k)) | set(by_latency[-max(len(acked) // 100, 1) :])
    kept = [acked[i] for i in sorted(keep)]
    return kept, (
        f"{len(kept):,} of {len(acked):,} acknowledged operations drawn (every {k}th and the slowest "
        "1 %); the counts and percentiles above use all of them."
    )


def latency_figure(doc: Rehearsal, steps: Sequence[StepView], span: Span) -> tuple[go.Figure | None, str]:
    """One point per client operation at its start, its latency on a log scale, coloured by operation; failed
    operations as red crosses with their error in the hover."""
    ops = sorted(doc["ops"], key=lambda o: (o["started"], o["worker"], o["seq"]))
    if not ops:
        return None, ""
    acked, note = _thin([o for o in ops if o["ok"]])
    failed = [o for o in ops if not o["ok"]]
    fig = go.Figure()
    kinds = [k for k in OPS if any(o["op"] == k for o in acked)]
    kinds += sorted({o["op"] for o in acked} - set(kinds))
    for i, kind in enumerate(kinds):
        pick = [o for o in acked if o["op"] == kind]
        colour = OP_COLOURS.get(kind, htmlreport.TABLEAU10[i % len(htmlreport.TABLEAU10)])
        fig.add_trace(
            go.Scatter(
                x=[iso(o["started"]) for o in pick],
                y=[_latency(o) for o in pick],
                mode="markers",
                name=label(kind),
                marker={"color": colour, "size": 5, "opacity": 0.75},
                hovertext=[_op_hover(o) for o in pick],
                hovertemplate="%{hovertext}<extra></extra>",
            )
        )
    if failed:
        fig.add_trace(
            go.Scatter(
                x=[iso(o["started"]) for o in failed],
                y=[_latency(o) for o in failed],
                mode="markers",
                name=f"failed ({len(failed):,})",
                marker={"color": FAILED, "size": 10, "symbol": "x", "line": {"color": "#fff", "width": 0.5}},
                hovertext=[_op_hover(o) for o in failed],
                hovertemplate="%{hovertext}<extra></extra>",
            )
        )
    _bands(fig, steps, _drill_marks(doc))
    _layout(fig, span, 440, legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "x": 0, "xanchor": "left"})
    fig.update_layout(margin={**MARGIN, "t": 80})  # two legend rows below the mode bar
    fig.update_yaxes(
        type="log",
        title={"text": "latency (log scale)"},
        rangemode="normal",
        tickmode="array",
        tickvals=list(LATENCY_TICKS),
        ticktext=list(LATENCY_TICKS.values()),
    )
    return fig, note


def _latency(o: OpRecord) -> float:
    return max(o["ended"] - o["started"], 1e-4)


def _op_hover(o: OpRecord) -> str:
    head = f"<b>{label(o['op'])}</b> {label(o['entity'])}"
    body = f"<br>{label(o['client'])}, {label(o['worker'])} #{o['seq']}<br>started {clock(o['started'])}, "
    body += f"{seconds(o['ended'] - o['started'])}"
    if not o["ok"]:
        retry = " (retriable)" if o["retriable"] else " (not retriable)" if o["retriable"] is False else ""
        body += f"<br><b>failed: {label(o['error'] or 'unknown error')}</b>{retry}"
    return head + body


def errors_figure(doc: Rehearsal, steps: Sequence[StepView], span: Span) -> tuple[go.Figure | None, str]:
    """Per time bucket (about a sixtieth of the run, at least 1 s): the share of operations started in it that
    failed (red bars, the most frequent errors in the hover) against the per-step threshold, and the operations
    per second (grey line, right axis): a dip in the rate shows clients stalled rather than failing."""
    ops = doc["ops"]
    if not ops:
        return None, ""
    width = nice_bucket(span.t1 - span.t0)
    start = span.t0
    n = int((span.t1 - start) // width) + 1
    total, failed = [0] * n, [0] * n
    errors: list[Counter[str]] = [Counter() for _ in range(n)]
    for o in ops:
        i = min(max(int((o["started"] - start) // width), 0), n - 1)
        total[i] += 1
        if not o["ok"]:
            failed[i] += 1
            errors[i][o["error"] or "unknown error"] += 1
    xs = [iso(start + (i + 0.5) * width) for i in range(n)]
    share = [100 * f / t if t else None for f, t in zip(failed, total, strict=True)]
    hover = []
    for i in range(n):
        text = f"{clock(start + i * width)}\N{EN DASH}{clock(start + (i + 1) * width)}<br>"
        if total[i]:
            text += f"{failed[i]:,} of {total[i]:,} failed ({100 * failed[i] / total[i]:.1f} %)"
            text += "".join(f"<br>{label(e)} \N{MULTIPLICATION SIGN}{c}" for e, c in errors[i].most_common(5))
        else:
            text += "no operation started"
        hover.append(text)
    try:
        threshold = float(doc["settings"].get("error_threshold") or 0.0) * 100
    except (TypeError, ValueError):
        threshold = 0.0
    fig = go.Figure()
    fig.add_trace(
        go.Bar(
            x=xs,
            y=share,
            width=width * 1000 * 0.85,
            name="failed share",
            marker={"color": FAILED},
            hovertext=hover,
            hovertemplate="%{hovertext}<extra></extra>",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=xs,
            y=[t / width for t in total],
            name="operations per second (right axis)",
            yaxis="y2",
            mode="lines",
            line={"color": "#444", "width": 1.5},
            hovertext=[f"{t:,} started in {width} s: {t / width:.1f}/s" for t in total],
            hovertemplate="%{hovertext}<extra></extra>",
        )
    )
    _bands(fig, steps, _drill_marks(doc))
    top = max([s for s in share if s is not None] + [threshold * 1.6, 1.0])
    if threshold:
        fig.add_shape(
            type="line",
            xref="paper",
            yref="y",
            x0=0,
            x1=1,
            y0=threshold,
            y1=threshold,
            line={"color": FAILED_DARK, "width": 1, "dash": "dot"},
            layer="above",
        )
        fig.add_annotation(
            x=0,
            xref="paper",
            xanchor="left",
            y=threshold,
            yref="y",
            yanchor="bottom",
            text=f"per-step threshold {threshold:g} %",
            showarrow=False,
            font={"size": 10, "color": FAILED_DARK},
            bgcolor="rgba(255,255,255,0.7)",
        )
    _layout(
        fig,
        span,
        330,
        bargap=0,
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "x": 0, "xanchor": "left"},
        yaxis2={
            "overlaying": "y",
            "side": "right",
            "rangemode": "tozero",
            "showgrid": False,
            "title": {"text": "ops/s"},
            "automargin": False,
            "tickmode": "auto",
            "nticks": 5,
        },
    )
    fig.update_layout(margin={**MARGIN, "t": 60})
    fig.update_layout(
        yaxis={"title": {"text": "failed (% of operations)"}, "range": [0, top * 1.1], "ticksuffix": " %"}
    )
    failed_total = sum(failed)
    note = f"Buckets of {width} s. " + (
        f"{failed_total:,} of {len(ops):,} operations failed." if failed_total else "No operation failed."
    )
    return fig, note


def _intervals(routes: Sequence[RouteSample], width: float) -> list[tuple[RouteSample, RouteSample]]:
    """Consecutive samples merged until an interval spans ``width`` (a few writes per half-second sample would
    make the share jump between 0 and 100 %)."""
    out: list[tuple[RouteSample, RouteSample]] = []
    if len(routes) < 2:
        return out
    begin = routes[0]
    for r in routes[1:]:
        if r["t"] - begin["t"] >= width or r is routes[-1]:
            out.append((begin, r))
            begin = r
    return out


def forwarding_figure(doc: Rehearsal, steps: Sequence[StepView], span: Span) -> tuple[go.Figure | None, str]:
    """The share of forwardable writes that reached ZooKeeper through the active controller (forwarded, or served
    by it) per interval, the share of nodes past the forwarding gate, and the writes a broker made to ZooKeeper
    itself (bars, right axis: grey while some node is below the gate, as designed; red after). After the dashed
    green line every node is past the gate: from there the share must stay at 100 % and there must be no bar."""
    routes = sorted(doc["routes"], key=lambda r: r["t"])
    if not routes:
        return None, ""
    width = nice_bucket(span.t1 - span.t0)
    passed = next((r for r in routes if r["nodes"] and r["nodes_forwarding"] >= r["nodes"]), None)
    fig = go.Figure()
    xs, share, direct, hover, widths, late = [], [], [], [], [], []
    for a, b in _intervals(routes, width):
        late.append(passed is not None and a["t"] >= passed["t"])
        via = max(b["forwarded"] - a["forwarded"], 0) + max(b["controller"] - a["controller"], 0)
        own = max(b["direct"] - a["direct"], 0)
        xs.append(iso((a["t"] + b["t"]) / 2))
        widths.append((b["t"] - a["t"]) * 1000 * 0.85)
        share.append(100 * via / (via + own) if via + own else None)
        direct.append(own)
        text = (
            f"{clock(a['t'])}\N{EN DASH}{clock(b['t'])}<br>forwarded {b['forwarded'] - a['forwarded']:.0f}, "
            f"served by the controller {b['controller'] - a['controller']:.0f}, "
            f"written by a broker itself {own:.0f}"
        )
        text += (
            f"<br>{100 * via / (via + own):.0f} % through the controller" if via + own else "<br>no forwardable write"
        )
        hover.append(text)
    for after, name, colour in (
        (False, "a broker wrote ZooKeeper itself (right axis)", "#c4c4c4"),
        (True, "... after every node passed the gate", FAILED),
    ):
        pick = [i for i, x in enumerate(late) if x == after and (direct[i] > 0 or not after)]
        if pick:
            fig.add_trace(
                go.Bar(
                    x=[xs[i] for i in pick],
                    y=[direct[i] for i in pick],
                    width=[widths[i] for i in pick],
                    yaxis="y2",
                    name=name,
                    marker={"color": colour},
                    hoverinfo="skip",
                )
            )
    fig.add_trace(
        go.Scatter(
            x=xs,
            y=share,
            name="writes through the controller",
            mode="lines+markers",
            connectgaps=False,
            line={"color": "#1f5fa8", "width": 2},
            marker={"size": 5},
            hovertext=hover,
            hovertemplate="%{hovertext}<extra></extra>",
        )
    )
    gate = [100 * r["nodes_forwarding"] / r["nodes"] if r["nodes"] else 0.0 for r in routes]
    fig.add_trace(
        go.Scatter(
            x=[iso(r["t"]) for r in routes],
            y=gate,
            name="nodes past the forwarding gate",
            mode="lines",
            line={"color": OK, "width": 2, "dash": "dash", "shape": "hv"},
            hovertext=[f"{clock(r['t'])}: {r['nodes_forwarding']} of {r['nodes']} nodes past the gate" for r in routes],
            hovertemplate="%{hovertext}<extra></extra>",
        )
    )
    _bands(fig, steps, _drill_marks(doc))
    if passed is not None:
        fig.add_shape(
            type="line",
            xref="x",
            yref="paper",
            x0=iso(passed["t"]),
            x1=iso(passed["t"]),
            y0=0,
            y1=1,
            line={"color": OK, "width": 2.5, "dash": "dash"},
            layer="above",
        )
        fig.add_annotation(
            x=iso(passed["t"]),
            xref="x",
            y=0.04,
            yref="paper",
            xanchor="left",
            yanchor="bottom",
            text=" every node past the gate",
            showarrow=False,
            font={"size": 11, "color": OK},
            bgcolor="rgba(255,255,255,0.8)",
        )
    peak = max(direct, default=0)
    _layout(
        fig,
        span,
        330,
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "x": 0, "xanchor": "left"},
        yaxis2={
            "overlaying": "y",
            "side": "right",
            "showgrid": False,
            "title": {"text": "writes"},
            "range": [0, max(peak * 3, 3)],
            "automargin": False,
            "tickmode": "auto",
            "nticks": 5,
            "tickformat": ",d",
        },
    )
    fig.update_layout(margin={**MARGIN, "t": 60}, bargap=0)
    fig.update_layout(yaxis={"title": {"text": "% of writes, of nodes"}, "range": [0, 108], "ticksuffix": " %"})
    if passed is None:
        note = "No sample has every node past the forwarding gate."
    else:
        since = [r for r in routes if r["t"] >= passed["t"]]
        leaked = since[-1]["direct"] - since[0]["direct"]
        note = f"Every node past the gate from {clock(passed['t'])} UTC (+{passed['t'] - doc['started']:.0f} s); " + (
            f"{leaked:.0f} forwardable write(s) by a broker itself after it."
            if leaked > 0
            else "no forwardable write by a broker itself after it."
        )
    return fig, note


def figure_divs(doc: Rehearsal, steps: Sequence[StepView]) -> tuple[dict[str, Markup | None], dict[str, str]]:
    span = Span.of(doc)
    lat, lat_note = latency_figure(doc, steps, span)
    err, err_note = errors_figure(doc, steps, span)
    fwd, fwd_note = forwarding_figure(doc, steps, span)
    made = {"timeline": timeline_figure(doc, steps, span), "latency": lat, "errors": err, "forwarding": fwd}
    divs = {k: htmlreport.to_div(f, f"fig-{k}") if f is not None else None for k, f in made.items()}
    return divs, {"latency": lat_note, "errors": err_note, "forwarding": fwd_note}


def figures(doc: Rehearsal) -> dict[str, go.Figure | None]:
    """The plotly figures by name (timeline, latency, errors, forwarding), for tests and notebooks."""
    steps = step_views(doc)
    span = Span.of(doc)
    return {
        "timeline": timeline_figure(doc, steps, span),
        "latency": latency_figure(doc, steps, span)[0],
        "errors": errors_figure(doc, steps, span)[0],
        "forwarding": forwarding_figure(doc, steps, span)[0],
    }
