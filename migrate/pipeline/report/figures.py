"""The report's plotly figures, built from the summary alone (no Spark, no network).

Every figure must stay readable from one cluster to fifty and from three brokers to a few hundred, because the
same renderer serves a lab cluster and a fleet. So brokers sit on *category* axes (plotly.js thins category tick
labels to the width it has and rotates them when they would collide), heights grow with the number of rows they
show, and anything exact (ids, counts, racks) is in the hover text rather than squeezed onto the axes.

Plotly reads ``<b>``, ``<br>`` and ``<a href>`` inside any label, so every name that comes from a foreign
cluster (cluster and rack names) is HTML-escaped before it reaches a figure: plotly.js turns the entities back
into the literal text when it draws it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from migrate.htmlreport import TABLEAU10, TEMPLATE, label
from migrate.pipeline.summary import CHECKS, BrokerRow, ClusterSummary, PlanSummary, RackRow, Severity

#: Racks cycle through Tableau 10.
RACK_COLOURS = TABLEAU10
UNREGISTERED = "#d62728"
SEVERITY_SCALES: dict[Severity, list[list[Any]]] = {
    "blocker": [[0.0, "#f6c9c5"], [1.0, "#9e1b16"]],
    "warning": [[0.0, "#fde2bd"], [1.0, "#b85c00"]],
    "info": [[0.0, "#cfe0f5"], [1.0, "#1f4f8f"]],
}
SEVERITY_ORDER: tuple[Severity, ...] = ("blocker", "warning", "info")
#: Column labels short enough for fourteen columns side by side; the full titles are in the hover and the tables.
SHORT_TITLES = {
    "malformed_znode": "malformed",
    "topic_v1": "v1 topics",
    "no_topic_id": "no topic id",
    "pending_legacy_reassignment": "legacy reassign",
    "api_reassignment": "API reassign",
    "delete_marker": "delete marks",
    "offline_partition": "offline",
    "under_replicated": "under-replicated",
    "under_min_isr": "under min ISR",
    "unregistered_broker_replica": "unregistered",
    "preferred_leader_imbalance": "not preferred",
    "not_rack_aware": "rack-unaware",
    "replica_skew": "replica skew",
    "leader_skew": "leader skew",
}


def unit_for(count: int, unit: str) -> str:
    """The summary's units are plurals ("znodes", "partitions"); "1 znodes" reads as a typo in a report."""
    return unit[:-1] if count == 1 and unit.endswith("s") else unit


def _pct(n: int, total: int, unit: str) -> str:
    share = 100 * n / total
    return f"{share:.2g} % of all {unit}" if share < 10 else f"{share:.0f} % of all {unit}"


def _severity_scale() -> list[list[Any]]:
    """One colour scale for the three severities side by side: z in [0, 1) is a blocker's depth, [1, 2) a
    warning's, [2, 3] an info's. One heatmap trace can then hold every column: plotly.js misplaces the cell
    texts of several heatmap traces sharing a category axis."""
    scale: list[list[Any]] = []
    for i, severity in enumerate(SEVERITY_ORDER):
        light, dark = SEVERITY_SCALES[severity]
        scale += [[i / 3, light[1]], [(i + 1) / 3 - 1e-6, dark[1]]]
    scale[-1][0] = 1.0
    return scale


