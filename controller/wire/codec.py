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
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i32

from controller.wire.arrays import check_arrays

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


def encode_body(request: Request, response: Any) -> bytes:
    """The response body alone: cacheable, since only the header carries the correlation id."""
    buf = io.BytesIO()
    entity_writer(load_response_schema(request.api_key, request.api_version))(buf, response)
    return buf.getvalue()


def encode_response(request: Request, response: Any) -> bytes:
    """Header + body; a handler may return an already encoded body (``bytes``)."""
    schema = load_response_schema(request.api_key, request.api_version)
    buf = io.BytesIO()
    entity_writer(schema.__header_schema__)(buf, schema.__header_schema__(correlation_id=i32(request.correlation_id)))
    if isinstance(response, bytes):
        buf.write(response)
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
