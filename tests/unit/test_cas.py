"""controller.zk.cas: updates of one key in this process take turns; of different keys they do not."""

from __future__ import annotations

import threading
import time

import pytest
from tenacity import wait_fixed

from controller.zk import cas


def test_one_keys_updates_never_overlap() -> None:
    inside = 0
    most = 0
    guard = threading.Lock()

    def attempt() -> None:
        nonlocal inside, most
        with guard:
            inside += 1
            most = max(most, inside)
        time.sleep(0.002)
        with guard:
            inside -= 1

    threads = [
        threading.Thread(
            target=cas.read_modify_write,
            args=("/config/topics/t", attempt),
            kwargs={"max_attempts": 1, "give_up": lambda: RuntimeError("unused")},
        )
        for _ in range(20)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most == 1
    assert cas._locks == {}  # nothing kept once nobody holds or waits for the key


def test_different_keys_run_side_by_side() -> None:
    both_inside = threading.Barrier(2, timeout=5)

    def attempt() -> None:
        both_inside.wait()  # would time out (BrokenBarrierError) if the second key waited for the first

    errors: list[BaseException] = []

    def run(key: str) -> None:
        try:
            cas.read_modify_write(key, attempt, max_attempts=1, give_up=lambda: RuntimeError("unused"))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(k,)) for k in ("/a", "/b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_lost_races_are_retried_with_the_wait_then_given_up() -> None:
    slept: list[float] = []
    calls = 0

    def attempt() -> None:
        nonlocal calls
        calls += 1
        raise cas.Raced("version moved")

    with pytest.raises(KeyError, match="gave up"):
        cas.read_modify_write(
            "/k",
            attempt,
            max_attempts=11,
            give_up=lambda: KeyError("gave up"),
            wait=wait_fixed(0.1),
            sleep=slept.append,
        )
    assert calls == 11
    assert slept == [0.1] * 10  # between attempts, none after the last


def test_the_lock_is_released_when_an_attempt_fails() -> None:
    def boom() -> None:
        raise ValueError("bug")

    with pytest.raises(ValueError):
        cas.read_modify_write("/k", boom, max_attempts=3, give_up=lambda: RuntimeError("unused"))
    assert cas._locks == {}
    assert cas.read_modify_write("/k", lambda: 7, max_attempts=1, give_up=lambda: RuntimeError("unused")) == 7


def test_catch_up_runs_before_each_retry_only() -> None:
    """After a lost race the session syncs before it reads again (its server may trail the write that won);
    the first attempt reads at once."""
    events: list[str] = []

    def attempt() -> int:
        events.append("attempt")
        if len(events) < 5:
            raise cas.Raced("version moved")
        return 1

    assert (
        cas.read_modify_write(
            "/k",
            attempt,
            max_attempts=5,
            give_up=lambda: RuntimeError("unused"),
            catch_up=lambda: events.append("sync"),
        )
        == 1
    )
    assert events == ["attempt", "sync", "attempt", "sync", "attempt"]
