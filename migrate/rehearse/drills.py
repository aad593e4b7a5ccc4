"""Fault drills, each run as its own step in the middle of roll 1: the checks after it must pass as after any
step, and each fault is marked on the timeline.

- ``kill-controller``: SIGKILL the active controller (no controlled shutdown), wait for another to be elected,
  start it again.
- ``pause-zookeeper``: freeze a ZooKeeper server (the ensemble's leader) for ``--zk-pause`` seconds.
- ``restart-during-reassignment``: start a throttled reassignment of ``rh-moved``, restart a broker it is adding
  replicas to while it runs, lift the throttle, wait for it to finish.
- ``expire-session``: freeze the active controller's process past its ZooKeeper session timeout, so ZooKeeper
  expires its sessions (a node cut off from ZooKeeper), then thaw it: it must find itself deposed, write nothing
  with its old epoch, and register again.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from migrate.rehearse import admin
from migrate.rehearse.run import MOVED, StepFailed
from migrate.rehearse.state import Broker

if TYPE_CHECKING:
    from migrate.rehearse.model import StepRecord
    from migrate.rehearse.run import Rehearsal

#: Catch-up is modelled at 10 MiB per partition: at this rate a moved replica needs about 15 s.
THROTTLE = str(700 * 1024)


def _mark(rh: Rehearsal, label: str) -> None:
    assert rh.monitor is not None
    rh.monitor.mark("drill", label)


def _aim(rh: Rehearsal) -> tuple[int, Broker | None]:
    """The active controller and its registration now (one read): the drill's target, and the czxid its
    re-registration must differ from."""
    snap = rh._snap()
    if snap.controller is None:
        raise StepFailed("no active controller to aim the drill at")
    return snap.controller, snap.brokers.get(snap.controller)


def _all_in_sync(rh: Rehearsal) -> tuple[bool, str]:
    snap = rh._snap()
    short = [
        tp for tp, st in snap.states.items() if tp[0] not in snap.deleting and len(st.isr) < len(snap.replicas(tp))
    ]
    live = len(snap.brokers) == len(rh.cluster.nodes())
    return live and not short and snap.controller is not None, f"{len(short)} partition(s) under-replicated"


def kill_controller(rh: Rehearsal, rec: StepRecord) -> None:
    victim, old = _aim(rh)
    rh._disruptions.append(f"drill kill-controller: SIGKILL of node {victim}, the active controller")
    _mark(rh, f"SIGKILL node {victim} (controller)")
    rh._away.add(victim)
    rh.cluster.kill(victim)
    if not rh._wait(rec, "another controller elected", lambda: (
            (c := rh._snap().controller) is not None and c != victim, "none yet"), 60):  # fmt: skip
        raise StepFailed(f"no new controller after node {victim} was killed")
    _mark(rh, f"start node {victim}")
    rh.cluster.start(victim, rh.o.restart_timeout)
    rh._rejoin(rec, victim, old.czxid if old else 0)
    rh._settle(rec, rh.o.step_settle)
    rec["detail"] = f"node {victim} killed with SIGKILL while it was the active controller, then started again"


def pause_zookeeper(rh: Rehearsal, rec: StepRecord) -> None:
    what = rh.cluster.pause_zookeeper()
    rh._disruptions.append(f"drill pause-zookeeper: {what} frozen for {rh.o.zk_pause:.0f} s")
    _mark(rh, f"pause {what}")
    started = time.time()
    try:
        rh._wait(rec, f"{what} frozen", lambda: (time.time() - started >= rh.o.zk_pause,
                 f"{time.time() - started:.0f}/{rh.o.zk_pause:.0f} s"), rh.o.zk_pause + 5)  # fmt: skip
    finally:
        rh.cluster.resume_zookeeper()
    _mark(rh, f"resume {what}")
    if not rh._wait(rec, "every broker registered and every ISR full", lambda: _all_in_sync(rh), rh.o.isr_timeout):
        raise StepFailed(f"the cluster did not recover within {rh.o.isr_timeout:.0f} s of the ZooKeeper pause")
    rh._settle(rec, rh.o.step_settle)
    rec["detail"] = f"{what} frozen (SIGSTOP) for {rh.o.zk_pause:.0f} s, then resumed"


def restart_during_reassignment(rh: Rehearsal, rec: StepRecord) -> None:
    boot = [n.bootstrap for n in rh.cluster.nodes()]
    snap = rh._snap()
    brokers = sorted(snap.brokers)
    controller = snap.controller
    if MOVED not in snap.topics or len(brokers) < 3:
        raise StepFailed(f"the drill needs topic {MOVED} and at least 3 brokers")
    targets: dict[tuple[str, int], list[int]] = {}
    adding: dict[int, int] = {}
    for p, replicas in sorted(snap.topics[MOVED].partitions.items()):
        spare = [b for b in brokers if b not in replicas and b != controller] or [
            b for b in brokers if b not in replicas
        ]
        if not spare:
            continue
        targets[(MOVED, p)] = [spare[0], *list(replicas)[1:]]
        adding[spare[0]] = adding.get(spare[0], 0) + 1
    victim = max(adding, key=lambda b: adding[b])
    rates = {"leader.replication.throttled.rate": THROTTLE, "follower.replication.throttled.rate": THROTTLE}
    admin.set_configs(boot, {MOVED: {"leader.replication.throttled.replicas": "*",
                                     "follower.replication.throttled.replicas": "*"}},
                      dict.fromkeys(brokers, rates))  # fmt: skip
    _mark(rh, f"reassign {len(targets)} partition(s) of {MOVED}")
    admin.reassign(boot, targets)
    before = rh._snap()
    moving = len(before.reassigning())
    old = before.brokers.get(victim)
    _mark(rh, f"restart node {victim} mid-reassignment")
    rh._away.add(victim)
    if controller == victim:
        rh._disruptions.append(f"drill restart-during-reassignment: restart of node {victim}, the controller")
    rh.cluster.restart(victim, None, rh.o.restart_timeout)
    still = len(rh._snap().reassigning())
    admin.set_configs(boot, {MOVED: {"leader.replication.throttled.replicas": None,
                                     "follower.replication.throttled.replicas": None}},
                      {b: dict.fromkeys(rates, None) for b in brokers})  # fmt: skip
    rh._rejoin(rec, victim, old.czxid if old else 0)
    done = rh._wait(rec, "the reassignment finished", rh._settled, rh.o.reassignment_timeout)
    rh._settle(rec, rh.o.step_settle)
    final = rh._snap()
    wrong = [f"{t}-{p}: {list(final.replicas((t, p)))}, wanted {r}" for (t, p), r in targets.items()
             if sorted(final.replicas((t, p))) != sorted(r)]  # fmt: skip
    rec["detail"] = (
        f"{len(targets)} partition(s) of {MOVED} moved with a {int(THROTTLE) // 1024} KiB/s throttle; "
        f"{moving} were moving when node {victim} (adding replicas) was restarted, {still} after"
    )
    if not done or wrong:
        raise StepFailed("the reassignment did not complete: " + ("; ".join(wrong) or "timed out"))


def expire_session(rh: Rehearsal, rec: StepRecord) -> None:
    victim, old = _aim(rh)
    rh._disruptions.append(f"drill expire-session: node {victim}, the active controller, lost its ZooKeeper session")
    _mark(rh, f"freeze node {victim} (controller) past its session")
    rh._away.add(victim)
    rh.cluster.freeze(victim)
    try:
        expired = rh._wait(rec, f"ZooKeeper to expire node {victim}'s session", lambda: (
            (b := rh._snap().brokers.get(victim)) is None or (old is not None and b.czxid != old.czxid),
            "registration still held"), rh.o.session_timeout_ms / 1000 * 4)  # fmt: skip
    finally:
        rh.cluster.thaw(victim)
    _mark(rh, f"thaw node {victim}")
    if not expired:
        raise StepFailed(f"node {victim}'s session did not expire while it was frozen")
    rh._rejoin(rec, victim, old.czxid if old else 0)
    rh._settle(rec, rh.o.step_settle)
    rec["detail"] = (f"node {victim} (the active controller) frozen with SIGSTOP until ZooKeeper expired its session, "
                     "then thawed: it registered again with a new session")  # fmt: skip
