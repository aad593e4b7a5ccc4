"""kazoo's data-watcher table, with the watch on every partition state held in about one byte.

kazoo keeps a client's data and exists watches in ``client._data_watchers``: a ``defaultdict(set)`` from the
server path to the callbacks to fire. Its connection thread pops a path's callbacks when an event names it
(``pop(path, [])``) and adds one when a read with a watch is answered (``table[path].add(watch)``); the client
iterates ``values()`` when it drops every watcher with its session. Nothing else touches the table.

Why a table of our own: a node's image leaves a data watch on every partition state znode (Kafka's brokers
learn them from the controller's pushes; ours watch for writers in other processes). In kazoo's table each
costs a server path string (~115 bytes with its chroot), a dict entry and a callback set: ~200 bytes a
partition, a quarter of a node's resident memory at a million partitions. Every one of those watches calls
the same one or two callbacks. :class:`WatchTable` holds a path of the shape ``<head>/partitions/<n>/state``
as one byte at index ``n`` of its head's ``bytearray``, the byte naming an interned set of callbacks; any
other path is held as kazoo holds it, with a :class:`Watchers` slot.

Invariant: the table answers every operation kazoo's connection, the client and :mod:`.setwatches` make of
it (``__getitem__`` creating, ``get``, ``pop``, ``__contains__``, ``values``, iteration) exactly as the
``defaultdict`` of per-path sets would, paths spelled back byte for byte. Operations hold one lock: kazoo's
connection thread and a cache thread use the table at once, and a compact slot's update is several steps.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from kazoo.client import KazooClient

from controller.zk.connection import BufferedConnectionHandler

__all__ = ["MAX_COMPACT_PARTITION", "WatchTable", "WatchTableClient", "Watchers"]

Callback = Callable[[Any], None]

#: Partition ids at or above this are held as any other path (Kafka's topics stay far below; a foreign path
#: with a huge id must not grow a head's bytes).
MAX_COMPACT_PARTITION = 1 << 16
#: Distinct callback sets a table names by one byte (index 0 is "no watch"); a path watched by a further set
#: is held as any other path.
_MAX_SETS = 255
_PARTITIONS = "/partitions/"
_STATE = "/state"


class Watchers:
    """The callbacks of one watched path: one callback in a slot, the others in a tuple (set semantics: the
    same callback twice fires once).

    Why: kazoo's table holds a ``set`` per watched path (216 bytes); this slot is 48 bytes and behaves as the set
    for everything kazoo does with it (``add``, iteration when the event fires or the session resets,
    ``discard``, ``len``, membership)."""

    __slots__ = ("_first", "_more")

    def __init__(self, first: Callback | None = None) -> None:
        self._first: Callback | None = first
        self._more: tuple[Callback, ...] = ()

    def add(self, watch: Callback) -> None:
        if self._first is None:
            if watch not in self._more:
                self._first = watch
        elif watch != self._first and watch not in self._more:
            self._more = (*self._more, watch)

    def discard(self, watch: Callback) -> None:
        if self._first is not None and self._first == watch:
            self._first = None
        elif watch in self._more:
            self._more = tuple(w for w in self._more if w != watch)

    def __iter__(self) -> Iterator[Callback]:
        if self._first is not None:
            yield self._first
        yield from self._more

    def __len__(self) -> int:
        return (self._first is not None) + len(self._more)

    def __contains__(self, watch: object) -> bool:
        return (self._first is not None and self._first == watch) or watch in self._more


def _state_key(path: str) -> tuple[str, int] | None:
    """``(head, n)`` for a path ``<head>/partitions/<n>/state`` whose ``n`` is spelled canonically (so the path
    is rebuilt byte for byte) and below :data:`MAX_COMPACT_PARTITION`; None for any other path."""
    if not path.endswith(_STATE):
        return None
    head, sep, number = path[: -len(_STATE)].rpartition(_PARTITIONS)
    if not sep or not head or not number.isdigit() or not number.isascii():
        return None
    if len(number) > 1 and number[0] == "0":
        return None
    n = int(number)
    return (head, n) if n < MAX_COMPACT_PARTITION else None


class _StateSlot:
    """A transient view of one compact path's callbacks, for kazoo's ``table[path].add(watch)`` and
    :mod:`.setwatches`: it writes through to the table and holds no state of its own."""

    __slots__ = ("_head", "_n", "_table")

    def __init__(self, table: WatchTable, head: str, n: int) -> None:
        self._table, self._head, self._n = table, head, n

    def _callbacks(self) -> frozenset[Callback]:
        return self._table._callbacks_at(self._head, self._n)

    def add(self, watch: Callback) -> None:
        self._table.add_all((f"{self._head}{_PARTITIONS}{self._n}{_STATE}",), watch)

    def discard(self, watch: Callback) -> None:
        self._table._discard(self._head, self._n, watch)

    def __iter__(self) -> Iterator[Callback]:
        return iter(self._callbacks())

    def __len__(self) -> int:
        return len(self._callbacks())

    def __contains__(self, watch: object) -> bool:
        return watch in self._callbacks()


class WatchTable:
    """kazoo's ``_data_watchers``, partition-state paths compact (see the module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        #: Any path not held compactly: its slot, as kazoo holds it.
        self._paths: dict[str, Watchers | set[Callback]] = {}
        #: head -> one byte per partition id: the index in ``_sets`` of its callbacks, 0 for none.
        self._heads: dict[str, bytearray] = {}
        self._sets: list[frozenset[Callback]] = [frozenset()]
        self._codes: dict[frozenset[Callback], int] = {frozenset(): 0}
        self._compact = 0  # compact paths with a callback: len() without a scan
        #: Persistent recursive watches (``addWatch``): a prefix -> its callbacks, which every event on the prefix
        #: or below it runs and which an event never takes off (ZooKeeper keeps the watch after it fires).
        self._persistent: dict[str, tuple[Callback, ...]] = {}

    # -- the compact side, under the lock --------------------------------------------------------------------

    def _code_at(self, head: str, n: int) -> int:
        codes = self._heads.get(head)
        return codes[n] if codes is not None and n < len(codes) else 0

    def _callbacks_at(self, head: str, n: int) -> frozenset[Callback]:
        with self._lock:
            return self._sets[self._code_at(head, n)]

    def _code_of(self, callbacks: frozenset[Callback]) -> int | None:
        code = self._codes.get(callbacks)
        if code is None and len(self._sets) <= _MAX_SETS:
            code = len(self._sets)
            self._sets.append(callbacks)
            self._codes[callbacks] = code
        return code

    def _set_code(self, head: str, n: int, code: int) -> None:
        codes = self._heads.get(head)
        if codes is None:
            if not code:
                return
            codes = self._heads[head] = bytearray()
        if n >= len(codes):
            if not code:
                return
            codes.extend(bytes(n + 1 - len(codes)))
        self._compact += bool(code) - bool(codes[n])
        codes[n] = code
        if not code and codes.count(0) == len(codes):
            del self._heads[head]

    def _discard(self, head: str, n: int, watch: Callback) -> None:
        with self._lock:
            now = self._code_at(head, n)
            after = self._sets[now] - {watch}
            if after == self._sets[now]:
                return
            code = self._code_of(after)
            if code is not None:
                self._set_code(head, n, code)
                return
            self._set_code(head, n, 0)  # a 256th distinct set of callbacks: held as any other path
            for callback in after:
                self._add_general(f"{head}{_PARTITIONS}{n}{_STATE}", callback)

    # -- what kazoo and setwatches use -----------------------------------------------------------------------

    def __getitem__(self, path: str) -> Watchers | set[Callback] | _StateSlot:
        """The slot of ``path``, created empty if missing (``defaultdict`` semantics, which kazoo relies on)."""
        key = _state_key(path)
        with self._lock:
            if key is None or path in self._paths:
                return self._paths.setdefault(path, Watchers())
        return _StateSlot(self, *key)

    def get(self, path: str, default: Any = None) -> Any:
        key = _state_key(path)
        with self._lock:
            found = self._paths.get(path)
            if found is not None or key is None:
                return default if found is None else found
            if not self._code_at(*key):
                return default
        return _StateSlot(self, *key)

    def add(self, path: str, watch: Callback) -> None:
        """Leave ``watch`` on ``path`` (kazoo itself does ``table[path].add(watch)``)."""
        self.add_all((path,), watch)

    def add_all(self, paths: Iterable[str], watch: Callback) -> None:
        """Leave ``watch`` on every one of ``paths`` under one hold of the lock: a node's image arms a million
        state watches at a cold load, so a path costs a parse and a byte, the new callback set being looked up
        once per set it joins."""
        joined: dict[int, int | None] = {}  # a path's code now -> its code with ``watch``
        with self._lock:
            for path in paths:
                key = None if path in self._paths else _state_key(path)
                if key is None:
                    self._add_general(path, watch)
                    continue
                head, n = key
                now = self._code_at(head, n)
                if now not in joined:
                    joined[now] = self._code_of(self._sets[now] | {watch})
                code = joined[now]
                if code is None:  # a 256th distinct set of callbacks: held as any other path
                    self._set_code(head, n, 0)
                    for callback in self._sets[now]:
                        self._add_general(path, callback)
                    self._add_general(path, watch)
                elif code != now:
                    self._set_code(head, n, code)

    def _add_general(self, path: str, watch: Callback) -> None:
        found = self._paths.get(path)
        if found is None:
            self._paths[path] = Watchers(watch)
        else:
            found.add(watch)

    def add_persistent(self, prefix: str, watch: Callback) -> None:
        """Run ``watch`` for every data event on ``prefix`` and below it until the table is dropped (a persistent
        recursive watch that the caller registers with the server, :class:`~.protocol.watches.AddWatchRequest`).
        Put here before the request is sent, so that no event the server sends from then on is dropped."""
        with self._lock:
            callbacks = self._persistent.get(prefix, ())
            if watch not in callbacks:
                self._persistent[prefix] = (*callbacks, watch)

    def _covering(self, path: str) -> list[Callback]:
        """The persistent callbacks whose prefix is ``path`` or one of its ancestors (under the lock)."""
        found: list[Callback] = []
        for prefix, callbacks in self._persistent.items():
            if path == prefix or path.startswith(prefix + "/") or prefix == "/":
                found += [c for c in callbacks if c not in found]
        return found

    def pop(self, path: str, default: Any = None) -> Any:
        """The callbacks of ``path``, taken off it (kazoo's ``pop(path, [])`` when an event names the path),
        with the persistent callbacks covering it, which stay."""
        key = _state_key(path)
        with self._lock:
            once = self._pop_once(path, key)
            if not self._persistent:
                return default if once is None else once
            covering = self._covering(path)
        if not covering:
            return default if once is None else once
        return [*(once or ()), *(c for c in covering if once is None or c not in once)]

    def _pop_once(self, path: str, key: tuple[str, int] | None) -> Any:
        found = self._paths.pop(path, None)
        if found is not None or key is None:
            return found
        code = self._code_at(*key)
        if not code:
            return None
        self._set_code(*key, 0)
        return tuple(self._sets[code])

    def __contains__(self, path: object) -> bool:
        if not isinstance(path, str):
            return False
        key = _state_key(path)
        with self._lock:
            return path in self._paths or (key is not None and self._code_at(*key) != 0)

    def __len__(self) -> int:
        with self._lock:
            return len(self._paths) + self._compact

    def _items(self) -> list[tuple[str, Any]]:
        """Every one-shot watch's path and callbacks, then each persistent prefix's (kazoo reads ``values()``
        when it drops every watcher: a persistent watch's callbacks hear of that too)."""
        with self._lock:
            items: list[tuple[str, Any]] = list(self._paths.items())
            items += self._persistent.items()
            for head, codes in self._heads.items():
                for n, code in enumerate(codes):
                    if code:
                        items.append((f"{head}{_PARTITIONS}{n}{_STATE}", self._sets[code]))
        return items

    def __iter__(self) -> Iterator[str]:
        return iter([path for path, _ in self._items()])

    def keys(self) -> list[str]:
        return [path for path, _ in self._items()]

    def values(self) -> list[Any]:
        """Every path's callbacks, a copy (kazoo iterates them when it drops every watcher)."""
        return [callbacks for _, callbacks in self._items()]

    def items(self) -> list[tuple[str, Any]]:
        return self._items()


class WatchTableClient(KazooClient):  # type: ignore[misc]  # kazoo is untyped
    """A ``KazooClient`` whose data-watcher table is a :class:`WatchTable` from its first connection on, and
    whose connection reads ahead (:class:`~controller.zk.connection.BufferedConnectionHandler`): the two costs
    of the watch events a node receives by the hundred thousand.

    kazoo builds a fresh ``defaultdict(set)`` whenever it drops every watcher (at construction, on a lost
    connection, with the session): this puts a fresh table in its place at the same step, on the thread kazoo
    runs it on. Watches armed on a connection that is going away are dropped either way; whoever holds watches
    re-arms them on the next connection (a watched cache reloads)."""

    _connection: Any

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # kazoo builds its connection here and starts it only in start(): swap in the one that reads ahead
        # (controller/zk/connection.py), with the same retry policy, logger and SASL options.
        plain: Any = self._connection
        self._connection = BufferedConnectionHandler(
            self, plain.retry_sleeper, logger=plain.logger, sasl_options=plain.sasl_options
        )

    def _reset_watchers(self) -> None:
        super()._reset_watchers()
        self._data_watchers = WatchTable()
