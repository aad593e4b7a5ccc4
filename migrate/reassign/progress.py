"""Live progress of a wave run, on stderr (stdout keeps Kafka's text or the JSON document clean).

A bar of partitions at their target, with how many are moving and how many wait, and one line per wave
when it starts. On a terminal rich redraws the bar in place; elsewhere (CI logs, pipes) only the wave
lines and a final summary are printed.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from migrate.reassign.model import TP, tp_text


class WaveProgress:
    def __init__(self, *, total: int, planned_waves: int, console: Console | None = None) -> None:
        self.console = console if console is not None else Console(stderr=True)
        self.planned_waves = planned_waves
        self._progress = Progress(
            TextColumn("[bold]reassigning"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("partitions done · {task.fields[running]} in flight · {task.fields[pending]} waiting"),
            TimeElapsedColumn(),
            console=self.console,
            transient=False,
        )
        self._task = self._progress.add_task("reassign", total=total, running=0, pending=total)
        self._last = (0, 0, total)

    def __enter__(self) -> WaveProgress:
        self._progress.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._progress.stop()
        done, running, pending = self._last
        if exc_type is None:
            self.console.print(f"All {done} partitions are at their target.")
        elif exc_type is KeyboardInterrupt:
            self.console.print(
                f"Interrupted with {done} done, {running} in flight, {pending} waiting. The moves in flight go on; "
                "rerun the same command to continue."
            )

    def update(self, *, done: int, running: int, pending: int) -> None:
        self._last = (done, running, pending)
        self._progress.update(self._task, completed=done, running=running, pending=pending)

    def wave(self, number: int, partitions: Sequence[TP]) -> None:
        shown = ",".join(tp_text(tp) for tp in partitions[:8]) + (",..." if len(partitions) > 8 else "")
        self._progress.console.print(
            f"Wave {number} (about {self.planned_waves} planned): {len(partitions)} partition(s): {shown}"
        )
