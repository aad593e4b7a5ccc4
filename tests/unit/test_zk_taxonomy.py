"""The one classification of ZooKeeper failures (controller.zk.errors.TABLE) and the groups derived from it: what
each group holds is what its catchers rely on."""

from __future__ import annotations

import inspect

import kazoo.exceptions
import pytest

from controller.active.processor import ENDS_A_STEP
from controller.store.errors import STORE_ERRORS, ZK_TIMEOUTS
from controller.zk import errors
from controller.zk.errors import (
    FENCED,
    KAZOO_SESSION_LOST,
    LOST,
    LOST_BY_SESSION,
    NOT_AS_EXPECTED,
    TABLE,
    TRANSIENT,
    AdminWriteFenced,
    BadVersionError,
    By,
    ConnectionClosedError,
    ConnectionLoss,
    ControllerMoved,
    KazooException,
    KazooTimeoutError,
    Kind,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    OperationTimeoutError,
    RolledBackError,
    SessionExpiredError,
    SessionLost,
    SessionMovedError,
    WriteInDoubt,
    ZkReadTimeout,
    ZkTimeout,
    ZkUnavailable,
    failures,
    is_transient,
    kind_of,
)
from controller.zk.fenced_writer import WritesSuspended
from controller.zk.watched import ZK_UNAVAILABLE

KAZOO_ERRORS: list[type[KazooException]] = [
    cls for _name, cls in inspect.getmembers(kazoo.exceptions, inspect.isclass) if issubclass(cls, KazooException)
]


def test_the_groups() -> None:
    assert set(TRANSIENT) == {ConnectionLoss, OperationTimeoutError, KazooTimeoutError, ZkTimeout}
    assert set(KAZOO_SESSION_LOST) == {SessionExpiredError, SessionMovedError}
    assert set(LOST_BY_SESSION) == {ZkTimeout, ZkUnavailable, SessionLost}
    assert set(LOST) == {*TRANSIENT, ZkUnavailable, *KAZOO_SESSION_LOST, SessionLost}
    assert set(FENCED) == {ControllerMoved, AdminWriteFenced}
    assert set(NOT_AS_EXPECTED) == {NoNodeError, NodeExistsError, BadVersionError, NotEmptyError}
    assert set(failures(by=[By.FENCE])) == set(FENCED)


@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        (ConnectionClosedError(), Kind.SESSION_LOST),  # a SessionExpiredError
        (ZkReadTimeout("multiRead"), Kind.UNAVAILABLE),
        (WriteInDoubt("retried multi refused"), Kind.UNAVAILABLE),
        (WritesSuspended("suspended"), Kind.UNAVAILABLE),
        (RolledBackError(), Kind.OTHER),
        (kazoo.exceptions.NoAuthError(), Kind.REFUSED),
        (ValueError("not ZooKeeper's"), None),
    ],
    ids=lambda v: type(v).__name__ if isinstance(v, BaseException) else str(v),
)
def test_a_subclass_is_what_its_base_is(exc: BaseException, kind: Kind | None) -> None:
    assert kind_of(exc) is kind


def test_every_kazoo_error_has_a_kind_and_the_table_names_the_specific_before_the_general() -> None:
    assert all(kind_of(cls()) is not None for cls in KAZOO_ERRORS)
    listed = list(TABLE)
    for i, cls in enumerate(listed):
        assert not any(issubclass(cls, earlier) for earlier in listed[:i]), f"{cls.__name__} is shadowed"


def test_is_transient_is_the_unanswered_kind() -> None:
    assert all(is_transient(cls()) for cls in TRANSIENT)
    assert not is_transient(SessionExpiredError()) and not is_transient(ZkUnavailable("gave up"))


def test_the_catchers_derived_from_the_table() -> None:
    fence_free = [c for c in errors.ZK_FAILURES if c not in FENCED]
    # Admin writes: every failure but the controller's own fence, which only the controller loop may catch.
    assert ControllerMoved not in STORE_ERRORS and AdminWriteFenced in STORE_ERRORS
    assert set(STORE_ERRORS) == set(errors.ZK_FAILURES) - {ControllerMoved}
    assert ZK_TIMEOUTS == LOST
    # The caches: whatever a read can meet (kazoo's raw errors too), no fence, and multiRead's TimeoutError.
    assert set(ZK_UNAVAILABLE) == {*fence_free, TimeoutError}
    assert all(isinstance(cls(), ZK_UNAVAILABLE) for cls in KAZOO_ERRORS)
    # The controller loop: the three step() handles, each a kind of its own.
    assert {kind_of(cls("x")) for cls in ENDS_A_STEP} == {Kind.FENCED, Kind.SESSION_LOST, Kind.UNAVAILABLE}
