"""What a client is told when ZooKeeper fails under its admin request, and the pieces that decide it.

- ZooKeeper away, slow, or the session gone: REQUEST_TIMED_OUT (retriable; the write is in doubt, KIP-4), never
  UNKNOWN_SERVER_ERROR, which clients do not retry.
- A write refused by the controller-epoch fence (this node was deposed): NOT_CONTROLLER, nothing written.
- A controller call that ZooKeeper cut short after it wrote, or after it sent a multi that was never answered:
  REQUEST_TIMED_OUT, not NOT_CONTROLLER (a DeleteTopics whose marker was written must not be reported as never
  done). One cut short before any write could have been made: NOT_CONTROLLER (send it to the new controller).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import Any, cast

import pytest

from controller.active import events as ev
from controller.active.controller import Controller
from controller.broker.controlled_shutdown import ControlledShutdown
from controller.config import load_config
from controller.node import Node
from controller.store import kafka_acls as acl_store
from controller.store.errors import STORE_ERRORS, store_failure, zk_error
from controller.wire.handlers.base import NOT_CONTROLLER_TOP, controller_error
from controller.zk.errors import (
    AdminWriteFenced,
    BadVersionError,
    ConnectionClosedError,
    ConnectionLoss,
    KazooTimeoutError,
    NoAuthError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    OperationTimeoutError,
    RolledBackError,
    SessionExpiredError,
    SessionLost,
    SessionMovedError,
    ZkReadTimeout,
    ZkTimeout,
    ZkUnavailable,
)
from controller.zk.fenced_session import FencedSession
from controller.zk.fenced_writer import FencedWriter
from controller.zk.ops import Check, Create, Op, SetData
from controller.zk.session import ZkSession
from testing.expire import session_password
from zkmodel import errorcodes as E
from zkmodel import paths
from zkmodel.errorcodes import KafkaApiError, KafkaError
from zkmodel.ibp import parse_ibp
from zkmodel.kafka_acls import AclEntry, AclOperation, PatternType, PermissionType, ResourcePattern, ResourceType

AWAY = [
    ConnectionLoss(),
    OperationTimeoutError(),
    SessionExpiredError(),
    SessionMovedError(),
    ConnectionClosedError(),
    KazooTimeoutError(),
    ZkTimeout("get /x: no answer"),
    ZkUnavailable("get /x: unavailable for 1.3s"),
    ZkReadTimeout("multiRead: 12 of 40 unanswered"),
    SessionLost("get /x: SessionExpiredError()"),
]


@pytest.mark.parametrize("exc", AWAY, ids=lambda e: type(e).__name__)
def test_zookeeper_away_or_the_session_lost_is_a_retriable_timeout(exc: Exception) -> None:
    assert isinstance(exc, STORE_ERRORS)  # what the handlers and the dispatcher catch
    assert zk_error(exc) is E.REQUEST_TIMED_OUT and E.REQUEST_TIMED_OUT.retriable
    failure = store_failure(exc, "the configs of topic t")
    assert failure.error is E.REQUEST_TIMED_OUT
    assert failure.message == (
        f"ZooKeeper did not complete the request for the configs of topic t ({type(exc).__name__}); "
        "it may still take effect"
    )


def test_a_fenced_write_is_not_controller_and_other_zookeeper_errors_stay_server_errors() -> None:
    fenced = store_failure(AdminWriteFenced("set /config/topics/t: another controller was elected"), "x")
    assert (fenced.error, fenced.message) == (
        E.NOT_CONTROLLER,
        "Not written: set /config/topics/t: another controller was elected",
    )
    assert E.NOT_CONTROLLER.retriable
    locked = store_failure(NoAuthError(), "the configs of topic t")
    assert locked.error is E.UNKNOWN_SERVER_ERROR and "(NoAuth)" in (locked.message or "")
    for odd in (NoNodeError(), NotEmptyError(), NodeExistsError()):
        assert zk_error(odd) is E.UNKNOWN_SERVER_ERROR


def test_acl_results_use_the_same_mapping() -> None:
    assert acl_store._error_of(ZkUnavailable("x"))[0] is E.REQUEST_TIMED_OUT
    assert acl_store._error_of(AdminWriteFenced("x"))[0] is E.NOT_CONTROLLER
    assert acl_store._error_of(KafkaApiError(E.INVALID_REQUEST, "bad")) == (E.INVALID_REQUEST, "bad")
    assert acl_store._error_of(NotEmptyError()) == (E.UNKNOWN_SERVER_ERROR, None)


# -- controller calls --------------------------------------------------------------------------------------------
class _Session:
    def add_state_listener(self, _listener: Any) -> None:
        pass


def _controller(active: bool) -> Controller:
    c = Controller(cast(ZkSession, _Session()), 1, parse_ibp("3.9"))
    writer = FencedWriter(cast(ZkSession, _Session()), 1, 0)
    c.active = cast(Any, SimpleNamespace(writer=writer)) if active else None
    return c


def _cut_short(work: Callable[[FencedWriter], None]) -> tuple[KafkaError, str | None]:
    """The answer to a call that does ``work`` with the writer's counters, then loses ZooKeeper."""
    c = _controller(active=True)
    assert c.active is not None
    writer = c.active.writer

    def fn() -> None:
        work(writer)
        raise ZkUnavailable("get_children /admin/delete_topics: ZooKeeper unavailable for 1.3s")

    call = ev.ApiCall("DeleteTopics", fn)
    c.step(call)
    exc = call.future.exception(0)
    assert isinstance(exc, KafkaApiError)
    return controller_error(exc)


