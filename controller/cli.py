"""The ``bridgekeeper`` command: the root parser only.

It mounts ``node`` and ``version`` here, the local stack's commands (``up``, ``zk run``) from
``controller.devstack.cli`` and the operator tools (``zk get``, ``zk scram``, and the migration tools to come)
from ``migrate.cli``. Each command's code lives with what it runs.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from importlib import metadata

from controller.cliutil import wait_for_stop_signal
from controller.devstack import cli as devstack_cli
from migrate import cli as migrate_cli


def _version() -> str:
    try:
        return metadata.version("bridgekeeper")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def cmd_version(_: argparse.Namespace) -> int:
    print(f"bridgekeeper {_version()}")
    return 0


def cmd_node(args: argparse.Namespace) -> int:
    from controller.config import ConfigError, load_config, parse_overrides
    from controller.config_env import properties_from_env
    from controller.node import Node, configure_logging
    from controller.store.registration import BrokerIdInUse
    from controller.zk.session import ZkUnavailable

    configure_logging(args.log_level)
    try:
        # Precedence, lowest first: the properties file, KAFKA_* variables (--config-from-env), --set.
        settings = properties_from_env(os.environ) if args.config_from_env else {}
        settings.update(parse_overrides(args.override))
        config = load_config(args.config, settings)
    except ConfigError as exc:
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
        wait_for_stop_signal()
    finally:
        node.stop()
    return 0


def cmd_health(args: argparse.Namespace) -> int:
    from controller.wire.health import HealthConfigError, client_tls, probe

    try:
        tls = client_tls(args.command_config) if args.command_config else None
    except HealthConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    problem = probe(args.bootstrap_server, args.timeout, tls=tls)
    if problem is not None:
        print(f"unhealthy: {problem}", file=sys.stderr)
        return 1
    print(f"healthy: {args.bootstrap_server} answers ApiVersions")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bridgekeeper", description="Kafka-compatible, ZooKeeper-backed bridge-release control plane."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("version", help="print the version")
    p.set_defaults(func=cmd_version)

    node = sub.add_parser("node", help="run one node from a Kafka-style properties file")
    node.add_argument("--config", default=None, help="server.properties")
    node.add_argument(
        "--override", "--set", action="append", default=[], metavar="KEY=VALUE", help="config override, repeatable"
    )
    node.add_argument(
        "--config-from-env",
        action="store_true",
        help="also read KAFKA_* environment variables as properties, the way Kafka's image does "
        "(KAFKA_INTER_BROKER_PROTOCOL_VERSION -> inter.broker.protocol.version; __ for _, ___ for -); "
        "they override the file, --set overrides them",
    )
    node.add_argument("--log-level", default="INFO", choices=("DEBUG", "INFO", "WARNING", "ERROR"))
    node.set_defaults(func=cmd_node)

    health = sub.add_parser(
        "health", help="exit 0 when a node answers ApiVersions (the container health check), 1 otherwise"
    )
    health.add_argument("--bootstrap-server", default="127.0.0.1:9092", metavar="HOST:PORT")
    health.add_argument("--timeout", type=float, default=5.0, metavar="SECONDS")
    health.add_argument(
        "--command-config",
        metavar="FILE",
        help="Kafka client properties for an SSL or SASL_SSL listener: security.protocol, ssl.truststore.*, "
        "ssl.keystore.* (when the listener wants a client certificate), ssl.endpoint.identification.algorithm",
    )
    health.set_defaults(func=cmd_health)

    zk = sub.add_parser("zk", help="local ZooKeeper and znode tools")
    zsub = zk.add_subparsers(dest="zk_command", required=True, metavar="ZK_COMMAND")
    devstack_cli.register(sub, zsub)
    migrate_cli.register(sub, zsub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    # Tools that keep another program's command line (kafka-reassign-partitions' flags, errors and exit
    # codes) parse their own arguments; argparse would answer their mistakes in its own words.
    if args_list and args_list[0] in migrate_cli.RAW_COMMANDS:
        return migrate_cli.RAW_COMMANDS[args_list[0]](args_list[1:])
    args = build_parser().parse_args(args_list)
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
