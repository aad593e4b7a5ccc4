"""The client load's worker process: one real Kafka admin client journaling every operation it sent and what came
back (one :class:`~migrate.rehearse.model.OpRecord` JSON line each). The pool that starts, paces, pauses and stops
these processes is :mod:`migrate.rehearse.load`; nothing here runs in the rehearsal's own process.

Why the ownership rule (it is what makes :mod:`migrate.rehearse.ledger` exact rather than statistical): every
entity a worker touches carries its prefix ``rh-<worker>-<run tag>-`` (the tag keeps a second rehearsal against the
same cluster clear of the first one's leftovers); a worker sends one operation at a time; and once an operation on
an entity has failed, the worker never touches that entity again, because its state is ambiguous (a timed-out
request may still complete, KIP-4) until the ledger has looked. A worker keeps a few live entities of every kind
and makes new ones as old ones are poisoned or deleted, so every op kind keeps happening.

The clients themselves, what each can do and how their errors are classified: :mod:`migrate.rehearse.clients`.

Not journaled, because they are the load's bookkeeping rather than load: the DescribeCluster before a create,
create_partitions or reassign (a replication factor or target above the registered brokers is refused with a
non-retriable error, and a node is away for part of every roll), the DescribeTopics before a reassign (to pick a
target that differs), and one DescribeAcls at start (a cluster without an authorizer answers every ACL request
SECURITY_DISABLED; its workers then leave ACLs out, see :meth:`migrate.rehearse.load.LoadPool.ops`).
"""

from __future__ import annotations

import logging
import os
import random
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.synchronize import Event
from typing import Any, NamedTuple

import orjson

from migrate.rehearse.clients import Admin, AdminOpFailed, WorkerSpec, make_client
from migrate.rehearse.model import OPS, OpRecord

log = logging.getLogger(__name__)

CONFIG_KEY = "retention.ms"
QUOTA_KEY = "producer_byte_rate"
#: Relative weight of each op in the mix (among the ops a worker's client has and that have an eligible entity).
WEIGHTS = {
    "create_topic": 1.5,
    "delete_topic": 1.2,
    "create_partitions": 1.0,
    "alter_config": 1.5,
    "create_acl": 1.2,
    "delete_acl": 1.0,
    "alter_quota": 1.0,
    "reassign": 1.0,
    "metadata": 1.0,
}
MIN_TOPICS, MAX_TOPICS = 2, 5
MAX_PARTITIONS = 6
ACL_RESOURCES = 3
QUOTA_IDS = 2
#: A topic moved this recently is not deleted: Kafka holds a deletion back until the move ends, so the delete
#: would time out for the move's sake, not the node's.
MOVE_QUIET_S = 20.0
#: Polling interval of the worker's idle and pacing waits.
TICK_S = 0.1


# -- one worker's entities and op choice ----------------------------------------------------------------------------
@dataclass
class _Topic:
    name: str
    partitions: int
    rf: int
    moved_at: float | None = None  # time.monotonic() of the last reassignment sent


class _Plan(NamedTuple):
    op: str
    entity: str
    args: dict[str, Any]
    call: Callable[[], None]
    settle: Callable[[bool], None]  # told whether the op succeeded: keeps or poisons the entity


