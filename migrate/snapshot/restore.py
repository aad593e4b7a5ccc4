"""``snapshot restore``: a production tree (rows from ``snapshot export`` or ``snapshot parse``) put back into an
empty sandbox chroot, the first half of a twin.

What is written: every persistent znode of Kafka's tree, data byte for byte, under the target chroot, parents
first (ancestors the rows lack are created with null data), each topic with its partitions in one multi where
it fits. What is not: ephemerals (``/brokers/ids/<id>``, ``/controller``: their sessions are gone; the rows keep
their data, which :func:`registrations` reads for the twin's nodes), ZooKeeper's own ``/zookeeper``, znodes
outside the source chroot, and, unless asked, credentials (:mod:`migrate.snapshot.credentials`). Sequential
names are written as they are. ``acls="open"`` leaves every znode world-writable (a sandbox); ``"keep"`` gives
each its recorded ACL once the whole tree is written.

Everything about the input is decided before connecting (:func:`plan`); the write itself is
:mod:`controller.store.tree_copy`, bracketed by a marker that keeps nodes off an unfinished copy.
"""

from __future__ import annotations

import base64
import contextlib
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
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
from zkmodel.topics import TopicAssignment

SUFFIXES = (".parquet", ".jsonl", ".json")
OPEN_ACL = ((31, "world", "anyone"),)
ACL_MODES = ("open", "keep")
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

    groups: list[list[Znode]] = field(default_factory=list)
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
            found = sorted(f for f in p.iterdir() if f.suffix in SUFFIXES and f.is_file())
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


def _read(path: Path, with_acl: bool) -> Iterator[tuple[str, bytes | None, int, Any]]:
    """(path, data, ephemeral owner, acl) per row; the ACL column only when it is needed."""
    if path.suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        columns = ["path", "data", "ephemeral_owner", *(["acl"] if with_acl else [])]
        try:
            table = pq.read_table(str(path), columns=columns)
        except (OSError, pa.ArrowException) as exc:
            raise RestoreInputError(f"{path}: not readable as snapshot rows ({exc})") from None
        owners = table.column("ephemeral_owner").to_pylist()
        acl_column = table.column("acl").to_pylist() if with_acl else [None] * len(owners)
        yield from zip(
            table.column("path").to_pylist(), table.column("data").to_pylist(), owners, acl_column, strict=True
        )
        return
    with path.open("rb") as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                r = orjson.loads(line)
                data = None if r["data"] is None else base64.b64decode(r["data"], validate=True)
                yield str(r["path"]), data, int(r.get("ephemeral_owner") or 0), r.get("acl") if with_acl else None
            except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
                raise RestoreInputError(f"{path}: line {number} is not a snapshot row ({exc})") from None


def _parent(path: str) -> str:
    return path[: path.rfind("/")] or "/"


def _acl(raw: Any) -> Acl:
    if not raw:
        return ()
    return tuple((int(a["perms"]), str(a["scheme"]), str(a["id"])) for a in raw)


