"""The small operator commands: ``zk get`` (read one znode as Kafka would decode it), ``zk scram`` (write a
SCRAM credential the way ``kafka-configs --zookeeper`` does) and the ``reassign`` entry point. Each command imports
what it needs when it runs, so ``bridgekeeper --help`` stays fast and the node never pays for the tools.
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import sys
from collections.abc import Callable, Sequence
from typing import Any

import orjson

from controller.cliutil import positive_int
from migrate.connect import add_tls_flag


def cmd_zk_get(args: argparse.Namespace) -> int:
    """Print a znode decoded with Kafka's rules, so operators can read any cluster's metadata."""
    from migrate.connect import connect
    from zkmodel.errors import ZnodeFormatError
    from zkmodel.registry import decode_znode

    session = connect(args.zookeeper, name="zk-get", timeout=args.timeout, read_only=True,
                      session_timeout_ms=int(args.timeout * 1000),
                      tls_config_file=args.zk_tls_config_file)  # fmt: skip
    try:
        found = session.get(args.path)
    finally:
        session.close()
    if found is None:
        print(f"error: no znode at {args.path}", file=sys.stderr)
        return 1
    data, stat = found
    try:
        decoded = decode_znode(args.path, data)
    except ZnodeFormatError as exc:
        print(f"error: {exc}", file=sys.stderr)
        print(f"raw: {data!r}", file=sys.stderr)
        return 1
    out = {"path": args.path, "version": stat.version, "czxid": stat.czxid, "ephemeral": stat.ephemeralOwner != 0}
    out["raw"] = (data or b"").decode("utf-8", errors="replace")
    out["decoded"] = _jsonable(decoded)
    print(orjson.dumps(out, option=orjson.OPT_INDENT_2).decode())
    return 0


def cmd_zk_scram(args: argparse.Namespace) -> int:
    from controller.store.scram import ScramAdminError, alter_scram
    from controller.zk.session import ZkSession, ZkUnavailable
    from migrate.connect import zk_tls

    auth: list[tuple[str, str]] = []
    if args.zk_digest is not None:
        if ":" not in args.zk_digest or args.zk_digest.startswith(":"):
            print("error: --zk-digest must be user:password", file=sys.stderr)
            return 2
        auth = [("digest", args.zk_digest)]
    try:
        tls = zk_tls(args.zk_tls_config_file)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    session = ZkSession(args.zookeeper, auth=auth, name="scram-admin", tls=tls)
    try:
        session.start(timeout=args.timeout)
    except ZkUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        print(alter_scram(session, args.user, args.mechanism, password=None if args.delete else args.password,
                          iterations=args.iterations))  # fmt: skip
        return 0
    except ScramAdminError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
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


#: Root commands that parse their own arguments (the root parser hands them everything after the name).
RAW_COMMANDS: dict[str, Callable[[Sequence[str]], int]] = {"reassign": cmd_reassign}


def configure_zk_get(get: argparse.ArgumentParser) -> None:
    get.add_argument("path", help="znode path, e.g. /brokers/topics/foo")
    get.add_argument("--zookeeper", required=True, help="connect string host:port[,host:port][/chroot]")
    add_tls_flag(get)
    get.add_argument("--timeout", type=float, default=10.0, help="connect timeout in seconds")
    get.set_defaults(func=cmd_zk_get)


def configure_zk_scram(scram: argparse.ArgumentParser) -> None:
    scram.add_argument("--zookeeper", required=True, help="connect string host:port[,host:port][/chroot]")
    add_tls_flag(scram)
    scram.add_argument("--user", required=True, help="the user (principal User:<user>)")
    scram.add_argument("--mechanism", default="SCRAM-SHA-256", help="SCRAM-SHA-256 (default) or SCRAM-SHA-512")
    what = scram.add_mutually_exclusive_group(required=True)
    what.add_argument("--password", help="set the credential from this password")
    what.add_argument("--delete", action="store_true", help="delete the credential")
    scram.add_argument("--iterations", type=positive_int, default=4096, help="4096-16384 (default 4096)")
    scram.add_argument("--zk-digest", default=None, help="user:password digest identity for ZooKeeper")
    scram.add_argument("--timeout", type=float, default=10.0, help="connect timeout in seconds")
    scram.set_defaults(func=cmd_zk_scram)
