"""``bridgekeeper snapshot export|parse|check``: commands over :mod:`migrate.snapshot`, with live progress on
stderr and one error line, never a traceback or half an output file.

Exit codes (controller/exits.py): flags, input files and the output's name and directory are checked before
anything is read or connected to (2); an unreachable ZooKeeper is 3; a write that fails midway (a full disk) is 1;
``snapshot check`` answers 1 when something blocks an upgrade.
"""

from __future__ import annotations

import argparse
import sys
import time

from controller.cliutil import seconds
from controller.credential_flags import add_identity_flags, check_identity, identity
from controller.exits import CommandError, ExitCode, Unreachable, UsageError
from migrate.connect import add_tls_flag

#: ``snapshot check --output`` takes a file; these were its format values before ``--format`` took them over.
_FORMAT_WORDS = ("text", "json")


def _export_auth(args: argparse.Namespace) -> list[tuple[str, str]]:
    """kazoo's auth for ``--zk-identity`` (or its file or environment form), or for ``--zk-digest USER:PASSWORD``
    (the scheme-less form, accepted so scripts passing it work); raises UsageError for both, or for a malformed one."""
    if args.zk_digest is not None:
        if args.zk_identity is not None or args.zk_identity_file is not None:
            raise UsageError("--zk-digest is the old spelling of --zk-identity: give one of them")
        text: str | None = f"digest:{args.zk_digest}"
        source = "--zk-digest"
        user, _, password = args.zk_digest.partition(":")
        if not user or not password:
            raise UsageError("--zk-digest must be USER:PASSWORD")
    else:
        text, source = identity(args, "zk", required=False), "--zk-identity"
    if text is None:
        return []
    user, password = check_identity(text, source)
    return [("digest", f"{user}:{password}")]


def _no_read(exc: BaseException, auth: list[tuple[str, str]]) -> str:
    """A znode the export may not read (no READ for this session's identities): which, and the two ways on."""
    notes = getattr(exc, "__notes__", None) or []  # the reader adds "while reading '<path>'"
    where = notes[0].removeprefix("while reading ") if notes else "a znode"
    who = f"digest {auth[0][1].partition(':')[0]}" if auth else "no identity (--zk-identity)"
    return (
        f"no READ permission on {where} as {who}: export as an identity its ACL lets read, or leave its subtree "
        "out (--paths); nothing was written"
    )


def cmd_export(args: argparse.Namespace) -> int:
    from rich.console import Console

    from controller.zk.errors import LOST, NoAuthError
    from migrate.connect import connect
    from migrate.snapshot.credentials import Redaction, redact
    from migrate.snapshot.export import walk
    from migrate.snapshot.rows import RowsOutputError, RowWriter, check_output
    from zkmodel.paths import KAFKA_ROOTS

    roots = args.paths or list(KAFKA_ROOTS)
    relative = [p for p in roots if not p.startswith("/")]
    if relative:
        raise UsageError(f"--paths takes absolute znode paths, got {relative}")
    check_output(args.output, args.format)
    auth = _export_auth(args)
    session = connect(
        args.zookeeper,
        name="snapshot-export",
        timeout=args.timeout,
        auth=auth,
        read_only=True,
        tls_config_file=args.zk_tls_config_file,
    )
    console = Console(stderr=True)
    started = time.monotonic()
    redaction = Redaction()
    try:
        # RowWriter writes beside the target and renames only on success: any failure leaves no output file.
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
    except RowsOutputError as exc:
        raise CommandError(str(exc)) from None
    except NoAuthError as exc:
        raise CommandError(_no_read(exc, auth)) from None
    except LOST as exc:  # the session's own as well as kazoo's, which the pipelined bulk reads let out
        reason = str(exc) or type(exc).__name__
        lost = f"lost ZooKeeper at {args.zookeeper} while exporting ({reason}); nothing was written"
        raise Unreachable(lost) from None
    finally:
        session.close()
    elapsed = time.monotonic() - started
    print(
        f"{out.count:,} znodes written to {args.output} in {elapsed:.1f} s "
        f"({out.count / max(elapsed, 1e-6):,.0f} znodes/s)",
        file=sys.stderr,
    )
    if args.redact_credentials:
        print(f"credentials redacted: {redaction.describe()}", file=sys.stderr)
    return 0


