"""Key order of the JVM hash maps Kafka serializes, so our znodes are byte-identical to Kafka's.

Kafka's JSON writer (a plain Jackson ``ObjectMapper``) emits a map in its iteration order, and that order
comes from the map class Kafka happened to build: Scala 2.13 ``mutable.HashMap``, Scala 2.13's immutable
CHAMP ``HashMap`` (five entries or more), ``java.util.HashMap`` or ``java.util.Properties`` (a
``ConcurrentHashMap``).  Readers never care, but byte comparisons with a real cluster's znodes do, so
these functions replay each class's bucket layout for string keys.  Only string keys occur in znodes.
"""

from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import TypeVar

K = TypeVar("K", str, int, tuple[str, int])

_MASK32 = 0xFFFFFFFF


def _i32(x: int) -> int:
    """Wrap to a signed 32-bit int, as JVM ``int`` arithmetic does."""
    x &= _MASK32
    return x - (1 << 32) if x & 0x80000000 else x


def _ushr(x: int, n: int) -> int:
    """Java's ``>>>`` on an int."""
    return (x & _MASK32) >> n


def java_string_hash(s: str) -> int:
    """``String.hashCode()``: over UTF-16 code units, which matters for non-BMP characters."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & _MASK32
    return _i32(h)


def _table_size_for_scala(capacity: int) -> int:
    return min((1 << (max(capacity - 1, 4).bit_length() - 1)) * 2, 1 << 30)


def scala_mutable_hashmap_order(keys: Sequence[str], *, initial: Sequence[str] | None = None) -> list[str]:
    """Iteration order of a Scala 2.13 ``mutable.HashMap[String, _]``.

    ``initial`` is the set of keys given to the ``mutable.Map(k -> v, ...)`` factory, which sizes the
    table from the count; the rest of ``keys`` are added one by one afterwards with ``+=``.  With
    ``initial=None`` the map started empty (``mutable.Map()``, 16 buckets).
    """
    return list(_scala_mutable_order(tuple(keys), None if initial is None else tuple(initial)))


@lru_cache(maxsize=4096)
def _scala_mutable_order(keys: tuple[str, ...], initial: tuple[str, ...] | None) -> tuple[str, ...]:
    load_factor = 0.75
    first = list(dict.fromkeys(initial)) if initial is not None else []
    size = _table_size_for_scala(int((len(first) + 1) / load_factor)) if first else 16
    present = dict.fromkeys(first)
    for key in keys:
        if key in present:
            continue
        if len(present) + 1 >= int(size * load_factor):
            size *= 2
        present[key] = None

    def place(k: str) -> tuple[int, int]:
        h = java_string_hash(k)
        improved = _i32(h ^ _ushr(h, 16))
        return (improved & (size - 1), improved)

    return tuple(sorted(present, key=place))


def _scala_improve(hcode: int) -> int:
    h = _i32(hcode + ~_i32(hcode << 9))
    h = _i32(h ^ _ushr(h, 14))
    h = _i32(h + _i32(h << 4))
    return _i32(h ^ _ushr(h, 10))


def scala_immutable_map_order(keys: Sequence[str]) -> list[str]:
    """Iteration order of a Scala 2.13 immutable ``Map`` (see ``_scala_immutable_order``)."""
    return list(_scala_immutable_order(tuple(keys)))


@lru_cache(maxsize=4096)
def _scala_immutable_order(keys: tuple[str, ...]) -> tuple[str, ...]:
    """Iteration order of a Scala 2.13 immutable ``Map`` built from ``keys`` in this order.

    Up to four entries it is a ``Map1``..``Map4`` that keeps insertion order; from five it is a CHAMP
    trie whose iterator yields a node's own entries (by 5-bit hash fragment) before descending into its
    sub-nodes in fragment order.
    """
    unique = list(dict.fromkeys(keys))
    if len(unique) <= 4:
        return tuple(unique)
    hashed = [(k, _scala_improve(java_string_hash(k)) & _MASK32) for k in unique]

    def walk(entries: list[tuple[str, int]], shift: int) -> list[str]:
        by_fragment: dict[int, list[tuple[str, int]]] = {}
        for key, h in entries:
            by_fragment.setdefault((h >> shift) & 0x1F if shift < 32 else 0, []).append((key, h))
        if shift >= 32:  # full hash collision: a collision node keeps insertion order
            return [k for k, _ in entries]
        data = [group[0][0] for _, group in sorted(by_fragment.items()) if len(group) == 1]
        nodes = [group for _, group in sorted(by_fragment.items()) if len(group) > 1]
        out = list(data)
        for group in nodes:
            out.extend(walk(group, shift + 5))
        return out

    return tuple(walk(hashed, 0))


def _java_hash(key: str | int | tuple[str, int]) -> int:
    if isinstance(key, str):
        return java_string_hash(key)
    if isinstance(key, int):
        return _i32(key)
    topic, partition = key  # TopicPartition.hashCode: 31 * (31 + partition) + topic.hashCode()
    return _i32(31 * (31 + partition) + java_string_hash(topic))


def java_hashmap_order(keys: Iterable[K]) -> list[K]:
    """Iteration order of a ``java.util.HashMap`` (or ``HashSet``) after putting ``keys`` in this order.
    Keys are strings, ints (``Integer.hashCode`` is the value) or (topic, partition) pairs hashed as Kafka's
    ``TopicPartition.hashCode``. Buckets past eight entries turn into trees
    in Java; that order is not replayed (it needs 9+ colliding keys in one bucket)."""
    size = 16
    present: dict[K, None] = {}  # insertion-ordered, O(1) membership
    for key in keys:
        if key in present:
            continue
        present[key] = None
        if len(present) > int(size * 0.75):
            size *= 2

    def bucket(k: K) -> int:
        h = _java_hash(k)
        return (h ^ _ushr(h, 16)) & (size - 1)

    # Within a bucket Java keeps insertion order, and resizes split buckets without reordering.
    return sorted(present, key=bucket)  # sorted() is stable


def java_properties_order(keys: Iterable[str]) -> list[str]:
    """Iteration order of a Java 17 ``java.util.Properties`` (a ``ConcurrentHashMap`` of 16 bins).

    Bins keep insertion order until a resize; a resize moves each bin's nodes into two new bins the way
    ``ConcurrentHashMap.transfer`` does (the unchanged tail run keeps its order, the nodes before it are
    prepended in reverse).
    """
    n = 16
    table: list[list[tuple[str, int]]] = [[] for _ in range(n)]
    count = 0
    for key in keys:
        h = java_string_hash(key)
        spread = (h ^ _ushr(h, 16)) & 0x7FFFFFFF
        bin_ = table[spread & (n - 1)]
        if any(k == key for k, _ in bin_):
            continue
        bin_.append((key, spread))
        count += 1
        if count >= n - (n >> 2):
            table = _chm_transfer(table, n)
            n *= 2
    return [k for bin_ in table for k, _ in bin_]


def _chm_transfer(table: list[list[tuple[str, int]]], n: int) -> list[list[tuple[str, int]]]:
    new: list[list[tuple[str, int]]] = [[] for _ in range(2 * n)]
    for i, bin_ in enumerate(table):
        if not bin_:
            continue
        bits = [spread & n for _, spread in bin_]
        run_start = len(bin_) - 1
        while run_start > 0 and bits[run_start - 1] == bits[-1]:
            run_start -= 1
        low: list[tuple[str, int]] = []
        high: list[tuple[str, int]] = []
        (high if bits[-1] else low).extend(bin_[run_start:])
        for node, bit in zip(bin_[:run_start], bits[:run_start], strict=True):
            (high if bit else low).insert(0, node)
        new[i] = low
        new[i + n] = high
    return new
