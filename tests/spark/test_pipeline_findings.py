"""Readiness findings on generated clusters, through a real local Spark: each finding is detected on a cluster
seeded with it (and names the seeded topic), and a clean cluster has none. One fleet, one Spark run."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import orjson
import pyarrow.parquet as pq
import pytest

from migrate.pipeline.inputs import resolve
from migrate.pipeline.progress import Stages
from migrate.pipeline.run import Run
from migrate.pipeline.summary import CHECK_IDS, ClusterSummary
from migrate.snapshot.rows import RowWriter
from migrate.snapshot.synthetic import DEFECTS, ClusterSpec, cluster_nodes

pytestmark = pytest.mark.spark

#: Where each seeded defect shows: the example the finding must name (topic index = the defect's position).
EXPECTED = {
    "topic_v1": "topic-00000",
    "no_topic_id": "topic-00001",
    "api_reassignment": "topic-00002-0",
    "offline_partition": "topic-00003-0",
    "under_replicated": "topic-00004-0",
    "under_min_isr": "topic-00005-0",
    "unregistered_broker_replica": "topic-00006-0",
    "preferred_leader_imbalance": "topic-00007-0",
    "pending_legacy_reassignment": "topic-00008-0",
    "malformed_znode": "/brokers/topics/topic-00009",
    "delete_marker": "topic-00010",
    "not_rack_aware": "topic-00011-0",
}


def _write(path: Path, spec: ClusterSpec, fmt: str = "parquet") -> Path:
    with RowWriter(path, fmt) as w:
        w.write_all(cluster_nodes(spec))
    return path


@pytest.fixture(scope="module")
def fleet(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Run, dict[str, ClusterSummary]]:
    d = tmp_path_factory.mktemp("fleet")
    inputs = d / "in"
    inputs.mkdir()
    base: dict[str, Any] = {"brokers": 6, "racks": 3, "topics": 14, "min_partitions": 2, "max_partitions": 6}
    for defect in DEFECTS:
        _write(
            inputs / f"{defect.replace('_', '-')}.parquet",
            ClusterSpec(name=defect, defects=frozenset({defect}), seed=11, **base),
        )
    _write(inputs / "clean.parquet", ClusterSpec(name="clean", seed=11, **base))
    _write(inputs / "skewed.jsonl", ClusterSpec(name="skewed", skew=0.5, seed=11, **base), "jsonl")
    run = Run(spark=spark, out=d / "out", stages=Stages(spark, quiet=True))
    run.ingest(resolve([str(inputs)]))
    return run, {c["cluster"]: c for c in run.report()}


def _found(summary: ClusterSummary) -> dict[str, int]:
    return {f["check"]: f["count"] for f in summary["findings"] if f["count"]}


def test_a_clean_cluster_has_no_findings(fleet):
    _, clusters = fleet
    clean = clusters["clean"]
    assert [f["check"] for f in clean["findings"]] == list(CHECK_IDS)
    assert _found(clean) == {}
    assert clean["counts"]["brokers"] == 6 and clean["counts"]["malformed"] == 0
    assert clean["counts"]["replicas"] == 3 * clean["counts"]["partitions"] > 0
    assert clean["counts"]["acls"] == 5 and clean["counts"]["quotas"] == 3


@pytest.mark.parametrize("defect", DEFECTS)
def test_each_seeded_defect_is_found_where_it_was_seeded(fleet, defect):
    _, clusters = fleet
    finding = next(f for f in clusters[defect.replace("_", "-")]["findings"] if f["check"] == defect)
    assert finding["count"] >= 1
    assert EXPECTED[defect] in finding["examples"]


def test_skew_shows_as_replica_and_leader_skew_per_broker(fleet):
    _, clusters = fleet
    skewed = clusters["skewed"]
    found = _found(skewed)
    assert found.get("replica_skew", 0) >= 2 and found.get("leader_skew", 0) >= 2
    low, high = skewed["replica_band"]
    outside = [b for b in skewed["brokers"] if not low <= b["replicas"] <= high]
    assert len(outside) == found["replica_skew"]
    assert sum(b["replicas"] for b in skewed["brokers"]) == skewed["counts"]["replicas"]
    assert sum(r["replicas"] for r in skewed["racks"]) == skewed["counts"]["replicas"]
    assert {r["rack"] for r in skewed["racks"]} == {"rack-0", "rack-1", "rack-2"}


def test_unregistered_broker_appears_as_a_broker_row(fleet):
    _, clusters = fleet
    rows = clusters["unregistered-broker-replica"]["brokers"]
    ghost = [b for b in rows if not b["registered"]]
    assert [b["broker"] for b in ghost] == [106] and ghost[0]["replicas"] == 1 and ghost[0]["rack"] is None


def test_model_tables_are_parquet_partitioned_by_cluster(fleet):
    run, clusters = fleet
    parts = pq.read_table(str(run.model_dir / "partitions")).to_pandas()
    assert set(parts["cluster"].astype(str)) == set(clusters)
    assert (run.model_dir / "partitions" / "cluster=clean").is_dir()
    clean = parts[parts["cluster"].astype(str) == "clean"]
    assert len(clean) == clusters["clean"]["counts"]["partitions"]
    assert clean["leader"].notna().all() and clean["isr"].map(len).eq(3).all()
    malformed = pq.read_table(str(run.model_dir / "malformed")).to_pandas()
    assert list(malformed["path"]) == ["/brokers/topics/topic-00009"]
    assert "JSON" in malformed["error"].iloc[0] or "json" in malformed["error"].iloc[0]
    brokers = pq.read_table(str(run.model_dir / "brokers")).to_pandas()
    assert set(brokers[brokers["cluster"].astype(str) == "clean"]["rack"]) == {"rack-0", "rack-1", "rack-2"}


def test_unreadable_rows_become_malformed_records_not_failures(spark, tmp_path):
    path = _write(tmp_path / "c.jsonl", ClusterSpec(name="c", topics=3, seed=2), "jsonl")
    lines = path.read_bytes().splitlines()
    bad = orjson.loads(lines[5])
    bad["data"] = "%%% not base64 %%%"
    lines[5] = orjson.dumps(bad)
    lines.append(b'{"path": "/brokers/topics/x", "data": ')  # a truncated last line
    path.write_bytes(b"\n".join(lines) + b"\n")
    run = Run(spark=spark, out=tmp_path / "out", stages=Stages(spark, quiet=True))
    run.ingest(resolve([str(path)]))
    (summary,) = run.report()
    finding = next(f for f in summary["findings"] if f["check"] == "malformed_znode")
    assert finding["count"] == 2
    malformed = pq.read_table(str(run.model_dir / "malformed")).to_pandas()
    assert sorted(malformed["error"].str.slice(0, 18)) == ["data is not base64", "not a snapshot row"]
    assert summary["counts"]["brokers"] == 6
    assert base64  # the JSON-lines encoding of data is base64 (RowWriter)
