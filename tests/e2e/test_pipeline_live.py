"""The operator's walk-through on a live local stack: export a snapshot, report, plan a rebalance with the
pipeline (a real local Spark, as a separate process), execute the plan with ``bridgekeeper reassign
--execute``, verify until done, and the cluster ends balanced -- checked from ZooKeeper and by a second report."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from kafka.admin import KafkaAdminClient, NewTopic

from tests.e2e.conftest import RunningStack
from tests.integration.cluster import wait_for
from zkmodel import paths
from zkmodel.topics import TopicAssignment

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]


def bk(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "controller.cli", *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT
    )


def assignment(stack: RunningStack, topics: list[str]) -> dict[tuple[str, int], list[int]]:
    out = {}
    for t in topics:
        data, _ = stack.zk.get(paths.topic(t))
        for p, r in TopicAssignment.decode(paths.topic(t), data).partitions.items():
            out[(t, p)] = list(r)
    return out


def test_snapshot_report_plan_execute_ends_balanced(stack: RunningStack, tmp_path: Path) -> None:
    topics = [f"skew-{i}" for i in range(4)]
    admin = KafkaAdminClient(bootstrap_servers=stack.bootstrap, request_timeout_ms=60000)
    try:
        # Everything on brokers 1 and 2: broker 3 holds nothing (a broker added after the topics were made).
        layout = {p: [1 + p % 2, 2 - p % 2] for p in range(6)}
        admin.create_topics([NewTopic(t, replica_assignments=layout) for t in topics], timeout_ms=30000)
    finally:
        admin.close()
    wait_for(lambda: all(stack.zk.exists(paths.partition_state(t, 5)) for t in topics), 30, "partition states")
    before = assignment(stack, topics)

    snapshot = tmp_path / "live.parquet"
    exported = bk("snapshot", "export", "--zookeeper", stack.stack.zookeeper, "-o", str(snapshot))
    assert exported.returncode == 0, exported.stderr
    out = tmp_path / "plan"
    planned = bk("pipeline", "plan", "rebalance", str(snapshot), "-o", str(out), "--master", "local[2]", "--quiet")
    assert planned.returncode == 0, planned.stdout + planned.stderr
    plan_file = out / "live-rebalance.json"
    assert f"live: rebalance {plan_file}" in planned.stdout
    doc = orjson.loads((out / "report.json").read_bytes())
    (plan,) = doc["plans"]
    # 48 replicas over 3 brokers: 16 each; broker 3 must gain 16, which is also the lower bound.
    assert plan["moves"] == plan["lower_bound"] == 16 and plan["violations"] == []
    assert plan["kafka_generate_moves"] >= plan["moves"]
    (cluster,) = doc["clusters"]
    assert next(f for f in cluster["findings"] if f["check"] == "replica_skew")["count"] == 3
    assert (out / "report.html").stat().st_size > 100_000
    rollback = orjson.loads((out / "live-rebalance-rollback.json").read_bytes())
    assert {(e["topic"], e["partition"]): e["replicas"] for e in rollback["partitions"]} == {
        tp: before[tp] for tp in {(e["topic"], e["partition"]) for e in rollback["partitions"]}
    }

    executed = bk(
        "reassign", "--bootstrap-server", stack.bootstrap, "--execute", "--reassignment-json-file", str(plan_file)
    )
    assert executed.returncode == 0, executed.stdout + executed.stderr

    def done() -> bool:
        verified = bk(
            "reassign", "--bootstrap-server", stack.bootstrap, "--verify", "--reassignment-json-file", str(plan_file)
        )
        return "still in progress" not in verified.stdout

    wait_for(done, 120, "the plan's moves to complete")
    after = assignment(stack, topics)
    counts = {b: sum(b in r for r in after.values()) for b in (1, 2, 3)}
    leaders = {b: sum(r[0] == b for r in after.values()) for b in (1, 2, 3)}
    assert counts == {1: 16, 2: 16, 3: 16}
    assert leaders == {1: 8, 2: 8, 3: 8}
    assert sum(len(set(after[tp]) - set(before[tp])) for tp in before) == 16

    # A second snapshot of the executed cluster: the report finds it balanced.
    again = tmp_path / "live-after.parquet"
    assert bk("snapshot", "export", "--zookeeper", stack.stack.zookeeper, "-o", str(again)).returncode == 0
    reported = bk(
        "pipeline",
        "report",
        f"live={again}",
        "-o",
        str(tmp_path / "after"),
        "--master",
        "local[2]",
        "--quiet",
        "--fail-on",
        "warning",
    )
    assert reported.returncode == 0, reported.stdout + reported.stderr  # nothing of warning severity or worse
    found = {
        f["check"]: f["count"]
        for f in orjson.loads((tmp_path / "after" / "report.json").read_bytes())["clusters"][0]["findings"]
    }
    assert found["replica_skew"] == found["leader_skew"] == 0
