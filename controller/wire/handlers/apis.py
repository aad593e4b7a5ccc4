"""The Kafka APIs a node serves, version-agnostic over kio's per-version classes.

Broker-side reads (Metadata, DescribeCluster) come from the node's metadata cache, never from the
controller's memory. Controller APIs run on the local controller when it is active and answer
NOT_CONTROLLER otherwise (KIP-590 forwarding comes later).
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from kio.schema.errors import ErrorCode

from controller.active.leadership import IsrUpdate
from controller.active.loop import CALL_TIMEOUT_S, Controller, NewTopic
from controller.wire import controlled_shutdown
from controller.wire.apikeys import SUPPORTED, bind
from controller.wire.authz import ALLOW_ALL, CLUSTER_NAME, Authz
from controller.wire.codec import Request, build, encode_body, entity
from controller.wire.server import Connection, Handler
from zkmodel import errorcodes as E
from zkmodel import topic_names
from zkmodel.acls import AclOperation, ResourceType
from zkmodel.admin import TopicPartition
from zkmodel.errorcodes import KafkaApiError, KafkaError
from zkmodel.topic_configs import TopicConfigError, validate_topic_configs

ZERO = datetime.timedelta(0)
NULL_UUID = uuid.UUID(int=0)
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)


#: What we advertise (a Kafka-3.9-like set inside what kio decodes; reference/kafka-clients.md §1.3).
class Cache(Protocol):
    def snapshot(self) -> Any: ...

    def wait_for(self, predicate: Callable[[Any], bool], timeout: float) -> Any: ...


@dataclass
class NodeView:
    """What the handlers need from the node."""

    broker_id: int
    cluster_id: str
    cache: Cache
    controller: Controller | None
    default_partitions: int
    default_replication_factor: int
    #: What this node advertises in ApiVersions (the Envelope only at or above the forwarding gate).
    supported: dict[int, tuple[int, int]] = field(default_factory=lambda: dict(SUPPORTED))
    authz: Authz = ALLOW_ALL
    #: The ZooKeeper session admin writes go through: the controller identity's while this node is the
    #: active controller, the broker identity's otherwise (None: the node's one session).
    write_session: Callable[[], Any] | None = None
    #: How long an entity-config write waits for a controller to exist before failing (request.timeout.ms).
    controller_wait_s: float = 0.0

    def writes(self, default: Any) -> Any:
        """The session an admin write goes through: ``write_session()`` if the node has one, else ``default``."""
        return self.write_session() if self.write_session is not None else default


def code(error: KafkaError) -> ErrorCode:
    return ErrorCode(error.code)


def kafka_uuid(text: str | None) -> uuid.UUID:
    if not text:
        return NULL_UUID
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=="))


def uuid_text(value: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode()


class Apis:
    def __init__(self, node: NodeView, *, cache_metadata: bool = True) -> None:
        self.node = node
        #: Encoded all-topics Metadata bodies by (snapshot version, API version, listener, flags): clients poll
        #: Metadata constantly, and a 1,000-partition body costs milliseconds to build and encode in Python.
        self.cache_metadata = cache_metadata
        self._metadata_bodies: dict[tuple[Any, ...], bytes] = {}

    def handlers(self) -> dict[int, Handler]:
        return bind(self)

    # -- broker APIs ------------------------------------------------------------------------------------
    async def api_versions(self, req: Request, _conn: Connection) -> Any:
        key_cls = entity(req, "ApiVersion")
        keys = tuple(
            build(key_cls, api_key=k, min_version=lo, max_version=hi)
            for k, (lo, hi) in sorted(self.node.supported.items())
        )
        return build(
            req.schema.ApiVersionsResponse,
            error_code=ErrorCode.none,
            api_keys=keys,
            throttle_time=ZERO,
            supported_features=(),
            finalized_features_epoch=-1,
            finalized_features=(),
            zk_migration_ready=False,
        )

    def _live_endpoints(self, snapshot: Any, listener: str) -> list[tuple[int, str, int, str | None]]:
        out = []
        for broker_id, broker in sorted(snapshot.brokers.items()):
            endpoint = broker.registration.endpoint(listener)
            if endpoint is not None:
                out.append((broker_id, endpoint.host, endpoint.port, broker.registration.rack))
        return out

    async def metadata(self, req: Request, conn: Connection) -> Any:
        snapshot = self.node.cache.snapshot()
        body = req.body
        requested = body.topics
        if req.api_version == 0 and not requested:
            requested = None  # v0: an empty list means all topics
        key: tuple[Any, ...] | None = None
        if requested is None and self.cache_metadata:
            flags = (getattr(body, "include_topic_authorized_operations", False),
                     getattr(body, "include_cluster_authorized_operations", False))  # fmt: skip
            key = (id(snapshot), getattr(snapshot, "version", None), req.api_version, conn.listener, flags)
            if self.node.authz.enabled:  # what a client may see depends on who and where it is
                key += (str(conn.principal), conn.peer_host, self.node.authz.version())
            cached = self._metadata_bodies.get(key)
            if cached is not None:
                return cached
        response = self._metadata_response(req, conn, snapshot, requested)
        if key is None:
            return response
        encoded = encode_body(req, response)
        if len(self._metadata_bodies) > 64:
            self._metadata_bodies.clear()  # old snapshots: a new version makes every key stale
        self._metadata_bodies[key] = encoded
        return encoded

    def _metadata_response(self, req: Request, conn: Connection, snapshot: Any, requested: Any) -> Any:
        if requested is None:
            wanted: list[tuple[str | None, uuid.UUID | None]] = [(name, None) for name in sorted(snapshot.topics)]
        else:
            wanted = [(t.name, getattr(t, "topic_id", None)) for t in requested]
        topic_cls, part_cls, broker_cls = (
            entity(req, "MetadataResponseTopic"),
            entity(req, "MetadataResponsePartition"),
            entity(req, "MetadataResponseBroker"),
        )
        alive = set(snapshot.brokers)
        by_id = {kafka_uuid(t.topic_id): t for t in snapshot.topics.values() if t.topic_id}
        topics = []
        authz = self.node.authz
        for name, topic_id in wanted:
            topic = snapshot.topics.get(name) if name is not None else by_id.get(topic_id) if topic_id else None
            topic_name = name if name is not None else topic.name if topic is not None else None
            if topic_name is not None and not authz.topic(conn, AclOperation.DESCRIBE, topic_name):
                if requested is None:
                    continue  # all topics: the ones the client may not describe are left out
                topics.append(
                    build(topic_cls, error_code=code(E.TOPIC_AUTHORIZATION_FAILED), name=name,
                          topic_id=topic_id or NULL_UUID, is_internal=False, partitions=(),
                          topic_authorized_operations=AUTHORIZED_OPERATIONS_OMITTED)
                )  # fmt: skip
                continue
            if topic is None:
                error = E.UNKNOWN_TOPIC_OR_PARTITION
                if name is not None and not topic_names.is_valid(name):
                    error = E.INVALID_TOPIC_EXCEPTION
                elif name is None:
                    error = E.UNKNOWN_TOPIC_ID
                topics.append(
                    build(topic_cls, error_code=code(error), name=name, topic_id=topic_id or NULL_UUID,
                          is_internal=False, partitions=(), topic_authorized_operations=AUTHORIZED_OPERATIONS_OMITTED)
                )  # fmt: skip
                continue
            partitions = []
            for p, part in sorted(topic.partitions.items()):
                leader_alive = part.leader in alive
                partitions.append(
                    build(
                        part_cls,
                        error_code=code(E.NONE if leader_alive else E.LEADER_NOT_AVAILABLE),
                        partition_index=p,
                        leader_id=part.leader if leader_alive else -1,
                        leader_epoch=part.leader_epoch,
                        replica_nodes=tuple(part.replicas),
                        isr_nodes=tuple(part.isr),
                        offline_replicas=tuple(r for r in part.replicas if r not in alive),
                    )
                )
            topics.append(
                build(
                    topic_cls,
                    error_code=ErrorCode.none,
                    name=topic.name,
                    topic_id=kafka_uuid(topic.topic_id),
                    is_internal=topic.is_internal,
                    partitions=tuple(partitions),
                    topic_authorized_operations=authz.operations(conn, ResourceType.TOPIC, topic.name)
                    if getattr(req.body, "include_topic_authorized_operations", False)
                    else AUTHORIZED_OPERATIONS_OMITTED,
                )
            )
        brokers = tuple(
            build(broker_cls, node_id=b, host=h, port=p, rack=rack)
            for b, h, p, rack in self._live_endpoints(snapshot, conn.listener)
        )
        controller_id = snapshot.controller_id if snapshot.controller_id in alive else -1
        return build(
            req.schema.MetadataResponse,
            throttle_time=ZERO,
            brokers=brokers,
            cluster_id=self.node.cluster_id,
            controller_id=controller_id,
            topics=tuple(topics),
            cluster_authorized_operations=self._cluster_operations(
                conn, bool(getattr(req.body, "include_cluster_authorized_operations", False))
            ),
        )

    def _cluster_operations(self, conn: Connection, wanted: bool) -> int:
        """KIP-430: the cluster's authorized operations if asked, 0 without DESCRIBE on the cluster."""
        if not wanted:
            return AUTHORIZED_OPERATIONS_OMITTED
        if not self.node.authz.cluster(conn, AclOperation.DESCRIBE):
            return 0
        return self.node.authz.operations(conn, ResourceType.CLUSTER, CLUSTER_NAME)

    async def describe_cluster(self, req: Request, conn: Connection) -> Any:
        snapshot = self.node.cache.snapshot()
        broker_cls = entity(req, "DescribeClusterBroker")
        endpoint_type = getattr(req.body, "endpoint_type", 1)
        error, message = (E.NONE, None)
        if endpoint_type != 1:
            error, message = E.UNSUPPORTED_ENDPOINT_TYPE, "This broker only serves broker endpoints (ZooKeeper mode)."
        brokers = (
            tuple(
                build(broker_cls, broker_id=b, host=h, port=p, rack=rack)
                for b, h, p, rack in self._live_endpoints(snapshot, conn.listener)
            )
            if error is E.NONE
            else ()
        )
        alive = set(snapshot.brokers)
        return build(
            req.schema.DescribeClusterResponse,
            throttle_time=ZERO,
            error_code=code(error),
            error_message=message,
            endpoint_type=endpoint_type,
            cluster_id=self.node.cluster_id,
            controller_id=snapshot.controller_id if snapshot.controller_id in alive else -1,
            brokers=brokers,
            cluster_authorized_operations=self._cluster_operations(
                conn, bool(getattr(req.body, "include_cluster_authorized_operations", False))
            ),
        )

    def raw_handlers(self) -> dict[int, Any]:
        return bind(self, raw=True)

    async def controlled_shutdown(self, frame: bytes, conn: Connection) -> bytes | None:
        """Move leadership off a stopping broker and drop it from ISRs; answer what it still leads."""
        try:
            correlation, broker_id, broker_epoch = controlled_shutdown.decode_request(frame)
        except controlled_shutdown.ShutdownCodecError:
            return None
        if not self.node.authz.cluster(conn, AclOperation.CLUSTER_ACTION):
            return controlled_shutdown.encode_response(correlation, E.CLUSTER_AUTHORIZATION_FAILED.code, [])
        outcome, top, _message = await _controller_call(
            self._active_controller(), lambda c: c.controlled_shutdown(broker_id, broker_epoch)
        )
        if outcome is not None:
            top, remaining = outcome
        else:
            remaining = []
        return controlled_shutdown.encode_response(correlation, top.code, remaining)

    # -- controller APIs ------------------------------------------------------------------------------------
    def _active_controller(self) -> Controller | None:
        c = self.node.controller
        return c if c is not None and c.is_active else None

    async def _wait(self, predicate: Callable[[Any], bool], timeout_s: float) -> bool:
        try:
            await asyncio.to_thread(self.node.cache.wait_for, predicate, timeout_s)
            return True
        except TimeoutError:
            return False

    async def create_topics(self, req: Request, conn: Connection) -> Any:
        body = req.body
        result_cls = entity(req, "CreatableTopicResult")
        timeout_ms = int(body.timeout.total_seconds() * 1000)
        validate_only = bool(getattr(body, "validate_only", False))
        names = [t.name for t in body.topics]
        results: dict[str, tuple[KafkaError, str | None]] = {}
        to_create: list[NewTopic] = []
        controller = self._active_controller()
        authz = self.node.authz
        authorized = (
            set(names) if authz.cluster(conn, AclOperation.CREATE) else authz.topics(conn, AclOperation.CREATE, names)
        )
        for t in body.topics:
            if controller is None:
                results[t.name] = (E.NOT_CONTROLLER, None)
            elif names.count(t.name) > 1:
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
                    controller.create_topics, to_create, validate_only=validate_only, timeout=_call_wait(timeout_ms)
                )
            except KafkaApiError as exc:
                created = {t.name: (exc.error, exc.message) for t in to_create}
            results.update(created)
        succeeded = [n for n, (err, _m) in results.items() if err is E.NONE]
        if succeeded and not validate_only:
            if timeout_ms <= 0:  # KIP-4: validated and started, but not waited for
                results.update({n: (E.REQUEST_TIMED_OUT, None) for n in succeeded})
            elif not await self._wait(lambda s: all(_has_leaders(s, n) for n in succeeded), timeout_ms / 1000):
                for n in succeeded:
                    results[n] = (E.REQUEST_TIMED_OUT, f"Timed out waiting for topic {n} to be created.")
        snapshot = self.node.cache.snapshot()
        # ZkAdminManager includes a created topic's configs and counts only for clients that may describe them.
        may_describe = authz.topics(conn, AclOperation.DESCRIBE_CONFIGS, names)
        out = []
        for t in body.topics:
            err, message = results[t.name]
            topic = snapshot.topics.get(t.name) if err is E.NONE else None
            hidden = topic is not None and t.name not in may_describe
            shown = None if hidden else topic
            out.append(
                build(
                    result_cls,
                    name=t.name,
                    topic_id=kafka_uuid(topic.topic_id) if topic else NULL_UUID,
                    error_code=code(err),
                    error_message=message,
                    topic_config_error_code=code(E.TOPIC_AUTHORIZATION_FAILED) if hidden else ErrorCode.none,
                    num_partitions=len(shown.partitions) if shown else -1,
                    replication_factor=len(next(iter(shown.partitions.values())).replicas) if shown else -1,
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
                results = await asyncio.to_thread(controller.delete_topics, names, timeout=_call_wait(timeout_ms))
            except KafkaApiError as exc:
                results = {n: (exc.error, exc.message) for n in names}
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

    async def alter_partition_reassignments(self, req: Request, _conn: Connection) -> Any:
        """KIP-455 (and KIP-860 at v1): per-partition results in the request's order."""
        body = req.body
        requests: dict[TopicPartition, list[int] | None] = {}
        for topic in body.topics:
            for p in topic.partitions:
                requests[TopicPartition(topic.name, p.partition_index)] = (
                    None if p.replicas is None else [int(r) for r in p.replicas]
                )
        allow_rf_change = bool(getattr(body, "allow_replication_factor_change", True))
        rf_errors: dict[TopicPartition, tuple[KafkaError, str | None]] = {}
        if not allow_rf_change:
            snapshot = self.node.cache.snapshot()
            for tp, target in requests.items():
                topic = snapshot.topics.get(tp.topic)
                current = topic.partitions.get(tp.partition) if topic is not None else None
                if target is not None and current is not None:
                    origin = [r for r in current.replicas if r not in getattr(current, "adding", ())]
                    if len(target) != len(origin):
                        rf_errors[tp] = (
                            E.INVALID_REPLICATION_FACTOR,
                            "The replication factor is changed from "
                            f"{len(origin)} to {len(target)} but allowReplicationFactorChange is false",
                        )
        todo = {tp: t for tp, t in requests.items() if tp not in rf_errors}
        timeout_ms = int(body.timeout.total_seconds() * 1000)
        results, top, message = await _controller_call(
            self._active_controller(),
            lambda c: c.alter_partition_reassignments(todo, timeout=_call_wait(timeout_ms)) if todo else {},
        )
        per = {**(results or {}), **rf_errors}
        topic_cls, part_cls = entity(req, "ReassignableTopicResponse"), entity(req, "ReassignablePartitionResponse")
        topics = []
        for topic in body.topics if top is E.NONE else ():
            parts = []
            for p in topic.partitions:
                err, msg = per.get(TopicPartition(topic.name, p.partition_index), (E.NONE, None))
                parts.append(
                    build(part_cls, partition_index=p.partition_index, error_code=code(err), error_message=msg)
                )
            topics.append(build(topic_cls, name=topic.name, partitions=tuple(parts)))
        return build(
            req.schema.AlterPartitionReassignmentsResponse,
            throttle_time=ZERO,
            allow_replication_factor_change=allow_rf_change,
            error_code=code(top),
            error_message=message,
            responses=tuple(topics),
        )

    async def list_partition_reassignments(self, req: Request, _conn: Connection) -> Any:
        body = req.body
        wanted = (
            None
            if body.topics is None
            else [TopicPartition(t.name, int(p)) for t in body.topics for p in t.partition_indexes]
        )
        moving, top, message = await _controller_call(
            self._active_controller(), lambda c: c.list_partition_reassignments(wanted)
        )
        topic_cls, part_cls = entity(req, "OngoingTopicReassignment"), entity(req, "OngoingPartitionReassignment")
        by_topic: dict[str, list[Any]] = {}
        for tp, a in sorted((moving or {}).items()):
            by_topic.setdefault(tp.topic, []).append(
                build(part_cls, partition_index=tp.partition, replicas=tuple(a.replicas),
                      adding_replicas=tuple(a.adding), removing_replicas=tuple(a.removing))
            )  # fmt: skip
        topics = tuple(build(topic_cls, name=n, partitions=tuple(ps)) for n, ps in by_topic.items())
        return build(
            req.schema.ListPartitionReassignmentsResponse,
            throttle_time=ZERO,
            error_code=code(top),
            error_message=message,
            topics=topics,
        )

    async def elect_leaders(self, req: Request, _conn: Connection) -> Any:
        body = req.body
        election_type = int(getattr(body, "election_type", 0))
        timeout_ms = int(body.timeout.total_seconds() * 1000)
        wanted = (
            None
            if body.topic_partitions is None
            else [TopicPartition(t.topic, int(p)) for t in body.topic_partitions for p in t.partitions]
        )
        results, top, _message = await _controller_call(
            self._active_controller(), lambda c: c.elect_leaders(election_type, wanted, timeout=_call_wait(timeout_ms))
        )
        if top is not E.NONE:  # v0 has no top-level error: Kafka reports it on every partition
            results = {tp: (top, _message) for tp in wanted or []}
        topic_cls, part_cls = entity(req, "ReplicaElectionResult"), entity(req, "PartitionResult")
        by_topic: dict[str, list[Any]] = {}
        for tp, (err, msg) in sorted((results or {}).items()):
            by_topic.setdefault(tp.topic, []).append(
                build(part_cls, partition_id=tp.partition, error_code=code(err), error_message=msg)
            )
        return build(
            req.schema.ElectLeadersResponse,
            throttle_time=ZERO,
            error_code=code(top),
            replica_election_results=tuple(
                build(topic_cls, topic=n, partition_result=tuple(ps)) for n, ps in by_topic.items()
            ),
        )

    async def alter_partition(self, req: Request, _conn: Connection) -> Any:
        """From partition leaders: ISR changes, applied by the controller with Kafka's epoch checks."""
        body = req.body
        updates: dict[tuple[str, int], IsrUpdate] = {}
        for topic in body.topics:
            for p in topic.partitions:
                isr = (
                    tuple(int(b.broker_id) for b in p.new_isr_with_epochs)
                    if hasattr(p, "new_isr_with_epochs")
                    else tuple(int(b) for b in p.new_isr)
                )
                updates[(uuid_text(topic.topic_id), p.partition_index)] = IsrUpdate(
                    int(p.leader_epoch), isr, int(p.partition_epoch), int(p.leader_recovery_state)
                )
        controller = self._active_controller()
        outcome, top, _message = await _controller_call(
            controller, lambda c: c.alter_partition_by_id(body.broker_id, body.broker_epoch, updates,
                                                          version=req.api_version)
        )  # fmt: skip
        if outcome is not None:
            top, results = outcome
        else:
            results = {}
        topic_cls, part_cls = entity(req, "TopicData"), entity(req, "PartitionData")
        topics = []
        for topic in body.topics if top is E.NONE else ():
            parts = []
            for p in topic.partitions:
                r = results.get((uuid_text(topic.topic_id), p.partition_index))
                state = r.state if r is not None else None
                parts.append(
                    build(
                        part_cls,
                        partition_index=p.partition_index,
                        error_code=code(r.error if r is not None else E.UNKNOWN_SERVER_ERROR),
                        leader_id=state.leader if state else -1,
                        leader_epoch=state.leader_epoch if state else -1,
                        isr=tuple(state.isr) if state else (),
                        leader_recovery_state=state.leader_recovery_state if state else 0,
                        partition_epoch=r.partition_epoch if r is not None else -1,
                    )
                )
            topics.append(build(topic_cls, topic_id=topic.topic_id, partitions=tuple(parts)))
        return build(req.schema.AlterPartitionResponse, throttle_time=ZERO, error_code=code(top), topics=tuple(topics))

    async def create_partitions(self, req: Request, conn: Connection) -> Any:
        body = req.body
        result_cls = entity(req, "CreatePartitionsTopicResult")
        timeout_ms = int(body.timeout.total_seconds() * 1000)
        validate_only = bool(body.validate_only)
        names = [t.name for t in body.topics]
        controller = self._active_controller()
        results: dict[str, tuple[KafkaError, str | None]] = {}
        wanted: dict[str, tuple[int, Sequence[Sequence[int]] | None]] = {}
        may_alter = self.node.authz.topics(conn, AclOperation.ALTER, names)
        for t in body.topics:
            if controller is None:
                results[t.name] = (E.NOT_CONTROLLER, None)
            elif names.count(t.name) > 1:
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
                        timeout=_call_wait(timeout_ms),
                    )
                )
            except KafkaApiError as exc:
                results.update({n: (exc.error, exc.message) for n in wanted})
        grown = {n: wanted[n][0] for n, (err, _m) in results.items() if err is E.NONE and n in wanted}
        if grown and not validate_only:
            done = await self._wait(
                lambda s: all(n in s.topics and len(s.topics[n].partitions) >= c and _has_leaders(s, n)
                              for n, c in grown.items()),
                max(timeout_ms, 0) / 1000,
            )  # fmt: skip
            if not done:
                results.update({n: (E.REQUEST_TIMED_OUT, None) for n in grown})
        out = tuple(
            build(result_cls, name=t.name, error_code=code(results[t.name][0]), error_message=results[t.name][1])
            for t in body.topics
        )
        return build(req.schema.CreatePartitionsResponse, throttle_time=ZERO, results=out)


_NOT_CONTROLLER_TOP = (E.NOT_CONTROLLER, "This is not the correct controller for this cluster.")


async def _controller_call(
    controller: Controller | None, fn: Callable[[Controller], Any]
) -> tuple[Any, KafkaError, str | None]:
    """Run a blocking controller call off the event loop; a non-controller (or one that just lost the
    election) answers NOT_CONTROLLER as a top-level error."""
    if controller is None:
        return None, *_NOT_CONTROLLER_TOP
    try:
        return await asyncio.to_thread(fn, controller), E.NONE, None
    except KafkaApiError as exc:
        return None, exc.error, exc.message


def _call_wait(timeout_ms: int) -> float:
    """How long a request waits for the controller thread: its own ``timeout_ms``, or the default when it
    asks not to wait (KIP-4's 0: the work must still be accepted, only its completion is not awaited)."""
    return timeout_ms / 1000 if timeout_ms > 0 else CALL_TIMEOUT_S


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
