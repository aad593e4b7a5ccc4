"""The ``bridgekeeper`` command: the root parser and the one table of every command.

Each row of :data:`COMMANDS` names a command (``"snapshot export"``), its one-line help, and the functions (in
the module beside the code it runs) that add its flags to the parser made here. The daemon's commands and the
operator tools are registered in the same table, so ``--help``, the README's checks and the exit-code test all
walk one list. Every command keeps the contract in :mod:`controller.exits`.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

from controller.exits import CommandError, ExitCode, configure_tool_logging, report
from controller.zk.interrupts import guard_interrupts


@dataclass(frozen=True)
class Command:
    path: str
    help: str
    #: "module:function" callables, each given the command's parser, in order (``up``'s twin flags come second).
    configure: tuple[str, ...]
    #: Runs servers and sets up its own logging (``--log-level``, progress lines), so it takes no ``--verbose``.
    daemon: bool = False


GROUPS: dict[str, str] = {
    "zk": "local ZooKeeper and znode tools",
    "snapshot": "ZooKeeper metadata as rows: export a live tree, parse snapshot files, check, restore",
    "lockdown": "ZooKeeper ACLs so only the controller identity may write metadata",
    "pipeline": "the fleet pipeline: model tables, readiness reports, reassignment plans",
}

COMMANDS: tuple[Command, ...] = (
    Command("version", "print the version", ("controller.cli:configure_version",)),
    Command(
        "node",
        "run one node from a Kafka-style properties file (like kafka-server-start.sh)",
        ("controller.node_cli:configure_node",),
        daemon=True,
    ),
    Command(
        "health",
        "exit 0 when a node answers ApiVersions (the container health check), 1 otherwise",
        ("controller.node_cli:configure_health",),
    ),
    Command(
        "up",
        "run a local ZooKeeper and N nodes in the foreground until Ctrl-C",
        ("controller.devstack.cli:configure_up", "migrate.twin.cli:extend_up"),
        daemon=True,
    ),
    Command(
        "zk run",
        "run a local ZooKeeper (Debian package) in the foreground until Ctrl-C",
        ("controller.devstack.cli:configure_zk_run",),
        daemon=True,
    ),
    Command("zk get", "read one znode and decode it with Kafka's format rules", ("migrate.cli:configure_zk_get",)),
    Command(
        "zk scram",
        "set or delete a user's SCRAM credential in ZooKeeper (kafka-configs --zookeeper), e.g. to "
        "bootstrap the inter-broker user before any node starts",
        ("migrate.cli:configure_zk_scram",),
    ),
    Command(
        "snapshot export",
        "walk a live tree (multiRead) into Parquet or JSON lines",
        ("migrate.snapshot.cli:configure_export",),
    ),
    Command(
        "snapshot parse",
        "read ZooKeeper's snapshot files offline (plain, .gz, .snappy)",
        ("migrate.snapshot.cli:configure_parse",),
    ),
    Command(
        "snapshot check",
        "decode every Kafka znode of a snapshot and report what blocks an upgrade",
        ("migrate.snapshot.cli:configure_check",),
    ),
    Command(
        "snapshot restore",
        "write rows (export or parse output) into an empty sandbox chroot: a twin's ZooKeeper",
        ("migrate.snapshot.restore_cli:configure_restore",),
    ),
    Command("lockdown plan", "print what would change", ("migrate.lockdown.cli:configure_plan",)),
    Command("lockdown apply", "save the current ACLs, then lock", ("migrate.lockdown.cli:configure_apply",)),
    Command(
        "lockdown verify", "exit 1 if any znode's ACL differs from the plan", ("migrate.lockdown.cli:configure_verify",)
    ),
    Command("lockdown revert", "restore the ACLs saved by apply", ("migrate.lockdown.cli:configure_revert",)),
    Command(
        "rehearse",
        "rehearse the two-phase rolling upgrade (binaries, then IBP) under live client load",
        ("migrate.rehearse.cli:configure",),
    ),
    Command(
        "pipeline model",
        "decode snapshot rows into model tables (Parquet, partitioned by cluster)",
        ("migrate.pipeline.cli:configure_model",),
    ),
    Command(
        "pipeline report", "fleet readiness report (HTML with plots + JSON)", ("migrate.pipeline.cli:configure_report",)
    ),
    Command(
        "pipeline plan",
        "movement-minimal reassignment plans (Kafka's plan-file format)",
        ("migrate.pipeline.cli:configure_plan",),
    ),
    Command(
        "pipeline package",
        "pack the Python environment the pipeline's executors run on (spark.archives)",
        ("migrate.pipeline.cli:configure_package",),
    ),
    Command(
        "pipeline synth",
        "write deterministic synthetic clusters (optionally with seeded defects) as snapshot rows",
        ("migrate.snapshot.synth_cli:configure_synth",),
    ),
)

#: Commands that parse their own arguments: the root hands them everything after the name. ``reassign`` keeps
#: kafka-reassign-partitions' flags, messages and exit codes, which argparse would answer in its own words.
RAW_COMMANDS: dict[str, tuple[str, str]] = {
    "reassign": (
        "migrate.cli:cmd_reassign",
        "move partitions between brokers: kafka-reassign-partitions' flags, JSON files and output "
        "(run 'bridgekeeper reassign --help')",
    ),
}


def _load(ref: str) -> Callable[..., Any]:
    module, _, name = ref.partition(":")
    fn: Callable[..., Any] = getattr(importlib.import_module(module), name)
    return fn


def _version() -> str:
    from importlib import metadata  # 30 ms: after the interrupt guard, not before it

    try:
        return metadata.version("bridgekeeper")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def cmd_version(_: argparse.Namespace) -> int:
    print(f"bridgekeeper {_version()}")
    return 0


def configure_version(p: argparse.ArgumentParser) -> None:
    p.set_defaults(func=cmd_version)


class _Parser(argparse.ArgumentParser):
    """argparse with the contract's usage errors: exit 2, and in a JSON mode the error object on stdout too."""

    json_errors = False

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        report(f"{self.prog}: {message}", ExitCode.USAGE, json_mode=_Parser.json_errors)
        sys.exit(ExitCode.USAGE)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="bridgekeeper", description="Kafka-compatible, ZooKeeper-backed bridge-release control plane."
    )
    parser.add_argument("--version", action="version", version=f"bridgekeeper {_version()}")
    root: argparse._SubParsersAction[_Parser] = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    groups: dict[str, argparse._SubParsersAction[_Parser]] = {}
    for command in COMMANDS:
        words = command.path.split()
        where = root
        if len(words) == 2:
            if words[0] not in groups:
                group = root.add_parser(words[0], help=GROUPS[words[0]])
                groups[words[0]] = group.add_subparsers(
                    dest=f"{words[0]}_command", required=True, metavar=f"{words[0].upper()}_COMMAND"
                )
            where = groups[words[0]]
        leaf = where.add_parser(words[-1], help=command.help, description=command.help)
        for ref in command.configure:
            _load(ref)(leaf)
        if not command.daemon:
            leaf.add_argument("-v", "--verbose", action="store_true", help="show the libraries' logs on stderr")
        leaf.set_defaults(daemon=command.daemon)
    for name, (_, text) in RAW_COMMANDS.items():
        root.add_parser(name, add_help=False, help=text)
    return parser


