"""The reassign tool's JSON files: Kafka's format out, Kafka's rules and messages in, and for malformed input
a message naming the entry and field, never another exception."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from migrate.reassign.execute import parse_execute_plan
from migrate.reassign.output import ToolError
from migrate.reassign.plan_files import (
    PlanFileError,
    PlannedPartition,
    format_assignment,
    parse_reassignment,
    parse_topics_to_move,
    read_text,
)


def test_format_is_kafkas_compact_json_sorted_by_topic_then_partition() -> None:
    assert format_assignment({("foo", 1): [1, 2, 3], ("bar", 0): [3], ("foo", 0): [2]}) == (
        '{"version":1,"partitions":[{"topic":"bar","partition":0,"replicas":[3],"log_dirs":["any"]},'
        '{"topic":"foo","partition":0,"replicas":[2],"log_dirs":["any"]},'
        '{"topic":"foo","partition":1,"replicas":[1,2,3],"log_dirs":["any","any","any"]}]}'
    )
    assert format_assignment({("t", 10): [1], ("t", 9): [1]}).index('"partition":9') < 60  # numeric order
    assert '"log_dirs":["/d1","any"]' in format_assignment({("t", 0): [1, 2]}, {("t", 0, 1): "/d1"})


def test_parse_round_trips_and_defaults() -> None:
    text = (
        '{"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["any","/d"]},'
        '{"topic":"u","partition":3,"replicas":[4],"extra":1}]}'
    )
    assert parse_reassignment(text) == [
        PlannedPartition("t", 0, (1, 2), ("any", "/d")),
        PlannedPartition("u", 3, (4,), ("any",)),
    ]
    assert parse_reassignment('{"version":1}') == []
    assert parse_topics_to_move('{"topics":[{"topic":"a"},{"topic":"b"}],"version":1}') == ["a", "b"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"version":2,"partitions":[]}', "Not supported version field value 2"),
        ('{"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["any"]}]}',
         "Size of replicas list [1, 2] is different from size of log dirs list [any] for partition t-0"),
        ('{"partitions":[{"partition":0,"replicas":[1]}]}', "partitions[0]: No such field exists: `topic`"),
        ('{"partitions":[{"topic":"t","partition":0,"replicas":[1,"a"]}]}',
         'partitions[0].replicas[1]: expected an int, got "a"'),
        ('{"partitions":[{"topic":"t","partition":1.5,"replicas":[1]}]}',
         "partitions[0].partition: expected an int, got 1.5"),
        ('{"partitions":[{"topic":7,"partition":0,"replicas":[1]}]}', "partitions[0].topic: expected a string, got 7"),
        ('{"partitions":{"topic":"t"}}', "partitions: expected an array"),
        ("[1]", "reassignment JSON: expected an object, got [1]"),
    ],
)  # fmt: skip
def test_bad_reassignment_files_name_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(PlanFileError) as info:
        parse_reassignment(text)
    assert info.value.message.startswith(message)


def test_invalid_json() -> None:
    with pytest.raises(PlanFileError, match="not valid JSON"):
        parse_reassignment('{"partitions": [')
    with pytest.raises(PlanFileError, match=r"^The input string is not a valid JSON$"):
        parse_topics_to_move("{nope")


@pytest.mark.parametrize(
    ("partitions", "message"),
    [
        ([], "Partition reassignment list cannot be empty"),
        ([{"topic": "t", "partition": 0, "replicas": []}], "Partition replica list cannot be empty"),
        ([{"topic": "t", "partition": 0, "replicas": [1]}, {"topic": "t", "partition": 0, "replicas": [2]}],
         "Partition reassignment contains duplicate topic partitions: t-0"),
        ([{"topic": "t", "partition": 0, "replicas": [1, 1, 2, 2]}, {"topic": "u", "partition": 1, "replicas": [3, 3]}],
         "Partition replica lists may not contain duplicate entries: t-0 contains multiple entries for 1,2. "
         "u-1 contains multiple entries for 3"),
    ],
)  # fmt: skip
def test_executes_checks_are_kafkas(partitions: list[object], message: str) -> None:
    with pytest.raises(ToolError) as info:
        parse_execute_plan(orjson.dumps({"version": 1, "partitions": partitions}).decode())
    assert info.value.message == message and not info.value.terse


def test_unreadable_files_name_themselves() -> None:
    with pytest.raises(PlanFileError, match=r"/no/such/plan\.json \(No such file or directory\)"):
        read_text("/no/such/plan.json")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["version", "partitions", "topic", "partition", "replicas", "log_dirs", "topics", "x"]),
        inner, max_size=5),
    max_leaves=20,
)  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(json_values)
def test_any_json_document_parses_or_fails_with_a_plan_file_error(value: object) -> None:
    text = orjson.dumps(value).decode()
    for parse in (parse_reassignment, parse_topics_to_move):
        try:
            parse(text)
        except PlanFileError as exc:
            assert exc.message


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_any_text_parses_or_fails_with_a_plan_file_error(text: str) -> None:
    for parse in (parse_reassignment, parse_topics_to_move):
        try:
            parse(text)
        except PlanFileError as exc:
            assert exc.message
