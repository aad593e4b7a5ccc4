"""The pipeline's stages, in order: ingest (read + decode on executors), model (write the tables), report
(findings and distribution), plan (one cluster per task) -- each timed and shown live.

The decoded records are persisted once (memory, spilling to disk) and the model tables are computed from them,
written, and read back from Parquet for the later stages: columnar, small, and the same tables a ``--model``
rerun reads without decoding the snapshots again.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from migrate.pipeline import decode, findings, inputs, model, planning
from migrate.pipeline.outputs import write_plan
from migrate.pipeline.progress import Stages
from migrate.pipeline.summary import ClusterSummary, PlanSummary, Summary


@dataclass
class Run:
    """One pipeline run: where its tables and files go, and the timings of what it did."""

    spark: Any
    out: Path
    stages: Stages
    sources: list[str] = field(default_factory=list)
    clusters: list[str] = field(default_factory=list)
    tables: dict[str, Any] = field(default_factory=dict)

    @property
    def model_dir(self) -> Path:
        return self.out / "model"

    def ingest(self, resolved: Sequence[inputs.ClusterInput]) -> None:
        """Read every input (:func:`inputs.resolve` checked them) and decode it on the executors; then write and
        reopen the model tables."""
        self.sources = [f"{i.cluster}={i.path}" for i in resolved]
        self.clusters = [i.cluster for i in resolved]
        from pyspark import StorageLevel
        from pyspark.sql import functions as F

        with self.stages.stage("ingest"):
            rows = inputs.read(self.spark, list(resolved)).where(~F.col("path").rlike(decode.STRUCTURAL))
            decoded = rows.mapInArrow(decode.decode_arrow, decode.DDL).persist(StorageLevel.MEMORY_AND_DISK)
            decoded.count()
        with self.stages.stage("model"):
            model.write(model.build(decoded), self.model_dir)
            decoded.unpersist()
        self.tables = model.read(self.spark, self.model_dir)

    def reuse(self, model_dir: str) -> None:
        """Start from model tables a previous run wrote (``--model``)."""
        from pyspark.sql import functions as F

        self.tables = model.read(self.spark, model_dir)
        self.sources = [f"model:{model_dir}"]
        names = set()
        for table in ("brokers", "topics", "partitions", "malformed"):
            names |= {r["cluster"] for r in self.tables[table].select(F.col("cluster")).distinct().collect()}
        self.clusters = sorted(names)

    def report(self) -> list[ClusterSummary]:
        with self.stages.stage("report"):
            return findings.summarize(self.tables, self.clusters)

    def plan(self, request: planning.PlanRequest) -> list[PlanSummary]:
        if request.cluster is not None and request.cluster not in self.clusters:
            raise planning.PlanFailed(f"no cluster {request.cluster!r} in the input ({', '.join(self.clusters)})")
        with self.stages.stage("plan"):
            job = planning.plan_fleet(self.tables, request)
            return planning.collect(job, str(self.out), write_plan)

    def summary(self, clusters: list[ClusterSummary], plans: list[PlanSummary]) -> Summary:
        now = datetime.datetime.now(datetime.UTC).replace(microsecond=0).isoformat()
        return Summary(
            generated_at=now, inputs=self.sources, clusters=clusters, plans=plans, stages=dict(self.stages.seconds)
        )
