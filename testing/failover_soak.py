"""Repeated induced failovers under client load: the driver behind ``tests/reliability/test_failovers.py``
and ``python -m bench.failover_soak``, one cycle for both.

A cluster of its own (:class:`~migrate.rehearse.cluster.OwnedCluster`: a ZooKeeper ensemble and N node processes,
the controller with a ZooKeeper identity, hence a session, of its own) runs the rehearsal's client load
(:class:`~migrate.rehearse.load.LoadPool`: confluent-kafka and kafka-python workers journaling every operation).
Each cycle induces one fault, waits for the cluster to recover by itself, lets the load run on the recovered
cluster, pauses the load and checks. The kinds, in turn:

- ``freeze-controller``: SIGSTOP of the active controller's process until ZooKeeper expired both its sessions,
  then SIGCONT: a zombie that wakes up mid-write and must find itself deposed.
- ``expire-session``: the controller's ZooKeeper session really expired on the server, without touching the
  process (:func:`testing.expire.expire_session`: a second connection with the session's id and password,
  closed); every other time the node's broker session is expired with it.
- ``kill-controller``: SIGKILL of the active controller, then a start once ZooKeeper has expired its sessions.
- ``zookeeper-leader``: the ensemble's leader SIGKILLed and started again, or (every other time) frozen past the
  nodes' session timeout and resumed.

After every cycle, with the load paused, the checks of :mod:`testing.soak_checks`; the records, the summary and the
kinds' names are :mod:`testing.soak_model`'s (re-exported here, the soak's one import for tests and bench).
"""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from migrate.rehearse import state as S
from migrate.rehearse.cluster import CONTROLLER_IDENTITY, ClusterError, OwnedCluster
from testing import faults
from testing.soak_checks import CycleChecks, active_by_metrics
from testing.soak_model import DEPOSING, KINDS, Failover, Say, SoakError, SoakOptions, Summary, quiet, wait

if TYPE_CHECKING:
    from controller.zk.session import ZkSession
    from migrate.rehearse.load import LoadPool
    from migrate.rehearse.model import OpRecord

__all__ = ["DEPOSING", "KINDS", "Failover", "FailoverSoak", "SoakError", "SoakOptions", "Summary"]


