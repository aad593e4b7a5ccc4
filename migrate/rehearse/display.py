"""The live view of a rehearsal on the terminal: one status line saying what runs or is awaited (with elapsed
time against its timeout), and one line per finished step with its checks. On a pipe (CI, a test) the status
line is silent and only the step lines are written, so logs stay readable."""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType

from rich.console import Console
from rich.markup import escape
from rich.status import Status

from migrate.rehearse.model import CheckRecord, StepRecord


class Display:
    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(stderr=True)
        self._status: Status | None = None

    def __enter__(self) -> Display:
        if self.console.is_terminal:
            self._status = self.console.status("starting")
            self._status.start()
        return self

    def __exit__(self, _t: type[BaseException] | None, _e: BaseException | None, _tb: TracebackType | None) -> None:
        if self._status is not None:
            self._status.stop()

    def status(self, text: str) -> None:
        if self._status is not None:
            self._status.update(escape(text))

    def line(self, text: str) -> None:
        self.console.print(escape(text), highlight=False)

    def step(self, rec: StepRecord, checks: Sequence[CheckRecord]) -> None:
        failed = [c for c in checks if c["verdict"] == "fail"]
        mark = "[green]ok[/]" if rec["outcome"] == "ok" and not failed else "[red]FAILED[/]"
        took = rec["ended"] - rec["started"]
        self.console.print(f"{mark} {escape(rec['name'])} ({took:.1f} s, {len(checks)} checks)", highlight=False)
        if rec["outcome"] != "ok" and rec["detail"]:
            self.console.print(f"    {escape(rec['detail'])}", highlight=False)
        for c in failed:
            self.console.print(f"    [red]{escape(c['name'])}[/]: {escape(c['summary'])}", highlight=False)
