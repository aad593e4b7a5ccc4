"""A request's arrays checked before kio decodes it: every count must fit the bytes left, and an array the
schema does not allow to be null must not be.

* kio's native reader reserves room for a compact array's elements as soon as it has read the count, a
  varint of up to 2^32 - 1: a 28-byte CreateTopics v7 frame claiming four billion topics makes it ask for
  32 GiB, and the failed allocation aborts the whole process (Rust's out-of-memory handler), with no
  exception anyone could catch. Kafka's readers refuse a count larger than the bytes left (every element
  takes at least one byte); so does this walk.
* kio reads a null array (count -1, or 0 in a compact one) as None even where the schema has no null, and
  handlers iterate it: Kafka refuses such a request ("non-nullable field topics was serialized as null").

The walk reads lengths and counts only, as the schema lays them out, and raises :class:`FrameError` at the
first bad array; :func:`controller.wire.codec.parse_request` then refuses the frame like any malformed one.
Each schema is compiled once into steps, and the walk stops after the last array it has to check: a
Metadata request's topic list is one count, however many topics follow.
"""

from __future__ import annotations

import dataclasses
import functools
import struct
from collections.abc import Callable
from typing import Any, Final

from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveTupleField,
    classify_field,
    get_field_tag,
    get_schema_field_type,
    is_optional,
)

from controller.wire.framing import FrameError, read_uvarint

#: Reads one value at ``pos`` of ``data`` (checking the arrays inside it) and returns the position after
#: it, or DONE when nothing after it needs checking.
Step = Callable[[bytes, int], int]
DONE: Final = -1

_FIXED = {
    "bool": 1,
    "int8": 1,
    "uint8": 1,
    "int16": 2,
    "uint16": 2,
    "error_code": 2,
    "int32": 4,
    "uint32": 4,
    "timedelta_i32": 4,
    "int64": 8,
    "uint64": 8,
    "float64": 8,
    "timedelta_i64": 8,
    "datetime_i64": 8,
    "uuid": 16,
}
_INT8, _INT16, _INT32 = struct.Struct(">b"), struct.Struct(">h"), struct.Struct(">i")


def check_arrays(schema: type, data: bytes, offset: int) -> None:
    """Raise FrameError if an array of the ``schema`` entity at ``offset`` claims more elements than ``data``
    has bytes left, or is null where the schema does not allow it (or the frame ends inside a length)."""
    step = _entity(schema, tail=True)
    if step is not None:
        step(data, offset)


# -- what a schema holds ----------------------------------------------------------------------------------------


def _holds_array(field: dataclasses.Field[Any]) -> bool:
    kind = classify_field(field)
    if isinstance(kind, EntityTupleField | PrimitiveTupleField):
        return True
    return isinstance(kind, EntityField) and _entity_holds_array(kind.type_)


@functools.cache
def _entity_holds_array(schema: type) -> bool:
    return any(_holds_array(f) for f in dataclasses.fields(schema))


# -- steps --------------------------------------------------------------------------------------------------------


def _fixed_int(layout: struct.Struct, data: bytes, pos: int, what: str) -> int:
    if pos + layout.size > len(data):
        raise FrameError(f"the frame ends inside {what}")
    value: int = layout.unpack_from(data, pos)[0]
    return value


def _skip(size: int) -> Step:
    def skip(_data: bytes, pos: int) -> int:
        return pos + size

    return skip


def _compact_bytes(data: bytes, pos: int) -> int:
    """COMPACT_(NULLABLE_)STRING / BYTES: length + 1 as a varint (0 = null). kio checks the length itself."""
    length, pos = read_uvarint(data, pos)
    return pos + max(length - 1, 0)


def _legacy_bytes(layout: struct.Struct) -> Step:
    """(NULLABLE_)STRING (int16 length) or BYTES (int32 length), -1 for null."""

    def skip(data: bytes, pos: int) -> int:
        return pos + layout.size + max(_fixed_int(layout, data, pos, "a length"), 0)

    return skip


