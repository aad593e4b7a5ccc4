"""ZooKeeper's on-disk files (3.5-3.9), read offline: ``snapshot.<zxid>[.gz|.snappy]`` and ``log.<zxid>``.

Snapshots are read as a stream: header, sessions, the ACL cache, then the nodes in ZooKeeper's depth-first
pre-order, each yielded as soon as its subtree is complete (that is when its child count is known), so
memory holds the ACL cache and one branch of the tree, never the file. The seals that follow the nodes
(Adler-32 over every decompressed byte before them) are checked at the end: the caller writes its output
aside and keeps it only when :func:`read_snapshot` finished without error. Compression is chosen by the
file name's last suffix, as ZooKeeper's SnapStream does; ``.snappy`` is snappy-java's stream (chunks of raw
Snappy, decoded with cramjam).
"""

from __future__ import annotations

import gzip
import io
import os
import struct
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from migrate.snapshot.jute import Acl, FormatError, Reader, read_acls

SNAP_MAGIC = 0x5A4B534E  # "ZKSN"
LOG_MAGIC = 0x5A4B4C47  # "ZKLG"
SNAPPY_MAGIC = b"\x82SNAPPY\x00"
#: StatPersisted: czxid, mzxid, ctime, mtime, version, cversion, aversion, ephemeralOwner, pzxid.
STAT_PERSISTED = struct.Struct(">qqqqiiiqq")
OPEN_ACL_UNSAFE: list[Acl] = [(31, "world", "anyone")]


@dataclass
class Node:
    """One znode with ZooKeeper's full client Stat (numChildren and dataLength computed) and its ACL."""

    path: str
    data: bytes | None
    acl: list[Acl]
    czxid: int
    mzxid: int
    ctime: int
    mtime: int
    version: int
    cversion: int
    aversion: int
    ephemeral_owner: int
    pzxid: int
    num_children: int = 0

    @property
    def data_length(self) -> int:
        return len(self.data) if self.data else 0

    def client_stat(self) -> tuple[int, int]:
        """(cversion, ephemeralOwner) as a client's Stat shows them (DataNode.copyStat): the tree counts only
        creates in cversion, clients see creates plus deletes (2 x creates - children still present), and
        container and TTL owners read as 0."""
        owner = self.ephemeral_owner
        if owner == -(2**63) or (owner >> 56) & 0xFF == 0xFF:
            owner = 0
        return self.cversion * 2 - self.num_children, owner


@dataclass
class SnapshotInfo:
    """What a snapshot says about itself, known once it has been read to the end."""

    name: str
    zxid: int  # from the file name: the last zxid when the snapshot started
    sessions: dict[int, int] = field(default_factory=dict)  # session id -> timeout ms
    digest: tuple[int, int] | None = None  # (zxid, tree digest) of 3.6+ snapshots
    last_processed_zxid: int | None = None  # 3.9+
    nodes: int = 0


def zxid_of(path: str | Path) -> int:
    """The zxid in ``snapshot.<hex>`` / ``log.<hex>`` (the second dot-separated part, as ZooKeeper's Util)."""
    name = Path(path).name
    parts = name.split(".")
    try:
        return int(parts[1], 16)
    except (IndexError, ValueError):
        raise FormatError(name, 0, "the file name does not carry a zxid (snapshot.<hex> or log.<hex>)") from None


class _SnappyJava(io.RawIOBase):
    """snappy-java's SnappyInputStream: an 8-byte magic, two ints, then (int length, raw Snappy block) chunks."""

    def __init__(self, raw: BinaryIO, name: str) -> None:
        import cramjam

        self._decompress = cramjam.snappy.decompress_raw
        self._raw = raw
        self._name = name
        self._offset = 0
        header = raw.read(16)
        if len(header) < 16 or header[:8] != SNAPPY_MAGIC:
            raise FormatError(name, 0, "not a snappy-java stream (bad magic)")
        self._offset = 16
        self._buffer = b""

    def readable(self) -> bool:
        return True

    def readinto(self, target: bytearray | memoryview) -> int:  # type: ignore[override]
        while not self._buffer:
            head = self._raw.read(4)
            if not head:
                return 0
            if len(head) < 4:
                raise FormatError(self._name, self._offset, "file ends inside a snappy chunk length")
            (n,) = struct.unpack(">i", head)
            if n < 0 or n > 64 * 1024 * 1024:
                raise FormatError(self._name, self._offset, f"unreasonable snappy chunk length {n}")
            chunk = self._raw.read(n)
            if len(chunk) != n:
                raise FormatError(self._name, self._offset, "file ends inside a snappy chunk")
            try:
                self._buffer = bytes(self._decompress(chunk))
            except Exception as exc:  # cramjam raises its own DecompressionError
                raise FormatError(self._name, self._offset, f"snappy chunk does not decompress: {exc}") from None
            self._offset += 4 + n
        n = min(len(target), len(self._buffer))
        target[:n] = self._buffer[:n]
        self._buffer = self._buffer[n:]
        return n


