"""Repeated induced failovers under client load (issue 15): the driver behind ``tests/reliability/test_failovers.py``
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

After every cycle (load paused), each a violation when it fails:

- one active controller: ``/controller`` names a registered broker, and that node alone reports
  ``bridgekeeper_controller_active 1``;
- the controller epoch rose (for the ZooKeeper kinds, which need not depose anyone: it did not fall, and rose if
  another session holds ``/controller``);
- no partition state carries an epoch above the current one, and every state written since the current controller
  was elected carries its epoch (a deposed controller's write would carry the old one);
- ZooKeeper's transaction log (:mod:`~migrate.rehearse.zkrecords`: what a quorum of the members logged) shows
  every write to a controller-owned path since the previous check (the first: since the load started) made by
  the session that held ``/controller`` then;
- every reassignment finished (waited for, with the load paused);
- the ledger (:mod:`~migrate.rehearse.ledger`) holds: every acknowledged write in ZooKeeper, every failed one
  absent or completed as KIP-4 allows, no duplicate ACL entry, replica or topic id;
- no node logged an unexpected exception (``BK-UNEXPECTED``) or a protocol error.
"""

from __future__ import annotations

import contextlib
import re
import statistics
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import tenacity

from migrate.rehearse import state as S
from migrate.rehearse.cluster import CONTROLLER_IDENTITY, ClusterError, OwnedCluster
from migrate.rehearse.observe import scrape
from zkmodel import paths
from zkmodel.errors import ZnodeFormatError
from zkmodel.topics import PartitionState

if TYPE_CHECKING:
    from controller.zk.session import ZkSession
    from migrate.rehearse.load import LoadPool
    from migrate.rehearse.model import OpRecord

KINDS = ("freeze-controller", "expire-session", "kill-controller", "zookeeper-leader")
#: Kinds that depose the active controller by construction (the ZooKeeper kinds may or may not).
DEPOSING = frozenset({"freeze-controller", "expire-session", "kill-controller"})
#: Node-log lines that are violations: an unexpected exception, a request the wire layer could not parse.
BAD_LOG_LINES = re.compile(r"BK-UNEXPECTED|cannot decode API|request of \d+ bytes is shorter|unparseable inner")
Say = Callable[[str], None]


def _quiet(_text: str) -> None:
    pass


@dataclass
class SoakOptions:
    data_dir: Path
    nodes: int = 3
    zk_servers: int = 3
    ibp: str = "3.9"  # past the forwarding gate: brokers forward admin writes, only the controller writes
    rate: float = 4.0  # client operations per second, all workers together
    seed: int = 0
    session_timeout_ms: int = 4000
    #: The clients' request timeout; above the nodes' own, so a client hears the node's answer, not its timer.
    client_request_timeout_ms: int = 12000
    node_request_timeout_ms: int = 8000
    settle_s: float = 2.0  # client load before each fault and after each recovery
    recover_timeout_s: float = 90.0
    reassignment_timeout_s: float = 90.0
    kinds: tuple[str, ...] = KINDS


@dataclass
class Failover:
    index: int
    kind: str
    detail: str = ""
    controller_before: int | None = None
    epoch_before: int | None = None
    controller_after: int | None = None
    epoch_after: int | None = None
    moved: bool = False  # another session holds /controller than before the fault
    elected_s: float | None = None  # from the fault to another session holding /controller
    recovered_s: float | None = None  # from the fault to the cluster healthy again
    took_s: float = 0.0
    acked: int = 0  # client operations of this cycle
    failed: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    violations: list[str] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.violations


class SoakError(RuntimeError):
    """The soak could not start or a fault could not be induced (not a finding about the cluster)."""


