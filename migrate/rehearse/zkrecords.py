"""Who wrote the metadata, by ZooKeeper's own account: its transaction log names the session of every write,
and the znodes' ``mzxid``/``czxid`` point into that log. Our nodes' logs and metrics are not evidence here —
a broker that writes ZooKeeper itself is exactly the broker whose word we should not take.

Sessions are told apart from the same log: a session that created the ephemeral ``/controller`` is a
controller session; one that created ``/brokers/ids/<n>`` is broker n's. The owned stack gives the controller
its own ZooKeeper identity (hence its own session), so a node's broker side and controller side never share one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from migrate.snapshot import files as F
from migrate.snapshot.jute import FormatError

if TYPE_CHECKING:
    from controller.zk.session import ZkSession

#: Subtrees only the active controller may write once every broker is past the forwarding gate. A broker's
#: own registration (/brokers/ids) and log-dir events are a broker's by Kafka's design.
CONTROLLER_OWNED = (
    "/brokers/topics",
    "/brokers/seqid",
    "/admin",
    "/config",
    "/kafka-acl",
    "/kafka-acl-changes",
    "/kafka-acl-extended",
    "/kafka-acl-extended-changes",
    "/isr_change_notification",
    "/controller_epoch",
    "/feature",
    "/latest_producer_id_block",
    "/cluster",
)
WRITES = {
    F.CREATE: "create",
    F.CREATE2: "create",
    F.CREATE_CONTAINER: "create",
    F.CREATE_TTL: "create",
    F.DELETE: "delete",
    F.DELETE_CONTAINER: "delete",
    F.SET_DATA: "setData",
    F.SET_ACL: "setACL",
}
MAX_LINES = 40


def owned(path: str) -> bool:
    return any(path == root or path.startswith(root + "/") for root in CONTROLLER_OWNED)


@dataclass
class Write:
    zxid: int
    session: int
    kind: str
    path: str  # relative to the chroot
    by_active: bool = False  # the session held /controller when it wrote (a deposed controller's session does not)


@dataclass
class Audit:
    log_dir: Path | None = None
    last_zxid: int = 0
    controller_sessions: set[int] = field(default_factory=set)
    broker_sessions: dict[int, int] = field(default_factory=dict)  # session -> broker id
    writes: list[Write] = field(default_factory=list)  # every write under the chroot, in log order
    partial_tail: bool = False  # the live log ended mid-transaction (being written as we read)

    def who(self, session: int) -> str:
        if session in self.controller_sessions:
            return "a controller session, not the active one then"
        if session in self.broker_sessions:
            return f"broker {self.broker_sessions[session]}'s session"
        return "a session of neither a controller nor a broker"


def _txns(path: Path, audit: Audit) -> Iterator[F.Txn]:
    try:
        yield from F.read_log(path)
    except FormatError:
        audit.partial_tail = True  # only the newest file can be mid-write; older ones are complete


def _ops(txn: F.Txn) -> Iterable[tuple[int, dict[str, object]]]:
    if txn.type == F.MULTI:
        ops: list[tuple[int, dict[str, object]]] = txn.body.get("ops", [])  # type: ignore[assignment]
        return ops
    return [(txn.type, txn.body)]


def read_audit(dirs: Sequence[Path], chroot: str, *, merge: bool = False) -> Audit:
    """Read the transaction logs of the member that has the most (members of one ensemble log the same
    transactions; one paused or restarted may lag).

    With ``merge``, read every member's logs (``dirs``: one per member of the ensemble) and keep each transaction
    that a quorum of them logged, once. A member restarted while the others went on may have been brought up to
    date with a snapshot, leaving a gap in its own log; and a leader that was frozen logs, when it wakes up, the
    proposals of a term that has ended (typically the expiry of every session it tracked), which are never
    committed and may stay in its log. ZooKeeper commits exactly what a quorum logged (a follower logs a proposal
    before it acknowledges it), so the quorum's transactions are the ensemble's history."""
    candidates: list[tuple[int, int, Path, list[Path]]] = []
    for d in dirs:
        _snaps, logs = F.files_in(d)
        if logs:
            candidates.append((F.zxid_of(logs[-1]), sum(p.stat().st_size for p in logs), d, logs))
    audit = Audit()
    if not candidates:
        return audit
    best = max(candidates, key=lambda c: (c[0], c[1]))
    audit.log_dir = best[2]
    if not merge:
        _replay(audit, (txn for log in best[3] for txn in _txns(log, audit)), chroot)
        return audit
    quorum = len(dirs) // 2 + 1
    seen: dict[int, F.Txn] = {}
    logged: Counter[int] = Counter()
    for _newest, _size, _d, logs in candidates:
        mine: set[int] = set()
        for log in logs:
            for txn in _txns(log, audit):
                if txn.zxid not in mine:
                    mine.add(txn.zxid)
                    seen.setdefault(txn.zxid, txn)
        logged.update(mine)
    _replay(audit, (seen[z] for z in sorted(seen) if logged[z] >= quorum), chroot)
    return audit


def _replay(audit: Audit, txns: Iterable[F.Txn], chroot: str) -> None:
    prefix = chroot.rstrip("/")
    owner: int | None = None  # the session holding /controller at this point of the log
    for txn in txns:
        audit.last_zxid = txn.zxid
        if txn.type == F.CLOSE_SESSION and txn.session == owner:
            owner = None  # its ephemeral /controller goes with it
        for kind, body in _ops(txn):
            name = WRITES.get(kind)
            raw = body.get("path")
            if name is None or not isinstance(raw, str) or not (raw == prefix or raw.startswith(prefix + "/")):
                continue
            path = raw[len(prefix) :] or "/"
            if name == "create" and body.get("ephemeral"):
                if path == "/controller":
                    audit.controller_sessions.add(txn.session)
                    owner = txn.session
                elif path.startswith("/brokers/ids/") and path.rsplit("/", 1)[1].isdigit():
                    audit.broker_sessions[txn.session] = int(path.rsplit("/", 1)[1])
            elif name == "delete" and path == "/controller":
                owner = None
            audit.writes.append(Write(txn.zxid, txn.session, name, path, txn.session == owner))


@dataclass
class Verdict:
    ok: bool
    summary: str
    evidence: list[str]


def check_writes(
    audit: Audit, after_zxid: int, znodes: Iterable[tuple[str, int, int]], operator: Mapping[int, str] | None = None
) -> Verdict:
    """Every write to a controller-owned path after ``after_zxid`` must come from a controller session, and every
    controller-owned znode changed since then (``znodes``: path, czxid, mzxid from a live read) must trace back to
    such a write in the log. ``operator`` names sessions whose ACL changes are the operator's own (the
    rehearsal's lockdown): counted apart, not held against the brokers."""
    ops = dict(operator or {})
    if audit.log_dir is None:
        return Verdict(
            False,
            "no ZooKeeper transaction log to read: cannot tell who wrote",
            [
                'give the ensemble\'s data directories (inventory "zookeeper_data_dirs") to check this',
            ],
        )
    bad: list[str] = []
    count = acl_changes = 0
    by_zxid: dict[int, Write] = {}
    for w in audit.writes:
        by_zxid.setdefault(w.zxid, w)
        if w.zxid <= after_zxid or not owned(w.path):
            continue
        if w.session in ops and w.kind == "setACL":
            acl_changes += 1
            continue
        count += 1
        if not w.by_active:
            bad.append(f"zxid 0x{w.zxid:x}: {w.kind} {w.path} by session 0x{w.session:x} ({audit.who(w.session)})")
    traced = untraced = 0
    for path, czxid, mzxid in znodes:
        if not owned(path):
            continue
        for zxid in {czxid, mzxid}:
            if zxid <= after_zxid:
                continue
            found = by_zxid.get(zxid)
            if found is None:
                if zxid > audit.last_zxid:
                    continue  # written after we read the log: the next check sees it
                untraced += 1
                bad.append(f"{path}: zxid 0x{zxid:x} is not in ZooKeeper's transaction log ({audit.log_dir})")
            elif not found.by_active:
                who = audit.who(found.session)
                bad.append(f"{path}: last written at zxid 0x{zxid:x} by session 0x{found.session:x} ({who})")
            else:
                traced += 1
    sessions = ", ".join(f"0x{s:x}" for s in sorted(audit.controller_sessions)) or "none"
    evidence = [
        f"transaction log: {audit.log_dir}, read up to zxid 0x{audit.last_zxid:x}"
        + (" (its live tail was being written)" if audit.partial_tail else ""),
        f"after zxid 0x{after_zxid:x}: {count} writes to controller-owned paths; controller sessions: {sessions}",
        f"znodes changed since then traced to a controller write: {traced}",
    ]
    evidence += [f"ACL changes by {what} (session 0x{s:x}): {acl_changes}" for s, what in ops.items() if acl_changes]
    if bad:
        evidence += bad[:MAX_LINES] + ([f"... and {len(bad) - MAX_LINES} more"] if len(bad) > MAX_LINES else [])
        return Verdict(False, f"{len(bad)} write(s) to controller-owned znodes not by the controller", evidence)
    return Verdict(True, f"{count} metadata writes since the bump, all by the active controller's session", evidence)


def changed_znodes(session: ZkSession) -> list[tuple[str, int, int]]:
    """(path, czxid, mzxid) of every znode in the controller-owned subtrees, read live."""
    from migrate.snapshot.export import walk

    return [(n.path, n.czxid, n.mzxid) for n in walk(session, CONTROLLER_OWNED)]
