"""The two admin clients the load runs, behind one small interface, and how their failures are named.

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
- A Kafka error that Kafka itself retries (its exception extends RetriableException: NOT_CONTROLLER,
  LEADER_NOT_AVAILABLE ...) counts as retriable whatever the client's flag says.
- Timeouts and transport errors count as retriable whatever the client's flag says: librdkafka sets the flag
  only on some errors (an admin result's ``REQUEST_TIMED_OUT`` comes back with ``retriable() == False``) though
  retrying is exactly what a caller does with them. Everything else keeps the client's flag.

- kafka-python's ``UnknownBrokerIdError`` (its metadata lacks the broker it wants; not retriable by its flag) is
  kept as it is, but made rare: see ``KafkaPythonAdmin._to_controller``.
- Anything else a client raises (a response it cannot take apart) is recorded by exception class, not retriable.

Whether a failure may still have taken effect is the ledger's question, not the journal's
(:func:`migrate.rehearse.ledger.in_doubt`).
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from migrate.rehearse.model import OPS

log = logging.getLogger(__name__)
T = TypeVar("T")
#: Past the client's own request timeout, how long an operation may take before the worker gives up on it.
DEADLINE_MARGIN_S = 5.0

#: Timeout-like errors: retriable whatever the client's flag says (see the module doc).
#: librdkafka's _DESTROY_BROKER is "Failed while waiting for response from broker: Local: Broker handle destroyed":
#: the broker left the client's metadata with the request outstanding (seen when a controller is killed).
TIMEOUTS = frozenset(
    {
        "REQUEST_TIMED_OUT",
        "NETWORK_EXCEPTION",
        "_TIMED_OUT",
        "_TIMED_OUT_QUEUE",
        "_TRANSPORT",
        "_ALL_BROKERS_DOWN",
        "_MSG_TIMED_OUT",
        "_DESTROY_BROKER",
        "_NODE_UPDATE",
        "RequestTimedOutError",
        "KafkaTimeoutError",
        "KafkaConnectionError",
        "OpDeadlineExceeded",
    }
)


def _kafka_retriable(name: str) -> bool:
    """Kafka's own verdict for a protocol error by name (its exception extends RetriableException): librdkafka's
    flag says False for some that Kafka retries, NOT_CONTROLLER among them, seen whenever the controller moves."""
    from zkmodel.errorcodes import by_name

    try:
        return by_name(name).retriable
    except (KeyError, ValueError):
        return False


class AdminOpFailed(Exception):
    """An admin client's operation failed: ``error`` names the failure as the module doc says, ``retriable`` is
    whether a caller may send it again."""

    def __init__(self, error: str, retriable: bool, detail: str = "") -> None:
        super().__init__(f"{error}: {detail}" if detail else error)
        self.error = error
        self.retriable = retriable or error in TIMEOUTS or _kafka_retriable(error)


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
def confluent_error(exc: BaseException) -> AdminOpFailed:
    from confluent_kafka import KafkaError, KafkaException

    err = exc.args[0] if isinstance(exc, KafkaException) and exc.args else None
    if isinstance(err, KafkaError):
        return AdminOpFailed(err.name(), bool(err.retriable()), err.str())
    return AdminOpFailed(type(exc).__name__, False, str(exc))


def kafka_python_code(code: int, detail: str | None = None) -> AdminOpFailed | None:
    from kafka import errors as E

    if code == 0:
        return None
    cls = E.for_code(code)
    return AdminOpFailed(str(getattr(cls, "message", cls.__name__)), bool(cls.retriable), detail or "")


def kafka_python_error(exc: BaseException) -> AdminOpFailed:
    from kafka import errors as E

    text = str(exc.args[0]) if exc.args else ""
    if isinstance(exc, E.BrokerResponseError) and not text.startswith("Request timed out"):
        return AdminOpFailed(str(type(exc).message), bool(type(exc).retriable), text[:300])
    if isinstance(exc, E.KafkaError):
        return AdminOpFailed(type(exc).__name__, bool(type(exc).retriable), text[:300])
    if isinstance(exc, RuntimeError) and "active controller" in text:
        return AdminOpFailed("NOT_CONTROLLER", True, text)
    return AdminOpFailed(type(exc).__name__, False, text[:300])


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
        raise AdminOpFailed("OpDeadlineExceeded", True, f"no answer within {deadline:.0f} s")
    ok, value = box[0]
    if not ok:
        raise value
    return value  # type: ignore[no-any-return]


# -- the two clients ------------------------------------------------------------------------------------------------
class ConfluentAdmin:
    """confluent-kafka's AdminClient: every call is a future bounded by ``request_timeout``."""

    ops = frozenset(OPS) - {"alter_quota", "reassign"}

    def __init__(self, spec: WorkerSpec) -> None:
        from confluent_kafka.admin import AdminClient

        self.timeout = spec.request_timeout_ms / 1000
        self.op_timeout = self.timeout * 2 / 3  # the broker's own wait, inside the request's
        self.deadline = spec.deadline
        self.admin = AdminClient(
            {
                "bootstrap.servers": ",".join(spec.bootstrap),
                "client.id": f"rh-{spec.worker}",
                "socket.timeout.ms": spec.request_timeout_ms,
            }
        )

    def _wait(self, future: Any) -> Any:
        import concurrent.futures

        try:
            return future.result(timeout=self.deadline)
        except concurrent.futures.TimeoutError:
            raise AdminOpFailed("OpDeadlineExceeded", True, f"no answer within {self.deadline:.0f} s") from None
        except AdminOpFailed:
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
        except AdminOpFailed as failed:
            return failed.error != "SECURITY_DISABLED"
        return True

    def replicas(self, topic: str) -> dict[int, list[int]]:
        raise NotImplementedError  # no reassign with this client

    def create_topic(self, topic: str, partitions: int, rf: int) -> None:
        from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined]

        fs = self.admin.create_topics(
            [NewTopic(topic, partitions, rf)], operation_timeout=self.op_timeout, request_timeout=self.timeout
        )
        self._wait(fs[topic])

    def delete_topic(self, topic: str) -> None:
        fs = self.admin.delete_topics([topic], operation_timeout=self.op_timeout, request_timeout=self.timeout)
        self._wait(fs[topic])

    def create_partitions(self, topic: str, total: int) -> None:
        from confluent_kafka.admin import NewPartitions  # type: ignore[attr-defined]

        fs = self.admin.create_partitions(
            [NewPartitions(topic, total)], operation_timeout=self.op_timeout, request_timeout=self.timeout
        )
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
            return AclBindingFilter(
                ResourceType.TOPIC,
                resource,
                ResourcePatternType.LITERAL,
                anything,
                anything,
                AclOperation.ANY,
                AclPermissionType.ANY,
            )
        cls = AclBindingFilter if filter_ else AclBinding
        return cls(
            ResourceType.TOPIC,
            resource,
            ResourcePatternType.LITERAL,
            principal,
            "*",
            AclOperation.READ,
            AclPermissionType.ALLOW,
        )

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


class KafkaPythonAdmin:
    """kafka-python's KafkaAdminClient, each call in a bounded thread (see :func:`_bounded`). Responses are read
    with ``raise_errors=False`` where the client offers it, so a Kafka error arrives as its code."""

    ops = frozenset(OPS)

    def __init__(self, spec: WorkerSpec) -> None:
        from kafka.admin import KafkaAdminClient

        self.op_ms = spec.request_timeout_ms * 2 // 3
        self.deadline = spec.deadline
        self.admin = KafkaAdminClient(
            bootstrap_servers=list(spec.bootstrap),
            client_id=f"rh-{spec.worker}",
            request_timeout_ms=spec.request_timeout_ms,
            bootstrap_timeout_ms=spec.request_timeout_ms,
        )

    def _call(self, fn: Callable[[], T]) -> T:
        try:
            return _bounded(fn, self.deadline)
        except AdminOpFailed:
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
        except AdminOpFailed as failed:
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
                raise AdminOpFailed("UNKNOWN", False, outcome)
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


Admin = ConfluentAdmin | KafkaPythonAdmin


def make_client(spec: WorkerSpec) -> Admin:
    return ConfluentAdmin(spec) if spec.client == "confluent-kafka" else KafkaPythonAdmin(spec)
