"""A dashboard declared as data (:class:`Board` of :class:`Row` of :class:`Panel`) and its Grafana JSON, built
with grafana-foundation-sdk. Conventions, after Strimzi's and Confluent's Kafka dashboards: the datasource is a
dashboard variable (so the JSON works imported or provisioned), a ``cluster`` variable picks one cluster (every
query filters on it) and a ``broker`` variable filters by node, every panel has a unit and a description.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from grafana_foundation_sdk.builders import dashboard as gd
from grafana_foundation_sdk.builders import gauge, prometheus, stat, timeseries
from grafana_foundation_sdk.builders.common import ReduceDataOptions, VizLegendOptions
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.common import BigValueColorMode, LegendDisplayMode, LegendPlacement
from grafana_foundation_sdk.models.dashboard import (
    DataSourceRef,
    Threshold,
    ThresholdsMode,
    VariableHide,
    VariableOption,
    VariableRefresh,
)

from observability.promql import CLUSTER_LABEL, JOB, whole

DATASOURCE = DataSourceRef(type_val="prometheus", uid="${datasource}")
TAGS = ["bridgekeeper", "kafka", "zookeeper"]

#: Threshold colours: green is fine, red needs a person.
GOOD, WARN, BAD = "green", "orange", "red"


@dataclass(frozen=True)
class Query:
    expr: str
    legend: str = ""


@dataclass(frozen=True)
class Panel:
    """One panel. ``description`` says what the panel shows and what a bad value means."""

    kind: str  # "stat", "gauge" or "timeseries"
    title: str
    description: str
    unit: str
    queries: tuple[Query, ...]
    width: int = 8
    #: (value, colour) steps above the base colour; the base is green unless ``base`` says otherwise.
    thresholds: tuple[tuple[float, str], ...] = ()
    base: str = GOOD
    min: float | None = None
    max: float | None = None


@dataclass(frozen=True)
class Row:
    title: str
    panels: tuple[Panel, ...]


@dataclass(frozen=True)
class Board:
    uid: str
    title: str
    description: str
    rows: tuple[Row, ...] = field(default_factory=tuple)

    def panels(self) -> list[Panel]:
        return [p for row in self.rows for p in row.panels]


def q(expr: str, legend: str = "") -> tuple[Query, ...]:
    return (Query(expr, legend),)


def _thresholds(panel: Panel) -> gd.ThresholdsConfig:
    steps = [Threshold(value=None, color=panel.base), *(Threshold(value=v, color=c) for v, c in panel.thresholds)]
    return gd.ThresholdsConfig().mode(ThresholdsMode.ABSOLUTE).steps(steps)


def _targets(panel: Panel) -> list[prometheus.Dataquery]:
    return [
        prometheus.Dataquery().expr(query.expr).legend_format(query.legend or "__auto").ref_id(chr(ord("A") + i))
        for i, query in enumerate(panel.queries)
    ]


def _panel(panel: Panel, panel_id: int) -> stat.Panel | gauge.Panel | timeseries.Panel:
    builder: stat.Panel | gauge.Panel | timeseries.Panel
    reduce = ReduceDataOptions().calcs(["lastNotNull"]).values(False)
    if panel.kind == "stat":
        builder = stat.Panel().reduce_options(reduce).color_mode(BigValueColorMode.VALUE).height(4)
    elif panel.kind == "gauge":
        builder = gauge.Panel().reduce_options(reduce).height(8)
    elif panel.kind == "timeseries":
        legend = VizLegendOptions().display_mode(LegendDisplayMode.LIST).placement(LegendPlacement.BOTTOM)
        legend = legend.show_legend(True)
        builder = timeseries.Panel().legend(legend).height(8)
    else:
        raise ValueError(f"unknown panel kind {panel.kind!r}")
    builder = builder.id(panel_id).title(panel.title).description(panel.description).unit(panel.unit)
    builder = builder.datasource(DATASOURCE).span(panel.width).thresholds(_thresholds(panel))
    if panel.min is not None:
        builder = builder.min(panel.min)
    if panel.max is not None:
        builder = builder.max(panel.max)
    for target in _targets(panel):
        builder = builder.with_target(target)
    return builder


def build(board: Board) -> gd.Dashboard:
    """The dashboard, as the SDK's builder."""
    datasource = (
        gd.DatasourceVariable("datasource").label("Data source").type("prometheus").hide(VariableHide.DONT_HIDE)
    )
    # One cluster at a time (as Strimzi's cluster variable): the panels' sums and maxima are per cluster. Read
    # from ``up`` so a cluster whose nodes are all down can still be chosen.
    cluster = (
        gd.QueryVariable(CLUSTER_LABEL)
        .label("Cluster")
        .datasource(DATASOURCE)
        .query(f"label_values(up{{{JOB}}}, {CLUSTER_LABEL})")
        .refresh(VariableRefresh.ON_TIME_RANGE_CHANGED)
        .multi(False)
        .include_all(False)
    )
    broker = (
        gd.QueryVariable("broker")
        .label("Broker")
        .datasource(DATASOURCE)
        .query(f"label_values({whole('bridgekeeper_controller_active')}, broker_id)")
        .refresh(VariableRefresh.ON_TIME_RANGE_CHANGED)
        .multi(True)
        .include_all(True)
        .all_value(".*")
        .current(VariableOption(selected=True, text="All", value="$__all"))
    )
    builder = (
        gd.Dashboard(board.title)
        .uid(board.uid)
        .description(board.description)
        .tags(TAGS)
        .refresh("10s")
        .time("now-1h", "now")
        .timezone("browser")
        .with_variable(datasource)
        .with_variable(cluster)
        .with_variable(broker)
    )
    panel_id = 1
    for row in board.rows:
        builder = builder.with_row(gd.Row(row.title).id(panel_id))
        panel_id += 1
        for panel in row.panels:
            builder = builder.with_panel(_panel(panel, panel_id))
            panel_id += 1
    return builder


def render(board: Board) -> str:
    """Stable JSON text (sorted keys, two-space indent, trailing newline): what is committed."""
    text: str = JSONEncoder(sort_keys=True, indent=2).encode(build(board).build())
    return text + "\n"
