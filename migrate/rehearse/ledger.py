"""Are the acknowledged writes in ZooKeeper? The client journal (:mod:`migrate.rehearse.load`) against the znodes.

Exact, not statistical, because of the load's ownership rule: every entity belongs to one worker, which sends one
operation at a time and never touches an entity again after an operation on it failed. So each entity's records,
replayed in ``seq`` order, say what ZooKeeper must hold now: after an acknowledged write, its result; after a
failed one, either what was there before it or, when the failure leaves the outcome in doubt (a timeout: KIP-4
lets the request carry on in the background), also its result. A failure with a definite error (INVALID_REQUEST,
POLICY_VIOLATION, NOT_CONTROLLER, answered before anything was written) must have left no trace.

What is compared, per entity kind (paths relative to the chroot of the session):

- topics: ``/brokers/topics/<t>`` exists with the partition count the creates and ``create_partitions`` made and
  each partition's target replica count equal to the replication factor; after a delete that was sent, the
  topic is gone or marked in ``/admin/delete_topics`` (a deletion under way); ``retention.ms`` in
  ``/config/topics/<t>``; a reassigned partition's target replicas (RS minus removing) equal the requested list,
  whether the move is done or still adding/removing, or the legacy ``/admin/reassign_partitions`` asks for it;
- ACLs: the worker's entry in ``/kafka-acl/Topic/<resource>`` present after a create, absent after a delete;
- quotas: ``producer_byte_rate`` in ``/config/clients/<client-id>``;
- nothing twice: no repeated entry in an ACL znode of the workers' resources, no repeated broker in a replica
  list of the workers' topics, no two topics with one topic id.

Reads go through :class:`Reader` (two calls), so the replay logic is tested without a ZooKeeper. Reads are not
one snapshot; what can change between them while the workers are paused is the controller finishing a deletion or
a move, and both the before and after of that are accepted. The deletion marker is read before the topics, since
Kafka removes the topic before its marker: a marker seen gone means the topic was gone already.

The module is long because it is one replay: the states an entity may be in, what ZooKeeper holds and the
comparison of the two are written against each other, per entity kind.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, Protocol

import orjson

from migrate.rehearse.model import OpRecord
from zkmodel import paths
from zkmodel.admin import PartitionReassignmentZnode
from zkmodel.configs import CLIENTS, TOPICS, EntityConfig
from zkmodel.errors import ZnodeFormatError
from zkmodel.kafka_acls import AclEntry, AclNode, AclOperation, PermissionType, ResourceType
from zkmodel.topics import TopicAssignment

if TYPE_CHECKING:
    from controller.zk.session import ZkSession

CONFIG_KEY = "retention.ms"
QUOTA_KEY = "producer_byte_rate"
MAX_EVIDENCE = 50
#: Candidate states kept per entity: the ownership rule keeps it at two; the cap only bounds a journal that
#: breaks the rule.
MAX_CANDIDATES = 64
#: Errors after which the request may have taken effect: a timeout (the request carries on, KIP-4), a broken
#: connection (the request may have gone out before it broke), a server error of unknown extent.
IN_DOUBT = frozenset({"REQUEST_TIMED_OUT", "NETWORK_EXCEPTION", "UNKNOWN_SERVER_ERROR", "UNKNOWN"})
#: Errors only a repeat of a request that already took effect gets: a client's own retry or a forwarding broker's
#: (KIP-590 retries on NOT_CONTROLLER). The worker's names are fresh, so there is no other way to get them.
ECHOES = {
    "create_topic": frozenset({"TOPIC_ALREADY_EXISTS"}),
    "delete_topic": frozenset({"UNKNOWN_TOPIC_OR_PARTITION", "UNKNOWN_TOPIC_ID"}),
    "create_partitions": frozenset({"INVALID_PARTITIONS"}),
}
_KAFKA_NAME = re.compile(r"[A-Z][A-Z0-9_]*")


def in_doubt(op: str, error: str | None) -> bool:
    """Whether a failed ``op`` may still have taken effect. A Kafka error name (capitals, from a response) is
    definite unless it is a timeout or an echo; anything else -- librdkafka's local ``_TIMED_OUT``/``_TRANSPORT``,
    a client's exception class (``KafkaConnectionError``, ``OpDeadlineExceeded``, ``WorkerKilled``) -- failed on
    the client's side, possibly after the request was sent."""
    if error is None:
        return False
    if error in IN_DOUBT or error in ECHOES.get(op, ()):
        return True
    return not _KAFKA_NAME.fullmatch(error)


