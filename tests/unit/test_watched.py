"""The watched-cache base without ZooKeeper: the back-off schedule, the retry policy read from the error, the
coalescing of dirty paths and reload generations, and the cache thread driven through a stand-in session."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any, cast

import pytest
from tenacity import RetryCallState

from controller.logtags import UNEXPECTED
from controller.zk.errors import ConnectionLoss, KazooTimeoutError, SessionLost, ZkTimeout, ZkUnavailable
from controller.zk.multiread import MultiReadTimeoutError
from controller.zk.pending import Pending
from controller.zk.types import EventType, KazooState, WatchedEvent
from controller.zk.watched import BACKOFF, Stopped, WatchedCache, update_retrying, zk_unavailable

# -- the back-off and the retry policy ----------------------------------------------------------------------------


def failing(times: int, exc: Exception) -> Callable[[], str]:
    calls = 0

    def call() -> str:
        nonlocal calls
        calls += 1
        if calls <= times:
            raise exc
        return "done"

    return call


def test_backoff_doubles_from_a_tenth_of_a_second_to_two_seconds() -> None:
    """The schedule the hand-written loops had: min(max(2 * previous, 0.1), 2.0)."""
    expected, previous = [], 0.0
    for _ in range(9):
        previous = min(max(2 * previous, 0.1), 2.0)
        expected.append(previous)
    slept: list[float] = []
    retrying = update_retrying(sleep=slept.append, before_sleep=lambda state: None)
    assert retrying(failing(9, ZkUnavailable("down"))) == "done"
    assert slept == expected == [0.1, 0.2, 0.4, 0.8, 1.6, 2.0, 2.0, 2.0, 2.0]


def test_backoff_starts_afresh_after_a_success() -> None:
    slept: list[float] = []
    retrying = update_retrying(sleep=slept.append, before_sleep=lambda state: None)
    retrying(failing(3, ZkTimeout("slow")))
    retrying(failing(2, RuntimeError("bug")))  # unexpected errors back off the same way
    assert slept == [0.1, 0.2, 0.4, 0.1, 0.2]


def test_before_sleep_sees_the_error_and_the_delay() -> None:
    seen: list[tuple[str, float]] = []

    def before_sleep(state: RetryCallState) -> None:
        assert state.outcome is not None and state.next_action is not None
        seen.append((repr(state.outcome.exception()), state.next_action.sleep))

    update_retrying(sleep=lambda s: None, before_sleep=before_sleep)(failing(2, SessionLost("gone")))
    assert seen == [("SessionLost('gone')", 0.1), ("SessionLost('gone')", 0.2)]


def test_stopped_ends_the_retries() -> None:
    slept: list[float] = []
    with pytest.raises(Stopped):
        update_retrying(sleep=slept.append, before_sleep=lambda state: None)(failing(5, Stopped()))
    assert slept == []


@pytest.mark.parametrize(
    "exc",
    [
        ZkUnavailable("x"),
        ZkTimeout("x"),
        SessionLost("x"),
        ConnectionLoss(),
        KazooTimeoutError(),
        TimeoutError(),
        MultiReadTimeoutError("x"),
    ],
)
def test_zookeeper_errors_mean_unavailable(exc: Exception) -> None:
    assert zk_unavailable(exc)


@pytest.mark.parametrize("exc", [RuntimeError("x"), KeyError("k"), ValueError("v"), None])
def test_other_errors_are_bugs(exc: Exception | None) -> None:
    assert not zk_unavailable(exc)


def test_backoff_is_tenacitys_exponential_wait() -> None:
    """One schedule, declared once: the retrying above and BACKOFF agree attempt by attempt."""
    state = RetryCallState(
        retry_object=update_retrying(sleep=lambda s: None, before_sleep=lambda s: None), fn=None, args=(), kwargs={}
    )
    delays = []
    for attempt in range(1, 8):
        state.attempt_number = attempt
        delays.append(BACKOFF(state))
    assert delays == [0.1, 0.2, 0.4, 0.8, 1.6, 2.0, 2.0]


# -- Pending: coalescing and reload generations ------------------------------------------------------------------


def test_dirty_paths_coalesce_and_are_handed_over() -> None:
    pending = Pending()
    assert pending.starting() == 1
    pending.loaded(1)
    for path in ("/a", "/b", "/a", "/a"):
        assert pending.mark(path)
    assert pending.take()[:2] == (None, {"/a", "/b"})
    assert pending.take()[:2] == (None, set())


def test_a_failed_update_gives_its_paths_back() -> None:
    pending = Pending()
    pending.loaded(pending.starting())
    pending.mark("/a")
    _, dirty, _ = pending.take()
    pending.mark("/b")  # recorded while the update ran
    pending.give_back(dirty)
    assert pending.take()[:2] == (None, {"/a", "/b"})


def test_reloads_by_generation() -> None:
    pending = Pending()
    assert pending.take()[0] == 1  # nothing loaded yet: the first load is due
    pending.loaded(1)
    assert pending.take()[0] is None
    first = pending.request_reload()
    second = pending.request_reload()
    assert (first, second) == (2, 3)
    pending.mark("/a")
    assert pending.take()[:2] == (3, {"/a"})  # one load covers both requests (and the dirty path)
    pending.loaded(3)
    assert pending.done == 3 and pending.take()[:2] == (None, set())
    pending.loaded(2)  # an older load finishing late changes nothing
    assert pending.done == 3


def test_a_reconnect_after_a_loss_makes_a_reload_due() -> None:
    pending = Pending()
    pending.loaded(pending.starting())
    assert not pending.session_state(connected=True)  # connected without a loss: the watches are intact
    assert not pending.session_state(connected=False)  # SUSPENDED
    assert not pending.session_state(connected=False)  # LOST
    assert pending.take()[0] is None  # nothing to do until CONNECTED: ZooKeeper cannot answer anyway
    assert pending.session_state(connected=True)
    assert pending.take()[0] == 2
    assert not pending.session_state(connected=True)


def test_starting_forgets_a_loss_before_start() -> None:
    pending = Pending()
    pending.session_state(connected=False)
    pending.loaded(pending.starting())  # start's load arms every watch
    assert not pending.session_state(connected=True)


def test_nothing_is_recorded_after_stop() -> None:
    pending = Pending()
    pending.loaded(pending.starting())
    pending.session_state(connected=False)
    pending.stop()
    assert not pending.mark("/a")
    assert not pending.session_state(connected=True)
    assert pending.take()[:2] == (None, set())


# -- Pending: the node's own controller's writes -----------------------------------------------------------------


def _loaded() -> Pending:
    pending = Pending()
    pending.loaded(pending.starting())
    return pending


def test_a_writes_events_are_held_back_until_it_settles_then_taken_with_it() -> None:
    pending = _loaded()
    pending.writing(["/t/a", "/t/b"])
    pending.mark("/t/a")  # its own watch event, delivered before its answer
    pending.mark("/other")
    assert pending.being_written(["/t/a", "/t/c"]) == {"/t/a"}
    assert pending.take() == (None, {"/other"}, [])  # /t/a held back
    assert pending.settle(["/t/a", "/t/b"], "the write", ())
    assert pending.being_written(["/t/a"]) == {"/t/a"}  # settled but not taken: still the write's
    assert pending.take() == (None, {"/t/a"}, ["the write"])  # the write and its event together
    assert pending.being_written(["/t/a", "/t/b"]) == set()


def test_a_write_that_failed_releases_its_paths_and_has_them_read() -> None:
    pending = _loaded()
    pending.writing(["/t/a"])
    pending.mark("/t/a")
    assert pending.take()[1] == set()
    assert pending.settle(["/t/a"], None, ["/t/a", "/brokers/topics"])
    assert pending.being_written(["/t/a"]) == set()
    assert pending.take() == (None, {"/t/a", "/brokers/topics"}, [])


def test_two_writes_to_one_path_hold_it_until_both_settle() -> None:
    pending = _loaded()
    pending.writing(["/t/a"])
    pending.writing(["/t/a"])
    pending.settle(["/t/a"], None, ())
    assert pending.being_written(["/t/a"]) == {"/t/a"}
    pending.settle(["/t/a"], "second", ())
    assert pending.take()[2] == ["second"]
    assert pending.being_written(["/t/a"]) == set()


def test_caught_up_waits_for_events_and_for_every_write_announced() -> None:
    pending = _loaded()
    pending.mark("/x")
    pending.writing(["/t/a"])
    point = pending.mark_point()
    assert not pending.caught_up(point)
    pending.take()
    pending.applied()
    assert not pending.caught_up(point)  # the event is applied, the write is not settled
    pending.settle(["/t/a"], "w", ())
    assert not pending.caught_up(point)  # settled, not yet taken and applied
    pending.take()
    pending.applied()
    assert pending.caught_up(point)
    pending.mark("/y")
    assert pending.caught_up(point) and not pending.caught_up(pending.mark_point())


def test_an_update_that_held_events_back_does_not_count_them_applied() -> None:
    pending = _loaded()
    pending.writing(["/t/a"])
    pending.mark("/t/a")
    point = pending.mark_point()
    pending.take()
    pending.applied()
    assert not pending.caught_up(point)


def test_nothing_of_a_write_is_recorded_after_stop() -> None:
    pending = _loaded()
    pending.writing(["/t/a"])
    pending.stop()
    assert not pending.settle(["/t/a"], "w", ())
    assert pending.take() == (None, set(), [])


# -- the cache thread, with a stand-in session -------------------------------------------------------------------


class FakeSession:
    def __init__(self) -> None:
        self.listeners: list[Callable[[KazooState], None]] = []

    def add_state_listener(self, listener: Callable[[KazooState], None]) -> None:
        self.listeners.append(listener)

    def state(self, state: KazooState) -> None:
        for listener in self.listeners:
            listener(state)


class Counter(WatchedCache[tuple[int, frozenset[str]]]):
    """A snapshot of (full loads, every path applied so far); failures scripted per call."""

    def __init__(self, session: FakeSession) -> None:
        super().__init__(cast(Any, session), (0, frozenset()), coalesce_seconds=0.0, name="counter")
        self.fake = session
        self.applied: set[str] = set()
        self.load_failures: list[Exception] = []
        self.apply_failures: list[Exception] = []

    def _load_all(self) -> str:
        if self.load_failures:
            raise self.load_failures.pop(0)
        self._install((self.full_loads + 1, frozenset(self.applied)))
        return "loaded"

    def _apply_dirty(self, dirty: set[str]) -> None:
        if self.apply_failures:
            raise self.apply_failures.pop(0)
        self.applied |= dirty
        self._install((self._snapshot[0], frozenset(self.applied)))


def event(path: str) -> WatchedEvent:
    return WatchedEvent(EventType.CHANGED, KazooState.CONNECTED, path)


@pytest.fixture
def cache() -> Iterator[Counter]:
    made = Counter(FakeSession())
    yield made
    made.stop()


def test_start_loads_and_watches_update(cache: Counter) -> None:
    assert cache.start() == (1, frozenset()) and cache.version == 1
    cache._on_watch(event("/a"))
    cache._on_watch(WatchedEvent(EventType.NONE, KazooState.CONNECTED, None))  # kazoo dropping watchers
    assert cache.wait_for(lambda s: "/a" in s[1], 5) == (1, frozenset({"/a"}))
    with pytest.raises(RuntimeError, match="counter already started"):
        cache.start()


def test_unavailable_zookeeper_retries_the_same_paths(cache: Counter, caplog: pytest.LogCaptureFixture) -> None:
    cache.start()
    cache.apply_failures = [ZkUnavailable("down"), ZkTimeout("slow")]
    with caplog.at_level(logging.WARNING, "controller.zk.watched"):
        cache._on_watch(event("/a"))
        cache.wait_for(lambda s: "/a" in s[1], 5)
    warnings = [r.getMessage() for r in caplog.records if "unavailable" in r.getMessage()]
    assert warnings == [
        "counter: ZooKeeper unavailable (ZkUnavailable('down')); serving version 1, retrying in 0.1s",
        "counter: ZooKeeper unavailable (ZkTimeout('slow')); serving version 1, retrying in 0.2s",
    ]
    assert cache.full_loads == 1


def test_a_bug_is_logged_and_answered_with_a_full_reload(cache: Counter, monkeypatch: pytest.MonkeyPatch) -> None:
    cache.start()
    cache.apply_failures = [RuntimeError("bug")]
    logged: list[tuple[Any, ...]] = []
    # recorded here, not logged: the suite fails any test that logs the UNEXPECTED tag
    monkeypatch.setattr(cache._log, "error", lambda *args, **kwargs: logged.append(args))
    cache._on_watch(event("/a"))
    cache.wait_for(lambda s: s[0] == 2, 5)
    assert logged == [("%s %s: update failed; full reload in %.1fs", UNEXPECTED, "counter", 0.1)]


def test_a_reconnect_reloads_and_refresh_now_waits_for_its_load(cache: Counter) -> None:
    cache.start()
    cache.fake.state(KazooState.SUSPENDED)
    cache.fake.state(KazooState.CONNECTED)
    cache.wait_for(lambda s: s[0] == 2, 5)
    assert cache.refresh_now(5)[0] == 3 and cache.full_loads == 3


def test_failed_reload_is_retried_until_it_succeeds(cache: Counter) -> None:
    cache.start()
    cache.load_failures = [ZkUnavailable("down")]
    assert cache.refresh_now(5)[0] == 2


def test_stop_cuts_the_backoff_short_and_ignores_later_events(cache: Counter) -> None:
    cache.start()
    cache.apply_failures = [ZkUnavailable("down")] * 100
    cache._on_watch(event("/a"))
    done = threading.Event()

    def stop() -> None:
        cache.stop(5)
        done.set()

    threading.Thread(target=stop).start()
    assert done.wait(5) and cache._thread is not None and not cache._thread.is_alive()
    before = cache.snapshot()
    cache._on_watch(event("/b"))
    assert cache.snapshot() is before and "/b" not in cache._pending.take()[1]
    with pytest.raises(RuntimeError, match="not running"):
        cache.refresh_now(1)


def test_wait_for_times_out_with_the_version(cache: Counter) -> None:
    cache.start()
    with pytest.raises(TimeoutError, match=r"counter: condition not met within 0\.1s \(version 1\)"):
        cache.wait_for(lambda s: False, 0.1)
