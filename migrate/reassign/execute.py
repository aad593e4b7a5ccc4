"""``--execute``: Kafka 3.9's executeAssignment, text for text, and (ours) ``--max-moves-per-broker`` waves.

Kafka's order is kept because an operator's terminal is the record of what happened: the refusal when
anything is already moving (unless ``--additional``), the broker-id check, the current assignment printed as
the rollback JSON *before* anything changes, the throttles, then the submission. We also save the rollback
JSON to a file next to the plan (named with the time, never overwriting an earlier one: after a resumed
wave run the first file is the true rollback).
"""

from __future__ import annotations

import datetime
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from migrate.reassign import throttles as T
from migrate.reassign.admin import ReassignAdmin, error_message
from migrate.reassign.inputs import Inputs
from migrate.reassign.logdirs import TPR, execute_moves
from migrate.reassign.model import TP, Ongoing, sorted_tps, tp_text
from migrate.reassign.options import Options
from migrate.reassign.output import Output, ToolError, assignment_doc
from migrate.reassign.plan_files import PlannedPartition, format_assignment, targets_and_log_dirs
from migrate.reassign.verify import clear_all_throttles
from migrate.reassign.waves import busy_brokers, classify, ongoing_participants, pack, participants, plan_waves
from zkmodel.jvmorder import java_hashmap_order

CANNOT_EXECUTE = (
    "Cannot execute because there is an existing partition assignment.  Use --additional to override this and "
    "create a new partition assignment in addition to the existing one. The --additional flag can also be used "
    "to change the throttle by resubmitting the current reassignment."
)
VERIFY_WARNING = (
    "Warning: You must run --verify periodically, until the reassignment completes, to ensure the throttle is removed."
)
#: How often a wave run reads the cluster's reassignments.
POLL_S = 1.0


def execute_plan(planned: Sequence[PlannedPartition]) -> tuple[dict[TP, list[int]], dict[TPR, str]]:
    """What parseExecuteAssignmentArgs returns: the plan's targets and its log-dir moves (Kafka's execute
    checks were made when the file was read, :func:`migrate.reassign.inputs.read_inputs`)."""
    targets, log_dirs = targets_and_log_dirs(planned)
    return dict(targets), log_dirs


def unknown_broker(plan: Mapping[TP, Sequence[int]], cluster: Sequence[int]) -> int | None:
    """verifyBrokerIds: the first broker of the plan (in HashSet order) that the cluster does not list."""
    known = set(cluster)
    brokers = java_hashmap_order([b for replicas in plan.values() for b in replicas])
    return next((b for b in brokers if b not in known), None)


def save_rollback(
    plan_path: str, current: Mapping[TP, Sequence[int]], now: datetime.datetime | None = None
) -> str | None:
    """Write the rollback JSON beside the plan as ``<plan>.rollback-<UTC time>.json``; None if it cannot be."""
    stamp = (now or datetime.datetime.now(datetime.UTC)).strftime("%Y%m%dT%H%M%S%fZ")
    plan = Path(plan_path)
    path = plan.with_name(f"{plan.name}.rollback-{stamp}.json")
    try:
        with open(path, "x", encoding="utf-8") as f:
            f.write(format_assignment(current) + "\n")
    except OSError as exc:
        print(f"Warning: could not save the rollback JSON to {path}: {exc.strerror or exc}", file=sys.stderr)
        return None
    print(f"Rollback JSON saved to {path}", file=sys.stderr)
    return str(path)


def show_current(out: Output, current: Mapping[TP, Sequence[int]], plan_path: str) -> None:
    """currentPartitionReplicaAssignmentToString, printed before anything changes, and saved beside the plan."""
    out.text("Current partition replica assignment")
    out.text()
    out.text(format_assignment(current))
    out.text()
    out.text("Save this to use as the --reassignment-json-file option during rollback")
    out.put("current", assignment_doc(current))
    out.put("rollback_file", save_rollback(plan_path, current))


def _set_throttles(
    admin: ReassignAdmin,
    out: Output,
    opts: Options,
    ongoing: Mapping[TP, Ongoing],
    targets: Mapping[TP, Sequence[int]],
    current: Mapping[TP, Sequence[int]],
    log_dirs: Mapping[TPR, str],
) -> None:
    """modifyReassignmentThrottle + modifyLogDirThrottle, with Kafka's lines."""
    if opts.throttle >= 0:
        plan = T.throttle_plan(T.proposed_moves(ongoing, targets, current), opts.throttle)
        admin.alter_configs(plan.topics, {})
        admin.alter_configs({}, plan.brokers)
        out.text(f"The inter-broker throttle limit was set to {opts.throttle} B/s")
    if opts.replica_alter_log_dirs_throttle >= 0:
        brokers = {b: {T.LOG_DIRS_RATE: str(opts.replica_alter_log_dirs_throttle)} for _t, _p, b in log_dirs}
        admin.alter_configs({}, brokers)
        out.text(f"The replica-alter-dir throttle limit was set to {opts.replica_alter_log_dirs_throttle} B/s")


