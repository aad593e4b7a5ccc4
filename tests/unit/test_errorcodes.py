"""The Kafka error table matches Kafka 3.9.0 (tag 3.9.0-rc3) and its lookups and exception behave."""

import dataclasses
import pickle

import pytest

from zkmodel import errorcodes
from zkmodel.errorcodes import (
    ALL,
    CLUSTER_AUTHORIZATION_FAILED,
    INVALID_REPLICA_ASSIGNMENT,
    INVALID_REQUEST,
    NO_REASSIGNMENT_IN_PROGRESS,
    NONE,
    NOT_CONTROLLER,
    NOT_LEADER_OR_FOLLOWER,
    PRINCIPAL_DESERIALIZATION_FAILURE,
    REASSIGNMENT_IN_PROGRESS,
    REQUEST_TIMED_OUT,
    STALE_CONTROLLER_EPOCH,
    UNKNOWN_SERVER_ERROR,
    UNKNOWN_TOPIC_OR_PARTITION,
    VOTER_NOT_FOUND,
    KafkaApiError,
    KafkaError,
    by_code,
    by_name,
)

# Every error whose Java exception extends RetriableException at 3.9.0-rc3 (worked out from the sources).
KAFKA_RETRIABLE = frozenset(
    {
        "CORRUPT_MESSAGE",
        "UNKNOWN_TOPIC_OR_PARTITION",
        "LEADER_NOT_AVAILABLE",
        "NOT_LEADER_OR_FOLLOWER",
        "REQUEST_TIMED_OUT",
        "REPLICA_NOT_AVAILABLE",
        "NETWORK_EXCEPTION",
        "COORDINATOR_LOAD_IN_PROGRESS",
        "COORDINATOR_NOT_AVAILABLE",
        "NOT_COORDINATOR",
        "NOT_ENOUGH_REPLICAS",
        "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
        "NOT_CONTROLLER",
        "CONCURRENT_TRANSACTIONS",
        "KAFKA_STORAGE_ERROR",
        "FETCH_SESSION_ID_NOT_FOUND",
        "INVALID_FETCH_SESSION_EPOCH",
        "LISTENER_NOT_FOUND",
        "FENCED_LEADER_EPOCH",
        "UNKNOWN_LEADER_EPOCH",
        "OFFSET_NOT_AVAILABLE",
        "PREFERRED_LEADER_NOT_AVAILABLE",
        "ELIGIBLE_LEADERS_NOT_AVAILABLE",
        "ELECTION_NOT_NEEDED",
        "UNSTABLE_OFFSET_COMMIT",
        "THROTTLING_QUOTA_EXCEEDED",
        "UNKNOWN_TOPIC_ID",
        "INCONSISTENT_TOPIC_ID",
        "FETCH_SESSION_TOPIC_ID_ERROR",
        "SHARE_SESSION_NOT_FOUND",
        "INVALID_SHARE_SESSION_EPOCH",
    }
)


@pytest.mark.parametrize(
    ("error", "code", "name", "retriable", "exception"),
    [
        (UNKNOWN_SERVER_ERROR, -1, "UNKNOWN_SERVER_ERROR", False, "UnknownServerException"),
        (NONE, 0, "NONE", False, ""),
        (
            UNKNOWN_TOPIC_OR_PARTITION,
            3,
            "UNKNOWN_TOPIC_OR_PARTITION",
            True,
            "UnknownTopicOrPartitionException",
        ),
        (NOT_LEADER_OR_FOLLOWER, 6, "NOT_LEADER_OR_FOLLOWER", True, "NotLeaderOrFollowerException"),
        (REQUEST_TIMED_OUT, 7, "REQUEST_TIMED_OUT", True, "TimeoutException"),
        (STALE_CONTROLLER_EPOCH, 11, "STALE_CONTROLLER_EPOCH", False, "ControllerMovedException"),
        (
            CLUSTER_AUTHORIZATION_FAILED,
            31,
            "CLUSTER_AUTHORIZATION_FAILED",
            False,
            "ClusterAuthorizationException",
        ),
        (
            INVALID_REPLICA_ASSIGNMENT,
            39,
            "INVALID_REPLICA_ASSIGNMENT",
            False,
            "InvalidReplicaAssignmentException",
        ),
        (NOT_CONTROLLER, 41, "NOT_CONTROLLER", True, "NotControllerException"),
        (INVALID_REQUEST, 42, "INVALID_REQUEST", False, "InvalidRequestException"),
        (REASSIGNMENT_IN_PROGRESS, 60, "REASSIGNMENT_IN_PROGRESS", False, "ReassignmentInProgressException"),
        (
            NO_REASSIGNMENT_IN_PROGRESS,
            85,
            "NO_REASSIGNMENT_IN_PROGRESS",
            False,
            "NoReassignmentInProgressException",
        ),
        (
            PRINCIPAL_DESERIALIZATION_FAILURE,
            97,
            "PRINCIPAL_DESERIALIZATION_FAILURE",
            False,
            "PrincipalDeserializationException",
        ),
        (VOTER_NOT_FOUND, 127, "VOTER_NOT_FOUND", False, "VoterNotFoundException"),
    ],
)
def test_spot_checks_against_kafka(error, code, name, retriable, exception):
    assert error.code == code
    assert error.name == name
    assert error.retriable is retriable
    assert error.exception == exception
    assert by_code(code) is error


