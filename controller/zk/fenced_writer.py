"""The single writer: the only code that mutates controller-owned znodes.

Every write is a ZooKeeper multi that starts with ``check(/controller_epoch, epochZkVersion)``
(:mod:`controller.zk.fence`), exactly as Kafka's controller fences itself: if another controller was elected in
the meantime the check fails, nothing in the multi is written, and ``ControllerMoved`` tells the controller to
resign.

Results: each op's slot holds what ZooKeeper answered (:mod:`controller.zk.protocol.multi`): ``Created(path,
stat)`` (creates are sent as create2), ``SetDone(stat)``, ``Deleted()``, or the kazoo exception of its error code.
The Stats are the ones ZooKeeper wrote (czxid/mzxid = the multi's zxid), so no read-back is needed — except a
create's on servers before 3.7.2 / 3.8.2 / 3.9.0, which answer it without a Stat (``Created(path, None)``).
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Sequence
from typing import Any, Protocol

from controller.logtags import UNEXPECTED
from controller.zk import fence
from controller.zk.errors import (
    KAZOO_SESSION_LOST,
    ControllerMoved,
    KazooException,
    RolledBackError,
    SessionLost,
    ZkUnavailable,
    is_transient,
)
from controller.zk.ops import MAX_MULTI_BYTES, Op, build_multi, op_size
from controller.zk.protocol.multi import MultiRequest
from controller.zk.send import multi_async
from controller.zk.session import ZkSession

log = logging.getLogger(__name__)


class WriteObserver(Protocol):
    """Told of every multi a writer sends, and of how it ended: the node's metadata image takes the
    controller's own writes in directly (:class:`controller.broker.metadata_cache.MetadataCache`).

    ``writing`` is called before each multi is sent and returns a token; ``settled`` gets that token exactly
    once (on kazoo's connection thread, for an answer, an error or a lost connection alike), so an observer may
    hold back what it learns of the written paths from elsewhere until the write settles. Both must be quick
    and must not block."""

    def writing(self, ops: Sequence[Op]) -> Any:
        """``ops`` (the fence left out) are about to be sent as one multi; returns the token for ``settled``."""

    def settled(self, token: Any, results: Sequence[Any] | None, zxid: int) -> None:
        """The multi ``token`` stands for was applied (``results``: Created, SetDone, Deleted, one per op;
        ``zxid``: the multi's), or not or not known to be (``results`` None)."""


class WritesSuspended(ZkUnavailable):
    """The session is disconnected: the controller stops writing until it is sure it still leads."""


class OpFailed(Exception):
    """An op inside an atomic multi failed (the epoch check passed); nothing in the multi was written."""

    def __init__(self, index: int, op: Op, error: KazooException) -> None:
        super().__init__(f"{type(op).__name__} {op.path} failed: {type(error).__name__}")
        self.index = index
        self.op = op
        self.error = error


class FencedWriter:
    """Writes for one controller epoch. Create a new writer for each election; never reuse one."""

    def __init__(
        self, session: ZkSession, epoch: int, epoch_zk_version: int, *, observer: WriteObserver | None = None
    ) -> None:
        if epoch_zk_version < 0:
            raise ValueError(f"epoch zkVersion must be >= 0, got {epoch_zk_version}")
        self.session = session
        self.observer = observer
        self.epoch = epoch
        self.epoch_zk_version = epoch_zk_version
        self._writable = threading.Event()
        self._writable.set()
        self.writes = 0
        self.multis = 0
        # Multis sent, each attempt counted: one sent and never answered (``multis`` counts the answered) may have
        # been applied. The controller's processor compares these around an API call to tell a call that certainly
        # wrote nothing (NOT_CONTROLLER: "send it again") from one in doubt (REQUEST_TIMED_OUT).
        self.sent = 0

    def suspend(self) -> None:
        """Stop writing at once (called from the session-state listener on SUSPENDED)."""
        self._writable.clear()

    def resume(self) -> None:
        self._writable.set()

    @property
    def suspended(self) -> bool:
        return not self._writable.is_set()

    def _answer(self, async_result: Any) -> Any:
        """A pipelined multi's answer. The session expiring under it is :class:`SessionLost`, as for any call
        through :meth:`ZkSession.call` (kazoo fails the requests still pending with SessionExpiredError): the
        controller resigns on it rather than reporting an unexpected error."""
        try:
            return async_result.get(timeout=self.session.request_timeout_s)
        except KAZOO_SESSION_LOST as exc:
            raise SessionLost(f"fenced write: {exc!r}") from exc

    def _send_fenced(self, ops: Sequence[Op]) -> Any:
        """One fenced multi of ``ops``, sent; its async result."""
        client = self.session.client
        request = build_multi(client, fence.fenced(ops, self.epoch_zk_version))
        observer = self.observer
        if observer is None:
            return multi_async(client, request)
        token = observer.writing(ops)
        try:
            return multi_async(client, request, on_done=functools.partial(_settle, observer, token, request))
        except BaseException:
            observer.settled(token, None, -1)  # never sent, so no answer will settle it
            raise

    def _moved(self, *, count: bool = True, refused_after: int = 0) -> ControllerMoved:
        """The fence held: ZooKeeper refused a multi of this (stale) epoch. Each refused multi is counted once
        (the fenced-write metric), then the caller raises. ``refused_after`` pipelined multis sent after it are
        not awaited but counted as answered: ZooKeeper applies a session's requests in order and the epoch's
        zkVersion never goes back, so their checks fail too and they write nothing."""
        self.multis += refused_after
        if count and self.session.on_fenced is not None:
            self.session.on_fenced()
        return ControllerMoved(f"Controller epoch zkVersion check fails. Expected zkVersion = {self.epoch_zk_version}")

    def wrote_since(self, writes: int, sent: int, answered: int) -> bool:
        """Whether anything may have been written since the counters were ``writes``, ``sent`` and ``answered``
        (``multis``): a write that succeeded, or a multi sent whose answer never came."""
        return self.writes != writes or self.sent - sent != self.multis - answered

    def _gate(self) -> None:
        if not self._writable.wait(timeout=self.session.retry_deadline_s):
            raise WritesSuspended("ZooKeeper connection suspended: controller writes are paused")

    def _commit(self, ops: list[Op], what: str) -> list[Any]:
        self._gate()

        def send() -> Any:
            self.sent += 1
            return self._send_fenced(ops)

        results: list[Any] = self.session.call(
            send,
            what=what,
            write="controller",
        )
        self.multis += 1
        return fence.unfence(results, self._moved)

    def atomic(self, ops: Sequence[Op]) -> list[Any]:
        """All ops in one fenced multi: all or nothing. Raises OpFailed naming the first failing op."""
        ops = list(ops)
        size = sum(op_size(op) for op in ops)
        if size > MAX_MULTI_BYTES:
            raise ValueError(f"atomic write of {len(ops)} ops ({size} bytes) exceeds {MAX_MULTI_BYTES} bytes")
        results = self._commit(ops, what=f"fenced multi of {len(ops)} ops")
        for i, (op, result) in enumerate(zip(ops, results, strict=True)):
            if isinstance(result, KazooException) and not isinstance(result, RolledBackError):
                raise OpFailed(i, op, result)
        self.writes += len(ops)
        return results

    def each(self, ops: Sequence[Op]) -> list[Any]:
        """Each op in its own fenced multi (Kafka's per-request fencing), pipelined; one op's failure does
        not stop the others. Returns per op the result or the KazooException; ControllerMoved if fenced.

        An op whose multi got no answer (connection loss) is sent again on its own, with the same retry
        deadline as any other write; like Kafka, a resent create may then report NodeExists.
        """
        ops = list(ops)
        if not ops:
            return []
        self._gate()
        pending = [self._send_fenced([op]) for op in ops]
        self.sent += len(pending)
        out: list[Any] = []
        moved = False
        for op, async_result in zip(ops, pending, strict=True):
            try:
                results = self._answer(async_result)
                self.multis += 1
                result = results[1]
                if fence.refused(results):
                    moved = True
                    self._moved()  # counted here; raised once after the loop
            except Exception as exc:
                if not is_transient(exc):
                    raise
                try:
                    result = self._commit([op], what=f"fenced {type(op).__name__} {op.path}")[0]
                except ControllerMoved:
                    moved, result = True, None
            out.append(result)
            if result is not None and not isinstance(result, KazooException):
                self.writes += 1
        if moved:
            raise self._moved(count=False)
        return out

    def bulk(self, ops: Sequence[Op], *, max_ops: int = 500, max_bytes: int = MAX_MULTI_BYTES) -> list[Any]:
        """Like ``each`` (per-op results, independent outcomes) but far cheaper for many ops: ops travel in
        pipelined fenced multis of up to ``max_ops``; only a batch in which some op failed is replayed op by
        op to learn which. kazoo's per-request overhead, not ZooKeeper, is what this saves."""
        ops = list(ops)
        if len(ops) <= 1:
            return self.each(ops)
        batches: list[list[Op]] = []
        size = 0
        for op in ops:
            s = op_size(op)
            if not batches or len(batches[-1]) >= max_ops or size + s > max_bytes:
                batches.append([])
                size = 0
            batches[-1].append(op)
            size += s
        self._gate()
        pending = [self._send_fenced(batch) for batch in batches]
        self.sent += len(pending)
        out: list[Any] = []
        for i, (batch, async_result) in enumerate(zip(batches, pending, strict=True)):
            try:
                results = self._answer(async_result)
            except Exception as exc:
                if not is_transient(exc):
                    raise
                out.extend(self.each(batch))  # outcome unknown: replay op by op
                continue
            self.multis += 1
            if fence.refused(results):
                raise self._moved(refused_after=len(pending) - i - 1)
            if any(isinstance(r, KazooException) and not isinstance(r, RolledBackError) for r in results[1:]):
                out.extend(self.each(batch))  # nothing of this batch was written; learn per op
                continue
            self.writes += len(batch)
            out.extend(results[1:])
        return out

    def atomic_many(self, groups: Sequence[Sequence[Op]]) -> list[list[Any] | OpFailed]:
        """Several independent atomic writes (each one fenced multi, all or nothing) sent pipelined: for each
        group its results, or the :class:`OpFailed` naming its first failing op (nothing of that group was
        written). One round trip for a thousand topics instead of a thousand. A refused fence raises
        ControllerMoved; a group whose answer was lost (connection loss) is retried alone, as ``atomic``."""
        groups = [list(g) for g in groups]
        for ops in groups:
            size = sum(op_size(op) for op in ops)
            if size > MAX_MULTI_BYTES:
                raise ValueError(f"atomic write of {len(ops)} ops ({size} bytes) exceeds {MAX_MULTI_BYTES} bytes")
        self._gate()
        pending = [self._send_fenced(ops) for ops in groups]
        self.sent += len(pending)
        out: list[list[Any] | OpFailed] = []
        for i, (ops, async_result) in enumerate(zip(groups, pending, strict=True)):
            try:
                results = self._answer(async_result)
            except Exception as exc:
                if not is_transient(exc):
                    raise
                try:
                    out.append(self.atomic(ops))
                except OpFailed as failed:
                    out.append(failed)
                continue
            self.multis += 1
            if fence.refused(results):
                raise self._moved(refused_after=len(pending) - i - 1)
            failed_at = next(
                (
                    i
                    for i, r in enumerate(results[1:])
                    if isinstance(r, KazooException) and not isinstance(r, RolledBackError)
                ),
                None,
            )
            if failed_at is not None:
                out.append(OpFailed(failed_at, ops[failed_at], results[1 + failed_at]))
                continue
            self.writes += len(ops)
            out.append(results[1:])
        return out

    def batched(self, ops: Sequence[Op], max_bytes: int = MAX_MULTI_BYTES) -> None:
        """Many ops as a few fenced multis, each under the packet limit; each batch is atomic."""
        batch: list[Op] = []
        size = 0
        for op in ops:
            s = op_size(op)
            if batch and size + s > max_bytes:
                self.atomic(batch)
                batch, size = [], 0
            batch.append(op)
            size += s
        if batch:
            self.atomic(batch)


def _settle(observer: WriteObserver, token: Any, request: MultiRequest, answer: Any) -> None:
    """Tell ``observer`` how the multi ``token`` stands for ended (``answer``: its async result, done). Applied
    means answered with no error in any slot, the fence's included (a multi is all or nothing)."""
    try:
        results = answer.value if answer.successful() else None
        if isinstance(results, list) and not any(isinstance(r, KazooException) for r in results):
            observer.settled(token, results[1:], request.zxid)
        else:
            observer.settled(token, None, -1)
    except Exception:
        log.exception("%s the write observer failed", UNEXPECTED)