def fleet_heatmap(clusters: Sequence[ClusterSummary]) -> go.Figure:
    """Findings per cluster across the fleet: one row per cluster, one column per check (blockers, warnings,
    info), the cell's hue its severity and its depth the count on a log scale (counts run from one malformed
    znode to tens of thousands of partitions), the count written in the cell, blank when zero."""
    columns = sorted(CHECKS, key=lambda c: SEVERITY_ORDER.index(c[1]))
    xs = [SHORT_TITLES[cid] for cid, *_ in columns]
    by_check = [{f["check"]: f for f in c["findings"]} for c in clusters]
    peak = max((f["count"] for c in clusters for f in c["findings"]), default=1)
    top = max(math.log10(max(peak, 1)), 1.0)
    z: list[list[float | None]] = []
    text: list[list[str]] = []
    hover: list[list[str]] = []
    for c, found in zip(clusters, by_check, strict=True):
        zr: list[float | None] = []
        tr: list[str] = []
        hr: list[str] = []
        for cid, severity, title, _why in columns:
            f = found.get(cid)
            n = f["count"] if f else 0
            unit = f["unit"] if f else ""
            rank = SEVERITY_ORDER.index(severity)
            zr.append(rank + 0.999 * min(math.log10(n) / top, 1.0) if n > 0 else None)
            tr.append(f"{n:,}" if n > 0 else "")
            total = {
                "partitions": c["counts"]["partitions"],
                "topics": c["counts"]["topics"],
                "brokers": c["counts"]["brokers"],
            }.get(unit, 0)
            share = f" ({_pct(n, total, unit)})" if n and total else ""
            hr.append(f"<b>{label(c['cluster'])}</b><br>{severity}: {title}<br>{n:,} {unit_for(n, unit)}{share}")
        z.append(zr)
        text.append(tr)
        hover.append(hr)
    fig = go.Figure(
        go.Heatmap(
            x=xs,
            y=[label(c["cluster"]) for c in clusters],
            z=z,
            text=text,
            hovertext=hover,
            texttemplate="%{text}",
            hovertemplate="%{hovertext}<extra></extra>",
            colorscale=_severity_scale(),
            zmin=0,
            zmax=3,
            showscale=False,
            xgap=2,
            ygap=2,
            textfont={"size": 11},
        )
    )
    ticks = [f'<span style="color:{SEVERITY_SCALES[sev][1][1]}">{SHORT_TITLES[cid]}</span>' for cid, sev, *_ in columns]
    fig.update_layout(
        template=TEMPLATE,
        height=130 + 26 * len(clusters),
        margin={"t": 34, "b": 10},  # a strip above the column labels for plotly's tool bar
        plot_bgcolor="#f3f3f3",
        xaxis={
            "type": "category",
            "side": "top",
            "ticks": "",
            "linecolor": "#fff",
            "tickmode": "array",
            "tickvals": xs,
            "ticktext": ticks,
        },
        yaxis={"type": "category", "autorange": "reversed", "gridcolor": "#fff", "ticks": "", "rangemode": "normal"},
    )
    return fig


def _broker_order(brokers: Sequence[BrokerRow]) -> list[tuple[str, list[BrokerRow]]]:
    """Registered brokers grouped by rack (racks sorted, no rack last), then the unregistered ones: the groups
    in which the broker plots draw them, left to right."""
    groups: dict[str, list[BrokerRow]] = {}
    for b in brokers:
        key = (b["rack"] or "(none)") if b["registered"] else ""
        groups.setdefault(key, []).append(b)
    keys = sorted(k for k in groups if k not in ("", "(none)"))
    keys += [k for k in ("(none)", "") if k in groups]
    return [(k, sorted(groups[k], key=lambda b: b["broker"])) for k in keys]


def rack_colours(racks: Sequence[str]) -> dict[str, str]:
    """One colour per rack, the same in a cluster's broker and rack plots."""
    return {r: RACK_COLOURS[i % len(RACK_COLOURS)] for i, r in enumerate(racks)}


def _n(row: int) -> str:
    """The axis-name suffix of a subplot row ("x", "x2", ...)."""
    return "" if row == 1 else str(row)


def _whole_ticks(fig: go.Figure, values: Sequence[float], row: int, col: int) -> None:
    """Counts of a few (brokers per rack, leaders on a lab cluster) must not get ticks at 0.5."""
    if max(values, default=0) <= 8:
        fig.update_yaxes(dtick=1, row=row, col=col)


def _separators(fig: go.Figure, bounds: Sequence[int]) -> None:
    for at in bounds:
        fig.add_vline(x=at - 0.5, line={"color": "#999", "width": 1, "dash": "dot"})


def _line_label(fig: go.Figure, row: int, y: float, text: str, color: str) -> None:
    """A label sitting on a horizontal reference line at the right edge of a subplot row."""
    fig.add_annotation(
        x=1,
        y=y,
        xref=f"x{_n(row)} domain",
        yref=f"y{_n(row)}",
        xanchor="right",
        yanchor="bottom",
        showarrow=False,
        text=text,
        font={"size": 11, "color": color},
        bgcolor="rgba(255,255,255,0.8)",
    )


def _band(fig: go.Figure, band: Sequence[int], row: int, what: str) -> None:
    low, high = band
    if high <= 0:
        return
    fig.add_hrect(y0=low, y1=high, row=row, col=1, fillcolor="#2ca02c", opacity=0.14, line_width=0, layer="above")
    for y in (low, high):
        fig.add_hline(y=y, row=row, col=1, line={"color": "#2ca02c", "width": 1, "dash": "dash"})
    _line_label(fig, row, high, f"{what} band {low:,}\N{EN DASH}{high:,}", "#1b7a1b")


