"""The configuration error, worded like Kafka's ``ConfigException``: what reading a node's configuration raises."""

from __future__ import annotations


class ConfigError(ValueError):
    """A bad configuration, worded like Kafka's ``ConfigException``; ``key`` names the offending key if any."""

    def __init__(self, message: str, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key

    @classmethod
    def invalid(cls, key: str, value: object, reason: str | None = None) -> ConfigError:
        """``Invalid value <v> for configuration <key>: <reason>`` (Kafka's three-argument form)."""
        suffix = f": {reason}" if reason else ""
        return cls(f"Invalid value {value} for configuration {key}{suffix}", key)

    @classmethod
    def missing(cls, key: str) -> ConfigError:
        return cls(f'Missing required configuration "{key}" which has no default value.', key)
