"""Fuzzing the offline ZooKeeper file readers (``migrate.snapshot``): a small snapshot and transaction log
are built here byte by byte in ZooKeeper 3.9's format (sessions, an ACL cache, nodes, the three seals; a
log with creates, a multi, setData, an ACL change, a failed write and a session close), then damaged: bytes
overwritten with length-like values, inserted, deleted, truncated, and (to get past the Adler-32 seals)
damaged and sealed again, as a buggy writer would leave them. Plain, gzip and snappy-java files.

The promise (migrate.snapshot.jute): a file is read, or refused with ``FormatError`` naming the file and the
offset, never another exception and never a hang; ``bridgekeeper snapshot parse`` turns that into one
``error:`` line and exit status 1, and leaves no output behind.
"""

from __future__ import annotations

import gzip
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path

import cramjam
import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.cli import main as bridgekeeper
from migrate.snapshot import files, replay
from migrate.snapshot.jute import FormatError
from tests.fuzz.budget import budget, no_hang
from tests.fuzz.test_wire_decoder import LENGTH_LIKE

pytestmark = pytest.mark.fuzz

HANG_S = 20.0
SESSION = 0x1000_0000_0000_0001
STAT = struct.Struct(">qqqqiiiqq")


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


def ustring(text: str | None) -> bytes:
    return i32(-1) if text is None else i32(len(text.encode())) + text.encode()


def buffer(data: bytes | None) -> bytes:
    return i32(-1) if data is None else i32(len(data)) + data


def acl_list(acls: list[tuple[int, str, str]]) -> bytes:
    return i32(len(acls)) + b"".join(i32(p) + ustring(s) + ustring(i) for p, s, i in acls)


def stat(zxid: int, owner: int = 0) -> bytes:
    return STAT.pack(zxid, zxid, 1_700_000_000_000, 1_700_000_000_000, 0, 1, 0, owner, zxid)


# (path, data, ACL key, ephemeral owner) in ZooKeeper's depth-first pre-order; "" is the root.
NODES = [
    ("", b"", -1, 0),
    ("/brokers", None, 1, 0),
    ("/brokers/ids", None, 1, 0),
    ("/brokers/ids/1", b'{"version":5,"host":"h","port":9092}', 1, SESSION),
    ("/brokers/topics", None, 1, 0),
    ("/brokers/topics/t", b'{"version":2,"partitions":{"0":[1]},"adding_replicas":{},"removing_replicas":{}}', 2, 0),
    ("/controller_epoch", b"7", -1, 0),
    ("/zookeeper", b"", -1, 0),
]


def seal(content: bytes) -> bytes:
    """SnapStream.sealStream: the Adler-32 of everything before it, then "/"."""
    return i64(zlib.adler32(content)) + ustring("/")


def snapshot_body() -> bytes:
    """Everything before the first seal: header, sessions, ACL cache, nodes, the "/" end marker."""
    out = struct.pack(">iiq", files.SNAP_MAGIC, 2, -1)
    out += i32(2) + i64(SESSION) + i32(6000) + i64(SESSION + 1) + i32(18000)
    out += i32(2)
    out += i64(1) + acl_list([(31, "world", "anyone")])
    out += i64(2) + acl_list([(31, "digest", "kafka:hash="), (1, "world", "anyone")])
    for n, (path, data, acl, owner) in enumerate(NODES, start=1):
        out += ustring(path) + buffer(data) + i64(acl) + stat(n, owner)
    return out + ustring("/")


def sealed(body: bytes) -> bytes:
    """A 3.9 snapshot file: the body and its seal, the digest and its seal, the last zxid and its seal."""
    out = body + seal(body)
    out += i64(len(NODES)) + i32(2) + i64(123456789)
    out += seal(out)
    out += i64(len(NODES) + 3)
    return out + seal(out)


def snappy_java(data: bytes) -> bytes:
    """snappy-java's stream: magic, version and compatible version, then (length, raw Snappy block) chunks."""
    out = files.SNAPPY_MAGIC + i32(1) + i32(1)
    for start in range(0, len(data), 100):
        block = bytes(cramjam.snappy.compress_raw(data[start : start + 100]))
        out += i32(len(block)) + block
    return out


SNAPSHOT = sealed(snapshot_body())
SUFFIXES = {"": lambda b: b, ".gz": gzip.compress, ".snappy": snappy_java}


def txn(zxid: int, kind: int, body: bytes, session: int = SESSION) -> bytes:
    """One log entry: checksum, length, TxnHeader + body, the "B" end marker."""
    data = i64(session) + i32(zxid) + i64(zxid) + i64(1_700_000_000_000 + zxid) + i32(kind) + body
    return i64(zlib.adler32(data)) + i32(len(data)) + data + b"B"


