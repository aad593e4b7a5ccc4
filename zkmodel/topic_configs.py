"""Kafka 3.9's topic configs (``LogConfig``) and the dynamic broker configs we accept, as data, with
``ConfigDef``-compatible parsing, validation and error messages. Pure: no I/O.

Sources (apache/kafka 3.9.0-rc3): storage/.../log/LogConfig.java (definitions, ``validateNames``,
``validateValues``, ``validateNoInvalidRemoteStorageConfigsInZK``), clients/.../config/ConfigDef.java
(``parseType``, ``Range``, ``ValidString``, ``ValidList``, ``convertToString``), ConfigException.java
("Invalid value V for configuration N: M"), server-common/.../ServerTopicConfigSynonyms.java and
ServerLogConfigs.java (broker synonyms and their static defaults), QuotaConfigs.java (throttle rates).
"""

from __future__ import annotations

import enum
import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from zkmodel.ibp import parse_ibp
from zkmodel.java import java_trim

LONG_MAX = 2**63 - 1
_INT_RE = re.compile(r"[+-]?[0-9]+\Z")
_LIST_SPLIT = re.compile(r"\s*,\s*")
_THROTTLED_ENTRY = re.compile(r"([0-9]+:[0-9]+)?\Z")


class ConfigType(enum.IntEnum):
    """ConfigDef.Type, numbered as DescribeConfigs v3+ reports it (DescribeConfigsResponse.ConfigType)."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


class ConfigSource(enum.IntEnum):
    """DescribeConfigsResponse.ConfigSource ids."""

    UNKNOWN = 0
    TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6


class TopicConfigError(ValueError):
    """A rejected config. ``message`` is Kafka's wording."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ConfigValueError(TopicConfigError):
    """Kafka's ``ConfigException``: AlterConfigs reports it as INVALID_CONFIG with the prefix
    "Invalid config value for resource ConfigResource(type=TOPIC, name='t'): "."""

    @classmethod
    def invalid(cls, name: str, value: object, message: str | None) -> ConfigValueError:
        return cls(f"Invalid value {value} for configuration {name}" + ("" if message is None else f": {message}"))


class InvalidConfigurationError(TopicConfigError):
    """Kafka's ``InvalidConfigurationException`` (an ApiException): reported as INVALID_CONFIG, unprefixed."""


Validator = Callable[[str, Any], None]


def java_double(value: float) -> str:
    """Java's ``Double.toString``: plain between 1e-3 and 1e7, else ``d.dddE<n>``; shortest round-trip digits."""
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0 or 1e-3 <= abs(value) < 1e7:
        return repr(float(value))
    sign, digits, exponent = Decimal(repr(float(value))).normalize().as_tuple()
    text = "".join(str(d) for d in digits)
    assert isinstance(exponent, int)
    return f"{'-' if sign else ''}{text[0]}.{text[1:] or '0'}E{exponent + len(text) - 1}"