def plan(
    files: Sequence[Path], *, source_chroot: str | None = None, acls: str = "open", keep_credentials: bool = False
) -> Plan:
    """Read every row and decide every write (raises :class:`RestoreInputError` naming what is wrong)."""
    rows: dict[str, tuple[bytes | None, int, Any]] = {}
    for f in files:
        for path, data, owner, acl in _read(f, acls == "keep"):
            if not isinstance(path, str) or not path.startswith("/"):
                raise RestoreInputError(f"{f}: a row's path {path!r} is not an absolute znode path")
            if path in rows:
                raise RestoreInputError(f"{f}: {path} appears twice in the rows")
            rows[path] = (data, owner or 0, acl)
    if not rows:
        raise RestoreInputError(f"{', '.join(map(str, files))}: no rows")
    prefix = detect_chroot(rows) if source_chroot is None else source_chroot.rstrip("/")
    if prefix and not prefix.startswith("/"):
        raise RestoreInputError(f"--source-chroot {source_chroot!r} is not an absolute znode path")
    out = Plan(source_chroot=prefix)
    kept: dict[str, tuple[bytes | None, Any]] = {}
    for path, (data, owner, acl) in rows.items():
        if prefix and path != prefix and not path.startswith(prefix + "/"):
            out.skipped[f"outside the source chroot {prefix}"] += 1
            continue
        rel = path[len(prefix) :] or "/"
        if rel == "/":
            out.skipped["the chroot's root (exists already)"] += 1
        elif rel == "/zookeeper" or rel.startswith("/zookeeper/"):
            out.skipped["ZooKeeper's own /zookeeper"] += 1
        elif owner != 0:
            out.skipped["ephemeral (its session is gone)"] += 1
            _ephemeral(out, rel, data)
        else:
            keep, data = (True, data) if keep_credentials else redact(rel, data, out.redaction)
            if keep:
                kept[rel] = (data, acl)
            else:
                out.skipped["credential (redacted)"] += 1
    for rel in list(kept):  # ancestors the rows do not hold (an export of a few subtrees)
        parent = _parent(rel)
        while parent != "/" and parent not in kept:
            kept[parent] = (None, None)
            out.added_parents += 1
            parent = _parent(parent)
    order = sorted(kept, key=lambda p: p.replace("/", "\0"))  # pre-order: a subtree's paths are contiguous
    topic: str | None = None
    assigned: set[int] = set()
    for rel in order:
        data, acl = kept[rel]
        if topic is not None and rel.startswith(topic):
            out.groups[-1].append((rel, data))
        else:
            topic = None
            out.groups.append([(rel, data)])
            if rel.startswith(paths.BROKER_TOPICS + "/") and "/" not in rel[len(paths.BROKER_TOPICS) + 1 :]:
                topic = rel + "/"
                out.topics += 1
                try:
                    assignment = TopicAssignment.decode(rel, data)
                except ZnodeFormatError:
                    pass  # served as Kafka serves a malformed znode; not this command's to judge
                else:
                    out.partitions += len(assignment.partitions)
                    for replicas in assignment.partitions.values():
                        assigned.update(replicas)
        if acls == "keep" and acl is not None:
            recorded = _acl(acl)
            if recorded and recorded != OPEN_ACL:
                out.acls.append((rel, recorded))
    out.znodes = len(order)
    out.assigned = frozenset(assigned)
    out.registrations.sort(key=lambda r: r.broker_id)
    return out


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


def describe_marker(files: Sequence[Path], p: Plan) -> bytes:
    return orjson.dumps(
        {"version": 1, "started": int(time.time() * 1000), "znodes": p.znodes, "rows": [str(f) for f in files]}
    )


@dataclass
class Outcome:
    """How a restore ended: ``exit_code`` by the commands' contract, ``message`` one line when it failed."""

    exit_code: int
    written: int = 0
    acls: int = 0
    seconds: float = 0.0
    message: str = ""


