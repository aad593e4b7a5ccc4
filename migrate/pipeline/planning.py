"""Planning as Spark work: one cluster per task, on an executor, through ``cogroup(...).applyInPandas``.

A cluster's balance is one problem (every broker's count depends on every partition), so the unit of work is a
cluster: its partitions and brokers arrive together in one Python worker, :func:`migrate.planner.plan`
solves it there, and only the changed partitions and a small summary come back. A fleet of clusters plans in
parallel across executors; the driver never sees an unchanged partition. The driver writes the plan files
(executors may not share its filesystem).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from migrate.pipeline.summary import PlanSummary

#: One row per changed partition (kind "change") plus one "summary" row per cluster.
OUT_DDL = (
    "cluster string, kind string, topic string, partition int, replicas array<int>, current array<int>, "
    "wave int, summary string"
)
OPERATIONS = ("decommission", "add-brokers", "rebalance", "fix-racks")


@dataclass(frozen=True)
class PlanRequest:
    operation: str
    cluster: str | None = None  # None: every cluster of the input
    brokers: tuple[int, ...] = ()
    racks: Mapping[int, str | None] = field(default_factory=dict)
    rack_aware: bool = True
    max_moves_per_broker: int | None = None
    compare_kafka: bool = True
    seed: int = 0


def plan_cluster(request: PlanRequest, key: tuple[Any, ...], parts: Any, brokers: Any) -> Any:
    """The ``applyInPandas`` body for one cluster: pandas frames in, changes and a summary row out."""
    import pandas as pd

    from migrate.planner import Layout, PlanRequestError, plan

    cluster = str(key[0])
    layout = Layout(
        brokers={
            int(b): (None if r is None or r != r else str(r))
            for b, r in zip(brokers["broker"], brokers["rack"], strict=True)
        },
        assignment={
            (str(t), int(p)): tuple(int(x) for x in r)
            for t, p, r in zip(parts["topic"], parts["partition"], parts["replicas"], strict=True)
        },
    )
    rows: list[dict[str, Any]] = []
    try:
        result = plan(
            layout,
            request.operation,
            brokers=request.brokers,
            racks=dict(request.racks) or None,
            rack_aware=request.rack_aware,
            max_moves_per_broker=request.max_moves_per_broker,
            compare_kafka=request.compare_kafka,
            seed=request.seed,
        )
    except PlanRequestError as exc:
        summary: dict[str, Any] = {"cluster": cluster, "error": str(exc)}
    else:
        wave_of = {tp: i for i, wave in enumerate(result.waves, start=1) for tp in wave}
        for tp, replicas in result.changed.items():
            rows.append(
                {
                    "cluster": cluster,
                    "kind": "change",
                    "topic": tp[0],
                    "partition": tp[1],
                    "replicas": list(replicas),
                    "current": list(layout.assignment[tp]),
                    "wave": wave_of.get(tp, 0),
                    "summary": None,
                }
            )
        summary = {
            "cluster": cluster,
            "operation": result.operation,
            "brokers": list(result.brokers),
            "moves": result.moves,
            "lower_bound": result.lower_bound,
            "kafka_generate_moves": result.kafka_generate_moves,
            "partitions_changed": len(result.changed),
            "leader_changes": result.leader_changes,
            "waves": len(result.waves),
            "plan_file": "",
            "before": {str(b): n for b, n in sorted(result.before.items())},
            "after": {str(b): n for b, n in sorted(result.after.items())},
            "leaders_before": {str(b): n for b, n in sorted(result.leaders_before.items())},
            "leaders_after": {str(b): n for b, n in sorted(result.leaders_after.items())},
            "violations": list(result.violations),
            "warnings": list(result.warnings),
            "seconds": round(result.seconds, 3),
        }
    rows.append(
        {
            "cluster": cluster,
            "kind": "summary",
            "topic": None,
            "partition": None,
            "replicas": None,
            "current": None,
            "wave": None,
            "summary": orjson.dumps(summary).decode(),
        }
    )
    return pd.DataFrame(
        rows, columns=["cluster", "kind", "topic", "partition", "replicas", "current", "wave", "summary"]
    )


def plan_fleet(tables: Mapping[str, Any], request: PlanRequest) -> Any:
    """The plan job over the model tables (lazy DataFrame of :data:`OUT_DDL` rows)."""
    from pyspark.sql import functions as F

    parts = (
        tables["partitions"].where(F.col("replicas").isNotNull()).select("cluster", "topic", "partition", "replicas")
    )
    brokers = tables["brokers"].select("cluster", "broker", "rack")
    if request.cluster is not None:
        parts = parts.where(F.col("cluster") == request.cluster)
        brokers = brokers.where(F.col("cluster") == request.cluster)
    body = functools.partial(plan_cluster, request)
    return parts.groupBy("cluster").cogroup(brokers.groupBy("cluster")).applyInPandas(body, schema=OUT_DDL)


class PlanFailed(Exception):
    """A cluster's plan request was refused (unknown broker, too few brokers left, ...)."""


def collect(result: Any, out_dir: str, write_files: Any) -> list[PlanSummary]:
    """Write each cluster's plan files (``write_files(path, changed, current, waves)``) and return the summaries.

    Changes stream to the driver per cluster (``toLocalIterator``), so its memory holds one plan at a time."""
    from pathlib import Path

    result = result.persist()
    try:
        summaries = [orjson.loads(r["summary"]) for r in result.where("kind = 'summary'").collect()]
        errors = [s for s in summaries if "error" in s]
        if errors:
            raise PlanFailed("; ".join(f"{s['cluster']}: {s['error']}" for s in errors))
        out: list[PlanSummary] = []
        for s in sorted(summaries, key=lambda s: s["cluster"]):
            changed: dict[tuple[str, int], list[int]] = {}
            current: dict[tuple[str, int], list[int]] = {}
            waves: dict[int, list[tuple[str, int]]] = {}
            rows = result.where((result.kind == "change") & (result.cluster == s["cluster"]))
            for r in rows.toLocalIterator():
                tp = (r["topic"], int(r["partition"]))
                changed[tp], current[tp] = list(r["replicas"]), list(r["current"])
                if r["wave"]:
                    waves.setdefault(int(r["wave"]), []).append(tp)
            path = Path(out_dir) / f"{s['cluster']}-{s['operation']}.json"
            write_files(str(path), changed, current, [waves[k] for k in sorted(waves)])
            s["plan_file"] = str(path)
            out.append(PlanSummary(**{k: v for k, v in s.items() if k in PlanSummary.__annotations__}))  # type: ignore[typeddict-item]
        return out
    finally:
        result.unpersist()
