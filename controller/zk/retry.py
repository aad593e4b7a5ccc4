"""Retry policies for ZooKeeper compare-and-set races, on tenacity.

A race is not a failure of ZooKeeper but of an assumption: the znode changed (or appeared, or vanished)
between our read and our conditional write. The cure is always the same — read again, recompute, write
again — so the attempt itself says when it lost by raising :class:`Raced`, and the policy retries exactly
that and nothing else: a transient ZooKeeper error is already retried inside
:meth:`controller.zk.session.ZkSession.call`, and anything else is a real error for the caller.

Two shapes cover the callers: :func:`until_settled` when running out of attempts is an error (broker
registration, which then raises what the caller says), and :func:`attempts` for loops that keep
whatever they managed (partition state updates: a partition still racing after N rounds is left for the
next event, as Kafka's controller does).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import NoReturn, TypeVar

from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    stop_never,
    wait_none,
)
from tenacity.wait import WaitBaseT

T = TypeVar("T")


class Raced(Exception):
    """Raised by an attempt that lost a compare-and-set race: read afresh and try again."""


def until_settled(
    fn: Callable[[], T],
    *,
    max_attempts: int | None,
    give_up: Callable[[], Exception] | None = None,
    wait: WaitBaseT | None = None,
    sleep: Callable[[float], None] | None = None,
) -> T:
    """Call ``fn`` until it returns without raising :class:`Raced`, at most ``max_attempts`` times (None:
    no limit — for races that cannot repeat forever, like create-if-absent against a deleter). Past the
    limit, raise ``give_up()`` (default: the last :class:`Raced`). Any other exception ends it at once.
    ``wait`` spaces the attempts (default: none), ``sleep`` replaces ``time.sleep`` (tests)."""

    def exhausted(state: RetryCallState) -> NoReturn:
        if give_up is not None:
            raise give_up()
        assert state.outcome is not None
        raise state.outcome.exception()  # type: ignore[misc]

    retrying = Retrying(
        retry=retry_if_exception_type(Raced),
        stop=stop_never if max_attempts is None else stop_after_attempt(max_attempts),
        wait=wait if wait is not None else wait_none(),
        retry_error_callback=exhausted,
        reraise=True,
        sleep=sleep if sleep is not None else time.sleep,
    )
    return retrying(fn)


def attempts(max_attempts: int) -> Retrying:
    """Rounds for a loop that keeps partial progress: ``for attempt in attempts(n): with attempt: ...``;
    a round that raises :class:`Raced` is followed by another, and after ``n`` rounds the loop simply ends
    (the caller returns what it has). Other exceptions propagate."""
    return Retrying(
        retry=retry_if_exception_type(Raced),
        stop=stop_after_attempt(max_attempts),
        wait=wait_none(),
        retry_error_callback=lambda _state: None,
    )
