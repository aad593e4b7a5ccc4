"""KIP-590 Envelope (API key 58) framing: what a forwarding broker sends and what the controller answers.

The inner request travels as the client's own header + body bytes, so the controller's inner response
carries the client's correlation id and the broker can relay it untouched.
"""

from __future__ import annotations

import io
import ipaddress
import struct
from dataclasses import dataclass

from kio.schema.envelope.v0.request import EnvelopeRequest
from kio.schema.envelope.v0.response import EnvelopeResponse
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i16, i32

from controller.security.principal import KafkaPrincipal, serialize

API_KEY = 58
VERSION = 0

#: ApiKeys.forwardable in Kafka 3.9 (reference/kafka-zk-facts.md §4).
FORWARDABLE: frozenset[int] = frozenset({19, 20, 30, 31, 33, 37, 38, 39, 40, 43, 44, 45, 46, 49, 51, 55, 57, 64, 67,
                                         80, 81})  # fmt: skip


class EnvelopeDecodeError(ValueError):
    """An envelope response we cannot read: the forwarding broker answers UNKNOWN_SERVER_ERROR."""


@dataclass(frozen=True)
class EnvelopeReply:
    error_code: int
    response_data: bytes | None


def address_bytes(host: str) -> bytes:
    """Java's ``InetAddress.getAddress()``: 4 or 16 raw bytes."""
    return ipaddress.ip_address(host.split("%", 1)[0]).packed


def address_text(data: bytes) -> str:
    """The inverse of :func:`address_bytes`; ValueError unless 4 or 16 bytes."""
    if len(data) not in (4, 16):
        raise ValueError(f"client host address of {len(data)} bytes (expected 4 or 16)")
    return str(ipaddress.ip_address(data))


def encode_request(
    correlation_id: int, client_id: str, inner_frame: bytes, principal: KafkaPrincipal, client_host: str
) -> bytes:
    """A whole Envelope request (header v2 + body), without the size prefix."""
    schema = EnvelopeRequest
    header_cls = schema.__header_schema__
    buf = io.BytesIO()
    entity_writer(header_cls)(
        buf,
        header_cls(request_api_key=i16(API_KEY), request_api_version=i16(VERSION),
                   correlation_id=i32(correlation_id), client_id=client_id),
    )  # fmt: skip
    entity_writer(schema)(
        buf,
        schema(request_data=inner_frame, request_principal=serialize(principal),
               client_host_address=address_bytes(client_host)),
    )  # fmt: skip
    return buf.getvalue()


def decode_response(frame: bytes, correlation_id: int) -> EnvelopeReply:
    schema = EnvelopeResponse
    try:
        header, offset = entity_reader(schema.__header_schema__)(frame, 0)
        body, _ = entity_reader(schema)(frame, offset)
    except Exception as exc:  # kio raises assorted errors on garbage
        raise EnvelopeDecodeError(f"cannot decode an Envelope response: {exc!r}") from None
    if int(header.correlation_id) != correlation_id:
        raise EnvelopeDecodeError(f"Envelope response correlation id {header.correlation_id} != {correlation_id}")
    return EnvelopeReply(int(body.error_code), body.response_data)


def inner_correlation_id(frame: bytes) -> int:
    """The correlation id of an inner response (the first four bytes of any response header)."""
    if len(frame) < 4:
        raise EnvelopeDecodeError(f"inner response of {len(frame)} bytes has no header")
    return int(struct.unpack_from(">i", frame)[0])
