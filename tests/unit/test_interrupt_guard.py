"""Ctrl-C during kazoo's ``KazooClient._call`` must still reach the tool as KeyboardInterrupt (Python's own
handler raises it inside kazoo's bare ``except:``, which swallows it and fails the request instead), and one
during an import must wait until the module is whole."""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
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
    assert interrupts._deferring(sock.frame)
    assert not interrupts._deferring(sys._getframe())


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


#: A module whose import is interrupted halfway: it sends the SIGINT itself, then finishes its body.
_INTERRUPTED_MODULE = """
import os, signal
os.kill(os.getpid(), signal.SIGINT)
for _ in range(1000):  # the handler runs here, between these bytecodes, inside the import
    pass
WHOLE = True
"""


@pytest.fixture
def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    name = f"bk_interrupted_{os.getpid()}"
    (tmp_path / f"{name}.py").write_text(_INTERRUPTED_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


def test_a_ctrl_c_inside_an_import_is_raised_after_it(module: str, guarded: None) -> None:
    with pytest.raises(KeyboardInterrupt):
        __import__(module)
        time.sleep(1.0)  # the SIGINT sent again arrives here
    assert sys.modules[module].WHOLE


def test_unguarded_the_same_ctrl_c_leaves_the_import_unfinished(module: str) -> None:
    """What the guard is for: Python's own handler raises inside the module's body, which never completes."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            __import__(module)
        assert module not in sys.modules
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.mark.parametrize("argv", [["zk", "get", "/"], ["reassign", "--list"]])
def test_a_ctrl_c_while_the_command_loads_is_130(
    argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from controller import cli

    def interrupted(_ref: str) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_load", interrupted)
    previous = signal.getsignal(signal.SIGINT)
    try:
        assert cli.main(argv) == 130
    finally:
        signal.signal(signal.SIGINT, previous)
    assert capsys.readouterr().err == "error: interrupted\n"
