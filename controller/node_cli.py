"""``bridgekeeper node`` (the daemon, started like ``kafka-server-start.sh server.properties``) and
``bridgekeeper health`` (the container health check)."""

from __future__ import annotations

import argparse
import os
import sys

from controller.cliutil import seconds, wait_for_stop_signal
from controller.exits import ExitCode, UsageError


def cmd_node(args: argparse.Namespace) -> int:
    from controller.config import ConfigError, load_config, parse_overrides
    from controller.config_env import properties_from_env
    from controller.node import Node, configure_logging
    from controller.store.registration import BrokerIdInUse
    from controller.zk.session import ZkUnavailable

    if args.properties is not None and args.config is not None and args.properties != args.config:
        raise UsageError(f"two configuration files: {args.properties} and --config {args.config}; give one")
    configure_logging(args.log_level)
    try:
        # Precedence, lowest first: the properties file, KAFKA_* variables (--config-from-env), --set.
        settings = properties_from_env(os.environ) if args.config_from_env else {}
        settings.update(parse_overrides(args.override))
        config = load_config(args.properties or args.config, settings)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"cannot read config file: {exc}") from None
    for warning in config.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    # A node is a handful of threads (wire loop, ZooKeeper I/O, request workers) passing work along; a
    # shorter GIL switch interval than the default 5 ms keeps those hand-offs off the request latency.
    sys.setswitchinterval(0.0005)
    node = Node(config)
    try:
        node.start()
    except ZkUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        node.stop()
        return ExitCode.UNREACHABLE
    except (BrokerIdInUse, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        node.stop()
        return ExitCode.PROBLEM
    print(node.ready_line(), flush=True)
    try:
        wait_for_stop_signal()
    finally:
        node.stop()
    return ExitCode.OK


def configure_node(node: argparse.ArgumentParser) -> None:
    node.add_argument(
        "properties", nargs="?", default=None, metavar="server.properties", help="the node's properties file"
    )
    node.add_argument("--config", default=None, metavar="FILE", help="the properties file (as the positional)")
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


def cmd_health(args: argparse.Namespace) -> int:
    """Exit 0 healthy, 1 unhealthy or unreachable (what a container health check reads: Docker reserves 2),
    2 for a malformed address or client file, decided before connecting."""
    from controller.wire.health import HealthConfigError, client_tls, parse_address, probe

    try:
        parse_address(args.bootstrap_server)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    try:
        tls = client_tls(args.command_config) if args.command_config else None
    except HealthConfigError as exc:
        raise UsageError(str(exc)) from None
    problem = probe(args.bootstrap_server, args.timeout, tls=tls)
    if problem is not None:
        print(f"unhealthy: {problem}", file=sys.stderr)
        return ExitCode.PROBLEM
    print(f"healthy: {args.bootstrap_server} answers ApiVersions")
    return ExitCode.OK


def configure_health(health: argparse.ArgumentParser) -> None:
    health.add_argument("--bootstrap-server", default="127.0.0.1:9092", metavar="HOST:PORT")
    health.add_argument("--timeout", type=seconds, default=5.0, metavar="SECONDS")
    health.add_argument(
        "--command-config",
        metavar="FILE",
        help="Kafka client properties for an SSL or SASL_SSL listener: security.protocol, ssl.truststore.*, "
        "ssl.keystore.* (when the listener wants a client certificate), ssl.endpoint.identification.algorithm",
    )
    health.set_defaults(func=cmd_health)
