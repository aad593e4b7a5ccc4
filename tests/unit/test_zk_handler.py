"""The node's kazoo handler (controller/zk/handler.py): select's contract over poll(2), inline watchers."""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
from collections.abc import Iterator

import pytest
from kazoo.handlers.utils import selector_select
from kazoo.protocol.states import Callback

from controller.zk.handler import NodeHandler, inline_watcher


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    a, b = socket.socketpair()
    yield a, b
    a.close()
    b.close()


def test_select_reports_the_objects_passed_by_readiness(pair: tuple[socket.socket, socket.socket]) -> None:
    a, b = pair
    handler = NodeHandler()
    assert handler.select([a], [], [], 0.01) == ([], [], [])  # nothing to read: a timeout
    b.send(b"x")
    r, w, x = handler.select([a, b], [a], [], 1.0)
    assert r == [a] and w == [a] and x == []
    assert handler.select([], [b], [], None)[1] == [b]  # no timeout: writable at once


def test_select_sees_a_closed_peer_as_readable(pair: tuple[socket.socket, socket.socket]) -> None:
    a, b = pair
    b.close()
    assert NodeHandler().select([a], [], [], 1.0)[0] == [a]  # recv then reads b"" and kazoo drops the connection


def test_select_refuses_a_closed_socket_and_a_negative_timeout(pair: tuple[socket.socket, socket.socket]) -> None:
    a, _b = pair
    handler = NodeHandler()
    with pytest.raises(ValueError):
        handler.select([a], [], [], -1)
    a.close()
    stale = next(fd for fd in range(900, 1000) if not _is_open(fd))  # a low number would be reused meanwhile
    with pytest.raises(TypeError):  # as kazoo's own select: a closed socket object has no descriptor
        selector_select([a], [], [], 0.01)
    with pytest.raises(TypeError):
        handler.select([a], [], [], 0.01)
    with pytest.raises(ValueError):  # a descriptor number no longer open: ValueError, as kazoo's own
        selector_select([stale], [], [], 0.01)
    with pytest.raises(ValueError):
        handler.select([stale], [], [], 0.01)


def test_marked_watchers_run_inline_others_on_kazoos_thread() -> None:
    handler = NodeHandler()
    handler.start()
    try:
        ran_on: dict[str, str] = {}
        done = threading.Event()

        @inline_watcher
        def quick(event: str) -> None:
            ran_on["quick"] = threading.current_thread().name

        def slow(event: str) -> None:
            ran_on["slow"] = threading.current_thread().name
            done.set()

        handler.dispatch_callback(Callback("watch", quick, ("e",)))
        assert ran_on["quick"] == threading.current_thread().name  # already ran, here
        handler.dispatch_callback(Callback("watch", slow, ("e",)))
        assert done.wait(5)
        assert ran_on["slow"] != threading.current_thread().name
    finally:
        handler.stop()


def test_an_inline_watcher_that_raises_is_logged_not_propagated(caplog: pytest.LogCaptureFixture) -> None:
    @inline_watcher
    def broken(event: str) -> None:
        raise RuntimeError("boom")

    NodeHandler().dispatch_callback(Callback("watch", broken, ("e",)))
    assert "inline watch callback" in caplog.text and "boom" in caplog.text


def test_a_bound_method_carries_the_mark() -> None:
    class Cache:
        @inline_watcher
        def on_watch(self, event: str) -> None:
            self.seen = event

    cache = Cache()
    NodeHandler().dispatch_callback(Callback("watch", cache.on_watch, ("e",)))
    assert cache.seen == "e"


def test_a_kept_poll_object_follows_the_descriptor_number_to_a_new_socket() -> None:
    handler = NodeHandler()
    a, b = socket.socketpair()
    assert handler.select([a], [], [], 0.01) == ([], [], [])  # a poll object for a's number is now kept
    number = a.fileno()
    c, d = socket.socketpair()
    try:
        os.dup2(c.fileno(), number)  # a's number now names c's socket, as after a reconnect reusing it
        reused = socket.socket(fileno=number)
        assert handler.select([reused], [], [], 0.01) == ([], [], [])
        d.send(b"x")
        assert handler.select([reused], [], [], 1.0) == ([reused], [], [])
        reused.detach()
    finally:
        for s in (a, b, c, d):
            s.close()


def test_two_threads_select_the_same_socket_at_once(pair: tuple[socket.socket, socket.socket]) -> None:
    a, b = pair
    handler = NodeHandler()
    results: list[tuple[list[object], list[object], list[object]]] = []
    waiting = [threading.Thread(target=lambda: results.append(handler.select([a], [], [], 5.0))) for _ in range(2)]
    for t in waiting:
        t.start()
    time.sleep(0.05)  # both in poll(2) on the same descriptor (one poll object polled twice would raise)
    b.send(b"x")
    for t in waiting:
        t.join(5.0)
    assert results == [([a], [], []), ([a], [], [])]


def test_its_threads_leave_sigint_and_sigterm_to_the_main_thread() -> None:
    seen: list[set[int]] = []
    handler = NodeHandler()
    handler.spawn(lambda: seen.append(set(signal.pthread_sigmask(signal.SIG_BLOCK, ())))).join(5)
    assert seen and {signal.SIGINT, signal.SIGTERM} <= seen[0]
    assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, ())  # the caller's own mask untouched
