"""The reassign tool's JSON files against Kafka 3.9.

Expected messages were produced by running Kafka 3.9.0-rc3's server-common JSON classes (Json,
JsonValue, JsonObject, DecodeJson, on Jackson 2.14) through the calls parsePartitionReassignmentData and
parseTopicsData make, and printing what ReassignPartitionsCommand.main prints ("Error: " + message); ours
adds where the bad value is (" at partitions[0].replicas[1]"). Java's Double.toString values come from JDK
17's jshell, where JDK 17 and 21 agree.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from migrate.reassign.plan_files import (
    PlanFileError,
    PlannedPartition,
    _java_double,
    check_execute,
    format_assignment,
    parse_reassignment,
    parse_topics_to_move,
    read_text,
    sorted_tps,
    targets_and_log_dirs,
    tp,
    tpr,
)


def reassign_error(text: str) -> str:
    with pytest.raises(PlanFileError) as info:
        parse_reassignment(text)
    assert info.value.terse is False  # Kafka prints "Error: " + message for all of them
    return info.value.message


def topics_error(text: str) -> str:
    with pytest.raises(PlanFileError) as info:
        parse_topics_to_move(text)
    assert info.value.terse is False
    return info.value.message


def execute_error(planned: list[PlannedPartition]) -> str:
    with pytest.raises(PlanFileError) as info:
        check_execute(planned)
    assert info.value.terse is False
    return info.value.message


def P(topic: str, partition: int, *replicas: int) -> PlannedPartition:
    return PlannedPartition(topic, partition, replicas, ("any",) * len(replicas))


# ---- writing ----------------------------------------------------------------------------------------------


def test_format_assignment_is_kafkas_compact_json_sorted_by_topic_then_partition() -> None:
    text = format_assignment({("foo", 1): [1, 2, 3], ("bar", 0): [3]})
    assert text == (
        '{"version":1,"partitions":[{"topic":"bar","partition":0,"replicas":[3],"log_dirs":["any"]},'
        '{"topic":"foo","partition":1,"replicas":[1,2,3],"log_dirs":["any","any","any"]}]}'
    )


def test_format_assignment_orders_partitions_as_numbers() -> None:
    text = format_assignment({("t", 10): [1], ("t", 2): [1], ("t", -1): [1]})
    assert [p["partition"] for p in orjson.loads(text)["partitions"]] == [-1, 2, 10]


def test_format_assignment_orders_topics_by_utf16_units() -> None:
    # Java's String.compareTo: U+1F600 is the surrogate pair D83D DE00, below U+FFFF; Python puts it after.
    text = format_assignment({("\uffff", 0): [1], ("\U0001f600", 0): [1], ("Z", 0): [1], ("a", 0): [1]})
    assert [p["topic"] for p in orjson.loads(text)["partitions"]] == ["Z", "a", "\U0001f600", "\uffff"]


def test_format_assignment_keeps_the_replica_order_and_writes_given_log_dirs() -> None:
    dirs = {("t", 0, 3): "/d1", ("t", 0, 2): "/d2", ("t", 9, 1): "/unused"}
    text = format_assignment({("t", 0): [3, 1, 2], ("u", 0): [1]}, dirs)
    assert text == (
        '{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[3,1,2],"log_dirs":["/d1","any","/d2"]},'
        '{"topic":"u","partition":0,"replicas":[1],"log_dirs":["any"]}]}'
    )


def test_format_assignment_escapes_as_jackson_does() -> None:
    text = format_assignment({("t", 0): [1]}, {("t", 0, 1): '/d\x01\x1f\n\\u0041"\x7fé'})
    assert text.endswith('"log_dirs":["/d\\u0001\\u001F\\n\\\\u0041\\"\x7fé"]}]}')


def test_format_assignment_empty() -> None:
    assert format_assignment({}) == '{"version":1,"partitions":[]}'


def test_a_plan_read_back_formats_as_it_was_written() -> None:
    text = (
        '{"version":1,"partitions":[{"topic":"a","partition":0,"replicas":[2,1],"log_dirs":["any","/x"]},'
        '{"topic":"b","partition":3,"replicas":[1],"log_dirs":["any"]}]}'
    )
    targets, log_dirs = targets_and_log_dirs(parse_reassignment(text))
    assert format_assignment(dict(targets), log_dirs) == text


def test_tp_tpr_and_kafkas_order() -> None:
    assert tp("t", 0) == "t-0"
    assert tpr("t", 0, 1) == "t-0-1"
    assert tpr("a-b", -1, 2) == "a-b--1-2"
    assert sorted_tps([("b", 0), ("a", 2), ("a", 10), ("a", 1)]) == [("a", 1), ("a", 2), ("a", 10), ("b", 0)]


assignments = st.dictionaries(
    st.tuples(st.text(min_size=1, max_size=10), st.integers(-(2**31), 2**31 - 1)),
    st.lists(st.integers(-(2**31), 2**31 - 1), max_size=5),
    max_size=8,
)


@settings(max_examples=200, deadline=None)
@given(assignments)
def test_written_files_read_back(assignment: dict[tuple[str, int], list[int]]) -> None:
    planned = parse_reassignment(format_assignment(assignment))
    assert [(p.topic, p.partition) for p in planned] == sorted_tps(assignment)
    assert {(p.topic, p.partition): list(p.replicas) for p in planned} == assignment
    assert all(p.log_dirs == ("any",) * len(p.replicas) for p in planned)


# ---- reading: what Kafka accepts --------------------------------------------------------------------------


def test_parse_a_plan_file() -> None:
    text = (
        '{"version":1,"partitions":[{"topic":"foo","partition":1,"replicas":[1,2,3],'
        '"log_dirs":["/d1","any","/d3"]},{"topic":"bar","partition":0,"replicas":[4]}]}'
    )
    assert parse_reassignment(text) == [
        PlannedPartition("foo", 1, (1, 2, 3), ("/d1", "any", "/d3")),
        PlannedPartition("bar", 0, (4,), ("any",)),
    ]


@pytest.mark.parametrize(
    ("text", "planned"),
    [
        ("{}", []),  # version and partitions are both optional
        ('{"version":1}', []),
        ('{"topics":[{"topic":"t"}]}', []),
        ('{"version":1} \n\t', []),
        ('{"partitions":[]}', []),
        # what Kafka leaves to the checks against the cluster: negative ids, relative dirs, unknown fields
        (
            '{"partitions":[{"topic":"t","partition":-1,"replicas":[-5],"log_dirs":["rel"],"extra":1}]}',
            [PlannedPartition("t", -1, (-5,), ("rel",))],
        ),
        ('{"partitions":[{"topic":"","partition":-0,"replicas":[]}]}', [PlannedPartition("", 0, (), ())]),
        # the last of duplicate keys wins
        ('{"partitions":[{"topic":"t","partition":0,"replicas":[1]}],"partitions":[]}', []),
        (
            '{"partitions":[{"topic":"a","topic":"b","partition":0,"replicas":[1]}]}',
            [PlannedPartition("b", 0, (1,), ("any",))],
        ),
        # duplicates are execute's to refuse (check_execute); verify and cancel take them as they are
        (
            '{"partitions":[{"topic":"t","partition":0,"replicas":[1,1]},{"topic":"t","partition":0,"replicas":[2]}]}',
            [PlannedPartition("t", 0, (1, 1), ("any", "any")), PlannedPartition("t", 0, (2,), ("any",))],
        ),
        (
            '{"partitions":[{"topic":"t","partition":2147483647,"replicas":[-2147483648]}]}',
            [PlannedPartition("t", 2**31 - 1, (-(2**31),), ("any",))],
        ),
    ],
)
def test_kafka_accepts(text: str, planned: list[PlannedPartition]) -> None:
    assert parse_reassignment(text) == planned


# ---- reading: Kafka's refusals, in Kafka's words ----------------------------------------------------------

R = '{"partitions":[{"topic":"t","partition":0,"replicas":%s}]}'


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "The input string shouldn't be empty"),
        ("   \n", "Expected JSON object, received "),  # Jackson's MissingNode prints as nothing
        ("[1]", "Expected JSON object, received [1]"),
        ("null", "Expected JSON object, received null"),
        ('{"version":"1"}', 'Expected `Integer` value, received "1" at version'),
        ('{"version":null}', "Expected `Integer` value, received null at version"),
        ('{"version":1.0}', "Expected `Integer` value, received 1.0 at version"),
        ('{"version":2}', "Not supported version field value 2"),
        ('{"version":-1,"partitions":5}', "Not supported version field value -1"),  # version is read first
        ('{"partitions":null}', "Expected JSON array, received null at partitions"),
        ('{"partitions":{"a":1}}', 'Expected JSON array, received {"a":1} at partitions'),
        (
            '{"partitions":[{"topic":"t","partition":0,"replicas":[1]},5]}',
            "Expected JSON object, received 5 at partitions[1]",
        ),
        ('{"partitions":[{"partition":0,"replicas":[1]}]}', "No such field exists: `topic` at partitions[0]"),
        ('{"partitions":[{"topic":"t","replicas":[1]}]}', "No such field exists: `partition` at partitions[0]"),
        ('{"partitions":[{"topic":"t","partition":0}]}', "No such field exists: `replicas` at partitions[0]"),
        (
            '{"partitions":[{"topic":1,"partition":0,"replicas":[1]}]}',
            "Expected `String` value, received 1 at partitions[0].topic",
        ),
        (
            '{"partitions":[{"topic":null,"partition":0}]}',
            "Expected `String` value, received null at partitions[0].topic",
        ),
        (
            '{"partitions":[{"topic":"t","partition":1.5,"replicas":[1]}]}',
            "Expected `Integer` value, received 1.5 at partitions[0].partition",
        ),
        (
            '{"partitions":[{"topic":"t","partition":3000000000,"replicas":[1]}]}',
            "Expected `Integer` value, received 3000000000 at partitions[0].partition",
        ),
        (
            '{"partitions":[{"topic":"t","partition":123456789012345678901234,"replicas":[1]}]}',
            "Expected `Integer` value, received 123456789012345678901234 at partitions[0].partition",
        ),
        (R % '[1,"a"]', 'Expected `Integer` value, received "a" at partitions[0].replicas[1]'),
        (R % "7", "Expected `JSON array` value, received 7 at partitions[0].replicas"),
        (R % "null", "Expected `JSON array` value, received null at partitions[0].replicas"),
        (R % "[true, 2]", "Expected `Integer` value, received true at partitions[0].replicas[0]"),
        (R % "[1.0]", "Expected `Integer` value, received 1.0 at partitions[0].replicas[0]"),
        (R % "[1E2]", "Expected `Integer` value, received 100.0 at partitions[0].replicas[0]"),
        (R % "[100000000000000000000.0]", "Expected `Integer` value, received 1.0E20 at partitions[0].replicas[0]"),
        (R % "[0.1]", "Expected `Integer` value, received 0.1 at partitions[0].replicas[0]"),
        (R % "[-0.0]", "Expected `Integer` value, received -0.0 at partitions[0].replicas[0]"),
        (R % "[1E-7]", "Expected `Integer` value, received 1.0E-7 at partitions[0].replicas[0]"),
        (
            R % '[{"x":[1e20,0.001,1E7,-0.0,"q\\"z"]}]',
            'Expected `Integer` value, received {"x":[1.0E20,0.001,1.0E7,-0.0,"q\\"z"]} at partitions[0].replicas[0]',
        ),
        (
            R % '[{"a":null,"b":[true,false],"c\\u0002":-5}]',
            'Expected `Integer` value, received {"a":null,"b":[true,false],"c\\u0002":-5} at partitions[0].replicas[0]',
        ),
        (
            R % '["t\\u0001\\b\\t\\n\\f\\r\\u001f\\u007f\\u00e9/\\u2028\\\\x"]',
            'Expected `Integer` value, received "t\\u0001\\b\\t\\n\\f\\r\\u001F\x7fé/\u2028\\\\x"'
            " at partitions[0].replicas[0]",
        ),
        (
            '{"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["any"]}]}',
            "Size of replicas list [1, 2] is different from size of log dirs list [any] for partition t-0",
        ),
        (
            '{"partitions":[{"topic":"t","partition":0,"replicas":[1],"log_dirs":["any","x"]}]}',
            "Size of replicas list [1] is different from size of log dirs list [any, x] for partition t-0",
        ),
        (
            '{"partitions":[{"topic":"t","partition":0,"replicas":[1],"log_dirs":[3]}]}',
            "Expected `String` value, received 3 at partitions[0].log_dirs[0]",
        ),
        (
            '{"partitions":[{"topic":"t","partition":0,"replicas":[1],"log_dirs":null}]}',
            "Expected `JSON array` value, received null at partitions[0].log_dirs",
        ),
    ],
)
def test_kafkas_messages(text: str, message: str) -> None:
    assert reassign_error(text) == message


def test_fields_are_checked_in_kafkas_order() -> None:
    # topic, partition, replicas, log_dirs; the first entry's problems before the second's
    assert reassign_error('{"partitions":[{"topic":1,"partition":"x","replicas":null}]}').startswith(
        "Expected `String` value, received 1"
    )
    assert reassign_error('{"partitions":[{"partition":"x","replicas":[1],"log_dirs":[]}]}').startswith(
        "No such field exists: `topic`"
    )
    two = '{"partitions":[{"topic":"t","partition":0,"replicas":[1],"log_dirs":[]},{"topic":5}]}'
    assert reassign_error(two).startswith("Size of replicas list [1]")


@pytest.mark.parametrize(
    ("text", "detail"),
    [
        # Jackson would accept these three (the first value alone; a lone surrogate; Infinity): we refuse
        ('{"version":1} garbage', "line 1, column 15: unexpected content after document"),
        (
            '{"partitions":[{"topic":"\\ud800","partition":0,"replicas":[1]}]}',
            "line 1, column 26: no low surrogate in string",
        ),
        (R % "[1e400]", "line 1, column 55: number is infinity when parsed as double"),
        # and Jackson refuses these too, in its own words
        (R % "[NaN]", "line 1, column 55: unexpected character, expected a JSON value"),
        ('{"partitions":[],}', "line 1, column 17: trailing comma is not allowed"),
        ('\ufeff{"partitions":[]}', "line 1, column 1: UTF-8 byte order mark (BOM) is not supported"),
        (
            '{\n  "partitions": [\n    {"topic": "t",, }\n  ]\n}',
            "line 3, column 19: unexpected character, expected a string key",
        ),
        ('{"a": 1} // comment', "line 1, column 10: unexpected content after document"),
    ],
)
def test_syntax_errors_name_line_and_column(text: str, detail: str) -> None:
    assert reassign_error(text) == f"The reassignment JSON is not valid JSON: {detail}"


def test_deeply_nested_values_are_reported_not_crashed_on() -> None:
    deep = "[" * 500 + "]" * 500
    message = reassign_error(R % f"[{deep}]")
    assert message == f"Expected `Integer` value, received {deep} at partitions[0].replicas[0]"
    too_deep = reassign_error(R % ("[" * 5000 + "]" * 5000))
    assert too_deep.startswith("The reassignment JSON is not valid JSON: line 1, column ")


def test_targets_and_log_dirs_as_kafka_returns_them() -> None:
    planned = parse_reassignment(
        '{"partitions":[{"topic":"b","partition":1,"replicas":[3,1],"log_dirs":["/x","any"]},'
        '{"topic":"a","partition":0,"replicas":[2,2],"log_dirs":["/p","/q"]},{"topic":"c","partition":0,"replicas":[]}]}'
    )
    targets, log_dirs = targets_and_log_dirs(planned)
    assert targets == [(("b", 1), [3, 1]), (("a", 0), [2, 2]), (("c", 0), [])]  # file order, duplicates kept
    assert log_dirs == {("b", 1, 3): "/x", ("a", 0, 2): "/q"}  # "any" left out; the last dir of a replica wins


# ---- the topics file --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "topics"),
    [
        ('{"topics":[{"topic":"foo"},{"topic":"foo1"}],"version":1}', ["foo", "foo1"]),
        ('{"topics":[{"topic":"a"},{"topic":"a"}]}', ["a", "a"]),  # duplicates: refused by generate, after the brokers
        ("{}", []),
        ('{"version":1,"topics":[]}', []),
        ('{"topics":[{"topic":"x","partition":3}],"extra":[1]}', ["x"]),
    ],
)
def test_topics_file(text: str, topics: list[str]) -> None:
    assert parse_topics_to_move(text) == topics


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "The input string is not a valid JSON"),
        ("{", "The input string is not a valid JSON (line 1, column 2: unexpected end of data)"),
        (" ", "Expected JSON object, received "),
        ("[1]", "Expected JSON object, received [1]"),
        ("null", "Expected JSON object, received null"),
        ('{"version":"1"}', 'Expected `Integer` value, received "1" at version'),
        ('{"version":2}', "Not supported version field value 2"),
        ('{"topics":5}', "Expected JSON array, received 5 at topics"),
        ('{"topics":["t"]}', 'Expected JSON object, received "t" at topics[0]'),
        ('{"topics":[{"topic":"a"},{"x":5}]}', "No such field exists: `topic` at topics[1]"),
        ('{"topics":[{"topic":5}]}', "Expected `String` value, received 5 at topics[0].topic"),
    ],
)
def test_topics_file_refusals(text: str, message: str) -> None:
    assert topics_error(text) == message


# ---- execute's checks (parseExecuteAssignmentArgs) --------------------------------------------------------


def test_execute_refuses_an_empty_plan() -> None:
    assert execute_error([]) == "Partition reassignment list cannot be empty"


def test_execute_refuses_an_empty_replica_list_before_duplicates() -> None:
    planned = [P("t", 0, 1), P("t", 0), P("u", 0, 1, 1)]
    assert execute_error(planned) == "Partition replica list cannot be empty"


def test_execute_lists_duplicate_partitions_in_java_hashset_order() -> None:
    # TopicPartition.hashCode: 31 * (31 + partition) + topic.hashCode(): a-1 = 1089 (bucket 1), b-0 = 1059
    # (bucket 3) in a 16-bucket HashSet, so a-1 comes first whatever the file order.
    planned = [P("b", 0, 1), P("a", 1, 1), P("b", 0, 2), P("a", 1, 2), P("a", 1, 3), P("c", 0, 1)]
    assert execute_error(planned) == "Partition reassignment contains duplicate topic partitions: a-1,b-0"


def test_execute_lists_duplicate_replicas_per_partition() -> None:
    planned = [P("t", 0, 3, 2, 3, 2, 1), P("u", 1, 1, 2), P("v", 2, 17, 1, 17, 1, 1)]
    # Integer hash order: 2 before 3; 17 and 1 share bucket 1 and keep the order they were found in.
    assert execute_error(planned) == (
        "Partition replica lists may not contain duplicate entries: "
        "t-0 contains multiple entries for 2,3. v-2 contains multiple entries for 17,1"
    )


def test_execute_accepts_a_clean_plan() -> None:
    check_execute([P("t", 0, 1, 2), P("t", 1, 2, 3), P("u", 0, -1)])


# ---- reading the file -------------------------------------------------------------------------------------


def test_read_text(tmp_path: Path) -> None:
    good = tmp_path / "plan.json"
    good.write_bytes(b'{"version":1}\n')
    assert read_text(str(good)) == '{"version":1}\n'
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'{"topic":"\xff"}')
    assert read_text(str(bad)) == '{"topic":"\ufffd"}'  # as Java's UTF-8 decoder replaces it


def test_read_text_names_the_file_as_kafka_does(tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    with pytest.raises(PlanFileError) as info:
        read_text(str(missing))
    assert info.value.message == f"Unable to read file {missing} (No such file or directory)"
    assert info.value.terse is False
    with pytest.raises(PlanFileError) as info:
        read_text(str(tmp_path))
    assert info.value.message == f"Unable to read file {tmp_path} (Is a directory)"
    with pytest.raises(PlanFileError) as info:
        read_text("a\0b")
    assert info.value.message.startswith("Unable to read file a\0b (")


# ---- Java's Double.toString -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1e20, "1.0E20"),
        (0.001, "0.001"),
        (1e7, "1.0E7"),
        (1234567.0, "1234567.0"),
        (1e-4, "1.0E-4"),
        (-0.0, "-0.0"),
        (0.0, "0.0"),
        (100.0, "100.0"),
        (0.002, "0.002"),
        (1.2345678901234569e23, "1.2345678901234569E23"),
        (0.3, "0.3"),
        (2 / 3, "0.6666666666666666"),
        (1 / 3 * 1e-5, "3.3333333333333333E-6"),
        (1.23e302, "1.23E302"),
        (9999999.0, "9999999.0"),
        (9999999.999, "9999999.999"),
        (0.000999, "9.99E-4"),
        (5e-5, "5.0E-5"),
        (123456789.0, "1.23456789E8"),
        (1.7976931348623157e308, "1.7976931348623157E308"),
        (5e-324, "4.9E-324"),
        (-1.5, "-1.5"),
        (float("inf"), "Infinity"),
        (float("-inf"), "-Infinity"),
        (float("nan"), "NaN"),
    ],
)
def test_java_double(value: float, text: str) -> None:
    assert _java_double(value) == text


# ---- never anything but PlanFileError ---------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20,
)
FIELD_NAMES = ["version", "partitions", "topics", "topic", "partition", "replicas", "log_dirs"]


def _mutated_plan() -> st.SearchStrategy[Any]:
    """Near-valid plan documents with any field replaced by any value (or dropped)."""
    entry = st.fixed_dictionaries(
        {},
        optional={
            "topic": st.text(max_size=4) | json_values,
            "partition": st.integers(-3, 3) | json_values,
            "replicas": st.lists(st.integers(-2, 4), max_size=4) | json_values,
            "log_dirs": st.lists(st.sampled_from(["any", "/d", "rel"]), max_size=4) | json_values,
        },
    )
    return st.fixed_dictionaries(
        {},
        optional={
            "version": st.just(1) | json_values,
            "partitions": st.lists(entry | json_values, max_size=4) | json_values,
        },
    )


def _only_plan_file_errors(text: str) -> None:
    for parse in (parse_reassignment, parse_topics_to_move):
        try:
            result = parse(text)
        except PlanFileError as e:
            assert isinstance(e.message, str) and e.message and e.terse is False
            continue
        if parse is parse_reassignment:
            assert all(isinstance(p, PlannedPartition) and len(p.replicas) == len(p.log_dirs) for p in result)
            with contextlib.suppress(PlanFileError):
                check_execute(result)  # type: ignore[arg-type]


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60))
def test_any_text_is_parsed_or_refused(text: str) -> None:
    _only_plan_file_errors(text)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_any_json_value_is_parsed_or_refused(value: Any) -> None:
    _only_plan_file_errors(json.dumps(value))


@settings(max_examples=500, deadline=None)
@given(_mutated_plan())
def test_any_near_valid_plan_is_parsed_or_refused(doc: Any) -> None:
    _only_plan_file_errors(json.dumps(doc))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                '{"',
                '"topic"',
                '"partitions"',
                ":",
                ",",
                "[",
                "]",
                "{",
                "}",
                "1",
                "-1",
                "1e400",
                "123456789012345678901234",
                '"t"',
                "null",
                "true",
                " ",
                "\n",
                "\\u",
                '"\\ud800"',
                "NaN",
                "0.5",
            ]
        ),
        max_size=30,
    )
)
def test_json_like_token_soup_is_parsed_or_refused(tokens: list[str]) -> None:
    _only_plan_file_errors("".join(tokens))
