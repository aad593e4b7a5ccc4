"""Ctrl-C for the command-line tools, raised where kazoo cannot swallow it.

kazoo's ``KazooClient._call`` (every request a tool sends goes through it, on the tool's main thread) wakes its
connection thread inside a bare ``except:`` and answers anything raised there with ConnectionClosedError on the
request. A KeyboardInterrupt that Python's own SIGINT handler raises at that instant is therefore swallowed: the
tool goes on, or reports a lost ZooKeeper (exit 3) for an interrupt (exit 130).

:func:`guard_interrupts` replaces Python's handler with one that raises KeyboardInterrupt as Python's does,
except while ``KazooClient._call`` is on the interrupted stack: then it sends SIGINT to the process again a few
milliseconds later, when ``_call`` (a queue append and a one-byte socket write) has returned.
"""

from __future__ import annotations

import os
import signal
import threading
from types import FrameType

__all__ = ["RETRY_S", "guard_interrupts"]

#: How long after a deferred SIGINT it is sent again.
RETRY_S = 0.005
#: ``KazooClient._call``, told by its code's name and file: the tools' entry point does not import kazoo
#: (a usage error is answered before any connection, and quickly).
_CALL_NAME = "_call"
_CLIENT_FILE = os.path.join("kazoo", "client.py")


def _in_kazoo_call(frame: FrameType | None) -> bool:
    while frame is not None:
        code = frame.f_code
        if code.co_name == _CALL_NAME and code.co_filename.endswith(_CLIENT_FILE):
            return True
        frame = frame.f_back
    return False


def _handler(signum: int, frame: FrameType | None) -> None:
    if _in_kazoo_call(frame):
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
