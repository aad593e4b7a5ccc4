"""The rehearsal itself: pre-flight, roll 1 (same IBP), roll 2 (target IBP), optional lockdown, post-flight, with
live client load throughout and the checks after every step.

Each step is recorded as it happens (name, phase, node, start/end, outcome, every wait); the load pauses while
the checks read ZooKeeper, so "every acknowledged write is there" is asked of a quiet cluster, and resumes for
the next step. A step that cannot proceed safely (a node that would take a partition below
min.insync.replicas, a node that never rejoins its ISRs) fails its check and ends the rolls: the rest is
skipped, post-flight still runs, and the exit code is 1.

Here: the run from start to record, and the step loop (:meth:`Rehearsal.step`, its waits and settles). The
steps' bodies are :mod:`~migrate.rehearse.steps` (rolls, restarts, lockdown) and :mod:`~migrate.rehearse.drills`;
the checks after each step, post-flight and the artefacts are :mod:`~migrate.rehearse.postflight`. They see the
rehearsal through the protocols of :mod:`~migrate.rehearse.host`, which :class:`Rehearsal` implements.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import tenacity

from migrate.rehearse import postflight, steps
from migrate.rehearse import state as S
from migrate.rehearse.checks import Checker
from migrate.rehearse.cluster import CONTROLLER_IDENTITY, Cluster, ClusterError
from migrate.rehearse.host import GUARDED, MOVED, Options, Probe, Progress, StepFailed
from migrate.rehearse.model import Phase, StepKind, StepRecord
from migrate.rehearse.model import Rehearsal as RehearsalDoc

if TYPE_CHECKING:
    from controller.zk.session import ZkSession
    from migrate.rehearse.display import Display
    from migrate.rehearse.load import LoadPool
    from migrate.rehearse.observe import Monitor


class Rehearsal:
    """One rehearsal on one cluster: :meth:`run` it, always :meth:`close` it; :meth:`document` is its record."""

    def __init__(self, opts: Options, cluster: Cluster, display: Display) -> None:
        self.options = opts
        self.cluster = cluster
        self.show = display
        self.checker = Checker(opts.to_ibp, opts.error_threshold)
        self.session: ZkSession | None = None
        self.monitor: Monitor | None = None
        self.load: LoadPool | None = None
        self.started = time.time()
        self.progress = Progress(last_check=self.started)

    # -- the whole run ---------------------------------------------------------------------------------------
    def run(self) -> RehearsalDoc:
        from migrate.rehearse.load import LoadPool
        from migrate.rehearse.observe import Monitor

        self.options.out_dir.mkdir(parents=True, exist_ok=True)
        try:
            self.show.status("starting the cluster")
            self.cluster.launch(self.show.line)
            self.session = self._connect()
            nodes = self.cluster.nodes()
            self.progress.expected_ibp = {
                n.broker_id: self.cluster.ibp_of(n.broker_id) or self.options.from_ibp for n in nodes
            }
            self.monitor = Monitor(self.session, nodes)
            self.monitor.start()
            self._preflight_setup()
            # One node is always down during a roll: topics the load creates must fit on the others (Kafka
            # answers INVALID_REPLICATION_FACTOR, not a retriable error, when fewer brokers are alive than RF).
            rf = max(1, min(3, len(nodes) - 1))
            self.load = LoadPool(
                [n.bootstrap for n in nodes],
                self.options.out_dir / "journal",
                clients=self.options.clients,
                rate=self.options.rate,
                replication_factor=rf,
            )
            self.show.status("starting client load")
            self.load.start()
            self.step("pre-flight", "pre-flight", "check", None, self.settle)
            try:
                steps.roll(self, "roll-1", None)
                steps.roll(self, "roll-2", self.options.to_ibp)
                self.progress.bumped = True
                if self.options.lockdown:
                    self.step("lockdown", "lockdown", "lockdown", None, lambda rec: steps.lockdown(self, rec))
            except StepFailed:
                self.progress.aborted = True
                if not any(st["phase"] == "roll-2" for st in self.progress.steps):
                    self.skip(f"roll 2: restart every node with IBP {self.options.to_ibp}", "roll-2", None)
            self.step("post-flight", "post-flight", "check", None, lambda rec: postflight.postflight(self, rec))
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

    # -- the step loop ------------------------------------------------------------------------------------------
    def step(
        self, name: str, phase: Phase, kind: StepKind, node: int | None, body: Callable[[StepRecord], None]
    ) -> None:
        rec: StepRecord = {
            "index": len(self.progress.steps),
            "name": name,
            "phase": phase,
            "kind": kind,
            "node": node,
            "started": time.time(),
            "ended": 0.0,
            "outcome": "ok",
            "detail": "",
            "waits": [],
        }
        self.progress.steps.append(rec)
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
        postflight.run_checks(self, rec)
        self.show.step(rec, [c for c in self.progress.checks if c["step"] == rec["index"]])
        if failed is not None and phase != "post-flight":
            raise failed

    def skip(self, name: str, phase: Phase, node: int | None) -> None:
        now = time.time()
        self.progress.steps.append(
            {
                "index": len(self.progress.steps),
                "name": name,
                "phase": phase,
                "kind": "restart",
                "node": node,
                "started": now,
                "ended": now,
                "outcome": "skipped",
                "detail": "not run: an earlier step failed",
                "waits": [],
            }
        )

    def wait(self, rec: StepRecord, what: str, probe: Probe, timeout: float) -> bool:
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
            stop=tenacity.stop_after_delay(timeout),
            wait=tenacity.wait_fixed(0.5),
            retry=tenacity.retry_if_result(lambda done: not done),
            retry_error_callback=lambda _s: False,
        )
        ok = bool(retrying(attempt))
        outcome = "" if ok else f" (timed out after {timeout:.0f} s: {last[0]})"
        rec["waits"].append({"what": f"{what}{outcome}", "started": started, "ended": time.time(), "ok": ok})
        return ok

    def snapshot(self) -> S.Snapshot:
        assert self.session is not None
        return S.read_state(self.session).scoped(self.options.absent)

    def settle(self, rec: StepRecord, seconds: float | None = None) -> None:
        """Client load running against the cluster as it now is, before the checks judge the step: Kafka's
        upgrade test, likewise, wants the clients still acknowledging after every bounce."""
        wanted = self.options.settle if seconds is None else seconds
        since = time.time()

        def probe() -> tuple[bool, str]:
            return time.time() - since >= wanted, f"{self.load.counts() if self.load else 0} operations"

        self.wait(rec, f"{wanted:.0f} s of client load", probe, wanted + 5)

    def settled(self) -> tuple[bool, str]:
        return postflight.settled(self.snapshot())

    def rejoin(self, rec: StepRecord, broker_id: int, old_czxid: int) -> None:
        steps.rejoin(self, rec, broker_id, old_czxid)

    def mark(self, label: str) -> None:
        assert self.monitor is not None
        self.monitor.mark("drill", label)

    def disrupted(self, what: str) -> None:
        self.progress.disruptions.append(what)

    def took_down(self, broker_id: int) -> None:
        self.progress.away.add(broker_id)

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
            topics = {GUARDED: (6, rf, {"min.insync.replicas": str(min_isr)}), MOVED: (3, min(2, rf), {})}
            create_topics([n.bootstrap for n in nodes], topics)
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
        ok = self.wait(rec, "the rehearsal's topics fully in sync", lambda: self._in_sync([GUARDED, MOVED]), 60)
        if not ok:
            raise ClusterError(f"the rehearsal's topics did not get a full ISR: {rec['waits'][-1]['what']}")
        snap = self.snapshot()
        self.checker.cluster_id = snap.cluster_id
        self.checker.topic_ids = {n: t.topic_id for n, t in snap.topics.items()}
        self.checker.epoch = snap.epoch
        postflight.save_artefacts(self, "before", snap)

    def _in_sync(self, topics: Sequence[str]) -> tuple[bool, str]:
        snap = self.snapshot()
        short = [
            f"{t}-{p}" for (t, p), st in snap.states.items() if t in topics and len(st.isr) < len(snap.replicas((t, p)))
        ]
        present = all(t in snap.topics for t in topics)
        return present and not short, f"{len(short)} partition(s) under-replicated" if present else "topics pending"

    # -- the record ---------------------------------------------------------------------------------------------
    def document(self, failure: str | None = None) -> RehearsalDoc:
        """The record so far; ``failure`` (an exception that stopped the run) is recorded as a failed step."""
        p, o = self.progress, self.options
        if failure is not None:
            p.aborted = True
            now = time.time()
            p.steps.append(
                {
                    "index": len(p.steps),
                    "name": "stopped",
                    "phase": "post-flight",
                    "kind": "check",
                    "node": None,
                    "started": now,
                    "ended": now,
                    "outcome": "failed",
                    "detail": failure,
                    "waits": [],
                }
            )
        routes, events = self.monitor.snapshot() if self.monitor else ([], [])
        ops = self.load.records() if self.load else []
        passed = bool(p.checks) and all(c["verdict"] == "pass" for c in p.checks) and not p.aborted
        return {
            "tool": "bridgekeeper rehearse",
            "version": 1,
            "mode": self.cluster.mode,  # type: ignore[typeddict-item]
            "from_ibp": o.from_ibp,
            "to_ibp": o.to_ibp,
            "nodes": sorted(p.expected_ibp),
            "zk_servers": self.cluster.zk_servers,
            "drills": list(o.drills),
            "lockdown": o.lockdown,
            "settings": self.settings(),
            "started": self.started,
            "ended": time.time(),
            "passed": passed,
            "exit_code": 0 if passed else 1,
            "steps": p.steps,
            "checks": p.checks,
            "ops": ops,
            "routes": routes,
            "events": events,
            "artefacts": p.artefacts,
            "twin": o.twin,
            "failovers": list(self.monitor.failovers) if self.monitor else [],
        }

    def settings(self) -> dict[str, Any]:
        o = self.options
        return {
            "rate": o.rate,
            "clients": list(o.clients),
            "error_threshold": o.error_threshold,
            "settle": o.settle,
            "step_settle": o.step_settle,
            "isr_timeout": o.isr_timeout,
            "min_isr_timeout": o.min_isr_timeout,
            "restart_timeout": o.restart_timeout,
            "reassignment_timeout": o.reassignment_timeout,
            "zk_pause": o.zk_pause,
            "session_timeout_ms": o.session_timeout_ms,
        }