class _Worker:
    """What one worker owns and what it does next. Every entity it names starts with ``rh-<worker>-<tag>-``."""

    def __init__(self, spec: WorkerSpec, client: Admin, brokers: list[int], acls: bool) -> None:
        self.spec = spec
        self.client = client
        self.ops = client.ops if acls else client.ops - {"create_acl", "delete_acl"}
        self.rng = random.Random(f"{spec.seed}:{spec.worker}")
        self.prefix = f"rh-{spec.worker}-{spec.tag}-"
        self.principal = f"User:rh-{spec.worker}"
        self.brokers = brokers
        self.topics: dict[str, _Topic] = {}
        self.acls: dict[str, bool] = {}  # resource -> whether the entry is there
        self.quotas: list[str] = []
        self.seq = 0
        self._names = 0

    def _name(self, kind: str) -> str:
        self._names += 1
        return f"{self.prefix}{kind}{self._names}"

    def _fresh_brokers(self) -> list[int] | None:
        """The brokers the client sees now: a replication factor or a target above what is registered is refused
        with a non-retriable error, and a node is away for part of every roll. Not journaled: bookkeeping."""
        try:
            self.brokers = self.client.brokers()
        except AdminOpFailed:
            return None
        return self.brokers

    def choose(self) -> _Plan | None:
        now = time.monotonic()
        movable = [t for t in self.topics.values() if t.moved_at is None or now - t.moved_at > MOVE_QUIET_S]
        growable = [t for t in self.topics.values() if t.moved_at is None and t.partitions < MAX_PARTITIONS]
        eligible = {
            "create_topic": len(self.topics) < MAX_TOPICS,
            "delete_topic": len(self.topics) > MIN_TOPICS and bool(movable),
            "create_partitions": bool(growable),
            "alter_config": bool(self.topics),
            "create_acl": True,
            "delete_acl": any(self.acls.values()),
            "alter_quota": True,
            "reassign": bool(self.topics),
            "metadata": True,
        }
        ops = [op for op in OPS if op in self.ops and eligible[op]]
        weights = [WEIGHTS[op] * (4 if op == "create_topic" and len(self.topics) < MIN_TOPICS else 1) for op in ops]
        op = self.rng.choices(ops, weights)[0]
        plan: _Plan | None = getattr(self, f"_{op}")()
        return plan

    # one method per op: what it asks for, and what it keeps afterwards
    def _create_topic(self) -> _Plan | None:
        brokers = self._fresh_brokers()
        if not brokers:
            return None
        name, partitions = self._name("t"), self.rng.randint(1, 3)
        rf = min(self.spec.replication_factor, len(brokers))

        def settle(ok: bool) -> None:
            if ok:
                self.topics[name] = _Topic(name, partitions, rf)

        return _Plan(
            "create_topic",
            f"topic:{name}",
            {"partitions": partitions, "replication_factor": rf},
            lambda: self.client.create_topic(name, partitions, rf),
            settle,
        )

    def _poison(self, topic: _Topic) -> Callable[[bool], None]:
        def settle(ok: bool) -> None:
            if not ok:
                self.topics.pop(topic.name, None)

        return settle

    def _delete_topic(self) -> _Plan | None:
        now = time.monotonic()
        movable = [t for t in self.topics.values() if t.moved_at is None or now - t.moved_at > MOVE_QUIET_S]
        topic = self.rng.choice(movable)

        def settle(_ok: bool) -> None:
            self.topics.pop(topic.name, None)  # deleted, or poisoned: gone from this worker either way

        return _Plan("delete_topic", f"topic:{topic.name}", {}, lambda: self.client.delete_topic(topic.name), settle)

    def _create_partitions(self) -> _Plan | None:
        brokers = self._fresh_brokers()
        growable = [t for t in self.topics.values() if t.moved_at is None and t.partitions < MAX_PARTITIONS]
        if not brokers or not growable:
            return None
        topic = self.rng.choice(growable)
        if topic.rf > len(brokers):
            return None
        total = topic.partitions + 1

        def settle(ok: bool) -> None:
            if ok:
                topic.partitions = total
            else:
                self.topics.pop(topic.name, None)

        return _Plan(
            "create_partitions",
            f"topic:{topic.name}",
            {"count": total},
            lambda: self.client.create_partitions(topic.name, total),
            settle,
        )

    def _alter_config(self) -> _Plan | None:
        topic = self.rng.choice(list(self.topics.values()))
        value = str(3_600_000 + self.seq)  # fresh: no two writes of one worker set the same value
        return _Plan(
            "alter_config",
            f"topic:{topic.name}",
            {"key": CONFIG_KEY, "value": value, "incremental": True},
            lambda: self.client.alter_config(topic.name, CONFIG_KEY, value),
            self._poison(topic),
        )

    def _acl_args(self, resource: str) -> dict[str, Any]:
        return {
            "resource_type": "TOPIC",
            "resource": resource,
            "pattern": "LITERAL",
            "principal": self.principal,
            "host": "*",
            "operation": "READ",
            "permission": "ALLOW",
        }

    def _settle_acl(self, resource: str, present: bool) -> Callable[[bool], None]:
        def settle(ok: bool) -> None:
            if ok:
                self.acls[resource] = present
            else:
                self.acls.pop(resource, None)

        return settle

    def _create_acl(self) -> _Plan | None:
        # Sometimes an entry that is there already: Kafka answers success and must not store it twice.
        resource = self._name("a") if len(self.acls) < ACL_RESOURCES else self.rng.choice(sorted(self.acls))
        return _Plan(
            "create_acl",
            f"acl:topic:{resource}",
            self._acl_args(resource),
            lambda: self.client.create_acl(resource, self.principal),
            self._settle_acl(resource, True),
        )

    def _delete_acl(self) -> _Plan | None:
        resource = self.rng.choice(sorted(r for r, present in self.acls.items() if present))
        return _Plan(
            "delete_acl",
            f"acl:topic:{resource}",
            self._acl_args(resource),
            lambda: self.client.delete_acl(resource, self.principal),
            self._settle_acl(resource, False),
        )

    def _alter_quota(self) -> _Plan | None:
        client_id = self._name("q") if len(self.quotas) < QUOTA_IDS else self.rng.choice(self.quotas)
        value = 1024 * (1000 + self.seq)

        def settle(ok: bool) -> None:
            if ok and client_id not in self.quotas:
                self.quotas.append(client_id)
            elif not ok and client_id in self.quotas:
                self.quotas.remove(client_id)

        return _Plan(
            "alter_quota",
            f"quota:client-id:{client_id}",
            {"key": QUOTA_KEY, "value": value},
            lambda: self.client.alter_quota(client_id, QUOTA_KEY, value),
            settle,
        )

    def _reassign(self) -> _Plan | None:
        brokers = self._fresh_brokers()
        if not brokers:
            return None
        topic = self.rng.choice(list(self.topics.values()))
        try:
            current = self.client.replicas(topic.name)
        except AdminOpFailed:
            return None
        partition = self.rng.randrange(topic.partitions)
        origin = current.get(partition)
        if origin is not None and len(origin) != topic.rf:
            # a move still under way: Kafka's Metadata lists its adding replicas too, and a target of that size
            # would raise the topic's RF, which the journal holds it to (e.g. [3, 2, 1] at RF 2)
            return None
        target = self._target(origin, brokers) if origin else None
        if target is None:
            return None

        def settle(ok: bool) -> None:
            if ok:
                topic.moved_at = time.monotonic()
            else:
                self.topics.pop(topic.name, None)

        topic.moved_at = time.monotonic()  # from the moment it is sent: a timed-out move may still be under way
        return _Plan(
            "reassign",
            f"topic:{topic.name}",
            {"partition": partition, "replicas": target, "from": origin},
            lambda: self.client.reassign(topic.name, partition, target),
            settle,
        )

    def _target(self, origin: list[int], brokers: list[int]) -> list[int] | None:
        """A replica list of the same size on registered brokers that differs from ``origin``: one replica swapped
        for a broker outside the list when there is one, else the same brokers in another order (another
        preferred leader)."""
        live = set(brokers)
        spare = [b for b in brokers if b not in origin]
        target = list(origin)
        for i, r in enumerate(target):  # a replica on a broker that is away: move it to one that is here
            if r not in live and spare:
                target[i] = spare.pop(self.rng.randrange(len(spare)))
        if any(r not in live for r in target):
            return None
        if target == origin:
            if spare:
                target[self.rng.randrange(len(target))] = self.rng.choice(spare)
            elif len(target) > 1:
                target = target[1:] + target[:1]
            else:
                return None
        return target

    def _metadata(self) -> _Plan | None:
        call = self.rng.choice(("list_topics", "describe_cluster"))
        return _Plan("metadata", "cluster", {"call": call}, lambda: self.client.metadata(call), lambda _ok: None)


