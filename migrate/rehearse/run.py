"""The rehearsal itself: pre-flight, roll 1 (same IBP), roll 2 (target IBP), optional lockdown, post-flight, with
live client load throughout and the checks after every step.

Each step is recorded as it happens (name, phase, node, start/end, outcome, every wait); the load pauses while
the checks read ZooKeeper, so "every acknowledged write is there" is asked of a quiet cluster, and resumes for
the next step. A step that cannot proceed safely (a node that would take a partition below
min.insync.replicas, a node that never rejoins its ISRs) fails its check and ends the rolls: the rest is
skipped, post-flight still runs, and the exit code is 1.
"""

from __future__ import annotations

import contextlib
import functools
import io
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import tenacity

from migrate.rehearse import state as S
from migrate.rehearse.checks import Checker, record
from migrate.rehearse.cluster import BROKER_IDENTITY, CONTROLLER_IDENTITY, Cluster, ClusterError
from migrate.rehearse.model import Artefact, CheckRecord, OpRecord, Phase, StepKind, StepRecord
from migrate.rehearse.model import Rehearsal as RehearsalDoc

if TYPE_CHECKING:
    from controller.zk.session import ZkSession
    from migrate.rehearse.display import Display
    from migrate.rehearse.load import LoadPool
    from migrate.rehearse.observe import Monitor

#: Topics the rehearsal creates for itself: one the min-ISR rule guards, one the reassignment drill moves.
GUARDED, MOVED = "rh-guarded", "rh-moved"


@dataclass
class Options:
    from_ibp: str
    to_ibp: str
    out_dir: Path
    drills: list[str] = field(default_factory=list)
    lockdown: bool = False
    rate: float = 8.0
    clients: tuple[str, ...] = ("confluent-kafka", "kafka-python")
    error_threshold: float = 0.1
    isr_timeout: float = 60.0
    min_isr_timeout: float = 60.0
    restart_timeout: float = 90.0
    reassignment_timeout: float = 120.0
    settle: float = 3.0  # load-only time before and after the rolls, so every step has traffic to judge
    step_settle: float = 2.0  # load after each restart, once the node is back in its ISRs
    zk_pause: float = 4.0
    session_timeout_ms: int = 6000
    #: A twin's production brokers it does not run: partitions with a replica there are not judged.
    absent: frozenset[int] = frozenset()
    #: A twin's shape for the report (brokers, topics, partitions, the brokers left out), None otherwise.
    twin: dict[str, Any] | None = None


class StepFailed(Exception):
    """A step's own wait failed (the check it names is recorded); the rolls stop here."""


