"""Transactions applied to a tree the way ZooKeeper's DataTree does when it loads (FileTxnSnapLog /
DataTree.processTxn), so a parsed snapshot plus its logs equals the live tree at the last zxid.

Snapshots are fuzzy (taken while writes go on), so replay starts after the snapshot's zxid and tolerates
what ZooKeeper tolerates: a create of a node that exists only bumps its parent's cversion/pzxid, deletes of
missing nodes are ignored, setData carries its absolute version.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from migrate.snapshot import files as F
from migrate.snapshot.files import Node, Txn
from migrate.snapshot.jute import Acl, FormatError

CONTAINER_OWNER = -(2**63)  # EphemeralType.CONTAINER: Long.MIN_VALUE
TTL_MASK = 0xFF << 56


def _parent(path: str) -> str:
    return "/" if path.rfind("/") == 0 else path[: path.rfind("/")]


@dataclass
class Tree:
    """Nodes by path with their children, as replay needs them (the whole tree in memory)."""

    nodes: dict[str, Node] = field(default_factory=dict)
    children: dict[str, set[str]] = field(default_factory=dict)
    last_zxid: int = 0

    def add(self, node: Node) -> None:
        self.nodes[node.path] = node
        self.children.setdefault(node.path, set())
        if node.path != "/":
            self.children.setdefault(_parent(node.path), set()).add(node.path)

    def remove(self, path: str) -> None:
        self.nodes.pop(path, None)
        self.children.pop(path, None)
        if path != "/":
            self.children.get(_parent(path), set()).discard(path)

    def rows(self) -> Iterator[Node]:
        """The nodes sorted by path, each with its current child count."""
        for path in sorted(self.nodes):
            node = self.nodes[path]
            node.num_children = len(self.children.get(path, ()))
            yield node

    # -- DataTree.processTxn
    def apply(self, txn: Txn) -> None:
        self._apply(txn.type, txn.body, txn)
        self.last_zxid = txn.zxid

    def _apply(self, kind: int, body: dict[str, object], txn: Txn) -> None:
        if kind in (F.CREATE, F.CREATE2, F.CREATE_CONTAINER, F.CREATE_TTL):
            self._create(kind, body, txn)
        elif kind in (F.DELETE, F.DELETE_CONTAINER):
            self._delete(str(body["path"]), txn.zxid)
        elif kind in (F.SET_DATA, F.RECONFIG):
            node = self.nodes.get(str(body["path"]))
            if node is not None:
                node.data = body["data"]  # type: ignore[assignment]
                node.version = int(body["version"])  # type: ignore[call-overload]
                node.mzxid, node.mtime = txn.zxid, txn.time
        elif kind == F.SET_ACL:
            node = self.nodes.get(str(body["path"]))
            if node is not None:
                node.acl = list(body["acl"])  # type: ignore[call-overload]
                node.aversion = int(body["version"])  # type: ignore[call-overload]
        elif kind == F.MULTI:
            ops: list[tuple[int, dict[str, object]]] = body["ops"]  # type: ignore[assignment]
            if any(sub_kind == F.ERROR for sub_kind, _ in ops):
                return  # a failed multi applies nothing
            for sub_kind, sub_body in ops:
                self._apply(sub_kind, sub_body, txn)
        elif kind == F.CLOSE_SESSION:
            paths: list[str] = body["paths"]  # type: ignore[assignment]
            if not paths:
                paths = [p for p, n in self.nodes.items() if n.ephemeral_owner == txn.session]
            for path in sorted(paths, key=len, reverse=True):
                self._delete(path, txn.zxid)

    def _create(self, kind: int, body: dict[str, object], txn: Txn) -> None:
        path = str(body["path"])
        parent = self.nodes.get(_parent(path))
        parent_cversion = int(body.get("parent_cversion", -1))  # type: ignore[call-overload]
        if parent is None:
            return  # NONODE: ignored on replay
        if parent_cversion == -1:
            parent_cversion = parent.cversion + 1
        if path not in self.nodes:
            if kind == F.CREATE_CONTAINER:
                owner = CONTAINER_OWNER
            elif kind == F.CREATE_TTL:
                owner = TTL_MASK | int(body.get("ttl", 0))  # type: ignore[call-overload]
                owner -= 1 << 64 if owner >= 1 << 63 else 0
            else:
                owner = txn.session if body.get("ephemeral") else 0
            data: bytes | None = body["data"]  # type: ignore[assignment]
            acl: list[Acl] = list(body["acl"])  # type: ignore[call-overload]
            self.add(Node(path, data, acl, txn.zxid, txn.zxid, txn.time, txn.time, 0, 0, 0, owner, txn.zxid))
        if parent_cversion > parent.cversion:  # both for a new node and for a replayed NODEEXISTS
            parent.cversion = parent_cversion
            parent.pzxid = txn.zxid

    def _delete(self, path: str, zxid: int) -> None:
        if path not in self.nodes:
            return
        self.remove(path)
        parent = self.nodes.get(_parent(path))
        if parent is not None:
            parent.pzxid = max(parent.pzxid, zxid)


def load(directory: str | Path, *, replay_logs: bool, upto: int | None = None) -> tuple[Tree, F.SnapshotInfo]:
    """The newest snapshot of a data directory (or one file) and, with ``replay_logs``, every logged
    transaction after it up to ``upto`` (default: the last). A log that leaves a gap after the snapshot or
    between transactions is refused, naming the file and offset."""
    p = Path(directory)
    if p.is_file():
        snaps, logs = [p], (F.files_in(p.parent)[1] if replay_logs else [])
    else:
        snaps, logs = F.files_in(p)
        if not snaps:
            raise FormatError(str(p), 0, "no snapshot.<zxid> file here (or in its version-2/)")
    tree = Tree()
    info = F.read_snapshot(snaps[-1], tree.add)
    tree.last_zxid = info.zxid
    if replay_logs:
        _replay(tree, logs, info.zxid, upto)
    return tree, info


class NoValidSnapshot(ValueError):
    """Every snapshot of a data directory is damaged (FileSnap.deserialize's "Not able to find valid
    snapshots in <dir>"): ``damaged`` holds each file's error, newest first."""

    def __init__(self, directory: Path, damaged: Sequence[FormatError]) -> None:
        super().__init__(f"no valid snapshot in {directory}: {describe(damaged)}")
        self.directory = directory
        self.damaged = list(damaged)


def describe(damaged: Sequence[FormatError]) -> str:
    """``snapshot.1a2b is damaged (offset 12: <reason>), ...`` for the files :func:`newest_valid` skipped."""
    return ", ".join(f"{exc.name} is damaged (offset {exc.offset}: {exc.reason})" for exc in damaged)


def newest_valid(
    snaps: Sequence[Path], damaged: Sequence[FormatError] = (), *, fall_back: bool = True
) -> tuple[Tree, F.SnapshotInfo, list[FormatError]]:
    """The tree of the newest snapshot that reads whole, as ZooKeeper chooses it when it starts
    (FileSnap.deserialize): candidates newest first, any that fails to read or to match its seals skipped
    for the next older one. Returns (tree, its snapshot, the errors of the newer files skipped, newest
    first). ``damaged`` are errors the caller already met (files it read itself, not read again);
    without ``fall_back`` the first error is raised as it is. Raises :class:`NoValidSnapshot` when no
    file reads whole."""
    skipped = list(damaged)
    known = {exc.name for exc in skipped}
    for snap in reversed(snaps):
        if snap.name in known:
            continue
        tree = Tree()
        try:
            info = F.read_snapshot(snap, tree.add)
        except FormatError as exc:
            if not fall_back:
                raise
            skipped.append(exc)
            continue
        tree.last_zxid = info.zxid  # FileSnap.deserialize: lastProcessedZxid is the zxid in the file name
        return tree, info, skipped
    if not fall_back and skipped:
        raise skipped[0]
    raise NoValidSnapshot(snaps[-1].parent if snaps else Path("."), skipped)


def apply_logs(
    tree: Tree, info: F.SnapshotInfo, logs: Iterable[Path], upto: int | None = None, *, reach: bool = False
) -> None:
    """Every logged transaction after ``info``'s zxid (the snapshot ``tree`` was read from) up to ``upto``
    (default: the last), as FileTxnSnapLog.restore replays them. A gap after the snapshot or between
    transactions is refused; with ``reach`` so is stopping short of ``upto``: every snapshot's zxid is a
    logged transaction's (ZooKeeper logs a transaction before it applies it), so a tree promised at that
    zxid must end on it."""
    last = _replay(tree, list(logs), info.zxid, upto)
    if reach and upto is not None and tree.last_zxid != upto:
        name, offset = last or (info.name, 0)
        raise FormatError(
            name,
            offset,
            f"the logs hold nothing after zxid 0x{tree.last_zxid:x} up to 0x{upto:x}: transactions are missing",
        )


def _replay(tree: Tree, logs: Sequence[Path], snap_zxid: int, upto: int | None) -> tuple[str, int] | None:
    """Applies the transactions; returns the file and offset of the last one applied (None: none was)."""
    previous = snap_zxid
    last: tuple[str, int] | None = None
    usable = [log for log in logs if F.zxid_of(log) <= snap_zxid]
    start = usable[-1] if usable else None
    chosen = [log for log in logs if start is None or F.zxid_of(log) >= F.zxid_of(start)]
    if chosen and F.zxid_of(chosen[0]) > snap_zxid + 1:
        raise FormatError(
            chosen[0].name,
            0,
            f"the logs start at zxid 0x{F.zxid_of(chosen[0]):x}, after the "
            f"snapshot's 0x{snap_zxid:x} + 1: transactions are missing",
        )
    for log in chosen:
        for txn in F.read_log(log):
            if txn.zxid <= previous:
                continue
            if upto is not None and txn.zxid > upto:
                return last
            same_epoch = txn.zxid >> 32 == previous >> 32
            if same_epoch and txn.zxid != previous + 1:
                raise FormatError(
                    log.name,
                    txn.offset,
                    f"zxid 0x{txn.zxid:x} follows 0x{previous:x}: transactions are missing between them",
                )
            tree.apply(txn)
            previous = txn.zxid
            last = (log.name, txn.offset)
    return last
