"""The cluster as ``kafka-reassign-partitions`` sees it, through kafka-python's ``KafkaAdminClient``.

Every call is a public admin API (Metadata, DescribeCluster, ListPartitionReassignments,
AlterPartitionReassignments, IncrementalAlterConfigs, DescribeLogDirs, AlterReplicaLogDirs), so the tool
works against an Apache Kafka cluster as well as ours. kafka-python is the one maintained Python client
with the KIP-455 calls. One exception to its public surface: its ``alter_partition_reassignments`` keeps
each partition's error class but drops the broker's error message, which Kafka's tool prints
("t-0: Replica assignment has brokers that are not alive. ..."), so :meth:`ReassignAdmin.alter_reassignments`
sends kafka-python's own request through its controller channel and reads the messages itself.

Failures become :class:`AdminError` carrying the text Kafka's tool would print after "Error: ".
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import kafka.errors as kerrors
from kafka import TopicPartition
from kafka.admin import ConfigResource, KafkaAdminClient
from kafka.admin._configs import AlterConfigOp, ConfigResourceType
from kafka.protocol.admin import AlterPartitionReassignmentsRequest

from migrate.reassign.model import TP, Ongoing
from zkmodel import errorcodes
from zkmodel.jvmorder import java_hashmap_order

_ERRORS_PACKAGE = "org.apache.kafka.common.errors."


class AdminError(Exception):
    """What Kafka's tool prints after ``Error: `` for a failure talking to the cluster."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def java_exception_text(code: int, message: str | None) -> str:
    """``Throwable.toString()`` of the exception Kafka's client builds for an error code: class and message
    (the error's default message when the broker sent none)."""
    error = errorcodes.by_code(code)
    return f"{_ERRORS_PACKAGE}{error.exception}: {message or error.message}"


def error_message(code: int, message: str | None) -> str:
    """``ApiException.getMessage()`` for an error code and the broker's message."""
    return message or errorcodes.by_code(code).message


def _from_client(exc: BaseException) -> AdminError:
    """A kafka-python exception as the text Kafka's Java client would give."""
    errno = getattr(exc, "errno", None)
    if isinstance(errno, int) and errno not in (-1, 0):
        # kafka-python keeps the broker's message as the first argument, unless it wrapped a whole response
        said = exc.args[0] if exc.args and isinstance(exc.args[0], str) else None
        message = said if said and not said.startswith("Request '") else None
        with contextlib.suppress(KeyError, ValueError):
            return AdminError(java_exception_text(errno, message))
    if isinstance(exc, kerrors.KafkaConnectionError | kerrors.MetadataEmptyBrokerList):
        return AdminError("org.apache.kafka.common.errors.TimeoutException: Timed out waiting for a node assignment.")
    if isinstance(exc, kerrors.KafkaTimeoutError):
        said = exc.args[0] if exc.args and isinstance(exc.args[0], str) else "Timed out"
        return AdminError(f"org.apache.kafka.common.errors.TimeoutException: {said}")
    return AdminError(str(exc) or type(exc).__name__)


def unreachable_text(settings: Mapping[str, Any]) -> str:
    """A bootstrap that gave up, as one line naming the servers and how long they were tried. Kafka's client
    says "Timed out waiting for a node assignment" after its default.api.timeout.ms; kafka-python's constructor
    gives up after ``bootstrap_timeout_ms``, also when a login keeps being refused."""
    servers = settings.get("bootstrap_servers", ())
    shown = servers if isinstance(servers, str) else ",".join(str(s) for s in servers)
    timeout_ms = int(settings.get("bootstrap_timeout_ms", KafkaAdminClient.DEFAULT_CONFIG["bootstrap_timeout_ms"]))
    return f"{_ERRORS_PACKAGE}TimeoutException: Unable to bootstrap from {shown} within {timeout_ms / 1000:g} s"


@dataclass(frozen=True)
class Broker:
    id: int
    rack: str | None


