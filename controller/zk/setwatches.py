"""Many data watches in a few requests (``SetWatches``), and their removal (``removeWatches``), on a kazoo client.

Why: Kafka's controller leaves a data watch on every topic znode (PartitionModificationsHandler, so that a
legacy tool adding partitions to the znode is noticed). With kazoo that is one ``exists(watch=)`` per topic,
each a request with its own round of Python on both of kazoo's threads: about 2 s per 10,000 topics here,
20 s of a 100,000-topic failover. ZooKeeper's multiRead cannot help: the server drops its ops' watch flag.

The guarantee: a data watch set with :class:`~controller.zk.protocol.watches.SetWatchesRequest` as of a zxid no
later than the one the caller's read was served at fires at once for a change made between the read and the
watch, so none is missed: the guarantee of reading with a watch, for a hundred thousand znodes in a few requests.
(A change the caller already read may fire too: watch handlers re-read.)

The callbacks go into kazoo's own watcher table *before* the request is sent, so kazoo's connection dispatches
the events, immediate ones included, exactly as for its own ``exists(watch=)``; a path armed here gets a
:class:`~controller.zk.watch_table.Watchers` slot instead of kazoo's set (in a node's
:class:`~controller.zk.watch_table.WatchTable`, a partition state's watch is a byte).

The way back, ``removeWatches`` (kazoo has no call for it either): a watch on a znode gone for good, such as the
exists watch a deleted topic's partition state is left with, would otherwise stay in kazoo's table and on the
server until the session ends (:func:`remove_data_watches`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import NoWatcherError

from controller.zk.protocol.jute import INT
from controller.zk.protocol.paths import server_path
from controller.zk.protocol.watches import MAX_PATH_BYTES, AddWatchRequest, RemoveWatchesRequest, SetWatchesRequest
from controller.zk.send import send
from controller.zk.watch_table import Watchers, WatchTable

__all__ = ["add_persistent_watch", "remove_data_watches", "set_data_watches", "set_data_watches_at"]


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
    return set_data_watches_at(client, [(relative_zxid, paths, missing)], watch, timeout=timeout)


def set_data_watches_at(
    client: KazooClient,
    groups: Sequence[tuple[int, Sequence[str], Sequence[str]]],
    watch: Callable[[Any], None],
    *,
    timeout: float,
) -> int:
    """:func:`set_data_watches` for several ``(relative_zxid, paths, missing)`` groups, every request of every
    group pipelined and awaited once: a node's image re-arms the znodes of a thousand writes, each as of its
    own write's zxid, in about one round trip."""
    pending = []
    total = 0
    table = client._data_watchers  # kazoo routes data, exists and deletion events through this one table
    for relative_zxid, paths, missing in groups:
        kinds = [[server_path(client, p) for p in dict.fromkeys(group)] for group in (paths, missing)]
        count = len(kinds[0]) + len(kinds[1])
        if not count:
            continue
        total += count
        for group in kinds:
            arm(table, group, watch)
        chunks: tuple[list[str], list[str]] = ([], [])
        size = 0
        for kind, group in enumerate(kinds):
            for path in group:
                length = len(path.encode()) + INT.size
                if size + length > MAX_PATH_BYTES and (chunks[0] or chunks[1]):
                    pending.append(send(client, SetWatchesRequest(relative_zxid, *chunks)))
                    chunks, size = ([], []), 0
                chunks[kind].append(path)
                size += length
        pending.append(send(client, SetWatchesRequest(relative_zxid, *chunks)))
    if pending:
        _await_all(client, pending, timeout, f"SetWatches for {total} znodes")
    return len(pending)


def arm(table: Any, paths: Sequence[str], watch: Callable[[Any], None]) -> None:
    """Put ``watch`` into a kazoo client's data-watcher ``table`` for each of ``paths`` (server paths), as
    kazoo's connection does when a read with a watch is answered."""
    if isinstance(table, WatchTable):
        table.add_all(paths, watch)
        return
    for path in paths:
        # setdefault is one step under the GIL: a set kazoo's connection thread put there meanwhile is kept. Most
        # paths a controller re-arms are already in the table (its node's image watches them): they are looked
        # up without building a slot.
        found = table.get(path)
        if found is None:
            fresh = Watchers(watch)
            found = table.setdefault(path, fresh)
            if found is fresh:
                continue
        found.add(watch)


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
    pending = [send(client, RemoveWatchesRequest(path)) for path in dropped]
    _await_all(client, pending, timeout, f"removeWatches for {len(dropped)} znodes", ignore=(NoWatcherError,))
    return len(dropped)


def add_persistent_watch(client: KazooClient, path: str, watch: Callable[[Any], None], *, timeout: float) -> None:
    """A persistent recursive watch on ``path`` calling ``watch`` for every NodeCreated, NodeDeleted and
    NodeDataChanged on it or below it, until the connection goes (``addWatch``; ZooKeeper 3.6+, which the
    caller must know the server is: an older one drops the connection). The callback goes into the client's
    :class:`~controller.zk.watch_table.WatchTable` before the request is sent, so no event is missed. Raises
    TypeError for a client without one (kazoo's own table pops a path's callbacks when its event fires), and
    what the request raised, or :class:`TimeoutError` after ``timeout`` s."""
    table = client._data_watchers
    if not isinstance(table, WatchTable):
        raise TypeError("a persistent watch needs a WatchTableClient (controller.zk.watch_table)")
    full = server_path(client, path)
    table.add_persistent(full, watch)
    _await_all(client, [send(client, AddWatchRequest(full))], timeout, f"addWatch on {path}")
