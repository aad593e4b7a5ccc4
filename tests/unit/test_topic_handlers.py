"""CreateTopics on the wire against a stand-in :class:`~controller.active.api.ControllerApi`: the handler's own
answers (a name given twice, before authorization, as KafkaApis.handleCreateTopicsRequest gives them) and
"am I the controller?" asked once per request, by the dispatcher, with the handler following its answer."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Collection, Mapping, Sequence
from datetime import timedelta
from types import SimpleNamespace

import pytest
from kio.schema.create_topics.v5.request import CreatableTopic, CreateTopicsRequest
from kio.schema.create_topics.v5.response import CreateTopicsResponse
from kio.schema.envelope.v0.request import EnvelopeRequest
from kio.schema.envelope.v0.response import EnvelopeResponse
from kio.schema.types import TopicName
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i16, i32, i32Timedelta

from controller.active.api import CALL_TIMEOUT_S, ControllerApi, IsrResult, IsrUpdate, NewTopic, Result
from controller.security.principal import KafkaPrincipal, serialize
from controller.wire import envelope
from controller.wire.apikeys import SUPPORTED
from controller.wire.authz import Authz
from controller.wire.codec import parse_request
from controller.wire.dispatch import Dispatcher
from controller.wire.handlers.apis import Apis, NodeView
from controller.wire.server import Connection
from zkmodel import errorcodes as E
from zkmodel.admin import TopicPartition
from zkmodel.errorcodes import KafkaError
from zkmodel.kafka_acls import AclOperation, ResourceType
from zkmodel.reassignment import ReplicaAssignment

SUPPORTED_HERE = {**SUPPORTED, envelope.API_KEY: (0, 0)}


class StandIn:
    """A controller that counts how often it is asked whether it is active and records what it is asked to
    create; it creates everything."""

    def __init__(self, active: bool = True) -> None:
        self.active = active
        self.asked = 0
        self.created: list[list[str]] = []

    @property
    def is_active(self) -> bool:
        self.asked += 1
        return self.active

    def create_topics(
        self, topics: Sequence[NewTopic], *, validate_only: bool = False, timeout: float = CALL_TIMEOUT_S
    ) -> dict[str, Result]:
        self.created.append([t.name for t in topics])
        return {t.name: (E.NONE, None) for t in topics}

    def delete_topics(self, names: Sequence[str], *, timeout: float = CALL_TIMEOUT_S) -> dict[str, Result]:
        raise NotImplementedError

    def create_partitions(
        self,
        requests: Mapping[str, tuple[int, Sequence[Sequence[int]] | None]],
        *,
        validate_only: bool = False,
        timeout: float = CALL_TIMEOUT_S,
    ) -> dict[str, Result]:
        raise NotImplementedError

    def alter_partition_reassignments(
        self, requests: Mapping[TopicPartition, Sequence[int] | None], *, timeout: float = CALL_TIMEOUT_S
    ) -> dict[TopicPartition, Result]:
        raise NotImplementedError

    def list_partition_reassignments(
        self, partitions: Collection[TopicPartition] | None = None
    ) -> dict[TopicPartition, ReplicaAssignment]:
        raise NotImplementedError

    def elect_leaders(
        self,
        election_type: int,
        partitions: Collection[TopicPartition] | None = None,
        *,
        timeout: float = CALL_TIMEOUT_S,
    ) -> dict[TopicPartition, Result]:
        raise NotImplementedError

    def alter_partition_by_id(
        self, broker_id: int, broker_epoch: int, updates: Mapping[tuple[str, int], IsrUpdate], *, version: int = 2
    ) -> tuple[KafkaError, dict[tuple[str, int], IsrResult]]:
        raise NotImplementedError

    def controlled_shutdown(self, broker_id: int, broker_epoch: int) -> tuple[KafkaError, list[TopicPartition]]:
        raise NotImplementedError


class NoCreateOn:
    """An authorizer that refuses CREATE on the named topics (and on the cluster), allows everything else."""

    def __init__(self, *refused: str) -> None:
        self.refused = refused

    def authorize(self, principal: str, host: str, operation: AclOperation, rtype: ResourceType, name: str) -> bool:
        if operation is AclOperation.CREATE:
            return rtype is ResourceType.TOPIC and name not in self.refused
        return True


def view(controller: ControllerApi | None, authz: Authz) -> NodeView:
    cache = SimpleNamespace(snapshot=lambda: SimpleNamespace(topics={}, brokers={}), wait_for=lambda p, t: None)
    return NodeView(1, "cluster", cache, controller, 1, 1, authz=authz)


def create_frame(*names: str, correlation: int = 7) -> bytes:
    body = CreateTopicsRequest(
        topics=tuple(
            CreatableTopic(
                name=TopicName(n), num_partitions=i32(1), replication_factor=i16(1), assignments=(), configs=()
            )
            for n in names
        ),
        timeout=i32Timedelta.parse(timedelta(seconds=5)),
        validate_only=True,  # nothing to wait for in the metadata cache
    )
    header_cls = CreateTopicsRequest.__header_schema__
    buf = io.BytesIO()
    entity_writer(header_cls)(
        buf,
        header_cls(
            request_api_key=i16(19), request_api_version=i16(5), correlation_id=i32(correlation), client_id="cli"
        ),
    )
    entity_writer(CreateTopicsRequest)(buf, body)
    return buf.getvalue()


def answers(reply: bytes | None) -> list[tuple[str, int, str | None]]:
    assert reply is not None
    _header, offset = entity_reader(CreateTopicsResponse.__header_schema__)(reply, 0)
    response, _ = entity_reader(CreateTopicsResponse)(reply, offset)
    return [(t.name, int(t.error_code), t.error_message) for t in response.topics]


def dispatch(controller: StandIn | None, frame: bytes, *, authz: Authz | None = None) -> bytes | None:
    authz = authz or Authz(NoCreateOn())
    handlers = Apis(view(controller, authz)).handlers()
    d = Dispatcher(
        handlers,
        SUPPORTED_HERE,
        is_active_controller=lambda: controller is not None and controller.is_active,
        accept_envelopes=True,
        privileged_listener="INTERNAL",
        authz=authz,
    )
    conn = Connection("INTERNAL", "10.0.0.2", 5555, principal=KafkaPrincipal("User", "broker"))
    return asyncio.run(d(parse_request(frame, SUPPORTED_HERE), frame, conn))


DUPLICATE = (E.INVALID_REQUEST.code, "Found multiple entries for this topic.")


def test_a_name_given_twice_is_answered_by_the_handler_before_authorization_and_never_reaches_the_controller() -> None:
    controller = StandIn()
    reply = dispatch(
        controller,
        create_frame("a", "dup", "secret", "dup", "secret2", "secret2"),
        authz=Authz(NoCreateOn("secret", "secret2")),
    )
    assert answers(reply) == [
        ("a", 0, None),
        ("dup", *DUPLICATE),
        ("secret", E.TOPIC_AUTHORIZATION_FAILED.code, "Authorization failed."),
        ("dup", *DUPLICATE),
        ("secret2", *DUPLICATE),  # INVALID_REQUEST before TOPIC_AUTHORIZATION_FAILED, as in KafkaApis
        ("secret2", *DUPLICATE),
    ]
    assert controller.created == [["a"]]


def test_not_the_controller_comes_before_a_name_given_twice() -> None:
    controller = StandIn(active=False)
    assert answers(dispatch(controller, create_frame("a", "a"))) == [("a", E.NOT_CONTROLLER.code, None)] * 2
    assert controller.created == []


@pytest.mark.parametrize("active", [True, False])
def test_a_forwardable_request_asks_whether_this_node_is_the_controller_once(active: bool) -> None:
    controller = StandIn(active=active)
    reply = dispatch(controller, create_frame("a", "b"))
    expected = (0, None) if active else (E.NOT_CONTROLLER.code, None)
    assert answers(reply) == [("a", *expected), ("b", *expected)]
    assert controller.asked == 1


def test_an_envelope_asks_once_and_its_inner_request_follows_that_answer() -> None:
    controller = StandIn()
    inner = create_frame("a", correlation=41)
    body = EnvelopeRequest(
        request_data=inner,
        request_principal=serialize(KafkaPrincipal("User", "alice")),
        client_host_address=b"\x7f\x00\x00\x01",
    )
    buf = io.BytesIO()
    header_cls = EnvelopeRequest.__header_schema__
    entity_writer(header_cls)(
        buf,
        header_cls(
            request_api_key=i16(envelope.API_KEY),
            request_api_version=i16(0),
            correlation_id=i32(99),
            client_id="broker",
        ),
    )
    entity_writer(EnvelopeRequest)(buf, body)
    reply = dispatch(controller, buf.getvalue())
    assert reply is not None
    _header, offset = entity_reader(EnvelopeResponse.__header_schema__)(reply, 0)
    response, _ = entity_reader(EnvelopeResponse)(reply, offset)
    assert response.error_code == 0 and response.response_data is not None
    assert answers(response.response_data) == [("a", 0, None)]
    assert controller.asked == 1 and controller.created == [["a"]]


def test_a_handler_called_without_a_dispatcher_asks_the_controller_itself() -> None:
    controller = StandIn()
    frame = create_frame("a")
    handler = Apis(view(controller, Authz(NoCreateOn()))).handlers()[19]
    conn = Connection("INTERNAL", "10.0.0.2", 5555)

    async def handle() -> CreateTopicsResponse:
        response: CreateTopicsResponse = await handler(parse_request(frame, SUPPORTED_HERE), conn)
        return response

    assert [(t.name, int(t.error_code)) for t in asyncio.run(handle()).topics] == [("a", 0)]
    assert controller.asked == 1