def _java_str(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return java_double(value)
    if isinstance(value, list):
        return "[" + ", ".join(str(v) for v in value) + "]"
    return str(value)


def at_least(minimum: int) -> Validator:
    def check(name: str, value: Any) -> None:
        if value < minimum:
            raise ConfigValueError.invalid(name, _java_str(value), f"Value must be at least {minimum}")

    return check


def between(minimum: int, maximum: int) -> Validator:
    def check(name: str, value: Any) -> None:
        if value < minimum:
            raise ConfigValueError.invalid(name, _java_str(value), f"Value must be at least {minimum}")
        if value > maximum:
            raise ConfigValueError.invalid(name, _java_str(value), f"Value must be no more than {maximum}")

    return check


def one_of(*valid: str) -> Validator:
    def check(name: str, value: Any) -> None:
        if value not in valid:
            raise ConfigValueError.invalid(name, value, "String must be one of: " + ", ".join(valid))

    return check


def list_of(*valid: str) -> Validator:
    item = one_of(*valid)

    def check(name: str, value: Any) -> None:
        for element in value:
            item(name, element)

    return check


def gzip_level(name: str, value: Any) -> None:
    if value > 9 or (value < 1 and value != -1):
        raise ConfigValueError.invalid(name, value, "Value must be between 1 and 9 or equal to -1")


def throttled_replicas(name: str, value: Any) -> None:
    proposed = [java_trim(str(v)) for v in value]
    if not (all(_THROTTLED_ENTRY.match(p) for p in proposed) or "".join(proposed) == "*"):
        raise ConfigValueError.invalid(
            name,
            _java_str(value),
            f"{name} must be the literal '*' or a list of replicas in the following format: "
            "[partitionId]:[brokerId],[partitionId]:[brokerId],...",
        )


def metadata_version(name: str, value: Any) -> None:
    try:
        parse_ibp(str(value))
    except ValueError as exc:
        raise ConfigValueError.invalid(name, value, str(exc)) from None


@dataclass(frozen=True)
class ConfigDef:
    name: str
    type: ConfigType
    #: The default as DescribeConfigs reports it (``ConfigDef.convertToString`` of the default).
    default: str
    validator: Validator | None = None
    #: The broker config this topic config falls back to (``ServerTopicConfigSynonyms``), if any.
    broker_synonym: str | None = None
    #: The broker synonym Kafka reports (with source DEFAULT_CONFIG) when nothing overrides it: the first of
    #: the synonyms with a non-null static default, e.g. log.retention.hours=168 for retention.ms.
    default_synonym: tuple[str, str] | None = None
    sensitive: bool = False
    documentation: str | None = None

    def parse(self, value: str) -> Any:
        """ConfigDef.parseType followed by the validator; the returned value is the parsed one."""
        parsed = parse_value(self.name, self.type, value)
        if self.validator is not None:
            self.validator(self.name, parsed)
        return parsed

    def normalize(self, value: str) -> str:
        """The value as Kafka reports it once parsed (``convertToString``)."""
        return to_string(self.parse(value), self.type)


def parse_value(name: str, kind: ConfigType, value: str) -> Any:
    trimmed = java_trim(value)
    if kind is ConfigType.BOOLEAN:
        if trimmed.lower() == "true":
            return True
        if trimmed.lower() == "false":
            return False
        raise ConfigValueError.invalid(name, value, "Expected value to be either true or false")
    if kind in (ConfigType.STRING, ConfigType.PASSWORD, ConfigType.CLASS):
        return trimmed
    if kind in (ConfigType.INT, ConfigType.SHORT, ConfigType.LONG):
        bits = {ConfigType.INT: 31, ConfigType.SHORT: 15, ConfigType.LONG: 63}[kind]
        if not _INT_RE.match(trimmed) or not -(2**bits) <= int(trimmed) < 2**bits:
            raise ConfigValueError.invalid(name, value, f"Not a number of type {kind.name}")
        return int(trimmed)
    if kind is ConfigType.DOUBLE:
        try:
            if "_" in trimmed or not trimmed:
                raise ValueError(trimmed)
            return float(trimmed.rstrip("dDfF") if trimmed[-1:] in "dDfF" else trimmed)
        except ValueError:
            raise ConfigValueError.invalid(name, value, f"Not a number of type {kind.name}") from None
    if kind is ConfigType.LIST:
        return [] if not trimmed else _LIST_SPLIT.split(trimmed)
    raise ConfigValueError.invalid(name, value, None)


def to_string(parsed: Any, kind: ConfigType) -> str:
    if kind is ConfigType.LIST:
        return ",".join(str(v) for v in parsed)
    return _java_str(parsed)


def _c(
    name: str,
    kind: ConfigType,
    default: str,
    validator: Validator | None = None,
    synonym: str | None = None,
    default_synonym: tuple[str, str] | None = None,
) -> ConfigDef:
    if synonym is not None and default_synonym is None:
        default_synonym = (synonym, default)
    return ConfigDef(name, kind, default, validator, synonym, default_synonym)


B, S, INT, L, D = ConfigType.BOOLEAN, ConfigType.STRING, ConfigType.INT, ConfigType.LONG, ConfigType.DOUBLE
LIST = ConfigType.LIST
_MAX = str(LONG_MAX)
_WEEK_MS = str(7 * 24 * 3600 * 1000)
COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")

#: LogConfig's definitions, in its definition order (which is the order ConfigDef.parse validates in).
TOPIC_CONFIG_DEFS: tuple[ConfigDef, ...] = (
    _c("segment.bytes", INT, "1073741824", at_least(14), "log.segment.bytes"),
    _c("segment.ms", L, _WEEK_MS, at_least(1), "log.roll.ms", ("log.roll.hours", "168")),
    _c("segment.jitter.ms", L, "0", at_least(0), "log.roll.jitter.ms", ("log.roll.jitter.hours", "0")),
    _c("segment.index.bytes", INT, "10485760", at_least(4), "log.index.size.max.bytes"),
    _c("flush.messages", L, _MAX, at_least(1), "log.flush.interval.messages"),
    _c("flush.ms", L, _MAX, at_least(0), "log.flush.interval.ms", ("log.flush.scheduler.interval.ms", _MAX)),
    _c("retention.bytes", L, "-1", None, "log.retention.bytes"),
    _c("retention.ms", L, _WEEK_MS, at_least(-1), "log.retention.ms", ("log.retention.hours", "168")),
    _c("max.message.bytes", INT, "1048588", at_least(0), "message.max.bytes"),
    _c("index.interval.bytes", INT, "4096", at_least(0), "log.index.interval.bytes"),
    _c("delete.retention.ms", L, "86400000", at_least(0), "log.cleaner.delete.retention.ms"),
    _c("min.compaction.lag.ms", L, "0", at_least(0), "log.cleaner.min.compaction.lag.ms"),
    _c("max.compaction.lag.ms", L, _MAX, at_least(1), "log.cleaner.max.compaction.lag.ms"),
    _c("file.delete.delay.ms", L, "60000", at_least(0), "log.segment.delete.delay.ms"),
    _c("min.cleanable.dirty.ratio", D, "0.5", between(0, 1), "log.cleaner.min.cleanable.ratio"),
    _c("cleanup.policy", LIST, "delete", list_of("compact", "delete"), "log.cleanup.policy"),
    _c("unclean.leader.election.enable", B, "false", None, "unclean.leader.election.enable"),
    _c("min.insync.replicas", INT, "1", at_least(1), "min.insync.replicas"),
    _c("compression.type", S, "producer", one_of(*COMPRESSION_TYPES), "compression.type"),
    _c("compression.gzip.level", INT, "-1", gzip_level, "compression.gzip.level"),
    _c("compression.lz4.level", INT, "9", between(1, 17), "compression.lz4.level"),
    _c("compression.zstd.level", INT, "3", between(-131072, 22), "compression.zstd.level"),
    _c("preallocate", B, "false", None, "log.preallocate"),
    _c("message.format.version", S, "3.0-IV1", metadata_version, "log.message.format.version"),
    _c("message.timestamp.type", S, "CreateTime", one_of("CreateTime", "LogAppendTime"), "log.message.timestamp.type"),
    _c("message.timestamp.difference.max.ms", L, _MAX, at_least(0), "log.message.timestamp.difference.max.ms"),
    _c("message.timestamp.before.max.ms", L, _MAX, at_least(0), "log.message.timestamp.before.max.ms"),
    _c("message.timestamp.after.max.ms", L, _MAX, at_least(0), "log.message.timestamp.after.max.ms"),
    _c("leader.replication.throttled.replicas", LIST, "", throttled_replicas),
    _c("follower.replication.throttled.replicas", LIST, "", throttled_replicas),
    _c("message.downconversion.enable", B, "true", None, "log.message.downconversion.enable"),
    _c("remote.storage.enable", B, "false"),
    _c("local.retention.ms", L, "-2", at_least(-2), "log.local.retention.ms"),
    _c("local.retention.bytes", L, "-2", at_least(-2), "log.local.retention.bytes"),
    _c("remote.log.copy.disable", B, "false"),
    _c("remote.log.delete.on.disable", B, "false"),
)
TOPIC_CONFIGS: dict[str, ConfigDef] = {c.name: c for c in TOPIC_CONFIG_DEFS}

#: Dynamic broker configs we accept at /config/brokers/<id> and /config/brokers/<default>: the broker quota
#: configs (QuotaConfigs.brokerQuotaConfigs). Kafka also accepts its other dynamic KafkaConfig keys and custom
#: (unknown) names; this control plane knows no broker KafkaConfig, so it only takes these.
BROKER_CONFIG_DEFS: tuple[ConfigDef, ...] = (
    _c("leader.replication.throttled.rate", L, _MAX, at_least(0)),
    _c("follower.replication.throttled.rate", L, _MAX, at_least(0)),
    _c("replica.alter.log.dirs.io.max.bytes.per.second", L, _MAX, at_least(0)),
)
BROKER_CONFIGS: dict[str, ConfigDef] = {c.name: c for c in BROKER_CONFIG_DEFS}


@functools.cache
def _parsed_defaults() -> dict[str, Any]:
    """Every definition's default, parsed once: they are constants, and parsing the ~40 of them for each
    topic was a tenth of the controller's time creating 3,000 topics with no configs."""
    return {d.name: parse_value(d.name, d.type, d.default) for d in TOPIC_CONFIG_DEFS}


def _default_values() -> dict[str, Any]:
    return dict(_parsed_defaults())


def validate_topic_configs(configs: Mapping[str, str], existing: Mapping[str, str] | None = None) -> None:
    """``LogConfig.validate(existing, props, brokerLogConfigs, remoteStorageSystemEnabled=false, fromZK=true)``
    as ZkAdminManager calls it: names first, then every value in definition order, then cross-checks."""
    for name in configs:
        if name not in TOPIC_CONFIGS:
            raise InvalidConfigurationError(f"Unknown topic config name: {name}")
    values = _default_values()  # a fresh dict in definition order: the given values are parsed over it
    for definition in TOPIC_CONFIG_DEFS:
        raw = configs.get(definition.name)
        if raw is not None:
            values[definition.name] = definition.parse(raw)
    min_lag, max_lag = values["min.compaction.lag.ms"], values["max.compaction.lag.ms"]
    if min_lag > max_lag:
        raise InvalidConfigurationError(
            f"conflict topic config setting min.compaction.lag.ms ({min_lag}) > max.compaction.lag.ms ({max_lag})"
        )
    if values["remote.log.delete.on.disable"] or values["remote.log.copy.disable"]:
        raise InvalidConfigurationError(
            "It is invalid to set `remote.log.delete.on.disable` or `remote.log.copy.disable` under Zookeeper's mode."
        )
    if values["remote.storage.enable"]:
        # ConfigException(message): no "Invalid value" wrapping. Tiered storage is never enabled here.
        raise ConfigValueError(
            "Tiered Storage functionality is disabled in the broker. "
            "Topic cannot be configured with remote log storage."
        )
    was_remote = java_trim((existing or {}).get("remote.storage.enable", "false")).lower() == "true"
    if was_remote and not values["remote.log.delete.on.disable"]:
        raise InvalidConfigurationError(
            "It is invalid to disable remote storage without deleting remote data. If you want to keep the remote "
            "data and turn to read only, please set `remote.storage.enable=true,remote.log.copy.disable=true`. If you "
            "want to disable remote storage and delete all remote data, please set "
            "`remote.storage.enable=false,remote.log.delete.on.disable=true`."
        )


def validate_broker_configs(configs: Mapping[str, str]) -> None:
    """DynamicBrokerConfig.validateConfigs for the configs we know. Raises ConfigValueError (which Kafka's
    ConfigAdminManager turns into INVALID_REQUEST with the bare message, KAFKA-13609)."""
    unknown = [n for n in configs if n not in BROKER_CONFIGS]
    if unknown:
        raise ConfigValueError(f"Cannot update these configs dynamically: Set({', '.join(unknown)})")
    for name, value in configs.items():
        BROKER_CONFIGS[name].parse(value)
