"""The readiness report page, without Spark: built from realistic summaries (one cluster and a fleet, a
200-broker cluster, a cluster without racks, an empty one, with and without plans, a hostile topic name), checked
as text (every cluster, finding and plan is there; nothing loads from the network; foreign names are escaped),
written atomically with its JSON, and opened in a real headless Chromium to prove plotly draws every figure
offline and the page is not blank."""

from __future__ import annotations

import math
import os
import random
import re
import shutil
from pathlib import Path

import orjson
import pytest

from migrate.pipeline.bands import cluster_bands
from migrate.pipeline.report import render_html, write_report
from migrate.pipeline.report.figures import brokers_figure
from migrate.pipeline.summary import CHECKS, BrokerRow, ClusterSummary, Finding, PlanSummary, RackRow, Summary
from tests import htmlcheck
from tests.htmlcheck import Refs, chromium

HOSTILE_TOPIC = '<script>alert("topic")</script>'
HOSTILE_RACK = "<img src=x onerror=alert(1)>"
UNITS = {
    "malformed_znode": "znodes",
    "topic_v1": "topics",
    "no_topic_id": "topics",
    "delete_marker": "topics",
    "replica_skew": "brokers",
    "leader_skew": "brokers",
}


def _band(values: list[int]) -> list[int]:
    if not values:
        return [0, 0]
    avg = sum(values) / len(values)
    return [math.floor(avg * 0.91), math.ceil(avg * 1.09)]


def make_cluster(
    name: str,
    *,
    brokers: int = 9,
    racks: tuple[str, ...] = ("eu-west-1a", "eu-west-1b", "eu-west-1c"),
    partitions: int = 1800,
    rf: int = 3,
    topics: int = 120,
    findings: dict[str, tuple[int, list[str]]] | None = None,
    unregistered: tuple[int, ...] = (),
    skew: dict[int, float] | None = None,
    seed: int = 1,
) -> ClusterSummary:
    """A cluster as findings.py would summarise it: replicas spread over registered brokers with some noise
    (``skew`` multiplies a broker's share), a few replicas on unregistered ids, racks round-robin. With RF at
    least the number of racks every rack holds the same share (one replica of each partition), so the brokers of
    a smaller rack hold more; the bands are the pipeline's (:func:`cluster_bands`)."""
    rnd = random.Random(seed)
    ids = list(range(1, brokers + 1))
    rack_of = {b: racks[(b - 1) % len(racks)] if racks else None for b in ids}
    size = {r: sum(1 for b in ids if rack_of[b] == r) for r in set(rack_of.values())}
    fixed = bool(racks) and rf >= len(racks)  # every rack holds one replica of each partition
    share = {b: brokers / len(size) / size[rack_of[b]] if fixed else 1.0 for b in ids}
    weights = {b: rnd.uniform(0.96, 1.04) * (skew or {}).get(b, 1.0) * share[b] for b in ids}
    stray = 6 * len(unregistered)
    total = max(partitions * rf - stray, 0)
    wsum = sum(weights.values()) or 1.0
    rows: list[BrokerRow] = []
    for b in ids:
        replicas = round(total * weights[b] / wsum)
        led = replicas / share[b] / rf  # leaders are not held by racks: about P/N each, whatever the rack
        rows.append(
            BrokerRow(
                broker=b,
                rack=rack_of[b],
                registered=True,
                replicas=replicas,
                leaders=round(led * rnd.uniform(0.9, 1.1)),
                preferred=round(led),
            )
        )
    for b in unregistered:
        rows.append(BrokerRow(broker=b, rack=None, registered=False, replicas=6, leaders=0, preferred=2))
    bands = cluster_bands({rf: partitions}, size)
    by_rack = bands.replicas if bands else {}
    rack_rows: dict[str, RackRow] = {}
    for r in rows:
        if r["registered"]:
            key = r["rack"] or "(none)"
            band = list(by_rack.get(r["rack"], (0, 0)))
            rr = rack_rows.setdefault(key, RackRow(rack=key, brokers=0, replicas=0, leaders=0, band=band))
            rr["brokers"] += 1
            rr["replicas"] += r["replicas"]
            rr["leaders"] += r["leaders"]
    seeded = findings or {}
    out_findings = [
        Finding(
            check=cid,
            severity=sev,
            title=title,
            count=seeded.get(cid, (0, []))[0],
            unit=UNITS.get(cid, "partitions"),
            examples=sorted(seeded.get(cid, (0, []))[1])[:10],
        )
        for cid, sev, title, _why in CHECKS
    ]
    reg = [r for r in rows if r["registered"]]
    return ClusterSummary(
        cluster=name,
        counts={
            "brokers": brokers,
            "topics": topics if partitions else 0,
            "partitions": partitions,
            "replicas": sum(r["replicas"] for r in rows),
            "acls": 340 if brokers else 0,
            "acl_resources": 85 if brokers else 0,
            "quotas": 12 if brokers else 0,
            "malformed": seeded.get("malformed_znode", (0, []))[0],
        },
        findings=out_findings,
        brokers=rows,
        racks=[rack_rows[k] for k in sorted(rack_rows)],
        replica_band=[min(b[0] for b in by_rack.values()), max(b[1] for b in by_rack.values())] if by_rack else [0, 0],
        leader_band=_band([r["preferred"] for r in reg]),
    )


