"""Live client load for the rehearsal: real Kafka admin clients, each in its own OS process, journaling every
operation they sent and what came back (one :class:`~migrate.rehearse.model.OpRecord` JSON line each).

Why processes: a client's I/O threads, retries and timeouts must not share a GIL, or a crash, with the rehearsal
that restarts nodes under them; and librdkafka is C, so a hang inside it can be ended only by killing a process.

Why the ownership rule (it is what makes :mod:`migrate.rehearse.ledger` exact rather than statistical): every
entity a worker touches carries its prefix ``rh-<worker>-<run tag>-`` (the tag keeps a second rehearsal against the
same cluster clear of the first one's leftovers); a worker sends one operation at a time; and once an operation on
an entity has failed, the worker never touches that entity again, because its state is ambiguous (a timed-out
request may still complete, KIP-4) until the ledger has looked. A worker keeps a few live entities of every kind
and makes new ones as old ones are poisoned or deleted, so every op kind keeps happening.

Which ops each client does (what the installed libraries really have):

- confluent-kafka 2.16.1: create_topic, delete_topic, create_partitions, alter_config (IncrementalAlterConfigs
  SET), create_acl, delete_acl, metadata (``list_topics`` / ``describe_cluster``). librdkafka has no
  AlterPartitionReassignments and no AlterClientQuotas, so its workers do no ``reassign`` and no ``alter_quota``.
- kafka-python 3.0.12: every op. ``alter_config`` goes through ``alter_configs(incremental=True)``
  (IncrementalAlterConfigs), ``reassign`` through ``alter_partition_reassignments``. It has no quota method but
  ships the AlterClientQuotas protocol message, so ``alter_quota`` sends that raw request on the client's own
  connection manager (a private path, the one ``tests/e2e/test_quotas_clients.py`` already relies on).

How ``error`` and ``retriable`` are classified:

- A Kafka error in a response is recorded by Kafka's name (``REQUEST_TIMED_OUT``, ``NOT_CONTROLLER``) with the
  client's own flag: confluent ``KafkaError.retriable()``, kafka-python's error class ``.retriable``.
- confluent-kafka client-side failures are librdkafka's local errors by name (``_TIMED_OUT``, ``_TRANSPORT``).
- kafka-python client-side failures are the exception class (``KafkaConnectionError``, ``KafkaTimeoutError``,
  ``NodeNotReadyError``; ``RequestTimedOutError`` is its own request timer firing, not the broker's
  ``REQUEST_TIMED_OUT``). Its ``RuntimeError("Failed to find active controller id!")``, raised after a
  NOT_CONTROLLER answer and one retry, is recorded as ``NOT_CONTROLLER``.
- ``OpDeadlineExceeded``: the operation outlived the worker's own deadline (request timeout + 5 s); it is left
  running in the background and the entity is poisoned like any other failure.
- Timeouts and transport errors count as retriable whatever the client's flag says: librdkafka sets the flag
  only on some errors (an admin result's ``REQUEST_TIMED_OUT`` comes back with ``retriable() == False``) though
  retrying is exactly what a caller does with them. Everything else keeps the client's flag.

- kafka-python's ``UnknownBrokerIdError`` (its metadata lacks the broker it wants; not retriable by its flag) is
  kept as it is, but made rare: see ``_KafkaPython._to_controller``.
- Anything else a client raises (a response it cannot take apart) is recorded by exception class, not retriable.

Whether a failure may still have taken effect is the ledger's question, not the journal's
(:func:`migrate.rehearse.ledger.in_doubt`).

Not journaled, because they are the load's bookkeeping rather than load: the DescribeCluster before a create,
create_partitions or reassign (a replication factor or target above the registered brokers is refused with a
non-retriable error, and a node is away for part of every roll), the DescribeTopics before a reassign (to pick a
target that differs), and one DescribeAcls at start (a cluster without an authorizer answers every ACL request
SECURITY_DISABLED; its workers then leave ACLs out, see :meth:`LoadPool.ops`).
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import queue
import random
import re
import secrets
import signal
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing.context import SpawnProcess
from multiprocessing.synchronize import Event
from pathlib import Path
from types import TracebackType
from typing import Any, NamedTuple, TypeVar

import orjson

from migrate.rehearse.model import OPS, OpRecord

log = logging.getLogger(__name__)
T = TypeVar("T")

CLIENTS = ("confluent-kafka", "kafka-python")
CONFIG_KEY = "retention.ms"
QUOTA_KEY = "producer_byte_rate"
#: Relative weight of each op in the mix (among the ops a worker's client has and that have an eligible entity).
WEIGHTS = {
    "create_topic": 1.5, "delete_topic": 1.2, "create_partitions": 1.0, "alter_config": 1.5, "create_acl": 1.2,
    "delete_acl": 1.0, "alter_quota": 1.0, "reassign": 1.0, "metadata": 1.0,
}  # fmt: skip
MIN_TOPICS, MAX_TOPICS = 2, 5
MAX_PARTITIONS = 6
ACL_RESOURCES = 3
QUOTA_IDS = 2
#: A topic moved this recently is not deleted: Kafka holds a deletion back until the move ends, so the delete
#: would time out for the move's sake, not the node's.
MOVE_QUIET_S = 20.0
#: Past the client's own request timeout, how long an operation may take before the worker gives up on it.
DEADLINE_MARGIN_S = 5.0
#: Polling interval of the worker's idle and pacing waits.
TICK_S = 0.1
#: Timeout-like errors: retriable whatever the client's flag says (see the module doc).
#: librdkafka's _DESTROY_BROKER is "Failed while waiting for response from broker: Local: Broker handle destroyed":
#: the broker left the client's metadata with the request outstanding (seen when a controller is killed).
TIMEOUTS = frozenset({
    "REQUEST_TIMED_OUT", "NETWORK_EXCEPTION", "_TIMED_OUT", "_TIMED_OUT_QUEUE", "_TRANSPORT", "_ALL_BROKERS_DOWN",
    "_MSG_TIMED_OUT", "_DESTROY_BROKER", "_NODE_UPDATE", "RequestTimedOutError", "KafkaTimeoutError",
    "KafkaConnectionError", "OpDeadlineExceeded",
})  # fmt: skip


class LoadError(RuntimeError):
    """The load could not start, or a worker stopped answering."""


class OpFailed(Exception):
    def __init__(self, error: str, retriable: bool, detail: str = "") -> None:
        super().__init__(f"{error}: {detail}" if detail else error)
        self.error = error
        self.retriable = retriable or error in TIMEOUTS


@dataclass(frozen=True)
class WorkerSpec:
    worker: str  # "w1"
    client: str
    index: int
    bootstrap: tuple[str, ...]  # already rotated for this worker
    journal_dir: str
    interval: float  # seconds between this worker's operations
    offset: float  # delay of its first operation, so workers do not fire in step
    seed: int
    tag: str
    request_timeout_ms: int
    replication_factor: int

    @property
    def journal(self) -> Path:
        return Path(self.journal_dir) / f"ops-{self.worker}.jsonl"

    @property
    def inflight(self) -> Path:
        return Path(self.journal_dir) / f"inflight-{self.worker}.json"

    @property
    def log(self) -> Path:
        return Path(self.journal_dir) / f"worker-{self.worker}.log"

    @property
    def deadline(self) -> float:
        return self.request_timeout_ms / 1000 + DEADLINE_MARGIN_S


# -- error classification (pure) ------------------------------------------------------------------------------------
def confluent_error(exc: BaseException) -> OpFailed:
    from confluent_kafka import KafkaError, KafkaException

    err = exc.args[0] if isinstance(exc, KafkaException) and exc.args else None
    if isinstance(err, KafkaError):
        return OpFailed(err.name(), bool(err.retriable()), err.str())
    return OpFailed(type(exc).__name__, False, str(exc))


def kafka_python_code(code: int, detail: str | None = None) -> OpFailed | None:
    from kafka import errors as E

    if code == 0:
        return None
    cls = E.for_code(code)
    return OpFailed(str(getattr(cls, "message", cls.__name__)), bool(cls.retriable), detail or "")


def kafka_python_error(exc: BaseException) -> OpFailed:
    from kafka import errors as E

    text = str(exc.args[0]) if exc.args else ""
    if isinstance(exc, E.BrokerResponseError) and not text.startswith("Request timed out"):
        return OpFailed(str(type(exc).message), bool(type(exc).retriable), text[:300])
    if isinstance(exc, E.KafkaError):
        return OpFailed(type(exc).__name__, bool(type(exc).retriable), text[:300])
    if isinstance(exc, RuntimeError) and "active controller" in text:
        return OpFailed("NOT_CONTROLLER", True, text)
    return OpFailed(type(exc).__name__, False, text[:300])


def _bounded(fn: Callable[[], T], deadline: float) -> T:
    """Run ``fn`` in a daemon thread and wait at most ``deadline``: kafka-python's controller lookup alone can spin
    for 30 s, and a worker must stay pausable. A call that outlives its deadline keeps running in the background,
    its entity poisoned by the failure recorded here."""
    box: list[tuple[bool, Any]] = []
    done = threading.Event()

    def run() -> None:
        try:
            box.append((True, fn()))
        except BaseException as exc:
            box.append((False, exc))
        finally:
            done.set()

    threading.Thread(target=run, name="rehearse-op", daemon=True).start()
    if not done.wait(deadline):
        raise OpFailed("OpDeadlineExceeded", True, f"no answer within {deadline:.0f} s")
    ok, value = box[0]
    if not ok:
        raise value
    return value  # type: ignore[no-any-return]


# -- the two clients ------------------------------------------------------------------------------------------------
class _Confluent:
    """confluent-kafka's AdminClient: every call is a future bounded by ``request_timeout``."""

    ops = frozenset(OPS) - {"alter_quota", "reassign"}

    def __init__(self, spec: WorkerSpec) -> None:
        from confluent_kafka.admin import AdminClient

        self.timeout = spec.request_timeout_ms / 1000
        self.op_timeout = self.timeout * 2 / 3  # the broker's own wait, inside the request's
        self.deadline = spec.deadline
        self.admin = AdminClient({"bootstrap.servers": ",".join(spec.bootstrap), "client.id": f"rh-{spec.worker}",
                                  "socket.timeout.ms": spec.request_timeout_ms})  # fmt: skip

    def _wait(self, future: Any) -> Any:
        import concurrent.futures

        try:
            return future.result(timeout=self.deadline)
        except concurrent.futures.TimeoutError:
            raise OpFailed("OpDeadlineExceeded", True, f"no answer within {self.deadline:.0f} s") from None
        except OpFailed:
            raise
        except Exception as exc:
            raise confluent_error(exc) from None

    def brokers(self) -> list[int]:
        result = self._wait(self.admin.describe_cluster(request_timeout=self.timeout))
        return sorted(int(n.id) for n in result.nodes)

    def acls_enabled(self, resource: str) -> bool:
        """Probed with a DeleteAcls whose filter matches nothing: librdkafka's describe_acls does not surface the
        response's SECURITY_DISABLED (an attached cluster without an authorizer went undetected), its
        delete_acls does."""
        found = self.admin.delete_acls([self._binding(resource, None, filter_=True)], request_timeout=self.timeout)
        try:
            for future in found.values():
                self._wait(future)
        except OpFailed as failed:
            return failed.error != "SECURITY_DISABLED"
        return True

    def replicas(self, topic: str) -> dict[int, list[int]]:
        raise NotImplementedError  # no reassign with this client

    def create_topic(self, topic: str, partitions: int, rf: int) -> None:
        from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined]

        fs = self.admin.create_topics([NewTopic(topic, partitions, rf)], operation_timeout=self.op_timeout,
                                      request_timeout=self.timeout)  # fmt: skip
        self._wait(fs[topic])

    def delete_topic(self, topic: str) -> None:
        fs = self.admin.delete_topics([topic], operation_timeout=self.op_timeout, request_timeout=self.timeout)
        self._wait(fs[topic])

    def create_partitions(self, topic: str, total: int) -> None:
        from confluent_kafka.admin import NewPartitions  # type: ignore[attr-defined]

        fs = self.admin.create_partitions([NewPartitions(topic, total)], operation_timeout=self.op_timeout,
                                          request_timeout=self.timeout)  # fmt: skip
        self._wait(fs[topic])

    def alter_config(self, topic: str, key: str, value: str) -> None:
        from confluent_kafka.admin import (  # type: ignore[attr-defined]
            AlterConfigOpType,
            ConfigEntry,
            ConfigResource,
            ResourceType,
        )

        entry = ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)
        resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[entry])
        for future in self.admin.incremental_alter_configs([resource], request_timeout=self.timeout).values():
            self._wait(future)

    def _binding(self, resource: str, principal: str | None, *, filter_: bool) -> Any:
        from confluent_kafka.admin import (  # type: ignore[attr-defined]
            AclBinding,
            AclBindingFilter,
            AclOperation,
            AclPermissionType,
            ResourcePatternType,
            ResourceType,
        )

        if principal is None:  # every entry of the resource (None matches any; the stubs do not say so)
            anything: Any = None
            return AclBindingFilter(ResourceType.TOPIC, resource, ResourcePatternType.LITERAL, anything, anything,
                                    AclOperation.ANY, AclPermissionType.ANY)  # fmt: skip
        cls = AclBindingFilter if filter_ else AclBinding
        return cls(ResourceType.TOPIC, resource, ResourcePatternType.LITERAL, principal, "*", AclOperation.READ,
                   AclPermissionType.ALLOW)  # fmt: skip

    def create_acl(self, resource: str, principal: str) -> None:
        binding = self._binding(resource, principal, filter_=False)
        self._wait(self.admin.create_acls([binding], request_timeout=self.timeout)[binding])

    def delete_acl(self, resource: str, principal: str) -> None:
        binding = self._binding(resource, principal, filter_=True)
        self._wait(self.admin.delete_acls([binding], request_timeout=self.timeout)[binding])

    def alter_quota(self, client_id: str, key: str, value: int) -> None:
        raise NotImplementedError

    def reassign(self, topic: str, partition: int, replicas: list[int]) -> None:
        raise NotImplementedError

    def metadata(self, call: str) -> None:
        if call == "describe_cluster":
            self._wait(self.admin.describe_cluster(request_timeout=self.timeout))
            return
        try:
            self.admin.list_topics(timeout=self.timeout)
        except Exception as exc:
            raise confluent_error(exc) from None

    def close(self) -> None:
        pass


