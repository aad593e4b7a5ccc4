"""KIP-590 Envelope (API key 58) framing: what a forwarding broker sends and what the controller answers.

The inner request travels as the client's own header + body bytes, so the controller's inner response
carries the client's correlation id and the broker can relay it untouched.
"""

from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass

from controller.security.principal import KafkaPrincipal, serialize
from controller.wire.framing import FrameError, compact_bytes, read_uvarint, skip_tags
from zkmodel.errorcodes import KafkaError

API_KEY = 58
VERSION = 0
#: Request header v2's fixed part: api key, version, correlation id, client id length.
_HEADER = struct.Struct(">hhih")


@dataclass(frozen=True)
class Outcome:
    """What a forwarding broker tells the client: relay ``response`` (inner header + body), answer ``error``
    for the whole request, close the connection, or handle the request locally (the controller takes no
    envelopes)."""

    response: bytes | None = None
    error: KafkaError | None = None
    close: bool = False
    local: bool = False


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
    """A whole Envelope request (header v2 + body), without the size prefix.

    Hand-framed, since it sits on every forwarded request's path and is three byte strings; a unit test holds
    it byte-identical to kio's encoder."""
    client = client_id.encode()
    return b"".join(
        (
            _HEADER.pack(API_KEY, VERSION, correlation_id, len(client)),
            client,
            b"\x00",  # header v2, no tags
            compact_bytes(inner_frame),
            compact_bytes(serialize(principal)),
            compact_bytes(address_bytes(client_host)),
            b"\x00",  # body, no tagged fields
        )
    )


def encode_response(correlation_id: int, error_code: int, response_data: bytes | None) -> bytes:
    """A whole Envelope response (header v1 + body) without the size prefix; byte-identical to kio's."""
    return b"".join(
        (
            struct.pack(">i", correlation_id),
            b"\x00",
            compact_bytes(response_data),
            struct.pack(">h", error_code),
            b"\x00",
        )
    )


def decode_response(frame: bytes, correlation_id: int) -> EnvelopeReply:
    """Response header v1 (correlation id, tags) and the body (compact nullable ResponseData, ErrorCode, tags)."""
    if len(frame) < 4:
        raise EnvelopeDecodeError(f"Envelope response of {len(frame)} bytes has no header")
    (got,) = struct.unpack_from(">i", frame)
    try:
        offset = skip_tags(frame, 4)
        length, offset = read_uvarint(frame, offset)
        data: bytes | None = None
        if length:
            end = offset + length - 1
            if end > len(frame):
                raise FrameError("ResponseData runs past the end")
            data, offset = frame[offset:end], end
        if offset + 2 > len(frame):
            raise FrameError("no ErrorCode")
        (error_code,) = struct.unpack_from(">h", frame, offset)
        offset = skip_tags(frame, offset + 2)
    except FrameError as exc:
        raise EnvelopeDecodeError(f"Envelope response: {exc}") from None
    if offset != len(frame):
        raise EnvelopeDecodeError(f"Envelope response: {len(frame) - offset} unexpected trailing bytes")
    if got != correlation_id:
        raise EnvelopeDecodeError(f"Envelope response correlation id {got} != {correlation_id}")
    return EnvelopeReply(int(error_code), data)


def inner_correlation_id(frame: bytes) -> int:
    """The correlation id of an inner response (the first four bytes of any response header)."""
    if len(frame) < 4:
        raise EnvelopeDecodeError(f"inner response of {len(frame)} bytes has no header")
    return int(struct.unpack_from(">i", frame)[0])
