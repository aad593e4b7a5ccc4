"""A whole tree of persistent znodes into ZooKeeper at the rate the server takes it: write multis of creates
(opcode 14), pipelined on one connection.

kazoo's ``create_async`` manages ~4,000 znodes/s here; a multi of a few hundred creates, a dozen in flight,
is an order of magnitude faster. The multi is serialized in one pass (kazoo's ``TransactionRequest`` rebuilds
every op in Python and cannot send null data, which Kafka's ``/partitions`` parents have); its answer is read
by kazoo's own ``Transaction.deserialize``.

Groups: a caller hands znodes in groups that must land together where they can (a topic znode and its
partitions): a group goes into one multi unless it alone is bigger than a multi may be, so an interrupted
write leaves whole groups or nothing of them. Parents come before children, and one connection's requests
are applied in order, so a multi never names a parent that a multi still in flight creates later.
"""

from __future__ import annotations

import struct
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any, ClassVar

from kazoo.client import KazooClient
from kazoo.exceptions import RolledBackError, RuntimeInconsistency
from kazoo.protocol.serialization import Transaction

from controller.zk.ops import MAX_MULTI_BYTES

_HEADER = struct.Struct("!iBi")
_INT = struct.Struct("!i")
_CREATE_HEADER = _HEADER.pack(1, False, -1)
_DONE = _HEADER.pack(-1, True, -1)
# vector<ACL> with world:anyone ALL (OPEN_ACL_UNSAFE), then flags = 0 (persistent)
_OPEN_ACL_AND_FLAGS = _INT.pack(1) + _INT.pack(31) + _INT.pack(5) + b"world" + _INT.pack(6) + b"anyone" + _INT.pack(0)
#: Bytes a create adds to a multi beyond its path and data: op header, two lengths, the ACL and flags.
_PER_CREATE = len(_CREATE_HEADER) + 8 + len(_OPEN_ACL_AND_FLAGS)
#: Creates per multi before it is sent: past a few hundred the server's per-multi cost stops falling.
OPS_PER_MULTI = 400
IN_FLIGHT = 16

Znode = tuple[str, bytes | None]


class CreateMulti:
    """A write multi of persistent creates with the open ACL, as kazoo's connection sends a request; ``nodes``
    carry the client's chroot already. Its result is kazoo's: the created paths, or an exception per op."""

    type: ClassVar[int] = Transaction.type

    def __init__(self, nodes: Sequence[Znode]) -> None:
        self.nodes = nodes

    def __repr__(self) -> str:
        return f"CreateMulti({len(self.nodes)} creates)"

    def serialize(self) -> bytes:
        parts: list[bytes] = []
        for path, data in self.nodes:
            raw = path.encode()
            parts += (_CREATE_HEADER, _INT.pack(len(raw)), raw)
            parts += (_INT.pack(-1),) if data is None else (_INT.pack(len(data)), data)
            parts.append(_OPEN_ACL_AND_FLAGS)
        parts.append(_DONE)
        return b"".join(parts)

    deserialize = Transaction.deserialize


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
        result = client.handler.async_result()
        client._call(CreateMulti(nodes), result)
        window.append((result, nodes))
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
