"""CreateTopics, DeleteTopics and CreatePartitions: validated here as Kafka's broker validates them, carried out by
the active controller, and answered once the metadata cache shows the result (or the request's timeout passes).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from typing import Any

from kio.schema.errors import ErrorCode

from controller.active.api import NewTopic, Result, WriteResult
from controller.wire.codec import Request, build, entity
from controller.wire.handlers.base import (
    NULL_UUID,
    ZERO,
    HandlerBase,
    call_wait,
    code,
    controller_error,
    kafka_uuid,
    repeated,
)
from controller.wire.server import Connection
from zkmodel import errorcodes as E
from zkmodel.errorcodes import KafkaApiError, KafkaError
from zkmodel.kafka_acls import AclOperation
from zkmodel.topic_configs import TopicConfigError, validate_topic_configs


class TopicApis(HandlerBase):
    async def create_topics(self, req: Request, conn: Connection) -> Any:
        body = req.body
        result_cls = entity(req, "CreatableTopicResult")
        timeout_ms = int(body.timeout.total_seconds() * 1000)
        validate_only = bool(getattr(body, "validate_only", False))
        names = [t.name for t in body.topics]
        repeated_names = repeated(names)
        results: dict[str, Result] = {}
        to_create: list[NewTopic] = []
        controller = self._active_controller()
        authz = self.node.authz
        authorized = (
            set(names) if authz.cluster(conn, AclOperation.CREATE) else authz.topics(conn, AclOperation.CREATE, names)
        )
        for t in body.topics:
            if controller is None:
                results[t.name] = (E.NOT_CONTROLLER, None)
            elif t.name in repeated_names:  # the one duplicate check: the controller takes distinct names only
                results[t.name] = (E.INVALID_REQUEST, "Found multiple entries for this topic.")
            elif t.name not in authorized:
                results[t.name] = (E.TOPIC_AUTHORIZATION_FAILED, "Authorization failed.")
            elif any(c.value is None for c in t.configs):
                nulls = ",".join(c.name for c in t.configs if c.value is None)
                results[t.name] = (E.INVALID_CONFIG, f"Null value not supported for topic configs: {nulls}")
            elif (problem := _config_problem({c.name: c.value for c in t.configs})) is not None:
                results[t.name] = (E.INVALID_CONFIG, problem)
            else:
                assignment = {a.partition_index: list(a.broker_ids) for a in t.assignments} or None
                partitions = t.num_partitions
                replication = t.replication_factor
                if assignment is None:  # KIP-464: -1 means the broker's default
                    partitions = self.node.default_partitions if partitions == -1 else partitions
                    replication = self.node.default_replication_factor if replication == -1 else replication
                to_create.append(
                    NewTopic(t.name, partitions, replication, assignment, {c.name: c.value for c in t.configs})
                )
        if controller is not None and to_create:
            try:
                created = await asyncio.to_thread(
                    controller.create_topics, to_create, validate_only=validate_only, timeout=call_wait(timeout_ms)
                )
            except KafkaApiError as exc:
                created = dict.fromkeys((t.name for t in to_create), controller_error(exc))
            results.update(created)
        succeeded = [n for n, (err, _m) in results.items() if err is E.NONE]
        if succeeded and not validate_only:
            if timeout_ms <= 0:  # KIP-4: validated and started, but not waited for
                results.update({n: (E.REQUEST_TIMED_OUT, None) for n in succeeded})
            elif not await self._wait(lambda s: all(_has_leaders(s, n) for n in succeeded), timeout_ms / 1000):
                for n in succeeded:
                    results[n] = (E.REQUEST_TIMED_OUT, f"Timed out waiting for topic {n} to be created.")
        # ZkAdminManager includes a created topic's configs and counts only for clients that may describe them.
        may_describe = authz.topics(conn, AclOperation.DESCRIBE_CONFIGS, names)
        out = []
        for t in body.topics:
            result = results[t.name]
            err, message = result
            # The id and assignment the controller wrote (the wait above only saw them reach the cache).
            written = result.written if err is E.NONE and isinstance(result, WriteResult) else None
            hidden = written is not None and t.name not in may_describe
            shown = None if hidden else written
            out.append(
                build(
                    result_cls,
                    name=t.name,
                    topic_id=kafka_uuid(written.topic_id) if written else NULL_UUID,
                    error_code=code(err),
                    error_message=message,
                    topic_config_error_code=code(E.TOPIC_AUTHORIZATION_FAILED) if hidden else ErrorCode.none,
                    num_partitions=shown.num_partitions if shown else -1,
                    replication_factor=shown.replication_factor if shown else -1,
                    configs=None if shown is None else (),
                )
            )
        return build(req.schema.CreateTopicsResponse, throttle_time=ZERO, topics=tuple(out))

    async def delete_topics(self, req: Request, conn: Connection) -> Any:
        body = req.body
        result_cls = entity(req, "DeletableTopicResult")
        timeout_ms = int(body.timeout.total_seconds() * 1000)
        snapshot = self.node.cache.snapshot()
        requested: list[tuple[str | None, uuid.UUID | None]] = (
            [(t.name, t.topic_id if t.topic_id != NULL_UUID else None) for t in body.topics]
            if hasattr(body, "topics")
            else [(n, None) for n in body.topic_names]
        )
        by_id = {kafka_uuid(t.topic_id): name for name, t in snapshot.topics.items() if t.topic_id}
        resolved: list[tuple[str | None, uuid.UUID | None, KafkaError | None]] = []
        for name, topic_id in requested:
            if name is None and topic_id is not None:
                found = by_id.get(topic_id)
                resolved.append((found, topic_id, None if found else E.UNKNOWN_TOPIC_ID))
            else:
                resolved.append((name, topic_id, None))
        # KafkaApis.handleDeleteTopicsRequest: DELETE decides; a topic named by id whose name the client may
        # not DESCRIBE keeps its name hidden.
        authz = self.node.authz
        named = [n for n, _i, err in resolved if n is not None and err is None]
        may_delete = authz.topics(conn, AclOperation.DELETE, named)
        may_describe = authz.topics(conn, AclOperation.DESCRIBE, named)
        for i, (name, topic_id, err) in enumerate(resolved):
            if name is None or err is not None:
                continue
            if topic_id is not None and name not in may_describe:
                resolved[i] = (None, topic_id, E.TOPIC_AUTHORIZATION_FAILED)
            elif name not in may_delete:
                resolved[i] = (name, topic_id, E.TOPIC_AUTHORIZATION_FAILED)
        controller = self._active_controller()
        names = [n for n, _i, err in resolved if n is not None and err is None]
        results: dict[str, tuple[KafkaError, str | None]] = {}
        if controller is None:
            results = {n: (E.NOT_CONTROLLER, None) for n in names}
        elif names:
            try:
                results = await asyncio.to_thread(controller.delete_topics, names, timeout=call_wait(timeout_ms))
            except KafkaApiError as exc:
                results = dict.fromkeys(names, controller_error(exc))
            started = [n for n, (err, _m) in results.items() if err is E.NONE]
            if started and not await self._wait(lambda s: not any(n in s.topics for n in started), timeout_ms / 1000):
                results.update({n: (E.REQUEST_TIMED_OUT, None) for n in started})
        out = []
        for name, topic_id, error in resolved:
            err, message = (error, None) if error is not None else results.get(name or "", (E.NONE, None))
            out.append(
                build(
                    result_cls, name=name, topic_id=topic_id or NULL_UUID, error_code=code(err), error_message=message
                )
            )
        return build(req.schema.DeleteTopicsResponse, throttle_time=ZERO, responses=tuple(out))

    async def create_partitions(self, req: Request, conn: Connection) -> Any:
        body = req.body
        result_cls = entity(req, "CreatePartitionsTopicResult")
        timeout_ms = int(body.timeout.total_seconds() * 1000)
        validate_only = bool(body.validate_only)
        names = [t.name for t in body.topics]
        repeated_names = repeated(names)
        controller = self._active_controller()
        results: dict[str, tuple[KafkaError, str | None]] = {}
        wanted: dict[str, tuple[int, Sequence[Sequence[int]] | None]] = {}
        may_alter = self.node.authz.topics(conn, AclOperation.ALTER, names)
        for t in body.topics:
            if controller is None:
                results[t.name] = (E.NOT_CONTROLLER, None)
            elif t.name in repeated_names:
                results[t.name] = (E.INVALID_REQUEST, "Duplicate topic in request.")
            elif t.name not in may_alter:
                results[t.name] = (E.TOPIC_AUTHORIZATION_FAILED, "The topic authorization is failed.")
            else:
                assignments = None if t.assignments is None else [list(a.broker_ids) for a in t.assignments]
                wanted[t.name] = (t.count, assignments)
        if controller is not None and wanted:
            try:
                results.update(
                    await asyncio.to_thread(
                        controller.create_partitions,
                        wanted,
                        validate_only=validate_only,
                        timeout=call_wait(timeout_ms),
                    )
                )
            except KafkaApiError as exc:
                results.update(dict.fromkeys(wanted, controller_error(exc)))
        grown = {n: wanted[n][0] for n, (err, _m) in results.items() if err is E.NONE and n in wanted}
        if grown and not validate_only:
            done = await self._wait(
                lambda s: all(
                    n in s.topics and len(s.topics[n].partitions) >= c and _has_leaders(s, n) for n, c in grown.items()
                ),
                max(timeout_ms, 0) / 1000,
            )
            if not done:
                results.update({n: (E.REQUEST_TIMED_OUT, None) for n in grown})
        out = tuple(
            build(result_cls, name=t.name, error_code=code(results[t.name][0]), error_message=results[t.name][1])
            for t in body.topics
        )
        return build(req.schema.CreatePartitionsResponse, throttle_time=ZERO, results=out)


def _config_problem(configs: dict[str, str]) -> str | None:
    """Kafka's LogConfig.validate for a new topic, or None when the configs are valid."""
    try:
        validate_topic_configs(configs)
    except TopicConfigError as exc:
        return exc.message
    return None


def _has_leaders(snapshot: Any, name: str) -> bool:
    topic = snapshot.topics.get(name)
    return (
        topic is not None
        and bool(topic.partitions)
        and all(p.leader >= 0 and p.leader in snapshot.brokers for p in topic.partitions.values())
    )
