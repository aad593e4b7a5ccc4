"""``bridgekeeper snapshot parse DIR`` restores a data directory whose newest snapshot is damaged as ZooKeeper
restores it (FileSnap.deserialize, FileTxnSnapLog.restore): the newest snapshot that reads whole, plus the
transaction logs after it, with one warning naming the skipped file. The files come from a real ZooKeeper
(snapCount 20, so several snapshots and log rolls); the newest snapshot is the one ZooKeeper writes when it
starts (ZooKeeperServer.loadData), taken before it serves anyone, so it is the exact tree at the zxid in its
name and the recovered rows can be compared with it field by field."""

from __future__ import annotations

import shutil
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from controller.cli import main as bridgekeeper
from controller.devstack.localzk import LocalZooKeeper
from migrate.snapshot import files
from migrate.snapshot.rows import read_rows
from tests.integration.cluster import wait_for
from tests.integration.test_snapshot_files import kafka_tree, snapshots_read_whole
from zkmodel import paths

#: The length ZooKeeper's own damaged test snapshot carries (src/test/resources/data/invalidsnap, ZOOKEEPER-367).
UNREASONABLE = 977468229


@dataclass
class DataDir:
    """A stopped server's files and what the undamaged files parse to."""

    path: Path  # the dataDir (holds version-2/)
    snapshot_rows: dict[str, dict[str, Any]]  # ``parse DIR`` by path: the newest snapshot
    replayed_rows: dict[str, dict[str, Any]]  # ``parse DIR --replay-logs``: the newest snapshot and the later logs


def _client(server: LocalZooKeeper) -> KazooClient:
    client = KazooClient(server.connect_string)
    client.start(timeout=20)
    return client


def _close(client: KazooClient) -> None:
    client.stop()
    client.close()


def _newest(data: Path) -> Path:
    return files.files_in(data)[0][-1]


def _parse(source: Path, out: Path, *args: str) -> dict[str, dict[str, Any]]:
    """The rows by path (a streamed snapshot comes in ZooKeeper's order, a replayed tree sorted by path)."""
    assert bridgekeeper(["snapshot", "parse", str(source), *args, "-o", str(out)]) == 0
    rows = read_rows(out)
    by_path = {r["path"]: r for r in rows}
    assert len(by_path) == len(rows)
    return by_path


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> DataDir:
    """Kafka's tree, a restart, more writes (setData, deletes, a multi, an ACL change, creates), a second
    restart (its start-up snapshot is the newest), then a few writes that stay in the log only, and a kill."""
    base = tmp_path_factory.mktemp("recovery")
    server = LocalZooKeeper(base_dir=base / "zk", system_properties={"zookeeper.snapCount": "20"})
    server.start()
    data = next((base / "zk").glob("zk*/data"))

    def settled() -> None:  # a stop must not cut the snapshot ZooKeeper is writing in the background short
        wait_for(lambda: snapshots_read_whole(data), 30, "ZooKeeper's snapshots to be written whole")

    try:
        client = _client(server)
        kafka_tree(client)
        _close(client)
        settled()
        server.restart(1)
        client = _client(server)
        for t in range(3):
            client.set(f"/config/topics/t{t}", b'{"version":1,"config":{"cleanup.policy":"compact"}}')
            client.delete(paths.partition_state(f"t{t}", 0))
        client.create("/admin/delete_topics/t5", b"", makepath=True)
        tx = client.transaction()
        tx.delete(paths.partition_state("t2", 1))
        tx.create("/phase2", b"two")
        tx.set_data(paths.topic("t2"), b'{"version":2,"partitions":{"0":[1,2]}}')
        assert not any(isinstance(r, Exception) for r in tx.commit())
        client.set_acls("/phase2", [*client.get_acls("/phase2")[0]])
        for _ in range(12):
            client.create("/config/changes/config_change_", b'{"version":2,"entity_path":"topics/t1"}', sequence=True)
        _close(client)
        settled()
        server.restart(1)
        newest = _newest(data)
        # ZooKeeper snapshots after more than snapCount/2 + a random roll (< snapCount/2) transactions: the
        # session's creation and these 5 writes stay below that, so the start-up snapshot stays the newest
        client = _client(server)
        client.create("/phase3", b"three")
        client.set("/phase2", b"changed after the newest snapshot")
        client.delete(paths.partition_state("t3", 1))
        client.create("/config/changes/config_change_", b"{}", sequence=True)
        client.set("/config/topics/t4", b'{"version":1,"config":{"retention.ms":"2"}}')
        server.kill(1)  # no clean shutdown: the last session stays open in the files
        _close(client)
    finally:
        server.stop()
    assert _newest(data) == newest and snapshots_read_whole(data)
    snaps, logs = files.files_in(data)
    assert len(snaps) >= 3 and files.zxid_of(logs[-1]) > files.zxid_of(newest)
    results = base / "results"
    results.mkdir()
    snapshot_rows = _parse(data, results / "snapshot.jsonl")
    replayed_rows = _parse(data, results / "replayed.jsonl", "--replay-logs")
    assert snapshot_rows != replayed_rows  # the writes after the newest snapshot are in the logs only
    assert "/phase2" in snapshot_rows and "/phase3" in replayed_rows
    return DataDir(data, snapshot_rows, replayed_rows)


