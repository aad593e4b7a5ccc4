"""Kafka 3.9's topic-name rules (``org.apache.kafka.common.internals.Topic``) with its exact messages.

Clients match on these strings and error codes, so a name we reject must be rejected the way a real
broker would, and one we accept must be one a real broker would accept.
"""

from __future__ import annotations

from collections.abc import Iterable

GROUP_METADATA_TOPIC_NAME = "__consumer_offsets"
TRANSACTION_STATE_TOPIC_NAME = "__transaction_state"
SHARE_GROUP_STATE_TOPIC_NAME = "__share_group_state"
CLUSTER_METADATA_TOPIC_NAME = "__cluster_metadata"

INTERNAL_TOPICS: frozenset[str] = frozenset(
    {GROUP_METADATA_TOPIC_NAME, TRANSACTION_STATE_TOPIC_NAME, SHARE_GROUP_STATE_TOPIC_NAME}
)
"""3.9's set: it added ``__share_group_state``; ``__cluster_metadata`` is KRaft's log, never a ZK topic."""

LEGAL_CHARS = "[a-zA-Z0-9._-]"
MAX_NAME_LENGTH = 249
"""Counted in UTF-16 units, as Java's ``String.length()`` does."""

COLLISION_WARNING = (
    "WARNING: Due to limitations in metric names, topics with a period ('.') or underscore ('_') could "
    "collide. To avoid issues it is best to use either, but not both."
)
"""Printed verbatim by kafka-topics --create (tools TopicCommand.createTopic)."""

_LEGAL = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


class InvalidTopicName(ValueError):
    """Kafka's ``InvalidTopicException``; maps to error INVALID_TOPIC_EXCEPTION (17) on the wire."""

    error_name = "INVALID_TOPIC_EXCEPTION"
    error_code = 17

    def __init__(self, message: str, topic: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.topic = topic


def _java_length(name: str) -> int:
    # Java's String.length() counts UTF-16 units, so a non-BMP char counts twice toward the 249 limit.
    return len(name) + sum(1 for c in name if ord(c) > 0xFFFF)


def invalid_reason(name: str) -> str | None:
    """Kafka's ``detectInvalidTopic``: the reason text, or None if the name is legal.

    Checks run in Kafka's order, so an over-long name of illegal characters reports its length.
    """
    if not name:
        return "the empty string is not allowed"
    if name == ".":
        return "'.' is not allowed"
    if name == "..":
        return "'..' is not allowed"
    if _java_length(name) > MAX_NAME_LENGTH:
        return f"the length of '{name}' is longer than the max allowed length {MAX_NAME_LENGTH}"
    if not all(c in _LEGAL for c in name):
        return f"'{name}' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"
    return None


def is_valid(name: str) -> bool:
    return invalid_reason(name) is None


def validate(name: str, log_prefix: str = "Topic name") -> None:
    """Raise :class:`InvalidTopicName` with Kafka's "<prefix> is invalid: <reason>" message."""
    reason = invalid_reason(name)
    if reason is not None:
        raise InvalidTopicName(f"{log_prefix} is invalid: {reason}", name)


def is_internal(name: str) -> bool:
    return name in INTERNAL_TOPICS


def has_collision_chars(name: str) -> bool:
    """'.' and '_' both become '_' in metric names, so such topics can clash with a sibling."""
    return "_" in name or "." in name


def unify_collision_chars(name: str) -> str:
    """The metric-name form used only to compare names; never a real topic name."""
    return name.replace(".", "_")


def has_collision(a: str, b: str) -> bool:
    """True if the names differ at most by '.' vs '_' in the same places (a name collides with itself)."""
    return unify_collision_chars(a) == unify_collision_chars(b)


def collision_warning(name: str) -> str | None:
    """The warning kafka-topics prints before creating this topic, or None when it prints none."""
    return COLLISION_WARNING if has_collision_chars(name) else None


def check_no_collision(name: str, existing: Iterable[str]) -> None:
    """ZK-mode CreateTopics refuses a name colliding with an existing one (AdminZkClient.validateTopicCreate).

    ``existing`` should exclude ``name`` itself; Kafka reports that case as TopicExists before getting here,
    so it is skipped. Colliders are listed in the iteration order given.
    """
    if not has_collision_chars(name):
        return
    colliding = [t for t in existing if t != name and has_collision(name, t)]
    if colliding:
        raise InvalidTopicName(f"Topic '{name}' collides with existing topics: {', '.join(colliding)}", name)
