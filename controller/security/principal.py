"""Kafka principals and their forwarding wire form (DefaultKafkaPrincipalBuilder's serialize/deserialize).

Brokers forward admin requests to the controller inside an Envelope whose ``RequestPrincipal`` is these
bytes, so they must match Kafka's exactly: an int16 version (0) followed by the flexible
``DefaultPrincipalData`` v0 struct (compact strings Type and Name, a bool, tagged fields). The codec is
written out here rather than taken from a protocol library so this module stays dependency-free.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

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


def _write_uvarint(out: bytearray, value: int) -> None:
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def _write_compact_string(out: bytearray, field_name: str, value: str) -> None:
    try:
        raw = value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise PrincipalSerdeError(f"'{field_name}' field is not encodable as UTF-8: {exc.reason}") from None
    if len(raw) > _MAX_STRING:
        raise PrincipalSerdeError(f"'{field_name}' field is too long to be serialized")
    _write_uvarint(out, len(raw) + 1)
    out += raw


def serialize(principal: KafkaPrincipal) -> bytes:
    """Kafka's ``DefaultKafkaPrincipalBuilder.serialize``: version-prefixed ``DefaultPrincipalData``."""
    out = bytearray(_VERSION.to_bytes(2, "big"))
    _write_compact_string(out, "type", principal.principal_type)
    _write_compact_string(out, "name", principal.name)
    out.append(1 if principal.token_authenticated else 0)
    out.append(0)  # no tagged fields
    return bytes(out)


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
        result = 0
        for shift in range(0, 35, 7):
            b = self.byte()
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                result &= 0xFFFFFFFF
                return result - (1 << 32) if result & 0x80000000 else result
        raise PrincipalSerdeError("Varint is too long, the most significant bit in the 5th byte is set")

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
