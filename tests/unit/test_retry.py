"""The compare-and-set race policies of controller.zk.retry: what is retried, how often, what is raised."""

from __future__ import annotations

import pytest

from controller.zk.retry import Raced, attempts, until_settled


class Script:
    """An attempt that raises the given outcomes in turn (an exception instance is raised, a value returned)."""

    def __init__(self, *outcomes: object) -> None:
        self.outcomes = list(outcomes)
        self.calls = 0

    def __call__(self) -> object:
        self.calls += 1
        outcome = self.outcomes.pop(0)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome


def test_until_settled_reruns_only_lost_races() -> None:
    script = Script(Raced("a"), Raced("b"), "won")
    assert until_settled(script, max_attempts=5) == "won"
    assert script.calls == 3


def test_until_settled_gives_up_with_the_callers_error() -> None:
    script = Script(*[Raced(str(i)) for i in range(5)], "never reached")
    with pytest.raises(RuntimeError, match="after repeated races"):
        until_settled(script, max_attempts=5, give_up=lambda: RuntimeError("after repeated races"))
    assert script.calls == 5


def test_until_settled_without_give_up_raises_the_last_race() -> None:
    script = Script(Raced("first"), Raced("second"))
    with pytest.raises(Raced, match="second"):
        until_settled(script, max_attempts=2)


def test_until_settled_does_not_retry_other_errors() -> None:
    script = Script(KeyError("not a race"), "unused")
    with pytest.raises(KeyError):
        until_settled(script, max_attempts=None)
    assert script.calls == 1


def test_unlimited_attempts_go_on_until_the_race_ends() -> None:
    script = Script(*[Raced("again")] * 50, 7)
    assert until_settled(script, max_attempts=None) == 7
    assert script.calls == 51


def test_attempts_end_quietly_keeping_partial_progress() -> None:
    done: list[int] = []
    for attempt in attempts(3):
        with attempt:
            done.append(len(done))
            raise Raced("still racing")
    assert done == [0, 1, 2]


def test_attempts_stop_after_a_clean_round() -> None:
    rounds = 0
    for attempt in attempts(10):
        with attempt:
            rounds += 1
            if rounds < 2:
                raise Raced("once")
    assert rounds == 2


def test_attempts_let_other_errors_through() -> None:
    with pytest.raises(ValueError):
        for attempt in attempts(10):
            with attempt:
                raise ValueError("bug")
