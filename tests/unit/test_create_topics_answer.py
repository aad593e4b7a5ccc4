"""CreateTopics answers with what the controller wrote: the topic id, the partition count and the replication
factor come from the controller's :class:`~controller.active.api.WriteResult`, not from the metadata cache (which
the handler still waits on for leaders, as Kafka's DelayedCreatePartitions does)."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Sequence
from datetime import timedelta
from types import SimpleNamespace

from kio.schema.create_topics.v7.request import CreatableTopic, CreateTopicsRequest
from kio.schema.create_topics.v7.response import CreateTopicsResponse
from kio.schema.types import TopicName
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i16, i32, i32Timedelta

from controller.active.api import CALL_TIMEOUT_S, NewTopic, Result, WriteResult, Written
from controller.security.principal import KafkaPrincipal
from controller.wire.authz import Authz
from controller.wire.codec import parse_request
from controller.wire.dispatch import Dispatcher
from controller.wire.handlers.apis import Apis, NodeView
from controller.wire.handlers.base import kafka_uuid
from controller.wire.server import Connection
from tests.unit.test_topic_handlers import SUPPORTED_HERE, NoCreateOn, StandIn
from zkmodel import errorcodes as E
from zkmodel.uuid import random_uuid

TOPIC_ID = random_uuid()


class Writes(StandIn):
    """Creates every topic with two partitions on broker 1 and 2, and says so."""

    def create_topics(
        self, topics: Sequence[NewTopic], *, validate_only: bool = False, timeout: float = CALL_TIMEOUT_S
    ) -> dict[str, Result]:
        self.created.append([t.name for t in topics])
        return {t.name: WriteResult(E.NONE, None, Written(TOPIC_ID, {0: (1, 2), 1: (2, 1)})) for t in topics}


def _frame(name: str) -> bytes:
    body = CreateTopicsRequest(
        topics=(
            CreatableTopic(
                name=TopicName(name), num_partitions=i32(-1), replication_factor=i16(-1), assignments=(), configs=()
            ),
        ),
        timeout=i32Timedelta.parse(timedelta(seconds=5)),
        validate_only=False,
    )
    header_cls = CreateTopicsRequest.__header_schema__
    buf = io.BytesIO()
    entity_writer(header_cls)(
        buf, header_cls(request_api_key=i16(19), request_api_version=i16(7), correlation_id=i32(1), client_id="cli")
    )
    entity_writer(CreateTopicsRequest)(buf, body)
    return buf.getvalue()


def test_the_answer_is_what_the_controller_wrote_not_what_the_cache_holds() -> None:
    # A cache that never shows the topic, and whose wait succeeds at once: only the controller's answer knows it.
    cache = SimpleNamespace(snapshot=lambda: SimpleNamespace(topics={}, brokers={}), wait_for=lambda p, t: None)
    controller = Writes()
    authz = Authz(NoCreateOn())
    handlers = Apis(NodeView(1, "cluster", cache, controller, 1, 1, authz=authz)).handlers()
    d = Dispatcher(
        handlers,
        SUPPORTED_HERE,
        is_active_controller=lambda: True,
        accept_envelopes=True,
        privileged_listener="INTERNAL",
        authz=authz,
    )
    conn = Connection("INTERNAL", "10.0.0.2", 5555, principal=KafkaPrincipal("User", "broker"))
    frame = _frame("t")
    reply = asyncio.run(d(parse_request(frame, SUPPORTED_HERE), frame, conn))
    assert reply is not None
    _header, offset = entity_reader(CreateTopicsResponse.__header_schema__)(reply, 0)
    response, _ = entity_reader(CreateTopicsResponse)(reply, offset)
    (topic,) = response.topics
    assert (int(topic.error_code), topic.topic_id, topic.num_partitions, topic.replication_factor) == (
        0,
        kafka_uuid(TOPIC_ID),
        2,
        2,
    )


def test_a_write_result_is_its_outcome() -> None:
    written = Written(TOPIC_ID, {0: (1, 2, 3)})
    result = WriteResult(E.NONE, None, written)
    assert result.written is written
    assert result == (E.NONE, None) and result[0] is E.NONE
    error, message = WriteResult(E.INVALID_PARTITIONS, "no")
    assert (error, message) == (E.INVALID_PARTITIONS, "no")
    assert (written.num_partitions, written.replication_factor) == (1, 3)
