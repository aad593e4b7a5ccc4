"""``bridgekeeper snapshot restore``: rows into an empty sandbox chroot, with a progress bar on stderr and a
summary on stdout. Exit 0 written; 1 refused (a chroot holding Kafka metadata) or stopped halfway; 2 rows or
flags that cannot be used, decided before connecting; 3 ZooKeeper unreachable or lost; 130 interrupted."""

from __future__ import annotations

import argparse
import gc

from controller.cliutil import positive_int, seconds
from controller.exits import CommandError, ExitCode, UsageError
from migrate.connect import add_tls_flag


def add_restore_flags(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """The flags ``snapshot restore``, ``up --from-snapshot`` and ``rehearse --from-snapshot`` share."""
    parser.add_argument(
        "--acls",
        choices=("open", "keep"),
        default="open",
        help="open: world:anyone ALL on every znode (a sandbox, the default); keep: the recorded "
        "ACLs, set once the tree is written (writing may then need the identities they name)",
    )
    parser.add_argument(
        "--keep-credentials",
        action="store_true",
        help="restore SCRAM credentials, delegation tokens and broker password configs (redacted by default)",
    )
    parser.add_argument(
        "--source-chroot",
        default=None,
        metavar="PATH",
        help="where Kafka's tree is in the rows (default: found from /brokers)",
    )


def add_twin_flags(
    group: argparse._ArgumentGroup, *, from_snapshot: str, max_nodes: str = "start at most N nodes (controller first)"
) -> None:
    """The flags of ``up --from-snapshot`` and ``rehearse --from-snapshot``: which rows, which nodes to start, and
    the restore's own flags; ``from_snapshot`` and ``max_nodes`` are the two helps that differ."""
    group.add_argument("--from-snapshot", nargs="+", metavar="ROWS", help=from_snapshot)
    group.add_argument(
        "--start-missing", action="store_true", help="also start brokers the assignments name but no znode registers"
    )
    group.add_argument("--max-nodes", type=positive_int, default=None, help=max_nodes)
    add_restore_flags(group)


def cmd_restore(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from migrate.snapshot.restore import RestoreInputError, plan, row_files
    from migrate.snapshot.restore_write import run, summary

    # Only the last host may carry the chroot (ZooKeeper's connect string); "HOST:PORT/" names its root.
    if "/" not in args.zookeeper.split(",")[-1] or not args.zookeeper.partition("/")[2].strip("/"):
        raise UsageError(
            f"--zookeeper {args.zookeeper} names no chroot: restore writes into a sandbox chroot "
            "(HOST:PORT/CHROOT), never into a ZooKeeper's root"
        )
    try:
        files = row_files(args.rows)
        p = plan(files, source_chroot=args.source_chroot, acls=args.acls, keep_credentials=args.keep_credentials)
    except RestoreInputError as exc:
        raise UsageError(str(exc)) from None
    except KeyboardInterrupt:
        raise CommandError("interrupted while reading the rows: nothing was written", ExitCode.INTERRUPTED) from None
    # The plan lives until the end: kept out of the cyclic collector's scans, which would otherwise walk its
    # millions of objects again and again while the writes make their short-lived ones.
    gc.freeze()
    console = Console(stderr=True)
    columns = (TextColumn("restoring"), BarColumn(), MofNCompleteColumn(), TextColumn("znodes"), TimeRemainingColumn())
    # Off a terminal the bar draws nothing but a stray empty line when it stops.
    with Progress(*columns, console=console, transient=True, disable=not console.is_terminal) as bar:
        task = bar.add_task("restore", total=p.znodes)
        outcome = run(
            args.zookeeper,
            files,
            p,
            acls=args.acls,
            timeout=args.timeout,
            tls_config_file=args.zk_tls_config_file,
            progress=lambda done, _total: bar.update(task, completed=done),
        )
    if outcome.exit_code != 0:
        if outcome.message:
            raise CommandError(outcome.message, ExitCode(outcome.exit_code))
        return outcome.exit_code
    for line in summary(p, outcome, acls=args.acls, keep_credentials=args.keep_credentials, target=args.zookeeper):
        print(line)
    return 0


def configure_restore(r: argparse.ArgumentParser) -> None:
    r.description = (
        "Write every persistent znode of the rows into an empty chroot, parents first, data byte for "
        "byte; ephemerals (broker registrations, /controller) and /zookeeper are not written, credentials are "
        "redacted unless --keep-credentials. A chroot already holding /brokers, /controller, /config or /admin is "
        "refused and left untouched."
    )
    r.add_argument("rows", nargs="+", help="rows files (.parquet, .jsonl) or directories of them")
    r.add_argument("--zookeeper", required=True, help="host:port[,host:port]/chroot to restore into")
    add_tls_flag(r)
    add_restore_flags(r)
    r.add_argument("--timeout", type=seconds, default=10.0, help="connect timeout in seconds")
    r.set_defaults(func=cmd_restore)
