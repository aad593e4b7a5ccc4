"""IBP parsing and gates, pinned to Kafka 3.9.0-rc3's MetadataVersion and MetadataVersionTest."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zkmodel import ibp
from zkmodel.ibp import (
    ALL_VERSIONS,
    IBP_0_8_0,
    IBP_0_8_1,
    IBP_0_8_2,
    IBP_0_9_0,
    IBP_0_10_0_IV0,
    IBP_0_10_0_IV1,
    IBP_0_10_1_IV0,
    IBP_0_10_1_IV1,
    IBP_0_10_1_IV2,
    IBP_0_10_2_IV0,
    IBP_0_11_0_IV0,
    IBP_0_11_0_IV1,
    IBP_0_11_0_IV2,
    IBP_1_0_IV0,
    IBP_1_1_IV0,
    IBP_2_0_IV0,
    IBP_2_0_IV1,
    IBP_2_1_IV0,
    IBP_2_1_IV1,
    IBP_2_1_IV2,
    IBP_2_2_IV0,
    IBP_2_2_IV1,
    IBP_2_3_IV0,
    IBP_2_3_IV1,
    IBP_2_4_IV0,
    IBP_2_4_IV1,
    IBP_2_5_IV0,
    IBP_2_6_IV0,
    IBP_2_7_IV0,
    IBP_2_7_IV1,
    IBP_2_7_IV2,
    IBP_2_8_IV0,
    IBP_2_8_IV1,
    IBP_3_0_IV0,
    IBP_3_0_IV1,
    IBP_3_1_IV0,
    IBP_3_2_IV0,
    IBP_3_3_IV0,
    IBP_3_3_IV1,
    IBP_3_3_IV2,
    IBP_3_3_IV3,
    IBP_3_4_IV0,
    IBP_3_5_IV0,
    IBP_3_5_IV1,
    IBP_3_5_IV2,
    IBP_3_6_IV0,
    IBP_3_6_IV1,
    IBP_3_6_IV2,
    IBP_3_7_IV0,
    IBP_3_7_IV1,
    IBP_3_7_IV2,
    IBP_3_7_IV3,
    IBP_3_7_IV4,
    IBP_3_8_IV0,
    IBP_3_9_IV0,
    IBP_4_0_IV0,
    IBP_4_0_IV1,
    LATEST_PRODUCTION,
    PRODUCTION_VERSIONS,
    MetadataVersion,
    parse_ibp,
    parse_ibp_config,
)

# Kafka's enum order, written out independently of the module so a reordering is caught.
KAFKA_ORDER = [
    "0.8.0",
    "0.8.1",
    "0.8.2",
    "0.9.0",
    "0.10.0-IV0",
    "0.10.0-IV1",
    "0.10.1-IV0",
    "0.10.1-IV1",
    "0.10.1-IV2",
    "0.10.2-IV0",
    "0.11.0-IV0",
    "0.11.0-IV1",
    "0.11.0-IV2",
    "1.0-IV0",
    "1.1-IV0",
    "2.0-IV0",
    "2.0-IV1",
    "2.1-IV0",
    "2.1-IV1",
    "2.1-IV2",
    "2.2-IV0",
    "2.2-IV1",
    "2.3-IV0",
    "2.3-IV1",
    "2.4-IV0",
    "2.4-IV1",
    "2.5-IV0",
    "2.6-IV0",
    "2.7-IV0",
    "2.7-IV1",
    "2.7-IV2",
    "2.8-IV0",
    "2.8-IV1",
    "3.0-IV0",
    "3.0-IV1",
    "3.1-IV0",
    "3.2-IV0",
    "3.3-IV0",
    "3.3-IV1",
    "3.3-IV2",
    "3.3-IV3",
    "3.4-IV0",
    "3.5-IV0",
    "3.5-IV1",
    "3.5-IV2",
    "3.6-IV0",
    "3.6-IV1",
    "3.6-IV2",
    "3.7-IV0",
    "3.7-IV1",
    "3.7-IV2",
    "3.7-IV3",
    "3.7-IV4",
    "3.8-IV0",
    "3.9-IV0",
    "4.0-IV0",
    "4.0-IV1",
]


def by_version(v: MetadataVersion) -> str:
    return v.version


# --- the list itself ---------------------------------------------------------------------------------------


def test_all_versions_in_kafka_order() -> None:
    assert [v.version for v in ALL_VERSIONS] == KAFKA_ORDER
    assert [v.ordinal for v in ALL_VERSIONS] == list(range(len(ALL_VERSIONS)))


def test_production_versions_end_at_3_9_iv0() -> None:
    assert LATEST_PRODUCTION is IBP_3_9_IV0
    assert str(LATEST_PRODUCTION) == "3.9-IV0"
    assert ALL_VERSIONS[: IBP_3_9_IV0.ordinal + 1] == PRODUCTION_VERSIONS
    assert PRODUCTION_VERSIONS[0] is IBP_0_8_0
    assert PRODUCTION_VERSIONS[-1] is LATEST_PRODUCTION


def test_is_production_matches_kafka_rule() -> None:
    # Kafka: isProduction() == compareTo(LATEST_PRODUCTION) <= 0
    for v in ALL_VERSIONS:
        assert v.is_production == (v <= LATEST_PRODUCTION), v
    assert LATEST_PRODUCTION.is_production
    assert not ALL_VERSIONS[-1].is_production
    assert not IBP_4_0_IV0.is_production
    assert not IBP_4_0_IV1.is_production


def test_names_match_kafka_constants_and_module_attributes() -> None:
    for v in ALL_VERSIONS:
        expected = "IBP_" + v.release.replace(".", "_") + (f"_{v.sub_version}" if v.sub_version else "")
        assert v.name == expected
        assert getattr(ibp, v.name) is v


def test_total_order_across_full_list() -> None:
    for i, a in enumerate(ALL_VERSIONS):
        for j, b in enumerate(ALL_VERSIONS):
            assert (a < b) == (i < j)
            assert (a <= b) == (i <= j)
            assert (a > b) == (i > j)
            assert (a >= b) == (i >= j)
            assert (a == b) == (i == j)


def test_sorting_restores_declaration_order_not_text_order() -> None:
    shuffled = list(ALL_VERSIONS)
    random.Random(584).shuffle(shuffled)
    assert tuple(sorted(shuffled)) == ALL_VERSIONS
    assert max(ALL_VERSIONS) is IBP_4_0_IV1
    assert min(ALL_VERSIONS) is IBP_0_8_0
    # Text order would put 0.10 before 0.8 and 0.11 before 0.9; Kafka's does not.
    assert IBP_0_9_0 < IBP_0_10_0_IV0 < IBP_0_11_0_IV0 < IBP_1_0_IV0


def test_hashable_and_distinct() -> None:
    assert len(set(ALL_VERSIONS)) == len(ALL_VERSIONS)
    assert {IBP_2_7_IV2: "x"}[parse_ibp("2.7")] == "x"


def test_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        IBP_2_7_IV2.release = "2.8"  # type: ignore[misc]


def test_comparison_with_other_types_is_a_type_error() -> None:
    v = IBP_2_7_IV2
    text: object = "2.7-IV2"
    with pytest.raises(TypeError):
        _ = v < text
    with pytest.raises(TypeError):
        _ = text >= v
    assert v != text


@pytest.mark.parametrize("v", ALL_VERSIONS, ids=by_version)
def test_string_round_trip(v: MetadataVersion) -> None:
    assert str(v) == v.version
    assert parse_ibp(str(v)) is v
    assert parse_ibp_config(f"  {v}\n") is v


def test_repr_is_readable() -> None:
    expected = "MetadataVersion(release='2.7', sub_version='IV2', feature_level=-1, is_production=True)"
    assert repr(IBP_2_7_IV2) == expected


# --- MetadataVersionTest ---------------------------------------------------------------------------------


def test_kraft_feature_levels_before_3_0_iv1() -> None:
    for v in ALL_VERSIONS[: IBP_3_0_IV1.ordinal]:
        assert v.feature_level == -1, v


def test_kraft_feature_levels_at_and_after_3_0_iv1() -> None:
    for v in ALL_VERSIONS[IBP_3_0_IV1.ordinal :]:
        assert v.feature_level == v.ordinal - IBP_3_0_IV1.ordinal + 1, v
    assert IBP_3_4_IV0.feature_level == 8
    assert IBP_3_9_IV0.feature_level == 21


def test_kraft_versions() -> None:
    for v in ALL_VERSIONS:
        assert v.is_kraft_supported == (v >= IBP_3_0_IV1)
        assert v.is_kraft_supported == (v.feature_level > 0)


def test_did_metadata_change_flags() -> None:
    unchanged = {
        IBP_3_1_IV0,
        IBP_3_3_IV0,
        IBP_3_5_IV0,
        IBP_3_5_IV1,
        IBP_3_6_IV0,
        IBP_3_7_IV1,
        IBP_3_7_IV3,
        IBP_3_7_IV4,
        IBP_3_8_IV0,
        IBP_3_9_IV0,
        IBP_4_0_IV1,
    }
    for v in ALL_VERSIONS:
        assert v.did_metadata_change == (v not in unchanged), v


FROM_VERSION_STRING = [
    ("0.8.0", IBP_0_8_0),
    ("0.8.0.0", IBP_0_8_0),
    ("0.8.0.1", IBP_0_8_0),
    ("0.8.1", IBP_0_8_1),
    ("0.8.1.0", IBP_0_8_1),
    ("0.8.1.1", IBP_0_8_1),
    ("0.8.2", IBP_0_8_2),
    ("0.8.2.0", IBP_0_8_2),
    ("0.8.2.1", IBP_0_8_2),
    ("0.9.0", IBP_0_9_0),
    ("0.9.0.0", IBP_0_9_0),
    ("0.9.0.1", IBP_0_9_0),
    ("0.10.0-IV0", IBP_0_10_0_IV0),
    ("0.10.0", IBP_0_10_0_IV1),
    ("0.10.0.0", IBP_0_10_0_IV1),
    ("0.10.0.0-IV0", IBP_0_10_0_IV1),
    ("0.10.0.1", IBP_0_10_0_IV1),
    ("0.10.1-IV0", IBP_0_10_1_IV0),
    ("0.10.1-IV1", IBP_0_10_1_IV1),
    ("0.10.1", IBP_0_10_1_IV2),
    ("0.10.1.0", IBP_0_10_1_IV2),
    ("0.10.1-IV2", IBP_0_10_1_IV2),
    ("0.10.1.1", IBP_0_10_1_IV2),
    ("0.10.2", IBP_0_10_2_IV0),
    ("0.10.2.0", IBP_0_10_2_IV0),
    ("0.10.2-IV0", IBP_0_10_2_IV0),
    ("0.10.2.1", IBP_0_10_2_IV0),
    ("0.11.0-IV0", IBP_0_11_0_IV0),
    ("0.11.0-IV1", IBP_0_11_0_IV1),
    ("0.11.0", IBP_0_11_0_IV2),
    ("0.11.0.0", IBP_0_11_0_IV2),
    ("0.11.0-IV2", IBP_0_11_0_IV2),
    ("0.11.0.1", IBP_0_11_0_IV2),
    ("1.0", IBP_1_0_IV0),
    ("1.0.0", IBP_1_0_IV0),
    ("1.0.0-IV0", IBP_1_0_IV0),
    ("1.0.1", IBP_1_0_IV0),
    ("1.1-IV0", IBP_1_1_IV0),
    ("2.0", IBP_2_0_IV1),
    ("2.0-IV0", IBP_2_0_IV0),
    ("2.0-IV1", IBP_2_0_IV1),
    ("2.1", IBP_2_1_IV2),
    ("2.1-IV0", IBP_2_1_IV0),
    ("2.1-IV1", IBP_2_1_IV1),
    ("2.1-IV2", IBP_2_1_IV2),
    ("2.2", IBP_2_2_IV1),
    ("2.2-IV0", IBP_2_2_IV0),
    ("2.2-IV1", IBP_2_2_IV1),
    ("2.3", IBP_2_3_IV1),
    ("2.3-IV0", IBP_2_3_IV0),
    ("2.3-IV1", IBP_2_3_IV1),
    ("2.4", IBP_2_4_IV1),
    ("2.4-IV0", IBP_2_4_IV0),
    ("2.4-IV1", IBP_2_4_IV1),
    ("2.5", IBP_2_5_IV0),
    ("2.5-IV0", IBP_2_5_IV0),
    ("2.6", IBP_2_6_IV0),
    ("2.6-IV0", IBP_2_6_IV0),
    ("2.7", IBP_2_7_IV2),
    ("2.7-IV0", IBP_2_7_IV0),
    ("2.7-IV1", IBP_2_7_IV1),
    ("2.7-IV2", IBP_2_7_IV2),
    ("2.8", IBP_2_8_IV1),
    ("2.8-IV0", IBP_2_8_IV0),
    ("2.8-IV1", IBP_2_8_IV1),
    ("3.0", IBP_3_0_IV1),
    ("3.0-IV0", IBP_3_0_IV0),
    ("3.0-IV1", IBP_3_0_IV1),
    ("3.1", IBP_3_1_IV0),
    ("3.1-IV0", IBP_3_1_IV0),
    ("3.2", IBP_3_2_IV0),
    ("3.2-IV0", IBP_3_2_IV0),
    ("3.3", IBP_3_3_IV3),
    ("3.3-IV0", IBP_3_3_IV0),
    ("3.3-IV1", IBP_3_3_IV1),
    ("3.3-IV2", IBP_3_3_IV2),
    ("3.3-IV3", IBP_3_3_IV3),
    ("3.4", IBP_3_4_IV0),
    ("3.4-IV0", IBP_3_4_IV0),
    ("3.5", IBP_3_5_IV2),
    ("3.5-IV0", IBP_3_5_IV0),
    ("3.5-IV1", IBP_3_5_IV1),
    ("3.5-IV2", IBP_3_5_IV2),
    ("3.6", IBP_3_6_IV2),
    ("3.6-IV0", IBP_3_6_IV0),
    ("3.6-IV1", IBP_3_6_IV1),
    ("3.6-IV2", IBP_3_6_IV2),
    ("3.7", IBP_3_7_IV4),
    ("3.7-IV0", IBP_3_7_IV0),
    ("3.7-IV1", IBP_3_7_IV1),
    ("3.7-IV2", IBP_3_7_IV2),
    ("3.7-IV3", IBP_3_7_IV3),
    ("3.7-IV4", IBP_3_7_IV4),
    ("3.8", IBP_3_8_IV0),
    ("3.8-IV0", IBP_3_8_IV0),
    ("3.9", IBP_3_9_IV0),
    ("3.9-IV0", IBP_3_9_IV0),
    # Unstable versions parse by exact string, as in Kafka (callers gate on is_production).
    ("4.0-IV0", IBP_4_0_IV0),
    ("4.0-IV1", IBP_4_0_IV1),
]


@pytest.mark.parametrize(("text", "expected"), FROM_VERSION_STRING, ids=[t for t, _ in FROM_VERSION_STRING])
def test_from_version_string(text: str, expected: MetadataVersion) -> None:
    assert parse_ibp(text) is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2.7.1", IBP_2_7_IV2),  # patch releases map to the release
        ("3.9.0", IBP_3_9_IV0),
        ("3.4.1-SNAPSHOT", IBP_3_4_IV0),
        ("2.7-IV0.5", IBP_2_7_IV0),  # only the first two dotted pieces count from 1.0 on
        ("0.10.1-IV1.9", IBP_0_10_1_IV1),  # and the first three before 1.0
        ("2.7.1.", IBP_2_7_IV2),
    ],
)
def test_from_version_string_truncation_quirks(text: str, expected: MetadataVersion) -> None:
    assert parse_ibp(text) is expected


def test_bare_release_is_newest_production_iv_of_that_release() -> None:
    for release in {v.release for v in PRODUCTION_VERSIONS}:
        newest = max(v for v in PRODUCTION_VERSIONS if v.release == release)
        assert parse_ibp(release) is newest


INVALID = [
    "8.0",  # MetadataVersionTest: no IBP_8_0_IV0
    "0.1.0",
    "0.1.0.0",
    "0.1.0-IV0",
    "0.1.0.0-IV0",
    "4.0",  # only unstable IVs, so no bare key
    "4",
    "0.10",  # pre-1.0 needs three pieces
    "3.10",
    "2.7-IV3",
    "2.7-iv2",
    "2.7-IV2 ",
    " 2.7",
    "2.7.",  # Java's split drops the trailing empty piece, leaving the full string as the key
    "2.7..",
    "2..7",
    "",
    ".",
    "...",
    "latest",
    "IBP_2_7_IV2",
]


@pytest.mark.parametrize("text", INVALID)
def test_invalid_version_strings_raise_naming_input(text: str) -> None:
    with pytest.raises(ValueError) as excinfo:
        parse_ibp(text)
    assert str(excinfo.value) == f"Version {text} is not a valid version"


@given(st.text(alphabet="0123456789.-IV ", max_size=12) | st.text())
def test_parse_raises_only_value_error(text: str) -> None:
    try:
        v = parse_ibp(text)
    except ValueError as err:
        assert str(err) == f"Version {text} is not a valid version"
    else:
        assert v in ALL_VERSIONS
        assert text.startswith(v.release)


def test_config_parse_trims_like_configdef() -> None:
    assert parse_ibp_config(" \t2.7\r\n") is IBP_2_7_IV2
    assert parse_ibp_config("\x003.4-IV0\x1f") is IBP_3_4_IV0
    with pytest.raises(ValueError, match=r"^Version 2\.7-IV9 is not a valid version$"):
        parse_ibp_config(" 2.7-IV9 ")
    with pytest.raises(ValueError, match=r"^Version  is not a valid version$"):
        parse_ibp_config("   ")


def test_short_version_and_version() -> None:
    assert IBP_0_8_0.release == "0.8.0"
    assert IBP_0_8_0.sub_version == ""
    assert IBP_0_8_0.version == "0.8.0"
    assert IBP_0_8_2.version == "0.8.2"
    assert IBP_0_10_0_IV0.release == "0.10.0"
    assert IBP_0_10_0_IV1.version == "0.10.0-IV1"
    assert IBP_1_0_IV0.release == "1.0"
    assert IBP_1_0_IV0.version == "1.0-IV0"
    assert IBP_2_7_IV2.release == "2.7"
    assert IBP_2_7_IV2.sub_version == "IV2"
    assert IBP_2_7_IV2.version == "2.7-IV2"
    assert IBP_4_0_IV1.release == "4.0"


# --- gates -----------------------------------------------------------------------------------------------

BOOLEAN_GATES: list[tuple[str, Callable[[MetadataVersion], bool], MetadataVersion]] = [
    ("feature_versioning_enabled", ibp.feature_versioning_enabled, IBP_2_7_IV0),
    ("uses_topic_ids", ibp.uses_topic_ids, IBP_2_8_IV0),
    ("zk_migration_supported", ibp.zk_migration_supported, IBP_3_4_IV0),
]


@pytest.mark.parametrize(
    ("gate", "boundary"), [(g, b) for _, g, b in BOOLEAN_GATES], ids=[n for n, _, _ in BOOLEAN_GATES]
)
def test_boolean_gate_boundary(gate: Callable[[MetadataVersion], bool], boundary: MetadataVersion) -> None:
    just_below = ALL_VERSIONS[boundary.ordinal - 1]
    assert gate(just_below) is False
    assert gate(boundary) is True
    for v in ALL_VERSIONS:
        assert gate(v) is (v >= boundary), v


@pytest.mark.parametrize(
    ("v", "expected"),
    [
        (IBP_0_8_0, 2),
        (IBP_0_9_0, 2),
        (IBP_0_10_0_IV0, 2),
        (IBP_0_10_0_IV1, 4),
        (IBP_2_6_IV0, 4),
        (IBP_2_7_IV0, 5),
        (IBP_3_9_IV0, 5),
    ],
    ids=lambda x: str(x),
)
def test_broker_znode_version(v: MetadataVersion, expected: int) -> None:
    assert ibp.broker_znode_version(v) == expected


@pytest.mark.parametrize(
    ("fn", "boundary", "below", "at"),
    [
        (ibp.feature_znode_version, IBP_3_3_IV0, 1, 2),
        (ibp.controller_znode_version, IBP_3_4_IV0, 1, 2),
    ],
    ids=["feature_znode_version", "controller_znode_version"],
)
def test_znode_version_boundaries(
    fn: Callable[[MetadataVersion], int], boundary: MetadataVersion, below: int, at: int
) -> None:
    assert fn(ALL_VERSIONS[boundary.ordinal - 1]) == below
    assert fn(boundary) == at
    for v in ALL_VERSIONS:
        assert fn(v) == (at if v >= boundary else below), v


def test_project_gate_constants_exist() -> None:
    named = [
        IBP_2_4_IV0,
        IBP_2_4_IV1,
        IBP_2_7_IV0,
        IBP_2_7_IV2,
        IBP_2_8_IV0,
        IBP_2_8_IV1,
        IBP_3_0_IV0,
        IBP_3_0_IV1,
        IBP_3_2_IV0,
        IBP_3_3_IV0,
        IBP_3_4_IV0,
        IBP_3_9_IV0,
    ]
    assert named == sorted(named)
    assert all(v in ALL_VERSIONS for v in named)
