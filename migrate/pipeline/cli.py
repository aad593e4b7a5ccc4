"""``bridgekeeper pipeline model|report|plan|package``: the fleet pipeline from snapshot rows to model tables, a
readiness report and reassignment plans; and the packed Python environment its executors run on.

The commands return the exit codes of the contract in ``controller/exits.py`` (as ints: the pipeline runs where no
node is, and imports nothing of ``controller``): 0 done; 1 ``report --fail-on`` found a finding of that severity or
worse, or a plan could not meet every hard constraint (the plan is still written, with the violations in the
report), or a plan request the data refuses (a broker to decommission that the cluster does not have); 2 a flag,
input or output that cannot be used, decided before Spark starts (a typo costs no JVM start), one line naming it;
130 interrupted (the root's). On a cluster: executors whose Python cannot run the job (a missing module, a
Python they do not have, another Python version) end the command with one line saying what they lacked, exit 2;
a master that does not answer, exit 3 (checked before the JVM starts). Other errors Spark raises once it runs are
the root's: exit 1, one line.
"""

from __future__ import annotations

import argparse
import functools
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

SEVERITY_ORDER = {"blocker": 0, "warning": 1, "info": 2}


def _brokers(text: str) -> tuple[int, ...]:
    try:
        ids = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected broker ids like 1,2,3, got {text!r}") from None
    if not ids or any(b < 0 for b in ids) or len(set(ids)) != len(ids):
        raise argparse.ArgumentTypeError(f"expected distinct non-negative broker ids, got {text!r}")
    return ids


def _rack(text: str) -> tuple[int, str]:
    broker, sep, rack = text.partition("=")
    if not sep or not broker.strip().isdigit() or not rack:
        raise argparse.ArgumentTypeError(f"expected BROKER=RACK, got {text!r}")
    return int(broker), rack


def _conf(text: str) -> tuple[str, str]:
    """A Spark setting. Spark itself would ignore a key outside ``spark.`` with a warning in its log (a typo then
    silently changes nothing), and an empty value fails only once the JVM reads it."""
    key, sep, value = text.partition("=")
    key, value = key.strip(), value.strip()
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    if not key.startswith("spark.") or any(c.isspace() for c in key):
        raise argparse.ArgumentTypeError(f"expected a Spark setting (spark.KEY=VALUE), got {text!r}")
    if not value:
        raise argparse.ArgumentTypeError(f"{key} needs a value, got {text!r}")
    return key, value


#: The masters Spark knows (SparkContext's master URLs); anything else fails only after the JVM has started.
_MASTER = re.compile(
    r"^(local(\[(\*|[1-9]\d*)(,[1-9]\d*)?\])?|local-cluster\[\d+,\d+,\d+\]|yarn|(spark|k8s|mesos)://.+)$"
)


def _master(text: str) -> str:
    if not _MASTER.match(text):
        raise argparse.ArgumentTypeError(
            f"expected a Spark master (local, local[N], local[*], spark://HOST:PORT, yarn, k8s://URL), got {text!r}"
        )
    return text


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


class _Stop(Exception):
    """Ends a command with one line and an exit code (raised where Spark is being prepared or runs)."""

    def __init__(self, code: int, line: str) -> None:
        super().__init__(line)
        self.code = code


