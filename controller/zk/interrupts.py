"""Ctrl-C for the command-line tools, raised where nothing swallows it or breaks on it.

Two places must not see a KeyboardInterrupt, and :func:`guard_interrupts` replaces Python's SIGINT handler with
one that raises KeyboardInterrupt as Python's does, except while one of them is on the interrupted stack: then it
sends SIGINT to the process again a few milliseconds later, when that frame has returned.

- ``KazooClient._call`` (every request a tool sends goes through it, on the tool's main thread) wakes its
  connection thread inside a bare ``except:`` and answers anything raised there with ConnectionClosedError on
  the request. An interrupt there is swallowed: the tool goes on, or reports a lost ZooKeeper (exit 3) for an
  interrupt (exit 130). ``_call`` is a queue append and a one-byte socket write.
- An import (importlib's ``_find_and_load``): an interrupted import leaves a half-initialised module behind, and
  orjson's extension init, which assumes its own imports succeed (ijl/orjson#310), dies of a segmentation
  fault. The tools load each command's modules after the guard is in place.
"""

from __future__ import annotations

import os
import signal
import threading
from types import FrameType

__all__ = ["RETRY_S", "guard_interrupts"]

#: How long after a deferred SIGINT it is sent again.
RETRY_S = 0.005
#: The frames an interrupt waits out, told by their code's name and file: ``KazooClient._call`` and importlib's
#: ``_find_and_load`` (the tools' entry point does not import kazoo: a usage error is answered before any
#: connection, and quickly).
_DEFERRING: frozenset[tuple[str, str]] = frozenset(
    {("_call", os.path.join("kazoo", "client.py")), ("_find_and_load", "<frozen importlib._bootstrap>")}
)


def _deferring(frame: FrameType | None) -> bool:
    while frame is not None:
        code = frame.f_code
        if any(code.co_name == name and code.co_filename.endswith(file) for name, file in _DEFERRING):
            return True
        frame = frame.f_back
    return False


def _handler(signum: int, frame: FrameType | None) -> None:
    if _deferring(frame):
        threading.Timer(RETRY_S, os.kill, (os.getpid(), signum)).start()
        return
    raise KeyboardInterrupt


def guard_interrupts() -> None:
    """Install the guarded SIGINT handler, where Python's own is installed (a SIGINT ignored, as in a background
    job, stays ignored; a daemon's own stop handler installed later replaces this one). Main thread only."""
    if threading.current_thread() is threading.main_thread() and (
        signal.getsignal(signal.SIGINT) is signal.default_int_handler
    ):
        signal.signal(signal.SIGINT, _handler)