# -- the worker process ---------------------------------------------------------------------------------------------
def worker_main(spec: WorkerSpec, run: Event, stop: Event, idle: Event, ready: Any, counts: Any) -> None:
    """A worker process. Its stdout and stderr (librdkafka's C logs included) go to its own log file: the rehearsal
    owns the terminal. SIGINT is ignored: the pool stops its workers, and one interrupted mid-operation would leave
    an entity whose fate no record tells."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with spec.log.open("ab") as out:
        os.dup2(out.fileno(), 1)
        os.dup2(out.fileno(), 2)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        client = make_client(spec)
        brokers = client.brokers()
        # A cluster without an authorizer answers every ACL request SECURITY_DISABLED (not retriable): that is the
        # cluster's configuration, not a fault under load, so such a worker leaves ACLs out.
        acls = client.acls_enabled(f"rh-{spec.worker}-{spec.tag}-probe")
    except Exception as exc:
        failed = exc if isinstance(exc, AdminOpFailed) else None
        ready.put((spec.worker, str(failed) if failed else f"{type(exc).__name__}: {exc}", []))
        return
    worker = _Worker(spec, client, brokers, acls)
    log.warning(
        "%s (%s) connected; brokers %s; ops: %s", spec.worker, spec.client, brokers, ", ".join(sorted(worker.ops))
    )
    ready.put((spec.worker, None, sorted(worker.ops)))
    with spec.journal.open("ab") as journal, spec.inflight.open("wb") as flight:
        _loop(spec, worker, run, stop, idle, counts, journal, flight)
    idle.set()
    client.close()


def _loop(
    spec: WorkerSpec, worker: _Worker, run: Event, stop: Event, idle: Event, counts: Any, journal: Any, flight: Any
) -> None:
    next_at = time.monotonic() + spec.offset
    while not stop.is_set():
        if not run.is_set():
            idle.set()
            while not run.wait(TICK_S) and not stop.is_set():
                pass
            idle.clear()  # the top of the loop looks at run again before any operation starts
            next_at = time.monotonic() + spec.offset
            continue
        delay = next_at - time.monotonic()
        if delay > 0:
            stop.wait(min(delay, TICK_S))
            continue
        next_at = max(next_at + spec.interval, time.monotonic() - spec.interval)
        try:
            plan = worker.choose()
        except Exception:  # a helper read the client could not make sense of: no operation this turn
            log.exception("%s: choosing the next operation failed", spec.worker)
            continue
        if plan is None:
            continue
        rec: OpRecord = {
            "worker": spec.worker,
            "client": spec.client,
            "seq": worker.seq,
            "op": plan.op,
            "entity": plan.entity,
            "args": plan.args,
            "started": time.time(),
            "ended": 0.0,
            "ok": False,
            "error": "WorkerKilled",
            "retriable": False,
            "forwardable": plan.op != "metadata",
        }
        _rewrite(flight, orjson.dumps(rec))  # what to journal should this process die mid-operation
        try:
            plan.call()
            rec["ok"], rec["error"], rec["retriable"] = True, None, None
        except AdminOpFailed as failed:
            rec["error"], rec["retriable"] = failed.error, failed.retriable
            log.warning("%s #%d %s %s failed: %s", spec.worker, worker.seq, plan.op, plan.entity, failed)
        except Exception as exc:  # an answer the client library could not take apart: what an application sees
            rec["error"], rec["retriable"] = type(exc).__name__, False
            log.exception("%s #%d %s %s failed", spec.worker, worker.seq, plan.op, plan.entity)
        rec["ended"] = time.time()
        journal.write(orjson.dumps(rec) + b"\n")
        journal.flush()
        _rewrite(flight, b"")
        plan.settle(rec["ok"])
        worker.seq += 1
        counts[spec.index] = worker.seq


def _rewrite(f: Any, data: bytes) -> None:
    f.seek(0)
    f.truncate()
    f.write(data)
    f.flush()
