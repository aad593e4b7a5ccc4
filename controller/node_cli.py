"""``bridgekeeper node`` (the daemon, started like ``kafka-server-start.sh server.properties``) and
``bridgekeeper health`` (the container health check)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from controller.cliutil import StopSignals, seconds
from controller.exits import ExitCode, UsageError


def cmd_node(args: argparse.Namespace) -> int:
    from controller import heap
    from controller.config import ConfigError, load_config, parse_overrides
    from controller.config.env import properties_from_env
    from controller.logs import LogFiles, LogLevels, LogSettingsError, configure_logging, levels_from_env
    from controller.node import Node
    from controller.store.chroot_guard import ForeignBrokers
    from controller.store.registration import BrokerIdInUse
    from controller.zk.errors import ZkUnavailable

    if args.properties is not None and args.config is not None and args.properties != args.config:
        raise UsageError(f"two configuration files: {args.properties} and --config {args.config}; give one")
    try:
        # Precedence, lowest first: the properties file, KAFKA_* variables (--config-from-env), --set.
        settings = properties_from_env(os.environ) if args.config_from_env else {}
        settings.update(parse_overrides(args.override))
        config = load_config(args.properties or args.config, settings)
        # Log levels from the variables Kafka's image reads for log4j; --log-level wins over the root one.
        levels = levels_from_env(os.environ) if args.config_from_env else LogLevels()
    except (ConfigError, LogSettingsError) as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"cannot read config file: {exc}") from None
    files = LogFiles(Path(config.log_dir), config.log_max_bytes, config.log_backup_count) if config.log_dir else None
    try:
        configure_logging(args.log_level, files=files, levels=levels)
    except OSError as exc:
        raise UsageError(f"cannot write log files in {config.log_dir} (bridgekeeper.log.dir): {exc}") from None
    for warning in config.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    # A node is a handful of threads (wire loop, ZooKeeper I/O, request workers) passing work along; a
    # shorter GIL switch interval than the default 5 ms keeps those hand-offs off the request latency.
    sys.setswitchinterval(0.0005)
    heap.manage()  # this process is the node: its loaded metadata leaves the collector's full scans
    node = Node(config)
    try:
        node.start()
    except ZkUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        node.stop()
        return ExitCode.UNREACHABLE
    except (BrokerIdInUse, ForeignBrokers, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        node.stop()
        return ExitCode.PROBLEM
    # Handlers before the ready line: whoever waits for it may signal at once and must get a graceful stop.
    stop = StopSignals()
    print(node.ready_line(), flush=True)
    try:
        stop.wait()
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
    node.add_argument(
        "--log-level",
        default=None,
        choices=("DEBUG", "INFO", "WARNING", "ERROR"),
        help="the root log level (default INFO, or KAFKA_LOG4J_ROOT_LOGLEVEL with --config-from-env)",
    )
    node.set_defaults(func=cmd_node)


def cmd_health(args: argparse.Namespace) -> int:
    """Exit 0 healthy, 1 unhealthy or unreachable (what a container health check reads: Docker reserves 2),
    2 for a malformed address, URL, client file or node configuration, decided before connecting.

    With ``--config-from-env`` (or ``--config``) the check reads the node's own settings, as ``node`` does: the
    listener to probe and its TLS material, and the metrics endpoint where the node says how long its ZooKeeper
    session has been disconnected. Flags given explicitly win over what the configuration says."""
    from controller.config import ConfigError, load_config
    from controller.config.env import properties_from_env
    from controller.wire.health import (
        HealthConfigError,
        Target,
        check_metrics_url,
        client_tls,
        parse_address,
        probe,
        target_from_config,
        zookeeper_session,
    )

    target: Target | None = None
    if args.config_from_env or args.config is not None:
        try:
            settings = properties_from_env(os.environ) if args.config_from_env else {}
            target = target_from_config(load_config(args.config, settings), args.listener)
        except (ConfigError, HealthConfigError) as exc:
            raise UsageError(str(exc)) from None
    elif args.listener is not None:
        raise UsageError("--listener names a listener of the node's configuration: give --config-from-env or --config")
    address = args.bootstrap_server or (target.address if target is not None else DEFAULT_BOOTSTRAP)
    metrics_url = args.metrics_url or (target.metrics_url if target is not None else None)
    try:
        parse_address(address)
        if metrics_url is not None:
            check_metrics_url(metrics_url)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    try:
        tls = client_tls(args.command_config) if args.command_config else (target.tls if target else None)
    except HealthConfigError as exc:
        raise UsageError(str(exc)) from None
    problem = probe(address, args.timeout, tls=tls)
    if problem is not None:
        print(f"unhealthy: {problem}", file=sys.stderr)
        return ExitCode.PROBLEM
    healthy = f"healthy: {address} answers ApiVersions"
    if metrics_url is not None:
        problem, summary = zookeeper_session(metrics_url, args.timeout)
        if problem is not None:
            print(f"unhealthy: {problem}", file=sys.stderr)
            return ExitCode.PROBLEM
        healthy += f"; {summary}"
    elif target is not None and target.unchecked is not None:
        healthy += f"; ZooKeeper session not checked: {target.unchecked}"
    print(healthy)
    return ExitCode.OK


#: What ``health`` probes when neither --bootstrap-server nor a configuration says otherwise.
DEFAULT_BOOTSTRAP = "127.0.0.1:9092"


def configure_health(health: argparse.ArgumentParser) -> None:
    health.add_argument(
        "--bootstrap-server",
        default=None,
        metavar="HOST:PORT",
        help=f"the listener to probe (default: the configuration's first listener, else {DEFAULT_BOOTSTRAP})",
    )
    health.add_argument("--timeout", type=seconds, default=5.0, metavar="SECONDS")
    health.add_argument(
        "--command-config",
        metavar="FILE",
        help="Kafka client properties for an SSL or SASL_SSL listener: security.protocol, ssl.truststore.*, "
        "ssl.keystore.* (when the listener wants a client certificate), ssl.endpoint.identification.algorithm",
    )
    health.add_argument(
        "--metrics-url",
        metavar="URL",
        help="the node's metrics endpoint (http://HOST:PORT/metrics): unhealthy when its ZooKeeper session has been "
        "disconnected longer than the session timeout (default: from the configuration, when it fixes the port)",
    )
    health.add_argument(
        "--config-from-env",
        action="store_true",
        help="read the node's KAFKA_* environment variables as `node --config-from-env` does: the listener, its "
        "security protocol and TLS material, and the metrics host and port",
    )
    health.add_argument(
        "--config", default=None, metavar="FILE", help="the node's properties file (under the variables, as for node)"
    )
    health.add_argument(
        "--listener", default=None, metavar="NAME", help="the configured listener to probe (default: the first)"
    )
    health.set_defaults(func=cmd_health)
