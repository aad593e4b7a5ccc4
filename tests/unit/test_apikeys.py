"""The API spec table: what it decides is pinned here, message by message."""

from __future__ import annotations

from controller.wire import apikeys
from controller.wire.apikeys import SPECS, ApiKey, supported_apis
from zkmodel.kafka_acls import AclOperation as A


def test_one_row_per_api_key_and_names_as_kafka_spells_them() -> None:
    assert len({s.key for s in SPECS}) == len(SPECS) == len(ApiKey)
    assert {s.name for s in SPECS} >= {"CreateTopics", "IncrementalAlterConfigs", "Envelope", "AlterPartition"}
    for spec in SPECS:
        assert spec.key.name.replace("_", "") == spec.name.upper(), spec
    assert apikeys.api_name(99) == "Api99"


def test_forwarded_apis_are_kafkas_forwardable_ones_that_we_serve() -> None:
    forwarded = {s.key for s in SPECS if s.forwardable}
    assert forwarded == {19, 20, 30, 31, 33, 37, 43, 44, 45, 46, 49, 51}
    # Kafka's list also names APIs not served here: an envelope carrying one is checked against it.
    assert apikeys.forwardable(38) and not apikeys.forwardable(3)
    assert all(s.error_response is not None for s in SPECS if s.forwardable)  # a forwarding broker answers errors


def test_whole_request_cluster_checks() -> None:
    checks = {s.key: s.cluster_check for s in SPECS if s.cluster_check is not None}
    assert checks == {
        29: A.DESCRIBE,
        30: A.ALTER,
        31: A.ALTER,
        43: A.ALTER,
        45: A.ALTER,
        46: A.DESCRIBE,
        48: A.DESCRIBE_CONFIGS,
        49: A.ALTER_CONFIGS,
        56: A.CLUSTER_ACTION,
    }


def test_pre_authentication_apis_and_error_builders() -> None:
    assert {17, 18, 36} == apikeys.PRE_AUTH
    with_builder = {s.key for s in SPECS if s.error_response is not None}
    assert with_builder == {19, 20, 29, 30, 31, 33, 37, 43, 44, 45, 46, 48, 49, 51, 56}


def test_envelope_is_advertised_only_with_forwarding() -> None:
    assert 58 not in supported_apis(forwarding=False)
    assert supported_apis(forwarding=True)[58] == (0, 0)
    assert supported_apis(forwarding=False) == apikeys.SUPPORTED
    assert apikeys.SUPPORTED[3] == (0, 12) and apikeys.SUPPORTED[7] == (3, 3)


def test_bind_finds_each_handler_on_its_family() -> None:
    class Configs:
        async def describe_configs(self) -> None: ...

    class Raw:
        async def controlled_shutdown(self) -> None: ...

    configs, raw = Configs(), Raw()
    assert apikeys.bind(configs, raw) == {32: configs.describe_configs}
    assert apikeys.bind(configs, raw, raw=True) == {7: raw.controlled_shutdown}
