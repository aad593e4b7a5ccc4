"""What the rehearsal judges and keeps: the checks after every step (client load paused, so "every acknowledged
write is there" is asked of a quiet cluster), the post-flight step, and the artefacts (each partition's replicas
as a rollback plan, the Kafka subtrees of ZooKeeper) saved before the rolls and after them.
"""

from __future__ import annotations

import time

from migrate.rehearse import state as S
from migrate.rehearse.checks import record
from migrate.rehearse.host import RunHost
from migrate.rehearse.model import CheckRecord, OpRecord, StepRecord


# -- the checks after every step ----------------------------------------------------------------------------------
def run_checks(host: RunHost, rec: StepRecord) -> None:
    from migrate.rehearse import ledger

    progress = host.progress
    assert host.monitor is not None and host.session is not None
    host.show.status(f"{rec['name']}: checking (client load paused)")
    if host.load is not None:
        host.load.pause()
    try:
        host.monitor.sample()
        step, now = rec["index"], time.time()
        ops = ops_between(host, progress.last_check, now)
        snap = host.snapshot()
        c = host.checker
        final = rec["phase"] == "post-flight"
        new = [
            c.one_controller(step, snap, host.monitor),
            c.no_offline(step, snap),
            c.ids_unchanged(step, snap, ops),
            c.epoch_explained(step, snap, progress.disruptions),
            c.logs_clean(step, host.cluster.nodes()),
            c.client_errors(step, ops, recovered_since(rec), progress.away),
            c.forwarding_share(step, host.monitor, progress.bumped),
        ]
        if host.load is not None:
            found = ledger.verify(host.load.records(), host.session)
            new.append(record("acknowledged-writes", step, found.ok, found.summary, found.evidence))
        if rec["phase"] == "pre-flight" or final:
            new.append(c.brokers_registered(step, snap, host.monitor, progress.expected_ibp))
            new.append(c.reassignments_finished(step, snap))
        if progress.bumped and progress.bump_zxid is not None:
            new.append(zk_writes(host, step))
        if final and progress.aborted:
            not_ok = [s["name"] for s in progress.steps if s["outcome"] != "ok"]
            new.append(record("brokers-registered", step, False, "the rolls did not finish", not_ok))
        progress.checks.extend(new)
        progress.disruptions = []
        progress.away = set()
        progress.last_check = now
    finally:
        if host.load is not None and rec["phase"] != "post-flight":
            host.load.resume()


def recovered_since(rec: StepRecord) -> float | None:
    """A drill's recovery: the client load it lets run once the fault is over (its last settle wait)."""
    if rec["kind"] != "drill":
        return None
    settles = [w["started"] for w in rec["waits"] if w["what"].endswith("of client load")]
    return settles[-1] if settles else rec["ended"]


def zk_writes(host: RunHost, step: int) -> CheckRecord:
    from migrate.rehearse import zkrecords

    bump_zxid = host.progress.bump_zxid
    assert host.session is not None and bump_zxid is not None
    if not host.checker.bump_forwards:
        return record(
            "no-broker-zk-writes",
            step,
            True,
            f"not applicable: {host.options.to_ibp} is below the forwarding gate, brokers still write ZooKeeper "
            "by design",
            [],
        )
    zookeeper = host.cluster.zookeeper
    chroot = "/" + zookeeper.split("/", 1)[1] if "/" in zookeeper else ""
    znodes = zkrecords.changed_znodes(host.session)
    audit = zkrecords.read_audit(host.cluster.txn_log_dirs(), chroot)
    operator = {host.session.session_id: "this rehearsal's lockdown"} if host.options.lockdown else {}
    v = zkrecords.check_writes(audit, bump_zxid, znodes, operator)
    return record(
        "no-broker-zk-writes",
        step,
        v.ok,
        v.summary,
        [f"the bump completed at zxid 0x{bump_zxid:x} (last node's registration)", *v.evidence],
    )


def ops_between(host: RunHost, start: float, end: float) -> list[OpRecord]:
    if host.load is None:
        return []
    return [o for o in host.load.records() if start < o["ended"] <= end]


# -- post-flight and artefacts ------------------------------------------------------------------------------------
def postflight(host: RunHost, rec: StepRecord) -> None:
    host.settle(rec)
    host.wait(rec, "every reassignment finished", host.settled, host.options.reassignment_timeout)
    save_artefacts(host, "after", host.snapshot())


def settled(snap: S.Snapshot) -> tuple[bool, str]:
    """Whether every reassignment in ``snap`` finished, and what still moves."""
    moving = [f"{t}-{p}" for t, p in snap.reassigning()]
    if snap.reassign_znode:
        moving.append("/admin/reassign_partitions")
    return not moving, "still moving: " + ", ".join(moving[:5]) + (" ..." if len(moving) > 5 else "")


def save_artefacts(host: RunHost, when: str, snap: S.Snapshot) -> None:
    from migrate.atomic import write_atomic
    from migrate.reassign.plan_files import format_assignment
    from migrate.snapshot.export import walk
    from migrate.snapshot.rows import RowWriter
    from zkmodel.paths import KAFKA_ROOTS

    assert host.session is not None
    out_dir, artefacts = host.options.out_dir, host.progress.artefacts
    assignment = {(t, p): list(r) for t, a in snap.topics.items() for p, r in a.partitions.items()}
    name = f"assignment-{when}.json"
    write_atomic(out_dir / name, (format_assignment(assignment) + "\n").encode())
    artefacts.append(
        {
            "name": f"assignment {when}",
            "path": name,
            "description": f"every partition's replicas {when} the rehearsal, in kafka-reassign-partitions' "
            "format (a rollback plan: bridgekeeper reassign --execute)",
        }
    )
    export = f"zookeeper-{when}.jsonl"
    with RowWriter(out_dir / export, "jsonl") as rows:
        for node in walk(host.session, KAFKA_ROOTS):
            rows.write(node)
    artefacts.append(
        {
            "name": f"ZooKeeper export {when}",
            "path": export,
            "description": f"the Kafka subtrees of ZooKeeper {when} the rehearsal (bridgekeeper snapshot export "
            "format; bridgekeeper snapshot check reads it)",
        }
    )
