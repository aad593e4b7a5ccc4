"""Many data watches in a few requests: ZooKeeper's ``SetWatches`` (opcode 101).

Why: Kafka's controller leaves a data watch on every topic znode (PartitionModificationsHandler, so that a
legacy tool adding partitions to the znode is noticed). With kazoo that is one ``exists(watch=)`` per topic,
each a request with its own round of Python on both of kazoo's threads: about 2 s per 10,000 topics here,
20 s of a 100,000-topic failover. ZooKeeper's multiRead cannot help: the server drops its ops' watch flag.

``SetWatches`` is what a ZooKeeper client sends after reconnecting to re-arm its watches: a ``relativeZxid``
and lists of paths. For each data watch the server (``DataTree.setWatches``) fires ``NodeDataChanged`` at
once when the znode's mzxid is above ``relativeZxid``, ``NodeDeleted`` when it is gone, and otherwise leaves
the watch armed. Given a zxid no later than the one the caller's read was served at, a change made between
the read and the watch is therefore never missed: the guarantee of reading with a watch, for a hundred
thousand znodes in a few requests. (A change the caller already read may fire too: watch handlers re-read.)

kazoo 2.11 has no call for it, but its connection sends any object with ``type``, ``serialize()`` and
``deserialize()``. The callbacks go into kazoo's own watcher table *before* the request is sent, so kazoo's
connection dispatches the events, immediate ones included, exactly as for its own ``exists(watch=)``.
Requests are cut at 128 KiB, as the Java client cuts its own (``SET_WATCHES_MAX_LENGTH``).

kazoo's table holds a ``set`` per watched path (216 bytes, most of a watch's cost): with a watch on every
partition state that was ~170 bytes a partition more than needed, on every node. A path this module arms gets
a :class:`Watchers` instead (48 bytes), which behaves as the set for everything kazoo does with it (``add``
when its own reads leave a watch, iteration when the event fires or the session resets, ``discard``).

The way back, ``removeWatches`` (opcode 18, ZooKeeper 3.5+; kazoo has no call for it either): a watch on a
znode gone for good, such as the exists watch a deleted topic's partition state is left with, would otherwise
stay in kazoo's table and on the server until the session ends (:func:`remove_data_watches`).
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, ClassVar, Final

from kazoo.client import KazooClient
from kazoo.exceptions import NoWatcherError

from controller.zk.protocol.paths import server_path

__all__ = [
    "REMOVE_WATCHES",
    "SET_WATCHES",
    "RemoveWatchesRequest",
    "SetWatchesRequest",
    "Watchers",
    "remove_data_watches",
    "set_data_watches",
]

#: ZooDefs.OpCode.setWatches.
SET_WATCHES: Final = 101
#: ZooDefs.OpCode.removeWatches (ZooKeeper 3.5+), and Watcher.WatcherType.Data: data and exists watches.
REMOVE_WATCHES: Final = 18
WATCHER_TYPE_DATA: Final = 2
#: The Java client's ClientCnxn.SET_WATCHES_MAX_LENGTH: bytes of paths per request.
MAX_PATH_BYTES: Final = 128 * 1024

_INT = struct.Struct("!i")
_LONG = struct.Struct("!q")
_EMPTY_VECTOR = _INT.pack(0)


class Watchers:
    """The callbacks of one watched path, for kazoo's watcher table: one callback in a slot, a set only when a
    second, different one is added (set semantics: the same callback twice fires once)."""

    __slots__ = ("_first", "_more")

    def __init__(self, first: Callable[[Any], None]) -> None:
        self._first: Callable[[Any], None] | None = first
        self._more: set[Callable[[Any], None]] | None = None

    def add(self, watch: Callable[[Any], None]) -> None:
        if self._first is None:
            if self._more is None or watch not in self._more:
                self._first = watch
        elif watch != self._first:
            if self._more is None:
                self._more = set()
            self._more.add(watch)

    def discard(self, watch: Callable[[Any], None]) -> None:
        if self._first is not None and self._first == watch:
            self._first = None
        elif self._more is not None:
            self._more.discard(watch)

    def __iter__(self) -> Iterator[Callable[[Any], None]]:
        if self._first is not None:
            yield self._first
        if self._more is not None:
            yield from self._more

    def __len__(self) -> int:
        return (self._first is not None) + (len(self._more) if self._more is not None else 0)

    def __contains__(self, watch: object) -> bool:
        return (self._first is not None and self._first == watch) or (self._more is not None and watch in self._more)


class SetWatchesRequest:
    """``SetWatches(relativeZxid, dataWatches, existWatches, childWatches=[])`` for kazoo's connection;
    paths already carry the client's chroot. The reply has no body."""

    type: ClassVar[int] = SET_WATCHES
    __slots__ = ("exist", "paths", "relative_zxid")

    def __init__(self, relative_zxid: int, paths: Sequence[str], exist: Sequence[str] = ()) -> None:
        self.relative_zxid = relative_zxid
        self.paths = paths
        self.exist = exist

    def __repr__(self) -> str:  # kazoo logs requests at DEBUG: keep it short
        return (
            f"SetWatchesRequest({len(self.paths)} data and {len(self.exist)} exist watches, "
            f"relative zxid {self.relative_zxid:#x})"
        )

    def serialize(self) -> bytes:
        parts = [_LONG.pack(self.relative_zxid)]
        for paths in (self.paths, self.exist):
            parts.append(_INT.pack(len(paths)))
            for path in paths:
                raw = path.encode()
                parts += (_INT.pack(len(raw)), raw)
        parts.append(_EMPTY_VECTOR)  # no child watches
        return b"".join(parts)

    def deserialize(self, buffer: bytes, offset: int) -> None:
        return None