class _KafkaPython:
    """kafka-python's KafkaAdminClient, each call in a bounded thread (see :func:`_bounded`). Responses are read
    with ``raise_errors=False`` where the client offers it, so a Kafka error arrives as its code."""

    ops = frozenset(OPS)

    def __init__(self, spec: WorkerSpec) -> None:
        from kafka.admin import KafkaAdminClient

        self.op_ms = spec.request_timeout_ms * 2 // 3
        self.deadline = spec.deadline
        self.admin = KafkaAdminClient(bootstrap_servers=list(spec.bootstrap), client_id=f"rh-{spec.worker}",
                                      request_timeout_ms=spec.request_timeout_ms,
                                      bootstrap_timeout_ms=spec.request_timeout_ms)  # fmt: skip

    def _call(self, fn: Callable[[], T]) -> T:
        try:
            return _bounded(fn, self.deadline)
        except OpFailed:
            raise
        except Exception as exc:
            failed = kafka_python_error(exc)
            if failed.error in ("UnknownBrokerIdError", "NodeNotReadyError"):
                self.admin._controller_id = None
            raise failed from None

    def _to_controller(self, fn: Callable[[], T]) -> T:
        """A controller-bound call. kafka-python caches the controller id until a NOT_CONTROLLER answer; when that
        broker restarts, a metadata refresh taken while it was away drops it from the client's broker list, and
        every controller-bound call then fails at once with UnknownBrokerIdError (not retriable) until the next
        refresh, minutes later. That is the client's quirk, not the cluster's answer, so a cached id whose broker
        the client no longer knows is dropped and the call asks Metadata for the controller again."""
        cached = self.admin._controller_id
        if cached is not None and self.admin._manager.cluster.broker_metadata(cached) is None:
            self.admin._controller_id = None
        return self._call(fn)

    @staticmethod
    def _check(code: int, message: str | None = None) -> None:
        failed = kafka_python_code(code, message)
        if failed is not None:
            raise failed

    def brokers(self) -> list[int]:
        cluster = self._call(self.admin.describe_cluster)
        return sorted(int(b["broker_id"]) for b in cluster["brokers"] if not b.get("is_fenced"))

    def acls_enabled(self, resource: str) -> bool:
        from kafka.admin import ACLFilter, ACLOperation, ACLPermissionType, ACLResourcePatternType, ResourcePattern
        from kafka.admin import ResourceType as RT

        pattern = ResourcePattern(RT.TOPIC, resource, ACLResourcePatternType.LITERAL)
        any_entry = ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY, pattern)
        try:
            self._call(lambda: self.admin.describe_acls(any_entry))
        except OpFailed as failed:
            return failed.error != "SECURITY_DISABLED"
        return True

    def replicas(self, topic: str) -> dict[int, list[int]]:
        (found,) = self._call(lambda: self.admin.describe_topics([topic]))
        self._check(found.get("error_code", 0))
        return {int(p["partition_index"]): [int(r) for r in p["replica_nodes"]] for p in found["partitions"]}

    def create_topic(self, topic: str, partitions: int, rf: int) -> None:
        spec = {topic: {"num_partitions": partitions, "replication_factor": rf}}
        res = self._to_controller(lambda: self.admin.create_topics(spec, timeout_ms=self.op_ms, raise_errors=False))
        (t,) = res["topics"]
        self._check(t["error_code"], t.get("error_message"))

    def delete_topic(self, topic: str) -> None:
        res = self._to_controller(lambda: self.admin.delete_topics([topic], timeout_ms=self.op_ms, raise_errors=False))
        (t,) = res["topics"]
        self._check(t["error_code"], t.get("error_message"))

    def create_partitions(self, topic: str, total: int) -> None:
        res = self._to_controller(
            lambda: self.admin.create_partitions({topic: total}, timeout_ms=self.op_ms, raise_errors=False)
        )
        (r,) = res.results
        self._check(r.error_code, r.error_message)

    def alter_config(self, topic: str, key: str, value: str) -> None:
        from kafka.admin import ConfigResource, ConfigResourceType

        resource = ConfigResource(ConfigResourceType.TOPIC, topic, configs={key: value})
        res = self._call(lambda: self.admin.alter_configs([resource], raise_on_unknown=False, incremental=True))
        outcome = str(res.get("topic", {}).get(topic, "no answer for the topic"))
        if outcome != "OK":  # the client hands back "[Error 7] RequestTimedOutError: ..." as text
            match = re.search(r"\[Error (-?\d+)\]", outcome)
            if match is None:
                raise OpFailed("UNKNOWN", False, outcome)
            self._check(int(match.group(1)), outcome)

    @staticmethod
    def _acl(resource: str, principal: str, *, filter_: bool) -> Any:
        from kafka.admin import (
            ACL,
            ACLFilter,
            ACLOperation,
            ACLPermissionType,
            ACLResourcePatternType,
            ResourcePattern,
            ResourceType,
        )

        cls = ACLFilter if filter_ else ACL
        pattern = ResourcePattern(ResourceType.TOPIC, resource, ACLResourcePatternType.LITERAL)
        return cls(principal, "*", ACLOperation.READ, ACLPermissionType.ALLOW, pattern)

    def create_acl(self, resource: str, principal: str) -> None:
        res = self._call(lambda: self.admin.create_acls([self._acl(resource, principal, filter_=False)]))
        for error in res["failed"]:
            self._check(int(error.errno))

    def delete_acl(self, resource: str, principal: str) -> None:
        res = self._call(lambda: self.admin.delete_acls([self._acl(resource, principal, filter_=True)]))
        for _filter, _matched, error in res:
            self._check(int(error.errno))

    def alter_quota(self, client_id: str, key: str, value: int) -> None:
        from kafka.protocol.admin import AlterClientQuotasRequest

        entry = AlterClientQuotasRequest.EntryData(
            entity=[AlterClientQuotasRequest.EntryData.EntityData(entity_type="client-id", entity_name=client_id)],
            ops=[AlterClientQuotasRequest.EntryData.OpData(key=key, value=float(value), remove=False)],
        )
        request = AlterClientQuotasRequest(entries=[entry], validate_only=False)
        manager = self.admin._manager
        res = self._call(lambda: manager.run(manager.send, request))
        for e in res.entries:
            self._check(e.error_code, e.error_message)

    def reassign(self, topic: str, partition: int, replicas: list[int]) -> None:
        from kafka.structs import TopicPartition

        tp = TopicPartition(topic, partition)
        res = self._to_controller(
            lambda: self.admin.alter_partition_reassignments({tp: replicas}, timeout_ms=self.op_ms)
        )
        error = res.get(tp)
        if error is not None:
            self._check(int(error.errno))

    def metadata(self, call: str) -> None:
        self._call(self.admin.describe_cluster if call == "describe_cluster" else self.admin.list_topics)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.admin.close()


