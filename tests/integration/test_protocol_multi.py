"""The create2 write multi (controller/zk/protocol/multi.py) against a real ZooKeeper server."""

from __future__ import annotations

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError, RolledBackError, RuntimeInconsistency

from controller.zk.ops import Check, Create, Delete, Op, SetData, build_multi
from controller.zk.protocol.multi import CHECKED, DELETED, Created, SetDone
from controller.zk.send import multi_async
from tests.zkharness import ZkServer, new_client

pytestmark = pytest.mark.integration


def _stats_for_creates(client: KazooClient) -> bool:
    """Whether the server answers a create2 in a multi with its Stat (ZOOKEEPER-4026: 3.7.2, 3.8.2, 3.9.0)."""
    line = client.command(b"srvr").splitlines()[0]  # "Zookeeper version: 3.8.0-..., built on ..."
    major, minor, patch = (int(x) for x in line.split(":", 1)[1].strip().split("-")[0].split(".")[:3])
    return (major, minor, patch) >= (3, 9, 0) or ((major, minor) in ((3, 7), (3, 8)) and patch >= 2)


def _multi(client: KazooClient, ops: list[Op]) -> list[object]:
    return list(multi_async(client, build_multi(client, ops)).get(timeout=10))


def test_every_op_answers_with_what_zookeeper_wrote(zk: KazooClient) -> None:
    zk.create("/epoch", b"1")
    zk.set("/epoch", b"2")  # version 1
    zk.create("/s", b"old")
    zk.create("/gone", b"")
    results = _multi(
        zk,
        [
            Check("/epoch", 1),
            Create("/t", b"{}"),
            Create("/t/partitions", None),
            Create("/t/partitions/0", b"state"),
            SetData("/s", b"new", 0),
            Delete("/gone", 0),
        ],
    )
    assert results[0] == CHECKED and results[5] == DELETED
    created = results[1:4]
    assert [type(r) for r in created] == [Created] * 3
    assert [r.path for r in created if isinstance(r, Created)] == ["/t", "/t/partitions", "/t/partitions/0"]
    setdone = results[4]
    assert isinstance(setdone, SetDone)
    zxid = setdone.stat.mzxid
    for r in created:
        assert isinstance(r, Created)
        if not _stats_for_creates(zk):
            assert r.stat is None  # answered as a plain create
            continue
        assert r.stat == zk.exists(r.path)
        assert r.stat.czxid == r.stat.mzxid == zxid and r.stat.version == 0
    assert setdone.stat == zk.exists("/s") and setdone.stat.version == 1 and setdone.stat.czxid < zxid
    assert zk.exists("/t/partitions").numChildren == 1
    assert zk.get("/t/partitions")[0] is None or zk.get("/t/partitions")[0] == b""  # ZooKeeper null data
    assert zk.exists("/gone") is None


def test_a_failed_multi_fails_as_kazoos_transaction_and_writes_nothing(zk: KazooClient) -> None:
    zk.create("/epoch", b"1")
    zk.create("/x", b"1")

    def kazoos(ops: list[Op]) -> list[object]:
        t = zk.transaction()
        for op in ops:
            if isinstance(op, Check):
                t.check(op.path, op.version)
            elif isinstance(op, Create):
                t.create(op.path, op.data or b"")
            elif isinstance(op, SetData):
                t.set_data(op.path, op.data, op.version)
        return list(t.commit())

    fenced: list[Op] = [Check("/epoch", 5), Create("/a", b""), SetData("/x", b"2")]
    exists: list[Op] = [Check("/epoch", 0), Create("/a", b""), Create("/x", b""), SetData("/x", b"2")]
    for ops, expected in (
        (fenced, [BadVersionError, RuntimeInconsistency, RuntimeInconsistency]),
        (exists, [RolledBackError, RolledBackError, NodeExistsError, RuntimeInconsistency]),
    ):
        ours = _multi(zk, ops)
        assert [type(r) for r in ours] == expected
        assert [type(r) for r in kazoos(ops)] == expected
        assert zk.exists("/a") is None
        assert zk.get("/x")[0] == b"1" and zk.exists("/x").version == 0


def test_paths_are_chroot_relative(zk_server: ZkServer, zk_chroot: str) -> None:
    client = new_client(zk_server.hosts + zk_chroot)
    client.start(timeout=20)
    try:
        results = _multi(client, [Create("/a", b""), Create("/a/seq-", b"", sequential=True), SetData("/a", b"1")])
        first, seq, changed = results
        assert isinstance(first, Created) and first.path == "/a"
        assert isinstance(seq, Created) and seq.path == "/a/seq-0000000000"
        assert isinstance(changed, SetDone) and changed.stat == client.exists("/a")
        if _stats_for_creates(client):
            assert first.stat == client.exists(first.path) and seq.stat == client.exists(seq.path)
        else:
            assert first.stat is None and seq.stat is None
    finally:
        client.stop()
        client.close()