# -- reading ZooKeeper ----------------------------------------------------------------------------------------------
class Reader(Protocol):
    def data(self, paths: Sequence[str]) -> Mapping[str, bytes | None]:
        """Data of each path, None for a missing znode."""
        ...

    def children(self, path: str) -> list[str] | None:
        """Children of a path, None for a missing znode."""
        ...


class ZkReader:
    def __init__(self, zk: ZkSession) -> None:
        self.zk = zk

    def data(self, paths: Sequence[str]) -> Mapping[str, bytes | None]:
        found = self.zk.read_data(paths)
        return {p: None if (r := found.get(p)) is None else (r[0] or b"") for p in paths}

    def children(self, path: str) -> list[str] | None:
        return self.zk.get_children(path)


# -- what an entity may look like -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class TopicState:
    status: Literal["absent", "present", "deleted"]  # deleted: a delete was sent and acknowledged
    partitions: int = 0
    rf: int = 0
    config: str | None = None  # the retention.ms the worker set, None for none
    targets: tuple[tuple[int, tuple[int, ...]], ...] = ()  # partition -> replicas asked for, sorted by partition

    def describe(self) -> str:
        if self.status != "present":
            return "absent" if self.status == "absent" else "deleted or marked for deletion"
        text = f"present with {self.partitions} partition(s) at RF {self.rf}"
        text += f", {CONFIG_KEY}={self.config}" if self.config is not None else f", no {CONFIG_KEY}"
        return text + "".join(f", p{p} target {list(r)}" for p, r in self.targets)


@dataclass(frozen=True)
class AclState:
    present: bool = False

    def describe(self) -> str:
        return "entry present" if self.present else "entry absent"


@dataclass(frozen=True)
class QuotaState:
    value: str | None = None

    def describe(self) -> str:
        return f"{QUOTA_KEY}={self.value}" if self.value is not None else f"no {QUOTA_KEY}"


State = TopicState | AclState | QuotaState


def _apply(state: State, rec: OpRecord) -> State:
    """The state after ``rec`` took effect on ``state``."""
    op, args = rec["op"], rec["args"]
    if isinstance(state, TopicState):
        if op == "create_topic":
            return TopicState("present", int(args["partitions"]), int(args["replication_factor"]))
        if op == "delete_topic":
            return TopicState("deleted")
        if op == "create_partitions":
            return replace(state, partitions=int(args["count"]))
        if op == "alter_config":
            return replace(state, config=str(args["value"]))
        if op == "reassign":
            targets = dict(state.targets)
            targets[int(args["partition"])] = tuple(int(r) for r in args["replicas"])
            return replace(state, targets=tuple(sorted(targets.items())))
    elif isinstance(state, AclState):
        return AclState(op == "create_acl")
    elif isinstance(state, QuotaState):
        return QuotaState(_number(args["value"]))
    return state


def _number(value: Any) -> str:
    """A quota as Kafka stores it: a LONG quota's value without a fraction."""
    number = float(value)
    return str(int(number)) if number.is_integer() else str(number)


# -- what ZooKeeper holds -------------------------------------------------------------------------------------------
@dataclass
class TopicSeen:
    assignment: TopicAssignment | None
    marked: bool
    config: str | None
    legacy: dict[int, tuple[int, ...]]  # /admin/reassign_partitions entries of this topic
    malformed: str | None = None  # why the topic znode does not decode (it exists, then)
    raw: bytes | None = None

    def describe(self) -> str:
        a = self.assignment
        if self.malformed is not None:
            return f"a malformed topic znode ({self.malformed})" + (", marked for deletion" if self.marked else "")
        if a is None:
            return "absent" + (" (marked for deletion)" if self.marked else "")
        rfs = sorted({len(a.target(p)) for p in a.partitions})
        text = f"present with {len(a.partitions)} partition(s) at RF {','.join(map(str, rfs))}"
        text += f", {CONFIG_KEY}={self.config}" if self.config is not None else f", no {CONFIG_KEY}"
        return text + (", marked for deletion" if self.marked else "")


