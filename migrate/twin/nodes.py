"""Which production brokers a twin runs, and the restore that fills its sandbox ZooKeeper before they start.

A twin runs one node per broker registered in the rows, with its id and rack. Brokers that assignments name but
that had no registration (offline in production) are not started, so their partitions stay offline as they
were, unless asked (``start_missing``). ``max_nodes`` keeps a twin small: the production controller first (the
broker whose node will most likely win the election there too), then the registered brokers by id, then the
missing ones; the rest are named as left out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from migrate.snapshot.restore import Plan, run, summary

if TYPE_CHECKING:
    from controller.devstack.stack import Stack


class TwinError(ValueError):
    """A twin that cannot be started as asked; the message says why."""


@dataclass(frozen=True)
class TwinNodes:
    broker_ids: list[int]  # in start order
    racks: dict[int, str]
    left_out: list[int] = field(default_factory=list)  # over max_nodes
    offline: list[int] = field(default_factory=list)  # named by assignments, unregistered, not started

    def notes(self) -> list[str]:
        lines = [f"twin nodes: brokers {', '.join(map(str, self.broker_ids))}"]
        if self.left_out:
            lines.append(f"left out by --max-nodes: brokers {', '.join(map(str, self.left_out))}")
        if self.offline:
            lines.append(
                f"offline as in production (no registration; --start-missing starts them): brokers "
                f"{', '.join(map(str, self.offline))}"
            )
        return lines


def choose(p: Plan, *, start_missing: bool = False, max_nodes: int | None = None) -> TwinNodes:
    """The brokers to run, with their racks (see the module's rules)."""
    registered = {r.broker_id: r for r in p.registrations}
    missing = sorted(p.assigned - set(registered))
    order = sorted(registered)
    if p.controller in registered:
        order.remove(p.controller)
        order.insert(0, p.controller)
    if start_missing:
        order += missing
    if not order:
        raise TwinError(
            "the rows register no broker (no /brokers/ids/<id> znode) and no assignment names one: there is no "
            "node to start"
            if not missing
            else "the rows register no broker: --start-missing starts the brokers the assignments name "
            f"({', '.join(map(str, missing))})"
        )
    chosen = order if max_nodes is None else order[:max_nodes]
    racks = {b: rack for b in chosen if b in registered and (rack := registered[b].rack)}
    return TwinNodes(
        broker_ids=chosen,
        racks=racks,
        left_out=order[len(chosen) :],
        offline=[] if start_missing else missing,
    )


def restore_before_nodes(
    files: Sequence[Path], p: Plan, *, acls: str, keep_credentials: bool, say: Callable[[str], None]
) -> Callable[[Stack], None]:
    """A :class:`Stack` hook restoring the rows into the stack's chroot once its ZooKeeper serves (the stack's
    plain client port: a ``--tls`` stack keeps one beside its TLS-only port)."""

    def hook(stack: Stack) -> None:
        from controller.devstack.stack import CHROOT, StackError

        target = stack.zk.connect_string + CHROOT
        say(f"restoring {p.znodes:,} znodes ({p.topics:,} topics, {p.partitions:,} partitions) into {target} ...")
        step = max(p.znodes // 10, 1)
        shown = [0]

        def progress(done: int, total: int) -> None:
            if done - shown[0] >= step or done == total:
                shown[0] = done
                say(f"  restored {done:,} of {total:,} znodes")

        outcome = run(target, files, p, acls=acls, progress=progress)
        if outcome.exit_code != 0:
            raise StackError(f"restoring the snapshot failed: {outcome.message}")
        for line in summary(p, outcome, acls=acls, keep_credentials=keep_credentials, target=target):
            say(line)

    return hook


def start_timeout(p: Plan, nodes: int) -> float:
    """How long a twin's nodes may take to become ready: every node reads the whole tree at start, on the cores
    this machine has (measured: ~1.6 s a node for 20,000 partitions here), with a wide margin."""
    return 60.0 + nodes * p.partitions / 2_000