class Rehearsal:
    def __init__(self, opts: Options, cluster: Cluster, display: Display) -> None:
        self.o = opts
        self.cluster = cluster
        self.show = display
        self.steps: list[StepRecord] = []
        self.checks: list[CheckRecord] = []
        self.artefacts: list[Artefact] = []
        self.checker = Checker(opts.to_ibp, opts.error_threshold)
        self.session: ZkSession | None = None
        self.monitor: Monitor | None = None
        self.load: LoadPool | None = None
        self.started = time.time()
        self._last_check = self.started
        self._disruptions: list[str] = []
        self._away: set[int] = set()  # nodes this step stopped, killed or froze (see Checker.client_errors)
        self._bumped = False
        self._bump_zxid: int | None = None
        self._expected_ibp: dict[int, str] = {}
        self._aborted = False

    # -- the whole run ---------------------------------------------------------------------------------------
    def run(self) -> RehearsalDoc:
        from migrate.rehearse.load import LoadPool
        from migrate.rehearse.observe import Monitor

        self.o.out_dir.mkdir(parents=True, exist_ok=True)
        try:
            self.show.status("starting the cluster")
            self.cluster.launch(self.show.line)
            self.session = self._connect()
            nodes = self.cluster.nodes()
            self._expected_ibp = {n.broker_id: self.cluster.ibp_of(n.broker_id) or self.o.from_ibp for n in nodes}
            self.monitor = Monitor(self.session, nodes)
            self.monitor.start()
            self._preflight_setup()
            # One node is always down during a roll: topics the load creates must fit on the others (Kafka
            # answers INVALID_REPLICATION_FACTOR, not a retriable error, when fewer brokers are alive than RF).
            rf = max(1, min(3, len(nodes) - 1))
            self.load = LoadPool([n.bootstrap for n in nodes], self.o.out_dir / "journal", clients=self.o.clients,
                                 rate=self.o.rate, replication_factor=rf)  # fmt: skip
            self.show.status("starting client load")
            self.load.start()
            self._step("pre-flight", "pre-flight", "check", None, self._settle)
            try:
                self._roll("roll-1", None)
                self._roll("roll-2", self.o.to_ibp)
                self._bumped = True
                if self.o.lockdown:
                    self._step("lockdown", "lockdown", "lockdown", None, self._lockdown)
            except StepFailed:
                self._aborted = True
                if not any(st["phase"] == "roll-2" for st in self.steps):
                    self._skip(f"roll 2: restart every node with IBP {self.o.to_ibp}", "roll-2", None)
            self._step("post-flight", "post-flight", "check", None, self._postflight)
        finally:
            if self.load is not None:
                self.load.stop()
            if self.monitor is not None:
                self.monitor.stop()
        return self.document()

    def close(self) -> None:
        if self.session is not None:
            with contextlib.suppress(Exception):
                self.session.close()
        self.cluster.close()

    def _connect(self) -> ZkSession:
        """The rehearsal's session; ZooKeeper not answering raises controller.exits.Unreachable (exit 3)."""
        from controller.exits import UsageError
        from migrate.connect import connect

        auth = [("digest", CONTROLLER_IDENTITY)] if self.cluster.mode == "owned" else []
        try:
            return connect(self.cluster.zookeeper, name="rehearse", timeout=30.0, auth=auth)
        except UsageError as exc:
            raise ClusterError(exc.message) from None

    # -- steps ------------------------------------------------------------------------------------------------
    def _step(
        self, name: str, phase: Phase, kind: StepKind, node: int | None, body: Callable[[StepRecord], None]
    ) -> None:
        rec: StepRecord = {"index": len(self.steps), "name": name, "phase": phase, "kind": kind,
                           "node": node, "started": time.time(), "ended": 0.0, "outcome": "ok", "detail": "",
                           "waits": []}  # fmt: skip
        self.steps.append(rec)
        self.show.status(name)
        failed: StepFailed | None = None
        try:
            body(rec)
        except StepFailed as exc:
            rec["outcome"], rec["detail"], failed = "failed", str(exc), exc
        except ClusterError as exc:
            rec["outcome"], rec["detail"] = "failed", str(exc)
            failed = StepFailed(str(exc))
        rec["ended"] = time.time()
        self._run_checks(rec)
        self.show.step(rec, [c for c in self.checks if c["step"] == rec["index"]])
        if failed is not None and phase != "post-flight":
            raise failed

    def _skip(self, name: str, phase: Phase, node: int | None) -> None:
        now = time.time()
        self.steps.append({"index": len(self.steps), "name": name, "phase": phase, "kind": "restart", "node": node,
                           "started": now, "ended": now, "outcome": "skipped",
                           "detail": "not run: an earlier step failed", "waits": []})  # fmt: skip

    def _wait(self, rec: StepRecord, what: str, probe: Callable[[], tuple[bool, str]], timeout: float) -> bool:
        """Poll ``probe`` until it says done or ``timeout`` passes, showing what is awaited and how long."""
        started = time.time()
        last = [""]

        def attempt() -> bool:
            done, detail = probe()
            last[0] = detail
            self.show.status(
                f"{rec['name']}: waiting for {what}: {detail} ({time.time() - started:.0f}/{timeout:.0f} s)"
            )
            return done

        retrying = tenacity.Retrying(
            stop=tenacity.stop_after_delay(timeout), wait=tenacity.wait_fixed(0.5),
            retry=tenacity.retry_if_result(lambda done: not done), retry_error_callback=lambda _s: False,
        )  # fmt: skip
        ok = bool(retrying(attempt))
        rec["waits"].append({"what": f"{what}" + ("" if ok else f" (timed out after {timeout:.0f} s: {last[0]})"),
                             "started": started, "ended": time.time(), "ok": ok})  # fmt: skip
        return ok

    def _snap(self) -> S.Snapshot:
        assert self.session is not None
        return S.read_state(self.session).scoped(self.o.absent)

    def _settle(self, rec: StepRecord, seconds: float | None = None) -> None:
        """Client load running against the cluster as it now is, before the checks judge the step: Kafka's
        upgrade test, likewise, wants the clients still acknowledging after every bounce."""
        wanted = self.o.settle if seconds is None else seconds
        since = time.time()
        self._wait(rec, f"{wanted:.0f} s of client load", lambda: (time.time() - since >= wanted,
                   f"{self.load.counts() if self.load else 0} operations"), wanted + 5)  # fmt: skip

    # -- pre-flight ---------------------------------------------------------------------------------------------
    def _preflight_setup(self) -> None:
        """Topics the rolls and drills need (created before the load starts): ``rh-guarded`` with
        min.insync.replicas=2 at RF 3, so the canRoll rule has something to guard; ``rh-moved`` for the
        reassignment drill."""
        from controller.exits import Unreachable
        from migrate.rehearse.admin import KafkaUnreachable, create_topics

        nodes = self.cluster.nodes()
        rf = min(3, len(nodes))
        min_isr = 2 if rf >= 3 else 1
        self.show.status("creating the rehearsal's topics")
        try:
            create_topics([n.bootstrap for n in nodes], {GUARDED: (6, rf, {"min.insync.replicas": str(min_isr)}),
                                                         MOVED: (3, min(2, rf), {})})  # fmt: skip
        except KafkaUnreachable as exc:  # the first Kafka request: no broker answers at all (exit 3, not a check)
            raise Unreachable(str(exc)) from None
        rec: StepRecord = {
            "index": -1,
            "name": "setup",
            "phase": "pre-flight",
            "kind": "check",
            "node": None,
            "started": time.time(),
            "ended": 0.0,
            "outcome": "ok",
            "detail": "",
            "waits": [],
        }
        ok = self._wait(rec, "the rehearsal's topics fully in sync", lambda: self._in_sync([GUARDED, MOVED]), 60)
        if not ok:
            raise ClusterError(f"the rehearsal's topics did not get a full ISR: {rec['waits'][-1]['what']}")
        snap = self._snap()
        self.checker.cluster_id = snap.cluster_id
        self.checker.topic_ids = {n: t.topic_id for n, t in snap.topics.items()}
        self.checker.epoch = snap.epoch
        self._save_artefacts("before", snap)

    def _in_sync(self, topics: Sequence[str]) -> tuple[bool, str]:
        snap = self._snap()
        short = [f"{t}-{p}" for (t, p), st in snap.states.items()
                 if t in topics and len(st.isr) < len(snap.replicas((t, p)))]  # fmt: skip
        present = all(t in snap.topics for t in topics)
        return present and not short, f"{len(short)} partition(s) under-replicated" if present else "topics pending"

    # -- rolls --------------------------------------------------------------------------------------------------
    def _roll(self, phase: Phase, ibp: str | None) -> None:
        """Strimzi's order: every node but the active controller first; the controller last, re-queued when the
        controller moved mid-roll onto a node still waiting."""
        queue = [n.broker_id for n in self.cluster.nodes()]
        label = "roll 1" if phase == "roll-1" else "roll 2"
        drilled = False
        while queue:
            controller = self._snap().controller
            pick = next((b for b in queue if b != controller), queue[0])
            queue.remove(pick)
            verb = f"restart node {pick}" + (f" with IBP {ibp}" if ibp else "")
            if pick == controller:
                verb += " (the active controller, last)"
            try:
                self._step(f"{label}: {verb}", phase, "restart", pick,
                           functools.partial(self._restart, broker_id=pick, ibp=ibp))  # fmt: skip
                if ibp:
                    self._expected_ibp[pick] = ibp
                if phase == "roll-1" and not drilled and queue:
                    drilled = True
                    for drill in self.o.drills:
                        self._drill(drill, phase)
            except StepFailed:
                for b in queue:
                    self._skip(f"{label}: restart node {b}", phase, b)
                raise
        if phase == "roll-2":
            snap = self._snap()
            self._bump_zxid = max((b.czxid for b in snap.brokers.values()), default=0)

    def _restart(self, rec: StepRecord, broker_id: int, ibp: str | None) -> None:
        blocked = self._can_roll(rec, broker_id)
        if blocked:
            raise StepFailed(f"node {broker_id} not restarted: {blocked}")
        snap = self._snap()
        if snap.controller == broker_id:
            self._disruptions.append(f"restart of node {broker_id}, the active controller")
        before = snap.brokers.get(broker_id)
        self._away.add(broker_id)
        self.show.status(f"{rec['name']}: stopping and starting node {broker_id}")
        self.cluster.restart(broker_id, ibp, self.o.restart_timeout)
        self._rejoin(rec, broker_id, before.czxid if before else 0)
        self._settle(rec, self.o.step_settle)

    def _can_roll(self, rec: StepRecord, broker_id: int) -> str:
        found: list[str] = []

        def probe() -> tuple[bool, str]:
            found[:] = S.would_drop_below_min_isr(self._snap(), broker_id, self.checker.default_min_isr)
            return not found, f"{len(found)} partition(s) would drop below min.insync.replicas"

        ok = self._wait(rec, f"node {broker_id} safe to restart (min.insync.replicas)", probe, self.o.min_isr_timeout)
        self.checks.append(record("min-isr-safe", rec["index"], ok,
                                  f"node {broker_id} could be restarted without dropping below min.insync.replicas"
                                  if ok else f"node {broker_id} would take partitions below min.insync.replicas",
                                  found or [f"checked every partition holding node {broker_id}"]))  # fmt: skip
        return "" if ok else "; ".join(found[:3])

    def _rejoin(self, rec: StepRecord, broker_id: int, old_czxid: int) -> None:
        registered = self._wait(rec, f"node {broker_id} registered again", lambda: (
            (b := self._snap().brokers.get(broker_id)) is not None and b.czxid != old_czxid, "not yet"),
            self.o.restart_timeout)  # fmt: skip
        missing: list[str] = []

        def probe() -> tuple[bool, str]:
            missing[:] = S.missing_from_isr(self._snap(), broker_id)
            return not missing, f"{len(missing)} partition(s) without node {broker_id} in the ISR"

        ok = registered and self._wait(rec, f"node {broker_id} back in every ISR", probe, self.o.isr_timeout)
        self.checks.append(record("isr-rejoined", rec["index"], ok,
                                  f"node {broker_id} is back in every ISR it belongs to" if ok else
                                  f"node {broker_id} did not rejoin {len(missing)} ISR(s) within "
                                  f"{self.o.isr_timeout:.0f} s", missing or [rec["waits"][-1]["what"]]))  # fmt: skip
        if not ok:
            raise StepFailed(f"node {broker_id} did not rejoin every ISR")

    # -- drills -------------------------------------------------------------------------------------------------
    def _drill(self, name: str, phase: Phase) -> None:
        from migrate.rehearse import drills

        run: Callable[[Rehearsal, StepRecord], None] = getattr(drills, name.replace("-", "_"))
        target = self._snap().controller
        self._step(f"drill {name}", phase, "drill", target if name != "pause-zookeeper" else None,
                   lambda rec: run(self, rec))  # fmt: skip

    # -- lockdown and post-flight ---------------------------------------------------------------------------------
    def _lockdown(self, rec: StepRecord) -> None:
        from migrate.lockdown import tool
        from zkmodel.znode_acls import Identities, digest_identity

        assert self.session is not None
        who = Identities(digest_identity(f"digest:{CONTROLLER_IDENTITY}", "controller"),
                         digest_identity(f"digest:{BROKER_IDENTITY}", "broker"))  # fmt: skip
        backup = self.o.out_dir / "lockdown-backup.json"
        out = io.StringIO()
        # Quiet while locking: the nodes here run without zookeeper.set.acl (below the gate brokers still write
        # with their own identity), so a znode created between apply and verify would carry the open ACL.
        if self.load is not None:
            self.load.pause()
        try:
            with contextlib.redirect_stdout(out):
                tool.apply(self.session, who, backup)
                verified = tool.verify(self.session, who)
        finally:
            if self.load is not None:
                self.load.resume()
        rec["detail"] = " ".join(out.getvalue().split("\n")[:2]).strip()
        self.artefacts.append(
            {
                "name": "lockdown backup",
                "path": backup.name,
                "description": "the ACLs before lockdown (bridgekeeper lockdown revert --backup)",
            }
        )
        if verified != 0:
            raise StepFailed("lockdown verify found znodes without their ACL")

    def _postflight(self, rec: StepRecord) -> None:
        self._settle(rec)
        self._wait(rec, "every reassignment finished", self._settled, self.o.reassignment_timeout)
        self._save_artefacts("after", self._snap())

    def _settled(self) -> tuple[bool, str]:
        snap = self._snap()
        moving = [f"{t}-{p}" for t, p in snap.reassigning()]
        if snap.reassign_znode:
            moving.append("/admin/reassign_partitions")
        return not moving, "still moving: " + ", ".join(moving[:5]) + (" ..." if len(moving) > 5 else "")

    def _save_artefacts(self, when: str, snap: S.Snapshot) -> None:
        from migrate.atomic import write_atomic
        from migrate.reassign.plan_files import format_assignment
        from migrate.snapshot.export import KAFKA_ROOTS, walk
        from migrate.snapshot.rows import RowWriter

        assert self.session is not None
        assignment = {(t, p): list(r) for t, a in snap.topics.items() for p, r in a.partitions.items()}
        name = f"assignment-{when}.json"
        write_atomic(self.o.out_dir / name, (format_assignment(assignment) + "\n").encode())
        self.artefacts.append({"name": f"assignment {when}", "path": name, "description":
                               f"every partition's replicas {when} the rehearsal, in kafka-reassign-partitions' "
                               "format (a rollback plan: bridgekeeper reassign --execute)"})  # fmt: skip
        export = f"zookeeper-{when}.jsonl"
        with RowWriter(self.o.out_dir / export, "jsonl") as rows:
            for node in walk(self.session, KAFKA_ROOTS):
                rows.write(node)
        self.artefacts.append({"name": f"ZooKeeper export {when}", "path": export, "description":
                               f"the Kafka subtrees of ZooKeeper {when} the rehearsal (bridgekeeper snapshot export "
                               "format; bridgekeeper snapshot check reads it)"})  # fmt: skip

    # -- checks -------------------------------------------------------------------------------------------------
    def _run_checks(self, rec: StepRecord) -> None:
        from migrate.rehearse import ledger

        assert self.monitor is not None and self.session is not None
        self.show.status(f"{rec['name']}: checking (client load paused)")
        if self.load is not None:
            self.load.pause()
        try:
            self.monitor.sample()
            step, now = rec["index"], time.time()
            ops = self._ops_between(self._last_check, now)
            snap = self._snap()
            c = self.checker
            final = rec["phase"] == "post-flight"
            new = [
                c.one_controller(step, snap, self.monitor),
                c.no_offline(step, snap),
                c.ids_unchanged(step, snap, ops),
                c.epoch_explained(step, snap, self._disruptions),
                c.logs_clean(step, self.cluster.nodes()),
                c.client_errors(step, ops, self._recovered_since(rec), self._away),
                c.forwarding_share(step, self.monitor, self._bumped),
            ]
            if self.load is not None:
                found = ledger.verify(self.load.records(), self.session)
                new.append(record("acknowledged-writes", step, found.ok, found.summary, found.evidence))
            if rec["phase"] == "pre-flight" or final:
                new.append(c.brokers_registered(step, snap, self.monitor, self._expected_ibp))
                new.append(c.reassignments_finished(step, snap))
            if self._bumped and self._bump_zxid is not None:
                new.append(self._zk_writes(step))
            if final and self._aborted:
                new.append(record("brokers-registered", step, False, "the rolls did not finish",
                                  [s["name"] for s in self.steps if s["outcome"] != "ok"]))  # fmt: skip
            self.checks.extend(new)
            self._disruptions = []
            self._away = set()
            self._last_check = now
        finally:
            if self.load is not None and rec["phase"] != "post-flight":
                self.load.resume()

    @staticmethod
    def _recovered_since(rec: StepRecord) -> float | None:
        """A drill's recovery: the client load it lets run once the fault is over (its last settle wait)."""
        if rec["kind"] != "drill":
            return None
        settles = [w["started"] for w in rec["waits"] if w["what"].endswith("of client load")]
        return settles[-1] if settles else rec["ended"]

    def _zk_writes(self, step: int) -> CheckRecord:
        from migrate.rehearse import zkrecords

        assert self.session is not None and self._bump_zxid is not None
        if not self.checker.bump_forwards:
            return record("no-broker-zk-writes", step, True, f"not applicable: {self.o.to_ibp} is below the "
                          "forwarding gate, brokers still write ZooKeeper by design", [])  # fmt: skip
        chroot = "/" + self.cluster.zookeeper.split("/", 1)[1] if "/" in self.cluster.zookeeper else ""
        znodes = zkrecords.changed_znodes(self.session)
        audit = zkrecords.read_audit(self.cluster.txn_log_dirs(), chroot)
        operator = {self.session.session_id: "this rehearsal's lockdown"} if self.o.lockdown else {}
        v = zkrecords.check_writes(audit, self._bump_zxid, znodes, operator)
        return record(
            "no-broker-zk-writes",
            step,
            v.ok,
            v.summary,
            [f"the bump completed at zxid 0x{self._bump_zxid:x} (last node's registration)", *v.evidence],
        )

    def _ops_between(self, start: float, end: float) -> list[OpRecord]:
        if self.load is None:
            return []
        return [o for o in self.load.records() if start < o["ended"] <= end]

    # -- the record ---------------------------------------------------------------------------------------------
    def document(self, failure: str | None = None) -> RehearsalDoc:
        """The record so far; ``failure`` (an exception that stopped the run) is recorded as a failed step."""
        if failure is not None:
            self._aborted = True
            now = time.time()
            self.steps.append({"index": len(self.steps), "name": "stopped", "phase": "post-flight", "kind": "check",
                               "node": None, "started": now, "ended": now, "outcome": "failed", "detail": failure,
                               "waits": []})  # fmt: skip
        routes, events = self.monitor.snapshot() if self.monitor else ([], [])
        ops = self.load.records() if self.load else []
        passed = bool(self.checks) and all(c["verdict"] == "pass" for c in self.checks) and not self._aborted
        return {
            "tool": "bridgekeeper rehearse", "version": 1, "mode": self.cluster.mode,  # type: ignore[typeddict-item]
            "from_ibp": self.o.from_ibp, "to_ibp": self.o.to_ibp,
            "nodes": sorted(self._expected_ibp), "zk_servers": self.cluster.zk_servers,
            "drills": list(self.o.drills), "lockdown": self.o.lockdown, "settings": self.settings(),
            "started": self.started, "ended": time.time(), "passed": passed, "exit_code": 0 if passed else 1,
            "steps": self.steps, "checks": self.checks, "ops": ops, "routes": routes, "events": events,
            "artefacts": self.artefacts, "twin": self.o.twin,
            "failovers": list(self.monitor.failovers) if self.monitor else [],
        }  # fmt: skip

    def settings(self) -> dict[str, Any]:
        o = self.o
        return {"rate": o.rate, "clients": list(o.clients), "error_threshold": o.error_threshold,
                "settle": o.settle, "step_settle": o.step_settle,
                "isr_timeout": o.isr_timeout, "min_isr_timeout": o.min_isr_timeout,
                "restart_timeout": o.restart_timeout, "reassignment_timeout": o.reassignment_timeout,
                "zk_pause": o.zk_pause, "session_timeout_ms": o.session_timeout_ms}  # fmt: skip