def _topic_mismatch(want: TopicState, seen: TopicSeen) -> str | None:
    a = seen.assignment
    if seen.malformed is not None:
        return None if want.status == "deleted" and seen.marked else f"topic znode malformed: {seen.malformed}"
    if want.status == "absent":
        return None if a is None and not seen.marked else "expected absent"
    if want.status == "deleted":
        return None if a is None or seen.marked else "expected deleted or marked for deletion"
    if a is None:
        return "expected present, topic znode absent"
    if seen.marked:
        return "expected present, marked for deletion"
    if len(a.partitions) != want.partitions or set(a.partitions) != set(range(want.partitions)):
        return f"expected partitions 0..{want.partitions - 1}, found {sorted(a.partitions)}"
    wrong_rf = [p for p in sorted(a.partitions) if len(a.target(p)) != want.rf]
    if wrong_rf:
        return f"partition(s) {wrong_rf} not at RF {want.rf}: {[list(a.target(p)) for p in wrong_rf]}"
    for p, target in want.targets:
        if a.target(p) != target and seen.legacy.get(p) != target:
            moving = f" (adding {list(a.adding_replicas.get(p, ()))}, removing {list(a.removing_replicas.get(p, ()))})"
            return (
                f"partition {p}: replicas {list(a.partitions[p])}{moving if a.is_reassigning(p) else ''}, "
                f"expected target {list(target)}"
            )
    if seen.config != want.config:
        return f"{CONFIG_KEY} {seen.config!r}, expected {want.config!r}"
    return None


# -- the replay -----------------------------------------------------------------------------------------------------
@dataclass
class _Entity:
    kind: Literal["topic", "acl", "quota"]
    name: str
    worker: str
    records: list[OpRecord] = field(default_factory=list)


@dataclass
class LedgerResult:
    ok: bool
    summary: str
    evidence: list[str]
    problems: int


def _entity(rec: OpRecord) -> tuple[Literal["topic", "acl", "quota"], str] | None:
    entity = rec["entity"]
    if entity.startswith("topic:"):
        return "topic", entity[len("topic:") :]
    if entity.startswith("acl:topic:"):
        return "acl", entity[len("acl:topic:") :]
    if entity.startswith("quota:client-id:"):
        return "quota", entity[len("quota:client-id:") :]
    return None


def _initial(kind: str) -> State:
    return TopicState("absent") if kind == "topic" else AclState() if kind == "acl" else QuotaState()


def _label(rec: OpRecord) -> str:
    outcome = "acknowledged" if rec["ok"] else f"failed {rec['error']}"
    return f"{rec['worker']}#{rec['seq']} {rec['op']} {rec['entity']} ({outcome})"


def _raw_replicas(raw: bytes | None) -> list[tuple[str, list[Any]]]:
    """Replica lists of a topic znode as written, without the decoder's checks."""
    try:
        parts = orjson.loads(raw or b"{}").get("partitions")
    except (orjson.JSONDecodeError, AttributeError):
        return []
    if not isinstance(parts, dict):
        return []
    return sorted((str(p), r) for p, r in parts.items() if isinstance(r, list))


def _either(states: Iterable[State]) -> str:
    return " or ".join(sorted({s.describe() for s in states}))


def _acl_entry(args: Mapping[str, Any]) -> AclEntry:
    return AclEntry(
        str(args["principal"]),
        PermissionType.parse(str(args.get("permission", "ALLOW"))),
        str(args.get("host", "*")),
        AclOperation.parse(str(args.get("operation", "READ"))),
    )


def verify(records: Sequence[OpRecord], zk: ZkSession) -> LedgerResult:
    """Check the journal against the live ZooKeeper of ``zk`` (paths under its chroot). A ZooKeeper that does not
    answer fails the check with the reason rather than raising: the rehearsal goes on to its other checks."""
    try:
        return check(records, ZkReader(zk))
    except Exception as exc:  # ZkUnavailable, SessionLost, a multiRead timeout: whatever the session raised
        writes = sum(r["op"] != "metadata" for r in records)
        return LedgerResult(
            False, f"{writes} writes not checked: cannot read ZooKeeper", [f"{type(exc).__name__}: {exc}"], 1
        )


def check(records: Sequence[OpRecord], reader: Reader) -> LedgerResult:
    entities: dict[tuple[str, str], _Entity] = {}
    for rec in sorted(records, key=lambda r: (r["worker"], r["seq"])):
        key = _entity(rec)
        if key is None or rec["op"] == "metadata":
            continue
        entities.setdefault(key, _Entity(key[0], key[1], rec["worker"])).records.append(rec)
    ledger = _Ledger(entities, reader)
    return ledger.run()


