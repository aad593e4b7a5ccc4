"""``bridgekeeper rehearse``'s command line. Every flag and input is checked before anything starts or is connected
to (a bad IBP, an unknown drill, a ``--node-set`` for a node that does not exist, an ``--attach`` inventory or
``--from-snapshot`` rows that cannot be read), each refusal one line and exit 2. Exit 0 means every check passed;
1 means the rehearsal ran and something failed (the report says what), or it could not run; 3 means the cluster's
ZooKeeper or Kafka did not answer at the start; 130 interrupted.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from controller.cliutil import per_second, positive_int, seconds
from migrate.snapshot.restore_cli import add_twin_flags

if TYPE_CHECKING:
    from migrate.rehearse.cluster import Cluster
    from migrate.twin.nodes import Launch, TwinNodes

DRILL_NAMES = ("kill-controller", "pause-zookeeper", "restart-during-reassignment", "freeze-controller")
#: Names refused with the drill to use instead, not taken as aliases: "expire-session" would promise a session
#: ended on the server (what the failover soak's expire-session does), while this drill freezes the process.
REFUSED_DRILLS = {"expire-session": "freeze-controller"}
CLIENTS = ("confluent-kafka", "kafka-python")


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a fraction between 0 and 1, got {text!r}") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"expected a fraction between 0 and 1, got {text!r}")
    return value


def _drill(text: str) -> str:
    new = REFUSED_DRILLS.get(text)
    if new is not None:
        raise argparse.ArgumentTypeError(f"drill {text!r} is now {new!r} (it freezes the active controller)")
    return text


def _node_set(text: str) -> tuple[int, str, str]:
    node, sep, setting = text.partition(":")
    key, eq, value = setting.partition("=")
    if not sep or not node.isdigit() or not eq or not key:
        raise argparse.ArgumentTypeError(f"expected BROKER_ID:KEY=VALUE, got {text!r}")
    return int(node), key.strip(), value.strip()


def _output(text: str | None) -> Path | None:
    """``-o/--output``, checked before anything starts: a directory that is empty or not there yet."""
    from controller.exits import UsageError

    if text is None:
        return None
    out_dir = Path(text).resolve()
    if out_dir.exists() and not out_dir.is_dir():
        raise UsageError(f"--output {out_dir} is a file, not a directory")
    try:
        full = out_dir.exists() and any(out_dir.iterdir())
    except OSError as exc:
        raise UsageError(f"--output {out_dir}: {exc.strerror}") from None
    if full:
        raise UsageError(f"--output {out_dir} is not empty (a rehearsal writes its report and artefacts there)")
    return out_dir


def _make_output(out_dir: Path | None) -> Path:
    """The output directory, made once every check has passed (so a refusal leaves nothing behind)."""
    from controller.exits import UsageError

    try:
        if out_dir is None:
            return Path(tempfile.mkdtemp(prefix="bk-rehearse-")).resolve()
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--output {out_dir}: cannot create it: {exc.strerror}") from None
    return out_dir


def cmd_rehearse(args: argparse.Namespace) -> int:
    """Exit 0 every check passed, 1 a check failed (or the rehearsal could not run), 2 flags or input files that
    cannot be used (raised as UsageError before anything is started or connected to), 3 the cluster's ZooKeeper
    or Kafka could not be reached, 130 interrupted (controller.exits' contract; rehearsal.json's ``exit_code``
    is the code returned for a rehearsal that ran)."""
    from controller.config import ConfigError, parse_overrides
    from controller.exits import UsageError
    from migrate.rehearse.cluster import AttachedCluster, ClusterError
    from zkmodel.ibp import parse_ibp_config

    # The cheap checks first, then the inventory, then the rows (which may take a while to read).
    try:
        from_ibp = parse_ibp_config(args.from_ibp)
    except ValueError as exc:
        raise UsageError(f"--from-ibp: {exc}") from None
    try:
        to_ibp = parse_ibp_config(args.to_ibp)
    except ValueError as exc:
        raise UsageError(f"--to-ibp: {exc}") from None
    if to_ibp < from_ibp:
        raise UsageError(f"--to-ibp {to_ibp.version} is below --from-ibp {from_ibp.version}: an IBP cannot be lowered")
    clients = tuple(dict.fromkeys(args.client or CLIENTS))
    try:
        overrides = parse_overrides(args.set)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    if args.from_snapshot and (args.attach is not None or args.nodes is not None):
        raise UsageError(
            "--from-snapshot starts one node per broker registered in the rows: not with "
            + ("--attach" if args.attach is not None else "--nodes")
        )
    if not args.from_snapshot and (args.start_missing or args.max_nodes is not None):
        raise UsageError("--start-missing and --max-nodes choose a twin's nodes: they need --from-snapshot")
    if args.attach is not None:
        if args.lockdown:
            raise UsageError(
                "--lockdown needs the nodes' ZooKeeper identities, which rehearse sets only on the nodes it starts; "
                "on your cluster run 'bridgekeeper lockdown' after the rehearsal"
            )
        if args.node_set or args.set:
            raise UsageError(
                "--set and --node-set configure the nodes rehearse starts; with --attach, configure your nodes"
            )
        if args.nodes is not None:
            raise UsageError("--nodes sets how many nodes rehearse starts; with --attach, the inventory lists them")
    out_dir = _output(args.output)
    attached = None
    if args.attach is not None:
        try:
            attached = AttachedCluster(Path(args.attach), args.drill, bump=to_ibp != from_ibp)
        except ClusterError as exc:  # the inventory: missing, unreadable, not JSON, a key wrong or missing
            raise UsageError(str(exc)) from None
    twin = None
    if args.from_snapshot:
        try:
            twin = _twin(args)
        except ValueError as exc:  # RestoreInputError, TwinError: the rows or the twin's flags
            raise UsageError(str(exc)) from None
        except OSError as exc:  # a rows file that cannot be opened (permissions, a vanished file)
            raise UsageError(f"{exc.filename or 'rows'}: cannot read it: {exc.strerror}") from None
        except KeyboardInterrupt:
            print("interrupted while reading the rows: nothing was started", file=sys.stderr)
            return 130
    try:
        return _start(args, attached, twin, overrides, out_dir, (from_ibp.version, to_ibp.version), clients)
    finally:
        if twin is not None:
            twin.launch.close()


def _start(
    args: argparse.Namespace,
    attached: Cluster | None,
    twin: _Twin | None,
    overrides: dict[str, str],
    out_dir: Path | None,
    ibps: tuple[str, str],
    clients: tuple[str, ...],
) -> int:
    """The last checks (a ``--node-set`` naming a node there is, the output directory made), then the run."""
    from controller.exits import UsageError
    from migrate.rehearse.cluster import ClusterError, OwnedCluster

    from_ibp, to_ibp = ibps
    ids = twin.nodes.broker_ids if twin is not None else list(range(1, (args.nodes or 3) + 1))
    node_overrides: dict[int, dict[str, str]] = {}
    for node, key, value in args.node_set:
        if node not in ids:
            raise UsageError(f"--node-set {node}:{key}: there is no node {node} (nodes are {_ids(ids)})")
        node_overrides.setdefault(node, {})[key] = value
    if "pause-zookeeper" in args.drill and attached is None and args.zk_servers < 3:
        print("note: pause-zookeeper with one ZooKeeper server stalls every node for the pause", file=sys.stderr)
    out_dir = _make_output(out_dir)
    overrides.setdefault("zookeeper.session.timeout.ms", str(args.session_timeout_ms))

    cluster: Cluster
    try:
        if attached is not None:
            cluster = attached
        elif twin is not None:
            cluster = OwnedCluster(
                nodes=len(ids),
                zk_servers=args.zk_servers,
                ibp=from_ibp,
                data_dir=out_dir / "cluster",
                overrides=overrides,
                node_overrides=node_overrides,
                broker_ids=ids,
                racks=twin.nodes.racks,
                before_nodes=twin.launch.before,
                after_nodes=twin.launch.after,
                start_timeout=twin.start_timeout,
                zk_heap_mb=twin.zk_heap_mb,
                start_wave=twin.start_wave,
            )
        else:
            cluster = OwnedCluster(
                nodes=len(ids),
                zk_servers=args.zk_servers,
                ibp=from_ibp,
                data_dir=out_dir / "cluster",
                overrides=overrides,
                node_overrides=node_overrides,
            )
    except ClusterError as exc:
        raise UsageError(str(exc)) from None
    return _run(args, cluster, from_ibp, to_ibp, clients, out_dir, twin)


def _ids(ids: list[int]) -> str:
    return f"{ids[0]}..{ids[-1]}" if ids == list(range(ids[0], ids[-1] + 1)) else ", ".join(map(str, ids))


@dataclass
class _Twin:
    """What ``--from-snapshot`` decided before anything starts."""

    nodes: TwinNodes
    launch: Launch
    absent: frozenset[int]
    info: dict[str, Any]
    start_timeout: float
    zk_heap_mb: int
    start_wave: int | None


def _twin(args: argparse.Namespace) -> _Twin:
    """Read and plan the rows and choose the twin's nodes; raises ValueError naming what cannot be used."""
    from migrate.snapshot.restore import plan, row_files
    from migrate.twin.nodes import Launch, choose, start_timeout, start_wave, zookeeper_heap_mb

    files = row_files(args.from_snapshot)
    p = plan(files, source_chroot=args.source_chroot, acls=args.acls, keep_credentials=args.keep_credentials)
    nodes = choose(p, start_missing=args.start_missing, max_nodes=args.max_nodes)
    production = p.assigned | {r.broker_id for r in p.registrations}
    absent = frozenset(production - set(nodes.broker_ids))
    launch = Launch(
        files, p, nodes, acls=args.acls, keep_credentials=args.keep_credentials, say=lambda m: print(m, file=sys.stderr)
    )
    info = {
        "source": ", ".join(f.name for f in files),
        "brokers": len(nodes.broker_ids),
        "registered": len(p.registrations),
        "topics": p.topics,
        "partitions": p.partitions,
        "absent": sorted(absent),
    }
    timeout = max(90.0, start_timeout(p, len(nodes.broker_ids)))
    return _Twin(nodes, launch, absent, info, timeout, zookeeper_heap_mb(p, len(nodes.broker_ids)), start_wave(p))


