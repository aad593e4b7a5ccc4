"""The fuzz folder's budget and its hang guard.

In CI every property runs a fixed, derandomized number of examples (the same inputs on every run, the whole
folder in under a minute on two cores). A longer, random campaign runs the same properties with
``BK_FUZZ_EXAMPLES=100000 .venv/bin/pytest -q tests/fuzz`` (each property then takes that many examples and
keeps its failures in Hypothesis' example database, so a rerun replays them first).
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from types import FrameType

from hypothesis import HealthCheck, settings

#: Examples per property for a campaign; 0 (unset) runs the fixed CI budget.
CAMPAIGN = int(os.environ.get("BK_FUZZ_EXAMPLES", "0") or "0")


def budget(examples: int) -> settings:
    """``examples`` derandomized examples (CI), or ``BK_FUZZ_EXAMPLES`` random ones."""
    relaxed = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture]
    if CAMPAIGN > 0:
        return settings(max_examples=CAMPAIGN, deadline=None, suppress_health_check=relaxed, print_blob=True)
    return settings(max_examples=examples, deadline=None, derandomize=True, suppress_health_check=relaxed)


class Hang(BaseException):
    """A decoder ran past its time limit. A BaseException, so no decoder's ``except Exception`` can turn it
    into a decode error."""


@contextlib.contextmanager
def no_hang(seconds: float, what: str) -> Iterator[None]:
    """Fail with :class:`Hang` if the block runs longer than ``seconds`` (SIGALRM; tests run on the main
    thread). Inputs are size-bounded, so any decoder that takes this long loops or blows up."""

    def fire(_signum: int, _frame: FrameType | None) -> None:
        raise Hang(f"{what} ran for more than {seconds} s")

    previous = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
