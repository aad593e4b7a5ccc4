"""Repeated induced failovers under client load.

A 3-server ZooKeeper ensemble, 3 node processes at IBP 3.9 (brokers forward admin writes to the controller),
confluent-kafka and kafka-python workers running a steady admin load and journaling every operation; twelve
failovers, three of each kind (a frozen controller's sessions expired, the controller session expired on the
server, SIGKILL, the ZooKeeper leader killed or frozen), each checked with the load paused
(:mod:`testing.failover_soak`: one active controller, epochs, no write by a deposed controller in
ZooKeeper's own transaction log, every reassignment finished, every acknowledged write present, nothing
duplicated). ``python -m bench.failover_soak`` runs the same cycle 50 times.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from testing.failover_soak import DEPOSING, KINDS, Failover, FailoverSoak, SoakOptions

pytestmark = pytest.mark.reliability
FAILOVERS = 12


@pytest.fixture
def soak(tmp_path: Path) -> Iterator[FailoverSoak]:
    s = FailoverSoak(SoakOptions(data_dir=tmp_path / "soak", rate=4.0, seed=15))
    try:
        s.start()
        yield s
    finally:
        s.close()


def describe(c: Failover) -> str:
    return (
        f"#{c.index} {c.kind}: {c.detail}; controller {c.controller_before} -> {c.controller_after}, epoch "
        f"{c.epoch_before} -> {c.epoch_after}; violations: {c.violations}; evidence: {c.evidence}"
    )


def test_twelve_failovers_of_every_kind_under_client_load(soak: FailoverSoak) -> None:
    started = time.monotonic()
    summary = soak.run(FAILOVERS)
    cycles = soak.cycles
    assert len(cycles) == FAILOVERS
    assert {c.kind for c in cycles} == set(KINDS)
    assert all(summary.by_kind[k] == FAILOVERS // len(KINDS) for k in KINDS), summary.by_kind
    for c in cycles:
        assert c.ok, describe(c)
        assert c.recovered_s is not None, describe(c)
        if c.kind in DEPOSING:
            # Deposed by construction: another session holds /controller, under a higher epoch.
            assert c.moved and c.elected_s is not None, describe(c)
            assert c.epoch_before is not None and c.epoch_after is not None and c.epoch_after > c.epoch_before
    epochs = [c.epoch_after for c in cycles]
    assert all(a is not None and b is not None and a <= b for a, b in itertools.pairwise(epochs)), epochs
    # Real load ran through every cycle, with both client libraries, and nearly all of it was acknowledged.
    records = soak.records()
    assert {r["client"] for r in records} == {"confluent-kafka", "kafka-python"}
    assert all(c.acked > 0 for c in cycles), [(c.index, c.acked, c.failed) for c in cycles]
    assert summary.acked >= 10 * FAILOVERS and summary.acked > 4 * summary.failed, (summary.acked, summary.errors)
    kinds_done = {r["op"] for r in records if r["ok"]}
    assert {"create_topic", "delete_topic", "alter_config", "create_acl", "reassign"} <= kinds_done, kinds_done
    assert not summary.violations
    print(
        f"{FAILOVERS} failovers in {time.monotonic() - started:.0f} s; elected {summary.elected}; "
        f"ops {summary.acked} acknowledged, {summary.failed} failed {dict(summary.errors)}"
    )
