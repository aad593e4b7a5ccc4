"""The controller side of KIP-590 (KafkaApis.handleEnvelope / EnvelopeUtils), as pure dispatch logic: the
checks in Kafka's order, the inner request handled as the principal it carries, NOT_CONTROLLER lifted to
the envelope, and a request that came in an envelope never forwarded again."""

from __future__ import annotations

import asyncio
import io
from typing import Any

import pytest
from kio.schema.envelope.v0.response import EnvelopeResponse
from kio.schema.incremental_alter_configs.v1.request import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
)
from kio.schema.incremental_alter_configs.v1.response import IncrementalAlterConfigsResponse
from kio.schema.metadata.v12.request import MetadataRequest
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i8, i16, i32

from controller.security.principal import KafkaPrincipal, serialize
from controller.wire import envelope
from controller.wire.apikeys import SUPPORTED, error_response
from controller.wire.authz import Authz
from controller.wire.codec import Request, parse_request
from controller.wire.dispatch import Dispatcher
from controller.wire.server import Connection
from zkmodel import errorcodes as E
from zkmodel.kafka_acls import AclOperation, ResourceType

SUPPORTED_HERE = {**SUPPORTED, envelope.API_KEY: (0, 0)}
ALICE = KafkaPrincipal("User", "alice")


def frame_of(body: Any, api_key: int, version: int, correlation: int = 7) -> bytes:
    header_cls = type(body).__header_schema__
    buf = io.BytesIO()
    entity_writer(header_cls)(
        buf,
        header_cls(
            request_api_key=i16(api_key),
            request_api_version=i16(version),
            correlation_id=i32(correlation),
            client_id="cli",
        ),
    )
    entity_writer(type(body))(buf, body)
    return buf.getvalue()


def iac_frame(correlation: int = 7) -> bytes:
    body = IncrementalAlterConfigsRequest(
        resources=(
            AlterConfigsResource(
                resource_type=i8(2),
                resource_name="t",
                configs=(AlterableConfig(name="retention.ms", config_operation=i8(0), value="1"),),
            ),
        ),
        validate_only=False,
    )
    return frame_of(body, 44, 1, correlation)


class Recorder:
    """The inner handler: remembers who it ran as and answers ``error`` on every resource."""

    def __init__(self, error: E.KafkaError = E.NONE) -> None:
        self.error = error
        self.calls: list[Connection] = []

    async def __call__(self, req: Request, conn: Connection) -> Any:
        self.calls.append(conn)
        return error_response(req, self.error)


class OnlyBroker:
    """An authorizer where only User:broker has CLUSTER_ACTION."""

    def authorize(self, principal: str, host: str, operation: AclOperation, rtype: ResourceType, name: str) -> bool:
        return principal == "User:broker" or operation is not AclOperation.CLUSTER_ACTION


def dispatcher(
    handler: Recorder, *, active: bool = True, accept: bool = True, authz: Authz | None = None
) -> Dispatcher:
    return Dispatcher(
        {44: handler, 3: handler},
        SUPPORTED_HERE,
        is_active_controller=lambda: active,
        accept_envelopes=accept,
        privileged_listener="INTERNAL",
        authz=authz or Authz(OnlyBroker()),
    )


def send(
    d: Dispatcher,
    inner: bytes,
    *,
    listener: str = "INTERNAL",
    sender: str = "broker",
    principal: bytes | None = None,
    address: bytes = b"\x7f\x00\x00\x01",
) -> EnvelopeResponse | None:
    from kio.schema.envelope.v0.request import EnvelopeRequest

    body = EnvelopeRequest(
        request_data=inner,
        request_principal=serialize(ALICE) if principal is None else principal,
        client_host_address=address,
    )
    frame = frame_of(body, envelope.API_KEY, 0, correlation=99)
    conn = Connection(listener, "10.0.0.2", 5555, principal=KafkaPrincipal("User", sender))
    reply = asyncio.run(d(parse_request(frame, SUPPORTED_HERE), frame, conn))
    if reply is None:
        return None
    header, offset = entity_reader(EnvelopeResponse.__header_schema__)(reply, 0)
    assert header.correlation_id == 99
    response, _ = entity_reader(EnvelopeResponse)(reply, offset)
    return response


