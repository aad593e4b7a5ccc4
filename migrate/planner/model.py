"""What the planner takes and gives (:class:`Layout`, :class:`Plan`), and the integer-indexed arrays it works on.

The planner runs inside a Spark ``applyInPandas`` call per cluster, on clusters of up to millions of
partitions, so after validating the request it never walks Python dicts per replica again: partitions become
indices ``0..P-1`` (sorted by (topic, partition), so the result does not depend on the caller's dict order),
brokers become indices ``0..B-1`` (sorted ids), and the replica lists one flat array in list order with
offsets (:class:`Indexed`). A replica's position in that array is its *slot*; a new replica takes the slot of
the one it replaces, so kept replicas keep their order.
"""

from __future__ import annotations

import functools
import itertools
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from migrate.planner.reach import replica_band

TP = tuple[str, int]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class Layout:
    """A cluster as the planner sees it: registered brokers (id -> rack or None) and every partition's replicas
    (first = preferred leader). Replicas may name brokers that are not registered."""

    brokers: Mapping[int, str | None]
    assignment: Mapping[TP, tuple[int, ...]]


class PlanRequestError(ValueError):
    """The request cannot be planned as asked (unknown operation or broker, a rack missing, too few brokers);
    the message names what was wrong. Unmet balance or rack constraints are not errors: they are reported in
    :attr:`Plan.violations`."""


