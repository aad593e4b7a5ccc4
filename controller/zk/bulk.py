"""A whole tree of persistent znodes into ZooKeeper at the rate the server takes it: write multis of creates
(opcode 14), pipelined on one connection.

kazoo's ``create_async`` manages ~4,000 znodes/s here; a multi of a few hundred creates, a dozen in flight,
is an order of magnitude faster. The multi is :class:`controller.zk.protocol.multi.MultiRequest` of plain creates
(opcode 1: the answer needs no Stat, and every server with multi takes it), which encodes the open ACL once per
multi and sends null data, which Kafka's ``/partitions`` parents have (kazoo's ``TransactionRequest`` rebuilds
every op in Python and cannot).

Groups: a caller hands znodes in groups that must land together where they can (a topic znode and its
partitions): a group goes into one multi unless it alone is bigger than a multi may be, so an interrupted
write leaves whole groups or nothing of them. Parents come before children, and one connection's requests
are applied in order, so a multi never names a parent that a multi still in flight creates later.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final

from kazoo.client import KazooClient
from kazoo.exceptions import RolledBackError, RuntimeInconsistency
from kazoo.security import OPEN_ACL_UNSAFE

from controller.zk.ops import MAX_MULTI_BYTES
from controller.zk.protocol.multi import MultiRequest, create_overhead
from controller.zk.send import multi_async

#: Bytes a create adds to a multi beyond its path and data: op header, two lengths, the open ACL and flags.
_PER_CREATE: Final = create_overhead(OPEN_ACL_UNSAFE)
#: Creates per multi before it is sent: past a few hundred the server's per-multi cost stops falling.
OPS_PER_MULTI = 400
IN_FLIGHT = 16

Znode = tuple[str, bytes | None]


class BulkWriteError(RuntimeError):
    """A write of a pipelined batch was refused or its answer never came: ``created`` writes are certainly
    made (every one acknowledged before it), ``path`` is the znode that failed (or the first of a multi in
    doubt), ``cause`` kazoo's error."""

    def __init__(self, created: int, path: str, cause: BaseException) -> None:
        super().__init__(f"{path}: {type(cause).__name__}{f': {cause}' if str(cause) else ''}")
        self.created = created
        self.path = path
        self.cause = cause


def create_groups(
    client: KazooClient,
    groups: Iterable[Sequence[Znode]],
    *,
    ops_per_multi: int = OPS_PER_MULTI,
    max_bytes: int = MAX_MULTI_BYTES,
    in_flight: int = IN_FLIGHT,
    progress: Callable[[int], None] | None = None,
    timeout: float = 120.0,
) -> int:
    """Create every znode of ``groups`` (parents first across the whole sequence; the first group's parents
    must exist) and return the count. ``timeout`` bounds the wait for any one answer. Raises
    :class:`BulkWriteError` at the first refusal or lost answer, after waiting for the multis already sent."""
    chroot = client.chroot or ""
    window: deque[tuple[Any, list[Znode]]] = deque()
    created = 0
    failure: BulkWriteError | None = None

    def drain_one(wait: float = timeout) -> None:
        nonlocal created, failure
        result, nodes = window.popleft()
        try:
            answers = result.get(timeout=wait)
        except Exception as exc:  # ConnectionLoss, SessionExpired, a timeout: the multi is in doubt
            failure = failure or BulkWriteError(created, nodes[0][0][len(chroot) :], exc)
            return
        for (path, _data), answer in zip(nodes, answers, strict=False):
            if isinstance(answer, Exception) and not isinstance(answer, RuntimeInconsistency | RolledBackError):
                failure = failure or BulkWriteError(created, path[len(chroot) :], answer)
                return
        if failure is None:
            created += len(nodes)
            if progress is not None:
                progress(created)

    def send(nodes: list[Znode]) -> None:
        request = MultiRequest(chroot)
        request.creates(nodes, OPEN_ACL_UNSAFE, stat=False)
        window.append((multi_async(client, request), nodes))
        while len(window) >= in_flight or (window and window[0][0].ready()):
            drain_one()
            if failure is not None:
                raise failure

    chunk: list[Znode] = []
    size = 0
    try:
        for group in groups:
            entries = [(chroot + path, data) for path, data in group]
            group_size = sum(_PER_CREATE + len(p) + (len(d) if d else 0) for p, d in entries)
            if chunk and (size + group_size > max_bytes or len(chunk) >= ops_per_multi):
                send(chunk)
                chunk, size = [], 0
            if group_size <= max_bytes:
                chunk += entries
                size += group_size
                continue
            for entry in entries:  # a group bigger than a multi: its own multis, in order
                entry_size = _PER_CREATE + len(entry[0]) + (len(entry[1]) if entry[1] else 0)
                if chunk and size + entry_size > max_bytes:
                    send(chunk)
                    chunk, size = [], 0
                chunk.append(entry)
                size += entry_size
        if chunk:
            send(chunk)
    finally:  # the multis already sent are answered, or given up together within one timeout
        deadline = time.monotonic() + timeout
        while window:
            drain_one(max(deadline - time.monotonic(), 0.001))
    if failure is not None:
        raise failure
    return created
