"""The few flexible-version primitives our hand-framed messages need (Envelope, ControlledShutdown v3):
unsigned varints, compact bytes and skipped tagged fields. kio does the rest; these sit on paths where it
either has no schema or costs too much."""

from __future__ import annotations


class FrameError(ValueError):
    """Bytes that cannot be what they claim; callers turn it into their own codec error."""


def uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def compact_bytes(value: bytes | None) -> bytes:
    """COMPACT_NULLABLE_BYTES: length + 1 as a varint (0 = null), then the bytes."""
    return b"\x00" if value is None else uvarint(len(value) + 1) + value


def read_uvarint(data: bytes, offset: int) -> tuple[int, int]:
    """(value, offset after it); at most five bytes, as Kafka's ByteUtils.readUnsignedVarint."""
    value = shift = 0
    while True:
        if offset >= len(data) or shift > 28:
            raise FrameError("truncated or overlong varint")
        byte = data[offset]
        offset += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, offset
        shift += 7


def skip_tags(data: bytes, offset: int) -> int:
    """Skip a tagged-field section (none are known to us); returns the offset after it."""
    count, offset = read_uvarint(data, offset)
    for _ in range(count):
        _tag, offset = read_uvarint(data, offset)
        size, offset = read_uvarint(data, offset)
        offset += size
    if offset > len(data):
        raise FrameError("tagged field runs past the end")
    return offset
