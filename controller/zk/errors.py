"""ZooKeeper's failure vocabulary for the whole node, and its one taxonomy.

Two kinds of names live here, so that nothing outside ``controller.zk`` imports kazoo:

* kazoo's exceptions, re-exported unchanged. They are ZooKeeper's KeeperException codes: a store that catches
  ``BadVersionError`` reads the same as Kafka's ``KeeperException.BadVersionException``;
* our own: what :class:`~controller.zk.session.ZkSession` raises once it has retried or translated kazoo's
  (``ZkTimeout``, ``ZkUnavailable`` and its ``ZkReadTimeout`` and ``WriteInDoubt``, ``SessionLost``), and
  what the controller-epoch fence raises (``ControllerMoved`` for the controller's own writes,
  ``AdminWriteFenced`` for the admin writes it makes for clients).

:data:`TABLE` classifies every one of them once, by :class:`Kind` (what happened, hence what to do) and by
:class:`By` (who raises it). The groups the rest of the node catches (:data:`TRANSIENT`, :data:`LOST`,
:data:`FENCED`, :data:`NOT_AS_EXPECTED`, ...) are derived from the table by :func:`failures`; a tuple kept by
hand elsewhere would drift from it.
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Mapping
from types import MappingProxyType

from kazoo.exceptions import (
    AuthFailedError,
    BadVersionError,
    ConnectionClosedError,
    ConnectionLoss,
    KazooException,
    NoAuthError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    OperationTimeoutError,
    RolledBackError,
    SessionExpiredError,
    SessionMovedError,
)
from kazoo.handlers.threading import KazooTimeoutError

from zkmodel.errorcodes import STALE_CONTROLLER_EPOCH


# -- our own failures ---------------------------------------------------------------------------------------------
class ZkUnavailable(RuntimeError):
    """ZooKeeper did not answer within the retry deadline; the session may still be alive."""


class WriteInDoubt(ZkUnavailable):
    """A write was sent, its connection dropped (or its answer timed out) before ZooKeeper answered, and the
    retry was refused by one of its checks (a version, an existence or the controller-epoch fence). The
    refusal may be the first attempt's own doing: it may have been applied. Callers must not report such a
    write as certainly not made (NOT_CONTROLLER, a lost race): it is in doubt, KIP-4's REQUEST_TIMED_OUT."""


class ZkReadTimeout(ZkUnavailable, TimeoutError):
    """A bulk read (multiRead, a burst of watches) did not complete within its deadline: ZooKeeper is
    unreachable or stalled, as for any call that gives up (:class:`ZkUnavailable`), so callers that handle
    ZooKeeper being away handle this too; still a ``TimeoutError`` for callers that wait on reads."""


class ZkTimeout(RuntimeError):
    """One request got no answer within its timeout (connection down or server stalled)."""


class SessionLost(RuntimeError):
    """The session expired (or was closed): its ephemeral nodes are gone, so is any leadership."""


class ControllerMoved(Exception):
    """The epoch check of a controller write failed: another controller was elected. Nothing was written.

    Deliberately not a KafkaApiError: per-request error handling must never swallow it; only the
    controller loop catches it, and resigns. Its wire code is still STALE_CONTROLLER_EPOCH.
    """

    error = STALE_CONTROLLER_EPOCH

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    @property
    def code(self) -> int:
        return self.error.code


class AdminWriteFenced(Exception):
    """This node is not (or no longer) the active controller: the write was refused, nothing was written."""


# -- the taxonomy -------------------------------------------------------------------------------------------------
class Kind(enum.Enum):
    """What a failure means, hence what its catcher does."""

    #: The request got no answer: the connection dropped or the server stalled. ZkSession retries it within its
    #: retry deadline, then gives up with ZkUnavailable.
    UNANSWERED = "unanswered"
    #: ZooKeeper did not answer within the retry deadline; the session may live on. Retry later (a controller
    #: defers its work, a cache serves its last snapshot, a client is told REQUEST_TIMED_OUT).
    UNAVAILABLE = "unavailable"
    #: The session expired, moved or was closed: its ephemerals and any leadership are gone. Resign; the next
    #: session starts afresh.
    SESSION_LOST = "session lost"
    #: The controller moved: the controller-epoch check refused a write of this node's epoch. Nothing written.
    FENCED = "fenced"
    #: The znode is not as expected: absent, present, at another version, or with children. Someone else got
    #: there first: read again (a compare-and-set race), or take it as the answer.
    NOT_AS_EXPECTED = "not as expected"
    #: ZooKeeper refused this session: by a znode's ACL (NoAuth) or its credentials (AuthFailed). Retrying
    #: cannot help.
    REFUSED = "refused"
    #: Any other error ZooKeeper or kazoo raises.
    OTHER = "other"


class By(enum.Enum):
    """Who raises a failure, hence where it can be met."""

    #: kazoo, as ZooKeeper answered or its client saw. ZkSession retries the UNANSWERED ones and turns the
    #: SESSION_LOST ones into SessionLost; the pipelined bulk writers and readers may let them out as they are.
    KAZOO = "kazoo"
    #: ZkSession, having retried or translated kazoo's.
    SESSION = "session"
    #: The controller-epoch fence (controller.zk.fenced_writer, controller.zk.fenced_session).
    FENCE = "fence"


