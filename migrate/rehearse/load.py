"""Live client load for the rehearsal: real Kafka admin clients, each in its own OS process, journaling every
operation they sent and what came back (one :class:`~migrate.rehearse.model.OpRecord` JSON line each).

Why processes: a client's I/O threads, retries and timeouts must not share a GIL, or a crash, with the rehearsal
that restarts nodes under them; and librdkafka is C, so a hang inside it can be ended only by killing a process.

What each worker does, and the ownership rule that makes the ledger exact: :mod:`migrate.rehearse.load_worker`.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import queue
import secrets
import time
from collections.abc import Sequence
from multiprocessing.context import SpawnProcess
from pathlib import Path
from types import TracebackType
from typing import Any

import orjson

from migrate.rehearse.clients import DEADLINE_MARGIN_S, WorkerSpec
from migrate.rehearse.load_worker import worker_main
from migrate.rehearse.model import OpRecord

CLIENTS = ("confluent-kafka", "kafka-python")


class LoadError(RuntimeError):
    """The load could not start, or a worker stopped answering."""


class LoadPool:
    """Client workers as OS processes (``spawn``: no forked client state), paced to ``rate`` operations per second
    in total. Pause, resume and stop go through multiprocessing Events; each worker journals to
    ``journal_dir/ops-<worker>.jsonl``, which :meth:`records` reads back."""

    def __init__(
        self,
        bootstrap: Sequence[str],
        journal_dir: Path,
        *,
        clients: Sequence[str] = CLIENTS,
        workers_per_client: int = 1,
        rate: float = 8.0,
        seed: int = 0,
        request_timeout_ms: int = 15000,
        replication_factor: int = 3,
    ) -> None:
        if not bootstrap:
            raise LoadError("no bootstrap address for the client load")
        unknown = sorted(set(clients) - set(CLIENTS))
        if unknown or not clients:
            raise LoadError(f"unknown client(s) {', '.join(unknown) or '(none)'}; known: {', '.join(CLIENTS)}")
        if rate <= 0 or workers_per_client < 1 or request_timeout_ms < 1000 or replication_factor < 1:
            raise LoadError(
                "rate must be positive, at least one worker per client, request timeout >= 1000 ms, "
                "replication factor >= 1"
            )
        self.bootstrap = list(bootstrap)
        self.journal_dir = Path(journal_dir)
        self.rate = rate
        self.request_timeout_ms = request_timeout_ms
        self.tag = secrets.token_hex(2)
        names = [c for _ in range(workers_per_client) for c in clients]
        n, b = len(names), self.bootstrap
        interval = n / rate
        self.specs = [
            WorkerSpec(
                worker=f"w{i + 1}",
                client=c,
                index=i,
                bootstrap=tuple(b[i % len(b) :] + b[: i % len(b)]),
                journal_dir=str(self.journal_dir),
                interval=interval,
                offset=interval * i / n,
                seed=seed,
                tag=self.tag,
                request_timeout_ms=request_timeout_ms,
                replication_factor=replication_factor,
            )
            for i, c in enumerate(names)
        ]
        self._ctx = multiprocessing.get_context("spawn")
        self._run = self._ctx.Event()
        self._stop = self._ctx.Event()
        self._idle = [self._ctx.Event() for _ in self.specs]
        self._counts = self._ctx.Array("q", n, lock=False)  # one slot per worker, written by that worker only
        self._procs: list[SpawnProcess] = []
        self._stopped = False
        self._killed: set[str] = set()
        self._ops: dict[str, list[str]] = {}

    @property
    def op_deadline(self) -> float:
        """How long one operation may take before its worker records it failed and moves on."""
        return self.request_timeout_ms / 1000 + DEADLINE_MARGIN_S

    # -- lifecycle ------------------------------------------------------------------------------------------------
    def start(self, timeout: float | None = None) -> None:
        """Spawn the workers; return once each has connected (answered a DescribeCluster). ``timeout`` defaults to
        the request timeout plus time to import a client library in a fresh interpreter."""
        if self._procs:
            raise LoadError("the client load was started already")
        self.journal_dir.mkdir(parents=True, exist_ok=True)
        for spec in self.specs:  # a journal directory used before: its records are not this run's
            spec.journal.write_bytes(b"")
            spec.inflight.unlink(missing_ok=True)
        wait = self.request_timeout_ms / 1000 + 20 if timeout is None else timeout
        ready = self._ctx.Queue()
        self._run.set()
        for spec, idle in zip(self.specs, self._idle, strict=True):
            proc = self._ctx.Process(
                target=worker_main,
                args=(spec, self._run, self._stop, idle, ready, self._counts),
                name=f"rehearse-load-{spec.worker}",
                daemon=True,
            )
            proc.start()
            self._procs.append(proc)
        try:
            self._await_ready(ready, wait)
        except LoadError:
            self.stop()
            raise
        finally:
            ready.close()

    def _await_ready(self, ready: Any, wait: float) -> None:
        deadline = time.monotonic() + wait
        pending = {s.worker: s for s in self.specs}
        while pending:
            try:
                worker, error, ops = ready.get(timeout=0.2)
            except queue.Empty:
                for spec in list(pending.values()):
                    proc = self._procs[spec.index]
                    if not proc.is_alive():
                        raise LoadError(
                            f"load worker {spec.worker} ({spec.client}) exited with code {proc.exitcode} "
                            f"before connecting; its log: {spec.log}"
                        ) from None
                if time.monotonic() > deadline:
                    late = ", ".join(f"{s.worker} ({s.client})" for s in pending.values())
                    raise LoadError(
                        f"load worker(s) {late} did not connect to {','.join(self.bootstrap)} within "
                        f"{wait:.0f} s; logs in {self.journal_dir}"
                    ) from None
                continue
            spec = pending.pop(worker)
            self._ops[worker] = ops
            if error is not None:
                raise LoadError(
                    f"load worker {spec.worker} ({spec.client}) cannot connect to {','.join(spec.bootstrap)}: {error}"
                )

    def pause(self, timeout: float | None = None) -> list[str]:
        """Block until every worker has finished and journaled its operation in flight, then keep them idle.

        Bounded by the operation deadline plus a margin (or ``timeout``); a worker still busy then is stuck beyond
        its own deadline and is killed, its operation in flight journaled as failed with ``WorkerKilled`` (not
        retriable, so the client-errors check shows it). Returns the workers killed (normally none)."""
        if not self._procs or self._stopped:
            return []
        self._run.clear()
        deadline = time.monotonic() + (self.op_deadline + 5 if timeout is None else timeout)
        stuck = []
        for spec, proc, idle in zip(self.specs, self._procs, self._idle, strict=True):
            while proc.is_alive() and not idle.wait(0.2):
                if time.monotonic() > deadline:
                    stuck.append(spec.worker)
                    self._kill(proc, spec)
                    break
        return stuck

    def resume(self) -> None:
        if self._procs and not self._stopped:
            self._run.set()

    def stop(self) -> None:
        """Idempotent, safe in ``finally``: workers finish their operation in flight (bounded by its deadline), then
        any still alive is terminated, then killed."""
        if self._stopped:
            return
        self._stopped = True
        self._stop.set()
        self._run.set()
        deadline = time.monotonic() + self.op_deadline + 5
        for proc in self._procs:
            proc.join(max(0.0, deadline - time.monotonic()))
        for spec, proc in zip(self.specs, self._procs, strict=False):
            if proc.is_alive():
                self._kill(proc, spec)

    def _kill(self, proc: SpawnProcess, spec: WorkerSpec) -> None:
        self._killed.add(spec.worker)
        proc.terminate()
        proc.join(5)
        if proc.is_alive():
            proc.kill()
            proc.join(5)

    def __enter__(self) -> LoadPool:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # -- what happened --------------------------------------------------------------------------------------------
    def counts(self) -> int:
        """Operations journaled so far (all workers)."""
        return int(sum(self._counts))

    def records(self) -> list[OpRecord]:
        """Every worker's journal, sorted by start time. A worker that died mid-operation contributes that operation
        too, failed with ``WorkerKilled``: its entity's fate is unknown, which is what the ledger must be told."""
        out: list[OpRecord] = []
        for spec, proc in zip(self.specs, self._procs, strict=False):
            seqs: set[int] = set()
            with contextlib.suppress(FileNotFoundError):
                for line in spec.journal.read_bytes().splitlines():
                    try:
                        rec = orjson.loads(line)
                    except orjson.JSONDecodeError:
                        continue  # the line being written right now
                    out.append(rec)
                    seqs.add(rec["seq"])
            if proc.is_alive():
                continue
            with contextlib.suppress(FileNotFoundError, orjson.JSONDecodeError):
                data = spec.inflight.read_bytes()
                if data:
                    rec = orjson.loads(data)
                    if rec["seq"] not in seqs:
                        rec["ended"] = rec["started"]
                        out.append(rec)
        out.sort(key=lambda r: (r["started"], r["worker"], r["seq"]))
        return out

    def ops(self) -> dict[str, list[str]]:
        """The op kinds each connected worker does: its client's, less ACLs on a cluster without an authorizer."""
        return dict(self._ops)

    def workers(self) -> list[tuple[str, str, bool]]:
        """(worker, client, alive) of each worker, for a status line."""
        return [(s.worker, s.client, p.is_alive()) for s, p in zip(self.specs, self._procs, strict=False)]