def make_plan(cluster: ClusterSummary, remove: int, *, violations: list[str] | None = None) -> PlanSummary:
    """Decommission ``remove``: its replicas and preferred leaderships spread evenly over the others."""
    reg = [b for b in cluster["brokers"] if b["registered"]]
    before = {str(b["broker"]): b["replicas"] for b in reg}
    leaders_before = {str(b["broker"]): b["preferred"] for b in reg}

    def spread(counts: dict[str, int]) -> dict[str, int]:
        total = sum(counts.values())
        rest = [k for k in counts if k != str(remove)]
        share, extra = divmod(total, len(rest))
        out = {k: share + (1 if i < extra else 0) for i, k in enumerate(rest)}
        out[str(remove)] = 0
        return out

    after, leaders_after = spread(before), spread(leaders_before)
    moves = sum(max(after[k] - before[k], 0) for k in before)
    return PlanSummary(
        cluster=cluster["cluster"],
        operation="decommission",
        brokers=[remove],
        moves=moves,
        lower_bound=before[str(remove)],
        kafka_generate_moves=sum(before.values()) * 2 // 3,
        partitions_changed=before[str(remove)],
        leader_changes=leaders_before[str(remove)],
        waves=3,
        plan_file=f"/srv/bridge/plans/{cluster['cluster']}-decommission-{remove}.json",
        before=before,
        after=after,
        leaders_before=leaders_before,
        leaders_after=leaders_after,
        violations=violations or [],
        warnings=["rack-unaware: only some brokers have broker.rack"] if violations else [],
        seconds=4.2,
    )


def fleet() -> Summary:
    """Three clusters and a plan: what the README's screenshot shows."""
    eu = make_cluster(
        "prod-eu",
        brokers=12,
        partitions=2400,
        seed=2,
        unregistered=(1007,),
        skew={4: 1.35, 11: 0.7},
        findings={
            "topic_v1": (3, ["billing.invoices", "legacy-audit", "payments.v1"]),
            "no_topic_id": (41, [f"legacy-{i:02d}" for i in range(10)]),
            "under_replicated": (17, [f"orders-{i}" for i in range(10)]),
            "unregistered_broker_replica": (6, ["clickstream-3", "clickstream-7", "metrics-1"]),
            "replica_skew": (2, ["4", "11"]),
            "preferred_leader_imbalance": (212, [f"payments-{i}" for i in range(10)]),
            "not_rack_aware": (33, [HOSTILE_TOPIC + "-0", "inventory-2"]),
        },
    )
    us = make_cluster(
        "prod-us",
        brokers=24,
        partitions=6000,
        racks=("us-east-1a", "us-east-1b", "us-east-1c"),
        seed=3,
        findings={
            "malformed_znode": (1, ["/brokers/topics/broken-topic"]),
            "api_reassignment": (4, ["events-0", "events-1", "events-2", "events-3"]),
            "delete_marker": (2, ["tmp-migration", "tmp-test"]),
            "leader_skew": (3, ["2", "9", "17"]),
        },
    )
    staging = make_cluster(
        "staging",
        brokers=3,
        partitions=300,
        racks=(),
        seed=4,
        findings={"under_replicated": (5, [f"scratch-{i}" for i in range(5)])},
    )
    return Summary(
        generated_at="2025-03-14T09:26:53+00:00",
        inputs=["/srv/snapshots/prod-eu.parquet", "/srv/snapshots/prod-us.parquet", "/srv/snapshots/staging.jsonl"],
        clusters=[eu, us, staging],
        plans=[make_plan(eu, 4)],
        stages={"ingest": 31.4, "model": 12.9, "report": 8.2, "plan": 4.6},
    )