@dataclass
class Plan:
    operation: str
    brokers: list[int]  # named by the operation
    targets: list[int]  # the brokers replicas may be on afterwards
    racks: dict[int, str | None]  # the racks used for the targets
    rack_aware: bool
    assignment: dict[TP, tuple[int, ...]]  # the whole new assignment
    changed: dict[TP, tuple[int, ...]]  # only partitions whose list changed (content or order)
    moves: int
    lower_bound: int
    kafka_generate_moves: int | None
    leader_changes: int  # partitions whose first replica changed
    waves: list[list[TP]]  # [] without a cap; else every changed partition in exactly one wave
    before: dict[int, int]  # replicas per broker (targets and every broker holding replicas before)
    after: dict[int, int]
    leaders_before: dict[int, int]  # first replicas per broker (same keys)
    leaders_after: dict[int, int]
    violations: list[str]
    warnings: list[str]
    seconds: float
    #: The current replicas of the changed partitions: the rollback plan (what Kafka prints as "Current
    #: partition replica assignment").
    current: dict[TP, tuple[int, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class Indexed:
    """A layout as arrays. Broker index ``i`` is broker id ``ids[i]``; targets have ``target[i]`` and, when the
    plan is rack-aware, a rack index ``rack[i]`` in ``0..len(racks)-1`` (-1 otherwise)."""

    tps: list[TP]
    off: IntArray  # P+1 offsets into rep: partition p's replicas are rep[off[p]:off[p+1]]
    rep: IntArray  # broker index of each replica, partitions in order, each list in order
    part: IntArray  # partition index of each replica
    ids: IntArray  # broker index -> broker id
    target: BoolArray
    rack: IntArray
    racks: list[str]
    aware: bool  # the rack rule applies (every target has a rack)
    #: Per broker index, a tie-break for the units inside a band, lower first (replicas, preferred leaders);
    #: None: no preference (:func:`migrate.planner.flow.soft_bands`).
    prefer: IntArray | None = None
    lead_prefer: IntArray | None = None

    @property
    def n_partitions(self) -> int:
        return len(self.tps)

    @property
    def rf(self) -> IntArray:
        return np.diff(self.off)

    def counts(self, rep: IntArray | None = None) -> IntArray:
        """Replicas per broker index."""
        return np.bincount(self.rep if rep is None else rep, minlength=len(self.ids)).astype(np.int64)

    def leader_counts(self, rep: IntArray | None = None) -> IntArray:
        """Preferred leaders (first replicas) per broker index."""
        r = self.rep if rep is None else rep
        return np.bincount(r[self.off[:-1]], minlength=len(self.ids)).astype(np.int64)

    @functools.cached_property
    def band(self) -> tuple[IntArray, IntArray]:
        """Per broker index, the [lo, hi] its replica count is held to: the tightest band any plan meeting the
        rack rule can reach (:mod:`migrate.planner.reach`); (0, 0) for brokers that are not targets."""
        return replica_band(self.rf, self.target, self.rack, len(self.racks) if self.aware else 0)

    @functools.cached_property
    def partition_hash(self) -> npt.NDArray[np.uint64]:
        """A stable 64-bit hash of each (topic, partition): crc32 of the topic, mixed with the partition number
        (splitmix64's finalizer), so it is the same in every process and Python version."""
        topics = [t for t, _ in self.tps]
        crc = {t: zlib.crc32(t.encode()) for t in set(topics)}
        topic_crc = np.fromiter(map(crc.__getitem__, topics), dtype=np.uint64, count=len(topics))
        numbers = np.fromiter((p for _, p in self.tps), dtype=np.int64, count=len(self.tps)).astype(np.uint64)
        return mix64((topic_crc << np.uint64(32)) ^ numbers)


def count_moves(current: Mapping[TP, Sequence[int]], proposed: Mapping[TP, Sequence[int]]) -> int:
    """Replicas placed on a broker that did not hold that partition (the dict form of :func:`.check.moves`)."""
    return sum(len(set(proposed[tp]) - set(current.get(tp, ()))) for tp in proposed)


def unique(a: IntArray) -> IntArray:
    """``np.unique(a)`` by sorting: numpy 2's hash-based ``unique`` is tens of times slower on millions of ints."""
    return unique_counts(a)[0]


def unique_counts(a: IntArray) -> tuple[IntArray, IntArray]:
    """The sorted distinct values of ``a`` and how often each occurs."""
    s = np.sort(a)
    if len(s) == 0:
        return s, np.zeros(0, dtype=np.int64)
    first = np.ones(len(s), dtype=np.bool_)
    np.not_equal(s[1:], s[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    return s[starts], np.diff(np.append(starts, len(s)))


def mix64(x: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """splitmix64's finalizer: a bijection of uint64 that spreads every input bit over the output."""
    x = x.copy()
    x ^= x >> np.uint64(30)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return x


def index_layout(
    assignment: Mapping[TP, Sequence[int]], targets: Sequence[int], racks: Mapping[int, str | None], aware: bool
) -> Indexed:
    """The arrays of a layout; refuses empty replica lists and a broker listed twice in one partition (Kafka's
    tool refuses both)."""
    tps = sorted(assignment)
    lists = [assignment[tp] for tp in tps]
    rf = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
    if len(rf) and rf.min() == 0:
        t, p = tps[int(np.argmin(rf))]
        raise PlanRequestError(f"partition {t}-{p} has an empty replica list")
    off = np.zeros(len(lists) + 1, dtype=np.int64)
    np.cumsum(rf, out=off[1:])
    flat = np.fromiter(itertools.chain.from_iterable(lists), dtype=np.int64, count=int(off[-1]))
    target_ids = np.asarray(sorted(set(targets)), dtype=np.int64)
    ids, inverse = np.unique(np.concatenate([flat, target_ids]), return_inverse=True)
    rep = inverse[: len(flat)].astype(np.int64)
    part = np.repeat(np.arange(len(lists), dtype=np.int64), rf)
    key = part * len(ids) + rep
    key.sort()
    dup = np.flatnonzero(key[1:] == key[:-1])
    if len(dup):
        p, b = divmod(int(key[dup[0]]), len(ids))
        raise PlanRequestError(f"partition {tps[p][0]}-{tps[p][1]} lists broker {int(ids[b])} more than once")
    target = np.zeros(len(ids), dtype=np.bool_)
    target[np.searchsorted(ids, target_ids)] = True
    rack = np.full(len(ids), -1, dtype=np.int64)
    names: list[str] = []
    if aware:
        names = sorted({r for b in target_ids.tolist() if (r := racks.get(b)) is not None})
        pos = {r: i for i, r in enumerate(names)}
        for i in np.flatnonzero(target).tolist():
            name = racks.get(int(ids[i]))
            if name is not None:
                rack[i] = pos[name]
    return Indexed(tps, off, rep, part, ids, target, rack, names, aware)