def _json_requested(argv: Sequence[str]) -> bool:
    """Whether the command line asks for JSON output (``--format json``; ``reassign`` handles its own)."""
    pairs = zip(argv, [*argv[1:], ""], strict=True)
    return any(a == "--format=json" or (a == "--format" and nxt == "json") for a, nxt in pairs)


def _unreachable(exc: BaseException) -> bool:
    """ZooKeeper or Kafka away, answering too late, or refusing our credentials: exit 3 whichever layer saw it.
    ZooKeeper's failures are looked up only if a command loaded them (every ZooKeeper session does): importing
    kazoo here would slow every command down. Of ZooKeeper's refusals only AuthFailed (our credentials) is
    unreachable; NoAuth (one znode's ACL) is the command's to explain."""
    errors = sys.modules.get("controller.zk.errors")
    if errors is not None and isinstance(exc, (*errors.LOST, errors.AuthFailedError)):
        return True
    return isinstance(exc, ConnectionError | TimeoutError)


def main(argv: Sequence[str] | None = None) -> int:
    guard_interrupts()  # Ctrl-C as KeyboardInterrupt, never inside kazoo or an import (controller/zk/interrupts.py)
    args_list = list(sys.argv[1:] if argv is None else argv)
    json_mode = _Parser.json_errors = _json_requested(args_list)
    try:
        return _run(args_list)
    except KeyboardInterrupt:  # at any point: loading the command's modules and parsing its flags too
        return report("interrupted", ExitCode.INTERRUPTED, json_mode=json_mode)


def _run(args_list: list[str]) -> int:
    if args_list and args_list[0] in RAW_COMMANDS:
        result: int = _load(RAW_COMMANDS[args_list[0]][0])(args_list[1:])
        return result
    args = build_parser().parse_args(args_list)
    verbose = bool(getattr(args, "verbose", False))
    if not args.daemon:
        configure_tool_logging(verbose)
    json_mode = getattr(args, "format", None) == "json"
    try:
        return int(args.func(args))
    except CommandError as exc:
        return report(exc.message, exc.code, json_mode=json_mode)
    except Exception as exc:
        if verbose:
            traceback.print_exc()
        code = ExitCode.UNREACHABLE if _unreachable(exc) else ExitCode.PROBLEM
        return report(
            f"{type(exc).__name__}: {exc}" if code == ExitCode.PROBLEM else str(exc), code, json_mode=json_mode
        )


if __name__ == "__main__":
    sys.exit(main())
