"""The rehearsal's checks. Each returns a :class:`~migrate.rehearse.model.CheckRecord`: a name from
``model.CHECKS``, a verdict and the evidence it looked at, so a failed rehearsal says which promise broke and
shows why. :class:`Checker` keeps what must be compared from one step to the next (cluster id, topic ids, the
controller epoch, how far each node log was read, the forwarding counters when the gate was passed).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from migrate.rehearse import state as S
from migrate.rehearse.model import CheckRecord, OpRecord
from zkmodel import ibp

if TYPE_CHECKING:
    from migrate.rehearse.cluster import NodeView
    from migrate.rehearse.observe import Monitor

#: Node-log lines that fail a rehearsal: a fenced write, an unexpected exception, a request the wire layer could
#: not parse (Kafka's upgrade test greps its brokers' logs for "Invalid version" and "SchemaException" alike).
LOG_PATTERNS = (
    ("STALE_CONTROLLER_EPOCH", re.compile(r"STALE_CONTROLLER_EPOCH")),
    ("BK-UNEXPECTED", re.compile(r"BK-UNEXPECTED")),
    (
        "protocol error",
        re.compile(
            r"closing \S+: (cannot decode API|request of \d+ bytes is shorter)|"
            r"unparseable inner|Invalid version|SchemaException"
        ),
    ),
)
#: Kafka's forwarding gate (KIP-590: IBP 3.4-IV0 in the bridge release), the default of every node.
DEFAULT_GATE = "3.4-IV0"
MAX_LINES = 40


def record(name: str, step: int, ok: bool, summary: str, evidence: Sequence[str]) -> CheckRecord:
    lines = list(evidence)
    if len(lines) > MAX_LINES:
        lines = [*lines[:MAX_LINES], f"... and {len(lines) - MAX_LINES} more"]
    return {"name": name, "step": step, "verdict": "pass" if ok else "fail", "summary": summary, "evidence": lines}


def problems_record(name: str, step: int, bad: list[str], evidence: list[str], fine: str) -> CheckRecord:
    """A check that lists its problems: it fails when there is any, summed up by the first two (a summary line
    stays readable), with every problem ahead of the evidence; ``fine`` is the summary when there is none."""
    return record(name, step, not bad, "; ".join(bad[:2]) if bad else fine, bad + evidence)


@dataclass
class Checker:
    to_ibp: str
    error_threshold: float
    default_min_isr: int = 1
    cluster_id: str | None = None
    topic_ids: dict[str, str | None] = field(default_factory=dict)
    epoch: int | None = None
    log_offsets: dict[Path, int] = field(default_factory=dict)
    gate_totals: dict[int, dict[str, float]] | None = None  # per-node routes when every node forwarded

    @property
    def bump_forwards(self) -> bool:
        """Whether the target IBP is at or past the forwarding gate (a bump below it keeps brokers writing)."""
        return ibp.parse_ibp(self.to_ibp) >= ibp.parse_ibp(DEFAULT_GATE)

    # -- one per CHECKS id ---------------------------------------------------------------------------------
    def one_controller(self, step: int, snap: S.Snapshot, monitor: Monitor) -> CheckRecord:
        scrapes = dict(monitor.latest)
        active = sorted(b for b, s in scrapes.items() if s.up and s.active)
        down = sorted(b for b, s in scrapes.items() if not s.up)
        ev = [
            f"/controller: {'node ' + str(snap.controller) if snap.controller is not None else 'absent'}, "
            f"epoch {snap.epoch}",
            f"nodes reporting ActiveControllerCount=1: {active or 'none'}",
        ]
        if down:
            ev.append(f"nodes not answering their metrics: {down}")
        ok = snap.controller is not None and snap.controller in snap.brokers and active == [snap.controller]
        summary = (
            f"node {snap.controller} is the one active controller"
            if ok
            else f"/controller names {snap.controller}, active per metrics: {active}"
        )
        return record("one-active-controller", step, ok, summary, ev)

    def no_offline(self, step: int, snap: S.Snapshot) -> CheckRecord:
        bad = S.offline(snap)
        n = len(snap.states)
        return record(
            "no-offline-partitions",
            step,
            not bad,
            f"{len(bad)} of {n} partitions offline" if bad else f"all {n} partitions have a live leader",
            (bad or [f"live brokers {sorted(snap.brokers)}"]) + _out_of_scope(snap),
        )

    def ids_unchanged(self, step: int, snap: S.Snapshot, ops: Sequence[OpRecord]) -> CheckRecord:
        """Topics created or deleted by the load since the last check may legitimately have a new id or none."""
        churned = {
            o["entity"].split(":", 1)[1]
            for o in ops
            if o["op"] in ("create_topic", "delete_topic") and o["entity"].startswith("topic:")
        }
        ev, bad = [], []
        if self.cluster_id is None:
            self.cluster_id = snap.cluster_id
        if snap.cluster_id is None or snap.cluster_id != self.cluster_id:
            bad.append(f"/cluster/id was {self.cluster_id!r}, now {snap.cluster_id!r}")
        elif len(snap.cluster_id) != 22:
            bad.append(f"/cluster/id {snap.cluster_id!r} is not a 22-character base64 UUID")
        compared = 0
        for name, old in self.topic_ids.items():
            if name in churned or name not in snap.topics:
                continue
            new = snap.topics[name].topic_id
            compared += 1
            if old is not None and new != old:
                bad.append(f"topic {name}: id {old} became {new}")
        seen: dict[str, str] = {}
        for name, t in snap.topics.items():
            if t.topic_id is None:
                continue
            if t.topic_id in seen:
                bad.append(f"topics {seen[t.topic_id]} and {name} share the id {t.topic_id}")
            seen[t.topic_id] = name
        self.topic_ids = {name: t.topic_id for name, t in snap.topics.items()}
        ev.append(f"cluster id {snap.cluster_id}; {compared} topic ids compared with the previous check")
        return problems_record("ids-unchanged", step, bad, ev, f"cluster id and {compared} topic ids unchanged")

    def epoch_explained(self, step: int, snap: S.Snapshot, disruptions: Sequence[str]) -> CheckRecord:
        before, now = self.epoch, snap.epoch
        self.epoch = now
        if before is None or now is None:
            return record(
                "controller-epoch-explained",
                step,
                now is not None,
                f"controller epoch {now}",
                [f"/controller_epoch read {now}"],
            )
        moved = now - before
        ev = [f"/controller_epoch {before} -> {now}"] + [f"explained by: {d}" for d in disruptions]
        ok = 0 <= moved <= len(disruptions)
        if ok:
            summary = f"epoch {before} -> {now}: {moved} increment(s), {len(disruptions)} controller disruption(s)"
        else:
            summary = (
                f"epoch {before} -> {now}: {moved} increment(s) but only {len(disruptions)} restart(s) or "
                "fault(s) of the active controller to explain them"
            )
        return record("controller-epoch-explained", step, ok, summary, ev)

    def logs_clean(self, step: int, nodes: Sequence[NodeView]) -> CheckRecord:
        hits: list[str] = []
        read = 0
        for n in nodes:
            if n.log is None:
                continue
            try:
                with open(n.log, "rb") as f:
                    f.seek(self.log_offsets.get(n.log, 0))
                    chunk = f.read()
            except OSError as exc:
                hits.append(f"node {n.broker_id}: cannot read {n.log}: {exc.strerror}")
                continue
            self.log_offsets[n.log] = self.log_offsets.get(n.log, 0) + len(chunk)
            read += len(chunk)
            for line in chunk.decode(errors="replace").splitlines():
                for what, pattern in LOG_PATTERNS:
                    if pattern.search(line):
                        hits.append(f"node {n.broker_id} ({what}): {line.strip()[:300]}")
                        break
        unread = [n.broker_id for n in nodes if n.log is None]
        ev = hits or [f"{read:,} bytes of node log read since the last check"]
        if unread:
            ev.append(f"no log file given for node(s) {unread}")
        return record(
            "node-logs-clean",
            step,
            not hits,
            f"{len(hits)} bad line(s) in node logs"
            if hits
            else "no fenced-write, protocol-error or unexpected-exception line",
            ev,
        )

    def client_errors(
        self, step: int, ops: Sequence[OpRecord], recovered_since: float | None = None, away: Collection[int] = ()
    ) -> CheckRecord:
        """Every error retriable, and failures under the threshold. For a drill, ``recovered_since`` is when the
        fault was over: failing while a controller is dead or ZooKeeper frozen is what clients do (and clients
        that fail fast count every attempt), so the rate is judged on what the clients saw after it, the
        fault's own failures reported beside it.

        ``away`` are the nodes the step itself stopped. A reassignment onto one of them is refused with
        INVALID_REPLICA_ASSIGNMENT (Kafka refuses to add a replica on a broker that is not alive, and says so),
        though the worker's DescribeCluster a moment before showed it registered: that refusal is the restart's
        doing, not the cluster's, so it counts as a failure but not as a non-retriable one."""
        failed = [o for o in ops if not o["ok"]]
        raced = [o for o in failed if _refused_for_away(o, away)]
        fatal = [o for o in failed if not o["retriable"] and o not in raced]
        judged = ops if recovered_since is None else [o for o in ops if o["started"] >= recovered_since]
        judged_failed = [o for o in judged if not o["ok"]]
        rate = len(judged_failed) / len(judged) if judged else 0.0
        by_error: dict[str, int] = {}
        for o in failed:
            by_error[o["error"] or "?"] = by_error.get(o["error"] or "?", 0) + 1
        ev = [f"{len(ops)} client operations, {len(failed)} failed, threshold {self.error_threshold:.0%}"]
        if recovered_since is not None:
            ev.append(
                f"during the fault: {len(ops) - len(judged)} operations, "
                f"{len(failed) - len(judged_failed)} failed; after it: {len(judged)}, {len(judged_failed)} "
                f"failed ({rate:.1%})"
            )
        ev += [f"{err}: {n}" for err, n in sorted(by_error.items(), key=lambda kv: -kv[1])]
        ev += [f"not retriable: {o['worker']}#{o['seq']} {o['op']} {o['entity']}: {o['error']}" for o in fatal]
        ev += [
            f"raced the restart: {o['worker']}#{o['seq']} reassign {o['entity']} onto {o['args'].get('replicas')} "
            f"while node(s) {sorted(_adding(o) & set(away))} were down: {o['error']}"
            for o in raced
        ]
        # A rate from a handful of operations says nothing: one failure in a quiet step is not 1/3 of the traffic.
        over = len(judged_failed) > 1 and rate > self.error_threshold
        after = " after the fault" if recovered_since is not None else ""
        if fatal:
            summary = f"{len(fatal)} non-retriable error(s): {', '.join(sorted({o['error'] or '?' for o in fatal}))}"
        elif over:
            summary = (
                f"{len(judged_failed)} of {len(judged)} operations failed{after} "
                f"({rate:.1%} > {self.error_threshold:.0%})"
            )
        else:
            summary = f"{len(judged_failed)} of {len(judged)} operations failed{after}, all retriable"
        return record("client-errors", step, not fatal and not over, summary, ev)

    def forwarding_share(self, step: int, monitor: Monitor, bumped: bool) -> CheckRecord:
        scrapes = dict(monitor.latest)
        per_node = monitor.per_node()
        totals = monitor.totals()
        all_writes = sum(totals.values())
        share = (totals["forwarded"] + totals["controller"]) / all_writes if all_writes else 1.0
        forwarding = sorted(b for b, s in scrapes.items() if s.forwarding)
        ev = [
            f"forwardable writes so far: forwarded {totals['forwarded']:.0f}, served by the controller "
            f"{totals['controller']:.0f}, written by a broker itself {totals['direct']:.0f} ({share:.0%} via the "
            "controller)",
            f"nodes past the forwarding gate: {forwarding} of {sorted(scrapes)}",
        ]
        for b, s in sorted(scrapes.items()):
            if s.up:
                ev.append(
                    f"node {b}: IBP {s.ibp}, gate {s.forwarding_min_ibp}, "
                    f"{'forwarding' if s.forwarding else 'writing ZooKeeper itself'}"
                )
        if len(forwarding) == len(scrapes) and scrapes and self.gate_totals is None:
            self.gate_totals = per_node
        if not bumped or not self.bump_forwards:
            why = (
                "the target IBP is below the forwarding gate"
                if not self.bump_forwards
                else "not every broker runs the target IBP yet"
            )
            return record("forwarding-share", step, True, f"{share:.0%} via the controller so far ({why})", ev)
        laggards = sorted(b for b, s in scrapes.items() if not s.forwarding)
        if laggards:
            return record(
                "forwarding-share",
                step,
                False,
                f"node(s) {laggards} still write ZooKeeper themselves after the bump to {self.to_ibp}",
                ev,
            )
        base = self.gate_totals or {}
        direct = {b: v["direct"] - base.get(b, {}).get("direct", 0.0) for b, v in per_node.items()}
        leaks = {b: d for b, d in direct.items() if d > 0}
        if leaks:
            ev += [
                f"node {b}: {d:.0f} write(s) to ZooKeeper by the broker itself after the gate" for b, d in leaks.items()
            ]
            return record(
                "forwarding-share",
                step,
                False,
                f"{sum(leaks.values()):.0f} forwardable write(s) not through the controller after the gate",
                ev,
            )
        return record(
            "forwarding-share",
            step,
            True,
            "100% of forwardable writes through the controller since every broker passed the gate",
            ev,
        )

    def reassignments_finished(self, step: int, snap: S.Snapshot) -> CheckRecord:
        moving = snap.reassigning()
        bad = (["/admin/reassign_partitions present"] if snap.reassign_znode else []) + [
            f"{t}-{p}: adding {list(snap.adding((t, p)))}" for t, p in moving
        ]
        return record(
            "reassignments-finished",
            step,
            not bad,
            f"{len(moving)} partition(s) still reassigning" if bad else "no reassignment in progress",
            (bad or [f"{len(snap.states)} partitions settled"]) + _out_of_scope(snap),
        )

    def brokers_registered(
        self, step: int, snap: S.Snapshot, monitor: Monitor, expected: dict[int, str]
    ) -> CheckRecord:
        bad, ev = [], []
        for b, want in sorted(expected.items()):
            s = monitor.latest.get(b)
            if b not in snap.brokers:
                bad.append(f"node {b} is not registered in /brokers/ids")
            elif s is None or not s.up:
                bad.append(f"node {b} does not answer its metrics")
            elif s.ibp is not None and s.ibp != want:
                bad.append(f"node {b} runs IBP {s.ibp}, expected {want}")
            else:
                ev.append(f"node {b}: registered (znode v{snap.brokers[b].ibp_znode_version}), IBP {s.ibp}")
        stray = sorted(set(snap.brokers) - set(expected))
        if stray:
            ev.append(f"also registered, not in the inventory: {stray}")
        return problems_record(
            "brokers-registered", step, bad, ev, f"all {len(expected)} nodes registered at the expected IBP"
        )


def _out_of_scope(snap: S.Snapshot) -> list[str]:
    """Evidence naming what a twin's check left aside (partitions on brokers the twin does not run)."""
    if not snap.out_of_scope:
        return []
    return [
        f"not judged: {len(snap.out_of_scope):,} partition(s) with a replica on a production broker the twin "
        "does not run (offline in production or left out)"
    ]


def _adding(op: OpRecord) -> set[int]:
    return set(op["args"].get("replicas") or ()) - set(op["args"].get("from") or ())


def _refused_for_away(op: OpRecord, away: Collection[int]) -> bool:
    """A reassignment refused because a replica it adds is on a node the step had taken down."""
    return (
        op["op"] == "reassign"
        and op["error"] in {"INVALID_REPLICA_ASSIGNMENT", "INVALID_REPLICATION_ASSIGNMENT"}
        and bool(_adding(op) & set(away))
    )
