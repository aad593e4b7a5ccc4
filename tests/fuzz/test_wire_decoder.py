"""Fuzzing the wire layer's decoders: whatever bytes arrive, each decoder returns a value or raises its own
error type (which the server turns into a closed connection or an error answer), never anything else, and
never hangs.

* ``codec.parse_request`` (every request frame): arbitrary bytes, valid frames of every served API and
  version (bodies generated from kio's schemas) truncated anywhere, and valid frames with bytes overwritten
  by length-like values (-1, 2^31-1, overlong varints), inserted or deleted.
* The hand-framed decoders: ControlledShutdown (request and response), the Envelope response, the
  forwarded principal.
* The controller side of KIP-590: an Envelope whose inner frame, principal and client address are mutated
  goes through ``Dispatcher`` and comes back as a well-formed Envelope response (or a closed connection).

The unit tests beside the code hold the codecs to Kafka's bytes; these hold the decoders to their one
error type on input nobody would write.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import io
import struct
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kio.index import load_request_schema, load_response_schema
from kio.schema.envelope.v0.request import EnvelopeRequest
from kio.schema.envelope.v0.response import EnvelopeResponse
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i16, i32

from controller.security.principal import KafkaPrincipal, PrincipalSerdeError, deserialize, serialize
from controller.wire import controlled_shutdown, envelope
from controller.wire.apikeys import SUPPORTED, error_response, forwardable
from controller.wire.authz import ALLOW_ALL
from controller.wire.codec import MalformedRequest, Request, UnsupportedApi, parse_request
from controller.wire.dispatch import Dispatcher
from controller.wire.server import Connection
from tests.fuzz.budget import budget, no_hang
from zkmodel import errorcodes as E

pytestmark = pytest.mark.fuzz

#: What a node that takes envelopes serves (the Envelope included).
SERVED = {**SUPPORTED, envelope.API_KEY: (0, 0)}
#: Every (key, version) kio can decode for us; ControlledShutdown has no kio schema (hand-coded, below).
KIO_APIS = [
    (key, version)
    for key, (low, high) in sorted(SERVED.items())
    for version in range(low, high + 1)
    if key != controlled_shutdown.API_KEY
]
INNER_APIS = [(key, version) for key, version in KIO_APIS if forwardable(key)]
#: A decode of at most a few kilobytes that takes this long is a loop, not work.
HANG_S = 10.0

# Values a length, count or size field might be overwritten with: null/-1, zero, the int32 edges, the
# largest unsigned varint Kafka reads (five bytes), an overlong varint, and a lone continuation byte.
LENGTH_LIKE = [
    b"\xff\xff",
    b"\x7f\xff",
    b"\x00\x00",
    b"\xff\xff\xff\xff",
    b"\x7f\xff\xff\xff",
    b"\x80\x00\x00\x00",
    b"\x00\x00\x00\x00",
    b"\xff\xff\xff\xff\x0f",
    b"\x80\x80\x80\x80\x80\x01",
    b"\x80",
    b"\x00",
]


def request_frame(key: int, version: int, body: Any, correlation: int = 7, client_id: str | None = "fuzz") -> bytes:
    """Header + body as a client writes them (no size prefix)."""
    cls = load_request_schema(key, version)
    header_cls = cls.__header_schema__
    header: dict[str, Any] = {
        "request_api_key": i16(key),
        "request_api_version": i16(version),
        "correlation_id": i32(correlation),
    }
    if "client_id" in header_cls.__dataclass_fields__:
        header["client_id"] = client_id
    buf = io.BytesIO()
    entity_writer(header_cls)(buf, header_cls(**header))
    entity_writer(cls)(buf, body)
    return buf.getvalue()


@st.composite
def valid_requests(draw: st.DrawFn, apis: list[tuple[int, int]] = KIO_APIS) -> tuple[int, int, Any, bytes]:
    """(key, version, body, frame) for a body kio's schema allows, any served API."""
    key, version = draw(st.sampled_from(apis), label="api")
    body = draw(st.from_type(load_request_schema(key, version)), label="body")
    correlation = draw(st.integers(-(2**31), 2**31 - 1), label="correlation")
    client_id = draw(st.none() | st.text(max_size=20), label="client_id")
    return key, version, body, request_frame(key, version, body, correlation, client_id)


