"""Java's string semantics where Kafka's behaviour depends on them exactly. Pure: no I/O.

``String.compareTo`` orders by UTF-16 code units: where Kafka sorts names (topics, racks, users) the order
differs from Python's by code point for characters above U+FFFF, so sorts use :func:`java_string_key`.

``String.trim()`` is what Kafka's ``ConfigDef.parseType`` applies to a configured value before parsing it, what
``Double.parseDouble`` applies to its argument, and what jopt-simple's help formatter applies to the texts it
lays out. It is not :meth:`str.strip`: it removes every char up to U+0020, control characters included, and no
other whitespace (not U+0085, U+00A0, U+2028, ...).
"""

from __future__ import annotations

__all__ = ["java_string_key", "java_trim"]

#: Every char ``String.trim()`` removes from either end: U+0000 to U+0020.
_TRIMMED = "".join(chr(c) for c in range(0x21))


def java_trim(s: str) -> str:
    """``java.lang.String.trim()``: ``s`` without its leading and trailing chars <= U+0020."""
    return s.strip(_TRIMMED)


def java_string_key(s: str) -> bytes:
    """A sort key in ``java.lang.String.compareTo``'s order: the UTF-16-BE bytes (code units compare as bytes)."""
    return s.encode("utf-16-be", "surrogatepass")
