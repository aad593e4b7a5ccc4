"""Fault drills, each run as its own step in the middle of roll 1: the checks after it must pass as after any
step, and each fault is marked on the timeline.

- ``kill-controller``: SIGKILL the active controller (no controlled shutdown), wait for another to be elected,
  start it again.
- ``pause-zookeeper``: freeze a ZooKeeper server (the ensemble's leader) for ``--zk-pause`` seconds.
- ``restart-during-reassignment``: start a throttled reassignment of ``rh-moved``, restart a broker it is adding
  replicas to while it runs, lift the throttle, wait for it to finish.
- ``freeze-controller``: freeze the active controller's process past its ZooKeeper session timeout, so ZooKeeper
  expires its sessions (a node cut off from ZooKeeper), then thaw it: it must find itself deposed, write nothing
  with its old epoch, and register again. (The soak's ``expire-session`` is another fault: the session ended on
  the server, the process untouched.)

The faults themselves are :mod:`testing.faults`' (the failover soak's too): a drill aims one, waits through it on
the step's record, and tells the checks what it disrupted.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from migrate.rehearse import admin
from migrate.rehearse.host import MOVED, StepFailed
from migrate.rehearse.state import Broker
from testing import faults

if TYPE_CHECKING:
    from migrate.rehearse.host import StepHost
    from migrate.rehearse.model import StepRecord

#: Catch-up is modelled at 10 MiB per partition: at this rate a moved replica needs about 15 s.
THROTTLE = str(700 * 1024)


def _aim(host: StepHost, drill: str, how: str, mark: str) -> tuple[int, Broker | None]:
    """The active controller and its registration now (one read): the drill's target, and the czxid its
    re-registration must differ from. Says, before the drill acts, that the step moves the controller and
    takes the node down (``how`` and ``mark`` name it as ``{}``), so the checks judge what follows by it."""
    snap = host.snapshot()
    if snap.controller is None:
        raise StepFailed("no active controller to aim the drill at")
    victim = snap.controller
    host.disrupted(f"drill {drill}: {how.format(victim)}")
    host.mark(mark.format(victim))
    host.took_down(victim)
    return victim, snap.brokers.get(victim)


def _all_in_sync(host: StepHost) -> tuple[bool, str]:
    snap = host.snapshot()
    short = [
        tp for tp, st in snap.states.items() if tp[0] not in snap.deleting and len(st.isr) < len(snap.replicas(tp))
    ]
    live = len(snap.brokers) == len(host.cluster.nodes())
    return live and not short and snap.controller is not None, f"{len(short)} partition(s) under-replicated"


def kill_controller(host: StepHost, rec: StepRecord) -> None:
    victim, old = _aim(
        host, "kill-controller", "SIGKILL of node {}, the active controller", "SIGKILL node {} (controller)"
    )

    def another_elected() -> tuple[bool, str]:
        c = host.snapshot().controller
        return c is not None and c != victim, "none yet"

    def elected() -> None:
        if not host.wait(rec, "another controller elected", another_elected, 60):
            raise StepFailed(f"no new controller after node {victim} was killed")
        host.mark(f"start node {victim}")

    faults.kill_node(host.cluster, victim, until=elected, start_timeout=host.options.restart_timeout)
    host.rejoin(rec, victim, old.czxid if old else 0)
    host.settle(rec, host.options.step_settle)
    rec["detail"] = f"node {victim} killed with SIGKILL while it was the active controller, then started again"


def pause_zookeeper(host: StepHost, rec: StepRecord) -> None:
    pause = host.options.zk_pause

    def frozen(what: str) -> str:
        host.disrupted(f"drill pause-zookeeper: {what} frozen for {pause:.0f} s")
        host.mark(f"pause {what}")
        started = time.time()

        def over() -> tuple[bool, str]:
            return time.time() - started >= pause, f"{time.time() - started:.0f}/{pause:.0f} s"

        host.wait(rec, f"{what} frozen", over, pause + 5)
        return what

    what = faults.freeze_zookeeper(host.cluster, frozen)
    host.mark(f"resume {what}")
    if not host.wait(
        rec, "every broker registered and every ISR full", lambda: _all_in_sync(host), host.options.isr_timeout
    ):
        raise StepFailed(f"the cluster did not recover within {host.options.isr_timeout:.0f} s of the ZooKeeper pause")
    host.settle(rec, host.options.step_settle)
    rec["detail"] = f"{what} frozen (SIGSTOP) for {pause:.0f} s, then resumed"


def restart_during_reassignment(host: StepHost, rec: StepRecord) -> None:
    boot = [n.bootstrap for n in host.cluster.nodes()]
    snap = host.snapshot()
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
    admin.set_configs(
        boot,
        {MOVED: {"leader.replication.throttled.replicas": "*", "follower.replication.throttled.replicas": "*"}},
        dict.fromkeys(brokers, rates),
    )
    host.mark(f"reassign {len(targets)} partition(s) of {MOVED}")
    admin.reassign(boot, targets)
    before = host.snapshot()
    moving = len(before.reassigning())
    old = before.brokers.get(victim)
    host.mark(f"restart node {victim} mid-reassignment")
    host.took_down(victim)
    if controller == victim:
        host.disrupted(f"drill restart-during-reassignment: restart of node {victim}, the controller")
    faults.restart_node(host.cluster, victim, host.options.restart_timeout)
    still = len(host.snapshot().reassigning())
    admin.set_configs(
        boot,
        {MOVED: {"leader.replication.throttled.replicas": None, "follower.replication.throttled.replicas": None}},
        {b: dict.fromkeys(rates, None) for b in brokers},
    )
    host.rejoin(rec, victim, old.czxid if old else 0)
    done = host.wait(rec, "the reassignment finished", host.settled, host.options.reassignment_timeout)
    host.settle(rec, host.options.step_settle)
    final = host.snapshot()
    wrong = [
        f"{t}-{p}: {list(final.replicas((t, p)))}, wanted {r}"
        for (t, p), r in targets.items()
        if sorted(final.replicas((t, p))) != sorted(r)
    ]
    rec["detail"] = (
        f"{len(targets)} partition(s) of {MOVED} moved with a {int(THROTTLE) // 1024} KiB/s throttle; "
        f"{moving} were moving when node {victim} (adding replicas) was restarted, {still} after"
    )
    if not done or wrong:
        raise StepFailed("the reassignment did not complete: " + ("; ".join(wrong) or "timed out"))


def freeze_controller(host: StepHost, rec: StepRecord) -> None:
    victim, old = _aim(
        host,
        "freeze-controller",
        "node {}, the active controller, lost its ZooKeeper session",
        "freeze node {} (controller) past its session",
    )

    def gone() -> tuple[bool, str]:
        b = host.snapshot().brokers.get(victim)
        return b is None or (old is not None and b.czxid != old.czxid), "registration still held"

    def expired() -> bool:
        timeout = host.options.session_timeout_ms / 1000 * 4
        return host.wait(rec, f"ZooKeeper to expire node {victim}'s session", gone, timeout)

    in_time = faults.freeze_node(host.cluster, victim, expired)
    host.mark(f"thaw node {victim}")
    if not in_time:
        raise StepFailed(f"node {victim}'s session did not expire while it was frozen")
    host.rejoin(rec, victim, old.czxid if old else 0)
    host.settle(rec, host.options.step_settle)
    rec["detail"] = (
        f"node {victim} (the active controller) frozen with SIGSTOP until ZooKeeper expired its session, "
        "then thawed: it registered again with a new session"
    )
