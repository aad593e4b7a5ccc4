"""The rehearsal's client load (confluent-kafka and kafka-python worker processes) against a live three-node stack,
and the ledger reading the live ZooKeeper: every acknowledged write is there; a znode changed behind the clients'
back is named."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from migrate.connect import connect
from migrate.rehearse.ledger import verify
from migrate.rehearse.load import LoadPool
from migrate.rehearse.model import OPS, OpRecord
from tests.e2e.conftest import RunningStack
from tests.integration.cluster import wait_for
from zkmodel import paths
from zkmodel.configs import EntityConfig

pytestmark = pytest.mark.e2e
# ACL requests need an authorizer (without one every one is SECURITY_DISABLED); the clients connect as ANONYMOUS.
STACK_OVERRIDES = {"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer", "super.users": "User:ANONYMOUS"}


def live_config_write(records: list[OpRecord]) -> OpRecord:
    """The last acknowledged alter_config of a topic whose every operation was acknowledged and that was not
    deleted: its config znode must hold exactly that value."""
    by_topic: dict[str, list[OpRecord]] = {}
    for r in sorted(records, key=lambda r: (r["worker"], r["seq"])):
        if r["entity"].startswith("topic:"):
            by_topic.setdefault(r["entity"], []).append(r)
    candidates = [
        writes[-1]
        for recs in by_topic.values()
        if all(r["ok"] for r in recs) and recs[-1]["op"] != "delete_topic"
        if (writes := [r for r in recs if r["op"] == "alter_config"])
    ]
    assert candidates, "no live topic with an acknowledged config write"
    return max(candidates, key=lambda r: r["ended"])


def test_load_journal_matches_zookeeper(stack: RunningStack, tmp_path: Path) -> None:
    session = connect(stack.stack.zookeeper, name="rehearse-ledger-test", timeout=20)
    assert session is not None
    pool = LoadPool(stack.brokers, tmp_path / "journal", rate=15, seed=7, request_timeout_ms=10000)
    try:
        pool.start()
        assert sorted(pool.ops()["w1"]) == sorted(set(OPS) - {"alter_quota", "reassign"})  # confluent-kafka
        assert sorted(pool.ops()["w2"]) == sorted(OPS)  # kafka-python
        started = time.monotonic()
        wait_for(lambda: time.monotonic() - started > 10 and pool.counts() >= 150, 30, "150 client operations")
        pool.pause()
        paused_at = pool.counts()
        records = pool.records()
        assert len(records) == paused_at >= 150
        time.sleep(0.5)
        assert pool.counts() == paused_at and len(pool.records()) == paused_at, "a worker kept going while paused"

        assert {r["client"] for r in records} == {"confluent-kafka", "kafka-python"}
        assert {r["op"] for r in records} == set(OPS)
        failed = [f"{r['worker']}#{r['seq']} {r['op']} {r['entity']}: {r['error']}" for r in records if not r["ok"]]
        assert len(failed) <= len(records) // 20, failed
        assert all(r["forwardable"] == (r["op"] != "metadata") for r in records)
        assert all(
            r["entity"].startswith(("topic:rh-w", "acl:topic:rh-w", "quota:client-id:rh-w", "cluster")) for r in records
        )

        found = verify(records, session)
        assert found.ok, found.evidence
        assert found.summary.startswith(f"{sum(r['op'] != 'metadata' for r in records)} writes: ")

        # Behind the clients' back: an acknowledged config write overwritten in ZooKeeper.
        write = live_config_write(records)
        topic = write["entity"].split(":", 1)[1]
        path = paths.entity_config("topics", topic)
        original, _stat = stack.zk.get(path)
        assert EntityConfig.decode(path, original).config["retention.ms"] == write["args"]["value"]
        stack.zk.set(path, EntityConfig({"retention.ms": "1"}).encode())
        try:
            broken = verify(pool.records(), session)
        finally:
            stack.zk.set(path, original)
        assert not broken.ok and broken.problems == 1
        (line,) = broken.evidence
        assert f"{write['worker']}#" in line and f"topic:{topic} (acknowledged)" in line, line
        assert f"retention.ms '1', expected '{write['args']['value']}'" in line, line

        pool.resume()
        wait_for(lambda: pool.counts() > paused_at + 10, 20, "the load to resume")
    finally:
        pool.stop()
    try:
        final = pool.records()
        assert verify(final, session).ok
        assert len(final) == pool.counts()
    finally:
        session.close()
