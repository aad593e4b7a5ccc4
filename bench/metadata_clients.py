"""The client processes of :mod:`bench.metadata_scale`: forked before the bench starts any thread or server, each
on its own connection sending all-topics Metadata with a window of requests in flight for a set time, and
reporting its answers and every request's latency (send to the last byte of the answer) back over a pipe."""

from __future__ import annotations

import argparse
import array
import contextlib
import multiprocessing
import os
import signal
import time
from collections import deque
from dataclasses import dataclass
from multiprocessing.connection import Connection as Pipe
from multiprocessing.connection import wait
from typing import Any

from bench.failover_load import Progress
from bench.metadata_wire import connect, metadata_frame, recv_answer


@dataclass(frozen=True)
class Task:
    port: int
    frame: bytes
    start_at: float  # time.monotonic(): CLOCK_MONOTONIC, one clock for every process of the machine
    seconds: float
    window: int


@dataclass
class ClientResult:
    answers: int
    latencies: bytes  # array('d') of seconds
    last_answer_at: float
    answer_bytes: int


def client_main(index: int, pipe: Pipe, counters: Any, parent: int) -> None:
    """A client process: run each task it is sent, answer with a ClientResult (or an error string)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the bench stops its clients itself, in order
    while True:
        while not pipe.poll(1.0):
            if os.getppid() != parent:
                return  # the bench is gone
        try:
            task = pipe.recv()
        except EOFError:
            return
        if task is None:
            return
        try:
            pipe.send(run_client(index, task, counters))
        except Exception as exc:
            pipe.send(f"client {index}: {exc!r}")


def run_client(index: int, task: Task, counters: Any) -> ClientResult:
    latencies = array.array("d")
    buf = bytearray()
    size = 0
    with connect(task.port) as sock:
        pause = task.start_at - time.monotonic()
        if pause > 0:
            time.sleep(pause)
        end_at = task.start_at + task.seconds
        sent: deque[float] = deque()
        for _ in range(task.window):
            sent.append(time.monotonic())
            sock.sendall(task.frame)
        now = time.monotonic()
        while sent:
            buf, size = recv_answer(sock, buf)
            now = time.monotonic()
            latencies.append(now - sent.popleft())
            counters[index] += 1
            if now < end_at:
                sent.append(time.monotonic())
                sock.sendall(task.frame)
    return ClientResult(len(latencies), latencies.tobytes(), now, size)


@dataclass
class PhaseResult:
    variant: str
    seconds: float
    answers: int
    latencies: list[float]
    answer_bytes: int

    @property
    def rate(self) -> float:
        return self.answers / self.seconds if self.seconds > 0 else 0.0


class ClientPool:
    """``n`` client processes, forked before the bench starts any thread or server (a fork then copies nothing
    but this interpreter), each waiting for tasks on its own pipe; :meth:`close` stops them by pid."""

    def __init__(self, n: int) -> None:
        ctx = multiprocessing.get_context("fork")
        self.counters: Any = ctx.Array("q", n, lock=False)
        self.pipes: list[Pipe] = []
        self.processes: list[Any] = []
        for i in range(n):
            ours, theirs = ctx.Pipe()
            process = ctx.Process(
                target=client_main, args=(i, theirs, self.counters, os.getpid()), name=f"client-{i}", daemon=True
            )
            process.start()
            theirs.close()
            self.pipes.append(ours)
            self.processes.append(process)

    def answered(self) -> int:
        return int(sum(self.counters))

    def run(self, variant: str, port: int, args: argparse.Namespace, progress: Progress, label: str) -> PhaseResult:
        """One phase: every client on ``port`` for ``args.seconds``, all starting together."""
        start_at = time.monotonic() + 0.5  # every client connected and waiting
        task = Task(port, metadata_frame(None), start_at, args.seconds, args.window)
        base = self.answered()
        for pipe in self.pipes:
            pipe.send(task)
        results: dict[int, ClientResult] = {}
        by_pipe = {id(p): i for i, p in enumerate(self.pipes)}
        while len(results) < len(self.pipes):
            for ready in wait([p for i, p in enumerate(self.pipes) if i not in results], timeout=0.25):
                assert isinstance(ready, Pipe)
                got = ready.recv()
                if isinstance(got, str):
                    raise RuntimeError(got)
                results[by_pipe[id(ready)]] = got
            elapsed = time.monotonic() - start_at
            if elapsed > 0:
                done = self.answered() - base
                state = "running" if elapsed < task.seconds else f"last answers ({len(results)}/{len(self.pipes)} done)"
                progress.show(f"{label}: {elapsed:5.1f}s, {done:,} answers, {done / elapsed:,.1f} req/s, {state}")
        end = max(r.last_answer_at for r in results.values())
        latencies: list[float] = []
        for r in results.values():
            latencies.extend(array.array("d", r.latencies))
        answers = sum(r.answers for r in results.values())
        size = max(r.answer_bytes for r in results.values())
        return PhaseResult(variant, end - start_at, answers, latencies, size)

    def close(self) -> None:
        for pipe in self.pipes:
            with contextlib.suppress(OSError, ValueError):
                pipe.send(None)
        deadline = time.monotonic() + 5
        for process in self.processes:
            process.join(max(deadline - time.monotonic(), 0.1))
            if process.is_alive():
                process.terminate()  # SIGTERM to its pid
                process.join(5)
            if process.is_alive():
                process.kill()
                process.join(5)
        for pipe in self.pipes:
            pipe.close()
