"""The small operator commands: ``zk get`` (read one znode as Kafka would decode it), ``zk scram`` (write a
SCRAM credential the way ``kafka-configs --zookeeper`` does) and the ``reassign`` entry point. Each command imports
what it needs when it runs, so ``bridgekeeper --help`` stays fast and the node never pays for the tools.
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import sys
from collections.abc import Sequence
from typing import Any

import orjson

from controller.cliutil import positive_int, seconds
from migrate.connect import add_tls_flag


def cmd_zk_get(args: argparse.Namespace) -> int:
    """Print a znode decoded with Kafka's rules, so operators can read any cluster's metadata."""
    from controller.exits import CommandError, UsageError
    from controller.zk.errors import NoAuthError
    from migrate.connect import connect
    from zkmodel.errors import ZnodeFormatError
    from zkmodel.registry import decode_znode

    if not args.path.startswith("/"):
        raise UsageError(f"PATH must start with '/' (absolute in the chroot), got {args.path!r}")
    session = connect(
        args.zookeeper,
        name="zk-get",
        timeout=args.timeout,
        read_only=True,
        session_timeout_ms=int(args.timeout * 1000),
        tls_config_file=args.zk_tls_config_file,
    )
    try:
        found = session.get(args.path)
    except NoAuthError:
        raise CommandError(
            f"{args.path}: not authorised to read it (zk get connects with no identity, and the znode's ACL gives "
            "world:anyone no READ)"
        ) from None
    finally:
        session.close()
    if found is None:
        raise CommandError(f"no znode at {args.path}")
    data, stat = found
    try:
        decoded = decode_znode(args.path, data)
    except ZnodeFormatError as exc:
        print(f"raw: {data!r}", file=sys.stderr)
        raise CommandError(str(exc)) from None
    out = {"path": args.path, "version": stat.version, "czxid": stat.czxid, "ephemeral": stat.ephemeralOwner != 0}
    out["raw"] = (data or b"").decode("utf-8", errors="replace")
    out["decoded"] = _jsonable(decoded)
    print(orjson.dumps(out, option=orjson.OPT_INDENT_2).decode())
    return 0


def cmd_zk_scram(args: argparse.Namespace) -> int:
    """Write one credential the way ``kafka-configs --zookeeper`` does. Every flag, file and identity is read
    and checked first, so nothing but the write itself can fail once ZooKeeper is contacted."""
    from controller.credential_flags import identity, read_secret_file
    from controller.exits import CommandError, UsageError
    from controller.security.scram import MAX_ITERATIONS, MECHANISMS, iterations_error
    from controller.store.scram import ScramAdminError, alter_scram
    from controller.zk.errors import NoAuthError
    from migrate.connect import connect

    if args.zk_digest is not None:  # USER:PASSWORD without the scheme, accepted so scripts passing it work
        if args.zk_identity is not None or args.zk_identity_file is not None:
            raise UsageError("--zk-digest is the old spelling of --zk-identity: give one of them")
        user, _, secret = args.zk_digest.partition(":")
        if not user or not secret:
            raise UsageError("--zk-digest must be USER:PASSWORD")
        zk_identity: str | None = f"digest:{args.zk_digest}"
    else:
        zk_identity = identity(args, "zk", required=False)
    password: str | None = None
    if args.password_file is not None:
        password = read_secret_file(args.password_file, "--password-file")
    elif not args.delete:
        password = args.password
        if not password:
            raise UsageError("--password must not be empty")
    if iterations_error(args.mechanism, args.iterations) is not None:
        minimum = MECHANISMS[args.mechanism][1]
        raise UsageError(f"--iterations must be {minimum}-{MAX_ITERATIONS} for {args.mechanism}, got {args.iterations}")

    auth = [] if zk_identity is None else [("digest", zk_identity.partition(":")[2])]
    session = connect(
        args.zookeeper, name="scram-admin", timeout=args.timeout, auth=auth, tls_config_file=args.zk_tls_config_file
    )
    try:
        print(alter_scram(session, args.user, args.mechanism, password=password, iterations=args.iterations))
        return 0
    except ScramAdminError as exc:
        raise CommandError(str(exc)) from None
    except NoAuthError:
        writer = "no identity" if zk_identity is None else repr(zk_identity.split(":")[1])
        raise CommandError(
            f"not authorised to write the credentials of user {args.user!r} as {writer}: after a lockdown only the "
            "controller identity may (--zk-identity-file)"
        ) from None
    finally:
        session.close()


def _jsonable(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


def cmd_reassign(argv: Sequence[str]) -> int:
    """``bridgekeeper reassign``: kafka-reassign-partitions' flags, text and exit codes."""
    from migrate.reassign.command import main

    return main(argv)


def configure_zk_get(get: argparse.ArgumentParser) -> None:
    get.add_argument("path", help="znode path, absolute in the chroot, e.g. /brokers/topics/foo")
    get.add_argument("--zookeeper", required=True, help="connect string host:port[,host:port][/chroot]")
    add_tls_flag(get)
    get.add_argument("--timeout", type=seconds, default=10.0, help="connect timeout in seconds")
    get.set_defaults(func=cmd_zk_get)


def configure_zk_scram(scram: argparse.ArgumentParser) -> None:
    from controller.credential_flags import VISIBLE, add_identity_flags
    from controller.security.scram import MAX_ITERATIONS, MECHANISMS

    scram.add_argument("--zookeeper", required=True, help="connect string host:port[,host:port][/chroot]")
    add_tls_flag(scram)
    scram.add_argument("--user", required=True, help="the user (principal User:<user>)")
    scram.add_argument(
        "--mechanism",
        default="SCRAM-SHA-256",
        choices=sorted(MECHANISMS),
        help="the credential's mechanism (default SCRAM-SHA-256)",
    )
    what = scram.add_mutually_exclusive_group(required=True)
    what.add_argument("--password", help=f"set the credential from this password; {VISIBLE}: prefer --password-file")
    what.add_argument(
        "--password-file",
        metavar="FILE",
        default=None,
        help="set the credential from the password this file holds (a trailing newline is dropped; chmod 600 it)",
    )
    what.add_argument("--delete", action="store_true", help="delete the credential")
    minimum = min(floor for _hash, floor in MECHANISMS.values())
    scram.add_argument(
        "--iterations", type=positive_int, default=4096, help=f"{minimum}-{MAX_ITERATIONS} (default 4096)"
    )
    add_identity_flags(scram, "zk", "the ZooKeeper digest identity the credential is written with")
    # --zk-identity without the scheme (USER:PASSWORD): hidden from --help, accepted so scripts passing it work.
    scram.add_argument("--zk-digest", metavar="USER:PASSWORD", default=None, help=argparse.SUPPRESS)
    scram.add_argument("--timeout", type=seconds, default=10.0, help="connect timeout in seconds")
    scram.set_defaults(func=cmd_zk_scram)