def _percentile(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


@dataclass
class Summary:
    failovers: int
    by_kind: dict[str, int]
    moved_by_kind: dict[str, int]
    elected: dict[str, float | None]  # p50, p99, max over cycles whose controller moved
    recovered: dict[str, float | None]
    acked: int
    failed: int
    errors: Counter[str]
    violations: list[str]
    took_s: float

    @staticmethod
    def of(cycles: Sequence[Failover], took_s: float) -> Summary:
        elected = [c.elected_s for c in cycles if c.elected_s is not None]
        recovered = [c.recovered_s for c in cycles if c.recovered_s is not None]
        errors: Counter[str] = Counter()
        for c in cycles:
            errors.update(c.errors)
        return Summary(
            failovers=len(cycles),
            by_kind=dict(Counter(c.kind for c in cycles)),
            moved_by_kind=dict(Counter(c.kind for c in cycles if c.moved)),
            elected={"p50": statistics.median(elected) if elected else None, "p99": _percentile(elected, 0.99),
                     "max": max(elected) if elected else None},
            recovered={"p50": statistics.median(recovered) if recovered else None,
                       "p99": _percentile(recovered, 0.99), "max": max(recovered) if recovered else None},
            acked=sum(c.acked for c in cycles),
            failed=sum(c.failed for c in cycles),
            errors=errors,
            violations=[f"#{c.index} {c.kind}: {v}" for c in cycles for v in c.violations],
            took_s=took_s,
        )  # fmt: skip


def _wait(what: str, probe: Callable[[], tuple[bool, str]], timeout: float, say: Say, interval: float = 0.1) -> bool:
    """Poll ``probe`` until it says done or ``timeout`` passes; False on timeout (the caller records why)."""
    started = time.monotonic()
    last = [""]

    def attempt() -> bool:
        try:
            done, detail = probe()
        except Exception as exc:  # ZooKeeper away mid-fault: not done yet
            done, detail = False, f"{type(exc).__name__}: {exc}"
        last[0] = detail
        say(f"waiting for {what}: {detail} ({time.monotonic() - started:.0f}/{timeout:.0f} s)")
        return done

    ok = tenacity.Retrying(
        stop=tenacity.stop_after_delay(timeout), wait=tenacity.wait_fixed(interval),
        retry=tenacity.retry_if_result(lambda done: not done), retry_error_callback=lambda _s: False,
    )(attempt)  # fmt: skip
    if not ok:
        say(f"gave up waiting for {what} after {timeout:.0f} s: {last[0]}")
    return bool(ok)


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
        self.say: Say = say or _quiet
        self.cluster: OwnedCluster | None = None
        self.session: ZkSession | None = None
        self.load: LoadPool | None = None
        self.cycles: list[Failover] = []
        self.baseline_zxid = 0
        self._audited_zxid = 0
        self._log_offsets: dict[Path, int] = {}
        self._counts: Counter[str] = Counter()  # faults induced per kind, for the alternations
        self._started = time.monotonic()

    # -- lifecycle ----------------------------------------------------------------------------------------------
    def start(self) -> None:
        from controller.exits import CommandError
        from migrate.connect import connect
        from migrate.rehearse.load import LoadPool

        o = self.o
        o.data_dir.mkdir(parents=True, exist_ok=True)
        self.cluster = OwnedCluster(
            nodes=o.nodes, zk_servers=o.zk_servers, ibp=o.ibp, data_dir=o.data_dir / "cluster",
            overrides={"zookeeper.session.timeout.ms": str(o.session_timeout_ms),
                       "request.timeout.ms": str(o.node_request_timeout_ms)},
            node_overrides={},
        )  # fmt: skip
        self.say(f"starting {o.zk_servers} ZooKeeper server(s) and {o.nodes} nodes")
        self.cluster.launch(self.say)
        # Our own session outlives every fault: a long timeout, the controller identity (reads only).
        try:
            self.session = connect(self.cluster.zookeeper, name="failover-soak", timeout=30.0,
                                   auth=[("digest", CONTROLLER_IDENTITY)], session_timeout_ms=30_000)  # fmt: skip
        except CommandError as exc:
            raise SoakError(exc.message) from None
        if not _wait("a controller and every node registered", self.healthy, o.recover_timeout_s, self.say):
            raise SoakError("the cluster did not come up with one active controller")
        nodes = self.cluster.nodes()
        self.load = LoadPool([n.bootstrap for n in nodes], o.data_dir / "journal", rate=o.rate, seed=o.seed,
                             request_timeout_ms=o.client_request_timeout_ms,
                             replication_factor=min(3, o.nodes))  # fmt: skip
        self.say("starting the client load")
        self.load.start()
        self.load.pause()
        self.baseline_zxid = self._zxid()
        self._audited_zxid = self.baseline_zxid
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

    def _active_by_metrics(self) -> tuple[list[int], list[int]]:
        """(nodes reporting bridgekeeper_controller_active 1, nodes not answering their metrics)."""
        assert self.cluster is not None
        active, down = [], []
        for n in self.cluster.nodes():
            s = scrape(n.metrics or "", timeout=2.0)
            if not s.up:
                down.append(n.broker_id)
            elif s.active:
                active.append(n.broker_id)
        return sorted(active), sorted(down)

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
        active, down = self._active_by_metrics()
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
            rec.detail = getattr(self, "_" + kind.replace("-", "_"))(rec, before, fault_at)
        except (SoakError, ClusterError) as exc:
            rec.violations.append(str(exc))
        if _wait(f"#{index} {kind}: the cluster to recover", self.healthy, self.o.recover_timeout_s, self.say):
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
        _wait(what, lambda: (time.monotonic() - since >= seconds,
              f"{self.load.counts() - start if self.load else 0} operations"), seconds + 5, self.say, 0.25)  # fmt: skip

    def _await_new_controller(self, rec: Failover, before: S.Snapshot, fault_at: float, timeout: float) -> bool:
        """Until a session other than the old one holds /controller; records the time it took."""

        def probe() -> tuple[bool, str]:
            snap = self.snapshot()
            moved = snap.controller is not None and snap.controller_session != before.controller_session
            return moved, f"/controller: {snap.controller} (session 0x{snap.controller_session:x})"

        ok = _wait(f"#{rec.index} {rec.kind}: a new controller", probe, timeout, self.say, 0.05)
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
        return _wait(f"#{rec.index} {rec.kind}: node {broker_id}: {what}", probe, self.o.recover_timeout_s, self.say)

    def _controller_of(self, before: S.Snapshot) -> int:
        if before.controller is None:
            raise SoakError("no active controller to aim the fault at")
        return before.controller

    def _session_wait(self) -> float:
        return self.o.session_timeout_ms / 1000 * 4 + 10

    # the four kinds: each returns what it did, raises SoakError when the fault did not happen as meant
    def _freeze_controller(self, rec: Failover, before: S.Snapshot, fault_at: float) -> str:
        assert self.cluster is not None
        victim = self._controller_of(before)
        old = before.brokers.get(victim)
        self.cluster.freeze(victim)
        try:
            elected = self._await_new_controller(rec, before, fault_at, self._session_wait())
            expired = self._await_registration(rec, victim, old.czxid if old else None, gone=True)
        finally:
            self.cluster.thaw(victim)
        if not (elected and expired):
            raise SoakError(f"node {victim} frozen, but ZooKeeper did not expire its sessions / elect another")
        if not self._await_registration(rec, victim, old.czxid if old else None, gone=False):
            raise SoakError(f"node {victim} thawed, but it did not register again")
        return f"node {victim} (controller) frozen with SIGSTOP until ZooKeeper expired its sessions, then thawed"

    def _expire_session(self, rec: Failover, before: S.Snapshot, fault_at: float) -> str:
        from testing.expire import expire_session

        assert self.cluster is not None
        victim = self._controller_of(before)
        old = before.brokers.get(victim)
        both = self._counts["expire-session"] % 2 == 1
        self._counts["expire-session"] += 1
        hosts = self.cluster.zookeeper
        if not expire_session(hosts, before.controller_session):
            raise SoakError(f"node {victim}'s controller session 0x{before.controller_session:x} was already gone")
        broker_session = old.session if both and old is not None else before.controller_session
        if broker_session != before.controller_session and not expire_session(hosts, broker_session):
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
        self.cluster.kill(victim)
        if not self._await_new_controller(rec, before, fault_at, self._session_wait()):
            raise SoakError(f"node {victim} killed, but no new controller was elected")
        # Kafka refuses to start a broker whose id the old process's session still holds: start once it expired.
        if not self._await_registration(rec, victim, old.czxid if old else None, gone=True):
            raise SoakError(f"node {victim} killed, but its registration did not expire")
        self.cluster.start(victim, self.o.recover_timeout_s)
        if not self._await_registration(rec, victim, old.czxid if old else None, gone=False):
            raise SoakError(f"node {victim} started again, but it did not register")
        return f"node {victim} (controller) killed with SIGKILL, started again once its sessions expired"

    def _zookeeper_leader(self, rec: Failover, before: S.Snapshot, fault_at: float) -> str:
        import signal

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
            zk.pause(leader.myid)
            try:
                time.sleep(pause)
            finally:
                zk.resume(leader.myid)
            what = f"ZooKeeper leader {leader.myid} frozen (SIGSTOP) for {pause:.0f} s, then resumed"
        else:
            zk.kill(leader.myid, signal.SIGKILL)

            def elected() -> tuple[bool, str]:
                return any(zk.mode(m.myid) == "leader" for m in others), "electing"

            if not _wait(f"#{rec.index} {rec.kind}: a new ZooKeeper leader", elected, 60, self.say):
                raise SoakError(f"ZooKeeper leader {leader.myid} killed, but the others elected no leader")
            zk.restart(leader.myid, timeout=60)
            what = f"ZooKeeper leader {leader.myid} killed (SIGKILL), then started again"
        zk.wait_serving(60)
        snap = self.snapshot()
        if snap.controller is not None and snap.controller_session != before.controller_session:
            rec.elected_s = time.monotonic() - fault_at
        return what

    # -- the checks ------------------------------------------------------------------------------------------
    def check(self, rec: Failover, before: S.Snapshot, extra: Sequence[OpRecord] = ()) -> None:
        """Every check above, with the load paused, into ``rec``; ``extra``: operations journaled by the caller
        (a test's own requests), judged by the ledger with the load's."""
        from migrate.rehearse import ledger

        assert self.session is not None and self.load is not None
        self._reassignments_finished(rec)
        snap = self.snapshot()
        rec.controller_after, rec.epoch_after = snap.controller, snap.epoch
        rec.moved = snap.controller_session != before.controller_session
        self._one_controller(rec, snap)
        self._epoch(rec, before, snap)
        self._states(rec, snap)
        self._writers(rec)
        found = ledger.verify([*self.load.records(), *extra], self.session)
        rec.evidence.append(f"ledger: {found.summary}")
        if not found.ok:
            rec.violations += [f"ledger: {line}" for line in found.evidence]
        self._logs(rec)

    def _reassignments_finished(self, rec: Failover) -> None:
        def probe() -> tuple[bool, str]:
            snap = self.snapshot()
            moving = [f"{t}-{p}" for t, p in snap.reassigning()] + (
                ["/admin/reassign_partitions"] if snap.reassign_znode else []
            )
            return not moving, f"still moving: {', '.join(moving[:4])}"

        if not _wait(f"#{rec.index} {rec.kind}: every reassignment finished", probe,
                     self.o.reassignment_timeout_s, self.say, 0.25):  # fmt: skip
            rec.violations.append(f"reassignments not finished within {self.o.reassignment_timeout_s:.0f} s: "
                                  f"{probe()[1]}")  # fmt: skip

    def _one_controller(self, rec: Failover, snap: S.Snapshot) -> None:
        active, down = self._active_by_metrics()
        rec.evidence.append(f"/controller: {snap.controller}; active by metrics: {active}")
        if snap.controller is None or snap.controller not in snap.brokers:
            rec.violations.append(f"/controller names {snap.controller}, not a registered broker")
        if active != ([snap.controller] if snap.controller is not None else []) or down:
            rec.violations.append(f"active controllers by the nodes' metrics: {active} (down: {down}), "
                                  f"/controller names {snap.controller}")  # fmt: skip

    def _epoch(self, rec: Failover, before: S.Snapshot, snap: S.Snapshot) -> None:
        old, new = before.epoch, snap.epoch
        rec.evidence.append(f"controller epoch {old} -> {new}, /controller session "
                            f"0x{before.controller_session:x} -> 0x{snap.controller_session:x}")  # fmt: skip
        if old is None or new is None:
            rec.violations.append(f"controller epoch unreadable: {old} -> {new}")
        elif rec.kind in DEPOSING and new <= old:
            rec.violations.append(f"the controller was deposed but the epoch did not rise: {old} -> {new}")
        elif new < old or (rec.moved and new == old):
            rec.violations.append(f"controller epoch {old} -> {new} with /controller held by another session")

    def _states(self, rec: Failover, snap: S.Snapshot) -> None:
        """Every partition state's epoch at most the current one; written since the election: exactly it."""
        assert self.session is not None
        controller = self.session.read_data([paths.CONTROLLER]).get(paths.CONTROLLER)
        elected_zxid = controller[1].czxid if controller is not None else 0
        tps = [(t, p) for t, a in snap.topics.items() for p in a.partitions]
        states = self.session.read_data([paths.partition_state(t, p) for t, p in tps])
        since = 0
        found_before = len(rec.violations)
        for t, p in tps:
            got = states.get(paths.partition_state(t, p))
            if got is None:
                continue
            data, stat = got
            try:
                state = PartitionState.decode(paths.partition_state(t, p), data or b"")
            except ZnodeFormatError as exc:
                rec.violations.append(f"partition state {t}-{p} malformed: {exc}")
                continue
            if snap.epoch is not None and state.controller_epoch > snap.epoch:
                rec.violations.append(f"{t}-{p}: state with controller epoch {state.controller_epoch} above the "
                                      f"current {snap.epoch}")  # fmt: skip
            if stat.mzxid > elected_zxid:
                since += 1
                if state.controller_epoch != snap.epoch:
                    rec.violations.append(f"{t}-{p}: state written at zxid 0x{stat.mzxid:x}, after the current "
                                          f"controller's election, with epoch {state.controller_epoch}, not "
                                          f"{snap.epoch}")  # fmt: skip
        bad = len(rec.violations) - found_before
        rec.evidence.append(f"{len(tps)} partition states read, {since} written since the election; {bad} violation(s)")

    def _writers(self, rec: Failover) -> None:
        from migrate.rehearse import zkrecords

        assert self.session is not None and self.cluster is not None
        chroot = "/" + self.cluster.zookeeper.split("/", 1)[1]
        znodes = zkrecords.changed_znodes(self.session)
        audit = zkrecords.read_audit(self.cluster.txn_log_dirs(), chroot, merge=True)
        # Each write is judged once: by the first check after it (the log read is the ensemble's whole history).
        verdict = zkrecords.check_writes(audit, self._audited_zxid, znodes)
        self._audited_zxid = max(self._audited_zxid, audit.last_zxid)
        rec.evidence.append(f"writers: {verdict.summary}")
        if not verdict.ok:
            rec.violations += [f"writers: {line}" for line in verdict.evidence[3:]] or [verdict.summary]

    def _logs(self, rec: Failover) -> None:
        assert self.cluster is not None
        for n in self.cluster.nodes():
            if n.log is None:
                continue
            with contextlib.suppress(OSError), open(n.log, "rb") as f:
                f.seek(self._log_offsets.get(n.log, 0))
                chunk = f.read()
                self._log_offsets[n.log] = self._log_offsets.get(n.log, 0) + len(chunk)
                for line in chunk.decode(errors="replace").splitlines():
                    if BAD_LOG_LINES.search(line):
                        rec.violations.append(f"node {n.broker_id} log: {line.strip()[:300]}")

    # -- for a report ------------------------------------------------------------------------------------------
    def records(self) -> list[OpRecord]:
        return self.load.records() if self.load is not None else []