def run(
    zookeeper: str,
    files: Sequence[Path],
    p: Plan,
    *,
    acls: str,
    timeout: float = 10.0,
    tls_config_file: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Outcome:
    """Write ``p`` into the chroot of ``zookeeper`` (created if missing). Refuses a chroot that holds any Kafka
    metadata, writing nothing. A failure halfway leaves the marker, so no node will serve the partial tree."""
    from controller.store import tree_copy
    from controller.zk.bulk import BulkWriteError
    from controller.zk.session import SessionLost, ZkTimeout, ZkUnavailable
    from migrate.connect import connect, zk_tls

    hosts, slash, chroot = zookeeper.partition("/")
    chroot = (slash + chroot).rstrip("/")
    try:
        tls = zk_tls(tls_config_file)
    except ValueError as exc:
        return Outcome(2, message=str(exc))
    if chroot:  # a missing chroot is empty: create it first, so the session below can be chrooted to it
        try:
            tree_copy.ensure_root(hosts, chroot, timeout, tls)
        except ZkUnavailable as exc:
            return Outcome(3, message=f"cannot connect to ZooKeeper at {hosts}: {exc}")
    session = connect(zookeeper, name="snapshot-restore", timeout=timeout, tls_config_file=tls_config_file)
    if session is None:
        return Outcome(3)  # connect() printed why
    started = time.monotonic()
    written = 0
    restart = f"restore again into a fresh chroot (--zookeeper {hosts}/<new chroot>)"
    try:
        present = tree_copy.kafka_metadata_present(session)
        if present:
            return Outcome(
                1,
                message=f"{zookeeper} already holds Kafka metadata ({', '.join(present)}): "
                "restore only into an empty chroot; nothing was written",
            )
        if not tree_copy.begin(session, describe_marker(files, p)):
            return Outcome(1, message=f"another restore into {zookeeper} began meanwhile; nothing was written")

        def wrote(count: int) -> None:
            nonlocal written
            written = count
            if progress is not None:
                progress(count, p.znodes)

        written = tree_copy.write(session, p.groups, wrote)
        set_count = tree_copy.set_acls(session, p.acls) if acls == "keep" else 0
        tree_copy.finish(session)
        return Outcome(0, written, set_count, time.monotonic() - started)
    except BulkWriteError as exc:
        lost = _is_connection_loss(exc.cause)
        return Outcome(
            3 if lost else 1,
            written,
            message=(
                f"restore stopped after {max(written, exc.created):,} of {p.znodes:,} znodes at {exc}; the chroot "
                f"holds a partial tree marked by {paths.RESTORE_IN_PROGRESS}, on which no node will start: {restart}"
            ),
        )
    except (ZkUnavailable, ZkTimeout, SessionLost) as exc:
        return Outcome(
            3,
            written,
            message=f"restore stopped after {written:,} of {p.znodes:,} znodes: lost ZooKeeper ({exc}); {restart}",
        )
    except KeyboardInterrupt:
        return Outcome(
            130,
            written,
            message=f"interrupted after {written:,} of {p.znodes:,} znodes; the chroot "
            f"is marked by {paths.RESTORE_IN_PROGRESS}: {restart}",
        )
    finally:
        session.close()


def _is_connection_loss(cause: BaseException) -> bool:
    from controller.zk.session import is_transient

    return is_transient(cause) or type(cause).__name__ in ("SessionExpiredError", "KazooTimeoutError")


def summary(p: Plan, outcome: Outcome, *, acls: str, keep_credentials: bool, target: str) -> list[str]:
    """What the command prints when the write finished: what was written, what was skipped and why."""
    rate = outcome.written / max(outcome.seconds, 1e-6)
    lines = [
        f"restored {outcome.written:,} znodes into {target} in {outcome.seconds:.1f} s ({rate:,.0f} znodes/s): "
        f"{p.topics:,} topics, {p.partitions:,} partitions"
    ]
    if p.added_parents:
        lines.append(f"  {p.added_parents:,} parent znode(s) the rows lack were created with null data")
    for reason, count in sorted(p.skipped.items()):
        lines.append(f"  skipped {count:,}: {reason}")
    if keep_credentials:
        lines.append("  credentials kept as recorded (--keep-credentials)")
    else:
        lines.append(f"  credentials redacted: {p.redaction.describe()} (--keep-credentials keeps them)")
    if acls == "keep":
        lines.append(
            f"  ACLs: the recorded ones, set on {outcome.acls:,} znode(s); writing may need the identities they name"
        )
    else:
        lines.append("  ACLs: open (world:anyone ALL, a sandbox; --acls keep sets the recorded ones)")
    if p.registrations:
        brokers = ", ".join(f"{r.broker_id}" + (f" ({r.rack})" if r.rack else "") for r in p.registrations)
        lines.append(f"  brokers registered in the rows (not written, their sessions are gone): {brokers}")
    missing = sorted(p.assigned - {r.broker_id for r in p.registrations})
    if missing:
        lines.append(f"  brokers named by assignments but not registered (offline): {', '.join(map(str, missing))}")
    return lines
