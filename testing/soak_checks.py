"""The checks after every failover cycle, with the client load paused; each a violation in the cycle's record when it
fails:

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
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from migrate.rehearse import state as S
from migrate.rehearse.observe import scrape
from testing.soak_model import DEPOSING, Failover, Say, SoakOptions, wait
from zkmodel import paths
from zkmodel.errors import ZnodeFormatError
from zkmodel.topics import PartitionState

if TYPE_CHECKING:
    from controller.zk.session import ZkSession
    from migrate.rehearse.cluster import OwnedCluster
    from migrate.rehearse.load import LoadPool
    from migrate.rehearse.model import OpRecord

#: Node-log lines that are violations: an unexpected exception, a request the wire layer could not parse.
BAD_LOG_LINES = re.compile(r"BK-UNEXPECTED|cannot decode API|request of \d+ bytes is shorter|unparseable inner")


def active_by_metrics(cluster: OwnedCluster) -> tuple[list[int], list[int]]:
    """(nodes reporting bridgekeeper_controller_active 1, nodes not answering their metrics)."""
    active, down = [], []
    for n in cluster.nodes():
        s = scrape(n.metrics or "", timeout=2.0)
        if not s.up:
            down.append(n.broker_id)
        elif s.active:
            active.append(n.broker_id)
    return sorted(active), sorted(down)


class CycleChecks:
    """The checks of one soak, run after each cycle into its record. Each write in ZooKeeper's transaction log and
    each node-log line is judged once, by the first check after it: this keeps how far both were read."""

    def __init__(
        self, opts: SoakOptions, say: Say, cluster: OwnedCluster, session: ZkSession, load: LoadPool, since_zxid: int
    ) -> None:
        self.o = opts
        self.say = say
        self.cluster = cluster
        self.session = session
        self.load = load
        self._audited_zxid = since_zxid
        self._log_offsets: dict[Path, int] = {}

    def snapshot(self) -> S.Snapshot:
        return S.read_state(self.session)

    def check(self, rec: Failover, before: S.Snapshot, extra: Sequence[OpRecord] = ()) -> None:
        """Every check above, with the load paused, into ``rec``; ``extra``: operations journaled by the caller
        (a test's own requests), judged by the ledger with the load's."""
        from migrate.rehearse import ledger

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

        timeout = self.o.reassignment_timeout_s
        if not wait(f"#{rec.index} {rec.kind}: every reassignment finished", probe, timeout, self.say, 0.25):
            rec.violations.append(f"reassignments not finished within {timeout:.0f} s: {probe()[1]}")

    def _one_controller(self, rec: Failover, snap: S.Snapshot) -> None:
        active, down = active_by_metrics(self.cluster)
        rec.evidence.append(f"/controller: {snap.controller}; active by metrics: {active}")
        if snap.controller is None or snap.controller not in snap.brokers:
            rec.violations.append(f"/controller names {snap.controller}, not a registered broker")
        if active != ([snap.controller] if snap.controller is not None else []) or down:
            rec.violations.append(
                f"active controllers by the nodes' metrics: {active} (down: {down}), "
                f"/controller names {snap.controller}"
            )

    def _epoch(self, rec: Failover, before: S.Snapshot, snap: S.Snapshot) -> None:
        old, new = before.epoch, snap.epoch
        sessions = f"0x{before.controller_session:x} -> 0x{snap.controller_session:x}"
        rec.evidence.append(f"controller epoch {old} -> {new}, /controller session {sessions}")
        if old is None or new is None:
            rec.violations.append(f"controller epoch unreadable: {old} -> {new}")
        elif rec.kind in DEPOSING and new <= old:
            rec.violations.append(f"the controller was deposed but the epoch did not rise: {old} -> {new}")
        elif new < old or (rec.moved and new == old):
            rec.violations.append(f"controller epoch {old} -> {new} with /controller held by another session")

    def _states(self, rec: Failover, snap: S.Snapshot) -> None:
        """Every partition state's epoch at most the current one; written since the election: exactly it."""
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
                rec.violations.append(
                    f"{t}-{p}: state with controller epoch {state.controller_epoch} above the current {snap.epoch}"
                )
            if stat.mzxid > elected_zxid:
                since += 1
                if state.controller_epoch != snap.epoch:
                    rec.violations.append(
                        f"{t}-{p}: state written at zxid 0x{stat.mzxid:x}, after the current controller's election, "
                        f"with epoch {state.controller_epoch}, not {snap.epoch}"
                    )
        bad = len(rec.violations) - found_before
        rec.evidence.append(f"{len(tps)} partition states read, {since} written since the election; {bad} violation(s)")

    def _writers(self, rec: Failover) -> None:
        from migrate.rehearse import zkrecords

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
