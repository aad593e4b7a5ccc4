"""The ``bridgekeeper`` command: one entry point for the node, the local stack and operator tools."""

from __future__ import annotations

import argparse
import signal
import sys
import time
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import orjson


def _version() -> str:
    try:
        return metadata.version("bridgekeeper")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def cmd_version(_: argparse.Namespace) -> int:
    print(f"bridgekeeper {_version()}")
    return 0


def _wait_for_stop_signal() -> int:
    """Block until SIGINT or SIGTERM; returns the signal number."""
    got: list[int] = []

    def handler(signum: int, _frame: Any) -> None:
        # Only a list append: a handler that takes a lock (Event.set) deadlocks when a second signal
        # arrives while the first handler holds it, and the node would then ignore SIGTERM for good.
        got.append(signum)

    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)
    while not got:
        time.sleep(0.2)
    return got[0]


def cmd_zk_run(args: argparse.Namespace) -> int:
    from controller.devstack.localzk import LocalZooKeeper, ZooKeeperError

    data_dir = Path(args.data_dir).resolve() if args.data_dir else None
    if data_dir is not None:
        data_dir.mkdir(parents=True, exist_ok=True)
    zk = LocalZooKeeper(
        args.servers, base_dir=data_dir, client_port=args.port, tick_ms=args.tick_ms, force_sync=args.force_sync
    )
    print(f"starting ZooKeeper ({args.servers} server{'s' if args.servers > 1 else ''}) ...", flush=True)
    try:
        zk.start()
    except ZooKeeperError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    try:
        modes = ", ".join(f"{m.myid}={zk.mode(m.myid)}" for m in zk.members)
        print(f"ZooKeeper serving on {zk.connect_string} ({modes}); data in {zk.base_dir}", flush=True)
        print(f"READY zookeeper={zk.connect_string}", flush=True)
        print("press Ctrl-C to stop", flush=True)
        _wait_for_stop_signal()
        print("stopping ZooKeeper ...", flush=True)
    finally:
        zk.stop()
    print("stopped", flush=True)
    return 0


def cmd_zk_get(args: argparse.Namespace) -> int:
    """Print a znode decoded with Kafka's rules, so operators can read any cluster's metadata."""
    from kazoo.client import KazooClient
    from kazoo.exceptions import NoNodeError

    from zkmodel.errors import ZnodeFormatError
    from zkmodel.registry import decode_znode

    client = KazooClient(hosts=args.zookeeper, timeout=args.timeout, read_only=True)
    try:
        client.start(timeout=args.timeout)
    except Exception as exc:  # kazoo raises its own timeout type
        print(f"error: cannot connect to ZooKeeper at {args.zookeeper}: {exc}", file=sys.stderr)
        return 2
    try:
        data, stat = client.get(args.path)
    except NoNodeError:
        print(f"error: no znode at {args.path}", file=sys.stderr)
        return 1
    finally:
        client.stop()
        client.close()
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
    from controller.store.scram_admin import ScramAdminError, alter_scram
    from controller.zk.session import ZkSession, ZkUnavailable

    auth: list[tuple[str, str]] = []
    if args.zk_digest is not None:
        if ":" not in args.zk_digest or args.zk_digest.startswith(":"):
            print("error: --zk-digest must be user:password", file=sys.stderr)
            return 2
        auth = [("digest", args.zk_digest)]
    session = ZkSession(args.zookeeper, auth=auth, name="scram-admin")
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
    import dataclasses
    import enum

    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