def rack_bands(cluster: ClusterSummary) -> dict[str, list[int]] | None:
    """Each rack's replica band when the racks' bands differ (the rack rule held some rack to its own reachable
    average); None when every rack shares the cluster's band."""
    bands = {r["rack"]: r["band"] for r in cluster["racks"] if "band" in r}
    return bands if len({tuple(b) for b in bands.values()}) > 1 else None


def _rack_bands(fig: go.Figure, groups: Sequence[tuple[str, list[BrokerRow]]], bands: dict[str, list[int]]) -> None:
    """Each rack's replica band shaded over that rack's brokers only (the top row's category axis: broker i of
    the drawing order sits at x = i), labelled above it with its range."""
    at = 0
    for key, rows in groups:
        first, at = at, at + len(rows)
        low, high = bands.get(key, (0, 0))
        if not key or high <= 0:
            continue
        x0, x1 = first - 0.5, at - 0.5
        span = {"xref": "x", "yref": "y", "x0": x0, "x1": x1}
        fig.add_shape(
            type="rect", y0=low, y1=high, fillcolor="#2ca02c", opacity=0.14, line_width=0, layer="above", **span
        )
        for y in (low, high):
            fig.add_shape(type="line", y0=y, y1=y, line={"color": "#2ca02c", "width": 1, "dash": "dash"}, **span)
        fig.add_annotation(
            x=(x0 + x1) / 2,
            y=high,
            xref="x",
            yref="y",
            yanchor="bottom",
            showarrow=False,
            text=f"band {low:,}\N{EN DASH}{high:,}",
            font={"size": 11, "color": "#1b7a1b"},
            bgcolor="rgba(255,255,255,0.8)",
            hovertext=f"rack {label(key)}: its reachable average \N{PLUS-MINUS SIGN} 9 %",
        )


def brokers_figure(cluster: ClusterSummary) -> go.Figure | None:
    """Replicas (top) and leaders (bottom) per broker, coloured and grouped by rack, with the balance bands
    shaded: a broker whose bar ends outside the green band is the one the skew findings name. When the racks'
    replica bands differ, each rack's is shaded over its own brokers only. Unregistered brokers (replicas
    pointing at an id with no registration) come last, hatched red. None when the cluster has no broker to
    draw."""
    groups = _broker_order(cluster["brokers"])
    if not groups:
        return None
    order = [str(b["broker"]) for _, rows in groups for b in rows]
    colours = rack_colours([k for k, _ in groups if k])
    fig = make_subplots(
        rows=2,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.12,
        row_heights=[0.55, 0.45],
        subplot_titles=("Replicas per broker", "Leaders per broker: current (bars), preferred (dots)"),
    )
    racked = any(k not in ("", "(none)") for k, _ in groups)
    per_rack = rack_bands(cluster)
    for key, rows in groups:
        xs = [str(b["broker"]) for b in rows]
        if key:
            name = label(key) if racked else "no broker.rack"
            marker: dict[str, Any] = {"color": colours[key]}
        else:
            name = "unregistered (no /brokers/ids)"
            marker = {
                "color": "#fff",
                "line": {"color": UNREGISTERED, "width": 1.5},
                "pattern": {"shape": "x", "fgcolor": UNREGISTERED, "size": 6},
            }
        band_note = ""
        if per_rack and key in per_rack:
            band_note = f"<br>its rack's replica band {per_rack[key][0]:,}\N{EN DASH}{per_rack[key][1]:,}"
        hover = [
            f"broker {b['broker']}<br>rack {label(b['rack'] or '(none)')}"
            + ("" if b["registered"] else "<br><b>not registered</b>")
            + f"<br>replicas {b['replicas']:,}<br>leaders {b['leaders']:,} (preferred {b['preferred']:,})"
            + band_note
            for b in rows
        ]
        common = {
            "x": xs,
            "name": name,
            "legendgroup": key or "unregistered",
            "marker": marker,
            "hovertext": hover,
            "hovertemplate": "%{hovertext}<extra></extra>",
        }
        fig.add_trace(go.Bar(y=[b["replicas"] for b in rows], **common), row=1, col=1)
        fig.add_trace(go.Bar(y=[b["leaders"] for b in rows], showlegend=False, **common), row=2, col=1)
    fig.add_trace(
        go.Scatter(
            x=order,
            y=[b["preferred"] for _, rows in groups for b in rows],
            mode="markers",
            name="preferred leaders",
            marker={"color": "#222", "size": 5 if len(order) > 60 else 7, "symbol": "circle"},
            hoverinfo="skip",
        ),
        row=2,
        col=1,
    )
    stray = [b for b in cluster["brokers"] if not b["registered"]]
    if stray:
        # A handful of replicas makes no visible bar next to hundreds: mark the ids above the axis as well.
        fig.add_trace(
            go.Scatter(
                x=[str(b["broker"]) for b in stray],
                y=[b["replicas"] for b in stray],
                mode="markers+text",
                marker={"symbol": "x", "size": 11, "color": UNREGISTERED},
                text=["unregistered"] + [""] * (len(stray) - 1),
                textposition="top center",
                textfont={"color": UNREGISTERED, "size": 10},
                showlegend=False,
                legendgroup="unregistered",
                hoverinfo="skip",
                cliponaxis=False,
            ),
            row=1,
            col=1,
        )
    if per_rack:
        _rack_bands(fig, groups, per_rack)
    else:
        _band(fig, cluster["replica_band"], 1, "replica")
    _band(fig, cluster["leader_band"], 2, "preferred-leader")
    bounds, at = [], 0
    for _, rows in groups[:-1]:
        at += len(rows)
        bounds.append(at)
    _separators(fig, bounds)
    axis = {"type": "category", "categoryorder": "array", "categoryarray": order}
    fig.update_xaxes(**axis)
    grouped = ", grouped by rack" if racked else ""
    fig.update_xaxes(title_text=f"broker id ({len(order)} brokers{grouped})", row=2, col=1)
    _whole_ticks(fig, [b["replicas"] for b in cluster["brokers"]], 1, 1)
    _whole_ticks(fig, [max(b["leaders"], b["preferred"]) for b in cluster["brokers"]], 2, 1)
    fig.update_yaxes(title_text="replicas", row=1, col=1)
    fig.update_yaxes(title_text="leaders", row=2, col=1)
    fig.update_layout(template=TEMPLATE, height=560, barmode="group", bargap=0.15, margin={"t": 90})
    return fig


