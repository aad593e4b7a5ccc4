"""``bridgekeeper lockdown``'s command line (imports the tool only when it runs)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from migrate.connect import add_tls_flag


def cmd_lockdown(args: argparse.Namespace) -> int:
    from controller.zk.session import ZkTimeout, ZkUnavailable
    from migrate.connect import connect
    from migrate.lockdown import tool
    from zkmodel.zk_acls import Identities, IdentityError, digest_identity

    try:
        who = Identities(
            digest_identity(args.controller_identity, "--controller-identity"),
            digest_identity(args.broker_identity, "--broker-identity") if args.broker_identity else None,
        )
    except IdentityError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    _scheme, _, credentials = args.controller_identity.partition(":")
    session = connect(
        args.zookeeper,
        name="lockdown",
        timeout=args.timeout,
        auth=[("digest", credentials)],
        tls_config_file=args.zk_tls_config_file,
    )
    try:
        if args.lockdown_command == "plan":
            return tool.plan(session, who)
        if args.lockdown_command == "apply":
            return tool.apply(session, who, Path(args.backup))
        if args.lockdown_command == "verify":
            return tool.verify(session, who)
        return tool.revert(session, Path(args.backup))
    except (ZkTimeout, ZkUnavailable) as exc:
        print(f"error: {exc}; rerun the command (it is safe to rerun)", file=sys.stderr)
        return 1
    except Exception as exc:  # kazoo's NoAuth and the like: name it, no traceback
        print(f"error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    finally:
        session.close()


def configure_plan(p: argparse.ArgumentParser) -> None:
    _configure(p, "plan")


def configure_apply(p: argparse.ArgumentParser) -> None:
    _configure(p, "apply")


def configure_verify(p: argparse.ArgumentParser) -> None:
    _configure(p, "verify")


def configure_revert(p: argparse.ArgumentParser) -> None:
    _configure(p, "revert")


def _configure(p: argparse.ArgumentParser, name: str) -> None:
    p.add_argument("--zookeeper", required=True, help="host:port[,host:port][/chroot]")
    add_tls_flag(p)
    p.add_argument(
        "--controller-identity",
        required=True,
        metavar="digest:USER:PASSWORD",
        help="the controller's ZooKeeper identity (bridgekeeper.zookeeper.controller.digest)",
    )
    p.add_argument("--broker-identity", default=None, metavar="digest:USER:PASSWORD",
                   help="the brokers' identity (bridgekeeper.zookeeper.digest); without it, what brokers "
                   "still write stays writable by anyone")  # fmt: skip
    p.add_argument("--backup", default="lockdown-acls.json", help="where apply saves and revert reads ACLs")
    p.add_argument("--timeout", type=float, default=10.0, help="connect timeout in seconds")
    p.set_defaults(func=cmd_lockdown, lockdown_command=name)
