"""``--list``: Kafka 3.9's curReassignmentsToString."""

from __future__ import annotations

from collections.abc import Mapping

from migrate.reassign.admin import ReassignAdmin
from migrate.reassign.inputs import Inputs
from migrate.reassign.model import TP, Ongoing, joined, sorted_tps, tp_text
from migrate.reassign.options import Options
from migrate.reassign.output import Output


def list_text(ongoing: Mapping[TP, Ongoing]) -> str:
    """curReassignmentsToString."""
    lines = []
    for tp in sorted_tps(ongoing):
        o = ongoing[tp]
        adding = f" adding: {joined(o.adding)}." if o.adding else ""
        removing = f" removing: {joined(o.removing)}." if o.removing else ""
        lines.append(f"{tp_text(tp)}: replicas: {joined(o.replicas)}.{adding}{removing}")
    return "Current partition reassignments:\n" + "\n".join(lines) if lines else "No partition reassignments found."


def run(admin: ReassignAdmin, opts: Options, out: Output, inputs: Inputs) -> None:
    del opts, inputs
    ongoing = admin.list_reassignments()
    out.text(list_text(ongoing))
    out.put(
        "reassignments",
        [
            {
                "topic": tp[0],
                "partition": tp[1],
                "replicas": list(ongoing[tp].replicas),
                "adding": list(ongoing[tp].adding),
                "removing": list(ongoing[tp].removing),
            }
            for tp in sorted_tps(ongoing)
        ],
    )