def _submit(admin: ReassignAdmin, out: Output, targets: Mapping[TP, Sequence[int]]) -> list[str]:
    errors = admin.alter_reassignments(targets)
    if errors:
        lines = "\n".join(f"{tp_text(tp)}: {error_message(*errors[tp])}" for tp in sorted_tps(errors))
        raise ToolError(f"Error reassigning partition(s):\n{lines}", terse=True)
    names = [tp_text(tp) for tp in sorted_tps(targets)]
    out.text(f"Successfully started partition reassignment{'' if len(names) == 1 else 's'} for {','.join(names)}")
    return names


def run(admin: ReassignAdmin, opts: Options, out: Output, inputs: Inputs) -> None:
    assert opts.reassignment_json_file is not None
    targets, log_dirs = execute_plan(inputs.planned)
    ongoing = admin.list_reassignments()
    if opts.max_moves_per_broker is not None:
        theirs = {tp: o for tp, o in ongoing.items() if tp not in targets or list(o.target) != targets[tp]}
    else:
        theirs = ongoing
    if not opts.additional and theirs:
        raise ToolError(CANNOT_EXECUTE, terse=True)
    unknown = unknown_broker(targets, [b.id for b in admin.brokers()])
    if unknown is not None:
        raise ToolError(f"Unknown broker id {unknown}")
    current = admin.partition_assignments(targets)
    show_current(out, current, opts.reassignment_json_file)
    out.put("throttle", opts.throttle if opts.throttle >= 0 else None)
    out.put(
        "replica_alter_log_dirs_throttle",
        opts.replica_alter_log_dirs_throttle if opts.replica_alter_log_dirs_throttle >= 0 else None,
    )
    if opts.max_moves_per_broker is not None:
        run_waves(admin, opts, out, targets, current, log_dirs)
        return
    if opts.throttle >= 0 or opts.replica_alter_log_dirs_throttle >= 0:
        out.text(VERIFY_WARNING)
        _set_throttles(admin, out, opts, ongoing, targets, current, log_dirs)
    out.put("started", _submit(admin, out, targets))
    started = execute_moves(admin, log_dirs, opts.timeout_ms, out) if log_dirs else []
    out.put("log_dir_moves_started", [f"{t}-{p}-{b}" for t, p, b in started])


# -- waves ----------------------------------------------------------------------------------------------------
def run_waves(
    admin: ReassignAdmin,
    opts: Options,
    out: Output,
    targets: Mapping[TP, Sequence[int]],
    first_current: Mapping[TP, Sequence[int]],
    log_dirs: Mapping[TPR, str],
) -> None:
    """Submit the plan wave by wave, each waiting for the previous to finish, under the per-broker cap."""
    from migrate.reassign.progress import WaveProgress

    cap = opts.max_moves_per_broker
    assert cap is not None
    involved = {tp: participants(first_current[tp], targets[tp]) for tp in targets}
    schedule = plan_waves(classify(targets, first_current, admin.list_reassignments()).pending, involved, cap)
    waves_doc: list[dict[str, object]] = []
    started_all: list[str] = []
    throttled = False
    with WaveProgress(total=len(targets), planned_waves=len(schedule)) as bar:
        while True:
            ongoing = admin.list_reassignments()
            current = admin.partition_assignments(targets)
            state = classify(targets, current, ongoing)
            bar.update(done=len(state.done), running=len(state.running), pending=len(state.pending))
            if state.running:  # ours, from this run's last wave or from an interrupted run: wait for them
                time.sleep(POLL_S)
                continue
            if not state.pending:
                break
            for tp in state.pending:
                involved[tp] = participants(current[tp], targets[tp])
            busy = busy_brokers(ongoing_participants(o) for o in state.foreign.values())
            wave = pack(state.pending, involved, cap, busy)
            if not wave:  # moves that are not ours hold every broker we need at the cap: let them finish
                time.sleep(POLL_S)
                continue
            wave_targets = {tp: targets[tp] for tp in wave}
            if not throttled and (opts.throttle >= 0 or opts.replica_alter_log_dirs_throttle >= 0):
                out.text(VERIFY_WARNING)
            if opts.throttle >= 0 or opts.replica_alter_log_dirs_throttle >= 0:
                quiet = Output(json_mode=True) if throttled else out
                _set_throttles(admin, quiet, opts, ongoing, wave_targets, current, log_dirs if not throttled else {})
                throttled = True
            bar.wave(len(waves_doc) + 1, wave)
            names = _submit(admin, out, wave_targets)
            started_all.extend(names)
            waves_doc.append({"partitions": names})
            wave_dirs = {r: d for r, d in log_dirs.items() if (r[0], r[1]) in wave_targets}
            if wave_dirs:
                execute_moves(admin, wave_dirs, opts.timeout_ms, out)
        unfinished = [tp for tp in targets if list(current[tp]) != list(targets[tp])]
    if unfinished:
        raise ToolError(
            "Reassignment did not reach its target for: " + ",".join(tp_text(tp) for tp in sorted_tps(unfinished))
        )
    out.put("started", started_all)
    out.put("waves", waves_doc)
    out.put("max_moves_per_broker", cap)
    if throttled:
        out.put("throttles_cleared", clear_all_throttles(admin, out, list(targets.items()), if_idle=True))