def _copy(source: DataDir, tmp_path: Path) -> Path:
    target = tmp_path / "data"
    shutil.copytree(source.path, target)
    return target


def _cut_in_half(raw: bytes) -> bytes:
    return raw[: len(raw) // 2]


def _cut_inside_the_last_seal(raw: bytes) -> bytes:
    return raw[:-3]  # every node was read when this is found


def _flip_a_data_bit(raw: bytes) -> bytes:
    at = raw.index(b"retention.ms")  # inside a config znode's data: only the Adler-32 seal can tell
    return raw[:at] + bytes([raw[at] ^ 0x01]) + raw[at + 1 :]


def _unreasonable_path_length(raw: bytes) -> bytes:
    path = b"/brokers/ids"
    at = raw.index(struct.pack(">i", len(path)) + path)
    return raw[:at] + struct.pack(">i", UNREASONABLE) + raw[at + 4 :]


DAMAGES: dict[str, tuple[Callable[[bytes], bytes], str]] = {
    "cut-in-half": (_cut_in_half, "file ends inside"),
    "cut-inside-the-last-seal": (_cut_inside_the_last_seal, "file ends inside"),
    "flipped-bit": (_flip_a_data_bit, "CRC corruption"),
    "unreasonable-length": (_unreasonable_path_length, f"Unreasonable length = {UNREASONABLE}"),
}


def _damage(snap: Path, kind: str) -> str:
    """Damages ``snap`` the ``kind`` way; returns what the reader's error must say."""
    damage, reason = DAMAGES[kind]
    snap.write_bytes(damage(snap.read_bytes()))
    return reason


def _warnings(err: str) -> list[str]:
    assert "Traceback" not in err
    return [line for line in err.splitlines() if line.startswith("warning:")]


def _refused(source: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """``parse`` exits 2 (a damaged input) with one line on stderr and leaves neither the output nor its
    temporary file."""
    capsys.readouterr()
    out = tmp_path / "refused.jsonl"
    assert bridgekeeper(["snapshot", "parse", str(source), *args, "-o", str(out)]) == 2
    assert not out.exists() and not list(tmp_path.glob(".refused.jsonl.*"))
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    return err.strip()


@pytest.mark.parametrize("kind", list(DAMAGES))
def test_a_damaged_newest_snapshot_gives_way_to_an_older_one_and_the_logs(
    data_dir: DataDir, tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    data = _copy(data_dir, tmp_path)
    snaps = files.files_in(data)[0]
    newest, older = snaps[-1], snaps[-2]
    reason = _damage(newest, kind)
    capsys.readouterr()

    # the newest snapshot's tree: the older snapshot and the logs up to the newest one's zxid
    rows = _parse(data, tmp_path / "at-the-snapshot.jsonl")
    (warning,) = _warnings(capsys.readouterr().err)
    assert warning.startswith(f"warning: {newest.name} is damaged (offset ") and reason in warning, warning
    assert warning.endswith(
        f"; using {older.name} and replaying the transaction logs after it up to zxid 0x{files.zxid_of(newest):x}"
    )
    assert rows == data_dir.snapshot_rows

    # with --replay-logs: to the end of the logs, as from the undamaged snapshot
    rows = _parse(data / "version-2", tmp_path / "replayed.parquet", "--replay-logs")
    (warning,) = _warnings(capsys.readouterr().err)
    assert warning.endswith(f"; using {older.name} and replaying the transaction logs after it"), warning
    assert rows == data_dir.replayed_rows

    # with --zxid: up to that zxid, here the newest snapshot's
    rows = _parse(data, tmp_path / "upto.jsonl", "--zxid", hex(files.zxid_of(newest)))
    (warning,) = _warnings(capsys.readouterr().err)
    assert warning.endswith(f" after it up to zxid 0x{files.zxid_of(newest):x}"), warning
    assert rows == data_dir.snapshot_rows


def test_several_damaged_snapshots_are_named_in_one_warning(
    data_dir: DataDir, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _copy(data_dir, tmp_path)
    snaps = files.files_in(data)[0]
    _damage(snaps[-1], "flipped-bit")
    _damage(snaps[-2], "cut-in-half")
    capsys.readouterr()
    rows = _parse(data, tmp_path / "rows.jsonl")
    (warning,) = _warnings(capsys.readouterr().err)
    assert warning.startswith(f"warning: {snaps[-1].name} is damaged (offset ") and "CRC corruption" in warning
    assert f", {snaps[-2].name} is damaged (offset " in warning and f"; using {snaps[-3].name} and " in warning
    assert rows == data_dir.snapshot_rows


def test_strict_or_a_file_named_explicitly_refuses_a_damaged_snapshot(
    data_dir: DataDir, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """What restores the directory is refused when asked for that snapshot or nothing."""
    data = _copy(data_dir, tmp_path)
    newest = _newest(data)
    reason = _damage(newest, "unreasonable-length")
    assert _parse(data, tmp_path / "restored.jsonl") == data_dir.snapshot_rows
    for source, args in ((data, ("--strict",)), (newest, ())):
        for more in ((), ("--replay-logs",)):
            line = _refused(source, tmp_path, capsys, *args, *more)
            assert line.startswith(f"error: {newest.name}: offset ") and reason in line, line


def test_no_valid_snapshot_is_one_error(data_dir: DataDir, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _copy(data_dir, tmp_path)
    snaps = files.files_in(data)[0]
    for snap in snaps:
        _damage(snap, "cut-in-half")
    for args in ((), ("--replay-logs",)):
        line = _refused(data, tmp_path, capsys, *args)
        assert line.startswith(f"error: no valid snapshot in {data / 'version-2'}: {snaps[-1].name} is damaged ")
        assert all(f"{s.name} is damaged (offset " in line for s in snaps), line


def test_missing_logs_after_the_older_snapshot_are_refused(
    data_dir: DataDir, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The older snapshot alone is not the newest one's tree: without the logs in between, no output."""
    data = _copy(data_dir, tmp_path)
    snaps, logs = files.files_in(data)
    newest, older = snaps[-1], snaps[-2]
    # a log holds the transactions from the zxid in its name up to the next log's; the one that goes on past a
    # snapshot may start before it (ZooKeeper snapshots in the background, after it has rolled the log)
    starts = [files.zxid_of(log) for log in logs]
    ends = [*(s - 1 for s in starts[1:]), None]
    between = [
        log
        for log, start, end in zip(logs, starts, ends, strict=True)
        if start <= files.zxid_of(newest) and (end is None or end > files.zxid_of(older))
    ]
    assert between
    _damage(newest, "flipped-bit")
    for log in between:
        log.unlink()
    for args in ((), ("--replay-logs",)):
        capsys.readouterr()
        out = tmp_path / "rows.jsonl"
        assert bridgekeeper(["snapshot", "parse", str(data), *args, "-o", str(out)]) == 2
        assert not out.exists() and not list(tmp_path.glob(".rows.jsonl.*"))
        lines = capsys.readouterr().err.splitlines()
        assert len(lines) == 2 and lines[0].startswith(f"warning: {newest.name} is damaged "), lines
        assert lines[1].startswith("error: ") and "transactions are missing" in lines[1], lines