def _run(
    args: argparse.Namespace,
    cluster: Cluster,
    from_ibp: str,
    to_ibp: str,
    clients: tuple[str, ...],
    out_dir: Path,
    twin: _Twin | None = None,
) -> int:
    from controller.devstack.localzk import ZooKeeperError
    from controller.exits import CommandError
    from migrate.rehearse.cluster import ClusterError
    from migrate.rehearse.display import Display
    from migrate.rehearse.host import Options
    from migrate.rehearse.load import LoadError
    from migrate.rehearse.report import write_report
    from migrate.rehearse.run import Rehearsal

    opts = Options(
        from_ibp=from_ibp,
        to_ibp=to_ibp,
        out_dir=out_dir,
        drills=list(args.drill),
        lockdown=args.lockdown,
        rate=args.rate,
        clients=clients,
        error_threshold=args.error_threshold,
        step_settle=args.settle,
        isr_timeout=args.isr_timeout,
        min_isr_timeout=args.min_isr_timeout,
        restart_timeout=args.restart_timeout,
        reassignment_timeout=args.reassignment_timeout,
        zk_pause=args.zk_pause,
        session_timeout_ms=args.session_timeout_ms,
        absent=twin.absent if twin is not None else frozenset(),
        twin=twin.info if twin is not None else None,
    )
    with Display() as display:
        display.line(f"rehearsing {from_ibp} -> {to_ibp}; report and artefacts in {out_dir}")
        if twin is not None:
            twin.launch.say = display.line
            for line in twin.nodes.notes():
                display.line(line)
        rehearsal = Rehearsal(opts, cluster, display)
        try:
            doc = rehearsal.run()
        except CommandError:
            raise  # Unreachable (exit 3): the root reports it; nothing ran, so there is no report
        except (ClusterError, ZooKeeperError, LoadError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            print("interrupted: the cluster is being stopped", file=sys.stderr)
            return 130
        except Exception as exc:  # a fault no step expected: name it, keep what was recorded, never a traceback
            doc = rehearsal.document(failure=f"{type(exc).__name__}: {exc}")
            write_report(doc, out_dir)
            print(
                f"error: the rehearsal stopped on {type(exc).__name__}: {exc}; what it recorded until then is in "
                f"{out_dir / 'report.html'}",
                file=sys.stderr,
            )
            return 1
        finally:
            display.status("stopping")
            rehearsal.close()
        html, json_path = write_report(doc, out_dir)
    failed = sorted({c["name"] for c in doc["checks"] if c["verdict"] == "fail"})
    verdict = "PASSED" if doc["passed"] else "FAILED" + (f": {', '.join(failed)}" if failed else "")
    print(f"rehearsal {verdict}\nreport: {html}\njson: {json_path}")
    return doc["exit_code"]


def configure(r: argparse.ArgumentParser) -> None:
    r.description = (
        "Start a ZooKeeper ensemble and N nodes at --from-ibp (or --attach to a running cluster), roll "
        "every node (same IBP), roll again with --to-ibp, optionally lock ZooKeeper down, with real clients "
        "writing throughout and named checks after every step. Writes report.html and rehearsal.json; exit 0 "
        "only when every check passed."
    )
    r.add_argument("--from-ibp", required=True, help="the IBP the cluster runs now, e.g. 3.3-IV3")
    r.add_argument("--to-ibp", required=True, help="the IBP to bump to in the second roll, e.g. 3.4-IV0")
    r.add_argument("--nodes", type=positive_int, default=None, help="nodes to start (default 3)")
    r.add_argument("--zk-servers", type=int, choices=(1, 3), default=3, help="ZooKeeper servers to start (default 3)")
    r.add_argument("--attach", metavar="INVENTORY", help="rehearse on a running cluster described by this JSON file")
    r.add_argument("--lockdown", action="store_true", help="lock ZooKeeper's ACLs after the bump (lockdown apply)")
    r.add_argument(
        "--drill",
        action="append",
        default=[],
        type=_drill,
        choices=DRILL_NAMES,
        help="a fault to inject mid-roll (repeatable)",
    )
    r.add_argument(
        "-o",
        "--output",
        metavar="DIR",
        help="empty directory for the report and artefacts (default: a new temporary one)",
    )
    # A hidden alias, so scripts that spell it --out keep running.
    r.add_argument("--out", dest="output", help=argparse.SUPPRESS)
    r.add_argument("--rate", type=per_second, default=8.0, help="client operations per second, all clients (default 8)")
    r.add_argument("--client", action="append", choices=CLIENTS, help="client libraries for the load (default both)")
    r.add_argument(
        "--error-threshold",
        type=_fraction,
        default=0.1,
        help="largest share of failed client operations per step (default 0.1)",
    )
    r.add_argument("--isr-timeout", type=seconds, default=60.0, help="wait for a node to rejoin its ISRs (s)")
    r.add_argument(
        "--min-isr-timeout",
        type=seconds,
        default=60.0,
        help="wait for a node to be safe to restart (min.insync.replicas) (s)",
    )
    r.add_argument("--restart-timeout", type=seconds, default=90.0, help="wait for a node to start (s)")
    r.add_argument("--reassignment-timeout", type=seconds, default=120.0, help="wait for reassignments (s)")
    r.add_argument(
        "--settle",
        type=seconds,
        default=2.0,
        help="seconds of client load after each restart before the step's checks (default 2)",
    )
    r.add_argument("--zk-pause", type=seconds, default=4.0, help="how long pause-zookeeper freezes a server (s)")
    r.add_argument(
        "--session-timeout-ms",
        type=positive_int,
        default=6000,
        help="zookeeper.session.timeout.ms of the nodes rehearse starts (default 6000)",
    )
    r.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="node config for every node")
    r.add_argument(
        "--node-set",
        action="append",
        default=[],
        type=_node_set,
        metavar="ID:KEY=VALUE",
        help="node config for one node (e.g. a deliberate misconfiguration)",
    )
    twin = r.add_argument_group("on a twin of a production cluster (--from-snapshot)")
    add_twin_flags(
        twin,
        from_snapshot="rehearse on a twin: restore these rows (snapshot export/parse output) into the rehearsal's "
        "ZooKeeper and start one node per broker registered in them, with its id and rack",
        max_nodes="start at most N of the twin's nodes (the production controller first)",
    )
    r.set_defaults(func=cmd_rehearse)
