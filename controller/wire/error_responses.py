"""Whole-request error responses (Kafka's ``AbstractRequest.getErrorResponse``), one builder per API that
has one; :mod:`controller.wire.apikeys` names each API's builder in its spec row.

A broker that cannot get an answer from the controller (timeout, envelope failure) still owes the client
a well-formed response of the API it asked, with the error on every entry the client will look at; so does
a node whose ZooKeeper failed under a handler.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Callable
from typing import Any, TypeAlias

from kio.schema.errors import ErrorCode

from controller.wire.codec import Request, build, entity
from zkmodel.errorcodes import KafkaError

ZERO = datetime.timedelta(0)
#: (request, error, message) -> the API's response with that error everywhere.
ErrorBuilder: TypeAlias = Callable[[Request, KafkaError, str | None], Any]
NULL_UUID = uuid.UUID(int=0)


def _ec(error: KafkaError) -> ErrorCode:
    return ErrorCode(error.code)


def create_topics(req: Request, e: KafkaError, msg: str | None) -> Any:
    cls = entity(req, "CreatableTopicResult")
    topics = tuple(
        build(
            cls,
            name=t.name,
            topic_id=NULL_UUID,
            error_code=_ec(e),
            error_message=msg,
            topic_config_error_code=ErrorCode.none,
            num_partitions=-1,
            replication_factor=-1,
            configs=None,
        )
        for t in req.body.topics
    )
    return build(req.schema.CreateTopicsResponse, throttle_time=ZERO, topics=topics)


def delete_topics(req: Request, e: KafkaError, msg: str | None) -> Any:
    cls = entity(req, "DeletableTopicResult")
    body = req.body
    if getattr(body, "topics", None):
        named = [(t.name, t.topic_id) for t in body.topics]
    else:
        named = [(n, NULL_UUID) for n in getattr(body, "topic_names", ())]
    results = tuple(
        build(cls, name=name, topic_id=topic_id, error_code=_ec(e), error_message=msg) for name, topic_id in named
    )
    return build(req.schema.DeleteTopicsResponse, throttle_time=ZERO, responses=results)


def create_acls(req: Request, e: KafkaError, msg: str | None) -> Any:
    cls = entity(req, "AclCreationResult")
    results = tuple(build(cls, error_code=_ec(e), error_message=msg) for _ in req.body.creations)
    return build(req.schema.CreateAclsResponse, throttle_time=ZERO, results=results)


def delete_acls(req: Request, e: KafkaError, msg: str | None) -> Any:
    cls = entity(req, "DeleteAclsFilterResult")
    results = tuple(build(cls, error_code=_ec(e), error_message=msg, matching_acls=()) for _ in req.body.filters)
    return build(req.schema.DeleteAclsResponse, throttle_time=ZERO, filter_results=results)


def alter_configs(response_name: str) -> Callable[[Request, KafkaError, str | None], Any]:
    def make(req: Request, e: KafkaError, msg: str | None) -> Any:
        cls = entity(req, "AlterConfigsResourceResponse")
        responses = tuple(
            build(
                cls, error_code=_ec(e), error_message=msg, resource_type=r.resource_type, resource_name=r.resource_name
            )
            for r in req.body.resources
        )
        return build(getattr(req.schema, response_name), throttle_time=ZERO, responses=responses)

    return make


def create_partitions(req: Request, e: KafkaError, msg: str | None) -> Any:
    cls = entity(req, "CreatePartitionsTopicResult")
    results = tuple(build(cls, name=t.name, error_code=_ec(e), error_message=msg) for t in req.body.topics)
    return build(req.schema.CreatePartitionsResponse, throttle_time=ZERO, results=results)


def elect_leaders(req: Request, e: KafkaError, msg: str | None) -> Any:
    topic_cls, part_cls = entity(req, "ReplicaElectionResult"), entity(req, "PartitionResult")
    results = tuple(
        build(
            topic_cls,
            topic=t.topic,
            partition_result=tuple(
                build(part_cls, partition_id=p, error_code=_ec(e), error_message=msg) for p in t.partitions
            ),
        )
        for t in (req.body.topic_partitions or ())
    )
    return build(
        req.schema.ElectLeadersResponse, throttle_time=ZERO, error_code=_ec(e), replica_election_results=results
    )


def alter_reassignments(req: Request, e: KafkaError, msg: str | None) -> Any:
    topic_cls, part_cls = entity(req, "ReassignableTopicResponse"), entity(req, "ReassignablePartitionResponse")
    responses = tuple(
        build(
            topic_cls,
            name=t.name,
            partitions=tuple(
                build(part_cls, partition_index=p.partition_index, error_code=_ec(e), error_message=msg)
                for p in t.partitions
            ),
        )
        for t in req.body.topics
    )
    return build(
        req.schema.AlterPartitionReassignmentsResponse,
        throttle_time=ZERO,
        allow_replication_factor_change=True,
        error_code=_ec(e),
        error_message=msg,
        responses=responses,
    )


def list_reassignments(req: Request, e: KafkaError, msg: str | None) -> Any:
    return build(
        req.schema.ListPartitionReassignmentsResponse,
        throttle_time=ZERO,
        error_code=_ec(e),
        error_message=msg,
        topics=(),
    )


def alter_quotas(req: Request, e: KafkaError, msg: str | None) -> Any:
    entry_cls, entity_cls = entity(req, "EntryData"), entity(req, "EntityData")
    entries = tuple(
        build(
            entry_cls,
            error_code=_ec(e),
            error_message=msg,
            entity=tuple(build(entity_cls, entity_type=c.entity_type, entity_name=c.entity_name) for c in en.entity),
        )
        for en in req.body.entries
    )
    return build(req.schema.AlterClientQuotasResponse, throttle_time=ZERO, entries=entries)


def alter_scram(req: Request, e: KafkaError, msg: str | None) -> Any:
    cls = entity(req, "AlterUserScramCredentialsResult")
    users: list[str] = []
    for item in (*req.body.deletions, *req.body.upsertions):
        if item.name not in users:
            users.append(item.name)
    results = tuple(build(cls, user=u, error_code=_ec(e), error_message=msg) for u in users)
    return build(req.schema.AlterUserScramCredentialsResponse, throttle_time=ZERO, results=results)


def describe_acls(req: Request, e: KafkaError, msg: str | None) -> Any:
    return build(
        req.schema.DescribeAclsResponse, throttle_time=ZERO, error_code=_ec(e), error_message=msg, resources=()
    )


def describe_quotas(req: Request, e: KafkaError, msg: str | None) -> Any:
    return build(
        req.schema.DescribeClientQuotasResponse, throttle_time=ZERO, error_code=_ec(e), error_message=msg, entries=None
    )


def alter_partition(req: Request, e: KafkaError, _msg: str | None) -> Any:
    return build(req.schema.AlterPartitionResponse, throttle_time=ZERO, error_code=_ec(e), topics=())
