"""How a store reports failure: an error with a Kafka error code and message, as a client would see it.

``ApiFailure`` is what stores and handlers raise for an answer that is an error (a missing controller, a
race lost too often, a bad value); ``STORE_ERRORS`` is everything a ZooKeeper-backed admin write can fail
with besides those, and :func:`store_failure` turns one into the per-resource error Kafka gives.
"""

from __future__ import annotations

import logging

from controller.zk.errors import KazooException, NoAuthError, SessionLost, ZkTimeout, ZkUnavailable
from zkmodel import errorcodes as E
from zkmodel.errorcodes import KafkaError

log = logging.getLogger(__name__)

#: What a ZooKeeper-backed admin write can fail with besides its own domain errors.
STORE_ERRORS = (KazooException, ZkUnavailable, SessionLost, ZkTimeout)


class ApiFailure(Exception):
    """An answer that is an error: Kafka's error and the message it sends with it."""

    def __init__(self, error: KafkaError, message: str | None) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


def store_failure(exc: BaseException, what: str) -> ApiFailure:
    """A ZooKeeper failure as the per-resource error Kafka gives (UNKNOWN_SERVER_ERROR), with a message that
    says what happened: a write refused by ZooKeeper's ACLs (lockdown) must be recognisable as such."""
    if isinstance(exc, NoAuthError):
        return ApiFailure(
            E.UNKNOWN_SERVER_ERROR,
            f"ZooKeeper refused to write {what} (NoAuth): this node's ZooKeeper identity may not write it",
        )
    log.warning("writing %s failed: %r", what, exc)
    return ApiFailure(E.UNKNOWN_SERVER_ERROR, f"ZooKeeper failed while writing {what}: {type(exc).__name__}")
