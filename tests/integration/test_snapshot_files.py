"""``bridgekeeper snapshot export`` and ``snapshot parse`` against a real ZooKeeper: a Kafka-shaped tree written
with snapshots and log rolls every ~20 transactions, exported live, then the server killed and its files
parsed offline with the logs replayed -- the rows must be identical, every path, byte and stat field.
Damaged files fail with the file and offset named and leave no output behind."""

from __future__ import annotations

import os
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from controller.cli import main as bridgekeeper
from controller.devstack.localzk import LocalZooKeeper
from migrate.snapshot import files, replay
from migrate.snapshot.jute import FormatError
from migrate.snapshot.rows import read_rows
from tests.integration.cluster import wait_for
from zkmodel import paths
from zkmodel.topics import PartitionState, TopicAssignment


def kafka_tree(zk: KazooClient) -> None:
    """Topics with partition states, broker registrations (one ephemeral), configs and their change
    notifications, a reassignment request, sequential nodes partly deleted, a multi and a failed write."""
    zk.ensure_path("/config/changes")
    zk.ensure_path("/brokers/ids")
    for b in (1, 2, 3):
        zk.create(f"/brokers/ids/{b}", b'{"version":5,"host":"h","port":9092}', ephemeral=(b == 1))
    for t in range(12):
        zk.create(paths.topic(f"t{t}"), TopicAssignment({0: (1, 2), 1: (2, 3)}, version=2).encode(), makepath=True)
        for p in (0, 1):
            state = PartitionState(leader=1 + p, leader_epoch=0, isr=(1, 2), controller_epoch=1)
            zk.create(paths.partition_state(f"t{t}", p), state.encode(), makepath=True)
        zk.create("/config/changes/config_change_", b'{"version":2,"entity_path":"topics/t"}', sequence=True)
        zk.create(f"/config/topics/t{t}", b'{"version":1,"config":{}}', makepath=True)
        zk.set(f"/config/topics/t{t}", b'{"version":1,"config":{"retention.ms":"1"}}')
    for child in sorted(zk.get_children("/config/changes"))[:5]:
        zk.delete(f"/config/changes/{child}")
    tx = zk.transaction()
    tx.create("/admin/reassign_partitions", b'{"version":1,"partitions":[]}')
    tx.set_data(paths.topic("t0"), TopicAssignment({0: (2, 1), 1: (2, 3)}, version=2).encode())
    tx.commit()
    with pytest.raises(Exception):  # noqa: B017 - a failed write still takes a zxid (an error txn)
        zk.create("/no/parent/here", b"x")
    zk.delete(paths.partition_state("t11", 1))


def snapshots_read_whole(data_dir: Path) -> bool:
    """True once every snapshot in ``data_dir`` reads to its seals: ZooKeeper writes a snapshot in a
    background thread after the log roll that asks for one, so a kill can otherwise cut the newest short."""
    for snap in files.files_in(data_dir)[0]:
        try:
            files.read_snapshot(snap, lambda _node: None)
        except FormatError:
            return False
    return True


@pytest.fixture(params=["", "gz", "snappy"], ids=["plain", "gz", "snappy"])
def stopped_server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Path, list[dict[str, Any]]]]:
    """(the data directory, the rows ``snapshot export`` gave just before the server was killed)."""
    server = LocalZooKeeper(
        base_dir=tmp_path / "zk",
        system_properties={"zookeeper.snapCount": "20", "zookeeper.snapshot.compression.method": request.param},
    )
    server.start()
    try:
        client = KazooClient(server.connect_string)
        client.start(timeout=20)
        kafka_tree(client)
        out = tmp_path / "live.parquet"
        assert (
            bridgekeeper(["snapshot", "export", "--zookeeper", server.connect_string, "--paths", "/", "-o", str(out)])
            == 0
        )
        data_dir = next((tmp_path / "zk").glob("zk*/data"))
        wait_for(lambda: snapshots_read_whole(data_dir), 30, "ZooKeeper's snapshots to be written whole")
        for member in server.members:  # no clean shutdown: the ephemeral's session stays open in the files
            assert member.process is not None
            os.kill(member.process.pid, signal.SIGKILL)
            member.process.wait()
        client.stop()
        client.close()
        yield data_dir, read_rows(out)
    finally:
        server.stop()


def test_parse_with_replayed_logs_equals_the_live_export(
    stopped_server: tuple[Path, list[dict[str, Any]]], tmp_path: Path
) -> None:
    data_dir, live = stopped_server
    snaps, logs = files.files_in(data_dir)
    assert len(snaps) >= 3 and len(logs) >= 3  # the tree spans several snapshots and log rolls
    out = tmp_path / "parsed.parquet"
    assert bridgekeeper(["snapshot", "parse", str(data_dir), "--replay-logs", "-o", str(out)]) == 0
    parsed = read_rows(out)
    assert [r["path"] for r in parsed] == sorted(r["path"] for r in live)
    assert {r["path"]: r for r in parsed} == {r["path"]: r for r in live}
    assert any(r["ephemeral_owner"] != 0 for r in parsed)  # /brokers/ids/1
    as_json = tmp_path / "parsed.jsonl"
    assert bridgekeeper(["snapshot", "parse", str(data_dir), "--replay-logs", "-o", str(as_json)]) == 0
    assert read_rows(as_json) == parsed


