"""``bridgekeeper snapshot export|parse``: commands over :mod:`migrate.snapshot`, with live progress on
stderr and clear errors (file and offset) with exit 1, never a traceback or half an output file."""

from __future__ import annotations

import argparse
import sys
import time

from migrate.connect import add_tls_flag


def cmd_export(args: argparse.Namespace) -> int:
    from rich.console import Console

    from controller.zk.session import ZkTimeout, ZkUnavailable
    from migrate.connect import connect
    from migrate.snapshot.credentials import Redaction, redact
    from migrate.snapshot.export import KAFKA_ROOTS, walk
    from migrate.snapshot.rows import RowWriter

    roots = args.paths or list(KAFKA_ROOTS)
    if any(not p.startswith("/") for p in roots):
        print(f"error: --paths takes absolute znode paths, got {[p for p in roots if not p.startswith('/')]}",
              file=sys.stderr)  # fmt: skip
        return 2
    auth = [("digest", args.zk_digest)] if args.zk_digest else []
    session = connect(args.zookeeper, name="snapshot-export", timeout=args.timeout, auth=auth, read_only=True,
                      tls_config_file=args.zk_tls_config_file)  # fmt: skip
    console = Console(stderr=True)
    started = time.monotonic()
    redaction = Redaction()
    try:
        with console.status("exporting") as status, RowWriter(args.output, args.format) as out:

            def progress(seen: int) -> None:
                rate = seen / max(1e-6, time.monotonic() - started)
                status.update(f"exporting: {seen:,} znodes read, {rate:,.0f} znodes/s")

            for node in walk(session, roots, progress):
                if args.redact_credentials:
                    keep, node.data = redact(node.path, node.data, redaction)
                    if not keep:
                        continue
                out.write(node)
    except (ZkTimeout, ZkUnavailable, OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        session.close()
    elapsed = time.monotonic() - started
    print(f"{out.count:,} znodes written to {args.output} in {elapsed:.1f} s "
          f"({out.count / max(elapsed, 1e-6):,.0f} znodes/s)", file=sys.stderr)  # fmt: skip
    if args.redact_credentials:
        print(f"credentials redacted: {redaction.describe()}", file=sys.stderr)
    return 0


def cmd_parse(args: argparse.Namespace) -> int:
    from pathlib import Path

    from migrate.snapshot import files, replay
    from migrate.snapshot.jute import FormatError
    from migrate.snapshot.rows import RowWriter

    source = Path(args.source)
    if not source.exists():
        print(f"error: {source}: no such file or directory", file=sys.stderr)
        return 1
    started = time.monotonic()
    directory = source.parent if source.is_file() else source
    replaying = args.replay_logs or args.zxid is not None
    # A data directory is restored as ZooKeeper restores it (FileTxnSnapLog.restore, FileSnap.deserialize):
    # a damaged newest snapshot gives way to the newest one that reads whole, plus the logs after it. A file
    # named on the command line, or --strict, is that snapshot or an error.
    fall_back = source.is_dir() and not args.strict
    try:
        snaps = [source] if source.is_file() else files.files_in(source)[0]
        if not snaps:
            raise FormatError(str(source), 0, "no snapshot.<zxid> file here (or in its version-2/)")
        damaged: list[FormatError] = []
        info: files.SnapshotInfo | None = None
        read = 0
        if not replaying:  # streamed, never the whole tree in memory
            try:
                with RowWriter(args.output, args.format) as out:
                    info = files.read_snapshot(snaps[-1], out.write)
            except FormatError as exc:  # the writer dropped its rows: a bad seal shows only at the end
                if not fall_back:
                    raise
                damaged.append(exc)
        if info is None:
            tree, info, damaged = replay.newest_valid(snaps, damaged, fall_back=fall_back)
            logs = files.files_in(directory)[1]
            # without --replay-logs the rows are the tree at the newest snapshot's zxid (its file name's)
            upto = args.zxid if replaying else files.zxid_of(snaps[-1])
            if damaged:
                until = "" if upto is None else f" up to zxid 0x{upto:x}"
                print(f"warning: {replay.describe(damaged)}; using {info.name} and replaying the transaction "
                      f"logs after it{until}", file=sys.stderr)  # fmt: skip
            replay.apply_logs(tree, info, logs, upto, reach=not replaying)
            with RowWriter(args.output, args.format) as out:
                out.write_all(tree.rows())
            read = sum(f.stat().st_size for f in logs)
    except (FormatError, replay.NoValidSnapshot, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    elapsed = max(time.monotonic() - started, 1e-6)
    read += sum(f.stat().st_size for f in files.files_in(directory)[0] if f.name == info.name)
    rate = read / elapsed / 1e6
    print(f"{out.count:,} znodes from {info.name} written to {args.output} ({rate:,.1f} MB/s)", file=sys.stderr)
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    import orjson
    from rich.console import Console
    from rich.table import Table

    from migrate.snapshot.check import check_rows
    from migrate.snapshot.rows import read_rows

    try:
        rows = read_rows(args.file)
    except (OSError, ValueError) as exc:  # pyarrow's and orjson's errors are ValueErrors
        print(f"error: {args.file}: cannot read rows: {exc}", file=sys.stderr)
        return 1
    findings = check_rows(rows, args.chroot)
    blocking = [f for f in findings if f.blocking]
    if args.output == "json":
        doc = {"znodes": len(rows), "blocking": len(blocking),
               "findings": [{"kind": f.kind, "path": f.path, "detail": f.detail, "blocking": f.blocking}
                            for f in findings]}  # fmt: skip
        print(orjson.dumps(doc).decode())
    else:
        console = Console()
        if findings:
            table = Table(title=f"{len(findings)} finding(s) in {len(rows):,} znodes ({len(blocking)} blocking)")
            for column in ("blocks", "kind", "path", "detail"):
                table.add_column(column)
            for f in findings:
                table.add_row("yes" if f.blocking else "no", f.kind, f.path, f.detail)
            console.print(table)
        else:
            console.print(f"{len(rows):,} znodes checked: nothing blocks the upgrade.")
    return 1 if blocking else 0


def configure_export(ex: argparse.ArgumentParser) -> None:
    ex.add_argument("--zookeeper", required=True, help="host:port[,host:port][/chroot]")
    add_tls_flag(ex)
    ex.add_argument("-o", "--output", required=True, help="output file (.parquet, or .jsonl for JSON lines)")
    ex.add_argument("--format", choices=("parquet", "jsonl"), default=None, help="default: from the file name")
    ex.add_argument("--paths", nargs="+", default=None, help="subtrees to export (default: Kafka's roots)")
    ex.add_argument("--timeout", type=float, default=10.0, help="connect timeout in seconds")
    ex.add_argument(
        "--zk-digest",
        default=None,
        metavar="USER:PASSWORD",
        help="a digest identity to read as: ZooKeeper shows a digest ACL's hash only to those with ADMIN on the "
        "znode (others see user:x), and nodes without world READ only to their owners",
    )
    ex.add_argument(
        "--redact-credentials",
        action="store_true",
        help="leave SCRAM credentials, delegation tokens and broker password configs out of the rows, so no "
        "credential leaves this host",
    )
    ex.set_defaults(func=cmd_export)


def configure_parse(pa: argparse.ArgumentParser) -> None:
    pa.add_argument("source", help="a dataDir (or its version-2/) or one snapshot.<zxid> file")
    pa.add_argument("-o", "--output", required=True, help="output file (.parquet, or .jsonl for JSON lines)")
    pa.add_argument("--format", choices=("parquet", "jsonl"), default=None, help="default: from the file name")
    pa.add_argument("--replay-logs", action="store_true", help="apply the transaction logs after the snapshot")
    pa.add_argument(
        "--zxid", type=lambda t: int(t, 0), default=None, help="replay up to this zxid (implies --replay-logs)"
    )
    pa.add_argument(
        "--strict",
        action="store_true",
        help="refuse a damaged newest snapshot of a dataDir instead of restoring as ZooKeeper does (the newest "
        "snapshot that reads whole, plus the logs after it)",
    )
    pa.set_defaults(func=cmd_parse)


def configure_check(ch: argparse.ArgumentParser) -> None:
    ch.add_argument("file", help="rows from 'snapshot export' or 'snapshot parse' (.parquet or .jsonl)")
    ch.add_argument("--chroot", default=None, help="where Kafka's tree is (default: found from /brokers)")
    ch.add_argument("--output", choices=("text", "json"), default="text")
    ch.set_defaults(func=cmd_check)
