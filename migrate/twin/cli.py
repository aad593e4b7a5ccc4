"""``bridgekeeper up --from-snapshot ROWS``: the local stack as a twin of the cluster the rows came from.

The flags are added to ``up`` here, beside the tool they need (``snapshot restore``), so the node's package never
imports the operator tools; without ``--from-snapshot``, ``up`` runs as it always does.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from controller.exits import CommandError, ExitCode, UsageError
from migrate.snapshot.restore_cli import add_twin_flags


def extend_up(up: argparse.ArgumentParser) -> None:
    plain: Callable[[argparse.Namespace], int] = up.get_default("func")
    twin = up.add_argument_group("a twin of a production cluster (--from-snapshot)")
    add_twin_flags(
        twin,
        from_snapshot="restore these rows (snapshot export/parse output: files or directories) into the sandbox "
        "ZooKeeper, then start one node per broker registered in them, with its broker id and rack",
    )

    def cmd(args: argparse.Namespace) -> int:
        return cmd_up_twin(args) if args.from_snapshot else plain(args)

    up.set_defaults(func=cmd)


def cmd_up_twin(args: argparse.Namespace) -> int:
    from controller.config import ConfigError, parse_overrides
    from controller.devstack.cli import run_stack
    from controller.devstack.stack import Stack, StackError
    from migrate.snapshot.restore import RestoreInputError, plan, row_files
    from migrate.twin.nodes import Launch, TwinError, choose, start_timeout, start_wave, zookeeper_heap_mb

    if args.nodes is not None:
        raise UsageError("--nodes and --from-snapshot: a twin starts one node per broker registered in the rows")
    # Everything about the rows and the flags is decided here, before any ZooKeeper or node is started.
    try:
        files = row_files(args.from_snapshot)
        p = plan(files, source_chroot=args.source_chroot, acls=args.acls, keep_credentials=args.keep_credentials)
        twin = choose(p, start_missing=args.start_missing, max_nodes=args.max_nodes)
        overrides = parse_overrides(args.set)
    except (RestoreInputError, TwinError, ConfigError) as exc:
        raise UsageError(str(exc)) from None
    except KeyboardInterrupt:
        raise CommandError("interrupted while reading the rows: nothing was started", ExitCode.INTERRUPTED) from None

    def say(msg: str) -> None:
        print(msg, flush=True)

    for line in twin.notes():
        say(line)
    launch = Launch(files, p, twin, acls=args.acls, keep_credentials=args.keep_credentials, say=say)
    try:
        stack = Stack(
            nodes=len(twin.broker_ids),
            broker_ids=twin.broker_ids,
            racks=twin.racks,
            data_dir=Path(args.data_dir).resolve() if args.data_dir else None,
            base_port=args.base_port,
            ibp=args.ibp,
            overrides=overrides,
            zk_servers=args.zk_servers,
            tls=args.tls,
            before_nodes=launch.before,
            after_nodes=launch.after,
            zk_heap_mb=zookeeper_heap_mb(p, len(twin.broker_ids)),
            start_wave=start_wave(p),
        )
    except StackError as exc:
        raise UsageError(str(exc)) from None
    try:
        return run_stack(stack, timeout=start_timeout(p, len(twin.broker_ids)), notes=lambda _s: twin.notes())
    finally:
        launch.close()