def test_parse_without_logs_is_the_newest_snapshot_and_replay_can_stop_at_a_zxid(
    stopped_server: tuple[Path, list[dict[str, Any]]], tmp_path: Path
) -> None:
    data_dir, live = stopped_server
    snaps, _logs = files.files_in(data_dir)
    only = tmp_path / "snap.parquet"
    assert bridgekeeper(["snapshot", "parse", str(data_dir), "-o", str(only)]) == 0
    rows = read_rows(only)
    assert rows and max(r["mzxid"] for r in rows) <= max(r["mzxid"] for r in live)
    tree, info = replay.load(data_dir, replay_logs=True, upto=files.zxid_of(snaps[-1]) + 1)
    assert info.name == snaps[-1].name and tree.last_zxid <= files.zxid_of(snaps[-1]) + 1


def _copy(data_dir: Path, tmp_path: Path) -> Path:
    target = tmp_path / "copy"
    shutil.copytree(data_dir, target)
    return target / "version-2"


def _parse_fails(source: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], *args: str) -> str:
    out = tmp_path / "bad.parquet"
    assert bridgekeeper(["snapshot", "parse", str(source), *args, "-o", str(out)]) == 2  # a damaged input
    assert not out.exists() and not list(tmp_path.glob(".bad.parquet.*"))  # nothing written half
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


def test_damaged_files_are_named_with_their_offset(
    stopped_server: tuple[Path, list[dict[str, Any]]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data_dir, _live = stopped_server
    version2 = _copy(data_dir, tmp_path)
    snap = files.files_in(version2)[0][-1]
    original = snap.read_bytes()

    snap.write_bytes(original[: len(original) // 2])  # truncated
    err = _parse_fails(snap, tmp_path, capsys)
    assert snap.name in err and "offset" in err

    if snap.suffix not in (".gz", ".snappy"):
        flipped = bytearray(original)
        flipped[len(flipped) // 2] ^= 0x01  # one bit inside a znode's data or stat
        snap.write_bytes(bytes(flipped))
        err = _parse_fails(snap, tmp_path, capsys)
        assert f"error: {snap.name}: offset " in err

        snap.write_bytes(b"XXXX" + original[4:])
        err = _parse_fails(snap, tmp_path, capsys)
        assert f"{snap.name}: offset 0: not a ZooKeeper snapshot" in err


def test_a_bit_flip_fails_the_checksum(tmp_path: Path) -> None:
    """Flip a bit in a znode's data (where only the seal can notice) of a generated snapshot."""
    import struct
    import zlib

    def ustr(s: str) -> bytes:
        return struct.pack(">i", len(s)) + s.encode()

    body = struct.pack(">iiq", files.SNAP_MAGIC, 2, -1) + struct.pack(">i", 0) + struct.pack(">i", 0)
    stat = struct.pack(">qqqqiiiqq", 1, 1, 0, 0, 0, 0, 0, 0, 1)
    body += ustr("") + struct.pack(">i", 0) + struct.pack(">q", -1) + stat
    body += ustr("/a") + struct.pack(">i", 5) + b"hello" + struct.pack(">q", -1) + stat
    body += ustr("/")
    sealed = body + struct.pack(">q", zlib.adler32(body)) + ustr("/")
    good, bad = tmp_path / "snapshot.1", tmp_path / "snapshot.2"
    good.write_bytes(sealed)
    bad.write_bytes(sealed.replace(b"hello", b"hellp"))
    nodes: list[files.Node] = []
    files.read_snapshot(good, nodes.append)
    assert [n.path for n in nodes] == ["/a", "/"] and nodes[0].data == b"hello" and nodes[1].num_children == 1
    with pytest.raises(FormatError, match=r"^snapshot\.2: offset \d+: CRC corruption"):
        files.read_snapshot(bad, lambda n: None)


def test_a_log_that_does_not_follow_the_snapshot_is_refused(
    stopped_server: tuple[Path, list[dict[str, Any]]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data_dir, _live = stopped_server
    version2 = _copy(data_dir, tmp_path)
    snaps, logs = files.files_in(version2)
    older = snaps[-3]  # an older snapshot, so at least two logs follow it
    after = [log for log in logs if files.zxid_of(log) > files.zxid_of(older)]
    assert len(after) >= 2
    after[0].unlink()  # the transactions right after the snapshot are gone
    err = _parse_fails(older, tmp_path, capsys, "--replay-logs")
    assert f"error: {after[1].name}: offset " in err and "transactions are missing" in err
    nodes: list[files.Node] = []
    files.read_snapshot(older, nodes.append)  # the snapshot alone still reads
    assert nodes
