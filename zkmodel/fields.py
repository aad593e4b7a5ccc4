"""Strict, path-aware readers for znode JSON, shared by every decoder.

Each reader raises ZnodeFormatError naming the path and the offending key, so a decoder is a list of
field reads and never leaks a KeyError/TypeError on foreign data.
"""

from collections.abc import Mapping
from typing import Any, Final

import orjson

from zkmodel.errors import ZnodeFormatError

_MISSING: Final = object()


def dumps(obj: object) -> bytes:
    """Compact UTF-8 JSON in the dict's own key order, as Kafka's Jackson writer emits it.

    Copied into a bytes object of its own size: orjson writes into a 1,024-byte buffer and shrinks it in place,
    which leaves the rest of that buffer as a hole behind every result that is kept. A controller holding a
    million encoded states (a failover's writes, in flight) then touched fresh memory every few encodes: 3-10 us
    an encode in the node instead of 0.5. The copy of a znode-sized result comes from Python's small-object
    allocator, and orjson's buffer is freed at once for the next call to reuse."""
    return bytes(memoryview(orjson.dumps(obj)))


def parse_object(path: str, data: bytes | None) -> dict[str, Any]:
    """Parse a znode's bytes as a JSON object."""
    if data is None or len(data) == 0:
        raise ZnodeFormatError(path, "no data (expected a JSON object)")
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise ZnodeFormatError(path, f"invalid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ZnodeFormatError(path, f"expected a JSON object, got {_json_type(value)}")
    return value


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _get(path: str, obj: Mapping[str, Any], key: str, required: bool) -> object:
    if key in obj:
        return obj[key]
    if required:
        raise ZnodeFormatError(path, f"missing key {key!r}")
    return _MISSING


def as_int(path: str, what: str, value: object, *, minimum: int | None = None) -> int:
    """A JSON integer (booleans and floats are not integers in Kafka's reader)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ZnodeFormatError(path, f"{what} must be an integer, got {_json_type(value)}")
    if not -(2**31) <= value < 2**31:
        raise ZnodeFormatError(path, f"{what} is out of the 32-bit integer range: {value}")
    if minimum is not None and value < minimum:
        raise ZnodeFormatError(path, f"{what} must be >= {minimum}, got {value}")
    return value


def get_int(
    path: str, obj: Mapping[str, Any], key: str, *, minimum: int | None = None, default: int | None = None
) -> int:
    value = _get(path, obj, key, default is None)
    if value is _MISSING:
        assert default is not None
        return default
    return as_int(path, repr(key), value, minimum=minimum)


def get_str(path: str, obj: Mapping[str, Any], key: str, *, default: str | None = None) -> str:
    value = _get(path, obj, key, default is None)
    if value is _MISSING:
        assert default is not None
        return default
    if not isinstance(value, str):
        raise ZnodeFormatError(path, f"{key!r} must be a string, got {_json_type(value)}")
    return value


def get_optional_str(path: str, obj: Mapping[str, Any], key: str) -> str | None:
    """A string that may be absent or JSON null."""
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ZnodeFormatError(path, f"{key!r} must be a string or null, got {_json_type(value)}")
    return value


def get_long_str(path: str, obj: Mapping[str, Any], key: str, *, minimum: int | None = None) -> int:
    """A 64-bit integer that Kafka writes as a decimal JSON string (timestamps, producer-id blocks)."""
    raw = get_str(path, obj, key)
    if len(raw) > 20:  # longer than any 64-bit value; also keeps int() away from huge inputs
        raise ZnodeFormatError(path, f"{key!r} is out of the 64-bit integer range: {raw[:30]}...")
    if not raw or not (raw.isascii() and (raw.isdigit() or (raw[0] == "-" and raw[1:].isdigit()))):
        raise ZnodeFormatError(path, f"{key!r} must be a decimal integer string, got {raw!r}")
    value = int(raw)
    if not -(2**63) <= value < 2**63:
        raise ZnodeFormatError(path, f"{key!r} is out of the 64-bit integer range: {raw}")
    if minimum is not None and value < minimum:
        raise ZnodeFormatError(path, f"{key!r} must be >= {minimum}, got {value}")
    return value


def get_object(path: str, obj: Mapping[str, Any], key: str, *, required: bool = True) -> dict[str, Any]:
    value = _get(path, obj, key, required)
    if value is _MISSING:
        return {}
    if not isinstance(value, dict):
        raise ZnodeFormatError(path, f"{key!r} must be a JSON object, got {_json_type(value)}")
    return value


def get_list(path: str, obj: Mapping[str, Any], key: str, *, required: bool = True) -> list[Any]:
    value = _get(path, obj, key, required)
    if value is _MISSING:
        return []
    if not isinstance(value, list):
        raise ZnodeFormatError(path, f"{key!r} must be a JSON array, got {_json_type(value)}")
    return value


def as_broker_ids(path: str, what: str, value: object) -> tuple[int, ...]:
    """A replica/ISR list: non-negative broker ids with no duplicates."""
    if not isinstance(value, list):
        raise ZnodeFormatError(path, f"{what} must be a JSON array, got {_json_type(value)}")
    ids = tuple(as_int(path, f"{what} entry", v, minimum=0) for v in value)
    if len(set(ids)) != len(ids):
        raise ZnodeFormatError(path, f"{what} has duplicate broker ids: {list(ids)}")
    return ids


#: Broker-id tuples already validated, each kept once: a cluster has few distinct replica lists and ISRs
#: and a million partitions holding them, so a failover validates each list once and the context shares it.
_BROKER_IDS: dict[tuple[Any, ...], tuple[int, ...]] = {}
_BROKER_IDS_MAX = 1 << 16


def broker_ids_fast(value: object) -> tuple[int, ...] | None:
    """``value`` as a valid broker-id tuple (what :func:`as_broker_ids` returns), shared with every equal one
    seen before, or None when it is not one (the strict reader then names what is wrong)."""
    if type(value) is not list:
        return None
    key = tuple(value)
    for v in key:
        if type(v) is not int:  # not bool or float, which hash (and compare) equal to ints
            return None
    found = _BROKER_IDS.get(key)
    if found is not None:
        return found
    if any(not 0 <= v < 2**31 for v in key) or len(set(key)) != len(key):
        return None
    if len(_BROKER_IDS) >= _BROKER_IDS_MAX:
        _BROKER_IDS.clear()
    _BROKER_IDS[key] = key
    return key


def as_partition_key(path: str, what: str, key: str) -> int:
    """A partition number used as a JSON object key ("0", "1", ...)."""
    if not (key.isascii() and key.isdigit()) or (len(key) > 1 and key[0] == "0"):
        raise ZnodeFormatError(path, f"{what} key {key[:30]!r} is not a partition number")
    if len(key) > 10:
        raise ZnodeFormatError(path, f"{what} key {key[:30]!r}... is out of range")
    value = int(key)
    if value >= 2**31:
        raise ZnodeFormatError(path, f"{what} key {key!r} is out of range")
    return value


def check_version(path: str, obj: Mapping[str, Any], supported: tuple[int, ...]) -> int:
    version = get_int(path, obj, "version")
    if version not in supported:
        allowed = ", ".join(str(v) for v in supported)
        raise ZnodeFormatError(path, f"unsupported version {version} (supported: {allowed})")
    return version


def utf8(path: str, data: bytes | None) -> str:
    """Decode a plain-text znode."""
    if data is None:
        return ""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ZnodeFormatError(path, f"not UTF-8 text: {exc.reason} at byte {exc.start}") from None