def racks_figure(cluster: ClusterSummary) -> go.Figure | None:
    """Replicas, current leaders and brokers per rack, side by side (their scales differ by orders of magnitude),
    with a black tick at each rack's fair share (the cluster total times its share of the brokers): a rack
    holding more than its brokers' share loses more when it fails. Where the rack rule makes that share
    unreachable (the racks' replica bands differ), the replicas' tick is the rack's reachable share instead: the
    total split in proportion to each rack's band (its reachable average ± 9 %) times its brokers."""
    racks: list[RackRow] = cluster["racks"]
    if all(r["rack"] == "(none)" for r in racks):
        return None  # no broker.rack anywhere: one bar per panel would say nothing the counts don't
    names = [r["rack"] for r in racks]
    colours = rack_colours(names)
    xs = [label(n) for n in names]
    total_brokers = sum(r["brokers"] for r in racks) or 1
    titles = ("Replicas", "Current leaders", "Brokers")  # the section's heading says "per rack"
    fig = make_subplots(rows=1, cols=3, horizontal_spacing=0.08, subplot_titles=titles)
    for col, key in enumerate(("replicas", "leaders", "brokers"), start=1):
        values = [int(r[key]) for r in racks]  # type: ignore[literal-required]
        fig.add_trace(
            go.Bar(
                x=xs,
                y=values,
                marker={"color": [colours[n] for n in names]},
                showlegend=False,
                name=key,
                hovertemplate="%{x}: %{y:,} " + key + "<extra></extra>",
            ),
            row=1,
            col=col,
        )
        _whole_ticks(fig, values, 1, col)
        if key != "brokers" and len(racks) > 1:
            total = sum(values)
            fair = [total * r["brokers"] / total_brokers for r in racks]
            if key == "replicas" and len({tuple(r["band"]) for r in racks}) > 1:
                weight = [(r["band"][0] + r["band"][1]) / 2 * r["brokers"] for r in racks]
                fair = [total * w / (sum(weight) or 1) for w in weight]
            fig.add_trace(
                go.Scatter(
                    x=xs,
                    y=fair,
                    mode="markers",
                    name="fair share",
                    showlegend=col == 1,
                    marker={"symbol": "line-ew-open", "size": 28, "color": "#222", "line": {"width": 2.5}},
                    hovertemplate="%{x}: fair share %{y:,.0f}<extra></extra>",
                ),
                row=1,
                col=col,
            )
    fig.update_xaxes(type="category")
    fig.update_layout(template=TEMPLATE, height=330, margin={"t": 80}, legend={"y": 1.16})
    return fig