@st.composite
def mutated(draw: st.DrawFn, data: bytes) -> bytes:
    """``data`` after one to three edits: a window overwritten (by a length-like value or random bytes), bytes
    inserted, or bytes deleted."""
    out = bytearray(data)
    for _ in range(draw(st.integers(1, 3), label="edits")):
        at = draw(st.integers(0, len(out)), label="at")
        kind = draw(st.sampled_from(["overwrite", "insert", "delete"]), label="kind")
        patch = draw(st.sampled_from(LENGTH_LIKE) | st.binary(min_size=1, max_size=6), label="patch")
        if kind == "overwrite":
            out[at : at + len(patch)] = patch
        elif kind == "insert":
            out[at:at] = patch
        else:
            del out[at : at + draw(st.integers(1, 8), label="deleted")]
    return bytes(out)


def decode_or_refuse(frame: bytes) -> Request | None:
    """``parse_request`` returns a request or raises MalformedRequest/UnsupportedApi; None for a refusal."""
    with no_hang(HANG_S, "parse_request"):
        try:
            request = parse_request(frame, SERVED)
        except (MalformedRequest, UnsupportedApi):
            return None
    key, version, correlation = struct.unpack_from(">hhi", frame)
    assert (request.api_key, request.api_version, request.correlation_id) == (key, version, correlation)
    assert request.size == len(frame)
    return request


# --- parse_request ----------------------------------------------------------------------------------------------


@budget(300)
@given(frame=st.binary(max_size=600))
def test_arbitrary_bytes(frame: bytes) -> None:
    decode_or_refuse(frame)


@budget(300)
@given(
    api=st.sampled_from(KIO_APIS),
    correlation=st.integers(-(2**31), 2**31 - 1),
    rest=st.binary(max_size=400),
)
def test_a_served_api_header_then_arbitrary_bytes(api: tuple[int, int], correlation: int, rest: bytes) -> None:
    decode_or_refuse(struct.pack(">hhi", *api, correlation) + rest)


@budget(150)
@given(request=valid_requests(), data=st.data())
def test_valid_frames_decode_and_every_truncation_is_refused(
    request: tuple[int, int, Any, bytes], data: st.DataObject
) -> None:
    _key, _version, body, frame = request
    decoded = decode_or_refuse(frame)
    assert decoded is not None and decoded.body == body  # the generator makes frames the decoder takes
    cut = data.draw(st.integers(0, len(frame) - 1), label="cut")
    with pytest.raises(MalformedRequest):
        parse_request(frame[:cut], SERVED)


@budget(500)
@given(request=valid_requests(), data=st.data())
def test_mutated_valid_frames_decode_or_are_refused(request: tuple[int, int, Any, bytes], data: st.DataObject) -> None:
    decode_or_refuse(data.draw(mutated(request[3]), label="frame"))


# --- regressions: what these properties found -------------------------------------------------------------------

V2_HEADER = struct.pack(">hhih", 19, 7, 1, 4) + b"fuzz" + b"\x00"  # CreateTopics v7, request header v2


def test_a_count_beyond_the_frame_is_refused_before_kio_reserves_room_for_it() -> None:
    # A compact count of 2^32 - 2 made kio ask for 32 GiB and the process abort ("memory allocation of
    # 34359738352 bytes failed"); tests/fuzz/test_wire_node.py sends those to a node. A count whose
    # reservation would succeed shows the refusal here without risking this process.
    with pytest.raises(MalformedRequest, match="array 'topics' at byte 15 claims 1048576 elements with 9 bytes left"):
        parse_request(V2_HEADER + b"\x81\x80\x40" + b"\x00" * 9, SERVED)


@pytest.mark.parametrize(
    "frame",
    [
        pytest.param(struct.pack(">hhih", 19, 2, 1, 0) + struct.pack(">ii", -1, 1000) + b"\x00", id="legacy"),
        pytest.param(V2_HEADER + b"\x00" + struct.pack(">i", 1000) + b"\x00\x00", id="compact"),
        pytest.param(struct.pack(">hhih", 3, 0, 1, 0) + struct.pack(">i", -1), id="metadata-v0"),
    ],
)
def test_a_null_where_the_schema_has_none_is_malformed(frame: bytes) -> None:
    # kio read it as None and the handlers iterated it (TypeError, logged as unexpected, connection closed).
    with pytest.raises(MalformedRequest, match="non-nullable field topics was serialized as null"):
        parse_request(frame, SERVED)


