"""Topic-name rules, pinned to Kafka 3.9.0-rc3's Topic.java / TopicTest.java and TopicCommand."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zkmodel.topic_names import (
    COLLISION_WARNING,
    INTERNAL_TOPICS,
    LEGAL_CHARS,
    MAX_NAME_LENGTH,
    InvalidTopicName,
    check_no_collision,
    collision_warning,
    has_collision,
    has_collision_chars,
    invalid_reason,
    is_internal,
    is_valid,
    unify_collision_chars,
    validate,
)

LEGAL_ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"
CHARS_MESSAGE = "contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"


# --- TopicTest --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["valid", "TOPIC", "nAmEs", "ar6", "VaL1d", "_0-9_.", "...", "aB3" * 83],
)
def test_accepts_valid_topic_names(name: str) -> None:
    validate(name)
    assert is_valid(name)
    assert invalid_reason(name) is None


@pytest.mark.parametrize("name", ["", "foo bar", "..", "foo:bar", "foo=bar", ".", "a" * 250])
def test_throws_on_invalid_topic_names(name: str) -> None:
    with pytest.raises(InvalidTopicName):
        validate(name)
    assert not is_valid(name)


INVALID_CHARS = ["/", "\\", ",", "\u0000", ":", '"', "'", ";", "*", "?", " ", "\t", "\r", "\n", "="]


@pytest.mark.parametrize("c", INVALID_CHARS, ids=repr)
def test_recognizes_invalid_characters(c: str) -> None:
    assert not is_valid("Is " + c + "illegal")  # Kafka's own case
    name = "Is" + c + "illegal"  # and with the invalid char as the only one
    with pytest.raises(InvalidTopicName) as excinfo:
        validate(name)
    assert str(excinfo.value) == f"Topic name is invalid: '{name}' {CHARS_MESSAGE}"


def test_topic_has_collision_chars() -> None:
    for topic in ["start", "end", "middle", "many"]:
        assert not has_collision_chars(topic)
    for topic in [".start", "end.", "mid.dle", ".ma.ny.", "_start", "end_", "mid_dle", "_ma_ny."]:
        assert has_collision_chars(topic)


def test_unify_collision_chars() -> None:
    assert unify_collision_chars("topic") == "topic"
    assert unify_collision_chars(".topic") == "_topic"
    assert unify_collision_chars("_topic") == "_topic"
    assert unify_collision_chars("_.topic") == "__topic"


def test_topic_has_collision() -> None:
    period = [".topic", "to.pic", "topic.", "topic"]
    underscore = ["_topic", "to_pic", "topic_", "topic"]
    for topic in period + underscore:
        assert has_collision(topic, topic)
    for a, b in zip(period, underscore, strict=True):
        assert has_collision(a, b)
    for a, b in zip(period, reversed(underscore), strict=True):
        assert not has_collision(a, b)


# --- exact messages and boundaries ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "Topic name is invalid: the empty string is not allowed"),
        (".", "Topic name is invalid: '.' is not allowed"),
        ("..", "Topic name is invalid: '..' is not allowed"),
        ("foo bar", f"Topic name is invalid: 'foo bar' {CHARS_MESSAGE}"),
        (
            "a" * 250,
            f"Topic name is invalid: the length of '{'a' * 250}' is longer than the max allowed length 249",
        ),
    ],
    ids=["empty", "dot", "dotdot", "space", "len250"],
)
def test_exact_messages(name: str, message: str) -> None:
    with pytest.raises(InvalidTopicName) as excinfo:
        validate(name)
    err = excinfo.value
    assert str(err) == message
    assert err.message == message
    assert err.topic == name
    assert invalid_reason(name) == message.removeprefix("Topic name is invalid: ")


def test_error_identity() -> None:
    err = InvalidTopicName("x")
    assert isinstance(err, ValueError)
    assert InvalidTopicName.error_name == "INVALID_TOPIC_EXCEPTION"
    assert InvalidTopicName.error_code == 17
    assert err.topic is None


def test_custom_log_prefix() -> None:
    with pytest.raises(InvalidTopicName, match=r"^Topic is invalid: '\.' is not allowed$"):
        validate(".", log_prefix="Topic")


def test_length_boundary() -> None:
    assert MAX_NAME_LENGTH == 249
    validate("x" * 249)
    validate("." * 249)
    with pytest.raises(InvalidTopicName, match="longer than the max allowed length 249"):
        validate("x" * 250)


def test_length_is_checked_before_characters() -> None:
    reason = invalid_reason("!" * 250)
    assert reason is not None
    assert reason.endswith("is longer than the max allowed length 249")


def test_length_counts_utf16_units_like_java() -> None:
    # 125 astral chars are 250 Java chars; 124 plus one ASCII char are 249.
    long_reason = invalid_reason("\U0001f600" * 125)
    assert long_reason is not None and "longer than the max allowed length" in long_reason
    short_reason = invalid_reason("\U0001f600" * 124 + "a")
    assert short_reason is not None and short_reason.endswith(CHARS_MESSAGE)


@pytest.mark.parametrize(
    "c",
    [
        "\u00e9",  # Latin letter outside ASCII
        "\u0430",  # Cyrillic a
        "\uff11",  # fullwidth digit one
        "\u0660",  # Arabic-Indic digit zero
        "\u00a0",  # no-break space
        "\x7f",
        "\x1b",
        "+",
        "@",
        "#",
        "$",
        "%",
        "&",
        "(",
        "[",
        "{",
        "<",
        "|",
        "~",
        "`",
        "!",
        "^",
        "\U0001f600",
    ],
    ids=repr,
)
def test_each_illegal_char_class(c: str) -> None:
    for name in (c, "a" + c, c + "a", "a" + c + "b"):
        assert invalid_reason(name) == f"'{name}' {CHARS_MESSAGE}"


def test_every_legal_char_alone_is_legal() -> None:
    assert LEGAL_CHARS == "[a-zA-Z0-9._-]"
    for c in LEGAL_ALPHABET:
        if c != ".":
            validate(c)


# --- internal topics ---------------------------------------------------------------------------------------


def test_internal_topics() -> None:
    assert is_internal("__consumer_offsets")
    assert is_internal("__transaction_state")
    assert is_internal("__share_group_state")  # added to the 3.9 set
    assert not is_internal("__cluster_metadata")
    assert not is_internal("__consumer_offsets2")
    assert not is_internal("consumer_offsets")
    assert frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"}) == INTERNAL_TOPICS


# --- collisions ---------------------------------------------------------------------------------------------


def test_collision_warning_text() -> None:
    expected = (
        "WARNING: Due to limitations in metric names, topics with a period ('.') or underscore ('_') could "
        "collide. To avoid issues it is best to use either, but not both."
    )
    assert expected == COLLISION_WARNING
    assert collision_warning("a.b") == expected
    assert collision_warning("a_b") == expected
    assert collision_warning("a-b") is None
    assert collision_warning("ab") is None


def test_check_no_collision() -> None:
    check_no_collision("a.b", ["c", "a-b"])
    check_no_collision("a.b", ["a.b"])  # the name itself is TopicExists territory, not a collision
    check_no_collision("ab", ["ab", "a_b"])
    with pytest.raises(InvalidTopicName) as excinfo:
        check_no_collision("a.b_c", ["x", "a_b_c", "a.b.c", "a.b_c"])
    assert str(excinfo.value) == "Topic 'a.b_c' collides with existing topics: a_b_c, a.b.c"
    assert excinfo.value.topic == "a.b_c"


# --- properties ------------------------------------------------------------------------------------------


@given(st.text())
def test_validate_raises_only_invalid_topic_name(name: str) -> None:
    try:
        validate(name)
    except InvalidTopicName as err:
        assert str(err).startswith("Topic name is invalid: ")
        assert not is_valid(name)
    else:
        assert is_valid(name)
        assert 1 <= len(name) <= MAX_NAME_LENGTH
        assert all(c in LEGAL_ALPHABET for c in name)


@given(st.text(alphabet=LEGAL_ALPHABET, min_size=1, max_size=249).filter(lambda s: s not in {".", ".."}))
def test_accepts_every_legal_name(name: str) -> None:
    validate(name)
    assert invalid_reason(name) is None


legal_names = st.text(alphabet=LEGAL_ALPHABET, max_size=30)


@given(legal_names, legal_names)
def test_collision_is_symmetric_and_matches_unify(a: str, b: str) -> None:
    assert has_collision(a, b) == has_collision(b, a)
    assert has_collision(a, b) == (a.replace(".", "_") == b.replace(".", "_"))