def set_data_watches(
    client: KazooClient,
    paths: Sequence[str],
    watch: Callable[[Any], None],
    relative_zxid: int,
    *,
    timeout: float,
    missing: Sequence[str] = (),
) -> int:
    """Leave a data watch calling ``watch`` on every one of ``paths``, as of ``relative_zxid``: a znode
    changed after that zxid (or gone) fires at once. ``missing`` are znodes the caller found absent: they get
    an exists watch, which fires at once if they exist by now (the server sends NodeCreated). Returns the
    number of requests sent. Raises what the requests raised (ConnectionLoss, SessionExpiredError) or
    :class:`TimeoutError` after ``timeout`` s."""
    kinds = [[server_path(client, p) for p in dict.fromkeys(group)] for group in (paths, missing)]
    total = len(kinds[0]) + len(kinds[1])
    if not total:
        return 0
    table = client._data_watchers  # kazoo routes data, exists and deletion events through this one table
    for group in kinds:
        for path in group:
            # setdefault is one step under the GIL: a set kazoo's connection thread put there meanwhile is kept
            fresh = Watchers(watch)
            found = table.setdefault(path, fresh)
            if found is not fresh:
                found.add(watch)
    pending = []
    chunks: tuple[list[str], list[str]] = ([], [])
    size = 0
    for kind, group in enumerate(kinds):
        for path in group:
            length = len(path.encode()) + _INT.size
            if size + length > MAX_PATH_BYTES and (chunks[0] or chunks[1]):
                pending.append(_send(client, relative_zxid, *chunks))
                chunks, size = ([], []), 0
            chunks[kind].append(path)
            size += length
    pending.append(_send(client, relative_zxid, *chunks))
    _await_all(client, pending, timeout, f"SetWatches for {total} znodes")
    return len(pending)


def _await_all(
    client: KazooClient, pending: Sequence[Any], timeout: float, what: str, ignore: tuple[type[Exception], ...] = ()
) -> None:
    """Every answer of ``pending`` within ``timeout`` s in all (TimeoutError naming ``what`` if not); an
    answer raising one of ``ignore`` is fine, any other error is raised."""
    deadline = time.monotonic() + timeout
    for result in pending:
        try:
            result.get(timeout=max(deadline - time.monotonic(), 0.0))
        except ignore:
            pass
        except client.handler.timeout_exception:
            raise TimeoutError(f"{what}: no answer within {timeout:.0f}s") from None


def _send(client: KazooClient, relative_zxid: int, paths: list[str], exist: list[str]) -> Any:
    result = client.handler.async_result()
    client._call(SetWatchesRequest(relative_zxid, paths, exist), result)
    return result


class RemoveWatchesRequest:
    """``RemoveWatches(path, type)`` for kazoo's connection (the path carries the client's chroot): the server
    forgets this session's watches of ``type`` on ``path``. The reply has no body; NoWatcher (-121) when the
    server holds none there (already fired, or dropped with a connection)."""

    type: ClassVar[int] = REMOVE_WATCHES
    __slots__ = ("path", "watcher_type")

    def __init__(self, path: str, watcher_type: int = WATCHER_TYPE_DATA) -> None:
        self.path = path
        self.watcher_type = watcher_type

    def __repr__(self) -> str:
        return f"RemoveWatchesRequest({self.path!r}, type {self.watcher_type})"

    def serialize(self) -> bytes:
        raw = self.path.encode()
        return _INT.pack(len(raw)) + raw + _INT.pack(self.watcher_type)

    def deserialize(self, buffer: bytes, offset: int) -> None:
        return None


def remove_data_watches(
    client: KazooClient, paths: Sequence[str], watch: Callable[[Any], None], *, timeout: float, server: bool
) -> int:
    """Take ``watch`` off the data and exists watchers of each of ``paths``. A path left with no watcher at
    all is dropped from kazoo's table and, with ``server`` (a server known to be 3.5 or newer; an older one
    does not know the request), from the server's too, in pipelined ``removeWatches``: an exists watch on a
    znode that is gone for good (a deleted topic's partition state) would otherwise stay on both sides until
    the session ends. NoWatcher answers are fine. Returns the number of paths dropped; raises what the
    requests raised (ConnectionLoss, SessionExpiredError) or :class:`TimeoutError` after ``timeout`` s."""
    table = client._data_watchers
    dropped: list[str] = []
    for path in dict.fromkeys(server_path(client, p) for p in paths):
        entry = table.get(path)
        if entry is None or watch not in entry:
            continue
        entry.discard(watch)
        if not len(entry):
            table.pop(path, None)
            dropped.append(path)
    if not server or not dropped:
        return len(dropped)
    pending = []
    for path in dropped:
        result = client.handler.async_result()
        client._call(RemoveWatchesRequest(path), result)
        pending.append(result)
    _await_all(client, pending, timeout, f"removeWatches for {len(dropped)} znodes", ignore=(NoWatcherError,))
    return len(dropped)