@pytest.mark.parametrize(
    ("error", "message"),
    [
        (NOT_CONTROLLER, "This is not the correct controller for this cluster."),
        (STALE_CONTROLLER_EPOCH, "The controller moved to another broker."),
        (REASSIGNMENT_IN_PROGRESS, "A partition reassignment is in progress."),
        (NO_REASSIGNMENT_IN_PROGRESS, "No partition reassignment is in progress."),
        (CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."),
        (REQUEST_TIMED_OUT, "The request timed out."),
        # Messages Kafka builds from several concatenated literals.
        (
            INVALID_REQUEST,
            "This most likely occurs because of a request being malformed by the client library or the "
            "message was sent to an incompatible broker. See the broker logs for more details.",
        ),
        (
            PRINCIPAL_DESERIALIZATION_FAILURE,
            "Request principal deserialization failed during forwarding. This indicates an internal error "
            "on the broker cluster security setup.",
        ),
        (NONE, ""),
    ],
)
def test_default_messages_match_kafka(error, message):
    assert error.message == message


def test_retriable_flags_match_kafka_exactly():
    assert {error.name for error in ALL if error.retriable} == KAFKA_RETRIABLE


def test_codes_unique_and_contiguous_in_order():
    codes = [error.code for error in ALL]
    assert codes == list(range(-1, max(codes) + 1))
    assert max(codes) == 127
    assert len(ALL) == 129


def test_names_unique_and_exposed_as_module_constants():
    names = [error.name for error in ALL]
    assert len(set(names)) == len(names)
    for error in ALL:
        assert getattr(errorcodes, error.name) is error


def test_every_error_but_none_has_message_and_exception():
    for error in ALL:
        if error is NONE:
            continue
        assert error.message, error.name
        assert error.exception, error.name


def test_by_code_and_by_name_round_trip():
    for error in ALL:
        assert by_code(error.code) is error
        assert by_name(error.name) is error
        assert by_name(error.name.lower()) is error


def test_by_name_is_case_insensitive():
    assert by_name("Not_Controller") is NOT_CONTROLLER


@pytest.mark.parametrize("code", [-2, 128, 1000])
def test_unknown_code_raises_key_error_naming_it(code):
    with pytest.raises(KeyError, match=str(code)):
        by_code(code)


def test_unknown_name_raises_key_error():
    with pytest.raises(KeyError, match="NOT_A_KAFKA_ERROR"):
        by_name("NOT_A_KAFKA_ERROR")


def test_kafka_error_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        NOT_CONTROLLER.code = 0  # type: ignore[misc]


def test_api_error_defaults_to_kafka_message():
    err = KafkaApiError(NOT_CONTROLLER)
    assert err.error is NOT_CONTROLLER
    assert err.code == 41
    assert err.retriable is True
    assert err.message == "This is not the correct controller for this cluster."
    assert str(err) == "NOT_CONTROLLER (41): This is not the correct controller for this cluster."


def test_api_error_message_override():
    err = KafkaApiError(STALE_CONTROLLER_EPOCH, "epoch 7 is older than 9")
    assert err.code == 11
    assert err.retriable is False
    assert err.message == "epoch 7 is older than 9"
    assert err.error.message == "The controller moved to another broker."
    assert str(err) == "STALE_CONTROLLER_EPOCH (11): epoch 7 is older than 9"


def test_api_error_empty_override_is_kept():
    assert KafkaApiError(INVALID_REQUEST, "").message == ""


def test_api_error_is_raisable_and_picklable():
    with pytest.raises(KafkaApiError) as info:
        raise KafkaApiError(REASSIGNMENT_IN_PROGRESS, "topic t")
    copy = pickle.loads(pickle.dumps(info.value))
    assert copy.error == REASSIGNMENT_IN_PROGRESS
    assert copy.message == "topic t"
    assert str(copy) == str(info.value)


def test_api_error_rejects_none():
    with pytest.raises(ValueError, match="NONE"):
        KafkaApiError(NONE)


def test_kafka_error_is_a_plain_value():
    assert KafkaError(41, "NOT_CONTROLLER", True, NOT_CONTROLLER.message, "NotControllerException") == (NOT_CONTROLLER)