def open_stream(path: str | Path) -> BinaryIO:
    """The decompressed bytes of a snapshot, by the name's last suffix (SnapStream.getStreamMode)."""
    p = Path(path)
    raw = open(p, "rb")  # noqa: SIM115 - handed to the wrapper, closed with it
    if p.suffix == ".gz":
        return io.BufferedReader(_Guarded(gzip.GzipFile(fileobj=raw), p.name))  # type: ignore[arg-type]
    if p.suffix == ".snappy":
        return io.BufferedReader(_SnappyJava(raw, p.name), buffer_size=1 << 16)
    return io.BufferedReader(raw, buffer_size=1 << 16)


class _Guarded(io.RawIOBase):
    """A decompressing stream whose errors (a truncated or corrupt gzip member) name the file."""

    def __init__(self, inner: BinaryIO, name: str) -> None:
        self._inner = inner
        self._name = name
        self._offset = 0

    def readable(self) -> bool:
        return True

    def readinto(self, target: bytearray | memoryview) -> int:  # type: ignore[override]
        try:
            data = self._inner.read(len(target))
        except (EOFError, OSError, zlib.error) as exc:  # zlib.error: a corrupt deflate stream; OSError: BadGzipFile
            raise FormatError(self._name, self._offset, f"compressed stream is damaged: {exc}") from None
        target[: len(data)] = data
        self._offset += len(data)
        return len(data)


def read_snapshot(path: str | Path, emit: Callable[[Node], None]) -> SnapshotInfo:
    """Stream the nodes of one snapshot file to ``emit`` (each with its child count), then verify the seals.
    Raises :class:`FormatError` naming the file and offset for anything wrong."""
    p = Path(path)
    info = SnapshotInfo(p.name, zxid_of(p))
    with open_stream(p) as stream:
        r = Reader(stream, p.name, checksum=True)
        _file_header(r, SNAP_MAGIC, "snapshot")
        for _ in range(r.count("the sessions")):
            sid = r.i64("a session id")
            info.sessions[sid] = r.i32("a session timeout")
        acls: dict[int, list[Acl]] = {}
        for _ in range(r.count("the ACL cache")):
            index = r.i64("an ACL cache index")
            acls[index] = read_acls(r, "an ACL list")
        open_nodes: list[Node] = []  # the current branch, root first
        while True:
            start = r.offset
            path_text = r.ustring("a node path")
            if path_text is None:
                raise r.fail("a node path is null", start)
            if path_text == "/":
                break  # the end of the nodes
            data = r.buffer("a node's data")
            acl_key = r.i64("a node's ACL key")
            stat = r.unpack(STAT_PERSISTED, "a node's stat")
            if acl_key == -1:
                acl = list(OPEN_ACL_UNSAFE)
            elif acl_key in acls:
                acl = acls[acl_key]
            else:
                raise r.fail(f"{path_text or '/'} names ACL {acl_key}, which the ACL cache does not hold", start)
            node = Node(path_text or "/", data, acl, *stat)
            while open_nodes and not _is_child(node.path, open_nodes[-1].path):
                _close(open_nodes, emit, info)
            if open_nodes:
                open_nodes[-1].num_children += 1
            elif node.path != "/":
                raise r.fail(f"{node.path} comes before the root", start)
            open_nodes.append(node)
        while open_nodes:
            _close(open_nodes, emit, info)
        _seal(r)
        if not r.at_end():  # 3.6+: the tree digest and a second seal
            info.digest = (r.i64("the digest zxid"), 0)
            digest_version = r.i32("the digest version")
            info.digest = (info.digest[0], r.i64("the digest"))
            if digest_version != 2:
                raise r.fail(f"unsupported digest version {digest_version}")
            _seal(r)
        if not r.at_end():  # 3.9+: the last processed zxid and a third seal
            info.last_processed_zxid = r.i64("the last processed zxid")
            _seal(r)
    return info


def _file_header(r: Reader, magic: int, kind: str) -> None:
    """FileHeader: int magic, int version (2), long dbid."""
    found = r.i32("the file header")
    if found != magic:
        raise r.fail(f"not a ZooKeeper {kind} (magic 0x{found & 0xFFFFFFFF:08x}, expected 0x{magic:08x})", 0)
    version = r.i32("the file header")
    if version != 2:
        raise r.fail(f"unsupported {kind} version {version}", 4)
    r.i64("the file header")  # dbid


def _is_child(path: str, parent: str) -> bool:
    if parent == "/":
        return path.startswith("/") and path != "/" and "/" not in path[1:]
    return path.startswith(parent + "/") and "/" not in path[len(parent) + 1 :]


def _close(open_nodes: list[Node], emit: Callable[[Node], None], info: SnapshotInfo) -> None:
    emit(open_nodes.pop())
    info.nodes += 1


def _seal(r: Reader) -> None:
    """SnapStream.checkSealIntegrity: the long equals the Adler-32 of everything before it, then "/"."""
    assert r.adler is not None
    expected = r.adler
    at = r.offset
    stored = r.i64("the checksum") & 0xFFFFFFFFFFFFFFFF
    if stored != expected:
        raise r.fail(f"CRC corruption: the checksum says {stored}, the content gives {expected}", at)
    if r.ustring("the seal") != "/":
        raise r.fail("the checksum is not followed by '/'")


