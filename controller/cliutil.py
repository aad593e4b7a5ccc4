"""What every ``bridgekeeper`` subcommand shares: argument types with clear errors, and waiting for Ctrl-C.

Kept apart from ``controller/cli.py`` (the root parser) so the node, the local stack and the operator tools
in ``migrate`` can each register their own commands without importing one another.
"""

from __future__ import annotations

import argparse
import math
import signal
import time
from typing import Any


class StopSignals:
    """SIGINT/SIGTERM handlers installed at construction, so a signal that arrives while a server is still
    starting (systemd's stop right after the start) is kept and answered by a graceful stop, not by the default
    action that kills the process mid-start."""

    def __init__(self) -> None:
        self.got: list[int] = []

        def handler(signum: int, _frame: Any) -> None:
            # Only a list append: a handler that takes a lock (Event.set) deadlocks when a second signal
            # arrives while the first handler holds it, and the node would then ignore SIGTERM for good.
            self.got.append(signum)

        signal.signal(signal.SIGINT, handler)
        signal.signal(signal.SIGTERM, handler)

    def wait(self) -> int:
        """Block until a signal has arrived (at once if one came before); returns its number."""
        while not self.got:
            time.sleep(0.2)
        return self.got[0]


def positive_int(text: str) -> int:
    """argparse type: an integer above zero, refused with the text that was given."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def port(text: str) -> int:
    """argparse type: a TCP port, 1-65535."""
    value = positive_int(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"port must be 1-65535, got {text}")
    return value


def seconds(text: str) -> float:
    """argparse type: a duration in seconds, above zero and finite (every duration flag without ``-ms``)."""
    return _positive_number(text, "seconds")


def per_second(text: str) -> float:
    """argparse type: a rate, above zero and finite."""
    return _positive_number(text, "operations per second")


def _positive_number(text: str, unit: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {unit}, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of {unit}, got {text!r}")
    return value