def _primitive(kafka_type: str, flexible: bool) -> Step:
    if kafka_type in _FIXED:
        return _skip(_FIXED[kafka_type])
    if kafka_type in ("string", "bytes", "records"):
        return _compact_bytes if flexible else _legacy_bytes(_INT16 if kafka_type == "string" else _INT32)
    raise NotImplementedError(f"no length rule for a {kafka_type} field")


def _array(name: str, flexible: bool, nullable: bool, element: Step | None) -> Step:
    """An array's count (compact: count + 1 as a varint, 0 = null; legacy: int32, -1 = null) must fit the bytes
    left and be null only where allowed; then each element is walked, or, when ``element`` is None (nothing
    after the array needs checking), the walk is done."""

    def walk(data: bytes, pos: int) -> int:
        start = pos
        if flexible:
            count, pos = read_uvarint(data, pos)
            count -= 1
        else:
            count, pos = _fixed_int(_INT32, data, pos, f"the count of {name!r}"), pos + 4
        if count < 0:
            if count < -1 or not nullable:
                raise FrameError(f"non-nullable field {name} was serialized as null (count {count} at byte {start})")
            return pos
        left = max(len(data) - pos, 0)
        if count > left:
            raise FrameError(f"array {name!r} at byte {start} claims {count} elements with {left} bytes left")
        if element is None:
            return DONE
        for _ in range(count):
            pos = element(data, pos)
        return pos

    return walk


def _field(field: dataclasses.Field[Any], flexible: bool, tail: bool) -> Step:
    """One field; ``tail``: nothing after it needs checking."""
    kind = classify_field(field)
    if isinstance(kind, EntityTupleField):
        inner = None if tail and not _entity_holds_array(kind.type_) else _entity(kind.type_, tail=False)
        return _array(field.name, flexible, is_optional(field), inner)
    if isinstance(kind, PrimitiveTupleField):
        element = None if tail else _primitive(get_schema_field_type(field), flexible)
        return _array(field.name, flexible, is_optional(field), element)
    if isinstance(kind, EntityField):
        inner = _entity(kind.type_, tail=tail)
        assert inner is not None  # walked: the field holds an array, or something after it needs checking
        if not is_optional(field):
            return inner

        def nullable(data: bytes, pos: int) -> int:  # KIP-893: an int8 marker, -1 for null
            marker = _fixed_int(_INT8, data, pos, "a nullable struct's marker")
            return pos + 1 if marker < 0 else inner(data, pos + 1)

        return nullable
    return _primitive(get_schema_field_type(field), flexible)


def _tags(tagged: dict[int, Step]) -> Step:
    """A tagged-field section: known tags are walked (their values may hold arrays), every tag is skipped
    by its size."""

    def walk(data: bytes, pos: int) -> int:
        count, pos = read_uvarint(data, pos)
        for _ in range(count):
            tag, pos = read_uvarint(data, pos)
            size, pos = read_uvarint(data, pos)
            step = tagged.get(tag)
            if step is not None:
                step(data, pos)
            pos += size
        return pos

    return walk


@functools.cache
def _entity(schema: type, *, tail: bool) -> Step | None:
    """The walk of one entity (its fields, then, if flexible, its tag section). With ``tail`` (nothing after
    the entity needs checking) it stops after its last array, and is None when it holds none."""
    flexible = bool(getattr(schema, "__flexible__", False))
    inline = [f for f in dataclasses.fields(schema) if get_field_tag(f) is None]
    tagged = [f for f in dataclasses.fields(schema) if get_field_tag(f) is not None]
    if tail and not any(_holds_array(f) for f in tagged):
        last = max((i for i, f in enumerate(inline) if _holds_array(f)), default=-1)
        if last < 0:
            return None
        steps = [_field(f, flexible, tail=i == last) for i, f in enumerate(inline[: last + 1])]
    else:
        steps = [_field(f, flexible, tail=False) for f in inline]
        if flexible:
            steps.append(_tags({int(get_field_tag(f) or 0): _field(f, True, tail=False) for f in tagged}))

    def walk(data: bytes, pos: int) -> int:
        for step in steps:
            pos = step(data, pos)
            if pos == DONE:
                break
        return pos

    return walk