# -- transaction logs -------------------------------------------------------------------------------------------
@dataclass
class Txn:
    """One logged transaction: its header and decoded body (``kind``, ``fields``)."""

    zxid: int
    session: int
    time: int
    type: int
    body: dict[str, object]
    offset: int


def read_log(path: str | Path) -> Iterator[Txn]:
    """The transactions of one ``log.<zxid>`` file, checksums verified; stops at the preallocated zeros."""
    p = Path(path)
    with open(p, "rb") as f:
        r = Reader(f, p.name)
        _file_header(r, LOG_MAGIC, "transaction log")
        while not r.at_end():
            start = r.offset
            crc = r.i64("a transaction checksum")
            length = r.i32("a transaction length")
            if length == 0:
                return  # preallocated space
            if length < 0 or length > 64 * 1024 * 1024:
                raise r.fail(f"Unreasonable length = {length}", start + 8)
            data = r.read(length, "a transaction")
            if zlib.adler32(data) != crc:
                raise r.fail("CRC check failed", start)
            if r.at_end() or r.read(1, "a transaction's end marker") != b"B":
                raise r.fail("Last transaction was partial.", r.offset)
            yield _decode_txn(data, p.name, start)


def _decode_txn(data: bytes, name: str, offset: int) -> Txn:
    r = Reader(io.BytesIO(data), name)
    r.offset = offset + 12
    session, _cxid, zxid, time_ms, kind = (
        r.i64("clientId"),
        r.i32("cxid"),
        r.i64("zxid"),
        r.i64("time"),
        r.i32("type"),
    )
    body = _decode_body(r, kind, len(data) + offset + 12)
    return Txn(zxid, session, time_ms, kind, body, offset)


#: ZooKeeper's ``ZooDefs.OpCode`` values of the transactions a log holds, each number under its name.
(
    CREATE, DELETE, SET_DATA, SET_ACL, CHECK, MULTI, CREATE2, CREATE_CONTAINER, DELETE_CONTAINER, CREATE_TTL,
) = (
    1,      2,      5,        7,       13,    14,    15,      19,               20,               21,
)  # fmt: skip
CREATE_SESSION, CLOSE_SESSION, ERROR, RECONFIG = -10, -11, -1, 16


def _decode_body(r: Reader, kind: int, end: int) -> dict[str, object]:
    if kind in (CREATE, CREATE2, CREATE_CONTAINER, CREATE_TTL):
        body: dict[str, object] = {
            "path": r.ustring("a path"),
            "data": r.buffer("data"),
            "acl": read_acls(r, "an ACL list"),
        }
        if kind in (CREATE, CREATE2):
            body["ephemeral"] = r.boolean("ephemeral")
        body["parent_cversion"] = r.i32("parentCVersion") if r.offset + 4 <= end else -1
        if kind == CREATE_TTL:
            body["ttl"] = r.i64("ttl")
        return body
    if kind in (DELETE, DELETE_CONTAINER):
        return {"path": r.ustring("a path")}
    if kind in (SET_DATA, RECONFIG):
        return {"path": r.ustring("a path"), "data": r.buffer("data"), "version": r.i32("version")}
    if kind == SET_ACL:
        return {"path": r.ustring("a path"), "acl": read_acls(r, "an ACL list"), "version": r.i32("version")}
    if kind == CHECK:
        return {"path": r.ustring("a path"), "version": r.i32("version")}
    if kind == MULTI:
        subs = []
        for _ in range(r.count("the multi")):
            at = r.offset
            sub_kind = r.i32("a multi op type")
            if sub_kind == MULTI:  # ZooKeeper never writes one (MultiTxn holds single ops); no recursion on it
                raise r.fail("a multi nested in a multi", at)
            raw = r.buffer("a multi op") or b""
            sub = Reader(io.BytesIO(raw), r.name)
            sub.offset = r.offset - len(raw)
            subs.append((sub_kind, _decode_body(sub, sub_kind, sub.offset + len(raw))))
        return {"ops": subs}
    if kind == CLOSE_SESSION:
        paths: list[str] = []
        if r.offset + 4 <= end:
            paths = [r.ustring("an ephemeral path") or "" for _ in range(r.count("the ephemerals"))]
        return {"paths": paths}
    if kind == ERROR:
        return {"err": r.i32("err")}
    return {}


def files_in(directory: str | Path) -> tuple[list[Path], list[Path]]:
    """The snapshots and logs of a ZooKeeper data directory (its ``version-2`` if there is one), by zxid."""
    d = Path(directory)
    if (d / "version-2").is_dir():
        d = d / "version-2"
    names = sorted(os.listdir(d)) if d.is_dir() else []
    snaps = [d / n for n in names if n.startswith("snapshot.")]
    logs = [d / n for n in names if n.startswith("log.")]
    return sorted(snaps, key=zxid_of), sorted(logs, key=zxid_of)
