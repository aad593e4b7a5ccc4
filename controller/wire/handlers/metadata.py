"""Broker-side reads served from the node's metadata cache, never from the controller's memory: ApiVersions,
Metadata (encoded bodies cached per snapshot) and DescribeCluster.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from kio.schema.errors import ErrorCode

from controller.wire.authz import CLUSTER_NAME
from controller.wire.codec import Request, build, encode_body, entity
from controller.wire.handlers.base import (
    AUTHORIZED_OPERATIONS_OMITTED,
    NULL_UUID,
    ZERO,
    HandlerBase,
    NodeView,
    code,
    kafka_uuid,
)
from controller.wire.server import Connection
from zkmodel import errorcodes as E
from zkmodel import topic_names
from zkmodel.errorcodes import KafkaError
from zkmodel.kafka_acls import AclOperation, ResourceType


def _topic_error(topic_cls: Any, error: KafkaError, name: str | None, topic_id: Any) -> Any:
    """A MetadataResponseTopic that carries only its error, as Kafka's MetadataResponse answers a topic it does not
    describe: not internal, no partitions, authorized operations omitted."""
    return build(
        topic_cls,
        error_code=code(error),
        name=name,
        topic_id=topic_id,
        is_internal=False,
        partitions=(),
        topic_authorized_operations=AUTHORIZED_OPERATIONS_OMITTED,
    )


class MetadataApis(HandlerBase):
    def __init__(self, node: NodeView, *, cache_metadata: bool = True) -> None:
        super().__init__(node)
        #: Encoded all-topics Metadata bodies by (snapshot version, API version, listener, flags): clients poll
        #: Metadata constantly, and a 1,000-partition body costs milliseconds to build and encode in Python.
        self.cache_metadata = cache_metadata
        self._metadata_bodies: dict[tuple[Any, ...], bytes | asyncio.Future[bytes | None]] = {}

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
        if requested is not None and req.api_version < 12 and any(t.name is None for t in requested):
            return self._invalid_request(req, requested)
        if requested is not None:
            return self._metadata_response(req, conn, snapshot, requested)
        # All topics: at 100k partitions a body takes a second or more to build and encode, off the event loop so
        # that the node goes on answering everything else meanwhile; one build per snapshot, awaited by every
        # request that asks for the same body while it is being made.
        if not self.cache_metadata:
            return await asyncio.to_thread(self._all_topics_body, req, conn, snapshot)
        flags = (
            getattr(body, "include_topic_authorized_operations", False),
            getattr(body, "include_cluster_authorized_operations", False),
        )
        key: tuple[Any, ...] = (id(snapshot), getattr(snapshot, "version", None), req.api_version, conn.listener, flags)
        if self.node.authz.enabled:  # what a client may see depends on who and where it is
            key += (str(conn.principal), conn.peer_host, self.node.authz.version())
        cached = self._metadata_bodies.get(key)
        if isinstance(cached, bytes):
            return cached
        if cached is not None:
            shared = await asyncio.shield(cached)
            if shared is not None:
                return shared
        building: asyncio.Future[bytes | None] = asyncio.get_running_loop().create_future()
        if len(self._metadata_bodies) > 64:
            self._metadata_bodies.clear()  # old snapshots: a new version makes every key stale
        self._metadata_bodies[key] = building
        try:
            encoded = await asyncio.to_thread(self._all_topics_body, req, conn, snapshot)
        except BaseException:
            self._metadata_bodies.pop(key, None)
            building.set_result(None)  # the waiters build their own (and meet the same error, if any)
            raise
        if self._metadata_bodies.get(key) is building:
            self._metadata_bodies[key] = encoded
        building.set_result(encoded)
        return encoded

    def _all_topics_body(self, req: Request, conn: Connection, snapshot: Any) -> bytes:
        return encode_body(req, self._metadata_response(req, conn, snapshot, None))

    @staticmethod
    def _invalid_request(req: Request, requested: Any) -> Any:
        """Kafka's answer to a v10/v11 request naming a topic by null (topic ids need v12; KafkaApis throws
        InvalidRequestException): INVALID_REQUEST on every requested topic, a null name answered as "" (the
        response has no null name before v12), as MetadataRequest.getErrorResponse builds it."""
        topic_cls = entity(req, "MetadataResponseTopic")
        topics = tuple(_topic_error(topic_cls, E.INVALID_REQUEST, t.name or "", t.topic_id) for t in requested)
        return build(
            req.schema.MetadataResponse,
            throttle_time=ZERO,
            brokers=(),
            cluster_id=None,
            controller_id=-1,
            topics=topics,
            cluster_authorized_operations=AUTHORIZED_OPERATIONS_OMITTED,
        )

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
        by_id = (  # only when a topic is asked for by id: building it costs a decode per topic in the cluster
            {kafka_uuid(t.topic_id): t for t in snapshot.topics.values() if t.topic_id}
            if any(name is None for name, _id in wanted)
            else {}
        )
        topics = []
        authz = self.node.authz
        for name, topic_id in wanted:
            topic = snapshot.topics.get(name) if name is not None else by_id.get(topic_id) if topic_id else None
            topic_name = name if name is not None else topic.name if topic is not None else None
            if topic_name is not None and not authz.topic(conn, AclOperation.DESCRIBE, topic_name):
                if requested is None:
                    continue  # all topics: the ones the client may not describe are left out
                topics.append(_topic_error(topic_cls, E.TOPIC_AUTHORIZATION_FAILED, name, topic_id or NULL_UUID))
                continue
            if topic is None:
                error = E.UNKNOWN_TOPIC_OR_PARTITION
                if name is not None and not topic_names.is_valid(name):
                    error = E.INVALID_TOPIC_EXCEPTION
                elif name is None:
                    error = E.UNKNOWN_TOPIC_ID
                topics.append(_topic_error(topic_cls, error, name, topic_id or NULL_UUID))
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