def create(path: str, data: bytes, ephemeral: bool = False) -> bytes:
    return ustring(path) + buffer(data) + acl_list([(31, "world", "anyone")]) + bytes([ephemeral]) + i32(1)


def log_entries(first: int) -> list[bytes]:
    multi = i32(3) + i32(files.SET_DATA) + buffer(ustring("/brokers/topics/t") + buffer(b"{}") + i32(1))
    multi += i32(files.CHECK) + buffer(ustring("/brokers") + i32(0))
    multi += i32(files.CREATE) + buffer(create("/inner", b"x"))
    return [
        txn(first, files.CREATE, create("/brokers/topics/u", b'{"version":1,"partitions":{}}')),
        txn(first + 1, files.CREATE, create("/brokers/ids/2", b"{}", ephemeral=True)),
        txn(first + 2, files.MULTI, multi),
        txn(first + 3, files.ERROR, i32(-110)),
        txn(first + 4, files.SET_ACL, ustring("/brokers") + acl_list([(1, "world", "anyone")]) + i32(1)),
        txn(first + 5, files.DELETE, ustring("/brokers/topics/u")),
        txn(first + 6, files.CLOSE_SESSION, i32(1) + ustring("/brokers/ids/1")),
    ]


def log_file(first: int) -> bytes:
    return struct.pack(">iiq", files.LOG_MAGIC, 2, 0) + b"".join(log_entries(first)) + b"\x00" * 64


@st.composite
def damaged(draw: st.DrawFn, data: bytes) -> bytes:
    """``data`` after one to three edits: a window overwritten (by a length-like value or random bytes),
    bytes inserted, bytes deleted, or the file cut short."""
    out = bytearray(data)
    for _ in range(draw(st.integers(1, 3), label="edits")):
        at = draw(st.integers(0, len(out)), label="at")
        kind = draw(st.sampled_from(["overwrite", "insert", "delete", "truncate"]), label="kind")
        patch = draw(st.sampled_from(LENGTH_LIKE) | st.binary(min_size=1, max_size=8), label="patch")
        if kind == "overwrite":
            out[at : at + len(patch)] = patch
        elif kind == "insert":
            out[at:at] = patch
        elif kind == "delete":
            del out[at : at + draw(st.integers(1, 16), label="deleted")]
        else:
            del out[at:]
    return bytes(out)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("snapfuzz")


def read_or_refuse(path: Path) -> list[files.Node] | None:
    """The nodes, or None after checking the FormatError names the file."""
    nodes: list[files.Node] = []
    with no_hang(HANG_S, f"reading {path.name}"):
        try:
            files.read_snapshot(path, nodes.append)
        except FormatError as exc:
            assert exc.name == path.name and str(exc).startswith(f"{path.name}: offset ")
            return None
    return nodes


def write(workdir: Path, name: str, data: bytes) -> Path:
    path = workdir / name
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("suffix", list(SUFFIXES))
def test_the_built_snapshot_reads_back(workdir: Path, suffix: str) -> None:
    nodes = read_or_refuse(write(workdir, f"snapshot.8{suffix}", SUFFIXES[suffix](SNAPSHOT)))
    assert nodes is not None
    assert sorted(n.path for n in nodes) == sorted(p or "/" for p, _d, _a, _o in NODES)
    assert {n.path: n.num_children for n in nodes}["/brokers"] == 2


@pytest.mark.parametrize("suffix", list(SUFFIXES))
@budget(120)
@given(data=st.data())
def test_damaged_files(workdir: Path, suffix: str, data: st.DataObject) -> None:
    """Damage to the file as it lies on disk (for .gz and .snappy: to the compressed bytes)."""
    raw = data.draw(damaged(SUFFIXES[suffix](SNAPSHOT)), label="file")
    read_or_refuse(write(workdir, f"snapshot.8{suffix}", raw))


@budget(200)
@given(body=damaged(snapshot_body()))
def test_damaged_and_sealed_again(workdir: Path, body: bytes) -> None:
    """Damage under valid seals, so the reader goes on past the checksum into the node tree."""
    read_or_refuse(write(workdir, "snapshot.8", sealed(body)))


def test_a_corrupt_deflate_stream_is_a_format_error(workdir: Path) -> None:
    # gzip raised zlib.error ("invalid distance too far back"), which escaped `snapshot parse` as a traceback.
    raw = bytearray(gzip.compress(SNAPSHOT))
    raw[15] ^= 0xFF
    with pytest.raises(FormatError, match=r"^snapshot\.8\.gz: offset \d+: compressed stream is damaged: Error -3"):
        files.read_snapshot(write(workdir, "snapshot.8.gz", bytes(raw)), lambda _node: None)