def edge_cases() -> Summary:
    """A 200-broker cluster, one with no racks, one with no brokers or partitions, and a plan that violates."""
    big = make_cluster(
        "big",
        brokers=200,
        partitions=60000,
        racks=tuple(f"rack-{i}" for i in range(8)),
        seed=5,
        skew={17: 1.3, 150: 0.6},
        findings={"replica_skew": (2, ["17", "150"])},
        unregistered=(9001, 9002),
    )
    flat = make_cluster("no-racks", brokers=5, racks=(), partitions=500, seed=6)
    hostile = make_cluster(
        "hostile",
        brokers=4,
        racks=(HOSTILE_RACK, "ok-rack"),
        partitions=80,
        seed=7,
        findings={"delete_marker": (1, [HOSTILE_TOPIC])},
    )
    empty = make_cluster("empty", brokers=0, racks=(), partitions=0, seed=8)
    plan = make_plan(big, 17, violations=["rack-aware: 3 partitions"])
    return Summary(
        generated_at="2025-03-14T09:30:00+00:00",
        inputs=["/data/fleet"],
        clusters=[big, flat, hostile, uneven(), empty],
        plans=[plan],
    )


def uneven() -> ClusterSummary:
    """11 brokers in racks of 4, 4 and 3 with RF 3: each rack holds one replica of every partition, so each rack
    has its own band (rack-c's brokers hold a third more than the others); broker 3 is skewed within rack-c."""
    racks = ("rack-a", "rack-b", "rack-c")
    skewed = {"replica_skew": (1, ["broker 3: 520 replicas"])}
    return make_cluster("uneven", brokers=11, racks=racks, partitions=1320, seed=9, skew={3: 1.25}, findings=skewed)


def one_cluster() -> Summary:
    return Summary(
        generated_at="2025-03-14T09:31:00+00:00",
        inputs=["lab.parquet"],
        clusters=[make_cluster("lab", brokers=3, racks=(), partitions=30, topics=4)],
        plans=[],
    )


# --- the page as text ---------------------------------------------------------------------------------------------


def _section(page: str, anchor: str) -> str:
    m = re.search(rf'<section class="cluster" id="{re.escape(anchor)}">(.*?)</section>', page, re.S)
    assert m, f"no section {anchor}"
    return m.group(1)


def test_every_cluster_nonzero_finding_and_plan_is_on_the_page():
    s = fleet()
    page = render_html(s)
    for c in s["clusters"]:
        anchor = f"cluster-{c['cluster']}"
        assert f'href="#{anchor}"' in page
        section = _section(page, anchor)
        for f in c["findings"]:
            shown = f'data-check="{f["check"]}"' in section
            assert shown == (f["count"] > 0), (c["cluster"], f["check"])
        assert f'id="fig-{anchor}-brokers"' in section
        assert (f'id="fig-{anchor}-racks"' in section) == any(r["rack"] != "(none)" for r in c["racks"])
    # Blockers before warnings before info, whatever CHECKS' order.
    eu = _section(page, "cluster-prod-eu")
    order = [m.group(1) for m in re.finditer(r'<li class="finding (\w+)"', eu)]
    assert order == sorted(order, key=["blocker", "warning", "info"].index) and len(order) == 7
    assert "and 31 more" in eu  # 41 topics without an id, 10 examples
    assert 'id="plan-1"' in page and 'id="fig-plan-1"' in page
    assert "/srv/bridge/plans/prod-eu-decommission-4.json" in page
    assert "Meets every hard constraint." in page
    assert 'id="fig-fleet"' in page


def test_verdict_line_counts_clusters_with_blockers():
    page = render_html(fleet())
    assert re.search(r'id="verdict">3 clusters, 2 with blockers, 1 with warnings only<', page)
    s = one_cluster()
    assert ">1 cluster, none with blockers or warnings<" in render_html(s)
    s["clusters"].append(make_cluster("bad", findings={"offline_partition": (2, ["a-0", "b-1"])}))
    s["clusters"].append(make_cluster("worse", findings={"under_min_isr": (1, ["c-0"])}))
    assert ">3 clusters, 2 with blockers<" in render_html(s)


