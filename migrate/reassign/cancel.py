"""``--cancel``: Kafka 3.9's cancelAssignment, including its quirks: only partitions whose move has no
adding replicas or has removing replicas are cancelled, and "None of the specified partition moves are
active." is printed without a line break."""

from __future__ import annotations

from migrate.reassign.admin import ReassignAdmin, error_message
from migrate.reassign.inputs import Inputs
from migrate.reassign.logdirs import execute_moves, move_states
from migrate.reassign.model import TP, sorted_tps, tp_text
from migrate.reassign.options import Options
from migrate.reassign.output import Output, ToolError
from migrate.reassign.plan_files import targets_and_log_dirs
from migrate.reassign.verify import clear_all_throttles


def run(admin: ReassignAdmin, opts: Options, out: Output, inputs: Inputs) -> None:
    targets, log_dirs = targets_and_log_dirs(inputs.planned)
    listed = admin.list_reassignments([tp for tp, _r in targets])
    cancelling: list[TP] = [tp for tp, o in listed.items() if not o.adding or o.removing]
    if cancelling:
        errors = admin.alter_reassignments(dict.fromkeys(cancelling))
        if errors:
            lines = "\n".join(f"{tp_text(tp)}: {error_message(*errors[tp])}" for tp in sorted_tps(errors))
            plural = "" if len(errors) == 1 else "s"
            raise ToolError(f"Error cancelling partition reassignment{plural} for:\n{lines}", terse=True)
        names = ",".join(tp_text(tp) for tp in sorted_tps(cancelling))
        out.text(f"Successfully cancelled partition reassignment{'' if len(cancelling) == 1 else 's'} for: {names}")
    else:
        out.text("None of the specified partition reassignments are active.")
    moving = {r: s.current for r, s in move_states(admin, log_dirs).items() if s.kind == "active" and s.current}
    if not moving:
        out.text("None of the specified partition moves are active.", end="")
        started = []
    else:
        started = execute_moves(admin, moving, opts.timeout_ms, out)
    out.put("cancelled", [tp_text(tp) for tp in sorted_tps(cancelling)])
    out.put("log_dir_moves_cancelled", [f"{t}-{p}-{b}" for t, p, b in started])
    out.put("throttles_cleared", None if opts.preserve_throttles else clear_all_throttles(admin, out, targets))
