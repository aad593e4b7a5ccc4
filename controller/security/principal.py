"""Kafka principals and their forwarding wire form (DefaultKafkaPrincipalBuilder's serialize/deserialize).

Brokers forward admin requests to the controller inside an Envelope whose ``RequestPrincipal`` is these
bytes, so they must match Kafka's exactly: an int16 version (0) followed by the flexible
``DefaultPrincipalData`` v0 struct (compact strings Type and Name, a bool, tagged fields).

Writing uses kio's generated ``DefaultPrincipalData`` (byte-identical to Kafka's, held so by the principal
tests). Reading does not: kio's reader refuses unknown tagged fields (Kafka skips them) and its errors do not
name the field, so the reader here follows Kafka's ByteBufferAccessor, on kio's varint primitive.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from typing import ClassVar

from kio.schema.default_principal_data.v0.data import DefaultPrincipalData
from kio.serial import entity_writer
from kio.serial.errors import BufferUnderflow
from kio.serial.readers import read_unsigned_varint

_VERSION = 0
_MAX_STRING = 0x7FFF  # Kafka's generated code refuses longer strings both ways


class PrincipalSerdeError(ValueError):
    """Bytes that are not a serialized principal (Kafka raises SerializationException or RuntimeException)."""


@dataclass(frozen=True)
class KafkaPrincipal:
    """A principal as Kafka's ``KafkaPrincipal``: equality and hash ignore ``token_authenticated``, as in Java."""

    principal_type: str
    name: str
    token_authenticated: bool = field(default=False, compare=False)

    USER_TYPE: ClassVar[str] = "User"
    ANONYMOUS: ClassVar[KafkaPrincipal]

    def __str__(self) -> str:
        return f"{self.principal_type}:{self.name}"

    @classmethod
    def parse(cls, text: str) -> KafkaPrincipal:
        """Parse ``Type:Name`` (split at the first ``:``), like Kafka's ``SecurityUtils.parseKafkaPrincipal``.

        Stricter than Kafka in one way: an empty type (``":bob"``) is rejected, since no authorizer could match it.
        """
        principal_type, sep, name = text.partition(":")
        if not sep or not principal_type:
            raise ValueError(f"expected a string in format principalType:principalName but got {text}")
        return cls(principal_type, name)


KafkaPrincipal.ANONYMOUS = KafkaPrincipal(KafkaPrincipal.USER_TYPE, "ANONYMOUS")
ANONYMOUS = KafkaPrincipal.ANONYMOUS


_write_principal_data = entity_writer(DefaultPrincipalData)


def _check_string(field_name: str, value: str) -> None:
    """What Kafka's generated writer refuses and kio's does not: unencodable or over-long strings."""
    try:
        raw = value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise PrincipalSerdeError(f"'{field_name}' field is not encodable as UTF-8: {exc.reason}") from None
    if len(raw) > _MAX_STRING:
        raise PrincipalSerdeError(f"'{field_name}' field is too long to be serialized")


def serialize(principal: KafkaPrincipal) -> bytes:
    """Kafka's ``DefaultKafkaPrincipalBuilder.serialize``: version-prefixed ``DefaultPrincipalData``."""
    _check_string("type", principal.principal_type)
    _check_string("name", principal.name)
    out = io.BytesIO()
    out.write(_VERSION.to_bytes(2, "big"))
    _write_principal_data(
        out,
        DefaultPrincipalData(
            type_=principal.principal_type, name=principal.name, token_authenticated=principal.token_authenticated
        ),
    )
    return out.getvalue()


class _Reader:
    """A cursor over the input that fails the way Kafka's ByteBufferAccessor does, as PrincipalSerdeError."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, size: int) -> bytes:
        remaining = len(self.data) - self.pos
        if size < 0 or size > remaining:
            raise PrincipalSerdeError(f"Error reading byte array of {size} byte(s): only {remaining} byte(s) available")
        chunk = self.data[self.pos : self.pos + size]
        self.pos += size
        return chunk

    def byte(self) -> int:
        if self.pos >= len(self.data):
            raise PrincipalSerdeError("Truncated principal data: expected another byte")
        value = self.data[self.pos]
        self.pos += 1
        return value

    def uvarint(self) -> int:
        """An unsigned varint of at most 5 bytes, wrapped to a signed 32-bit int as Java's ByteUtils does."""
        try:
            result, size = read_unsigned_varint(memoryview(self.data), self.pos)
        except BufferUnderflow:
            raise PrincipalSerdeError("Truncated principal data: expected another byte") from None
        except ValueError as exc:  # kio says "Varint is too long, ...", Kafka's own words
            raise PrincipalSerdeError(str(exc)) from None
        self.pos += size
        return result - (1 << 32) if result & 0x80000000 else result

    def compact_string(self, field_name: str) -> str:
        length = self.uvarint() - 1
        if length < 0:
            raise PrincipalSerdeError(f"non-nullable field {field_name} was serialized as null")
        if length > _MAX_STRING:
            raise PrincipalSerdeError(f"string field {field_name} had invalid length {length}")
        raw = self.take(length)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise PrincipalSerdeError(f"string field {field_name} is not valid UTF-8: {exc.reason}") from None


def deserialize(data: bytes) -> KafkaPrincipal:
    """Kafka's ``DefaultKafkaPrincipalBuilder.deserialize``, with every failure raised as PrincipalSerdeError.

    Stricter than Kafka (which decodes bad UTF-8 to U+FFFD and ignores bytes after the struct): a forwarded
    principal is produced by a broker, so anything malformed is corruption worth refusing.
    """
    if len(data) < 2:
        raise PrincipalSerdeError(f"Truncated principal data: {len(data)} byte(s), need a 2-byte version")
    version = int.from_bytes(data[:2], "big", signed=True)
    if version != _VERSION:
        raise PrincipalSerdeError(f"Invalid principal data version {version}")
    reader = _Reader(data)
    reader.pos = 2
    principal_type = reader.compact_string("type")
    name = reader.compact_string("name")
    token_authenticated = reader.byte() != 0  # Java's readByte() != 0: any non-zero byte is true
    for _ in range(_non_negative(reader.uvarint(), "tagged field count")):
        reader.uvarint()  # tag: none are known in v0, so every one is skipped
        reader.take(_non_negative(reader.uvarint(), "tagged field size"))
    if reader.pos != len(data):
        raise PrincipalSerdeError(f"Unexpected {len(data) - reader.pos} trailing byte(s) after principal data")
    return KafkaPrincipal(principal_type, name, token_authenticated)


def _non_negative(value: int, what: str) -> int:
    if value < 0:
        raise PrincipalSerdeError(f"Invalid {what}: {value}")
    return value
