"""Ctrl-C during kazoo's ``KazooClient._call`` must still reach the tool as KeyboardInterrupt (Python's own
handler raises it inside kazoo's bare ``except:``, which swallows it and fails the request instead)."""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Iterator
from types import FrameType
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.handlers.threading import SequentialThreadingHandler
from kazoo.protocol.states import KeeperState

from controller.zk import interrupts


class _Socket:
    """kazoo's wake-up socket, standing in: records the stack it was called from; ``kill`` sends SIGINT from
    inside ``_call``, as a Ctrl-C landing at that instant."""

    def __init__(self, kill: bool) -> None:
        self.kill = kill
        self.frame: FrameType | None = None

    def send(self, _data: bytes) -> int:
        self.frame = sys._getframe(1)
        if self.kill:
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(1000):  # the handler runs here, between these bytecodes, still inside _call
                pass
        return 1


@pytest.fixture
def client() -> Iterator[Any]:
    c = KazooClient(handler=SequentialThreadingHandler())
    c._state = KeeperState.CONNECTED  # never started: _call only queues the request and wakes the socket
    yield c
    c._connection._write_sock = None


@pytest.fixture
def guarded() -> Iterator[None]:
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    interrupts.guard_interrupts()
    assert signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    yield
    signal.signal(signal.SIGINT, previous)


def test_the_stack_inside_kazoos_call_is_recognised(client: Any) -> None:
    sock = _Socket(kill=False)
    client._connection._write_sock = sock
    client._call(object(), client.handler.async_result())
    assert interrupts._in_kazoo_call(sock.frame)
    assert not interrupts._in_kazoo_call(sys._getframe())


def test_a_ctrl_c_inside_kazoos_call_is_raised_after_it(client: Any, guarded: None) -> None:
    sock = _Socket(kill=True)
    client._connection._write_sock = sock
    answer = client.handler.async_result()
    with pytest.raises(KeyboardInterrupt):
        client._call(object(), answer)  # returns: the interrupt was deferred, not raised inside kazoo's except
        time.sleep(1.0)  # the SIGINT sent again arrives here
    assert not answer.ready()  # the request was queued, not failed as ConnectionClosedError


def test_unguarded_the_same_ctrl_c_is_swallowed_by_kazoo(client: Any) -> None:
    """What the guard is for (kazoo 2.11): Python's own handler's KeyboardInterrupt dies in kazoo's except."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        sock = _Socket(kill=True)
        client._connection._write_sock = sock
        answer = client.handler.async_result()
        client._call(object(), answer)
        assert answer.ready() and type(answer.exception).__name__ == "ConnectionClosedError"
    finally:
        signal.signal(signal.SIGINT, previous)


def test_an_ignored_sigint_stays_ignored() -> None:
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        interrupts.guard_interrupts()
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)