def test_the_inner_request_runs_as_the_forwarded_principal_and_its_response_is_relayed() -> None:
    handler = Recorder()
    response = send(dispatcher(handler), iac_frame(correlation=41))
    assert response is not None and response.error_code == 0 and response.response_data is not None
    [conn] = handler.calls
    assert (str(conn.principal), conn.peer_host, conn.from_envelope) == ("User:alice", "127.0.0.1", True)
    header, offset = entity_reader(IncrementalAlterConfigsResponse.__header_schema__)(response.response_data, 0)
    inner, _ = entity_reader(IncrementalAlterConfigsResponse)(response.response_data, offset)
    assert header.correlation_id == 41  # the client's own correlation id, so the broker relays it untouched
    assert [r.resource_name for r in inner.responses] == ["t"]


@pytest.mark.parametrize(
    ("kwargs", "envelope_kwargs", "expected"),
    [
        ({"accept": False}, {}, None),  # forwarding disabled here: close
        ({}, {"listener": "EXTERNAL"}, None),  # not the privileged listener: close
        ({}, {"sender": "mallory"}, E.CLUSTER_AUTHORIZATION_FAILED),
        ({"active": False}, {}, E.NOT_CONTROLLER),
        ({}, {"principal": b"\x00\x01garbage"}, E.PRINCIPAL_DESERIALIZATION_FAILURE),
        ({}, {"address": b"\x01\x02\x03"}, E.INVALID_REQUEST),
    ],
)
def test_envelope_checks_in_kafkas_order(
    kwargs: dict[str, Any], envelope_kwargs: dict[str, Any], expected: E.KafkaError | None
) -> None:
    handler = Recorder()
    response = send(dispatcher(handler, **kwargs), iac_frame(), **envelope_kwargs)
    assert handler.calls == []
    if expected is None:
        assert response is None
    else:
        assert response is not None and (response.error_code, response.response_data) == (expected.code, None)


def test_earlier_checks_win_over_later_ones() -> None:
    """An unauthorized sender to a non-controller hears CLUSTER_AUTHORIZATION_FAILED, not NOT_CONTROLLER."""
    response = send(dispatcher(Recorder(), active=False), iac_frame(), sender="mallory")
    assert response is not None and response.error_code == E.CLUSTER_AUTHORIZATION_FAILED.code


def test_a_non_forwardable_inner_api_is_invalid_and_an_unparseable_one_unsupported() -> None:
    metadata = frame_of(
        MetadataRequest(topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False), 3, 12
    )
    response = send(dispatcher(Recorder()), metadata)
    assert response is not None and response.error_code == E.INVALID_REQUEST.code
    truncated = iac_frame()[:-5]
    response = send(dispatcher(Recorder()), truncated)
    assert response is not None and response.error_code == E.UNSUPPORTED_VERSION.code
    unknown_version = bytearray(iac_frame())
    unknown_version[2:4] = (9).to_bytes(2, "big")
    response = send(dispatcher(Recorder()), bytes(unknown_version))
    assert response is not None and response.error_code == E.UNSUPPORTED_VERSION.code


def test_not_controller_inside_becomes_the_envelope_error() -> None:
    response = send(dispatcher(Recorder(E.NOT_CONTROLLER)), iac_frame())
    assert response is not None and (response.error_code, response.response_data) == (E.NOT_CONTROLLER.code, None)


def test_other_inner_errors_are_relayed_inside_a_successful_envelope() -> None:
    response = send(dispatcher(Recorder(E.TOPIC_AUTHORIZATION_FAILED)), iac_frame())
    assert response is not None and response.error_code == 0 and response.response_data is not None
    _h, offset = entity_reader(IncrementalAlterConfigsResponse.__header_schema__)(response.response_data, 0)
    inner, _ = entity_reader(IncrementalAlterConfigsResponse)(response.response_data, offset)
    assert [r.error_code for r in inner.responses] == [E.TOPIC_AUTHORIZATION_FAILED.code]


def test_a_request_that_came_in_an_envelope_is_never_forwarded_again() -> None:
    class Refuses:
        async def forward(self, *_args: Any) -> Any:
            raise AssertionError("re-forwarded an enveloped request")

    handler = Recorder()
    d = dispatcher(handler, active=True)
    d.forwarder = Refuses()
    d.is_active_controller = lambda: False  # a broker that lost the election mid-request would still not forward
    inner = parse_request(iac_frame(), SUPPORTED_HERE)
    conn = Connection("INTERNAL", "127.0.0.1", 1, from_envelope=True)
    reply = asyncio.run(d(inner, iac_frame(), conn))
    assert reply is not None and len(handler.calls) == 1
