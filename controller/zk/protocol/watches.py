"""ZooKeeper's ``SetWatches`` (opcode 101), ``addWatch`` (opcode 106) and ``removeWatches`` (opcode 18).

``SetWatches`` is what a ZooKeeper client sends after reconnecting to re-arm its watches: a ``relativeZxid``
and lists of paths. For each data watch the server (``DataTree.setWatches``) fires ``NodeDataChanged`` at
once when the znode's mzxid is above ``relativeZxid``, ``NodeDeleted`` when it is gone, and otherwise leaves
the watch armed; for an exist watch it fires ``NodeCreated`` at once if the znode exists. The reply has no body.
Requests are cut at :data:`MAX_PATH_BYTES` of paths, as the Java client cuts its own.

``addWatch`` (opcode 106, ZooKeeper 3.6+): a watch that stays after it fires, on one znode (``PERSISTENT``) or
on a znode and every znode below it (``PERSISTENT_RECURSIVE``: NodeCreated, NodeDeleted and NodeDataChanged for
any of them, never NodeChildrenChanged). The server keeps it until the connection goes (a client re-arms it with
SetWatches2 on reconnecting; kazoo does not, so its user re-adds it). The reply has no body. An older server
does not know the opcode and drops the connection: ask first (a server that answers multiRead is 3.6+).

``removeWatches`` (ZooKeeper 3.5+): the server forgets this session's watches of a type on one path; NoWatcher
(-121) when it holds none there (already fired, or dropped with a connection). The reply has no body.

kazoo 2.11 has neither record. Paths are server paths (:mod:`.paths`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Final

from controller.zk.protocol.jute import INT, LONG, OP_ADD_WATCH, OP_REMOVE_WATCHES, OP_SET_WATCHES, encode_ustring

__all__ = [
    "ADD_WATCH_PERSISTENT",
    "ADD_WATCH_PERSISTENT_RECURSIVE",
    "MAX_PATH_BYTES",
    "REMOVE_WATCHES",
    "SET_WATCHES",
    "WATCHER_TYPE_DATA",
    "AddWatchRequest",
    "RemoveWatchesRequest",
    "SetWatchesRequest",
]

SET_WATCHES: Final = OP_SET_WATCHES
#: AddWatchMode.PERSISTENT and PERSISTENT_RECURSIVE (ZooKeeper's ``AddWatchMode.getMode()``).
ADD_WATCH_PERSISTENT: Final = 0
ADD_WATCH_PERSISTENT_RECURSIVE: Final = 1
REMOVE_WATCHES: Final = OP_REMOVE_WATCHES
#: Watcher.WatcherType.Data: data and exists watches.
WATCHER_TYPE_DATA: Final = 2
#: The Java client's ClientCnxn.SET_WATCHES_MAX_LENGTH: bytes of paths per request.
MAX_PATH_BYTES: Final = 128 * 1024

_EMPTY_VECTOR = INT.pack(0)


class SetWatchesRequest:
    """``SetWatches(relativeZxid, dataWatches, existWatches, childWatches=[])`` for kazoo's connection;
    paths already carry the client's chroot. The reply has no body."""

    type: ClassVar[int] = OP_SET_WATCHES
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
        parts = [LONG.pack(self.relative_zxid)]
        for paths in (self.paths, self.exist):
            parts.append(INT.pack(len(paths)))
            for path in paths:
                raw = path.encode()
                parts += (INT.pack(len(raw)), raw)
        parts.append(_EMPTY_VECTOR)  # no child watches
        return b"".join(parts)

    def deserialize(self, buffer: bytes, offset: int) -> None:
        return None


class RemoveWatchesRequest:
    """``RemoveWatches(path, type)`` for kazoo's connection (the path carries the client's chroot): the server
    forgets this session's watches of ``type`` on ``path``. The reply has no body; NoWatcher (-121) when the
    server holds none there (already fired, or dropped with a connection)."""

    type: ClassVar[int] = OP_REMOVE_WATCHES
    __slots__ = ("path", "watcher_type")

    def __init__(self, path: str, watcher_type: int = WATCHER_TYPE_DATA) -> None:
        self.path = path
        self.watcher_type = watcher_type

    def __repr__(self) -> str:
        return f"RemoveWatchesRequest({self.path!r}, type {self.watcher_type})"

    def serialize(self) -> bytes:
        return encode_ustring(self.path) + INT.pack(self.watcher_type)

    def deserialize(self, buffer: bytes, offset: int) -> None:
        return None


class AddWatchRequest:
    """``AddWatch(path, mode)`` for kazoo's connection (the path carries the client's chroot): a watch that stays
    after it fires. The reply has no body."""

    type: ClassVar[int] = OP_ADD_WATCH
    __slots__ = ("mode", "path")

    def __init__(self, path: str, mode: int = ADD_WATCH_PERSISTENT_RECURSIVE) -> None:
        self.path = path
        self.mode = mode

    def __repr__(self) -> str:
        return f"AddWatchRequest({self.path!r}, mode {self.mode})"

    def serialize(self) -> bytes:
        return encode_ustring(self.path) + INT.pack(self.mode)

    def deserialize(self, buffer: bytes, offset: int) -> None:
        return None