def _wrote(writer: FencedWriter) -> None:  # a DeleteTopics marker written
    writer.sent, writer.multis, writer.writes = 1, 1, 1


def _unanswered(writer: FencedWriter) -> None:  # a multi sent, its answer lost with the connection
    writer.sent = 1


def _refused(writer: FencedWriter) -> None:  # a multi answered: refused at the epoch check, nothing written
    writer.sent, writer.multis = 1, 1


def test_a_controller_call_cut_short_after_writing_is_in_doubt_not_never_done() -> None:
    """A DeleteTopics that wrote its marker, or sent a multi and lost its answer, and then lost ZooKeeper (a
    frozen controller's, a paused leader's) is REQUEST_TIMED_OUT."""
    for work in (_wrote, _unanswered):
        error, message = _cut_short(work)
        assert error is E.REQUEST_TIMED_OUT
        assert message is not None and message.startswith("The controller lost ZooKeeper while handling the request")


def test_a_controller_call_cut_short_before_any_write_is_not_controller() -> None:
    """Nothing was written and nothing can have been: the client (or the forwarding broker) may send it again."""
    for work in (_refused, lambda _w: None):
        error, message = _cut_short(work)
        assert error is E.NOT_CONTROLLER
        assert message is not None and message.startswith("The controller moved before writing anything")


def test_a_call_the_controller_never_ran_stays_not_controller() -> None:
    ran: list[bool] = []
    c = _controller(active=False)
    call = ev.ApiCall("DeleteTopics", lambda: ran.append(True))
    c.step(call)
    exc = call.future.exception(0)
    assert isinstance(exc, KafkaApiError) and not ran
    assert controller_error(exc) == NOT_CONTROLLER_TOP
    assert controller_error(KafkaApiError(E.INVALID_PARTITIONS, "no")) == (E.INVALID_PARTITIONS, "no")


# -- the controller-epoch fence on admin writes --------------------------------------------------------------------
class _Inner:
    """The controller's session: multis recorded, answered as told."""

    def __init__(self, answer: list[Any]) -> None:
        self.answer = answer
        self.multis: list[list[Op]] = []
        self.fenced = 0
        self.on_fenced = self._count
        self.session_id = 0x42

    def _count(self) -> None:
        self.fenced += 1

    def multi(self, ops: Sequence[Op], *, what: str, write: str, refusal_in_doubt: bool = False) -> list[Any]:
        self.multis.append(list(ops))
        return list(self.answer)

    def get(self, path: str, watch: Any = None) -> tuple[bytes, Any]:
        return b"read through", SimpleNamespace(version=3)


def _fenced(answer: list[Any], version: int | None) -> tuple[_Inner, FencedSession]:
    inner = _Inner(answer)
    return inner, FencedSession(cast(ZkSession, inner), lambda: version)


def test_every_admin_write_carries_the_epoch_check_and_reads_go_straight_through() -> None:
    stat = SimpleNamespace(version=8)
    inner, fenced = _fenced([True, stat], version=5)
    assert fenced.set_if_version("/config/topics/t", b"{}", 7) is stat
    assert inner.multis == [[Check(paths.CONTROLLER_EPOCH, 5), SetData("/config/topics/t", b"{}", 7)]]
    ops: list[Op] = [Check(paths.CONTROLLER, 0), SetData("/config/topics/t", b"{}", 8)]
    assert fenced.multi(ops, what="w", write="config") == [stat]  # the caller's results, the fence's removed
    assert inner.multis[-1] == [Check(paths.CONTROLLER_EPOCH, 5), *ops]
    assert fenced.get("/config/topics/t") == (b"read through", SimpleNamespace(version=3))
    assert fenced.session_id == 0x42


def test_a_write_after_another_election_is_refused_whole() -> None:
    inner, fenced = _fenced([BadVersionError(), RolledBackError()], version=5)
    with pytest.raises(AdminWriteFenced, match="another controller was elected"):
        fenced.create_sequential("/kafka-acl-changes/acl_changes_", b"Topic:t")
    assert inner.fenced == 1


def test_a_node_that_is_not_the_active_controller_writes_nothing() -> None:
    inner, fenced = _fenced([True, True], version=None)
    with pytest.raises(AdminWriteFenced, match="not the active controller"):
        fenced.delete("/kafka-acl/Topic/t", 3)
    assert inner.multis == []


