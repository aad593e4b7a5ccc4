"""Topic config definitions, parsing and Kafka's validation messages."""
# ruff: noqa: E501

from __future__ import annotations

import pytest

from zkmodel.topic_configs import (
    TOPIC_CONFIGS,
    ConfigType,
    ConfigValueError,
    InvalidConfigurationError,
    java_double,
    validate_broker_configs,
    validate_topic_configs,
)


def test_definitions() -> None:
    assert len(TOPIC_CONFIGS) == 36
    assert TOPIC_CONFIGS["retention.ms"].type is ConfigType.LONG
    assert TOPIC_CONFIGS["retention.ms"].default == "604800000"
    assert TOPIC_CONFIGS["retention.ms"].broker_synonym == "log.retention.ms"
    assert TOPIC_CONFIGS["cleanup.policy"].type is ConfigType.LIST
    assert TOPIC_CONFIGS["max.message.bytes"].default == "1048588"
    assert TOPIC_CONFIGS["message.format.version"].default == "3.0-IV1"
    assert not any(c.sensitive for c in TOPIC_CONFIGS.values())


@pytest.mark.parametrize(
    ("configs", "message"),
    [
        ({"x": "1"}, "Unknown topic config name: x"),
        ({"retention.ms": "abc"}, "Invalid value abc for configuration retention.ms: Not a number of type LONG"),
        (
            {"segment.bytes": "9999999999"},
            "Invalid value 9999999999 for configuration segment.bytes: Not a number of type INT",
        ),
        (
            {"cleanup.policy": "x"},
            "Invalid value x for configuration cleanup.policy: String must be one of: compact, delete",
        ),
        ({"retention.ms": "-5"}, "Invalid value -5 for configuration retention.ms: Value must be at least -1"),
        (
            {"min.cleanable.dirty.ratio": "2"},
            "Invalid value 2.0 for configuration min.cleanable.dirty.ratio: Value must be no more than 1",
        ),
        (
            {"preallocate": "yes"},
            "Invalid value yes for configuration preallocate: Expected value to be either true or false",
        ),
        (
            {"compression.type": "brotli"},
            "Invalid value brotli for configuration compression.type: String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer",
        ),
        (
            {"compression.gzip.level": "0"},
            "Invalid value 0 for configuration compression.gzip.level: Value must be between 1 and 9 or equal to -1",
        ),
        (
            {"message.format.version": "9.9"},
            "Invalid value 9.9 for configuration message.format.version: Version 9.9 is not a valid version",
        ),
        (
            {"leader.replication.throttled.replicas": "a"},
            "Invalid value [a] for configuration leader.replication.throttled.replicas: leader.replication.throttled.replicas must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],...",
        ),
    ],
)
def test_messages(configs: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=None) as info:
        validate_topic_configs(configs)
    assert str(info.value) == message


def test_kinds_and_cross_checks() -> None:
    with pytest.raises(InvalidConfigurationError):
        validate_topic_configs({"x": "1"})
    with pytest.raises(ConfigValueError):
        validate_topic_configs({"retention.ms": "x"})
    with pytest.raises(InvalidConfigurationError, match=r"conflict topic config setting min.compaction.lag.ms \(5\)"):
        validate_topic_configs({"min.compaction.lag.ms": "5", "max.compaction.lag.ms": "4"})
    with pytest.raises(InvalidConfigurationError, match="under Zookeeper's mode"):
        validate_topic_configs({"remote.log.copy.disable": "true"})
    with pytest.raises(ConfigValueError, match="Tiered Storage functionality is disabled"):
        validate_topic_configs({"remote.storage.enable": "true"})


def test_valid_values_and_normalisation() -> None:
    validate_topic_configs(
        {
            "retention.ms": " 1000 ",
            "cleanup.policy": "compact, delete",
            "preallocate": "TRUE",
            "leader.replication.throttled.replicas": "0:1,1:2",
            "follower.replication.throttled.replicas": "*",
            "message.format.version": "2.8",
            "compression.zstd.level": "-5",
            "min.cleanable.dirty.ratio": "0.25",
        }
    )
    assert TOPIC_CONFIGS["retention.ms"].normalize(" 1000 ") == "1000"
    assert TOPIC_CONFIGS["cleanup.policy"].normalize("compact , delete") == "compact,delete"
    assert TOPIC_CONFIGS["preallocate"].normalize("TRUE") == "true"
    assert TOPIC_CONFIGS["min.cleanable.dirty.ratio"].normalize("0.50") == "0.5"
    assert java_double(1e7) == "1.0E7" and java_double(2.0) == "2.0"


def test_broker_configs() -> None:
    validate_broker_configs({"leader.replication.throttled.rate": "10", "follower.replication.throttled.rate": "5"})
    with pytest.raises(ConfigValueError, match=r"Cannot update these configs dynamically: Set\(log.dirs\)"):
        validate_broker_configs({"log.dirs": "/x"})
    with pytest.raises(ConfigValueError, match="Value must be at least 0"):
        validate_broker_configs({"leader.replication.throttled.rate": "-1"})