def _spark_errors(func: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """A command whose Spark job fails because of the executors' environment or an unreachable cluster ends with
    one line (:func:`migrate.pipeline.environment.explain`), not the Py4J error's screens of tracebacks."""

    @functools.wraps(func)
    def wrapper(args: argparse.Namespace) -> int:
        try:
            return func(args)
        except _Stop as stop:
            print(f"error: {stop}", file=sys.stderr)
            return stop.code
        except Exception as exc:
            from migrate.pipeline.environment import explain

            known = explain(exc)
            if known is None:
                raise
            print(f"error: {known[1]}", file=sys.stderr)
            return known[0]

    return wrapper


def _spark_conf(args: argparse.Namespace) -> dict[str, str]:
    """``--conf`` plus, for a non-local master, the packed executors' environment; a master that does not answer
    is refused here, before a JVM starts (exit 3)."""
    from migrate.pipeline import environment
    from migrate.pipeline.session import executors_environment

    conf = dict(args.conf)
    master = args.master or os.environ.get("MASTER")
    if master:
        problem = environment.unreachable(master)
        if problem:
            raise _Stop(3, problem)

    def say(line: str) -> None:
        if not args.quiet:
            print(line, file=sys.stderr)

    try:
        conf.update(executors_environment(master, conf, say))
    except environment.PackError as exc:
        raise _Stop(2, f"cannot pack the executors' environment: {exc}") from None
    return conf


def _start(args: argparse.Namespace) -> Any:
    from migrate.pipeline.progress import Stages
    from migrate.pipeline.run import Run
    from migrate.pipeline.session import spark_session

    spark = spark_session(args.master, _spark_conf(args))
    run = Run(spark=spark, out=Path(args.output), stages=Stages(spark, quiet=args.quiet))
    if getattr(args, "model", None):
        run.reuse(args.model)
    else:
        run.ingest(args.resolved)
    return run


def _model_clusters(model: Path) -> set[str] | str:
    """The clusters in a ``--model`` directory's tables (their ``cluster=NAME`` partitions), or why it holds none."""
    from migrate.pipeline.model import TABLES

    if not model.is_dir():
        return f"--model {model}: no such model directory" + (" (it is a file)" if model.exists() else "")
    missing = [name for name in TABLES if not (model / name).is_dir()]
    if missing:
        hint = f"; did you mean {model / 'model'}?" if (model / "model" / missing[0]).is_dir() else ""
        return f"--model {model}: no '{missing[0]}' model table here (write it with 'pipeline model'){hint}"
    try:
        return {
            d.name.partition("=")[2]
            for table in ("brokers", "topics", "partitions", "malformed")
            for d in (model / table).iterdir()
            if d.is_dir() and d.name.startswith("cluster=")
        }
    except OSError as exc:
        return f"--model {model}: cannot read it ({exc.strerror})"


def _check_output(text: str) -> str | None:
    """``-o`` must be a directory or creatable as one (the nearest existing ancestor a writable directory)."""
    out = Path(text)
    if out.exists():
        if not out.is_dir():
            return f"--output {out} is a file, not a directory"
        return None if os.access(out, os.W_OK | os.X_OK) else f"--output {out} is not writable"
    parent = out.absolute().parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        return f"--output {out}: {parent} is a file, not a directory"
    return None if os.access(parent, os.W_OK | os.X_OK) else f"--output {out}: cannot create it in {parent}"


def _check_inputs(args: argparse.Namespace) -> str | None:
    """Every input, ``--model``, ``--cluster`` and ``-o`` checked before any JVM: the first problem, or None."""
    from migrate.pipeline.inputs import InputError, resolve

    try:
        import pyspark  # noqa: F401
    except ImportError:
        return "the pipeline needs PySpark and its companions: pip install 'bridgekeeper[spark]'"

    clusters: set[str]
    if getattr(args, "model", None):
        if args.inputs:
            return "give snapshot inputs or --model, not both"
        found = _model_clusters(Path(args.model))
        if isinstance(found, str):
            return found
        clusters = found
    else:
        if not args.inputs:
            return "no inputs: give snapshot-row files or directories (or --model DIR)"
        try:
            args.resolved = resolve(args.inputs)  # checked once here, before any JVM; ingested as resolved
        except InputError as exc:
            return str(exc)
        clusters = {i.cluster for i in args.resolved}
    wanted = getattr(args, "cluster", None)
    if wanted is not None and wanted not in clusters:
        return f"--cluster {wanted}: no such cluster in the input ({', '.join(sorted(clusters)) or 'none'})"
    return _check_output(args.output)


def _make_output(args: argparse.Namespace) -> str | None:
    """The output directory, made after every check and before Spark starts."""
    try:
        Path(args.output).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return f"--output {args.output}: cannot create it ({exc.strerror})"
    return None


def _write(run: Any, clusters: Any, plans: Any) -> None:
    from migrate.pipeline.report import write_report

    summary = run.summary(clusters, plans)
    write_report(summary, run.out / "report.html", run.out / "report.json")
    print(f"report: {run.out / 'report.html'} (JSON: {run.out / 'report.json'})")


def _refused(problem: str | None) -> bool:
    if problem:
        print(f"error: {problem}", file=sys.stderr)
    return bool(problem)


@_spark_errors
def cmd_model(args: argparse.Namespace) -> int:
    if _refused(_check_inputs(args) or _make_output(args)):
        return 2
    run = _start(args)
    print(f"model tables: {run.model_dir} ({', '.join(run.clusters)})")
    return 0


@_spark_errors
def cmd_report(args: argparse.Namespace) -> int:
    if _refused(_check_inputs(args) or _make_output(args)):
        return 2
    run = _start(args)
    clusters = run.report()
    _write(run, clusters, [])
    worst = min((SEVERITY_ORDER[f["severity"]] for c in clusters for f in c["findings"] if f["count"]), default=9)
    for c in clusters:
        found = [f"{f['check']}={f['count']}" for f in c["findings"] if f["count"]]
        print(f"{c['cluster']}: {', '.join(found) if found else 'no findings'}")
    if args.fail_on and worst <= SEVERITY_ORDER[args.fail_on]:
        return 1
    return 0


@_spark_errors
def cmd_plan(args: argparse.Namespace) -> int:
    from migrate.pipeline.planning import PlanFailed, PlanRequest

    problem = None
    if args.operation in ("decommission", "add-brokers") and not args.brokers:
        problem = f"{args.operation} needs --brokers"
    if args.operation in ("rebalance", "fix-racks") and args.brokers:
        problem = f"{args.operation} takes no --brokers (it plans over every registered broker)"
    if _refused(problem or _check_inputs(args) or _make_output(args)):
        return 2
    request = PlanRequest(
        operation=args.operation,
        cluster=args.cluster,
        brokers=args.brokers or (),
        racks=dict(args.rack),
        rack_aware=not args.disable_rack_aware,
        max_moves_per_broker=args.max_moves_per_broker,
        compare_kafka=not args.no_kafka_compare,
        seed=args.seed,
    )
    run = _start(args)
    clusters = run.report()
    try:
        plans = run.plan(request)
    except PlanFailed as exc:  # refused on what the data holds (a broker it does not have): decided after Spark ran
        print(f"error: {exc}", file=sys.stderr)
        return 1
    _write(run, clusters, plans)
    failed = False
    for p in plans:
        kafka = p["kafka_generate_moves"]
        ratio = f"{p['moves'] / p['lower_bound']:.3f}x" if p["lower_bound"] else "-"
        print(
            f"{p['cluster']}: {p['operation']} {p['plan_file']}: {p['moves']} moves (lower bound "
            f"{p['lower_bound']}, {ratio}; Kafka's --generate: {kafka if kafka is not None else 'n/a'}), "
            f"{p['partitions_changed']} partitions, {p['waves']} waves"
        )
        for v in p["violations"]:
            failed = True
            print(f"  violation: {v}", file=sys.stderr)
    return 1 if failed else 0


def _common(p: argparse.ArgumentParser, model: bool = True) -> None:
    what = "snapshot-row files (.parquet/.jsonl; NAME=PATH names the cluster) or directories of them"
    p.add_argument("inputs", nargs="*", metavar="INPUT", help=what)
    p.add_argument("-o", "--output", required=True, help="output directory (model tables, report, plans)")
    if model:
        p.add_argument("--model", help="read model tables a previous run wrote (DIR/model) instead of snapshots")
    p.add_argument("--master", type=_master, help="Spark master (default: what spark-submit set, else local[*])")
    p.add_argument("--conf", type=_conf, action="append", default=[], metavar="KEY=VALUE", help="Spark setting")
    p.add_argument("--quiet", action="store_true", help="no live progress on stderr")


def configure_model(m: argparse.ArgumentParser) -> None:
    _common(m, model=False)
    m.set_defaults(func=cmd_model)


def configure_report(r: argparse.ArgumentParser) -> None:
    _common(r)
    r.add_argument(
        "--fail-on",
        choices=("blocker", "warning", "info"),
        help="exit 1 when a finding of this severity or worse is present",
    )
    r.set_defaults(func=cmd_report)


def configure_plan(p: argparse.ArgumentParser) -> None:
    from migrate.pipeline.planning import OPERATIONS

    p.add_argument("operation", choices=OPERATIONS)
    _common(p)
    p.add_argument("--cluster", help="plan only this cluster of the input")
    p.add_argument("--brokers", type=_brokers, help="brokers to decommission or add (comma-separated ids)")
    p.add_argument(
        "--rack",
        type=_rack,
        action="append",
        default=[],
        metavar="BROKER=RACK",
        help="rack of a broker (new brokers; fix-racks: the racks about to be configured)",
    )
    p.add_argument("--disable-rack-aware", action="store_true", help="ignore racks (Kafka's flag)")
    p.add_argument(
        "--max-moves-per-broker",
        type=_positive,
        metavar="N",
        help="split the plan into waves with at most N moves per broker each",
    )
    p.add_argument("--no-kafka-compare", action="store_true", help="skip planning Kafka's --generate for comparison")
    p.add_argument("--seed", type=int, default=0, help="seed for Kafka's --generate comparison")
    p.set_defaults(func=cmd_plan)


#: spark-submit's primary resource for ``bridgekeeper``: a script outside the packages (run as a file,
#: ``controller/cli.py`` would put ``controller/`` first on sys.path, where its ``secrets.py`` hides the
#: standard library's and numpy fails to import).
LAUNCHER = "bridgekeeper-submit.py"
_LAUNCHER_TEXT = """\
\"\"\"spark-submit's entry point for bridgekeeper (written by 'bridgekeeper pipeline package').\"\"\"
import sys

from controller.cli import main

sys.exit(main())
"""


def cmd_package(args: argparse.Namespace) -> int:
    """Pack (or take from the cache) the executors' environment and copy it to ``-o`` with a launcher beside
    it, for ``spark-submit``."""
    import shutil

    from migrate.pipeline import environment
    from migrate.pipeline.outputs import write_atomic

    out = Path(args.output)
    if out.is_dir() or not out.name.endswith(".tar.gz"):
        print(f"error: --output {out}: expected a file name ending in .tar.gz", file=sys.stderr)
        return 2
    if not os.access(out.absolute().parent, os.W_OK | os.X_OK):
        print(f"error: --output {out}: {out.absolute().parent} is not a writable directory", file=sys.stderr)
        return 2
    try:
        archive = environment.build(None if args.quiet else lambda line: print(line, file=sys.stderr))
    except environment.PackError as exc:
        print(f"error: cannot pack the executors' environment: {exc}", file=sys.stderr)
        return 2
    shutil.copyfile(archive, out)
    launcher = out.parent / LAUNCHER
    write_atomic(launcher, _LAUNCHER_TEXT)
    print(f"{out}: the executors' Python environment ({out.stat().st_size // 2**20} MiB); {launcher}: the entry point")
    flags = (
        f"--archives {out}#{environment.ALIAS} --conf spark.pyspark.python={environment.EXECUTOR_PYTHON} "
        f"--conf spark.pyspark.driver.python={sys.executable}"
    )
    print(f"spark-submit --master MASTER {flags} {launcher} pipeline COMMAND ...")
    return 0


def configure_package(p: argparse.ArgumentParser) -> None:
    p.add_argument("-o", "--output", required=True, help="the archive to write (.tar.gz)")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.set_defaults(func=cmd_package)