def test_violations_are_listed_and_plans_are_optional():
    page = render_html(edge_cases())
    assert "Violates 1 hard constraint" in page and "rack-aware: 3 partitions" in page
    assert "Meets every hard constraint" not in page
    assert "rack-unaware: only some brokers have broker.rack" in page
    page = render_html(one_cluster())
    assert 'id="plans"' not in page and "fig-plan" not in page


@pytest.mark.parametrize("make", [fleet, edge_cases, one_cluster])
def test_the_page_loads_nothing_from_the_network(make):
    page = render_html(make())
    refs = Refs()
    refs.feed(page)
    assert refs.urls and all(u.startswith("#") for u in refs.urls), [u for u in refs.urls if not u.startswith("#")]
    assert refs.scripts and all("src" not in s for s in refs.scripts)
    css = "\n".join(refs.styles)
    assert "@import" not in css and "url(" not in css
    assert "default-src 'none'" in page  # and the browser is told to refuse any fetch
    # plotly.js once, inline: the page is ~5 MB of plotly.js and a little of ours.
    assert page.count("* plotly.js v") == 1
    assert len(page) < 5_500_000


def test_foreign_names_are_escaped():
    page = render_html(fleet()) + render_html(edge_cases())
    assert HOSTILE_TOPIC not in page and "<script>alert" not in page
    assert "&lt;script&gt;alert(&#34;topic&#34;)&lt;/script&gt;" in page  # in the findings' examples
    assert HOSTILE_RACK not in page and "<img" not in page
    assert "&amp;lt;img src=x onerror=alert(1)&amp;gt;" not in page  # escaped once, not twice
    assert r"\u0026lt;img src=x onerror=alert(1)\u003e" not in page  # plotly's JSON carries it as &lt;img...
    assert "&lt;img src=x onerror=alert(1)&gt;" in page


@pytest.mark.parametrize(
    ("summary", "figures"),
    [
        (one_cluster(), ["fig-cluster-lab-brokers"]),
        (
            edge_cases(),
            [
                "fig-fleet",
                "fig-cluster-big-brokers",
                "fig-cluster-big-racks",
                "fig-cluster-no-racks-brokers",
                "fig-cluster-hostile-brokers",
                "fig-cluster-hostile-racks",
                "fig-cluster-uneven-brokers",
                "fig-cluster-uneven-racks",
                "fig-plan-1",
            ],
        ),
        (Summary(generated_at="2025-03-14T09:32:00+00:00", inputs=[], clusters=[], plans=[]), []),
    ],
    ids=["one-cluster-clean", "edge-cases", "no-clusters"],
)
def test_figures_are_drawn_where_there_is_something_to_draw(summary, figures):
    page = render_html(summary)
    assert re.findall(r'<div id="(fig-[^"]+)" class="plotly-graph-div"', page) == figures
    if not summary["clusters"]:
        assert "No clusters in the inputs." in page
    for c in summary["clusters"]:
        if not c["brokers"]:
            assert "No brokers and no replicas: nothing to plot." in _section(page, f"cluster-{c['cluster']}")


def test_unequal_racks_shade_each_racks_band_over_its_own_brokers():
    c = uneven()
    bands = {r["rack"]: r["band"] for r in c["racks"]}
    assert bands == {"rack-a": [300, 360], "rack-b": [300, 360], "rack-c": [400, 480]}  # 330 and 440 ± 9 %
    assert c["replica_band"] == [300, 480]  # spans the racks' bands
    skewed = []
    for b in c["brokers"]:
        low, high = bands[b["rack"] or "(none)"]
        if not low <= b["replicas"] <= high:
            skewed.append(b["broker"])
    assert skewed == [3]
    fig = brokers_figure(c)
    assert fig is not None
    top = [s for s in fig.layout.shapes if s.yref == "y"]
    rects = sorted((s.x0, s.x1, s.y0, s.y1) for s in top if s.type == "rect")
    # Brokers drawn rack by rack (1 4 7 10 | 2 5 8 11 | 3 6 9) on a category axis: broker i at x = i.
    assert rects == [(-0.5, 3.5, 300, 360), (3.5, 7.5, 300, 360), (7.5, 10.5, 400, 480)]
    assert all(s.xref == "x" for s in top)  # over the rack's brokers, not the whole width
    labels = [a.text for a in fig.layout.annotations if a.yref == "y"]
    assert labels == ["band 300\N{EN DASH}360", "band 300\N{EN DASH}360", "band 400\N{EN DASH}480"]
    # The leader band stays cluster-wide: one strip across the bottom row.
    assert [s.type for s in fig.layout.shapes if s.yref == "y2"] == ["rect", "line", "line"]
    assert [s.xref for s in fig.layout.shapes if s.yref == "y2"] == ["x2 domain"] * 3
    section = _section(render_html(edge_cases()), "cluster-uneven")
    assert "Green bands, one per rack" in section and "each rack's reachable average ± 9 %" in section
    assert "rack-a 300\N{EN DASH}360, rack-b 300\N{EN DASH}360, rack-c 400\N{EN DASH}480" in section


