"""The rehearsal's steps: the two rolls (each node restarted in Strimzi's order, the drills in the middle of roll 1),
a restart guarded by canRoll and followed by the node's return to every ISR, and lockdown. Each is a body the step
loop (:meth:`migrate.rehearse.run.Rehearsal.step`) runs and checks after.
"""

from __future__ import annotations

import contextlib
import functools
import io
from collections.abc import Callable

from migrate.rehearse import drills
from migrate.rehearse import state as S
from migrate.rehearse.checks import record
from migrate.rehearse.cluster import BROKER_IDENTITY, CONTROLLER_IDENTITY
from migrate.rehearse.host import RunHost, StepFailed, StepHost
from migrate.rehearse.model import Phase, StepRecord

#: Each ``--drill`` name and the drill it runs (migrate.rehearse.drills).
DRILLS: dict[str, Callable[[StepHost, StepRecord], None]] = {
    "kill-controller": drills.kill_controller,
    "pause-zookeeper": drills.pause_zookeeper,
    "restart-during-reassignment": drills.restart_during_reassignment,
    "freeze-controller": drills.freeze_controller,
}


# -- rolls --------------------------------------------------------------------------------------------------------
def roll(host: RunHost, phase: Phase, ibp: str | None) -> None:
    """Strimzi's order: every node but the active controller first; the controller last, re-queued when the
    controller moved mid-roll onto a node still waiting."""
    queue = [n.broker_id for n in host.cluster.nodes()]
    label = "roll 1" if phase == "roll-1" else "roll 2"
    drilled = False
    while queue:
        controller = host.snapshot().controller
        pick = next((b for b in queue if b != controller), queue[0])
        queue.remove(pick)
        verb = f"restart node {pick}" + (f" with IBP {ibp}" if ibp else "")
        if pick == controller:
            verb += " (the active controller, last)"
        try:
            host.step(
                f"{label}: {verb}", phase, "restart", pick, functools.partial(restart, host, broker_id=pick, ibp=ibp)
            )
            if ibp:
                host.progress.expected_ibp[pick] = ibp
            if phase == "roll-1" and not drilled and queue:
                drilled = True
                for name in host.options.drills:
                    drill(host, name, phase)
        except StepFailed:
            for b in queue:
                host.skip(f"{label}: restart node {b}", phase, b)
            raise
    if phase == "roll-2":
        snap = host.snapshot()
        host.progress.bump_zxid = max((b.czxid for b in snap.brokers.values()), default=0)


def restart(host: RunHost, rec: StepRecord, broker_id: int, ibp: str | None) -> None:
    blocked = can_roll(host, rec, broker_id)
    if blocked:
        raise StepFailed(f"node {broker_id} not restarted: {blocked}")
    snap = host.snapshot()
    if snap.controller == broker_id:
        host.disrupted(f"restart of node {broker_id}, the active controller")
    before = snap.brokers.get(broker_id)
    host.took_down(broker_id)
    host.show.status(f"{rec['name']}: stopping and starting node {broker_id}")
    host.cluster.restart(broker_id, ibp, host.options.restart_timeout)
    host.rejoin(rec, broker_id, before.czxid if before else 0)
    host.settle(rec, host.options.step_settle)


def can_roll(host: RunHost, rec: StepRecord, broker_id: int) -> str:
    """Wait until restarting the node would take no partition below min.insync.replicas; what blocks it, or ""."""
    found: list[str] = []

    def probe() -> tuple[bool, str]:
        found[:] = S.would_drop_below_min_isr(host.snapshot(), broker_id, host.checker.default_min_isr)
        return not found, f"{len(found)} partition(s) would drop below min.insync.replicas"

    ok = host.wait(rec, f"node {broker_id} safe to restart (min.insync.replicas)", probe, host.options.min_isr_timeout)
    host.progress.checks.append(
        record(
            "min-isr-safe",
            rec["index"],
            ok,
            f"node {broker_id} could be restarted without dropping below min.insync.replicas"
            if ok
            else f"node {broker_id} would take partitions below min.insync.replicas",
            found or [f"checked every partition holding node {broker_id}"],
        )
    )
    return "" if ok else "; ".join(found[:3])


def rejoin(host: RunHost, rec: StepRecord, broker_id: int, old_czxid: int) -> None:
    """The node registered again (a registration other than ``old_czxid``) and back in every ISR it belongs to."""

    def registered() -> tuple[bool, str]:
        b = host.snapshot().brokers.get(broker_id)
        return b is not None and b.czxid != old_czxid, "not yet"

    is_back = host.wait(rec, f"node {broker_id} registered again", registered, host.options.restart_timeout)
    missing: list[str] = []

    def probe() -> tuple[bool, str]:
        missing[:] = S.missing_from_isr(host.snapshot(), broker_id)
        return not missing, f"{len(missing)} partition(s) without node {broker_id} in the ISR"

    ok = is_back and host.wait(rec, f"node {broker_id} back in every ISR", probe, host.options.isr_timeout)
    host.progress.checks.append(
        record(
            "isr-rejoined",
            rec["index"],
            ok,
            f"node {broker_id} is back in every ISR it belongs to"
            if ok
            else f"node {broker_id} did not rejoin {len(missing)} ISR(s) within {host.options.isr_timeout:.0f} s",
            missing or [rec["waits"][-1]["what"]],
        )
    )
    if not ok:
        raise StepFailed(f"node {broker_id} did not rejoin every ISR")


# -- drills ---------------------------------------------------------------------------------------------------------
def drill(host: RunHost, name: str, phase: Phase) -> None:
    run = DRILLS[name]
    target = host.snapshot().controller
    node = target if name != "pause-zookeeper" else None
    host.step(f"drill {name}", phase, "drill", node, lambda rec: run(host, rec))


# -- lockdown -------------------------------------------------------------------------------------------------------
def lockdown(host: RunHost, rec: StepRecord) -> None:
    from migrate.lockdown import tool
    from zkmodel.znode_acls import Identities, digest_identity

    assert host.session is not None
    who = Identities(
        digest_identity(f"digest:{CONTROLLER_IDENTITY}", "controller"),
        digest_identity(f"digest:{BROKER_IDENTITY}", "broker"),
    )
    backup = host.options.out_dir / "lockdown-backup.json"
    out = io.StringIO()
    # Quiet while locking: the nodes here run without zookeeper.set.acl (below the gate brokers still write
    # with their own identity), so a znode created between apply and verify would carry the open ACL.
    if host.load is not None:
        host.load.pause()
    try:
        with contextlib.redirect_stdout(out):
            tool.apply(host.session, who, backup)
            verified = tool.verify(host.session, who)
    finally:
        if host.load is not None:
            host.load.resume()
    rec["detail"] = " ".join(out.getvalue().split("\n")[:2]).strip()
    host.progress.artefacts.append(
        {
            "name": "lockdown backup",
            "path": backup.name,
            "description": "the ACLs before lockdown (bridgekeeper lockdown revert --backup)",
        }
    )
    if verified != 0:
        raise StepFailed("lockdown verify found znodes without their ACL")