def plan_figure(plan: PlanSummary) -> go.Figure | None:
    """Replicas (top) and preferred leaders (bottom) per broker before and after the plan: a wide grey bar
    before, a narrower blue one after, so each broker's change reads in place; the brokers the operation names
    are orange (a removed broker's wide bar hatched, since its "after" is no bar at all; an added broker's narrow
    bar solid). A dashed line marks the average the plan balances towards. None when the plan has no broker."""
    ids = sorted({int(b) for b in (*plan["before"], *plan["after"], *plan["leaders_before"], *plan["leaders_after"])})
    if not ids:
        return None
    xs = [str(b) for b in ids]
    named = set(plan["brokers"])
    verb = {"decommission": "removed", "add-brokers": "added"}.get(plan["operation"], "named")
    fig = make_subplots(
        rows=2,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.12,
        row_heights=[0.55, 0.45],
        subplot_titles=("Replicas per broker, before and after", "Preferred leaders per broker, before and after"),
    )
    for row, before, after in ((1, plan["before"], plan["after"]), (2, plan["leaders_before"], plan["leaders_after"])):
        b = [before.get(x, 0) for x in xs]
        a = [after.get(x, 0) for x in xs]
        hover = [
            f"broker {x}{f' ({verb})' if int(x) in named else ''}<br>{p:,} → {q:,}"
            for x, p, q in zip(xs, b, a, strict=True)
        ]
        # The named brokers' "before" bars are hatched orange: a removed broker's "after" is zero, no bar at all.
        for part, name in ((False, "before"), (True, f"before, {verb} brokers")):
            pick = [i for i, x in enumerate(xs) if (int(x) in named) == part and (not part or b[i] > 0)]
            marker: dict[str, Any] = {"color": "#c9c9c9"}
            if part:
                marker = {
                    "color": "#f6d9bd",
                    "line": {"width": 1.5, "color": "#f28e2b"},
                    "pattern": {"shape": "/", "fgcolor": "#f28e2b", "bgcolor": "#f6d9bd"},
                }
            if pick:
                fig.add_trace(
                    go.Bar(
                        x=[xs[i] for i in pick],
                        y=[b[i] for i in pick],
                        name=name,
                        width=0.84,
                        marker=marker,
                        showlegend=row == 1,
                        legendgroup=name,
                        hovertext=[hover[i] for i in pick],
                        hovertemplate="%{hovertext}<extra></extra>",
                    ),
                    row=row,
                    col=1,
                )
        for part, colour, name in ((False, "#4e79a7", "after"), (True, "#f28e2b", f"after, {verb} brokers")):
            pick = [i for i, x in enumerate(xs) if (int(x) in named) == part and (not part or a[i] > 0)]
            if not pick:
                continue
            fig.add_trace(
                go.Bar(
                    x=[xs[i] for i in pick],
                    y=[a[i] for i in pick],
                    name=name,
                    width=0.46,
                    showlegend=row == 1,
                    legendgroup=name,
                    marker={"color": colour},
                    hovertext=[hover[i] for i in pick],
                    hovertemplate="%{hovertext}<extra></extra>",
                ),
                row=row,
                col=1,
            )
        _whole_ticks(fig, b + a, row, 1)
        keep = [q for x, q in zip(xs, a, strict=True) if not (verb == "removed" and int(x) in named)]
        if keep:
            mean = sum(keep) / len(keep)
            fig.add_hline(y=mean, row=row, col=1, line={"color": "#1f4f8f", "width": 1, "dash": "dash"})
            _line_label(fig, row, mean, f"average after {mean:,.1f}", "#1f4f8f")
    fig.update_xaxes(type="category", categoryorder="array", categoryarray=xs)
    ids_named = ", ".join(str(b) for b in sorted(named)) if len(named) <= 8 else f"{len(named)} brokers"
    what = f"; {verb}: {ids_named}, orange" if named else ""
    fig.update_xaxes(title_text=f"broker id ({len(xs)} brokers{what})", row=2, col=1)
    fig.update_yaxes(title_text="replicas", row=1, col=1)
    fig.update_yaxes(title_text="preferred leaders", row=2, col=1)
    fig.update_layout(template=TEMPLATE, height=520, barmode="overlay", margin={"t": 90})
    return fig
