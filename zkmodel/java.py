"""Java's string semantics where Kafka's behaviour depends on them exactly. Pure: no I/O.

``String.compareTo`` orders by UTF-16 code units: where Kafka sorts names (topics, racks, users) the order
differs from Python's by code point for characters above U+FFFF, so sorts use :func:`java_string_key`.

``String.trim()`` is what Kafka's ``ConfigDef.parseType`` applies to a configured value before parsing it, what
``Double.parseDouble`` applies to its argument, and what jopt-simple's help formatter applies to the texts it
lays out. It is not :meth:`str.strip`: it removes every char up to U+0020, control characters included, and no
other whitespace (not U+0085, U+00A0, U+2028, ...).

``Integer.parseInt`` / ``Long.parseLong`` take a sign and decimal digits only: no spaces, no underscores.
"""

from __future__ import annotations

import unicodedata

__all__ = ["java_parse_integer", "java_string_key", "java_trim"]

#: Every char ``String.trim()`` removes from either end: U+0000 to U+0020.
_TRIMMED = "".join(chr(c) for c in range(0x21))


def java_trim(s: str) -> str:
    """``java.lang.String.trim()``: ``s`` without its leading and trailing chars <= U+0020."""
    return s.strip(_TRIMMED)


def java_string_key(s: str) -> bytes:
    """A sort key in ``java.lang.String.compareTo``'s order: the UTF-16-BE bytes (code units compare as bytes)."""
    return s.encode("utf-16-be", "surrogatepass")


def java_parse_integer(text: str, bits: int) -> int | None:
    """``Integer.parseInt`` / ``Long.parseLong`` (radix 10): an optional sign, then one or more decimal
    digits (any Unicode decimal digit, as ``Character.digit`` takes them), in range; else None. Python's
    ``int()`` is looser (spaces, underscores), so it is not used on the raw text."""
    body = text[1:] if text[:1] in ("+", "-") else text
    if not body:
        return None
    value = 0
    for ch in body:
        digit = unicodedata.decimal(ch, None)
        if digit is None:
            return None
        value = value * 10 + digit
    if text[:1] == "-":
        value = -value
    if not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
        return None
    return value