def cmd_parse(args: argparse.Namespace) -> int:
    from pathlib import Path

    from migrate.snapshot import files, replay
    from migrate.snapshot.jute import FormatError
    from migrate.snapshot.rows import RowsOutputError, RowWriter, check_output

    check_output(args.output, args.format)
    source = Path(args.source)
    if not source.exists():
        raise UsageError(f"{source}: no such file or directory")
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
                print(
                    f"warning: {replay.describe(damaged)}; using {info.name} and replaying the transaction "
                    f"logs after it{until}",
                    file=sys.stderr,
                )
            replay.apply_logs(tree, info, logs, upto, reach=not replaying)
            with RowWriter(args.output, args.format) as out:
                out.write_all(tree.rows())
            read = sum(f.stat().st_size for f in logs)
    except RowsOutputError as exc:  # before OSError: the output failing midway is not the input's fault
        raise CommandError(str(exc)) from None
    except (FormatError, replay.NoValidSnapshot) as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:  # a snapshot, log or directory that cannot be read
        name = f"{exc.filename}: " if exc.filename else ""
        raise UsageError(f"{name}{exc.strerror or exc}") from None
    elapsed = max(time.monotonic() - started, 1e-6)
    read += sum(f.stat().st_size for f in files.files_in(directory)[0] if f.name == info.name)
    rate = read / elapsed / 1e6
    print(f"{out.count:,} znodes from {info.name} written to {args.output} ({rate:,.1f} MB/s)", file=sys.stderr)
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    import io

    import orjson
    from rich.console import Console
    from rich.table import Table

    from migrate.atomic import write_atomic
    from migrate.snapshot.check import check_rows
    from migrate.snapshot.rows import RowsError, check_output_dir, read_rows

    if args.output in _FORMAT_WORDS:
        raise UsageError("--output takes a file; for JSON use --format json")
    if args.output is not None:
        check_output_dir(args.output)
    try:
        rows = read_rows(args.file)
    except RowsError as exc:
        raise UsageError(f"cannot read rows: {exc}") from None
    findings = check_rows(rows, args.chroot)
    blocking = [f for f in findings if f.blocking]
    if args.format == "json":
        doc = {
            "znodes": len(rows),
            "blocking": len(blocking),
            "findings": [
                {"kind": f.kind, "path": f.path, "detail": f.detail, "blocking": f.blocking} for f in findings
            ],
        }
        report = orjson.dumps(doc).decode() + "\n"
        if args.output is None:
            sys.stdout.write(report)
    else:
        # To a file: no colour, and wide enough that a finding's detail stays on its row.
        buffer = io.StringIO()
        console = Console(file=buffer, width=200) if args.output is not None else Console()
        if findings:
            table = Table(title=f"{len(findings)} finding(s) in {len(rows):,} znodes ({len(blocking)} blocking)")
            for column in ("blocks", "kind", "path", "detail"):
                table.add_column(column)
            for f in findings:
                table.add_row("yes" if f.blocking else "no", f.kind, f.path, f.detail)
            console.print(table)
        else:
            console.print(f"{len(rows):,} znodes checked: nothing blocks the upgrade.")
        report = buffer.getvalue()
    if args.output is not None:
        try:
            write_atomic(args.output, report)
        except OSError as exc:
            raise CommandError(f"{args.output}: cannot write the report ({exc.strerror or exc})") from None
        print(f"report written to {args.output}", file=sys.stderr)
    return ExitCode.PROBLEM if blocking else ExitCode.OK


def configure_export(ex: argparse.ArgumentParser) -> None:
    ex.add_argument("--zookeeper", required=True, help="host:port[,host:port][/chroot]")
    add_tls_flag(ex)
    _output_flags(ex)
    ex.add_argument("--paths", nargs="+", default=None, help="subtrees to export (default: Kafka's roots)")
    ex.add_argument("--timeout", type=seconds, default=10.0, help="connect timeout in seconds")
    add_identity_flags(
        ex,
        "zk",
        "a digest identity to read as (ZooKeeper shows a digest ACL's hash only to those with ADMIN on the znode, "
        "others see user:x; and nodes without world READ only to their owners)",
    )
    # The flag's earlier spelling, kept for the scripts that pass it.
    ex.add_argument("--zk-digest", default=None, metavar="USER:PASSWORD", help=argparse.SUPPRESS)
    ex.add_argument(
        "--redact-credentials",
        action="store_true",
        help="leave SCRAM credentials, delegation tokens and broker password configs out of the rows, so no "
        "credential leaves this host",
    )
    ex.set_defaults(func=cmd_export)


def configure_parse(pa: argparse.ArgumentParser) -> None:
    pa.add_argument("source", help="a dataDir (or its version-2/) or one snapshot.<zxid> file")
    _output_flags(pa)
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
    ch.add_argument(
        "--format", choices=_FORMAT_WORDS, default="text", help="the report as a table or one JSON document"
    )
    ch.add_argument("-o", "--output", default=None, metavar="FILE", help="write the report to FILE (default: stdout)")
    ch.set_defaults(func=cmd_check)


def _output_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-o", "--output", required=True, help="output file (.parquet, or .jsonl for JSON lines)")
    parser.add_argument(
        "--format", choices=("parquet", "jsonl"), default=None, help="default: from the file name (.parquet, .jsonl)"
    )
