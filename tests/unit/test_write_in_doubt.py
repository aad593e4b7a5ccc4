"""A client's admin write whose connection dropped before ZooKeeper answered, retried and then refused, is in
doubt — never a definite answer. A CI failover run (expire-session) met it: an IncrementalAlterConfigs multi
committed, its answer was lost with the connection, the retry failed its version check against the first
attempt's own write, the read-modify-write loop took that for a lost race, and by its next attempt the node had
resigned: NOT_CONTROLLER ("nothing written") for a config that was in ZooKeeper."""

from __future__ import annotations

from typing import Any

import pytest
from kazoo.exceptions import BadVersionError, ConnectionLoss, NodeExistsError, RolledBackError

from controller.store.errors import store_failure
from controller.zk.errors import WriteInDoubt
from controller.zk.fenced_session import FencedSession
from controller.zk.ops import SetData
from controller.zk.session import ZkSession
from zkmodel import errorcodes as E


class Answer:
    """A kazoo async result that is already settled."""

    def __init__(self, outcome: Any) -> None:
        self.outcome = outcome

    def get(self, timeout: float | None = None) -> Any:
        if isinstance(self.outcome, BaseException):
            raise self.outcome
        return self.outcome


def _session() -> ZkSession:
    return ZkSession("127.0.0.1:1", session_timeout_ms=6000)


def _sends(*outcomes: Any) -> tuple[list[int], Any]:
    sent: list[int] = []

    def send() -> Answer:
        sent.append(1)
        return Answer(outcomes[len(sent) - 1])

    return sent, send


REFUSED = [RolledBackError(), BadVersionError()]


def test_a_multi_refused_after_a_dropped_connection_is_in_doubt() -> None:
    sent, send = _sends(ConnectionLoss(), REFUSED)
    with pytest.raises(WriteInDoubt, match="BadVersionError"):
        _session().call(send, what="alter configs of topic t", write="config", refusal_in_doubt=True)
    assert len(sent) == 2
    failure = store_failure(WriteInDoubt("x"), "topic t")
    assert failure.error is E.REQUEST_TIMED_OUT and "may still take effect" in (failure.message or "")


def test_without_the_flag_the_refusal_is_the_callers_to_sort_out() -> None:
    """The election and a broker's registration look whose node it is themselves (Kafka's checkControllerAndEpoch)."""
    _sent, send = _sends(ConnectionLoss(), [NodeExistsError(), RolledBackError()])
    results = _session().call(send, what="controller election", write="election")
    assert isinstance(results[0], NodeExistsError)


@pytest.mark.parametrize("first", [REFUSED, [object(), object()]])
def test_a_refusal_or_success_without_a_dropped_connection_is_definite(first: Any) -> None:
    _sent, send = _sends(first)
    assert _session().call(send, what="w", write="config", refusal_in_doubt=True) is first


def test_a_retry_that_succeeds_is_a_success() -> None:
    """Its first attempt cannot have been applied: the retry's checks would then have failed."""
    ok = [object(), object()]
    _sent, send = _sends(ConnectionLoss(), ok)
    assert _session().call(send, what="w", write="config", refusal_in_doubt=True) is ok


def test_fenced_admin_writes_ask_for_doubt() -> None:
    asked: list[bool] = []

    class Inner:
        on_fenced = None

        def multi(self, ops: Any, *, what: str, write: str, refusal_in_doubt: bool = False) -> list[Any]:
            asked.append(refusal_in_doubt)
            return [object() for _ in ops]

    fenced = FencedSession(Inner(), lambda: 3)  # type: ignore[arg-type]
    fenced.set_if_version("/config/topics/t", b"{}", 2)
    fenced.multi([SetData("/config/topics/t", b"{}", 2)], what="w", write="config")
    assert asked == [True, True]
