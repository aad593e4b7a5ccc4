"""``bridgekeeper up`` and ``bridgekeeper zk run``: the local stack's commands, registered on the root parser.

Exit codes (controller.exits): 0 stopped by Ctrl-C/SIGTERM after serving; 1 refused on what runs here already (a
``--base-port``/``--port`` another process listens on, a ``--data-dir`` a running stack holds) or failed to start;
2 a bad flag or setting, or a ``--data-dir`` that is a file, decided before anything starts; 130 interrupted while
starting.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from controller.cliutil import StopSignals, port, positive_int
from controller.exits import UsageError

if TYPE_CHECKING:
    from controller.devstack.localzk import LocalZooKeeper
    from controller.devstack.stack import Stack


def cmd_zk_run(args: argparse.Namespace) -> int:
    from controller.devstack.localzk import LocalZooKeeper
    from controller.devstack.stack import StackError, data_dir_ready, lock_data_dir, refuse_ports_in_use

    if args.port is not None and args.servers != 1:
        raise UsageError("--port fixes a standalone server's port; an ensemble (--servers 3 or 5) uses free ports")
    data_dir = Path(args.data_dir).resolve() if args.data_dir else None
    lock = None
    if data_dir is not None:
        try:
            data_dir_ready(data_dir)
            lock = lock_data_dir(data_dir)  # StackRefused (exit 1) while another server runs on it
        except StackError as exc:
            raise UsageError(str(exc)) from None
    try:
        if args.port is not None:
            refuse_ports_in_use([args.port], "choose another --port, or omit it for a free port")
        zk = LocalZooKeeper(
            args.servers, base_dir=data_dir, client_port=args.port, tick_ms=args.tick_ms, force_sync=args.force_sync
        )
        return _serve_zookeeper(zk)
    finally:
        if lock is not None:
            lock.close()


def _serve_zookeeper(zk: LocalZooKeeper) -> int:
    from controller.devstack.localzk import ZooKeeperError

    print(f"starting ZooKeeper ({zk.servers} server{'s' if zk.servers > 1 else ''}) ...", flush=True)
    try:
        zk.start()
    except ZooKeeperError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    stop = StopSignals()  # before READY: whoever waits for it may signal at once
    try:
        modes = ", ".join(f"{m.myid}={zk.mode(m.myid)}" for m in zk.members)
        print(f"ZooKeeper serving on {zk.connect_string} ({modes}); data in {zk.base_dir}", flush=True)
        print(f"READY zookeeper={zk.connect_string}", flush=True)
        print("press Ctrl-C to stop", flush=True)
        stop.wait()
        print("stopping ZooKeeper ...", flush=True)
    finally:
        zk.stop()
    print("stopped", flush=True)
    return 0


def tls_hint(stack: Stack) -> str:
    """How to point the usual clients at a ``--tls`` stack (the README has the same)."""
    d, first = stack.tls_dir, f"127.0.0.1:{stack.nodes[0].port}"
    return (
        f"TLS material in {d} (ca.crt; client.crt/client.key for mutual TLS):\n"
        f"  confluent-kafka: {{'bootstrap.servers': '{first}', 'security.protocol': 'SSL', "
        f"'ssl.ca.location': '{d}/ca.crt'}}\n"
        f"  kafka-python:    KafkaAdminClient(bootstrap_servers='{first}', security_protocol='SSL', "
        f"ssl_cafile='{d}/ca.crt')\n"
        f"  kcat:            kcat -b {first} -X security.protocol=ssl -X ssl.ca.location={d}/ca.crt -L"
    )


def cmd_up(args: argparse.Namespace) -> int:
    from controller.config import ConfigError, parse_overrides
    from controller.devstack.stack import Stack, StackError

    try:
        stack = Stack(
            nodes=3 if args.nodes is None else args.nodes,
            data_dir=Path(args.data_dir).resolve() if args.data_dir else None,
            base_port=args.base_port,
            ibp=args.ibp,
            overrides=parse_overrides(args.set),
            zk_servers=args.zk_servers,
            tls=args.tls,
        )
    except (StackError, ConfigError) as exc:
        raise UsageError(str(exc)) from None
    return run_stack(stack)


def run_stack(stack: Stack, *, timeout: float = 60.0, notes: Callable[[Stack], list[str]] | None = None) -> int:
    """Start ``stack``, print its READY line (and ``notes`` after it), serve until SIGINT/SIGTERM, stop it.
    Exit 2 for a node configuration refused before anything started, 1 for anything else that failed."""
    from controller.devstack.localzk import ZooKeeperError
    from controller.devstack.stack import StackError

    def say(msg: str) -> None:
        print(msg, flush=True)

    try:
        stack.start(progress=say, timeout=timeout)
    except StackError as exc:
        print(f"error: {exc}", file=sys.stderr)
        stack.stop()
        return 2 if "invalid node configuration" in str(exc) else 1
    except ZooKeeperError as exc:
        print(f"error: {exc}", file=sys.stderr)
        stack.stop()
        return 1
    except KeyboardInterrupt:
        print("interrupted: stopping", file=sys.stderr)
        stack.stop()
        return 130
    stop = StopSignals()  # before READY: whoever waits for it may signal at once
    try:
        say(stack.ready_line())
        if stack.tls_dir is not None:
            say(tls_hint(stack))
        for line in notes(stack) if notes is not None else ():
            say(line)
        say("press Ctrl-C to stop")
        stop.wait()
    finally:
        stack.stop(progress=say)
    say("stopped")
    return 0


def configure_up(up: argparse.ArgumentParser) -> None:
    """``bridgekeeper up``'s flags."""
    up.add_argument("--nodes", type=positive_int, default=None, help="number of nodes (broker+controller), default 3")
    up.add_argument("--data-dir", default=None, help="keep ZooKeeper data, node configs and logs here")
    up.add_argument("--base-port", type=port, default=None, help="ZooKeeper on P, node i on P+i, metrics on P+100+i")
    up.add_argument("--ibp", default=None, help="inter.broker.protocol.version for every node (default 3.9-IV0)")
    up.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="node config, repeatable")
    up.add_argument("--zk-servers", type=int, choices=(1, 3), default=1, help="standalone or 3-node ensemble")
    up.add_argument(
        "--tls",
        action="store_true",
        help="SSL listeners, TLS between nodes and to ZooKeeper, with a throw-away CA in <data-dir>/tls",
    )
    up.set_defaults(func=cmd_up)


def configure_zk_run(run: argparse.ArgumentParser) -> None:
    """``bridgekeeper zk run``'s flags."""
    run.add_argument("--servers", type=int, choices=(1, 3, 5), default=1, help="1 = standalone, 3/5 = ensemble")
    run.add_argument("--port", type=port, default=None, help="client port (standalone only; default: a free port)")
    run.add_argument("--data-dir", default=None, help="keep data here instead of a temporary directory")
    run.add_argument("--tick-ms", type=positive_int, default=2000, help="ZooKeeper tickTime (default 2000)")
    run.add_argument("--force-sync", action="store_true", help="fsync every write (slower, durable)")
    run.set_defaults(func=cmd_zk_run)
