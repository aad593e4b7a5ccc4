"""The AlterPartitionReassignments answer spliced from kio's encodings equals kio's own encoding of it."""

from __future__ import annotations

import datetime
from types import ModuleType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.alter_partition_reassignments.v0 import response as v0
from kio.schema.alter_partition_reassignments.v1 import response as v1
from kio.static.primitive import i32Timedelta

from controller.wire.codec import build, encode_entity, spliced
from controller.wire.dispatch import response_errors
from controller.wire.handlers.base import code
from controller.wire.handlers.reassignments import encoded_answer
from zkmodel import errorcodes as E
from zkmodel.errorcodes import KafkaError

ZERO = i32Timedelta.parse(datetime.timedelta(0))
OUTCOMES = [
    (E.NONE, None),
    (E.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist."),
    (E.NO_REASSIGNMENT_IN_PROGRESS, None),
    (E.INVALID_REPLICA_ASSIGNMENT, "Replica assignment has brokers that are not alive. Ünïcode ✓"),
]

topics = st.lists(
    st.tuples(
        st.text(min_size=1, max_size=300),
        st.lists(st.tuples(st.integers(0, 2**31 - 1), st.sampled_from(range(len(OUTCOMES)))), max_size=140),
    ),
    max_size=8,
)


def _head(schema: ModuleType) -> object:
    return build(
        schema.AlterPartitionReassignmentsResponse,
        throttle_time=ZERO,
        allow_replication_factor_change=False,
        error_code=code(E.NONE),
        error_message=None,
        responses=(),
    )


def _kio(schema: ModuleType, wanted: list[tuple[str, list[tuple[int, int]]]]) -> bytes:
    """The same answer built as entities and encoded by kio alone."""
    part_cls, topic_cls = schema.ReassignablePartitionResponse, schema.ReassignableTopicResponse
    entries = tuple(
        build(
            topic_cls,
            name=name,
            partitions=tuple(
                build(part_cls, partition_index=i, error_code=code(OUTCOMES[o][0]), error_message=OUTCOMES[o][1])
                for i, o in parts
            ),
        )
        for name, parts in wanted
    )
    response = build(
        schema.AlterPartitionReassignmentsResponse,
        throttle_time=ZERO,
        allow_replication_factor_change=False,
        error_code=code(E.NONE),
        error_message=None,
        responses=entries,
    )
    return encode_entity(schema.AlterPartitionReassignmentsResponse, response)


@pytest.mark.parametrize("schema", [v0, v1], ids=["v0", "v1"])
@settings(max_examples=60, deadline=None)
@given(wanted=topics)
def test_the_spliced_answer_is_kios_encoding(
    schema: ModuleType, wanted: list[tuple[str, list[tuple[int, int]]]]
) -> None:
    by_partition: dict[tuple[str, int], tuple[KafkaError, str | None]] = {}
    for name, parts in wanted:
        for i, o in parts:
            by_partition.setdefault((name, i), OUTCOMES[o])
    # a topic may repeat a partition index with another outcome; the answer follows the lookup, as kio's must
    expected_wanted = [
        (name, [(i, OUTCOMES.index(by_partition[(name, i)])) for i, _ in parts]) for name, parts in wanted
    ]
    answer = encoded_answer(
        schema, _head(schema), ((n, [i for i, _ in ps]) for n, ps in wanted), lambda n, i: by_partition[(n, i)]
    )
    assert answer.body == _kio(schema, expected_wanted)
    assert sorted(response_errors(answer)) == sorted(
        OUTCOMES[o][0].code for _, ps in expected_wanted for _, o in ps if o
    )


def test_an_answer_with_ten_thousand_partitions_of_one_topic_needs_a_longer_array_length() -> None:
    wanted = [("t", [(i, i % 2) for i in range(10_000)])]
    answer = encoded_answer(v1, _head(v1), [("t", list(range(10_000)))], lambda _n, i: OUTCOMES[i % 2])
    assert answer.body == _kio(v1, wanted)
    assert len(answer.errors) == 5_000


def test_splicing_refuses_an_encoding_that_does_not_end_in_an_empty_array() -> None:
    with pytest.raises(ValueError, match="empty compact array"):
        spliced(b"\x02\x05\x00", [b"x"])
