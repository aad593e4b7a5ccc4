"""``snapshot export`` + ``snapshot check`` on a cluster made the README's way: a clean cluster has nothing that
blocks an upgrade (the seeded issues are in tests/integration/test_snapshot_check.py: on a live cluster the
controller would repair some of them, e.g. give a topic without an id one)."""

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

pytestmark = pytest.mark.e2e


def bk(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "controller.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[2],
    )


def test_a_clean_cluster_has_nothing_that_blocks_an_upgrade(stack: RunningStack, tmp_path: Path) -> None:
    admin = KafkaAdminClient(bootstrap_servers=stack.bootstrap, request_timeout_ms=60000)
    try:
        admin.create_topics(
            [NewTopic(f"snap-{i}", num_partitions=3, replication_factor=2) for i in range(3)], timeout_ms=30000
        )
    finally:
        admin.close()
    wait_for(lambda: all(stack.zk.exists(paths.partition_state(f"snap-{i}", 2)) for i in range(3)), 30, "states")
    clean = tmp_path / "clean.parquet"
    exported = bk("snapshot", "export", "--zookeeper", stack.stack.zookeeper, "-o", str(clean))
    assert exported.returncode == 0, exported.stderr
    assert "znodes written" in exported.stderr and "znodes/s" in exported.stderr
    checked = bk("snapshot", "check", str(clean), "--format", "json")
    assert checked.returncode == 0, checked.stdout
    doc = orjson.loads(checked.stdout)
    assert doc["blocking"] == 0 and doc["findings"] == [] and doc["znodes"] > 20
