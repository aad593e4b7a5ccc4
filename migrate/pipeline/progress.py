"""Live progress for the pipeline's stages: the stage, its elapsed time and Spark's task counts.

Spark's own console bar is switched off (it interleaves with everything else); instead a thread polls the
SparkContext's status tracker, the public API the Spark UI itself reads, and shows finished/total tasks of the
running Spark stages under the pipeline stage's name. Timings per stage are kept for the report and the bench.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console


class Stages:
    """``with stages.stage("ingest"): ...`` times a stage and shows it live on stderr."""

    def __init__(self, spark: Any, quiet: bool = False) -> None:
        self.spark = spark
        self.console = Console(stderr=True, quiet=quiet)
        self.seconds: dict[str, float] = {}

    def _tasks(self) -> str:
        tracker = self.spark.sparkContext.statusTracker()
        done = total = 0
        for sid in tracker.getActiveStageIds():
            info = tracker.getStageInfo(sid)
            if info is not None:
                done += info.numCompletedTasks
                total += info.numTasks
        return f" — Spark tasks {done}/{total}" if total else ""

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        start = time.monotonic()
        stop = threading.Event()
        with self.console.status(f"{name} …") as status:

            def poll() -> None:
                while not stop.wait(0.5):
                    try:
                        status.update(f"{name} {time.monotonic() - start:6.1f} s{self._tasks()}")
                    except Exception:  # the JVM going away at exit must not kill the display
                        return

            thread = threading.Thread(target=poll, name=f"progress-{name}", daemon=True)
            thread.start()
            try:
                yield
            finally:
                stop.set()
                thread.join()
        self.seconds[name] = round(time.monotonic() - start, 3)
        self.console.print(f"[green]✓[/] {name:<8} {self.seconds[name]:8.1f} s")
