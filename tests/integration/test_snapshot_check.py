"""``snapshot export`` then ``snapshot check`` on a real ZooKeeper holding a Kafka-shaped tree with one of each
issue seeded: each is reported, and the exit code is 1 (0 once the blocking ones are gone)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from kazoo.client import KazooClient

from controller.cli import main as bridgekeeper
from zkmodel import paths
from zkmodel.topics import PartitionState, TopicAssignment

TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"


def test_each_seeded_issue_is_reported(
    zk: KazooClient, zk_hosts: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    zk.create(
        paths.broker(1),
        b'{"version":5,"host":"h","port":9092,"endpoints":["PLAINTEXT://h:9092"],'
        b'"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},"jmx_port":-1,"timestamp":"1"}',
        makepath=True,
    )
    zk.create(paths.topic("ok"), TopicAssignment({0: (1,)}, version=3, topic_id=TOPIC_ID).encode(), makepath=True)
    zk.create(paths.partition_state("ok", 0), PartitionState(1, 0, 1, (1,)).encode(), makepath=True)
    zk.ensure_path(paths.DELETE_TOPICS)

    def check() -> tuple[int, dict[str, object]]:
        out = tmp_path / "rows.parquet"
        assert bridgekeeper(["snapshot", "export", "--zookeeper", zk_hosts, "-o", str(out)]) == 0
        capsys.readouterr()
        code = bridgekeeper(["snapshot", "check", str(out), "--format", "json"])
        return code, orjson.loads(capsys.readouterr().out)

    assert check() == (0, {"znodes": 10, "blocking": 0, "findings": []})

    zk.create(paths.topic("old"), TopicAssignment({0: (1,)}, version=1).encode())
    zk.create(paths.topic("gone"), TopicAssignment({0: (1, 7)}, version=3, topic_id=TOPIC_ID).encode())
    zk.create(paths.topic("bad"), b'{"version":2,"partitions":{"0":"x"}}')
    zk.create("/kafka-acl/Topic/t", b"{not json", makepath=True)
    zk.create(paths.REASSIGN_PARTITIONS, b'{"version":1,"partitions":[{"topic":"ok","partition":0,"replicas":[1]}]}')
    zk.create(paths.delete_topic_marker("old"), b"")
    code, doc = check()
    assert code == 1
    findings = {(f["kind"], f["path"]) for f in doc["findings"]}  # type: ignore[attr-defined]
    assert findings == {
        ("topic_znode_v1", "/brokers/topics/old"),
        ("no_topic_id", "/brokers/topics/old"),
        ("unregistered_broker", "/brokers/topics/gone"),
        ("malformed", "/brokers/topics/bad"),
        ("malformed", "/kafka-acl/Topic/t"),
        ("pending_reassignment", "/admin/reassign_partitions"),
        ("delete_marker", "/admin/delete_topics/old"),
    }
