"""The hand-framed Envelope (it sits on every forwarded request's path) is byte-identical to kio's generated
codec, and the response decoder refuses malformed input with one error type."""

from __future__ import annotations

import contextlib
import io

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kio.schema.envelope.v0.request import EnvelopeRequest
from kio.schema.envelope.v0.response import EnvelopeResponse
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i16, i32

from controller.security.principal import KafkaPrincipal, serialize
from controller.wire import envelope

principals = st.builds(KafkaPrincipal, st.sampled_from(["User", "Group"]), st.text(max_size=40), st.booleans())
hosts = st.sampled_from(["127.0.0.1", "10.1.2.3", "::1", "fe80::1"])


def kio_request(correlation: int, client_id: str, inner: bytes, principal: KafkaPrincipal, host: str) -> bytes:
    header_cls = EnvelopeRequest.__header_schema__
    buf = io.BytesIO()
    entity_writer(header_cls)(
        buf,
        header_cls(
            request_api_key=i16(58), request_api_version=i16(0), correlation_id=i32(correlation), client_id=client_id
        ),
    )
    entity_writer(EnvelopeRequest)(
        buf,
        EnvelopeRequest(
            request_data=inner, request_principal=serialize(principal), client_host_address=envelope.address_bytes(host)
        ),
    )
    return buf.getvalue()


def kio_response(correlation: int, error: int, data: bytes | None) -> bytes:
    header_cls = EnvelopeResponse.__header_schema__
    buf = io.BytesIO()
    entity_writer(header_cls)(buf, header_cls(correlation_id=i32(correlation)))
    entity_writer(EnvelopeResponse)(buf, EnvelopeResponse(response_data=data, error_code=ErrorCode(error)))
    return buf.getvalue()


@given(st.integers(0, 2**31 - 1), st.text(max_size=30), st.binary(max_size=300), principals, hosts)
def test_request_is_byte_identical_to_kio(
    correlation: int, client_id: str, inner: bytes, principal: KafkaPrincipal, host: str
) -> None:
    ours = envelope.encode_request(correlation, client_id, inner, principal, host)
    assert ours == kio_request(correlation, client_id, inner, principal, host)
    header, offset = entity_reader(EnvelopeRequest.__header_schema__)(ours, 0)
    body, _ = entity_reader(EnvelopeRequest)(ours, offset)
    assert (header.correlation_id, body.request_data) == (correlation, inner)


@given(st.integers(-(2**31), 2**31 - 1), st.sampled_from([0, 31, 35, 41, 97]), st.none() | st.binary(max_size=300))
def test_response_round_trips_with_kio(correlation: int, error: int, data: bytes | None) -> None:
    ours = envelope.encode_response(correlation, error, data)
    assert ours == kio_response(correlation, error, data)
    assert envelope.decode_response(ours, correlation) == envelope.EnvelopeReply(error, data)


def test_reference_not_controller_body() -> None:
    """reference §4: the NOT_CONTROLLER envelope response body is ``00 0029 00``."""
    assert envelope.encode_response(7, 41, None)[5:] == bytes.fromhex("00002900")


@given(st.binary(max_size=64))
def test_garbage_responses_raise_only_the_decode_error(frame: bytes) -> None:
    with contextlib.suppress(envelope.EnvelopeDecodeError):
        envelope.decode_response(frame, 1)


def test_malformed_responses_are_named() -> None:
    good = envelope.encode_response(5, 0, b"inner")
    with pytest.raises(envelope.EnvelopeDecodeError, match="correlation id 5 != 6"):
        envelope.decode_response(good, 6)
    with pytest.raises(envelope.EnvelopeDecodeError, match="trailing"):
        envelope.decode_response(good + b"\x00", 5)
    with pytest.raises(envelope.EnvelopeDecodeError, match="runs past the end"):
        envelope.decode_response(good[:8], 5)
    with pytest.raises(envelope.EnvelopeDecodeError, match="no header"):
        envelope.decode_response(b"\x00", 5)
