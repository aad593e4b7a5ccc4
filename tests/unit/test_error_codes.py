"""The request metrics' error count: every non-zero error_code anywhere in a kio response."""

from __future__ import annotations

import datetime

from kio.schema.alter_partition_reassignments.v0 import response as r
from kio.schema.errors import ErrorCode
from kio.static.primitive import i32, i32Timedelta

from controller.wire.dispatch import error_codes


def _partition(index: int, code: ErrorCode) -> r.ReassignablePartitionResponse:
    return r.ReassignablePartitionResponse(partition_index=i32(index), error_code=code, error_message=None)


def test_error_codes_are_found_at_every_level_and_zeros_are_left_out() -> None:
    response = r.AlterPartitionReassignmentsResponse(
        throttle_time=i32Timedelta.parse(datetime.timedelta(0)),
        error_code=ErrorCode.not_controller,
        error_message=None,
        responses=(
            r.ReassignableTopicResponse(
                name="a",  # type: ignore[arg-type]
                partitions=(_partition(0, ErrorCode.none), _partition(1, ErrorCode.unknown_topic_or_partition)),
            ),
            r.ReassignableTopicResponse(name="b", partitions=()),  # type: ignore[arg-type]
            r.ReassignableTopicResponse(
                name="c",  # type: ignore[arg-type]
                partitions=(_partition(0, ErrorCode.unknown_topic_or_partition), _partition(1, ErrorCode.none)),
            ),
        ),
    )
    assert sorted(error_codes(response)) == sorted([41, 3, 3])


def test_a_response_without_errors_counts_none() -> None:
    response = r.AlterPartitionReassignmentsResponse(
        throttle_time=i32Timedelta.parse(datetime.timedelta(0)),
        error_code=ErrorCode.none,
        error_message=None,
        responses=(r.ReassignableTopicResponse(name="a", partitions=(_partition(0, ErrorCode.none),)),),  # type: ignore[arg-type]
    )
    assert error_codes(response) == []