class FailoverSoak:
    """Start with :meth:`start`, run cycles with :meth:`cycle` (or :meth:`run`), always :meth:`close`."""

    def __init__(self, opts: SoakOptions, say: Say | None = None) -> None:
        if opts.nodes < 2 or opts.zk_servers not in (1, 3, 5):
            raise SoakError("a failover soak needs at least 2 nodes and an ensemble of 1, 3 or 5 ZooKeeper servers")
        unknown = sorted(set(opts.kinds) - set(KINDS))
        if unknown or not opts.kinds:
            raise SoakError(f"unknown failover kind(s) {unknown or '(none)'}; known: {', '.join(KINDS)}")
        if "zookeeper-leader" in opts.kinds and opts.zk_servers < 3:
            raise SoakError("the zookeeper-leader kind needs an ensemble (--zk-servers 3)")
        self.o = opts
        self.say: Say = say or quiet
        self.cluster: OwnedCluster | None = None
        self.session: ZkSession | None = None
        self.load: LoadPool | None = None
        self.cycles: list[Failover] = []
        self.baseline_zxid = 0
        self._checks: CycleChecks | None = None
        self._counts: Counter[str] = Counter()  # faults induced per kind, for the alternations
        #: Each kind and what induces it: returns what it did, raises SoakError when the fault did not happen as meant.
        self._faults: dict[str, Callable[[Failover, S.Snapshot, float], str]] = {
            "freeze-controller": self._freeze_controller,
            "expire-session": self._expire_session,
            "kill-controller": self._kill_controller,
            "zookeeper-leader": self._zookeeper_leader,
        }
        self._started = time.monotonic()

    # -- lifecycle ----------------------------------------------------------------------------------------------
    def start(self) -> None:
        from controller.exits import CommandError
        from migrate.connect import connect
        from migrate.rehearse.load import LoadPool

        o = self.o
        o.data_dir.mkdir(parents=True, exist_ok=True)
        self.cluster = OwnedCluster(
            nodes=o.nodes,
            zk_servers=o.zk_servers,
            ibp=o.ibp,
            data_dir=o.data_dir / "cluster",
            overrides={
                "zookeeper.session.timeout.ms": str(o.session_timeout_ms),
                "request.timeout.ms": str(o.node_request_timeout_ms),
            },
            node_overrides={},
        )
        self.say(f"starting {o.zk_servers} ZooKeeper server(s) and {o.nodes} nodes")
        self.cluster.launch(self.say)
        # Our own session outlives every fault: a long timeout, the controller identity (reads only).
        try:
            self.session = connect(
                self.cluster.zookeeper,
                name="failover-soak",
                timeout=30.0,
                auth=[("digest", CONTROLLER_IDENTITY)],
                session_timeout_ms=30_000,
            )
        except CommandError as exc:
            raise SoakError(exc.message) from None
        if not wait("a controller and every node registered", self.healthy, o.recover_timeout_s, self.say):
            raise SoakError("the cluster did not come up with one active controller")
        nodes = self.cluster.nodes()
        self.load = LoadPool(
            [n.bootstrap for n in nodes],
            o.data_dir / "journal",
            rate=o.rate,
            seed=o.seed,
            request_timeout_ms=o.client_request_timeout_ms,
            replication_factor=min(3, o.nodes),
        )
        self.say("starting the client load")
        self.load.start()
        self.load.pause()
        self.baseline_zxid = self._zxid()
        self._checks = CycleChecks(o, self.say, self.cluster, self.session, self.load, since_zxid=self.baseline_zxid)
        self._started = time.monotonic()

    def close(self) -> None:
        """Idempotent and safe in ``finally``: the load, our session, then the cluster (which resumes anything
        frozen before it stops it)."""
        if self.load is not None:
            with contextlib.suppress(Exception):
                self.load.stop()
        if self.session is not None:
            with contextlib.suppress(Exception):
                self.session.close()
            self.session = None
        if self.cluster is not None:
            self.cluster.close()

    def run(self, failovers: int, on_cycle: Callable[[Failover], None] | None = None) -> Summary:
        for i in range(failovers):
            found = self.cycle(i)
            if on_cycle is not None:
                on_cycle(found)
        return self.summary()

    def summary(self) -> Summary:
        return Summary.of(self.cycles, time.monotonic() - self._started)

    # -- reading the cluster -----------------------------------------------------------------------------------
    def snapshot(self) -> S.Snapshot:
        assert self.session is not None
        return S.read_state(self.session)

    def _zxid(self) -> int:
        """The newest zxid any serving member reports (``srvr``): writes after it are the ones to judge."""
        from controller.devstack.localzk import four_letter_word

        assert self.cluster is not None
        zk = self.cluster.stack.zk
        newest = 0
        for m in zk.members:
            if not m.running:
                continue
            for line in four_letter_word(zk.host, m.client_port, "srvr").splitlines():
                if line.startswith("Zxid:"):
                    newest = max(newest, int(line.split(":", 1)[1].strip(), 16))
        return newest

    def healthy(self) -> tuple[bool, str]:
        """Every node registered, one active controller by ``/controller`` and by every node's metrics, no
        offline partition."""
        assert self.cluster is not None
        snap = self.snapshot()
        want = {n.broker_id for n in self.cluster.nodes()}
        if set(snap.brokers) != want:
            return False, f"registered {sorted(snap.brokers)} of {sorted(want)}"
        if snap.controller is None:
            return False, "no /controller"
        active, down = active_by_metrics(self.cluster)
        if down:
            return False, f"metrics of node(s) {down} not answering"
        if active != [snap.controller]:
            return False, f"/controller names {snap.controller}, active by metrics: {active}"
        offline = S.offline(snap)
        if offline:
            return False, f"{len(offline)} partition(s) offline: {', '.join(offline[:3])}"
        return True, f"controller {snap.controller}, epoch {snap.epoch}"

    # -- one cycle ---------------------------------------------------------------------------------------------
    def cycle(self, index: int) -> Failover:
        assert self.load is not None and self.cluster is not None
        kind = self.o.kinds[index % len(self.o.kinds)]
        rec = Failover(index, kind)
        began = time.time()
        self.load.resume()
        self._load_for(self.o.settle_s, f"#{index} {kind}: client load before the fault")
        before = self.snapshot()
        rec.controller_before, rec.epoch_before = before.controller, before.epoch
        fault_at = time.monotonic()
        try:
            rec.detail = self._faults[kind](rec, before, fault_at)
        except (SoakError, ClusterError) as exc:
            rec.violations.append(str(exc))
        if wait(f"#{index} {kind}: the cluster to recover", self.healthy, self.o.recover_timeout_s, self.say):
            rec.recovered_s = time.monotonic() - fault_at
        else:
            rec.violations.append(f"not recovered within {self.o.recover_timeout_s:.0f} s: {self.healthy()[1]}")
        self._load_for(self.o.settle_s, f"#{index} {kind}: client load on the recovered cluster")
        self.say(f"#{index} {kind}: pausing the client load for the checks")
        killed = self.load.pause()
        if killed:
            rec.evidence.append(f"load workers stuck past their deadline and restarted: {killed}")
        self.check(rec, before)
        ops = [r for r in self.load.records() if r["started"] >= began]
        rec.acked = sum(1 for r in ops if r["ok"])
        rec.failed = len(ops) - rec.acked
        rec.errors = Counter(str(r["error"]) for r in ops if not r["ok"])
        rec.took_s = time.time() - began
        self.cycles.append(rec)
        return rec

    def _load_for(self, seconds: float, what: str) -> None:
        assert self.load is not None
        since = time.monotonic()
        start = self.load.counts()
        wait(
            what,
            lambda: (
                time.monotonic() - since >= seconds,
                f"{self.load.counts() - start if self.load else 0} operations",
            ),
            seconds + 5,
            self.say,
            0.25,
        )

    def _await_new_controller(self, rec: Failover, before: S.Snapshot, fault_at: float, timeout: float) -> bool:
        """Until a session other than the old one holds /controller; records the time it took."""

        def probe() -> tuple[bool, str]:
            snap = self.snapshot()
            moved = snap.controller is not None and snap.controller_session != before.controller_session
            return moved, f"/controller: {snap.controller} (session 0x{snap.controller_session:x})"

        ok = wait(f"#{rec.index} {rec.kind}: a new controller", probe, timeout, self.say, 0.05)
        if ok:
            rec.elected_s = time.monotonic() - fault_at
        return ok

    def _await_registration(self, rec: Failover, broker_id: int, old_czxid: int | None, *, gone: bool) -> bool:
        """``gone``: until the old registration is gone (its session expired); else until a new one is there."""

        def probe() -> tuple[bool, str]:
            b = self.snapshot().brokers.get(broker_id)
            if gone:
                return b is None or b.czxid != old_czxid, "old registration still there"
            return b is not None and b.czxid != old_czxid, "not registered again yet"

        what = "its old registration to expire" if gone else "it to register again"
        return wait(f"#{rec.index} {rec.kind}: node {broker_id}: {what}", probe, self.o.recover_timeout_s, self.say)

    def _controller_of(self, before: S.Snapshot) -> int:
        if before.controller is None:
            raise SoakError("no active controller to aim the fault at")
        return before.controller

    def _session_wait(self) -> float:
        return self.o.session_timeout_ms / 1000 * 4 + 10

    # -- the four kinds (self._faults) -----------------------------------------------------------------------
    def _freeze_controller(self, rec: Failover, before: S.Snapshot, fault_at: float) -> str:
        assert self.cluster is not None
        victim = self._controller_of(before)
        old = before.brokers.get(victim)

        def expired() -> bool:
            elected = self._await_new_controller(rec, before, fault_at, self._session_wait())
            gone = self._await_registration(rec, victim, old.czxid if old else None, gone=True)
            return elected and gone

        if not faults.freeze_node(self.cluster, victim, expired):
            raise SoakError(f"node {victim} frozen, but ZooKeeper did not expire its sessions / elect another")
        if not self._await_registration(rec, victim, old.czxid if old else None, gone=False):
            raise SoakError(f"node {victim} thawed, but it did not register again")
        return f"node {victim} (controller) frozen with SIGSTOP until ZooKeeper expired its sessions, then thawed"

    def _expire_session(self, rec: Failover, before: S.Snapshot, fault_at: float) -> str:
        assert self.cluster is not None
        victim = self._controller_of(before)
        old = before.brokers.get(victim)
        both = self._counts["expire-session"] % 2 == 1
        self._counts["expire-session"] += 1
        hosts = self.cluster.zookeeper
        if not faults.expire_session(hosts, before.controller_session):
            raise SoakError(f"node {victim}'s controller session 0x{before.controller_session:x} was already gone")
        broker_session = old.session if both and old is not None else before.controller_session
        if broker_session != before.controller_session and not faults.expire_session(hosts, broker_session):
            raise SoakError(f"node {victim}'s broker session 0x{broker_session:x} was already gone")
        if not self._await_new_controller(rec, before, fault_at, self._session_wait()):
            raise SoakError(f"node {victim}'s controller session expired, but no new controller was elected")
        if both and old is not None:
            if not self._await_registration(rec, victim, old.czxid, gone=False):
                raise SoakError(f"node {victim}'s broker session expired, but it did not register again")
            return f"node {victim}'s controller and broker sessions expired on the server"
        return f"node {victim}'s controller session expired on the server"

    def _kill_controller(self, rec: Failover, before: S.Snapshot, fault_at: float) -> str:
        assert self.cluster is not None
        victim = self._controller_of(before)
        old = before.brokers.get(victim)

        def expired() -> None:
            if not self._await_new_controller(rec, before, fault_at, self._session_wait()):
                raise SoakError(f"node {victim} killed, but no new controller was elected")
            # Kafka refuses to start a broker whose id the old process's session still holds: start once it expired.
            if not self._await_registration(rec, victim, old.czxid if old else None, gone=True):
                raise SoakError(f"node {victim} killed, but its registration did not expire")

        faults.kill_node(self.cluster, victim, until=expired, start_timeout=self.o.recover_timeout_s)
        if not self._await_registration(rec, victim, old.czxid if old else None, gone=False):
            raise SoakError(f"node {victim} started again, but it did not register")
        return f"node {victim} (controller) killed with SIGKILL, started again once its sessions expired"

    def _zookeeper_leader(self, rec: Failover, before: S.Snapshot, fault_at: float) -> str:
        assert self.cluster is not None
        zk = self.cluster.stack.zk
        leader = zk.leader()
        if leader is None:
            raise SoakError("no ZooKeeper leader to aim the fault at")
        freeze = self._counts["zookeeper-leader"] % 2 == 1
        self._counts["zookeeper-leader"] += 1
        others = [m for m in zk.members if m.myid != leader.myid]
        if freeze:
            pause = self.o.session_timeout_ms / 1000 + 2
            faults.freeze_zookeeper(self.cluster, lambda _server: time.sleep(pause))
            what = f"ZooKeeper leader {leader.myid} frozen (SIGSTOP) for {pause:.0f} s, then resumed"
        else:

            def elected() -> tuple[bool, str]:
                return any(zk.mode(m.myid) == "leader" for m in others), "electing"

            def reelected() -> None:
                if not wait(f"#{rec.index} {rec.kind}: a new ZooKeeper leader", elected, 60, self.say):
                    raise SoakError(f"ZooKeeper leader {leader.myid} killed, but the others elected no leader")

            faults.kill_zookeeper_server(zk, leader.myid, until=reelected, timeout=60)
            what = f"ZooKeeper leader {leader.myid} killed (SIGKILL), then started again"
        zk.wait_serving(60)
        snap = self.snapshot()
        if snap.controller is not None and snap.controller_session != before.controller_session:
            rec.elected_s = time.monotonic() - fault_at
        return what

    # -- the checks ------------------------------------------------------------------------------------------
    def check(self, rec: Failover, before: S.Snapshot, extra: Sequence[OpRecord] = ()) -> None:
        """Every check of :mod:`testing.soak_checks`, with the load paused, into ``rec``; ``extra``: operations
        journaled by the caller (a test's own requests), judged by the ledger with the load's."""
        assert self._checks is not None
        self._checks.check(rec, before, extra)

    # -- for a report ------------------------------------------------------------------------------------------
    def records(self) -> list[OpRecord]:
        return self.load.records() if self.load is not None else []
