"""The ledger's replay against znodes, with ZooKeeper replaced by a dict of path -> bytes (the reads are behind
``ledger.Reader``; the live read path is covered by tests/e2e/test_rehearse_load.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from migrate.rehearse import ledger
from migrate.rehearse.model import OpRecord
from zkmodel import paths
from zkmodel.admin import PartitionReassignmentZnode, TopicPartition
from zkmodel.configs import EntityConfig
from zkmodel.kafka_acls import AclEntry, AclNode, AclOperation, PermissionType, ResourceType
from zkmodel.topics import TopicAssignment

T = "rh-w1-ab12-t1"
ACL_ARGS: dict[str, Any] = {
    "resource_type": "TOPIC",
    "resource": "rh-w1-ab12-a1",
    "pattern": "LITERAL",
    "principal": "User:rh-w1",
    "host": "*",
    "operation": "READ",
    "permission": "ALLOW",
}
ENTRY = AclEntry("User:rh-w1", PermissionType.ALLOW, "*", AclOperation.READ)
ID1, ID2 = "AAAAAAAAAAAAAAAAAAAAAQ", "AAAAAAAAAAAAAAAAAAAAAg"


class FakeReader:
    def __init__(self, znodes: Mapping[str, bytes]) -> None:
        self.znodes = dict(znodes)
        self.reads: list[str] = []

    def data(self, wanted: Sequence[str]) -> dict[str, bytes | None]:
        self.reads += wanted
        return {p: self.znodes.get(p) for p in wanted}

    def children(self, path: str) -> list[str] | None:
        self.reads.append(path)
        below = [p[len(path) + 1 :].split("/")[0] for p in self.znodes if p.startswith(path + "/")]
        return sorted(set(below)) if below or path in self.znodes else None


class Journal:
    """Records of one worker, seq in order."""

    def __init__(self, worker: str = "w1") -> None:
        self.worker = worker
        self.records: list[OpRecord] = []

    def add(self, op: str, entity: str, ok: bool = True, error: str | None = None, **args: Any) -> Journal:
        seq = len(self.records)
        self.records.append(
            {
                "worker": self.worker,
                "client": "kafka-python",
                "seq": seq,
                "op": op,
                "entity": entity,
                "args": args,
                "started": 100.0 + seq,
                "ended": 100.5 + seq,
                "ok": ok,
                "error": error,
                "retriable": None if ok else error == "REQUEST_TIMED_OUT",
                "forwardable": op != "metadata",
            }
        )
        return self


def topic(partitions: dict[int, tuple[int, ...]], topic_id: str = ID1, **moving: Any) -> bytes:
    return TopicAssignment(partitions, topic_id=topic_id, **moving).encode()


def config(values: dict[str, str] | None = None) -> bytes:
    return EntityConfig(values or {}).encode()


def zk(**by_topic: bytes) -> dict[str, bytes]:
    return {paths.topic(name.replace("_", "-")): data for name, data in by_topic.items()}


def run(journal: Journal | list[OpRecord], znodes: Mapping[str, bytes]) -> ledger.LedgerResult:
    records = journal.records if isinstance(journal, Journal) else journal
    return ledger.check(records, FakeReader(znodes))


def created(partitions: int = 2, rf: int = 3) -> Journal:
    return Journal().add("create_topic", f"topic:{T}", partitions=partitions, replication_factor=rf)


R3 = (1, 2, 3)
ORIGIN: dict[str, Any] = {"from": [1, 2]}


def test_acknowledged_create_missing_is_named() -> None:
    found = run(created(), {})
    assert not found.ok and found.problems == 1
    assert found.evidence == [
        f"w1#0 create_topic topic:{T} (acknowledged): expected present, topic znode absent; expected present with 2 "
        f"partition(s) at RF 3, no retention.ms, found absent"
    ]
    assert "1 entities not as the journal says" in found.summary


def test_acknowledged_create_present_is_fine_and_metadata_is_not_a_write() -> None:
    j = created().add("metadata", "cluster", call="list_topics")
    found = run(j, {**zk(rh_w1_ab12_t1=topic({0: R3, 1: R3})), paths.entity_config("topics", T): config()})
    assert found.ok, found.evidence
    assert found.summary == "1 writes: 1 acknowledged all present, 0 failed: 0 absent, 0 completed (timeouts)"
    assert found.evidence[0] == "entities: 1 topics, 0 ACL resources, 0 quota client ids"


@pytest.mark.parametrize("error", ["REQUEST_TIMED_OUT", "_TIMED_OUT", "KafkaConnectionError", "TOPIC_ALREADY_EXISTS"])
def test_create_failed_in_doubt_may_be_present_or_absent(error: str) -> None:
    j = Journal().add("create_topic", f"topic:{T}", ok=False, error=error, partitions=1, replication_factor=3)
    absent = run(j, {})
    assert absent.ok and "1 failed: 1 absent, 0 completed" in absent.summary
    present = run(j, zk(rh_w1_ab12_t1=topic({0: R3})))
    assert present.ok and "1 failed: 0 absent, 1 completed (timeouts)" in present.summary
    assert (
        f"w1#0 create_topic topic:{T} (failed {error}) took effect: present with 1 partition(s) at RF 3, "
        "no retention.ms" in present.evidence
    )
    # in doubt is not anything goes: a half-made topic fits neither before nor after
    wrong = run(j, zk(rh_w1_ab12_t1=topic({0: (1, 2)})))
    assert not wrong.ok and "not at RF 3" in wrong.evidence[0]


@pytest.mark.parametrize("error", ["NOT_CONTROLLER", "INVALID_REQUEST", "POLICY_VIOLATION"])
def test_create_failed_definitely_must_leave_no_trace(error: str) -> None:
    j = Journal().add("create_topic", f"topic:{T}", ok=False, error=error, partitions=1, replication_factor=3)
    assert run(j, {}).ok
    found = run(j, zk(rh_w1_ab12_t1=topic({0: R3})))
    assert not found.ok
    assert found.evidence == [
        f"w1#0 create_topic topic:{T} (failed {error}): a definite error, yet it took effect: found present with 1 "
        "partition(s) at RF 3, no retention.ms, expected absent"
    ]
    assert "1 failed writes (definite errors) that took effect" in found.summary


def test_in_doubt_classification() -> None:
    assert ledger.in_doubt("create_topic", "REQUEST_TIMED_OUT")
    assert ledger.in_doubt("alter_config", "OpDeadlineExceeded")
    assert ledger.in_doubt("alter_config", "_TRANSPORT")
    assert ledger.in_doubt("delete_topic", "UNKNOWN_TOPIC_OR_PARTITION")  # a retry's echo
    assert not ledger.in_doubt("alter_config", "UNKNOWN_TOPIC_OR_PARTITION")
    assert not ledger.in_doubt("create_topic", "NOT_CONTROLLER")
    assert not ledger.in_doubt("create_acl", None)


def test_partition_count_follows_create_partitions() -> None:
    j = created(partitions=1).add("create_partitions", f"topic:{T}", count=2)
    assert run(j, zk(rh_w1_ab12_t1=topic({0: R3, 1: R3}))).ok
    found = run(j, zk(rh_w1_ab12_t1=topic({0: R3})))
    assert (
        not found.ok
        and f"w1#1 create_partitions topic:{T} (acknowledged): expected partitions 0..1, found [0]" in found.evidence[0]
    )
    # a timed-out create_partitions: one or two partitions, never three
    j = created(partitions=1).add("create_partitions", f"topic:{T}", ok=False, error="REQUEST_TIMED_OUT", count=2)
    assert run(j, zk(rh_w1_ab12_t1=topic({0: R3}))).ok
    assert run(j, zk(rh_w1_ab12_t1=topic({0: R3, 1: R3}))).ok
    assert not run(j, zk(rh_w1_ab12_t1=topic({0: R3, 1: R3, 2: R3}))).ok


def test_config_value() -> None:
    j = created(partitions=1).add("alter_config", f"topic:{T}", key="retention.ms", value="3600001")
    t = zk(rh_w1_ab12_t1=topic({0: R3}))
    assert run(j, {**t, paths.entity_config("topics", T): config({"retention.ms": "3600001"})}).ok
    found = run(j, {**t, paths.entity_config("topics", T): config({"retention.ms": "3600000"})})
    assert not found.ok
    assert (
        "w1#1 alter_config" in found.evidence[0] and "retention.ms '3600000', expected '3600001'" in found.evidence[0]
    )
    assert not run(j, t).ok  # the config znode vanished
    # timed out: old or new value
    j.add("alter_config", f"topic:{T}", ok=False, error="REQUEST_TIMED_OUT", key="retention.ms", value="3600002")
    assert run(j, {**t, paths.entity_config("topics", T): config({"retention.ms": "3600001"})}).ok
    assert run(j, {**t, paths.entity_config("topics", T): config({"retention.ms": "3600002"})}).ok
    assert not run(j, {**t, paths.entity_config("topics", T): config({"retention.ms": "7"})}).ok


def test_delete_accepts_gone_or_marked_only_after_a_delete() -> None:
    j = created(partitions=1).add("delete_topic", f"topic:{T}")
    t = zk(rh_w1_ab12_t1=topic({0: R3}))
    marker = {paths.delete_topic_marker(T): b""}
    assert run(j, {}).ok
    assert run(j, {**t, **marker}).ok  # deletion under way
    assert run(j, marker).ok  # topic gone, marker not yet: what a read between Kafka's two deletes sees
    found = run(j, t)
    assert not found.ok and "expected deleted or marked for deletion" in found.evidence[0]
    # a topic that was never deleted must not be marked
    assert not run(created(partitions=1), {**t, **marker}).ok


def test_acl_entries_and_duplicates() -> None:
    j = Journal().add("create_acl", "acl:topic:rh-w1-ab12-a1", **ACL_ARGS)
    path = paths.acl(ResourceType.TOPIC, "rh-w1-ab12-a1")
    other = AclEntry("User:someone", PermissionType.ALLOW, "*", AclOperation.READ)
    assert run(j, {path: AclNode((ENTRY, other)).encode()}).ok
    assert not run(j, {path: AclNode((other,)).encode()}).ok
    twice = run(j, {path: AclNode((ENTRY, ENTRY)).encode()})
    assert not twice.ok and twice.problems == 1
    assert twice.evidence == [f"w1: ACL {path} holds User:rh-w1 ALLOW READ from * 2 times"]
    assert "1 duplicates" in twice.summary
    j.add("create_acl", "acl:topic:rh-w1-ab12-a1", **ACL_ARGS)  # created again: Kafka must not store it twice
    j.add("delete_acl", "acl:topic:rh-w1-ab12-a1", **ACL_ARGS)
    assert run(j, {}).ok
    assert run(j, {path: AclNode((other,)).encode()}).ok
    assert not run(j, {path: AclNode((ENTRY,)).encode()}).ok


def test_quota_value() -> None:
    j = Journal().add("alter_quota", "quota:client-id:rh-w1-ab12-q1", key="producer_byte_rate", value=1024000)
    path = paths.entity_config("clients", "rh-w1-ab12-q1")
    assert run(j, {path: config({"producer_byte_rate": "1024000"})}).ok
    found = run(j, {path: config({"producer_byte_rate": "2048"})})
    assert not found.ok and "expected producer_byte_rate=1024000, found producer_byte_rate=2048" in found.evidence[0]
    assert not run(j, {}).ok


def test_reassignment_in_progress_done_or_wrong_target() -> None:
    j = created(partitions=2, rf=2).add("reassign", f"topic:{T}", partition=1, replicas=[3, 1], **ORIGIN)
    done = topic({0: (1, 2), 1: (3, 1)})
    # KIP-455 in flight: RS = target + origin, adding 3, removing 2
    moving = topic({0: (1, 2), 1: (3, 1, 2)}, adding_replicas={1: (3,)}, removing_replicas={1: (2,)})
    wrong = topic({0: (1, 2), 1: (2, 3)})
    assert run(j, zk(rh_w1_ab12_t1=done)).ok
    assert run(j, zk(rh_w1_ab12_t1=moving)).ok
    found = run(j, zk(rh_w1_ab12_t1=wrong))
    assert not found.ok
    assert "partition 1: replicas [2, 3], expected target [3, 1]" in found.evidence[0]
    not_started = topic({0: (1, 2), 1: (1, 2)})
    assert not run(j, zk(rh_w1_ab12_t1=not_started)).ok
    legacy = PartitionReassignmentZnode(((TopicPartition(T, 1), (3, 1)),)).encode()
    assert run(j, {**zk(rh_w1_ab12_t1=not_started), paths.REASSIGN_PARTITIONS: legacy}).ok
    # moving elsewhere is not moving towards the target
    astray = topic({0: (1, 2), 1: (2, 3, 1)}, adding_replicas={1: (2, 3)}, removing_replicas={1: (1,)})
    assert not run(j, zk(rh_w1_ab12_t1=astray)).ok


def test_replica_and_topic_id_duplicates() -> None:
    j = created(partitions=1, rf=2)
    j.add("create_topic", "topic:rh-w1-ab12-t2", partitions=1, replication_factor=2)
    fine = run(j, zk(rh_w1_ab12_t1=topic({0: (1, 2)}), rh_w1_ab12_t2=topic({0: (2, 3)}, topic_id=ID2)))
    assert fine.ok, fine.evidence
    shared = run(j, zk(rh_w1_ab12_t1=topic({0: (1, 2)}), rh_w1_ab12_t2=topic({0: (2, 3)})))
    assert not shared.ok and shared.evidence == [f"topic id {ID1} shared by {T}, rh-w1-ab12-t2"]
    repeated = run(j, zk(rh_w1_ab12_t1=topic({0: (1, 1)}), rh_w1_ab12_t2=topic({0: (2, 3)}, topic_id=ID2)))
    assert not repeated.ok
    assert f"w1: topic {T} partition 0 repeats a broker in its replicas [1, 1]" in repeated.evidence
    assert (
        f"w1#0 create_topic topic:{T} (acknowledged): topic znode malformed: partitions[0] has duplicate broker ids: "
        "[1, 1]; expected present with 1 partition(s) at RF 2, no retention.ms, found a malformed topic znode "
        "(partitions[0] has duplicate broker ids: [1, 1])"
    ) in repeated.evidence


def test_workers_replay_separately_and_evidence_is_capped() -> None:
    records: list[OpRecord] = []
    for w in range(1, 4):
        j = Journal(f"w{w}")
        for k in range(20):
            j.add("create_topic", f"topic:rh-w{w}-ab12-t{k}", partitions=1, replication_factor=1)
        records += j.records
    found = run(sorted(records, key=lambda r: -r["seq"]), {})  # order given does not matter: seq does
    assert found.problems == 60
    assert len(found.evidence) == 51 and found.evidence[-1] == "... and 10 more"
    assert found.summary == "60 writes: 60 entities not as the journal says"


def test_malformed_znode_is_a_problem_not_a_crash() -> None:
    found = run(created(partitions=1), zk(rh_w1_ab12_t1=b'{"version":1,"partitions":"no"}'))
    assert not found.ok and found.problems == 1
    assert "topic znode malformed: 'partitions' must be a JSON object, got string" in found.evidence[0]
    # a malformed config znode is a problem of its own
    bad_config = {paths.entity_config("topics", T): b"not json"}
    found = run(created(partitions=1), {**zk(rh_w1_ab12_t1=topic({0: R3})), **bad_config})
    assert not found.ok and found.evidence[0].startswith("malformed znode /config/topics/rh-w1-ab12-t1: ")
    assert "1 malformed znodes" in found.summary
