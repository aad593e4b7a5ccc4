"""``bridgekeeper snapshot export`` against a real ZooKeeper: the identity it reads as (``--zk-identity``, its file
and environment forms, the older ``--zk-digest``), an output it could not write refused before connecting, and a
ZooKeeper lost or a disk filled midway leaving no output file behind."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.security import make_acl, make_digest_acl

from controller.cli import main as bridgekeeper
from controller.zk.errors import ZkReadTimeout
from migrate.snapshot.rows import read_rows
from tests.netutil import closed_port
from tests.zkharness import ZkServer, new_client

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
OWNER = make_digest_acl("u", "pw", all=True)
#: What ZooKeeper's getACL shows of a digest id to a reader without ADMIN on the znode (the hash masked).
MASKED = ("digest", "u:x")


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "controller.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
    )


@pytest.fixture
def locked(zk_server: ZkServer, zk_chroot: str) -> Iterator[str]:
    """A Kafka-shaped tree under the test's chroot whose topic znode only ``u:pw`` administers (world may read) and
    whose user config only ``u:pw`` may read; yields the chroot's connect string."""
    admin = new_client(zk_server.hosts + zk_chroot, auth_data=[("digest", "u:pw")])
    admin.start(timeout=20)
    try:
        admin.ensure_path("/brokers/topics")  # open: only the znodes below carry the ACLs
        admin.ensure_path("/config/users")
        topic = b'{"version":3,"partitions":{"0":[1]}}'
        admin.create("/brokers/topics/t", topic, acl=[OWNER, make_acl("world", "anyone", read=True)])
        admin.create("/config/users/alice", b'{"version":1,"config":{}}', acl=[OWNER])
        yield zk_server.hosts + zk_chroot
        # an ACL only u:pw administers and a znode only it may delete: emptied here, not by the chroot fixture
        admin.delete("/config", recursive=True)
        admin.delete("/brokers", recursive=True)
    finally:
        admin.stop()
        admin.close()


def _acls(rows: Path) -> dict[str, set[tuple[str, str]]]:
    return {r["path"]: {(a["scheme"], a["id"]) for a in r["acl"]} for r in read_rows(rows)}


def _identity_file(tmp_path: Path, mode: int) -> Path:
    path = tmp_path / f"zk-{mode:o}.identity"
    path.write_text("digest:u:pw\n")
    path.chmod(mode)
    return path


@pytest.mark.parametrize("form", ["flag", "file", "environment", "older --zk-digest"])
def test_each_identity_form_reads_as_that_identity(locked: str, tmp_path: Path, form: str) -> None:
    out = tmp_path / "rows.parquet"
    flags: dict[str, list[str]] = {
        "flag": ["--zk-identity", "digest:u:pw"],
        "file": ["--zk-identity-file", str(_identity_file(tmp_path, 0o600))],
        "environment": [],
        "older --zk-digest": ["--zk-digest", "u:pw"],
    }
    env = {"BRIDGEKEEPER_ZK_IDENTITY": "digest:u:pw"} if form == "environment" else {}
    done = cli("snapshot", "export", "--zookeeper", locked, "-o", str(out), *flags[form], env=env)
    assert done.returncode == 0, done.stderr
    assert "warning" not in done.stderr  # a 0600 file is what the warning asks for
    acls = _acls(out)
    assert acls["/brokers/topics/t"] == {(OWNER.id.scheme, OWNER.id.id), ("world", "anyone")}  # the hash itself
    assert "/config/users/alice" in acls  # readable only as u:pw


def test_without_an_identity_the_hash_is_masked(locked: str, zk: KazooClient, tmp_path: Path) -> None:
    out = tmp_path / "rows.parquet"
    no_identity = {"BRIDGEKEEPER_ZK_IDENTITY": ""}
    done = cli("snapshot", "export", "--zookeeper", locked, "-o", str(out), "--paths", "/brokers", env=no_identity)
    assert done.returncode == 0, done.stderr
    assert MASKED in _acls(out)["/brokers/topics/t"]


def test_a_znode_it_may_not_read_is_named_and_nothing_is_written(locked: str, tmp_path: Path) -> None:
    out = tmp_path / "rows.parquet"
    done = cli("snapshot", "export", "--zookeeper", locked, "-o", str(out), env={"BRIDGEKEEPER_ZK_IDENTITY": ""})
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines() == [
        "error: no READ permission on '/config/users/alice' as no identity (--zk-identity): export as an identity "
        "its ACL lets read, or leave its subtree out (--paths); nothing was written"
    ]
    assert list(tmp_path.iterdir()) == []


def test_a_group_readable_identity_file_is_used_with_a_warning(locked: str, tmp_path: Path) -> None:
    identity = _identity_file(tmp_path, 0o640)
    out = tmp_path / "rows.parquet"
    done = cli("snapshot", "export", "--zookeeper", locked, "-o", str(out), "--zk-identity-file", str(identity))
    assert done.returncode == 0, done.stderr
    assert f"warning: {identity} is readable by group or others (mode -rw-r-----); chmod 600 it" in done.stderr
    assert (OWNER.id.scheme, OWNER.id.id) in _acls(out)["/brokers/topics/t"]