#: Every failure of a ZooKeeper call, classified once. A subclass is what its base is: ConnectionClosedError is a
#: SessionExpiredError, ZkReadTimeout and WriteInDoubt are ZkUnavailable, and every kazoo error not named here
#: is a KazooException (OTHER).
TABLE: Mapping[type[BaseException], tuple[Kind, By]] = MappingProxyType(
    {
        ConnectionLoss: (Kind.UNANSWERED, By.KAZOO),
        OperationTimeoutError: (Kind.UNANSWERED, By.KAZOO),
        KazooTimeoutError: (Kind.UNANSWERED, By.KAZOO),
        ZkTimeout: (Kind.UNANSWERED, By.SESSION),
        ZkUnavailable: (Kind.UNAVAILABLE, By.SESSION),
        SessionExpiredError: (Kind.SESSION_LOST, By.KAZOO),
        SessionMovedError: (Kind.SESSION_LOST, By.KAZOO),
        SessionLost: (Kind.SESSION_LOST, By.SESSION),
        ControllerMoved: (Kind.FENCED, By.FENCE),
        AdminWriteFenced: (Kind.FENCED, By.FENCE),
        NoNodeError: (Kind.NOT_AS_EXPECTED, By.KAZOO),
        NodeExistsError: (Kind.NOT_AS_EXPECTED, By.KAZOO),
        BadVersionError: (Kind.NOT_AS_EXPECTED, By.KAZOO),
        NotEmptyError: (Kind.NOT_AS_EXPECTED, By.KAZOO),
        NoAuthError: (Kind.REFUSED, By.KAZOO),
        AuthFailedError: (Kind.REFUSED, By.KAZOO),
        KazooException: (Kind.OTHER, By.KAZOO),
    }
)


def failures(*kinds: Kind, by: Collection[By] = tuple(By)) -> tuple[type[BaseException], ...]:
    """The classes of :data:`TABLE` of any of ``kinds`` (none named: every kind) raised by any of ``by``, in the
    table's order: a tuple for ``except`` and ``isinstance``."""
    wanted = set(kinds or Kind)
    return tuple(cls for cls, (kind, raiser) in TABLE.items() if kind in wanted and raiser in by)


def kind_of(exc: BaseException) -> Kind | None:
    """The kind of a failure (that of the first table entry it is an instance of), None for anything else."""
    return next((kind for cls, (kind, _by) in TABLE.items() if isinstance(exc, cls)), None)


#: Worth sending again: ZkSession retries these within its deadline (then raises ZkUnavailable).
TRANSIENT = failures(Kind.UNANSWERED)
#: kazoo's words for a lost session, which ZkSession (and the fenced writer's pipelined answers) turn into
#: SessionLost.
KAZOO_SESSION_LOST = failures(Kind.SESSION_LOST, by=[By.KAZOO])
#: ZooKeeper away or slow, or the session gone, in whichever form: the outcome of a request under way is unknown
#: (it may have been applied), and a later retry is the cure.
LOST = failures(Kind.UNANSWERED, Kind.UNAVAILABLE, Kind.SESSION_LOST)
#: :data:`LOST` as a ZkSession call raises it, once it has retried and translated kazoo's forms.
LOST_BY_SESSION = failures(Kind.UNANSWERED, Kind.UNAVAILABLE, Kind.SESSION_LOST, by=[By.SESSION])
#: The controller moved: a write refused by the controller-epoch fence; nothing was written.
FENCED = failures(Kind.FENCED)
#: The znode is not as expected: someone else created, changed or deleted it first.
NOT_AS_EXPECTED = failures(Kind.NOT_AS_EXPECTED)
#: Every way a ZooKeeper call can fail.
ZK_FAILURES = failures()


def is_transient(exc: BaseException) -> bool:
    """Retry policy in one place: connection-level failures are worth retrying (:data:`TRANSIENT`), nothing
    else is."""
    return isinstance(exc, TRANSIENT)


__all__ = [
    "FENCED",
    "KAZOO_SESSION_LOST",
    "LOST",
    "LOST_BY_SESSION",
    "NOT_AS_EXPECTED",
    "TABLE",
    "TRANSIENT",
    "ZK_FAILURES",
    "AdminWriteFenced",
    "AuthFailedError",
    "BadVersionError",
    "By",
    "ConnectionClosedError",
    "ConnectionLoss",
    "ControllerMoved",
    "KazooException",
    "KazooTimeoutError",
    "Kind",
    "NoAuthError",
    "NoNodeError",
    "NodeExistsError",
    "NotEmptyError",
    "OperationTimeoutError",
    "RolledBackError",
    "SessionExpiredError",
    "SessionLost",
    "SessionMovedError",
    "WriteInDoubt",
    "ZkReadTimeout",
    "ZkTimeout",
    "ZkUnavailable",
    "failures",
    "is_transient",
    "kind_of",
]
