"""``snapshot restore``'s write of a :class:`~migrate.snapshot.restore.Plan` and the lines it prints after.

The write itself is :mod:`controller.store.tree_copy`, bracketed by a marker that keeps nodes off an unfinished
copy; each way it can end is an :class:`Outcome` with the commands' exit code.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import orjson

from migrate.snapshot.restore import Plan
from zkmodel import paths


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
    from controller.exits import CommandError
    from controller.store import tree_copy
    from controller.zk.bulk import BulkWriteError
    from controller.zk.errors import LOST_BY_SESSION, ZkUnavailable
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
        except ZkUnavailable:
            return Outcome(3, message=f"cannot connect to ZooKeeper at {hosts} within {timeout:g} s")
    try:
        session = connect(zookeeper, name="snapshot-restore", timeout=timeout, tls_config_file=tls_config_file)
    except CommandError as exc:
        return Outcome(int(exc.code), message=exc.message)
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
    except LOST_BY_SESSION as exc:
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
    """A bulk write's cause (kazoo's own error, as the pipelined writer met it) that means ZooKeeper went away
    or the session with it."""
    from controller.zk.errors import LOST

    return isinstance(cause, LOST)


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