def _client(spec: WorkerSpec) -> _Confluent | _KafkaPython:
    return _Confluent(spec) if spec.client == "confluent-kafka" else _KafkaPython(spec)


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

    def __init__(self, spec: WorkerSpec, client: _Confluent | _KafkaPython, brokers: list[int], acls: bool) -> None:
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
        except OpFailed:
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

        return _Plan("create_topic", f"topic:{name}", {"partitions": partitions, "replication_factor": rf},
                     lambda: self.client.create_topic(name, partitions, rf), settle)  # fmt: skip

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

        return _Plan("create_partitions", f"topic:{topic.name}", {"count": total},
                     lambda: self.client.create_partitions(topic.name, total), settle)  # fmt: skip

    def _alter_config(self) -> _Plan | None:
        topic = self.rng.choice(list(self.topics.values()))
        value = str(3_600_000 + self.seq)  # fresh: no two writes of one worker set the same value
        return _Plan("alter_config", f"topic:{topic.name}", {"key": CONFIG_KEY, "value": value, "incremental": True},
                     lambda: self.client.alter_config(topic.name, CONFIG_KEY, value), self._poison(topic))  # fmt: skip

    def _acl_args(self, resource: str) -> dict[str, Any]:
        return {"resource_type": "TOPIC", "resource": resource, "pattern": "LITERAL", "principal": self.principal,
                "host": "*", "operation": "READ", "permission": "ALLOW"}  # fmt: skip

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
        return _Plan("create_acl", f"acl:topic:{resource}", self._acl_args(resource),
                     lambda: self.client.create_acl(resource, self.principal),
                     self._settle_acl(resource, True))  # fmt: skip

    def _delete_acl(self) -> _Plan | None:
        resource = self.rng.choice(sorted(r for r, present in self.acls.items() if present))
        return _Plan("delete_acl", f"acl:topic:{resource}", self._acl_args(resource),
                     lambda: self.client.delete_acl(resource, self.principal),
                     self._settle_acl(resource, False))  # fmt: skip

    def _alter_quota(self) -> _Plan | None:
        client_id = self._name("q") if len(self.quotas) < QUOTA_IDS else self.rng.choice(self.quotas)
        value = 1024 * (1000 + self.seq)

        def settle(ok: bool) -> None:
            if ok and client_id not in self.quotas:
                self.quotas.append(client_id)
            elif not ok and client_id in self.quotas:
                self.quotas.remove(client_id)

        return _Plan("alter_quota", f"quota:client-id:{client_id}", {"key": QUOTA_KEY, "value": value},
                     lambda: self.client.alter_quota(client_id, QUOTA_KEY, value), settle)  # fmt: skip

    def _reassign(self) -> _Plan | None:
        brokers = self._fresh_brokers()
        if not brokers:
            return None
        topic = self.rng.choice(list(self.topics.values()))
        try:
            current = self.client.replicas(topic.name)
        except OpFailed:
            return None
        partition = self.rng.randrange(topic.partitions)
        origin = current.get(partition)
        target = self._target(origin, brokers) if origin else None
        if target is None:
            return None

        def settle(ok: bool) -> None:
            if ok:
                topic.moved_at = time.monotonic()
            else:
                self.topics.pop(topic.name, None)

        topic.moved_at = time.monotonic()  # from the moment it is sent: a timed-out move may still be under way
        return _Plan("reassign", f"topic:{topic.name}", {"partition": partition, "replicas": target, "from": origin},
                     lambda: self.client.reassign(topic.name, partition, target), settle)  # fmt: skip

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
def _worker_main(spec: WorkerSpec, run: Event, stop: Event, idle: Event, ready: Any, counts: Any) -> None:
    """A worker process. Its stdout and stderr (librdkafka's C logs included) go to its own log file: the rehearsal
    owns the terminal. SIGINT is ignored: the pool stops its workers, and one interrupted mid-operation would leave
    an entity whose fate no record tells."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with spec.log.open("ab") as out:
        os.dup2(out.fileno(), 1)
        os.dup2(out.fileno(), 2)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        client = _client(spec)
        brokers = client.brokers()
        # A cluster without an authorizer answers every ACL request SECURITY_DISABLED (not retriable): that is the
        # cluster's configuration, not a fault under load, so such a worker leaves ACLs out.
        acls = client.acls_enabled(f"rh-{spec.worker}-{spec.tag}-probe")
    except Exception as exc:
        failed = exc if isinstance(exc, OpFailed) else None
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


def _loop(spec: WorkerSpec, worker: _Worker, run: Event, stop: Event, idle: Event, counts: Any, journal: Any,
          flight: Any) -> None:  # fmt: skip
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
            "worker": spec.worker, "client": spec.client, "seq": worker.seq, "op": plan.op, "entity": plan.entity,
            "args": plan.args, "started": time.time(), "ended": 0.0, "ok": False, "error": "WorkerKilled",
            "retriable": False, "forwardable": plan.op != "metadata",
        }  # fmt: skip
        _rewrite(flight, orjson.dumps(rec))  # what to journal should this process die mid-operation
        try:
            plan.call()
            rec["ok"], rec["error"], rec["retriable"] = True, None, None
        except OpFailed as failed:
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


# -- the pool -------------------------------------------------------------------------------------------------------
class LoadPool:
    """Client workers as OS processes (``spawn``: no forked client state), paced to ``rate`` operations per second
    in total. Pause, resume and stop go through multiprocessing Events; each worker journals to
    ``journal_dir/ops-<worker>.jsonl``, which :meth:`records` reads back."""

    def __init__(
        self,
        bootstrap: Sequence[str],
        journal_dir: Path,
        *,
        clients: Sequence[str] = CLIENTS,
        workers_per_client: int = 1,
        rate: float = 8.0,
        seed: int = 0,
        request_timeout_ms: int = 15000,
        replication_factor: int = 3,
    ) -> None:
        if not bootstrap:
            raise LoadError("no bootstrap address for the client load")
        unknown = sorted(set(clients) - set(CLIENTS))
        if unknown or not clients:
            raise LoadError(f"unknown client(s) {', '.join(unknown) or '(none)'}; known: {', '.join(CLIENTS)}")
        if rate <= 0 or workers_per_client < 1 or request_timeout_ms < 1000 or replication_factor < 1:
            raise LoadError("rate must be positive, at least one worker per client, request timeout >= 1000 ms, "
                            "replication factor >= 1")  # fmt: skip
        self.bootstrap = list(bootstrap)
        self.journal_dir = Path(journal_dir)
        self.rate = rate
        self.request_timeout_ms = request_timeout_ms
        self.tag = secrets.token_hex(2)
        names = [c for _ in range(workers_per_client) for c in clients]
        n, b = len(names), self.bootstrap
        interval = n / rate
        self.specs = [
            WorkerSpec(worker=f"w{i + 1}", client=c, index=i,
                       bootstrap=tuple(b[i % len(b):] + b[:i % len(b)]),
                       journal_dir=str(self.journal_dir), interval=interval, offset=interval * i / n, seed=seed,
                       tag=self.tag, request_timeout_ms=request_timeout_ms, replication_factor=replication_factor)
            for i, c in enumerate(names)
        ]  # fmt: skip
        self._ctx = multiprocessing.get_context("spawn")
        self._run = self._ctx.Event()
        self._stop = self._ctx.Event()
        self._idle = [self._ctx.Event() for _ in self.specs]
        self._counts = self._ctx.Array("q", n, lock=False)  # one slot per worker, written by that worker only
        self._procs: list[SpawnProcess] = []
        self._stopped = False
        self._killed: set[str] = set()
        self._ops: dict[str, list[str]] = {}

    @property
    def op_deadline(self) -> float:
        """How long one operation may take before its worker records it failed and moves on."""
        return self.request_timeout_ms / 1000 + DEADLINE_MARGIN_S

    # -- lifecycle ------------------------------------------------------------------------------------------------
    def start(self, timeout: float | None = None) -> None:
        """Spawn the workers; return once each has connected (answered a DescribeCluster). ``timeout`` defaults to
        the request timeout plus time to import a client library in a fresh interpreter."""
        if self._procs:
            raise LoadError("the client load was started already")
        self.journal_dir.mkdir(parents=True, exist_ok=True)
        for spec in self.specs:  # a journal directory used before: its records are not this run's
            spec.journal.write_bytes(b"")
            spec.inflight.unlink(missing_ok=True)
        wait = self.request_timeout_ms / 1000 + 20 if timeout is None else timeout
        ready = self._ctx.Queue()
        self._run.set()
        for spec, idle in zip(self.specs, self._idle, strict=True):
            proc = self._ctx.Process(target=_worker_main, args=(spec, self._run, self._stop, idle, ready, self._counts),
                                     name=f"rehearse-load-{spec.worker}", daemon=True)  # fmt: skip
            proc.start()
            self._procs.append(proc)
        try:
            self._await_ready(ready, wait)
        except LoadError:
            self.stop()
            raise
        finally:
            ready.close()

    def _await_ready(self, ready: Any, wait: float) -> None:
        deadline = time.monotonic() + wait
        pending = {s.worker: s for s in self.specs}
        while pending:
            try:
                worker, error, ops = ready.get(timeout=0.2)
            except queue.Empty:
                for spec in list(pending.values()):
                    proc = self._procs[spec.index]
                    if not proc.is_alive():
                        raise LoadError(f"load worker {spec.worker} ({spec.client}) exited with code {proc.exitcode} "
                                        f"before connecting; its log: {spec.log}") from None  # fmt: skip
                if time.monotonic() > deadline:
                    late = ", ".join(f"{s.worker} ({s.client})" for s in pending.values())
                    raise LoadError(f"load worker(s) {late} did not connect to {','.join(self.bootstrap)} within "
                                    f"{wait:.0f} s; logs in {self.journal_dir}") from None  # fmt: skip
                continue
            spec = pending.pop(worker)
            self._ops[worker] = ops
            if error is not None:
                raise LoadError(f"load worker {spec.worker} ({spec.client}) cannot connect to "
                                f"{','.join(spec.bootstrap)}: {error}")  # fmt: skip

    def pause(self, timeout: float | None = None) -> list[str]:
        """Block until every worker has finished and journaled its operation in flight, then keep them idle.

        Bounded by the operation deadline plus a margin (or ``timeout``); a worker still busy then is stuck beyond
        its own deadline and is killed, its operation in flight journaled as failed with ``WorkerKilled`` (not
        retriable, so the client-errors check shows it). Returns the workers killed (normally none)."""
        if not self._procs or self._stopped:
            return []
        self._run.clear()
        deadline = time.monotonic() + (self.op_deadline + 5 if timeout is None else timeout)
        stuck = []
        for spec, proc, idle in zip(self.specs, self._procs, self._idle, strict=True):
            while proc.is_alive() and not idle.wait(0.2):
                if time.monotonic() > deadline:
                    stuck.append(spec.worker)
                    self._kill(proc, spec)
                    break
        return stuck

    def resume(self) -> None:
        if self._procs and not self._stopped:
            self._run.set()

    def stop(self) -> None:
        """Idempotent, safe in ``finally``: workers finish their operation in flight (bounded by its deadline), then
        any still alive is terminated, then killed."""
        if self._stopped:
            return
        self._stopped = True
        self._stop.set()
        self._run.set()
        deadline = time.monotonic() + self.op_deadline + 5
        for proc in self._procs:
            proc.join(max(0.0, deadline - time.monotonic()))
        for spec, proc in zip(self.specs, self._procs, strict=False):
            if proc.is_alive():
                self._kill(proc, spec)

    def _kill(self, proc: SpawnProcess, spec: WorkerSpec) -> None:
        self._killed.add(spec.worker)
        proc.terminate()
        proc.join(5)
        if proc.is_alive():
            proc.kill()
            proc.join(5)

    def __enter__(self) -> LoadPool:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:  # fmt: skip
        self.stop()

    # -- what happened --------------------------------------------------------------------------------------------
    def counts(self) -> int:
        """Operations journaled so far (all workers)."""
        return int(sum(self._counts))

    def records(self) -> list[OpRecord]:
        """Every worker's journal, sorted by start time. A worker that died mid-operation contributes that operation
        too, failed with ``WorkerKilled``: its entity's fate is unknown, which is what the ledger must be told."""
        out: list[OpRecord] = []
        for spec, proc in zip(self.specs, self._procs, strict=False):
            seqs: set[int] = set()
            with contextlib.suppress(FileNotFoundError):
                for line in spec.journal.read_bytes().splitlines():
                    try:
                        rec = orjson.loads(line)
                    except orjson.JSONDecodeError:
                        continue  # the line being written right now
                    out.append(rec)
                    seqs.add(rec["seq"])
            if proc.is_alive():
                continue
            with contextlib.suppress(FileNotFoundError, orjson.JSONDecodeError):
                data = spec.inflight.read_bytes()
                if data:
                    rec = orjson.loads(data)
                    if rec["seq"] not in seqs:
                        rec["ended"] = rec["started"]
                        out.append(rec)
        out.sort(key=lambda r: (r["started"], r["worker"], r["seq"]))
        return out

    def ops(self) -> dict[str, list[str]]:
        """The op kinds each connected worker does: its client's, less ACLs on a cluster without an authorizer."""
        return dict(self._ops)

    def workers(self) -> list[tuple[str, str, bool]]:
        """(worker, client, alive) of each worker, for a status line."""
        return [(s.worker, s.client, p.is_alive()) for s, p in zip(self.specs, self._procs, strict=False)]