def cmd_node(args: argparse.Namespace) -> int:
    from controller.config import ConfigError, load_config
    from controller.devstack.stack import StackError, parse_sets
    from controller.node import Node, configure_logging
    from controller.store.registration import BrokerIdInUse
    from controller.zk.session import ZkUnavailable

    configure_logging(args.log_level)
    try:
        config = load_config(args.config, parse_sets(args.override))
    except (ConfigError, StackError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: cannot read config file: {exc}", file=sys.stderr)
        return 2
    for warning in config.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    # A node is a handful of threads (wire loop, ZooKeeper I/O, request workers) passing work along; a
    # shorter GIL switch interval than the default 5 ms keeps those hand-offs off the request latency.
    sys.setswitchinterval(0.0005)
    node = Node(config)
    try:
        node.start()
    except (ZkUnavailable, BrokerIdInUse, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        node.stop()
        return 1
    print(node.ready_line(), flush=True)
    try:
        _wait_for_stop_signal()
    finally:
        node.stop()
    return 0


def cmd_up(args: argparse.Namespace) -> int:
    from controller.devstack.localzk import ZooKeeperError
    from controller.devstack.stack import Stack, StackError, parse_sets

    def say(msg: str) -> None:
        print(msg, flush=True)

    try:
        stack = Stack(
            nodes=args.nodes,
            data_dir=Path(args.data_dir).resolve() if args.data_dir else None,
            base_port=args.base_port,
            ibp=args.ibp,
            overrides=parse_sets(args.set),
            zk_servers=args.zk_servers,
        )
    except StackError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        stack.start(progress=say)
    except StackError as exc:
        print(f"error: {exc}", file=sys.stderr)
        stack.stop()
        return 2 if "invalid node configuration" in str(exc) else 1
    except ZooKeeperError as exc:
        print(f"error: {exc}", file=sys.stderr)
        stack.stop()
        return 1
    try:
        say(stack.ready_line())
        say("press Ctrl-C to stop")
        _wait_for_stop_signal()
    finally:
        stack.stop(progress=say)
    say("stopped")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bridgekeeper", description="Kafka-compatible, ZooKeeper-backed bridge-release control plane."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("version", help="print the version")
    p.set_defaults(func=cmd_version)

    up = sub.add_parser("up", help="run a local ZooKeeper and N nodes in the foreground until Ctrl-C")
    up.add_argument("--nodes", type=_positive, default=3, help="number of nodes (broker+controller), default 3")
    up.add_argument("--data-dir", default=None, help="keep ZooKeeper data, node configs and logs here")
    up.add_argument("--base-port", type=_port, default=None, help="ZooKeeper on P, node i on P+i, metrics on P+100+i")
    up.add_argument("--ibp", default=None, help="inter.broker.protocol.version for every node (default 3.9-IV0)")
    up.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="node config, repeatable")
    up.add_argument("--zk-servers", type=int, choices=(1, 3), default=1, help="standalone or 3-node ensemble")
    up.set_defaults(func=cmd_up)

    node = sub.add_parser("node", help="run one node from a Kafka-style properties file")
    node.add_argument("--config", default=None, help="server.properties")
    node.add_argument(
        "--override", "--set", action="append", default=[], metavar="KEY=VALUE", help="config override, repeatable"
    )
    node.add_argument("--log-level", default="INFO", choices=("DEBUG", "INFO", "WARNING", "ERROR"))
    node.set_defaults(func=cmd_node)

    zk = sub.add_parser("zk", help="local ZooKeeper and znode tools")
    zsub = zk.add_subparsers(dest="zk_command", required=True, metavar="ZK_COMMAND")
    run = zsub.add_parser("run", help="run a local ZooKeeper (Debian package) in the foreground until Ctrl-C")
    run.add_argument("--servers", type=int, choices=(1, 3, 5), default=1, help="1 = standalone, 3/5 = ensemble")
    run.add_argument("--port", type=_port, default=None, help="client port (standalone only; default: a free port)")
    run.add_argument("--data-dir", default=None, help="keep data here instead of a temporary directory")
    run.add_argument("--tick-ms", type=_positive, default=2000, help="ZooKeeper tickTime (default 2000)")
    run.add_argument("--force-sync", action="store_true", help="fsync every write (slower, durable)")
    run.set_defaults(func=cmd_zk_run)

    get = zsub.add_parser("get", help="read one znode and decode it with Kafka's format rules")
    get.add_argument("path", help="znode path, e.g. /brokers/topics/foo")
    get.add_argument("--zookeeper", required=True, help="connect string host:port[,host:port][/chroot]")
    get.add_argument("--timeout", type=float, default=10.0, help="connect timeout in seconds")
    get.set_defaults(func=cmd_zk_get)

    scram = zsub.add_parser(
        "scram",
        help="set or delete a user's SCRAM credential in ZooKeeper (kafka-configs --zookeeper), e.g. to "
        "bootstrap the inter-broker user before any node starts",
    )
    scram.add_argument("--zookeeper", required=True, help="connect string host:port[,host:port][/chroot]")
    scram.add_argument("--user", required=True, help="the user (principal User:<user>)")
    scram.add_argument("--mechanism", default="SCRAM-SHA-256", help="SCRAM-SHA-256 (default) or SCRAM-SHA-512")
    what = scram.add_mutually_exclusive_group(required=True)
    what.add_argument("--password", help="set the credential from this password")
    what.add_argument("--delete", action="store_true", help="delete the credential")
    scram.add_argument("--iterations", type=_positive, default=4096, help="4096-16384 (default 4096)")
    scram.add_argument("--zk-digest", default=None, help="user:password digest identity for ZooKeeper")
    scram.add_argument("--timeout", type=float, default=10.0, help="connect timeout in seconds")
    scram.set_defaults(func=cmd_zk_scram)
    return parser


def _port(text: str) -> int:
    value = _positive(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"port must be 1-65535, got {text}")
    return value


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