def test_an_op_failure_under_a_passing_fence_is_the_ops_own() -> None:
    inner, fenced = _fenced([RolledBackError(), NodeExistsError()], version=5)
    assert fenced.create_only("/kafka-acl/Topic/t", b"{}") is False  # NodeExists: create-if-absent lost
    inner.answer = [RolledBackError(), NoNodeError()]
    with pytest.raises(NoNodeError):
        fenced.set_if_version("/kafka-acl/Topic/t", b"{}", 3)
    assert inner.multis[0] == [Check(paths.CONTROLLER_EPOCH, 5), Create("/kafka-acl/Topic/t", b"{}")]


def test_acls_written_but_their_notification_fenced_are_in_doubt() -> None:
    """Deposed between an ACL node's write and its change notification: the ACLs are in, so the answer must
    be the in-doubt REQUEST_TIMED_OUT, not the definite NOT_CONTROLLER."""
    pattern = ResourcePattern(ResourceType.TOPIC, "t", PatternType.LITERAL)
    entry = AclEntry("User:a", PermissionType.ALLOW, "*", AclOperation.READ)

    class Session:
        def get(self, path: str) -> None:
            return None

        def sync(self, path: str) -> None:
            pass

        def create_only(self, path: str, data: bytes, *, write: str) -> bool:
            return True

        def create_sequential(self, prefix: str, data: bytes, *, write: str) -> str:
            raise AdminWriteFenced("create /kafka-acl-changes/acl_changes_: another controller was elected")

    (result,) = acl_store.create_acls(cast(ZkSession, Session()), [acl_store.AclBinding(pattern, entry)])
    assert result[0] is E.REQUEST_TIMED_OUT


# -- the rest ------------------------------------------------------------------------------------------------------
def test_a_session_password_is_derived_from_its_id() -> None:
    """ZooKeeperServer.generatePasswd, checked against a real 3.8 server's answer to kazoo."""
    assert session_password(0x30003271A7D0000).hex() == "d9ed8967f26c0c40df9a44628b939037"


def test_controlled_shutdown_does_not_ask_itself_when_its_controller_is_not_active() -> None:
    asked: list[int] = []
    cache = SimpleNamespace(snapshot=lambda: SimpleNamespace(controller_id=1, brokers={}))

    def local(broker_id: int, epoch: int) -> tuple[E.KafkaError, list[Any]]:
        asked.append(broker_id)
        return E.NONE, []

    def shutdown(active: bool) -> ControlledShutdown:
        return ControlledShutdown(
            1,
            lambda: 7,
            cast(Any, cache),
            "PLAINTEXT",
            None,
            max_retries=2,
            retry_backoff_ms=0,
            local=local,
            local_active=lambda: active,
        )

    assert shutdown(active=False).run() == [] and asked == []  # a stale /controller naming itself: no one to ask
    assert shutdown(active=True).run() == [] and asked == [1]


def test_a_node_whose_start_failed_skips_controlled_shutdown(monkeypatch: pytest.MonkeyPatch) -> None:
    """Kafka's KafkaServer.shutdown: no controlled shutdown unless startup completed (a node restarted before its
    old session expired fails to register; it must exit at once, not ask a controller for ~45 s)."""
    node = Node(load_config(None, {"broker.id": "1", "zookeeper.connect": "127.0.0.1:1/kafka"}))
    node.cache = cast(Any, SimpleNamespace(snapshot=lambda: SimpleNamespace(controller_id=1, brokers={})))

    def refuse(_self: ControlledShutdown) -> list[str]:
        raise AssertionError("controlled shutdown attempted")

    monkeypatch.setattr(ControlledShutdown, "run", refuse)
    assert node.startup_complete is False
    assert node.controlled_shutdown() == []
    node.startup_complete = True
    with pytest.raises(AssertionError, match="attempted"):
        node.controlled_shutdown()


def test_a_session_expiring_under_a_pipelined_controller_write_is_session_lost() -> None:
    """kazoo fails the requests still pending at an expiry with its own SessionExpiredError; the controller's
    pipelined writes (FencedWriter.each/bulk/atomic_many) raised it raw, the loop logged BK-UNEXPECTED and the
    client got UNKNOWN_SERVER_ERROR (found by the failover soak). It is SessionLost: the controller resigns."""
    from controller.zk.fenced_writer import FencedWriter

    class Pending:
        def get(self, timeout: float) -> Any:
            raise SessionExpiredError()

    writer = FencedWriter(cast(ZkSession, SimpleNamespace(request_timeout_s=1.0)), 3, 3)
    with pytest.raises(SessionLost):
        writer._answer(Pending())


def test_a_session_expiring_under_a_bulk_read_is_session_lost(monkeypatch: pytest.MonkeyPatch) -> None:
    from controller.zk import bulk_read

    def expired(*_args: Any, **_kwargs: Any) -> Any:
        raise SessionExpiredError()

    monkeypatch.setattr(bulk_read, "read_data", expired)
    monkeypatch.setattr(bulk_read, "read_children", expired)
    session = ZkSession("127.0.0.1:1", name="never-started")
    with pytest.raises(SessionLost):
        session.read_data(["/a"])
    with pytest.raises(SessionLost):
        session.read_children(["/a"])
    assert zk_error(SessionLost("x")) is E.REQUEST_TIMED_OUT
