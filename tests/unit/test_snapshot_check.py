"""``snapshot check`` on rows: each blocking issue found where it is seeded, nothing on a clean tree."""

from __future__ import annotations

from typing import Any

from migrate.snapshot.check import check_rows, detect_chroot
from zkmodel.topics import PartitionState, TopicAssignment

TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"


def rows(nodes: dict[str, bytes | None]) -> list[dict[str, Any]]:
    return [{"path": p, "data": d} for p, d in nodes.items()]


def clean(prefix: str = "") -> dict[str, bytes | None]:
    return {
        f"{prefix}/brokers": None,
        f"{prefix}/brokers/ids": None,
        f"{prefix}/brokers/ids/1": b'{"version":5,"host":"h","port":9092,"endpoints":["PLAINTEXT://h:9092"],'
        b'"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},"jmx_port":-1,"timestamp":"1"}',
        f"{prefix}/brokers/topics": None,
        f"{prefix}/brokers/topics/t": TopicAssignment({0: (1,)}, version=3, topic_id=TOPIC_ID).encode(),
        f"{prefix}/brokers/topics/t/partitions/0/state": PartitionState(1, 0, 1, (1,)).encode(),
        f"{prefix}/admin/delete_topics": None,
    }


def test_a_clean_tree_has_no_findings() -> None:
    assert check_rows(rows(clean())) == []
    assert check_rows(rows({"/zookeeper": None, **clean("/kafka")})) == []
    assert detect_chroot(clean("/kafka/prod")) == "/kafka/prod"


def test_each_issue_is_found() -> None:
    tree = clean("/k")
    tree["/k/brokers/topics/old"] = TopicAssignment({0: (1,)}, version=1).encode()
    tree["/k/brokers/topics/gone"] = TopicAssignment({0: (1, 7)}, version=3, topic_id=TOPIC_ID).encode()
    tree["/k/brokers/topics/bad"] = b'{"version":2,"partitions":"x"}'
    tree["/k/kafka-acl/Topic/t"] = b"not json"
    tree["/k/admin/reassign_partitions"] = b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1]}]}'
    tree["/k/admin/delete_topics/old"] = None
    found = {(f.kind, f.path, f.blocking) for f in check_rows(rows(tree))}
    assert found == {
        ("topic_znode_v1", "/k/brokers/topics/old", False),
        ("no_topic_id", "/k/brokers/topics/old", True),
        ("unregistered_broker", "/k/brokers/topics/gone", True),
        ("malformed", "/k/brokers/topics/bad", True),
        ("malformed", "/k/kafka-acl/Topic/t", True),
        ("pending_reassignment", "/k/admin/reassign_partitions", True),
        ("delete_marker", "/k/admin/delete_topics/old", True),
    }
    details = {f.kind: f.detail for f in check_rows(rows(tree))}
    assert details["unregistered_broker"] == "partition gone-0 names broker(s) 7 that are not registered"
    assert details["pending_reassignment"] == "a legacy reassignment request of 1 partition(s) is pending"
