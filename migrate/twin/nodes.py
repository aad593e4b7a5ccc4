"""Which production brokers a twin runs, and the restore that fills its sandbox ZooKeeper before they start.

A twin runs one node per broker registered in the rows, with its id and rack. Brokers that assignments name but
that had no registration (offline in production) are not started, so their partitions stay offline as they
were, unless asked (``start_missing``). ``max_nodes`` keeps a twin small: the production controller first (the
broker whose node will most likely win the election there too), then the registered brokers by id, then the
missing ones; the rest are named as left out.
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from migrate.snapshot.restore import Plan
from migrate.snapshot.restore_write import run, summary

if TYPE_CHECKING:
    from controller.devstack.stack import Stack
    from controller.zk.session import ZkSession


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


class Launch:
    """The twin's two :class:`Stack` hooks. Before the nodes: restore the rows into the stack's chroot (through
    the plain client port, which a ``--tls`` stack keeps beside its TLS-only one) and hold the controller
    election (:func:`controller.store.tree_copy.hold_election`). After every node is ready, so every twin
    broker is registered: release it and wait for one of them to win, which then finds every broker alive and
    every restored leader in place, as a running production cluster has them."""

    def __init__(
        self,
        files: Sequence[Path],
        p: Plan,
        nodes: TwinNodes,
        *,
        acls: str,
        keep_credentials: bool,
        say: Callable[[str], None],
    ) -> None:
        self.files, self.plan, self.nodes = files, p, nodes
        self.acls, self.keep_credentials, self.say = acls, keep_credentials, say
        self._session: ZkSession | None = None
        self.restore_seconds = 0.0

    def before(self, stack: Stack) -> None:
        from controller.devstack.stack import CHROOT, StackError
        from controller.exits import CommandError
        from controller.store.tree_copy import hold_election
        from migrate.connect import connect

        p, say = self.plan, self.say
        target = stack.zk.connect_string + CHROOT
        say(f"restoring {p.znodes:,} znodes ({p.topics:,} topics, {p.partitions:,} partitions) into {target} ...")
        step = max(p.znodes // 10, 1)
        shown = [0]

        def progress(done: int, total: int) -> None:
            if done - shown[0] >= step or done == total:
                shown[0] = done
                say(f"  restored {done:,} of {total:,} znodes")

        gc.freeze()  # the plan lives on: out of the collector's scans while the writes make short-lived objects
        outcome = run(target, self.files, p, acls=self.acls, progress=progress)
        if outcome.exit_code != 0:
            raise StackError(f"restoring the snapshot failed: {outcome.message}")
        self.restore_seconds = outcome.seconds
        for line in summary(p, outcome, acls=self.acls, keep_credentials=self.keep_credentials, target=target):
            say(line)
        try:
            self._session = connect(target, name="twin-launch", timeout=10.0)
        except CommandError as exc:
            raise StackError(exc.message) from None
        if not hold_election(self._session):
            raise StackError(f"cannot hold the controller election in {target} while the twin's nodes start")

    def after(self, stack: Stack, timeout: float = 120.0) -> None:
        from controller.devstack.stack import StackError
        from controller.store.tree_copy import release_election
        from zkmodel import paths
        from zkmodel.election import ControllerZnode

        assert self._session is not None
        session = self._session
        release_election(session)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = session.get(paths.CONTROLLER)
            if found is not None:
                winner = ControllerZnode.decode(paths.CONTROLLER, found[0]).broker_id
                if winner in self.nodes.broker_ids:
                    self.say(f"broker {winner} elected controller with all {len(stack.nodes)} twin brokers registered")
                    self.close()
                    return
            time.sleep(0.1)
        raise StackError(f"no twin node became controller within {timeout:.0f} s of the election's release")

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None


def zookeeper_heap_mb(p: Plan, nodes: int) -> int:
    """The sandbox ZooKeeper's heap: its DataTree holds every znode with its path, data and Stat (~1 KiB each
    with the JVM's overhead for Kafka's small znodes, twice over while it writes a snapshot), and its watch
    tables a data watch per node per topic and partition-state znode (~200 B each): at 100,000 partitions and
    30 nodes the watches outweigh the tree, and a heap sized for the tree alone left ZooKeeper collecting
    garbage instead of answering."""
    watches = nodes * (p.topics + p.partitions) * 200
    return 256 + (p.znodes * 2048 + watches) // (1024 * 1024)


def start_wave(p: Plan) -> int | None:
    """How many of a twin's nodes start at once: all of a small one; for a big one as many as this machine has
    cores, each reading the whole tree as it starts (at 100,000 partitions, 30 nodes at once on 2 cores left
    ZooKeeper without answers past the nodes' request timeouts)."""
    return None if p.partitions <= 20_000 else max(2, os.cpu_count() or 2)


def start_timeout(p: Plan, nodes: int) -> float:
    """How long a twin's nodes may take to become ready: every node reads the whole tree at start, on the cores
    this machine has (measured: ~1.6 s a node for 20,000 partitions here), with a wide margin."""
    return 60.0 + nodes * p.partitions / 2_000
