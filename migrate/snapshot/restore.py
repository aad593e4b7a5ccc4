"""``snapshot restore``: a production tree (rows from ``snapshot export`` or ``snapshot parse``) put back into an
empty sandbox chroot, the first half of a twin.

What is written: every persistent znode of Kafka's tree, data byte for byte, under the target chroot, parents
first (ancestors the rows lack are created with null data), each topic with its partitions in one multi where
it fits. What is not: ephemerals (``/brokers/ids/<id>``, ``/controller``: their sessions are gone; the rows keep
their data, which :func:`registrations` reads for the twin's nodes), ZooKeeper's own ``/zookeeper``, znodes
outside the source chroot, and, unless asked, credentials (:mod:`migrate.snapshot.credentials`). Sequential
names are written as they are. ``acls="open"`` leaves every znode world-writable (a sandbox); ``"keep"`` gives
each its recorded ACL once the whole tree is written.

This module decides everything about the input before connecting (:func:`plan`); the write and its report
are :mod:`migrate.snapshot.restore_write`.
"""

from __future__ import annotations

import base64
import contextlib
import gc
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from migrate.snapshot.check import detect_chroot
from migrate.snapshot.credentials import Redaction, redact
from zkmodel import paths
from zkmodel.brokers import BrokerRegistration
from zkmodel.election import ControllerZnode
from zkmodel.errors import ZnodeFormatError

SUFFIXES = (".parquet", ".jsonl", ".json")
OPEN_ACL = ((31, "world", "anyone"),)
Znode = tuple[str, bytes | None]
Acl = tuple[tuple[int, str, str], ...]


class RestoreInputError(ValueError):
    """Rows that cannot be restored as given; the message names the file or znode."""


@dataclass(frozen=True)
class Registration:
    """A production broker as its (ephemeral, not restored) registration described it."""

    broker_id: int
    rack: str | None
    endpoints: tuple[str, ...]


@dataclass
class Plan:
    """What a restore will write, decided from the rows alone."""

    groups: Iterable[list[Znode]] = ()
    znodes: int = 0
    #: (target path, recorded ACL) for znodes whose ACL is not the open one; written only with ``acls="keep"``
    acls: list[tuple[str, Acl]] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    added_parents: int = 0
    redaction: Redaction = field(default_factory=Redaction)
    source_chroot: str = ""
    registrations: list[Registration] = field(default_factory=list)
    controller: int | None = None  # the production controller's broker id, from /controller
    assigned: frozenset[int] = frozenset()  # every broker id a topic assignment names
    topics: int = 0
    partitions: int = 0
    unreadable_registrations: list[str] = field(default_factory=list)


def row_files(inputs: Sequence[str]) -> list[Path]:
    """The files behind ``inputs`` (files, or directories of .parquet/.jsonl files), checked to exist."""
    out: list[Path] = []
    for text in inputs:
        p = Path(text)
        if p.is_dir():
            try:
                found = sorted(f for f in p.iterdir() if f.suffix in SUFFIXES and f.is_file())
            except OSError as exc:
                raise RestoreInputError(f"{p}: {exc.strerror or exc}") from None
            if not found:
                raise RestoreInputError(f"{p}: no .parquet or .jsonl files in this directory")
            out += found
        elif p.is_file():
            if p.suffix not in SUFFIXES:
                raise RestoreInputError(f"{p}: not a snapshot-rows file (expected .parquet or .jsonl)")
            out.append(p)
        else:
            raise RestoreInputError(f"{p}: no such file or directory")
    return out


def _columns(path: Path, with_acl: bool) -> tuple[list[Any], list[Any], list[Any], list[Any] | None]:
    """The rows' paths, data, ephemeral owners and (when needed) ACLs, as columns."""
    if path.suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        columns = ["path", "data", "ephemeral_owner", *(["acl"] if with_acl else [])]
        try:
            table = pq.read_table(str(path), columns=columns)
        except (OSError, pa.ArrowException) as exc:
            raise RestoreInputError(f"{path}: not readable as snapshot rows ({exc})") from None
        acl = table.column("acl").to_pylist() if with_acl else None
        return (
            table.column("path").to_pylist(),
            table.column("data").to_pylist(),
            table.column("ephemeral_owner").to_pylist(),
            acl,
        )
    paths_: list[Any] = []
    datas: list[Any] = []
    owners: list[Any] = []
    acls: list[Any] = []
    try:
        f = path.open("rb")
    except OSError as exc:
        raise RestoreInputError(f"{path}: {exc.strerror or exc}") from None
    with f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                r = orjson.loads(line)
                paths_.append(r["path"])
                datas.append(None if r["data"] is None else base64.b64decode(r["data"], validate=True))
                owners.append(int(r.get("ephemeral_owner") or 0))
                acls.append(r.get("acl"))
            except KeyError as exc:
                raise RestoreInputError(f"{path}: line {number} is not a snapshot row (no {exc} field)") from None
            except (orjson.JSONDecodeError, TypeError, ValueError, AttributeError) as exc:
                raise RestoreInputError(f"{path}: line {number} is not a snapshot row ({exc})") from None
    return paths_, datas, owners, acls if with_acl else None