class _Ledger:
    def __init__(self, entities: Mapping[tuple[str, str], _Entity], reader: Reader) -> None:
        self.entities = entities
        self.reader = reader
        self.problems: list[str] = []
        self.acked = self.failed = self.no_trace = self.completed = 0
        self.wrong = self.definite = 0  # entities not as the journal says; definite failures that took effect
        self.settled_by: Counter[str] = Counter()
        self.notes: list[str] = []

    # -- reading ------------------------------------------------------------------------------------------------
    def _decode(self, decode: Callable[[str, bytes], Any], path: str, data: bytes | None) -> Any:
        if data is None:
            return None
        try:
            return decode(path, data)
        except ZnodeFormatError as exc:
            self.problems.append(f"malformed znode {exc}")
            return None

    def _read(self) -> dict[tuple[str, str], Any]:
        names = {kind: sorted(n for k, n in self.entities if k == kind) for kind in ("topic", "acl", "quota")}
        marked = set(self.reader.children(paths.DELETE_TOPICS) or [])  # before the topics: see the module doc
        legacy: dict[str, dict[int, tuple[int, ...]]] = defaultdict(dict)
        raw = self.reader.data([paths.REASSIGN_PARTITIONS])[paths.REASSIGN_PARTITIONS]
        znode = self._decode(PartitionReassignmentZnode.decode, paths.REASSIGN_PARTITIONS, raw)
        for tp, replicas in znode.partitions if znode is not None else ():
            legacy[tp.topic][tp.partition] = tuple(replicas)
        wanted = [q for t in names["topic"] for q in (paths.topic(t), paths.entity_config(TOPICS, t))]
        wanted += [paths.acl(ResourceType.TOPIC, r) for r in names["acl"]]
        wanted += [paths.entity_config(CLIENTS, c) for c in names["quota"]]
        data = self.reader.data(wanted) if wanted else {}
        seen: dict[tuple[str, str], Any] = {}
        for t in names["topic"]:
            raw_topic, malformed, assignment = data.get(paths.topic(t)), None, None
            try:  # judged with the topic's records, not reported on its own
                assignment = None if raw_topic is None else TopicAssignment.decode(paths.topic(t), raw_topic)
            except ZnodeFormatError as exc:
                malformed = exc.reason
            config = self._decode(
                EntityConfig.decode, paths.entity_config(TOPICS, t), data.get(paths.entity_config(TOPICS, t))
            )
            value = None if config is None or assignment is None else config.config.get(CONFIG_KEY)
            seen[("topic", t)] = TopicSeen(assignment, t in marked, value, legacy.get(t, {}), malformed, raw_topic)
        for r in names["acl"]:
            path = paths.acl(ResourceType.TOPIC, r)
            node = self._decode(AclNode.decode, path, data.get(path))
            seen[("acl", r)] = [] if node is None else list(node.acls)
        for c in names["quota"]:
            config = self._decode(
                EntityConfig.decode, paths.entity_config(CLIENTS, c), data.get(paths.entity_config(CLIENTS, c))
            )
            value = None if config is None else config.config.get(QUOTA_KEY)
            try:
                seen[("quota", c)] = None if value is None else _number(value)
            except ValueError:
                seen[("quota", c)] = value
        return seen

    # -- judging ------------------------------------------------------------------------------------------------
    def _mismatch(self, entity: _Entity, state: State, seen: Any) -> str | None:
        if isinstance(state, TopicState):
            return _topic_mismatch(state, seen)
        if isinstance(state, AclState):
            entry = _acl_entry(entity.records[-1]["args"])
            there = entry in seen
            return (
                None
                if there == state.present
                else ("expected entry present" if state.present else "expected entry absent")
            )
        if isinstance(state, QuotaState):
            return None if seen == state.value else f"expected {state.describe()}"
        return None

    def _found(self, entity: _Entity, seen: Any) -> str:
        if entity.kind == "topic":
            return str(seen.describe())
        if entity.kind == "acl":
            entry = _acl_entry(entity.records[-1]["args"])
            n = seen.count(entry)
            return f"entry present{f' {n} times' if n > 1 else ''}" if n else "entry absent"
        return f"{QUOTA_KEY}={seen}" if seen is not None else f"no {QUOTA_KEY}"

    def _judge(self, entity: _Entity, seen: Any) -> None:
        cands: set[State] = {_initial(entity.kind)}
        before: set[State] = set()
        for rec in entity.records:
            after = {_apply(c, rec) for c in cands}
            before = cands
            if rec["ok"]:
                cands = after
            elif in_doubt(rec["op"], rec["error"]):
                cands = cands | after
            if len(cands) > MAX_CANDIDATES:
                cands = set(list(cands)[:MAX_CANDIDATES])
        last = entity.records[-1]
        acked = sum(r["ok"] for r in entity.records)
        self.acked += acked
        self.failed += len(entity.records) - acked
        # failures before the last record (the ownership rule allows none) are judged only through the final state
        self.no_trace += sum(1 for r in entity.records[:-1] if not r["ok"])
        found = self._found(entity, seen)
        if not any(self._mismatch(entity, c, seen) is None for c in cands):
            if not last["ok"] and any(self._mismatch(entity, c, seen) is None for c in after):
                self.definite += 1
                self.problems.append(
                    f"{_label(last)}: a definite error, yet it took effect: found {found}, expected {_either(before)}"
                )
                return
            self.wrong += 1
            reasons = sorted({m for c in cands if (m := self._mismatch(entity, c, seen))})
            self.problems.append(f"{_label(last)}: {'; '.join(reasons)}; expected {_either(cands)}, found {found}")
            return
        if last["ok"]:
            return
        if any(self._mismatch(entity, c, seen) is None for c in before):
            self.no_trace += 1
            return
        self.completed += 1
        self.settled_by[str(last["error"])] += 1
        if len(self.notes) < 5:
            self.notes.append(f"{_label(last)} took effect: {found}")

    def _duplicates(self, seen: Mapping[tuple[str, str], Any]) -> int:
        found = 0
        ids: dict[str, list[str]] = defaultdict(list)
        for (kind, name), value in sorted(seen.items()):
            worker = self.entities[(kind, name)].worker
            if kind == "acl":
                for entry, n in sorted(Counter(value).items()):
                    if n > 1:
                        found += 1
                        self.problems.append(
                            f"{worker}: ACL {paths.acl(ResourceType.TOPIC, name)} holds "
                            f"{entry.principal} {entry.permission_type.name} {entry.operation.name} "
                            f"from {entry.host} {n} times"
                        )
            elif kind == "topic":
                for p, replicas in _raw_replicas(value.raw):  # raw: our decoder refuses such a znode outright
                    if len(set(replicas)) != len(replicas):
                        found += 1
                        self.problems.append(
                            f"{worker}: topic {name} partition {p} repeats a broker in its replicas {replicas}"
                        )
                if value.assignment is not None and value.assignment.topic_id is not None:
                    ids[value.assignment.topic_id].append(name)
        for topic_id, names in sorted(ids.items()):
            if len(names) > 1:
                found += 1
                self.problems.append(f"topic id {topic_id} shared by {', '.join(names)}")
        return found

    def run(self) -> LedgerResult:
        seen = self._read()
        malformed = len(self.problems)
        for key, entity in sorted(self.entities.items()):
            self._judge(entity, seen[key])
        duplicates = self._duplicates(seen)
        writes = self.acked + self.failed
        n = len(self.problems)
        if n:
            parts = [
                f"{k} {what}"
                for k, what in (
                    (self.wrong, "entities not as the journal says"),
                    (self.definite, "failed writes (definite errors) that took effect"),
                    (duplicates, "duplicates"),
                    (malformed, "malformed znodes"),
                )
                if k
            ]
            evidence = self.problems[:MAX_EVIDENCE]
            if n > MAX_EVIDENCE:
                evidence.append(f"... and {n - MAX_EVIDENCE} more")
            return LedgerResult(False, f"{writes} writes: {', '.join(parts)}", evidence, n)
        summary = (
            f"{writes} writes: {self.acked} acknowledged all present, {self.failed} failed: "
            f"{self.no_trace} absent, {self.completed} completed (timeouts)"
        )
        kinds = Counter(e.kind for e in self.entities.values())
        by = ", ".join(f"{e} {k}" for e, k in self.settled_by.most_common())
        evidence = [
            f"entities: {kinds['topic']} topics, {kinds['acl']} ACL resources, {kinds['quota']} quota client ids",
            *self._topic_notes(seen),
            f"failed writes that took effect after a timeout-like error: {self.completed}" + (f" ({by})" if by else ""),
            *self.notes,
            "no duplicate ACL entries, replicas or topic ids",
        ]
        return LedgerResult(True, summary, evidence, 0)

    def _topic_notes(self, seen: Mapping[tuple[str, str], Any]) -> Iterable[str]:
        topics = [v for (k, _), v in seen.items() if k == "topic"]
        present = sum(1 for t in topics if t.assignment is not None and not t.marked)
        deleting = sum(1 for t in topics if t.marked)
        moving = sum(1 for t in topics if t.assignment is not None and t.assignment.is_reassigning())
        yield (
            f"topics: {present} present, {deleting} being deleted, {len(topics) - present - deleting} gone; "
            f"{moving} still reassigning"
        )
