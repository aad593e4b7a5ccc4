"""The pipeline's inputs and decoding, without Spark: inputs are resolved and checked before any JVM starts,
and every kind of Kafka znode becomes the records the model tables are built from."""

from __future__ import annotations

from pathlib import Path

import pytest

from migrate.pipeline.decode import NAMES, decode_znode_records
from migrate.pipeline.inputs import InputError, resolve
from migrate.snapshot.rows import RowWriter
from migrate.snapshot.synthetic import ClusterSpec, cluster_nodes, cluster_znodes
from zkmodel.topics import TopicAssignment


def _rows(path: Path, fmt: str = "parquet") -> Path:
    with RowWriter(path, fmt) as w:
        w.write_all(cluster_nodes(ClusterSpec(topics=2, seed=1)))
    return path


def test_inputs_are_named_by_file_stem_by_name_or_by_directory(tmp_path):
    a = _rows(tmp_path / "east.parquet")
    d = tmp_path / "fleet"
    d.mkdir()
    _rows(d / "west.jsonl", "jsonl")
    _rows(d / "north.parquet")
    (d / "README.txt").write_text("not rows")
    got = resolve([str(a), str(d), f"south={a}"])
    assert [(i.cluster, i.fmt) for i in got] == [
        ("east", "parquet"),
        ("north", "parquet"),
        ("west", "jsonl"),
        ("south", "parquet"),
    ]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: [str(d / "missing.parquet")], "missing.parquet: no such file or directory"),
        (lambda d: [str(d)], "no .parquet or .jsonl files in this directory"),
        (lambda d: [str(_rows(d / "a.parquet")), f"a={_rows(d / 'b.parquet')}"], "cluster 'a' is given twice"),
        (lambda d: [str(d / "x.csv")], "not a snapshot-rows file"),
        (lambda d: [f"bad name={_rows(d / 'c.parquet')}"], "cluster name 'bad name'"),
    ],
)
def test_bad_inputs_are_refused_naming_what_was_wrong(tmp_path, make, message):
    (tmp_path / "x.csv").write_text("a,b\n")
    empty = tmp_path / "empty"
    empty.mkdir()
    args = make(empty if "no .parquet" in message else tmp_path)
    with pytest.raises(InputError, match=message.replace("(", r"\(")):
        resolve(args)


def test_files_that_are_not_snapshot_rows_are_refused_before_spark(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"x": [1]}), str(tmp_path / "other.parquet"))
    with pytest.raises(InputError, match="not snapshot rows"):
        resolve([str(tmp_path / "other.parquet")])
    (tmp_path / "junk.parquet").write_bytes(b"PAR1 definitely not parquet")
    with pytest.raises(InputError, match="not a readable Parquet file"):
        resolve([str(tmp_path / "junk.parquet")])
    (tmp_path / "junk.jsonl").write_bytes(b"{not json\n")
    with pytest.raises(InputError, match="line 1 is not JSON"):
        resolve([str(tmp_path / "junk.jsonl")])
    (tmp_path / "list.jsonl").write_bytes(b"[1, 2]\n")
    with pytest.raises(InputError, match="line 1 is not a snapshot row"):
        resolve([str(tmp_path / "list.jsonl")])


def test_every_modelled_znode_kind_decodes_to_records():
    znodes = {path: data for path, data, _ in cluster_znodes(ClusterSpec(topics=3, seed=5, defects=frozenset()))}
    kinds: dict[str, int] = {}
    for path, data in znodes.items():
        for record in decode_znode_records("c", path, data):
            assert set(record) <= set(NAMES) and record["cluster"] == "c"
            kinds[record["kind"]] = kinds.get(record["kind"], 0) + 1
    topic = TopicAssignment.decode("/brokers/topics/topic-00000", znodes["/brokers/topics/topic-00000"])
    partitions = sum(
        len(TopicAssignment.decode(p, d).partitions)
        for p, d in znodes.items()
        if p.count("/") == 3 and p.startswith("/brokers/topics/")
    )
    assert kinds == {"broker": 6, "topic": 3, "assignment": partitions, "state": partitions, "config": 3 + 3, "acl": 5}
    first = "/brokers/topics/topic-00000"
    (record,) = [r for r in decode_znode_records("c", first, znodes[first]) if r["kind"] == "topic"]
    assert record["topic_id"] == topic.topic_id and record["topic_version"] == 3


def test_acl_legacy_reassignment_delete_marker_and_malformed_records():
    acl = b'{"version":1,"acls":[{"principal":"User:a","permissionType":"Allow","operation":"Read","host":"*"}]}'
    (r,) = decode_znode_records("c", "/kafka-acl-extended/prefixed/Topic/pay", acl)
    assert (r["kind"], r["pattern_type"], r["resource_type"], r["resource_name"], r["principal"], r["operation"]) == (
        "acl",
        "PREFIXED",
        "Topic",
        "pay",
        "User:a",
        "Read",
    )
    legacy = b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2]}]}'
    (r,) = decode_znode_records("c", "/admin/reassign_partitions", legacy)
    assert (r["kind"], r["topic"], r["partition"], r["replicas"]) == ("legacy_reassignment", "t", 0, [1, 2])
    assert decode_znode_records("c", "/admin/delete_topics/t", None)[0]["kind"] == "delete_marker"
    (bad,) = decode_znode_records("c", "/brokers/ids/3", b'{"version":5')
    assert bad["kind"] == "malformed" and bad["path"] == "/brokers/ids/3" and bad["error"]
    (user,) = decode_znode_records(
        "c", "/config/users/u/clients/c1", b'{"version":1,"config":{"producer_byte_rate":"9"}}'
    )
    assert (user["entity_type"], user["entity_name"]) == ("users/clients", "u/c1")
    assert decode_znode_records("c", "/brokers/seqid", None) == []


def test_a_rows_file_that_cannot_be_opened_is_an_input_error(tmp_path, monkeypatch):
    """Permissions (or a file that vanished) refuse the input before Spark, not with a traceback after it."""
    rows = _rows(tmp_path / "east.jsonl", "jsonl")
    real_open = Path.open

    def denied(self, *args, **kwargs):
        if self == rows:
            raise PermissionError(13, "Permission denied", str(self))
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", denied)
    with pytest.raises(InputError, match=r"east\.jsonl: cannot read it \(Permission denied\)"):
        resolve([str(rows)])
