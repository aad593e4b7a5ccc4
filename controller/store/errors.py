"""How a store reports failure: an error with a Kafka error code and message, as a client would see it.

``ApiFailure`` is what stores and handlers raise for an answer that is an error (a missing controller, a
race lost too often, a bad value); ``STORE_ERRORS`` is everything a ZooKeeper-backed admin write can fail
with besides those, and :func:`store_failure` turns one into the per-resource error the client gets.

Which error (:func:`zk_error`):

- ZooKeeper did not answer, or the connection or the session went away mid-request (connection loss,
  operation or client timeouts, a bulk read past its deadline, session expiry): **REQUEST_TIMED_OUT**. The
  write may or may not have been applied (a request lost with its connection may have committed; KIP-4 lets a
  timed-out request complete in the background), and retrying is exactly what the client should do. Kafka's
  own broker blocks its request thread until ZooKeeper is back and the client's request timer fires; the
  answer here is the same retriable timeout, given within the request's time instead of never. Never
  UNKNOWN_SERVER_ERROR: that one is not retriable, and clients give up on it.
- The write was refused by the controller-epoch fence (:mod:`controller.zk.fenced_session`: this node is
  no longer the active controller): **NOT_CONTROLLER**. Nothing was written, and the client (or its
  forwarding broker) should ask the new controller.
- ZooKeeper refused the write by its ACLs (NoAuth, after ``lockdown``): UNKNOWN_SERVER_ERROR, with a message
  naming the cause: retrying cannot help.
- Any other ZooKeeper error (a znode in a state the store did not expect): UNKNOWN_SERVER_ERROR, as Kafka
  answers an unexpected KeeperException.
"""

from __future__ import annotations

import logging

from controller.zk.errors import LOST, ZK_FAILURES, AdminWriteFenced, ControllerMoved, NoAuthError
from zkmodel import errorcodes as E
from zkmodel.errorcodes import KafkaError

log = logging.getLogger(__name__)

#: What a ZooKeeper-backed admin write can fail with besides its own domain errors: every ZooKeeper failure
#: but ``ControllerMoved``, which is deliberately left out: only the controller loop may catch it (it resigns),
#: and no store writes through the controller's own fenced writer (the admin writes' fence is
#: ``AdminWriteFenced``).
STORE_ERRORS = tuple(cls for cls in ZK_FAILURES if cls is not ControllerMoved)
#: ZooKeeper away or slow, or the session gone: the outcome is unknown and a retry is the cure.
ZK_TIMEOUTS = LOST


class ApiFailure(Exception):
    """An answer that is an error: Kafka's error and the message it sends with it."""

    def __init__(self, error: KafkaError, message: str | None) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


def zk_error(exc: BaseException) -> KafkaError:
    """The Kafka error a client gets when a ZooKeeper call under its request failed with ``exc``."""
    if isinstance(exc, AdminWriteFenced):
        return E.NOT_CONTROLLER
    if isinstance(exc, ZK_TIMEOUTS):
        return E.REQUEST_TIMED_OUT
    return E.UNKNOWN_SERVER_ERROR


def store_failure(exc: BaseException, what: str) -> ApiFailure:
    """A ZooKeeper failure as the per-resource error (see :func:`zk_error`), with a message that says what
    happened: a write refused by ZooKeeper's ACLs (lockdown) must be recognisable as such, and a timeout must
    say that the write may still have happened."""
    if isinstance(exc, NoAuthError):
        return ApiFailure(
            E.UNKNOWN_SERVER_ERROR,
            f"ZooKeeper refused to write {what} (NoAuth): this node's ZooKeeper identity may not write it",
        )
    error = zk_error(exc)
    log.warning("writing %s failed: %r", what, exc)
    if error is E.NOT_CONTROLLER:
        return ApiFailure(error, f"Not written: {exc}")
    if error is E.REQUEST_TIMED_OUT:
        return ApiFailure(
            error, f"ZooKeeper did not complete the request for {what} ({type(exc).__name__}); it may still take effect"
        )
    return ApiFailure(error, f"ZooKeeper failed while writing {what}: {type(exc).__name__}")