def test_racks_sharing_one_band_draw_it_across_the_plot():
    c = fleet()["clusters"][0]  # 12 brokers on 3 racks of 4
    assert {tuple(r["band"]) for r in c["racks"]} == {tuple(c["replica_band"])}
    fig = brokers_figure(c)
    assert fig is not None
    assert [s.xref for s in fig.layout.shapes if s.yref == "y"] == ["x domain"] * 3
    assert "replica band" in " ".join(a.text for a in fig.layout.annotations)
    section = _section(render_html(fleet()), "cluster-prod-eu")
    lo, hi = c["replica_band"]
    assert f"Green band: replicas per registered broker within {lo:,}\N{EN DASH}{hi:,}" in section
    assert "one per rack" not in section


def test_render_is_deterministic():
    assert render_html(fleet()) == render_html(fleet())


# --- writing ------------------------------------------------------------------------------------------------------


def test_write_report_writes_both_files_and_the_json_round_trips(tmp_path):
    s = fleet()
    out = tmp_path / "out"
    write_report(s, out / "report.html", out / "report.json")
    assert sorted(p.name for p in out.iterdir()) == ["report.html", "report.json"]  # no temporary file left
    assert (out / "report.html").read_text() == render_html(s)
    assert orjson.loads((out / "report.json").read_bytes()) == s
    assert (out / "report.json").read_text().startswith('{\n  "')  # indented for people and diffs
    write_report(s, tmp_path / "only.html")
    assert not list(tmp_path.glob("*.json"))


def test_a_failed_write_leaves_the_previous_report_whole(tmp_path, monkeypatch):
    write_report(one_cluster(), tmp_path / "report.html", tmp_path / "report.json")
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}

    def fail(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)  # what outputs.write_atomic renames with
    with pytest.raises(OSError, match="disk full"):
        write_report(fleet(), tmp_path / "report.html", tmp_path / "report.json")
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before  # and no temporary file left behind


# --- in a real browser --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("make", [fleet, edge_cases], ids=["fleet", "edge-cases"])
def test_chromium_draws_every_figure_offline(tmp_path, make):
    s = make()
    page = tmp_path / "report.html"
    write_report(s, page)
    figures = re.findall(r'<div id="(fig-[^"]+)" class="plotly-graph-div"', page.read_text())
    dom = chromium(tmp_path, page, "--dump-dom")
    drawn = htmlcheck.drawn(dom)
    assert list(drawn) == figures and all(n >= 1 for n in drawn.values()), drawn
    assert dom.count('class="main-svg"') >= 2 * len(figures)
    if make is edge_cases:  # the 200-broker plot (and two unregistered ids) drew its axis
        assert "broker id (202 brokers, grouped by rack)" in dom
        return
    png = tmp_path / "report.png"
    chromium(tmp_path, page, f"--screenshot={png}")
    if target := os.environ.get("BK_REPORT_SCREENSHOT"):
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(png, target)
    _assert_not_blank(png)


def _assert_not_blank(png: Path) -> None:
    from PIL import Image

    with Image.open(png) as im:
        rgb = im.convert("RGB")
    assert rgb.size == (1400, 2400)
    colours = htmlcheck.colours(rgb)
    assert len(colours) > 500, f"only {len(colours)} colours: the page looks blank"
    # The fleet heatmap and the first cluster's broker plot sit in the lower two thirds: saturated pixels there
    # are plotly's drawing (text and tables are grey or pastel).
    plot_area = rgb.crop((0, 800, 1400, 2400))
    saturated = sum(n for n, (r, g, b) in htmlcheck.colours(plot_area) if max(r, g, b) - min(r, g, b) > 80)
    assert saturated > 20_000, f"only {saturated} saturated pixels below the tables: no plot was drawn"
    white = next((n for n, c in colours if c == (255, 255, 255)), 0)
    assert white < 0.9 * 1400 * 2400
