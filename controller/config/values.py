"""Configured values as Kafka's ``ConfigDef.parseType`` reads them (Kafka 3.9.0-rc3).

Java ``String.trim()`` first (:func:`zkmodel.java.java_trim`); booleans are ``true``/``false`` in any case;
INT/LONG are Java ``parseInt``/``parseLong`` (range-checked, no underscores); LIST splits on ``\\s*,\\s*``;
errors read ``Invalid value <v> for configuration <key>: <reason>`` (``ConfigException``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from controller.config.errors import ConfigError
from zkmodel.ibp import MetadataVersion, parse_ibp_config
from zkmodel.java import java_parse_integer, java_trim

# Java's \s is ASCII-only: [ \t\n\x0B\f\r].
CSV_SPLIT = re.compile(r"[ \t\n\x0b\f\r]*,[ \t\n\x0b\f\r]*")


def java_split_csv(value: str) -> list[str]:
    """``String.split("\\\\s*,\\\\s*")``: trailing empty pieces dropped, leading ones kept."""
    pieces = CSV_SPLIT.split(value)
    while len(pieces) > 1 and not pieces[-1]:
        pieces.pop()
    return pieces


class Values:
    """Typed access to the merged raw map: each getter parses its key as ``ConfigDef.parseType`` does."""

    def __init__(self, raw: Mapping[str, str]) -> None:
        self.raw = raw

    def given(self, key: str) -> bool:
        return key in self.raw

    def string(self, key: str, default: str | None) -> str | None:
        value = self.raw.get(key)
        return default if value is None else java_trim(value)

    def required_string(self, key: str) -> str:
        value = self.string(key, None)
        if value is None:
            raise ConfigError.missing(key)
        return value

    def integer(
        self,
        key: str,
        default: int | None,
        *,
        long: bool = False,
        at_least: int | None = None,
        at_most: int | None = None,
    ) -> int:
        text = self.raw.get(key)
        if text is None:
            if default is None:
                raise ConfigError.missing(key)
            value = default
        else:
            trimmed = java_trim(text)
            parsed = java_parse_integer(trimmed, 64 if long else 32)
            if parsed is None:
                raise ConfigError.invalid(key, text, f"Not a number of type {'LONG' if long else 'INT'}")
            value = parsed
        if at_least is not None and value < at_least:
            raise ConfigError.invalid(key, value, f"Value must be at least {at_least}")
        if at_most is not None and value > at_most:
            raise ConfigError.invalid(key, value, f"Value must be no more than {at_most}")
        return value

    def boolean(self, key: str, default: bool) -> bool:
        text = self.raw.get(key)
        if text is None:
            return default
        trimmed = java_trim(text).lower()
        if trimmed == "true":
            return True
        if trimmed == "false":
            return False
        raise ConfigError.invalid(key, text, "Expected value to be either true or false")

    def ibp(self, key: str, default: str) -> MetadataVersion:
        text = self.raw.get(key, default)
        try:
            return parse_ibp_config(text)
        except ValueError as exc:
            raise ConfigError.invalid(key, java_trim(text), str(exc)) from None