def _acl(raw: Any) -> Acl:
    if not raw:
        return ()
    return tuple((int(a["perms"]), str(a["scheme"]), str(a["id"])) for a in raw)


#: The znodes below the credential roots (relative to Kafka's chroot; the roots themselves hold none): only
#: these are looked into.
_SECRET_ROOTS = tuple(root + "/" for root in paths.SENSITIVE_ROOTS)
_TOPICS = paths.BROKER_TOPICS + "/"


def plan(
    files: Sequence[Path], *, source_chroot: str | None = None, acls: str = "open", keep_credentials: bool = False
) -> Plan:
    """Read every row and decide every write (raises :class:`RestoreInputError` naming what is wrong).

    Written for a million-partition tree: the rows are read as columns and looked at in one loop, the tree is
    ordered once, and one more loop groups it and adds missing ancestors; Python's cyclic collector is held off
    meanwhile, since nothing built here is garbage (it only rescanned millions of live objects)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _plan(files, source_chroot, acls, keep_credentials)
    finally:
        if collecting:
            gc.enable()


def _plan(files: Sequence[Path], source_chroot: str | None, acls: str, keep_credentials: bool) -> Plan:
    with_acl = acls == "keep"
    all_paths: list[Any] = []
    all_data: list[Any] = []
    all_owners: list[Any] = []
    all_acls: list[Any] = []
    ends: list[tuple[int, Path]] = []  # where each file's rows end, to name the file of a bad row
    for f in files:
        p_, d_, o_, a_ = _columns(f, with_acl)
        all_paths += p_
        all_data += d_
        all_owners += o_
        if a_ is not None:
            all_acls += a_
        ends.append((len(all_paths), f))
    if not all_paths:
        raise RestoreInputError(f"{', '.join(map(str, files))}: no rows")

    def file_of(index: int) -> Path:
        return next(f for end, f in ends if index < end)

    def refuse_duplicates() -> None:
        seen: set[Any] = set()
        for i, path in enumerate(all_paths):
            if path in seen:
                raise RestoreInputError(f"{file_of(i)}: {path} appears twice in the rows")
            seen.add(path)

    def refuse_relative() -> None:
        for i, path in enumerate(all_paths):
            if not isinstance(path, str) or path[:1] != "/":
                raise RestoreInputError(f"{file_of(i)}: a row's path {path!r} is not an absolute znode path")

    prefix = detect_chroot(all_paths) if source_chroot is None else source_chroot.rstrip("/")
    if prefix and not prefix.startswith("/"):
        raise RestoreInputError(f"--source-chroot {source_chroot!r} is not an absolute znode path")
    out = Plan(source_chroot=prefix)
    kept: dict[str, bytes | None] = {}
    recorded: dict[str, Any] = {}
    try:
        _keep(
            out,
            prefix,
            zip(all_paths, all_data, all_owners, all_acls if with_acl else all_owners, strict=True),
            kept,
            recorded,
            with_acl,
            keep_credentials,
        )
    except (TypeError, _Relative):  # a null path, or one not absolute
        refuse_relative()
    if len(kept) + sum(out.skipped.values()) != len(all_paths):  # a path kept twice counts once
        refuse_duplicates()
    order = _pre_order(kept)
    order = _add_ancestors(out, kept, order)
    _count_topics(out, kept)
    out.groups = Groups(order, kept)
    out.znodes = len(order)
    if with_acl:
        for rel, raw in recorded.items():
            try:
                acl = _acl(raw)
            except (KeyError, TypeError, ValueError) as exc:
                what = f"{type(exc).__name__}: {exc}"
                raise RestoreInputError(f"{prefix + rel}: its recorded ACL is not perms, scheme, id ({what})") from None
            if acl and acl != OPEN_ACL:
                out.acls.append((rel, acl))
    out.registrations.sort(key=lambda r: r.broker_id)
    return out


class _Relative(Exception):
    """A row's path that is not absolute (reported by the caller, which knows the files)."""