class ReassignAdmin:
    """The admin calls the tool makes, each returning plain data or raising :class:`AdminError`."""

    def __init__(self, settings: Mapping[str, Any]) -> None:
        try:
            self._client = KafkaAdminClient(**settings)
        except (kerrors.KafkaTimeoutError, kerrors.KafkaConnectionError):
            raise AdminError(unreachable_text(settings)) from None
        except Exception as exc:  # kafka-python raises its own errors and ValueError for bad settings
            raise _from_client(exc) from None

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._client.close()

    def __enter__(self) -> ReassignAdmin:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except AdminError:
            raise
        except Exception as exc:
            raise _from_client(exc) from None

    # -- reads ---------------------------------------------------------------------------------------------
    def brokers(self) -> list[Broker]:
        """``describeCluster().nodes()``, in the order the cluster lists them."""
        cluster = self._call(self._client.describe_cluster)
        return [Broker(int(b["broker_id"]), b.get("rack")) for b in cluster["brokers"]]

    def topic_assignments(self, topics: Iterable[str]) -> dict[TP, list[int]]:
        """getReplicaAssignmentForTopics: every partition of ``topics``; an unknown topic fails the call with
        Kafka's "Topic t not found." (the first unknown one in Kafka's HashMap order)."""
        wanted = java_hashmap_order(dict.fromkeys(topics))
        described = self._call(self._client.describe_topics, wanted) if wanted else []
        by_name = {t["name"]: t for t in described}
        out: dict[TP, list[int]] = {}
        for name in wanted:
            topic = by_name.get(name)
            code = int(topic["error_code"]) if topic is not None else errorcodes.UNKNOWN_TOPIC_OR_PARTITION.code
            if code == errorcodes.UNKNOWN_TOPIC_OR_PARTITION.code:
                raise AdminError(f"{_ERRORS_PACKAGE}UnknownTopicOrPartitionException: Topic {name} not found.")
            if code != 0:
                raise AdminError(java_exception_text(code, None))
            assert topic is not None
            for p in topic["partitions"]:
                out[(name, int(p["partition_index"]))] = [int(r) for r in p["replica_nodes"]]
        return out

    def partition_assignments(self, tps: Iterable[TP]) -> dict[TP, list[int]]:
        """getReplicaAssignmentForPartitions: the partitions asked for; any missing one fails the call with
        "Unable to find partition: t-9"."""
        wanted = set(tps)
        found = self.topic_assignments(t for t, _p in wanted)
        out = {tp: r for tp, r in found.items() if tp in wanted}
        missing = [tp for tp in wanted if tp not in out]
        if missing:
            names = ", ".join(f"{t}-{p}" for t, p in missing)
            raise AdminError(f"{_ERRORS_PACKAGE}UnknownTopicOrPartitionException: Unable to find partition: {names}")
        return out

    def list_reassignments(self, tps: Iterable[TP] | None = None) -> dict[TP, Ongoing]:
        """ListPartitionReassignments: all ongoing moves, or those of ``tps`` (unknown ones are omitted)."""
        arg = None if tps is None else [TopicPartition(t, p) for t, p in tps]
        if arg == []:
            return {}
        listed = self._call(self._client.list_partition_reassignments, arg)
        return {
            (tp.topic, tp.partition): Ongoing(
                tuple(e["replicas"]), tuple(e["adding_replicas"]), tuple(e["removing_replicas"])
            )
            for tp, e in listed.items()
        }

    # -- writes --------------------------------------------------------------------------------------------
    def alter_reassignments(self, targets: Mapping[TP, Sequence[int] | None]) -> dict[TP, tuple[int, str | None]]:
        """AlterPartitionReassignments (``None`` cancels): the partitions that failed, with their error code
        and the broker's message. A top-level error fails the whole call."""
        if not targets:
            return {}
        by_topic: dict[str, list[Any]] = {}
        for (topic, partition), replicas in targets.items():
            by_topic.setdefault(topic, []).append(
                AlterPartitionReassignmentsRequest.ReassignableTopic.ReassignablePartition(
                    partition_index=partition, replicas=None if replicas is None else list(replicas)
                )
            )
        request = AlterPartitionReassignmentsRequest(
            timeout_ms=self._client.config["request_timeout_ms"],
            topics=[
                AlterPartitionReassignmentsRequest.ReassignableTopic(name=t, partitions=parts)
                for t, parts in by_topic.items()
            ],
        )
        client = self._client

        def top_level(response: Any) -> Any:
            yield kerrors.for_code(response.error_code)

        response = self._call(client._manager.run, client._send_request_to_controller, request, top_level)
        failed: dict[TP, tuple[int, str | None]] = {}
        for topic in response.responses:
            for p in topic.partitions:
                if int(p.error_code) != 0:
                    failed[(topic.name, int(p.partition_index))] = (int(p.error_code), p.error_message)
        return failed

    def alter_configs(
        self, topics: Mapping[str, Mapping[str, str | None]], brokers: Mapping[int, Mapping[str, str | None]]
    ) -> None:
        """IncrementalAlterConfigs: SET each value, DELETE each ``None``; any resource's error fails the call
        (``incrementalAlterConfigs(...).all().get()``)."""
        resources = [
            ConfigResource(ConfigResourceType.TOPIC, name, _ops(ops)) for name, ops in topics.items() if ops
        ] + [ConfigResource(ConfigResourceType.BROKER, str(b), _ops(ops)) for b, ops in brokers.items() if ops]
        if not resources:
            return
        results = self._call(self._client.alter_configs, resources, raise_on_unknown=False, incremental=True)
        for kind in ("topic", "broker"):
            for name, result in sorted((results or {}).get(kind, {}).items()):
                if result != "OK":
                    raise AdminError(f"{kind} {name}: {result}")

    # -- log directories -----------------------------------------------------------------------------------
    def replica_log_dirs(
        self, replicas: Iterable[tuple[str, int, int]]
    ) -> dict[tuple[str, int, int], tuple[str | None, str | None]]:
        """describeReplicaLogDirs: (current dir, future dir) of each replica its broker reports (DescribeLogDirs)."""
        wanted = set(replicas)
        brokers = sorted({b for _t, _p, b in wanted})
        if not brokers:
            return {}
        topics: dict[str, set[int]] = {}
        for t, p, _b in wanted:
            topics.setdefault(t, set()).add(p)
        arg = {t: sorted(ps) for t, ps in topics.items()}
        described = self._call(self._client.describe_log_dirs, arg, brokers)
        out: dict[tuple[str, int, int], tuple[str | None, str | None]] = {}
        for entry in described:
            broker = int(entry["broker"])
            for log_dir in entry["log_dirs"]:
                if int(log_dir.get("error_code", 0)) != 0:
                    continue
                for topic in log_dir.get("topics", []):
                    for part in topic.get("partitions", []):
                        key = (topic["name"], int(part["partition_index"]), broker)
                        if key not in wanted:
                            continue
                        current, future = out.get(key, (None, None))
                        if part.get("is_future_key"):
                            future = log_dir["log_dir"]
                        else:
                            current = log_dir["log_dir"]
                        out[key] = (current, future)
        return out

    def alter_replica_log_dirs(self, moves: Mapping[tuple[str, int, int], str]) -> set[tuple[str, int, int]]:
        """alterReplicaLogDirs: the replicas whose move started (a replica not yet on its broker is retried by
        the caller, as Kafka's tool does)."""
        from kafka.structs import TopicPartitionReplica

        arg = {TopicPartitionReplica(t, p, b): d for (t, p, b), d in moves.items()}
        result = self._call(self._client.alter_replica_log_dirs, arg)
        started: set[tuple[str, int, int]] = set()
        for replica, error in (result or {}).items():
            if error in (None, kerrors.NoError) or getattr(error, "errno", None) == 0:
                started.add((replica.topic, replica.partition, replica.broker_id))
            elif getattr(error, "errno", None) != errorcodes.REPLICA_NOT_AVAILABLE.code:
                raise AdminError(java_exception_text(int(error.errno), None))
        return started


def _ops(ops: Mapping[str, str | None]) -> dict[str, tuple[AlterConfigOp, str | None]]:
    return {k: (AlterConfigOp.DELETE, None) if v is None else (AlterConfigOp.SET, v) for k, v in ops.items()}