def test_every_truncation_is_refused_or_a_whole_older_format(workdir: Path) -> None:
    """Cut anywhere, the file is refused, unless the cut falls right after a seal (a 3.5 or 3.6 file)."""
    first_seal_end = len(snapshot_body()) + 8 + 5
    digest_seal_end = first_seal_end + 8 + 4 + 8 + 8 + 5
    for cut in range(len(SNAPSHOT)):
        nodes = read_or_refuse(write(workdir, "snapshot.8", SNAPSHOT[:cut]))
        assert (nodes is not None) == (cut in (first_seal_end, digest_seal_end)), cut


# --- transaction logs and replay --------------------------------------------------------------------------------


@pytest.fixture
def datadir(workdir: Path) -> Iterator[Path]:
    d = workdir / "version-2"
    d.mkdir(exist_ok=True)
    (d / "snapshot.8").write_bytes(SNAPSHOT)
    yield d
    for f in d.iterdir():
        f.unlink()


def replay_or_refuse(directory: Path) -> replay.Tree | None:
    with no_hang(HANG_S, "replaying"):
        try:
            tree, _info = replay.load(directory, replay_logs=True)
        except FormatError as exc:
            assert str(exc).startswith(f"{exc.name}: offset ")
            return None
    return tree


def test_the_built_log_replays(datadir: Path) -> None:
    (datadir / "log.9").write_bytes(log_file(9))
    tree = replay_or_refuse(datadir)
    assert tree is not None and tree.last_zxid == 15
    assert "/inner" in tree.nodes and "/brokers/topics/u" not in tree.nodes
    assert "/brokers/ids/1" not in tree.nodes and "/brokers/ids/2" in tree.nodes  # the session closed


@budget(200)
@given(data=st.data())
def test_damaged_logs(datadir: Path, data: st.DataObject) -> None:
    (datadir / "log.9").write_bytes(data.draw(damaged(log_file(9)), label="log"))
    replay_or_refuse(datadir)


@st.composite
def damaged_entries(draw: st.DrawFn) -> bytes:
    """A log whose entries' contents are damaged and checksummed again, so replay decodes and applies them."""
    out = struct.pack(">iiq", files.LOG_MAGIC, 2, 0)
    for entry in log_entries(9):
        content = entry[12:-1]
        if draw(st.booleans(), label="damage this one"):
            header, body = content[:28], content[28:]
            content = header[:24] + draw(st.sampled_from([header[24:], *map(i32, range(-11, 22))])) + body
            content = content[:28] + draw(damaged(content[28:]), label="body")
        out += i64(zlib.adler32(content)) + i32(len(content)) + content + b"B"
    return out


@budget(300)
@given(log=damaged_entries())
def test_damaged_entries_checksummed_again(datadir: Path, log: bytes) -> None:
    (datadir / "log.9").write_bytes(log)
    replay_or_refuse(datadir)


def test_multis_nested_deeper_than_the_stack(datadir: Path) -> None:
    """A multi inside a multi inside ... (ZooKeeper never writes one): refused, not a RecursionError (which
    5,000 levels were, in a 120 KB log)."""
    body = i32(1) + i32(files.CREATE) + buffer(create("/deep", b""))
    for _ in range(5000):
        body = i32(1) + i32(files.MULTI) + buffer(body)
    (datadir / "log.9").write_bytes(struct.pack(">iiq", files.LOG_MAGIC, 2, 0) + txn(9, files.MULTI, body))
    assert replay_or_refuse(datadir) is None


# --- the command line ---------------------------------------------------------------------------------------------


@budget(40)
@given(data=st.data())
def test_snapshot_parse_gives_one_error_line(
    workdir: Path, capsys: pytest.CaptureFixture[str], data: st.DataObject
) -> None:
    suffix = data.draw(st.sampled_from(list(SUFFIXES)), label="suffix")
    snap = write(workdir, f"snapshot.8{suffix}", data.draw(damaged(SUFFIXES[suffix](SNAPSHOT)), label="file"))
    out = workdir / "rows.jsonl"
    out.unlink(missing_ok=True)
    capsys.readouterr()
    code = bridgekeeper(["snapshot", "parse", str(snap), "-o", str(out)])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    if code == 0:
        assert out.exists()
        return
    assert code == 2 and not out.exists() and not list(workdir.glob(".rows.jsonl.*"))
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {snap.name}: offset "), err