# -- refused before connecting -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("output", "message"),
    [
        ("out.csv", "unsupported output extension '.csv': use .parquet or .jsonl, or give --format"),
        ("out", "has no extension: use .parquet or .jsonl, or give --format"),
        ("no-such-dir/out.parquet", "does not exist"),
        ("a-directory.parquet", "is a directory: name a file"),
    ],
)
@pytest.mark.timing  # asserts a wall-clock bound of a few seconds: run alone (docs/testing.md)
def test_an_output_that_cannot_be_written_is_refused_before_connecting(
    tmp_path: Path, output: str, message: str
) -> None:
    (tmp_path / "a-directory.parquet").mkdir()
    started = time.monotonic()
    done = cli("snapshot", "export", "--zookeeper", f"127.0.0.1:{closed_port()}", "-o", str(tmp_path / output))
    assert time.monotonic() - started < 2.0, "a connection was tried (it lasts --timeout, 10 s)"
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], lines
    assert [p.name for p in tmp_path.iterdir()] == ["a-directory.parquet"]  # nothing written beside it


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--zk-digest", "u:pw", "--zk-identity", "digest:u:pw"], "--zk-digest is the old spelling of --zk-identity"),
        (["--zk-identity", "u:pw"], "--zk-identity must be digest:USER:PASSWORD"),
        (["--zk-digest", "u"], "--zk-digest must be USER:PASSWORD"),
        (["--zk-identity-file", "/no/such/identity"], "--zk-identity-file /no/such/identity: No such file"),
        (["--paths", "brokers"], "--paths takes absolute znode paths, got ['brokers']"),
    ],
)
@pytest.mark.timing  # asserts a wall-clock bound of a few seconds: run alone (docs/testing.md)
def test_bad_flags_are_refused_before_connecting(
    tmp_path: Path, flags: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "rows.parquet"
    started = time.monotonic()
    code = bridgekeeper(["snapshot", "export", "--zookeeper", f"127.0.0.1:{closed_port()}", "-o", str(out), *flags])
    assert time.monotonic() - started < 2.0
    assert code == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_an_explicit_format_takes_any_name(zk: KazooClient, zk_hosts: str, tmp_path: Path) -> None:
    zk.create("/brokers/ids", makepath=True)
    out = tmp_path / "rows.txt"
    assert bridgekeeper(["snapshot", "export", "--zookeeper", zk_hosts, "-o", str(out), "--format", "jsonl"]) == 0
    assert [r["path"] for r in read_rows(out.rename(tmp_path / "rows.jsonl"))] == ["/brokers", "/brokers/ids"]


def test_an_unreachable_zookeeper_is_3(tmp_path: Path) -> None:
    out = tmp_path / "rows.parquet"
    address = f"127.0.0.1:{closed_port()}"
    done = cli("snapshot", "export", "--zookeeper", address, "-o", str(out), "--timeout", "1")
    assert done.returncode == 3, done.stderr
    assert done.stderr.splitlines() == [f"error: cannot connect to ZooKeeper at {address} within 1 s"]
    assert list(tmp_path.iterdir()) == []


# -- failing midway --------------------------------------------------------------------------------------------


def _a_tree(zk: KazooClient) -> None:
    for i in range(20):
        zk.create(f"/brokers/topics/t{i}", b'{"version":3,"partitions":{"0":[1]}}', makepath=True)


def test_zookeeper_lost_midway_is_3_and_leaves_no_file(
    zk: KazooClient,
    zk_hosts: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from migrate.snapshot import export

    _a_tree(zk)
    walk = export.walk

    def lost_after_a_few(*args: Any, **kwargs: Any) -> Iterator[Any]:
        for n, node in enumerate(walk(*args, **kwargs)):
            if n == 5:
                raise ZkReadTimeout("a bulk read of 21 znodes did not complete")
            yield node

    monkeypatch.setattr(export, "walk", lost_after_a_few)
    out = tmp_path / "rows.jsonl"
    assert bridgekeeper(["snapshot", "export", "--zookeeper", zk_hosts, "-o", str(out)]) == 3
    lines = capsys.readouterr().err.splitlines()
    assert lines == [
        f"error: lost ZooKeeper at {zk_hosts} while exporting (a bulk read of 21 znodes did not "
        "complete); nothing was written"
    ]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("suffix", [".parquet", ".jsonl"])
def test_a_full_disk_midway_is_1_and_leaves_no_file(
    zk: KazooClient,
    zk_hosts: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    suffix: str,
) -> None:
    from migrate.snapshot.rows import RowWriter

    _a_tree(zk)
    write_batch: Callable[[RowWriter], None] = RowWriter._write_batch

    def full(self: RowWriter) -> None:
        write_batch(self)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(RowWriter, "_write_batch", full)
    out = tmp_path / f"rows{suffix}"
    assert bridgekeeper(["snapshot", "export", "--zookeeper", zk_hosts, "-o", str(out)]) == 1
    lines = capsys.readouterr().err.splitlines()
    assert lines == [f"error: {out}: cannot write the rows (No space left on device)"]
    assert list(tmp_path.iterdir()) == []
