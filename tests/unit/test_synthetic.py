"""The synthetic cluster generator: deterministic, Kafka's formats (every znode decodes with zkmodel), a
consistent tree, balanced or skewed placement on request, and each seeded defect where a reader finds it."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from migrate.snapshot.check import check_rows
from migrate.snapshot.rows import read_rows, row
from migrate.snapshot.synthetic import DEFECTS, ClusterSpec, cluster_nodes
from zkmodel.brokers import BrokerRegistration
from zkmodel.errors import ZnodeFormatError
from zkmodel.registry import decode_znode
from zkmodel.topics import TopicAssignment

ROOT = Path(__file__).resolve().parents[2]


def rows(spec: ClusterSpec) -> list[dict[str, Any]]:
    return [row(n) for n in cluster_nodes(spec)]


def assignments(spec: ClusterSpec) -> dict[str, TopicAssignment]:
    out = {}
    for n in cluster_nodes(spec):
        parts = n.path.split("/")
        if len(parts) == 4 and parts[1:3] == ["brokers", "topics"]:
            out[parts[3]] = TopicAssignment.decode(n.path, n.data)
    return out


def test_the_same_seed_gives_the_same_tree_and_another_seed_another() -> None:
    spec = ClusterSpec(topics=30, defects=frozenset(DEFECTS), seed=7)
    assert rows(spec) == rows(ClusterSpec(topics=30, defects=frozenset(DEFECTS), seed=7))
    assert rows(spec) != rows(ClusterSpec(topics=30, defects=frozenset(DEFECTS), seed=8))


def test_a_clean_cluster_decodes_entirely_and_has_no_findings() -> None:
    spec = ClusterSpec(brokers=9, racks=3, topics=40, seed=3)
    all_rows = rows(spec)
    for r in all_rows:
        decode_znode(r["path"], r["data"])  # raises ZnodeFormatError on anything Kafka could not read
    assert check_rows(all_rows) == []
    brokers = [
        BrokerRegistration.decode(r["path"], r["data"]) for r in all_rows if r["path"].startswith("/brokers/ids/")
    ]
    assert sorted(str(b.rack) for b in brokers) == sorted(["rack-0", "rack-1", "rack-2"] * 3)


def test_the_tree_is_consistent() -> None:
    nodes = list(cluster_nodes(ClusterSpec(topics=15, seed=1)))
    paths = {n.path for n in nodes}
    children = Counter(n.path.rsplit("/", 1)[0] or "/" for n in nodes)
    for n in nodes:
        parent = n.path.rsplit("/", 1)[0]
        assert not parent or parent in paths, f"{n.path} has no parent"
        assert n.num_children == children.get(n.path, 0)
        assert n.pzxid >= n.czxid
        assert (n.ephemeral_owner != 0) == (n.path == "/controller" or n.path.startswith("/brokers/ids/"))
    zxids = [n.czxid for n in nodes]
    assert zxids == sorted(zxids) and len(set(zxids)) == len(zxids)


def test_placement_without_skew_is_rack_aware_and_nearly_balanced_and_skew_unbalances_it() -> None:
    def spread(spec: ClusterSpec) -> int:
        counts = Counter(r for a in assignments(spec).values() for rs in a.partitions.values() for r in rs)
        return max(counts.values()) - min(counts.get(b, 0) for b in range(1, spec.brokers + 1))

    balanced = ClusterSpec(brokers=12, racks=4, topics=200, seed=5)
    for a in assignments(balanced).values():
        for replicas in a.partitions.values():
            assert len(set(replicas)) == 3
            assert len({(b - 1) % 4 for b in replicas}) == 3  # three racks for three replicas
    skewed = ClusterSpec(brokers=12, racks=4, topics=200, seed=5, skew=0.5)
    assert spread(skewed) > 5 * max(1, spread(balanced))


@pytest.mark.parametrize(
    ("defect", "kind"),
    [
        ("topic_v1", "topic_znode_v1"),
        ("no_topic_id", "no_topic_id"),
        ("malformed_znode", "malformed"),
        ("unregistered_broker_replica", "unregistered_broker"),
        ("pending_legacy_reassignment", "pending_reassignment"),
        ("delete_marker", "delete_marker"),
    ],
)
def test_a_seeded_defect_is_found_by_snapshot_check_and_only_then(defect: str, kind: str) -> None:
    seeded = check_rows(rows(ClusterSpec(topics=20, defects=frozenset({defect}), seed=2)))
    assert kind in {f.kind for f in seeded}
    assert check_rows(rows(ClusterSpec(topics=20, seed=2))) == []


def test_the_partition_state_defects_are_in_the_znodes() -> None:
    """The defects snapshot check does not judge (state health) are there for the pipeline's report to find."""
    nodes = {n.path: n for n in cluster_nodes(ClusterSpec(topics=20, defects=frozenset(DEFECTS), seed=4))}

    def state(topic: int) -> Any:
        import orjson

        return orjson.loads(nodes[f"/brokers/topics/topic-{topic:05d}/partitions/0/state"].data or b"")

    def replicas(topic: int) -> tuple[int, ...]:
        return TopicAssignment.decode("x", nodes[f"/brokers/topics/topic-{topic:05d}"].data).partitions[0]

    moving = TopicAssignment.decode("x", nodes["/brokers/topics/topic-00002"].data)
    assert moving.adding_replicas and moving.removing_replicas
    assert state(3)["leader"] == -1
    assert len(state(4)["isr"]) < len(replicas(4))
    assert b"min.insync.replicas" in (nodes["/config/topics/topic-00005"].data or b"") and len(state(5)["isr"]) == 1
    assert state(7)["leader"] != replicas(7)[0]
    with pytest.raises(ZnodeFormatError):
        decode_znode("/brokers/topics/topic-00009", nodes["/brokers/topics/topic-00009"].data)


def synth(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "controller.cli", "pipeline", "synth", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )


def test_the_command_writes_one_file_per_cluster(tmp_path: Path) -> None:
    result = synth("-o", str(tmp_path / "fleet"), "--clusters", "3", "--topics", "12", "--defect", "all")
    assert result.returncode == 0, result.stderr
    files = sorted((tmp_path / "fleet").iterdir())
    assert [f.name for f in files] == ["cluster-00.parquet", "cluster-01.parquet", "cluster-02.parquet"]
    first, second = read_rows(files[0]), read_rows(files[1])
    assert {r["path"] for r in first} != {r["path"] for r in second} or first != second  # seeds 0 and 1
    assert result.stdout.splitlines()[0] == f"cluster-00: wrote {len(first)} znodes to {files[0]}"


def test_bad_flags_are_named_with_exit_2(tmp_path: Path) -> None:
    few = synth("-o", str(tmp_path / "x.parquet"), "--topics", "5", "--defect", "topic_v1")
    assert (
        few.returncode == 2
        and few.stderr == f"error: seeding defects needs at least {len(DEFECTS)} topics (one per defect)\n"
    )
    assert not (tmp_path / "x.parquet").exists()
    unknown = synth("-o", str(tmp_path / "x.parquet"), "--defect", "nope")
    assert unknown.returncode == 2 and "invalid choice: 'nope'" in unknown.stderr
    partitions = synth("-o", str(tmp_path / "x.parquet"), "--partitions", "5-2")
    assert partitions.returncode == 2 and "expected 1 <= MIN <= MAX, got '5-2'" in partitions.stderr
