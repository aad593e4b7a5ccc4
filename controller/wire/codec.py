"""Request parsing and response encoding with kio, version-agnostic for handlers.

kio has one generated class per API version; handlers build responses through ``build`` so one handler
serves every version (fields a version lacks are dropped, as Kafka's generated code does).
"""

from __future__ import annotations

import dataclasses
import functools
import io
import struct
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any, NamedTuple

from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i32

from controller.wire.arrays import check_arrays
from controller.wire.framing import uvarint

API_VERSIONS = 18
_PEEK = struct.Struct(">hhi")


class MalformedRequest(Exception):
    """The frame cannot be a Kafka request: the connection is closed (Kafka's InvalidRequestException)."""


class UnsupportedApi(Exception):
    """A key or version we do not serve; Kafka closes the connection for these (except ApiVersions)."""

    def __init__(self, api_key: int, api_version: int, correlation_id: int) -> None:
        super().__init__(f"unsupported API key {api_key} version {api_version}")
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id


@dataclass(frozen=True)
class Request:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    header: Any
    body: Any
    size: int

    @property
    def schema(self) -> ModuleType:
        """The module of this version's response classes (nested entity classes live there)."""
        return sys.modules[load_response_schema(self.api_key, self.api_version).__module__]


def peek(frame: bytes) -> tuple[int, int, int]:
    if len(frame) < _PEEK.size:
        raise MalformedRequest(f"request of {len(frame)} bytes is shorter than a request header")
    key, version, correlation = _PEEK.unpack_from(frame)
    return int(key), int(version), int(correlation)


def parse_request(frame: bytes, supported: dict[int, tuple[int, int]]) -> Request:
    """Decode header and body. Trailing bytes after the body are tolerated: librdkafka's Metadata v9+
    'all topics' request carries three (confluentinc/librdkafka#5049) and real brokers accept it. Arrays are
    checked first (:mod:`controller.wire.arrays`): a count beyond the frame, or a null where the schema has
    none, is malformed."""
    key, version, correlation = peek(frame)
    span = supported.get(key)
    if span is None or not span[0] <= version <= span[1]:
        raise UnsupportedApi(key, version, correlation)
    try:
        schema = load_request_schema(key, version)
        header, offset = entity_reader(schema.__header_schema__)(frame, 0)
        check_arrays(schema, frame, offset)  # before kio: it allocates for a compact array's count at once
        body, _end = entity_reader(schema)(frame, offset)
    except Exception as exc:  # kio raises ValueError/KeyError/struct errors on malformed input
        raise MalformedRequest(f"cannot decode API {key} v{version}: {exc!r}") from None
    return Request(key, version, correlation, getattr(header, "client_id", None), header, body, len(frame))


@functools.cache
def _field_names(cls: type) -> frozenset[str]:
    """A kio entity's field names, read once per class: ``dataclasses.fields`` per built entity was a tenth of
    the node's time answering a 30,000-partition AlterPartitionReassignments (py-spy, bench.bulk_writes)."""
    return frozenset(f.name for f in dataclasses.fields(cls))


def build(cls: type, **values: Any) -> Any:
    """Construct a kio entity, dropping fields this version does not have."""
    names = _field_names(cls)
    if names.issuperset(values):
        return cls(**values)
    return cls(**{k: v for k, v in values.items() if k in names})


def entity(request: Request, name: str) -> type:
    cls: type = getattr(request.schema, name)
    return cls


class Encoded(NamedTuple):
    """A response body its handler encoded, with the non-zero error codes in it: the request metrics and the
    envelope's NOT_CONTROLLER check read them (a plain ``bytes`` body, a cached one, counts none)."""

    body: bytes
    errors: list[int]


#: How kio ends a flexible entity whose last inline field is an empty compact array and whose tagged fields are
#: all unset: the array's length + 1 (one byte, 1), then the count of tagged fields (0).
_EMPTY_ARRAY_TAIL = b"\x01\x00"


def encode_entity(cls: type, value: Any) -> bytes:
    """One kio entity's encoding (an element of an array, or a body without its header)."""
    buf = io.BytesIO()
    entity_writer(cls)(buf, value)
    return buf.getvalue()


def spliced(empty: bytes, items: Sequence[bytes]) -> bytes:
    """The encoding of a flexible entity whose last inline field is a compact array holding ``items`` (each an
    element's encoding), from ``empty``: kio's encoding of the same entity with that array empty.

    Why: kio writes every element of an array field by field, with a tag buffer each; a 100,000-partition
    answer holds ten distinct partition entries, so they are encoded once each and joined (the answer took
    0.8 s of the node's interpreter). The layout is Kafka's for flexible versions (KIP-482): the array's
    length + 1 as an unsigned varint, the elements, then the entity's tagged fields."""
    if not empty.endswith(_EMPTY_ARRAY_TAIL):
        raise ValueError("not a flexible entity ending in an empty compact array with no tagged fields")
    return b"".join((empty[: -len(_EMPTY_ARRAY_TAIL)], uvarint(len(items) + 1), *items, b"\x00"))


def encode_body(request: Request, response: Any) -> bytes:
    """The response body alone: cacheable, since only the header carries the correlation id."""
    return encode_entity(load_response_schema(request.api_key, request.api_version), response)


def encode_response(request: Request, response: Any) -> bytes:
    """Header + body; a handler may return an already encoded body (``bytes`` or :class:`Encoded`)."""
    schema = load_response_schema(request.api_key, request.api_version)
    buf = io.BytesIO()
    entity_writer(schema.__header_schema__)(buf, schema.__header_schema__(correlation_id=i32(request.correlation_id)))
    if isinstance(response, bytes):
        buf.write(response)
    elif isinstance(response, Encoded):
        buf.write(response.body)
    else:
        entity_writer(schema)(buf, response)
    return buf.getvalue()


def api_versions_fallback(correlation_id: int, supported: dict[int, tuple[int, int]]) -> bytes:
    """ApiVersions asked at a version we do not know: a v0 body with UNSUPPORTED_VERSION (35) and our key
    list, under response header v0, so the client retries at a version we serve (KIP-511)."""
    out = io.BytesIO()
    out.write(struct.pack(">i", correlation_id))
    out.write(struct.pack(">h", 35))
    keys = sorted(supported.items())
    out.write(struct.pack(">i", len(keys)))
    for key, (low, high) in keys:
        out.write(struct.pack(">hhh", key, low, high))
    return out.getvalue()