def _keep(
    out: Plan,
    prefix: str,
    rows: Iterable[tuple[Any, Any, Any, Any]],
    kept: dict[str, bytes | None],
    recorded: dict[str, Any],
    with_acl: bool,
    keep_credentials: bool,
) -> None:
    """Sort the rows into what is written (``kept``, with ``recorded`` ACLs) and what is skipped, and why."""
    cut, inside = len(prefix), prefix + "/"
    skipped = out.skipped
    for path, data, owner, acl in rows:
        if cut:
            if not path.startswith(inside):
                skipped[
                    "the chroot's root (exists already)" if path == prefix else f"outside the source chroot {prefix}"
                ] += 1
                continue
            rel = path[cut:]
        elif path == "/":
            skipped["the chroot's root (exists already)"] += 1
            continue
        elif path[:1] != "/":
            raise _Relative
        else:
            rel = path
        if owner:
            skipped["ephemeral (its session is gone)"] += 1
            _ephemeral(out, rel, data)
            continue
        if rel.startswith("/zookeeper") and (len(rel) == 10 or rel[10] == "/"):
            skipped["ZooKeeper's own /zookeeper"] += 1
            continue
        if not keep_credentials and rel.startswith(_SECRET_ROOTS):
            keep, data = redact(rel, data, out.redaction)
            if not keep:
                skipped["credential (redacted)"] += 1
                continue
        kept[rel] = data
        if with_acl and acl:
            recorded[rel] = acl


def _count_topics(out: Plan, kept: dict[str, bytes | None]) -> None:
    """Topics, partitions and every broker an assignment names: the summary's figures and the twin's offline
    brokers, known before anything is written."""
    assigned: set[int] = set()
    for rel in [r for r in kept if r.startswith(_TOPICS) and r.find("/", len(_TOPICS)) == -1]:
        out.topics += 1
        out.partitions += _replicas_of(rel, kept[rel], assigned)
    out.assigned = frozenset(assigned)


def _pre_order(paths_: Iterable[str]) -> list[str]:
    """The paths in pre-order, each subtree's paths contiguous: sorted with "/" below every other character
    (ZooKeeper forbids \\0 in a path)."""
    return [k.replace("\0", "/") for k in sorted([p.replace("/", "\0") for p in paths_])]


def _add_ancestors(out: Plan, kept: dict[str, bytes | None], order: list[str]) -> list[str]:
    """``order`` with every ancestor the rows lack (an export of a few subtrees) added with null data, where
    pre-order puts it: just before its first descendant."""
    parents = {rel[: rel.rfind("/")] for rel in order}
    parents.discard("")
    missing = parents - kept.keys()
    if not missing:
        return order
    for path in list(missing):
        while (path := path[: path.rfind("/")]) and path not in kept:
            missing.add(path)
    for path in missing:
        kept[path] = None
    out.added_parents = len(missing)
    return _pre_order(kept)


class Groups:
    """The writes in order, grouped: a topic znode opens a group its whole subtree joins, every other znode is a
    group of its own. Built as the writer takes them (the writer waits on ZooKeeper most of the time, so the
    grouping costs the restore nothing), and again on every iteration."""

    def __init__(self, order: list[str], kept: dict[str, bytes | None]) -> None:
        self.order = order
        self.kept = kept

    def __iter__(self) -> Iterator[list[Znode]]:
        topic = "\0"  # no path starts with it
        group: list[Znode] = []
        for rel, data in zip(self.order, map(self.kept.__getitem__, self.order), strict=True):
            if rel.startswith(topic):
                group.append((rel, data))
                continue
            if group:
                yield group
            group = [(rel, data)]
            topic = rel + "/" if rel.startswith(_TOPICS) and rel.find("/", len(_TOPICS)) == -1 else "\0"
        if group:
            yield group


def _replicas_of(path: str, data: bytes | None, assigned: set[int]) -> int:
    """A topic znode's partition count, its replicas added to ``assigned`` (for the summary and the twin's
    offline brokers, so read leniently: the replica lists of ``partitions`` and nothing else); a znode that does
    not read counts nothing: it is restored as it is, and judging it is ``snapshot check``'s work."""
    try:
        doc = orjson.loads(data or b"")
    except orjson.JSONDecodeError:
        return 0
    parts = doc.get("partitions") if isinstance(doc, dict) else None
    if not isinstance(parts, dict):
        return 0
    for replicas in parts.values():
        if isinstance(replicas, list):
            assigned.update(r for r in replicas if type(r) is int)
    return len(parts)


def _ephemeral(out: Plan, rel: str, data: bytes | None) -> None:
    """What the twin needs from a znode that is not written: broker ids, racks, endpoints, the controller."""
    if rel == paths.CONTROLLER:
        with contextlib.suppress(ZnodeFormatError):
            out.controller = ControllerZnode.decode(rel, data).broker_id
        return
    head, _, tail = rel.rpartition("/")
    if head != paths.BROKER_IDS or not tail.isdigit():
        return
    try:
        reg = BrokerRegistration.decode(rel, data)
    except ZnodeFormatError as exc:
        out.unreadable_registrations.append(f"{rel}: {exc.reason}")
        out.registrations.append(Registration(int(tail), None, ()))
        return
    endpoints = tuple(e.connection_string for e in reg.endpoints)
    out.registrations.append(Registration(int(tail), reg.rack, endpoints))
