"""Moves of replicas between a broker's log directories (the ``log_dirs`` of a plan that are not ``"any"``):
their state as ``--verify`` reports it and their start as ``--execute`` retries it (Kafka 3.9's
findLogDirMoveStates, replicaMoveStatesToString and executeMoves)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

from migrate.reassign.admin import ReassignAdmin
from migrate.reassign.output import Output, ToolError
from zkmodel.java import java_string_key

#: (topic, partition, broker): Kafka's TopicPartitionReplica.
TPR = tuple[str, int, int]


def tpr_text(r: TPR) -> str:
    """``TopicPartitionReplica.toString``: ``t-0-1``."""
    return f"{r[0]}-{r[1]}-{r[2]}"


def tpr_order(r: TPR) -> tuple[int, bytes, int]:
    """compareTopicPartitionReplicas: broker, then topic, then partition."""
    return r[2], java_string_key(r[0]), r[1]


@dataclass(frozen=True)
class MoveState:
    """``kind``: missing_replica | missing_log_dir | completed | cancelled | active."""

    kind: str
    target: str
    current: str | None = None
    future: str | None = None

    @property
    def done(self) -> bool:
        return self.kind != "active"


def move_states(admin: ReassignAdmin, targets: Mapping[TPR, str]) -> dict[TPR, MoveState]:
    if not targets:
        return {}
    infos = admin.replica_log_dirs(targets)
    out: dict[TPR, MoveState] = {}
    for replica, target in targets.items():
        if replica not in infos:
            out[replica] = MoveState("missing_replica", target)
            continue
        current, future = infos[replica]
        if current is None:
            out[replica] = MoveState("missing_log_dir", target)
        elif future is None:
            out[replica] = MoveState("completed" if current == target else "cancelled", target, current)
        else:
            out[replica] = MoveState("active", target, current, future)
    return out


def states_text(states: Mapping[TPR, MoveState]) -> str:
    lines = []
    for r in sorted(states, key=tpr_order):
        s = states[r]
        part = f"{r[0]}-{r[1]}"
        if s.kind == "missing_log_dir":
            lines.append(
                f"Partition {part} is not found in any live log dir on broker {r[2]}. There is likely an offline "
                "log directory on the broker."
            )
        elif s.kind == "missing_replica":
            lines.append(f"Partition {part} cannot be found in any live log directory on broker {r[2]}.")
        elif s.kind == "active":
            if s.target == s.future:
                lines.append(f"Reassignment of replica {tpr_text(r)} is still in progress.")
            else:
                lines.append(
                    f"Partition {part} on broker {r[2]} is being moved to log dir {s.future} instead of {s.target}."
                )
        elif s.kind == "cancelled":
            lines.append(
                f"Partition {part} on broker {r[2]} is not being moved from log dir {s.current} to {s.target}."
            )
        else:
            lines.append(f"Reassignment of replica {tpr_text(r)} completed successfully.")
    return "\n".join(lines)


def states_doc(states: Mapping[TPR, MoveState]) -> list[dict[str, object]]:
    return [
        {
            "topic": r[0],
            "partition": r[1],
            "broker": r[2],
            "state": s.kind,
            "target": s.target,
            "current": s.current,
            "future": s.future,
        }
        for r, s in sorted(states.items(), key=lambda item: tpr_order(item[0]))
    ]


def execute_moves(admin: ReassignAdmin, moves: Mapping[TPR, str], timeout_ms: int, out: Output) -> list[TPR]:
    """executeMoves: ask each broker to move its replica, retrying every 100 ms those not yet on their
    broker, until all started or ``timeout_ms`` passed ("Timed out before log directory move(s) could be
    started for: ...")."""
    pending = dict(moves)
    started_all: list[TPR] = []
    deadline = time.monotonic() + timeout_ms / 1000
    while True:
        started = admin.alter_replica_log_dirs(pending)
        for r in sorted(started, key=tpr_order):
            where = f"replica {r[0]}-{r[1]} with broker {r[2]}"
            out.text(f"Successfully started moving log directory to {pending[r]} for {where} ")
            started_all.append(r)
        for r in started:
            pending.pop(r, None)
        if not pending:
            return started_all
        if time.monotonic() >= deadline:
            names = ",".join(tpr_text(r) for r in sorted(pending, key=tpr_order))
            plural = "" if len(pending) == 1 else "s"
            raise ToolError(f"Timed out before log directory move{plural} could be started for: {names}", terse=True)
        time.sleep(0.1)