def test_a_null_where_the_schema_allows_it_still_decodes() -> None:
    request = parse_request(struct.pack(">hhih", 3, 1, 1, 0) + struct.pack(">i", -1), SERVED)
    assert request.body.topics is None  # Metadata v1+: all topics


# --- the hand-framed decoders -------------------------------------------------------------------------------------


def _shutdown_request() -> st.SearchStrategy[bytes]:
    return st.builds(
        controlled_shutdown.encode_request,
        st.integers(-(2**31), 2**31 - 1),
        st.text(max_size=20),
        st.integers(-(2**31), 2**31 - 1),
        st.integers(-(2**63), 2**63 - 1),
    )


def _shutdown_response() -> st.SearchStrategy[bytes]:
    from zkmodel.admin import TopicPartition

    partitions = st.lists(st.builds(TopicPartition, st.text(max_size=20), st.integers(0, 2**31 - 1)), max_size=5)
    return st.builds(
        controlled_shutdown.encode_response, st.integers(-(2**31), 2**31 - 1), st.integers(-1, 120), partitions
    )


@budget(300)
@given(data=st.data())
def test_controlled_shutdown_decoders(data: st.DataObject) -> None:
    request = data.draw(_shutdown_request(), label="request")
    response = data.draw(_shutdown_response(), label="response")
    assert controlled_shutdown.decode_request(request)[0] == struct.unpack_from(">i", request, 4)[0]
    assert controlled_shutdown.decode_response(response)[0] == struct.unpack_from(">i", response)[0]
    for decode, valid in (
        (controlled_shutdown.decode_request, request),
        (controlled_shutdown.decode_response, response),
    ):
        bad = data.draw(st.binary(max_size=80) | mutated(valid) | st.just(valid[: len(valid) // 2]), label="bad")
        with no_hang(HANG_S, decode.__name__), contextlib.suppress(controlled_shutdown.ShutdownCodecError):
            decode(bad)


@budget(300)
@given(
    correlation=st.integers(-(2**31), 2**31 - 1),
    error=st.integers(-1, 120),
    inner=st.none() | st.binary(max_size=200),
    data=st.data(),
)
def test_envelope_response_decoder(correlation: int, error: int, inner: bytes | None, data: st.DataObject) -> None:
    frame = envelope.encode_response(correlation, error, inner)
    assert envelope.decode_response(frame, correlation) == envelope.EnvelopeReply(error, inner)
    bad = data.draw(mutated(frame), label="bad")
    with no_hang(HANG_S, "decode_response"):
        try:
            reply = envelope.decode_response(bad, correlation)
        except envelope.EnvelopeDecodeError:
            return
    assert reply.response_data is None or len(reply.response_data) <= len(bad)


PRINCIPALS = st.builds(KafkaPrincipal, st.sampled_from(["User", "Group"]), st.text(max_size=30), st.booleans())


@budget(300)
@given(principal=PRINCIPALS, data=st.data())
def test_principal_deserializer(principal: KafkaPrincipal, data: st.DataObject) -> None:
    raw = serialize(principal)
    assert deserialize(raw) == principal
    bad = data.draw(mutated(raw) | st.binary(max_size=60), label="bad")
    with no_hang(HANG_S, "deserialize"), contextlib.suppress(PrincipalSerdeError):
        deserialize(bad)


# --- the controller side of KIP-590 -------------------------------------------------------------------------------


class AnswerEverything:
    """The inner handler: answers any request with its whole-request response (no error)."""

    async def __call__(self, req: Request, conn: Connection) -> Any:
        return error_response(req, E.NONE)


def controller_dispatcher() -> Dispatcher:
    handler = AnswerEverything()
    handlers: dict[int, Any] = {key: handler for key, _version in INNER_APIS}
    return Dispatcher(
        handlers,
        SERVED,
        is_active_controller=lambda: True,
        accept_envelopes=True,
        privileged_listener="INTERNAL",
        authz=ALLOW_ALL,
    )


@st.composite
def envelopes(draw: st.DrawFn) -> tuple[bytes, bytes, bytes]:
    """(inner frame, principal, client address) for an Envelope, each valid or mutated."""
    _key, _version, _body, inner = draw(valid_requests(INNER_APIS), label="inner")
    principal = serialize(draw(PRINCIPALS, label="principal"))
    address = envelope.address_bytes(draw(st.sampled_from(["127.0.0.1", "::1", "10.0.0.9"]), label="host"))
    which = draw(st.sets(st.sampled_from(["inner", "principal", "address"]), max_size=3), label="mutate")
    if "inner" in which:
        inner = draw(mutated(inner) | st.binary(max_size=40), label="bad inner")
    if "principal" in which:
        principal = draw(mutated(principal) | st.binary(max_size=20), label="bad principal")
    if "address" in which:
        address = draw(st.binary(max_size=20), label="bad address")
    return inner, principal, address


@budget(200)
@given(parts=envelopes())
def test_envelopes_with_mutated_contents_get_an_envelope_answer(parts: tuple[bytes, bytes, bytes]) -> None:
    inner, principal, address = parts
    body = EnvelopeRequest(request_data=inner, request_principal=principal, client_host_address=address)
    frame = request_frame(envelope.API_KEY, 0, body, correlation=99)
    conn = Connection("INTERNAL", "10.0.0.2", 5555, principal=KafkaPrincipal("User", "broker"))
    with no_hang(HANG_S, "the Envelope dispatch"):
        reply = asyncio.run(controller_dispatcher()(parse_request(frame, SERVED), frame, conn))
    assert reply is not None  # a privileged listener on the active controller always answers
    header, offset = entity_reader(EnvelopeResponse.__header_schema__)(reply, 0)
    assert header.correlation_id == 99
    response, size = entity_reader(EnvelopeResponse)(reply, offset)  # kio returns what it read, not where it ended
    assert offset + size == len(reply)
    if response.error_code != 0:
        assert response.response_data is None
        return
    # Accepted: the inner request parsed as it stands, and the relayed answer is that API's response to it.
    parsed = parse_request(inner, SERVED)
    schema = load_response_schema(parsed.api_key, parsed.api_version)
    relayed = response.response_data
    assert relayed is not None
    inner_header, inner_offset = entity_reader(schema.__header_schema__)(relayed, 0)
    assert inner_header.correlation_id == parsed.correlation_id
    entity_reader(schema)(relayed, inner_offset)
    assert Dispatcher._relay(parsed, relayed, []) == relayed  # the forwarding broker passes it on as it is


def test_a_relayed_response_with_a_count_beyond_its_bytes_becomes_an_error(caplog: pytest.LogCaptureFixture) -> None:
    # The forwarding broker parses the controller's inner response with kio too: a compact count of 2^32 - 2
    # there aborted the broker's process. (2^20 here: refused just the same, and safe to try without the check.)
    from kio.schema.create_topics.v7.request import CreatableTopic, CreateTopicsRequest
    from kio.schema.create_topics.v7.response import CreateTopicsResponse
    from kio.schema.types import TopicName
    from kio.static.primitive import i32Timedelta

    topic = CreatableTopic(
        name=TopicName("t"), num_partitions=i32(1), replication_factor=i16(1), assignments=(), configs=()
    )
    timeout = i32Timedelta.parse(datetime.timedelta(seconds=1))
    request = parse_request(request_frame(19, 7, CreateTopicsRequest(topics=(topic,), timeout=timeout)), SERVED)
    inner = struct.pack(">i", 7) + b"\x00" + struct.pack(">i", 0) + b"\x81\x80\x40" + b"\x00" * 8
    errors: list[int] = []
    relayed = Dispatcher._relay(request, inner, errors)
    assert errors == [E.UNKNOWN_SERVER_ERROR.code]  # the client gets an answer to its request, with the error
    _header, offset = entity_reader(CreateTopicsResponse.__header_schema__)(relayed, 0)
    response, _size = entity_reader(CreateTopicsResponse)(relayed, offset)
    assert response.topics[0].error_code == E.UNKNOWN_SERVER_ERROR.code
    assert "array 'topics' at byte 9 claims 1048576 elements with 8 bytes left" in caplog.text
