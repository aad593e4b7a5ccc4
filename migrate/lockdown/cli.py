"""``bridgekeeper lockdown``'s command line (imports the tool only when it runs).

Everything the command is given (the identities, the backup file) is checked before ZooKeeper is contacted, so
a typo costs no connection attempt and a lockdown that could not save or find its backup never starts.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from controller.cliutil import seconds
from controller.credential_flags import add_identity_flags
from migrate.connect import add_tls_flag

#: Said when the connection goes mid-way: apply saves the backup before changing any ACL and merges into it on a
#: rerun (the first saved ACL of a path is kept), and revert sets saved ACLs, so rerunning finishes the work.
RERUN = "rerun the command (it is safe to rerun)"


def cmd_lockdown(args: argparse.Namespace) -> int:
    from controller.credential_flags import identity
    from controller.exits import CommandError, Unreachable, UsageError
    from controller.zk.errors import LOST, NoAuthError
    from migrate.connect import connect
    from migrate.lockdown import tool
    from zkmodel.znode_acls import Identities, IdentityError, digest_identity

    controller = identity(args, "controller", required=True)
    broker = identity(args, "broker", required=False)
    assert controller is not None  # required=True raises instead
    try:
        who = Identities(
            digest_identity(controller, "--controller-identity"),
            digest_identity(broker, "--broker-identity") if broker else None,
        )
    except IdentityError as exc:
        raise UsageError(str(exc)) from None
    backup = Path(args.backup)
    if args.lockdown_command == "apply":
        tool.check_backup_target(backup)
    elif args.lockdown_command == "revert":
        tool.read_backup(backup)

    _scheme, _, credentials = controller.partition(":")
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
            return tool.apply(session, who, backup)
        if args.lockdown_command == "verify":
            return tool.verify(session, who)
        return tool.revert(session, backup)
    except LOST as exc:  # the connection went (or a request got no answer) part-way through
        raise Unreachable(f"{str(exc) or type(exc).__name__}; {RERUN}") from None
    except NoAuthError:  # a read refused: the ACL writes name their znode (tool._set_acl)
        user = credentials.partition(":")[0]
        raise CommandError(
            f"not authorised to read Kafka's znodes as {user!r}: a locked tree shows its credentials only to the "
            "controller identity (--controller-identity)"
        ) from None
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
    # Not argparse-required: the identity may come from the file flag or the environment (controller.credential_flags).
    add_identity_flags(
        p, "controller", "the controller's ZooKeeper identity (bridgekeeper.zookeeper.controller.digest)"
    )
    add_identity_flags(
        p,
        "broker",
        "the brokers' identity (bridgekeeper.zookeeper.digest; without it, what brokers still write stays writable "
        "by anyone)",
    )
    p.add_argument("--backup", default="lockdown-acls.json", help="where apply saves and revert reads ACLs")
    p.add_argument("--timeout", type=seconds, default=10.0, help="connect timeout in seconds")
    p.set_defaults(func=cmd_lockdown, lockdown_command=name)
