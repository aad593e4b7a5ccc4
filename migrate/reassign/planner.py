"""Plans for ``--generate``: Kafka's (``calculateAssignment``) and ours, which moves the minimum.

Kafka's ``--generate`` re-places every listed topic from scratch (AdminUtils.assignReplicasToBrokers with a
random start), so nearly every replica moves even when one broker leaves. Ours keeps the contract of
Kafka's proposal -- the same partitions, each with its replication factor, replicas only on the listed
brokers that exist, rack-aware when asked -- and its balance, per topic as Kafka places per topic:

* every broker holds the topic's replica count to within one of every other (``L = floor(T/N)`` to
  ``U = ceil(T/N)``, T replicas over N brokers), and so do preferred leaders (first replicas) where the
  replica sets allow it;
* with the fewest replica moves: a move is one replica placed on a broker that did not hold that
  partition. Replicas on brokers not in the list must move; beyond that only brokers above U give
  replicas up, and only brokers below L take more than those freed slots need. Without racks the result
  usually equals the lower bound ``max(forced + sum(max(0, c - U)), sum(max(0, L - c)))`` (tooling-facts
  §4), which is not always reachable (a broker short of replicas may already hold the partition whose
  slot is free); the unit tests compare with an exhaustive search on small clusters.
* a new replica takes the slot (list position) of the one it replaces, so kept replicas keep their order;
  preferred leaders are then balanced by reordering lists only (which moves no data), changing as few first
  replicas as possible.

Rack-aware (every listed broker has a rack): each partition must span ``min(RF, racks)`` racks, as
Kafka's rack-aware placement gives. Replicas breaking that rule move first; new replicas go to racks the
partition lacks. When RF equals the number of racks, every rack holds one replica of each partition, so
"balanced" means within one of the other brokers of the same rack (racks of different sizes cannot be
balanced against each other, in Kafka's placement either). Otherwise the rack rule wins and balance is as
close as the racks allow.

Ties go to the broker with the fewest of the topic's replicas, then the fewest over all listed topics, then
the lowest id: the output is deterministic.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable, Mapping, Sequence

from zkmodel.jvmorder import java_hashmap_order
from zkmodel.placement import BrokerMetadata, PlacementError, assign_replicas_to_brokers

Assignment = dict[tuple[str, int], list[int]]
TP = tuple[str, int]


class PlanError(ValueError):
    """A proposal cannot be made; ``message`` is Kafka's text where Kafka has one."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _by_topic(current: Mapping[TP, Sequence[int]]) -> dict[str, dict[int, list[int]]]:
    topics: dict[str, dict[int, list[int]]] = {}
    for (topic, p), replicas in current.items():
        if not replicas:
            raise PlanError(f"Partition {topic}-{p} has an empty replica list")
        if len(set(replicas)) != len(replicas):
            raise PlanError(f"Partition {topic}-{p} lists a replica more than once: {list(replicas)}")
        topics.setdefault(topic, {})[p] = list(replicas)
    return topics


def _rack_check(brokers: Sequence[BrokerMetadata], rack_aware: bool) -> bool:
    """Whether placement is rack-aware; Kafka's refusal when only some brokers have a rack."""
    with_rack = sum(1 for b in brokers if b.rack is not None)
    if rack_aware and with_rack not in (0, len(brokers)):
        raise PlanError(
            "Not all brokers have rack information. Add --disable-rack-aware in command line to make replica "
            "assignment without rack information."
        )
    return rack_aware and with_rack == len(brokers) and with_rack > 0


def count_moves(current: Mapping[TP, Sequence[int]], proposed: Mapping[TP, Sequence[int]]) -> int:
    """Replicas placed on a broker that did not hold that partition."""
    return sum(len(set(proposed[tp]) - set(current.get(tp, ()))) for tp in proposed)


def _targets(
    parts: Mapping[int, Sequence[int]], ids: Sequence[int], rack_of: Mapping[int, str | None], aware: bool
) -> tuple[dict[int, int], dict[int, int], bool]:
    """Each broker's (lower, upper) replica count for one topic, and whether they are binding.

    Without racks: floor/ceil of T/N for everyone. Rack-aware with every partition's RF equal to the number
    of racks, each rack holds exactly one replica of every partition, so its brokers share P replicas:
    floor/ceil of P/k for a rack of k brokers (brokers of a smaller rack carry more, as in Kafka's
    rack-aware placement). Any other rack-aware topic has no exact count to aim for: the global targets
    guide the placement but are not binding (the rack rule decides), so they give no lower bound.
    """
    total = sum(len(r) for r in parts.values())
    n = len(ids)
    lo = dict.fromkeys(ids, total // n)
    hi = dict.fromkeys(ids, -(-total // n))
    if not aware:
        return lo, hi, True
    racks: dict[str | None, list[int]] = {}
    for b in ids:
        racks.setdefault(rack_of[b], []).append(b)
    if all(len(r) == len(racks) for r in parts.values()):
        for members in racks.values():
            for b in members:
                lo[b], hi[b] = len(parts) // len(members), -(-len(parts) // len(members))
        return lo, hi, True
    return lo, hi, False


# -- Kafka's ----------------------------------------------------------------------------------------------------
def kafka_generate(
    current: Mapping[TP, Sequence[int]],
    brokers: Sequence[BrokerMetadata],
    rack_aware: bool,
    rng: random.Random | None = None,
) -> Assignment:
    """calculateAssignment: per topic (in the HashMap's order), AdminUtils over ``brokers`` with the topic's
    partition count and the replication factor of its first partition in that map's order."""
    aware = _rack_check(brokers, rack_aware)
    metas = [b if aware else BrokerMetadata(b.id, None) for b in brokers]
    topics = _by_topic(current)
    out: Assignment = {}
    for topic in java_hashmap_order(list(topics)):
        first = java_hashmap_order([(topic, p) for p in topics[topic]])[0]
        rf = len(topics[topic][first[1]])
        try:
            placed = assign_replicas_to_brokers(metas, len(topics[topic]), rf, rng=rng)
        except PlacementError as exc:
            raise PlanError(exc.message) from None
        for p, replicas in placed.items():
            out[(topic, p)] = list(replicas)
    return out


# -- ours ------------------------------------------------------------------------------------------------------
def lower_bound(current: Mapping[TP, Sequence[int]], brokers: Sequence[BrokerMetadata], rack_aware: bool) -> int:
    """A bound no valid balanced proposal can beat: per topic, the larger of (replicas that must leave
    unlisted brokers + the excess of listed brokers above their upper target) and (the shortfall of brokers
    below their lower target) -- targets from :func:`_targets`, only where they are binding; with racks, also
    per partition the racks it lacks (each move adds at most one rack)."""
    aware = _rack_check(brokers, rack_aware)
    ids = {b.id for b in brokers}
    rack_of = {b.id: b.rack for b in brokers}
    n_racks = len({b.rack for b in brokers})
    total = 0
    for parts in _by_topic(current).values():
        if not ids:
            return 0
        lo, hi, binding = _targets(parts, sorted(ids), rack_of, aware)
        counts = dict.fromkeys(ids, 0)
        forced = 0
        for replicas in parts.values():
            for r in replicas:
                if r in ids:
                    counts[r] += 1
                else:
                    forced += 1
        balance = forced
        if binding:
            balance = max(forced + sum(max(0, c - hi[b]) for b, c in counts.items()),
                          sum(max(0, lo[b] - c) for b, c in counts.items()))  # fmt: skip
        racks = 0
        if aware:
            for replicas in parts.values():
                kept = {rack_of[r] for r in replicas if r in ids}
                racks += max(0, min(len(replicas), n_racks) - len(kept))
        total += max(balance, racks)
    return total


def minimal_generate(
    current: Mapping[TP, Sequence[int]], brokers: Sequence[BrokerMetadata], rack_aware: bool
) -> Assignment:
    aware = _rack_check(brokers, rack_aware)
    topics = _by_topic(current)
    if not brokers:
        rf = max((len(r) for parts in topics.values() for r in parts.values()), default=1)
        raise PlanError(f"Replication factor: {rf} larger than available brokers: 0.")
    ids = sorted({b.id for b in brokers})
    rack_of = {b.id: (b.rack if aware else None) for b in brokers}
    cluster: dict[int, int] = dict.fromkeys(ids, 0)
    out: Assignment = {}
    for topic in sorted(topics, key=lambda t: t.encode("utf-16-be", "surrogatepass")):
        placed = _TopicPlan(topic, topics[topic], ids, rack_of, cluster).solve()
        for p, replicas in placed.items():
            out[(topic, p)] = replicas
            for r in replicas:
                cluster[r] += 1
    return out


class _TopicPlan:
    """One topic's placement: drop what must go, shed the excess, fill the slots, then balance leaders."""

    def __init__(
        self,
        topic: str,
        parts: Mapping[int, list[int]],
        ids: list[int],
        rack_of: Mapping[int, str | None],
        cluster: Mapping[int, int],
    ) -> None:
        self.topic = topic
        self.cur = parts
        self.ids = ids
        self.rack_of = rack_of
        self.cluster = cluster
        self.n_racks = len({rack_of[b] for b in ids})
        self.aware = any(rack_of[b] is not None for b in ids)
        self.new: dict[int, list[int | None]] = {}
        self.placed: set[tuple[int, int]] = set()  # (partition, slot) filled by us: free to re-place
        self.count: dict[int, int] = dict.fromkeys(ids, 0)
        self.lo: dict[int, int] = {}
        self.hi: dict[int, int] = {}

    # -- helpers
    def _rack_need(self, p: int) -> int:
        return min(len(self.cur[p]), self.n_racks) if self.aware else 0

    def _racks(self, p: int, skip: int | None = None) -> set[str | None]:
        return {self.rack_of[b] for i, b in enumerate(self.new[p]) if b is not None and i != skip}

    def _eligible(self, p: int, slot: int, b: int) -> bool:
        """May broker ``b`` take slot ``slot`` of partition ``p`` (not already there, rack rule kept)?"""
        others = [x for i, x in enumerate(self.new[p]) if i != slot and x is not None]
        if b in others:
            return False
        if self.aware:
            racks = self._racks(p, skip=slot)
            filled = len(others)
            # Still short of racks: a slot must bring a new rack unless the remaining slots can cover it.
            missing = self._rack_need(p) - len(racks)
            free_after = len(self.cur[p]) - filled - 1
            if missing > free_after and self.rack_of[b] in racks:
                return False
        return True

    def _key(self, b: int) -> tuple[int, int, int]:
        return self.count[b], self.cluster[b], b

    def _free(self, p: int, slot: int) -> None:
        b = self.new[p][slot]
        assert b is not None
        self.count[b] -= 1
        self.new[p][slot] = None

    def _put(self, p: int, slot: int, b: int) -> None:
        self.new[p][slot] = b
        self.count[b] += 1
        self.placed.add((p, slot))

    def _shed_one(self, b: int, floor: int) -> bool:
        """Free one of ``b``'s original replicas; False when it has none to give. Prefer a partition that a
        broker short of replicas is not in (it can take the slot), then one with no free slot yet (slots
        spread over partitions can go to more brokers), then a follower slot."""
        if self.count[b] <= floor:
            return False
        takers = [x for x in self.ids if x != b and self.count[x] < self.lo[x]] or [
            x for x in self.ids if x != b and self.count[x] < self.hi[x]
        ]
        best: tuple[tuple[int, int, int, int], int, int] | None = None
        for p in sorted(self.cur):
            crowded = sum(1 for x in self.new[p] if x is None)
            present = set(self.new[p])
            fits = 0 if any(x not in present for x in takers) else 1
            for slot, x in enumerate(self.new[p]):
                if x == b and (p, slot) not in self.placed:
                    rank = (fits, crowded, 0 if slot > 0 else 1, p)
                    if best is None or rank < best[0]:
                        best = (rank, p, slot)
        if best is None:
            return False
        self._free(best[1], best[2])
        return True

    # -- the plan
    def solve(self) -> dict[int, list[int]]:
        ids = set(self.ids)
        n = len(self.ids)
        for p in sorted(self.cur):
            rf = len(self.cur[p])
            if rf > n:
                raise PlanError(f"Replication factor: {rf} larger than available brokers: {n}.")
            self.new[p] = [b if b in ids else None for b in self.cur[p]]
            for b in self.new[p]:
                if b is not None:
                    self.count[b] += 1
            if self.aware:  # replicas sharing a rack beyond what the rack rule allows must move too
                extra = self._rack_need(p) - len(self._racks(p))
                kept: set[str | None] = set()
                for slot in range(rf):  # keep the first of each rack (leaders stay), free later duplicates
                    b = self.new[p][slot]
                    if b is None:
                        continue
                    if self.rack_of[b] in kept and extra > 0:
                        self._free(p, slot)
                        extra -= 1
                    else:
                        kept.add(self.rack_of[b])
        self.lo, self.hi, _binding = _targets(self.cur, self.ids, self.rack_of, self.aware)
        for b in self.ids:  # brokers above their upper target give up the excess
            while self.count[b] > self.hi[b] and self._shed_one(b, self.hi[b]):
                pass
        self._match_short()
        self._fill()
        self._repair()
        self._take_for_short()
        result = {p: [b for b in r if b is not None] for p, r in self.new.items()}
        return self._balance_leaders(result)

    def _match_short(self) -> None:
        """Give brokers below L the free slots they can take, as a bipartite matching: a greedy pass, then
        augmenting paths (breadth first) for the units left over -- a plain greedy fill can hand a short
        broker's only possible slot to someone else."""
        units = [b for b in self.ids for _ in range(max(0, self.lo[b] - self.count[b]))]
        slots = [(p, i) for p in sorted(self.new) for i, x in enumerate(self.new[p]) if x is None]
        if not units or not slots:
            return
        owner: dict[tuple[int, int], int] = {}  # slot -> broker
        taken: dict[int, set[int]] = {b: set() for b in self.ids}  # broker -> partitions matched

        free_in: dict[int, list[tuple[int, int]]] = {}
        for slot in slots:
            free_in.setdefault(slot[0], []).append(slot)

        def fits(b: int, slot: tuple[int, int]) -> bool:
            p = slot[0]
            if b in self.new[p] or p in taken[b] or not self._eligible(p, slot[1], b):
                return False
            if self.aware:  # the partition's other matched slots count toward its racks too
                racks = self._racks(p) | {self.rack_of[owner[o]] for o in free_in[p] if o != slot and o in owner}
                if self.rack_of[b] in racks and len(racks) < self._rack_need(p):
                    return False
            return True

        def assign(slot: tuple[int, int], b: int) -> None:
            if slot in owner:
                taken[owner[slot]].discard(slot[0])
            owner[slot] = b
            taken[b].add(slot[0])

        pointer = dict.fromkeys(self.ids, 0)
        left: list[int] = []
        for b in units:
            k = pointer[b]
            while k < len(slots) and (slots[k] in owner or not fits(b, slots[k])):
                k += 1
            pointer[b] = k + 1
            if k < len(slots):
                assign(slots[k], b)
            else:
                left.append(b)
        for b in left:  # augmenting path: b takes a slot whose holder moves on, ..., the last takes a free slot
            parent: dict[tuple[int, int], tuple[int, tuple[int, int] | None]] = {}
            queue: deque[tuple[int, tuple[int, int] | None]] = deque([(b, None)])
            end: tuple[int, int] | None = None
            while queue and end is None:
                x, via = queue.popleft()
                for slot in slots:
                    if slot in parent or not fits(x, slot):
                        continue
                    parent[slot] = (x, via)
                    if slot not in owner:
                        end = slot
                        break
                    queue.append((owner[slot], slot))
            while end is not None:
                x, via = parent[end]
                assign(end, x)
                end = via
        for (p, i), b in sorted(owner.items()):
            self._put(p, i, b)

    def _fill(self) -> None:
        for p in sorted(self.new):
            for slot in range(len(self.new[p])):
                if self.new[p][slot] is not None:
                    continue
                choices = [b for b in self.ids if self._eligible(p, slot, b)]
                under = [b for b in choices if self.count[b] < self.hi[b]]
                if under:
                    self._put(p, slot, min(under, key=self._key))
                    continue
                via = self._augment(p, slot, lambda b: self.count[b] < self.hi[b])
                if via is None:  # no way under the cap: the rack rule wins (or the topic cannot balance)
                    self._put(p, slot, min(choices, key=self._key))

    def _augment(self, p: int, slot: int, room: Callable[[int], bool]) -> int | None:
        """Fill (p, slot) with a broker x already at its cap by moving one of x's replicas that we placed to a
        broker with room (a breadth-first chain over our own placements, so no extra move is made)."""
        has_room = room
        start = [b for b in self.ids if self._eligible(p, slot, b)]
        parents: dict[int, tuple[int, int, int] | None] = {b: None for b in start}
        queue = deque(start)
        while queue:
            x = queue.popleft()
            for q, s in sorted(self.placed):
                if self.new[q][s] != x:
                    continue
                for y in self.ids:
                    if y in parents or not self._eligible(q, s, y):
                        continue
                    parents[y] = (x, q, s)
                    if has_room(y):
                        # Walk back: y takes (q, s), its old holder x takes the previous slot ... p's slot last.
                        node = y
                        while parents[node] is not None:
                            holder, qq, ss = parents[node]  # type: ignore[misc]
                            self._free(qq, ss)
                            self._put(qq, ss, node)
                            node = holder
                        self._put(p, slot, node)
                        return node
                    queue.append(y)
        return None

    def _repair(self) -> None:
        """Brokers left below L take one of our placements from a broker above L (no extra move)."""
        for _ in range(len(self.placed) + 1):
            short = [b for b in self.ids if self.count[b] < self.lo[b]]
            if not short:
                return
            d = min(short, key=self._key)
            found = next(
                ((q, s) for q, s in sorted(self.placed)
                 if (x := self.new[q][s]) is not None and self.count[x] > self.lo[x] and self._eligible(q, s, d)),
                None,
            )  # fmt: skip
            if found is None:
                return
            self._free(*found)
            self._put(*found, d)

    def _take_for_short(self) -> None:
        """Brokers still below their lower target once every freed slot is placed take replicas from the
        fullest brokers: one move each, which the lower bound counts (the shortfall exceeds what had to move
        anyway). A follower slot first, so preferred leaders stay."""
        if all(self.count[b] >= self.lo[b] for b in self.ids):
            return
        where: dict[int, list[tuple[int, int]]] = {b: [] for b in self.ids}
        for q in sorted(self.new):
            for s, x in enumerate(self.new[q]):
                if x is not None:
                    where[x].append((q, s))
        for b in where:
            where[b].sort(key=lambda qs: (qs[1] == 0, qs[0]))
        for _ in range(sum(len(r) for r in self.cur.values())):
            short = [b for b in self.ids if self.count[b] < self.lo[b]]
            if not short:
                return
            d = min(short, key=self._key)
            donors = sorted((x for x in self.ids if self.count[x] > self.lo[x]), key=lambda x: (-self.count[x], x))
            found = next(
                ((x, qs) for x in donors for qs in where[x] if self.new[qs[0]][qs[1]] == x and self._eligible(*qs, d)),
                None,
            )
            if found is None:
                return
            x, (q, s) = found
            where[x].remove((q, s))
            self._free(q, s)
            self._put(q, s, d)
            where[d].append((q, s))

    def _balance_leaders(self, result: dict[int, list[int]]) -> dict[int, list[int]]:
        """Reorder replica lists so each broker leads floor..ceil(P/N) of the topic's partitions where the
        replica sets allow, by shortest chains of leader swaps (few first replicas change)."""
        n = len(self.ids)
        parts = sorted(result)
        top, bottom = -(-len(parts) // n), len(parts) // n
        leads: dict[int, int] = dict.fromkeys(self.ids, 0)
        for p in parts:
            leads[result[p][0]] += 1

        def shift(src_ok: Callable[[int], bool], dst_ok: Callable[[int], bool]) -> bool:
            """Move one leadership along a chain from a broker matching src_ok to one matching dst_ok."""
            sources = [b for b in self.ids if src_ok(b)]
            parent: dict[int, tuple[int, int] | None] = {b: None for b in sources}
            queue = deque(sources)
            while queue:
                a = queue.popleft()
                for p in parts:
                    if result[p][0] != a:
                        continue
                    for b in result[p][1:]:
                        if b in parent:
                            continue
                        parent[b] = (a, p)
                        if dst_ok(b):
                            node = b
                            while parent[node] is not None:
                                prev, pp = parent[node]  # type: ignore[misc]
                                reps = result[pp]
                                reps.remove(node)
                                reps.insert(0, node)
                                leads[node] += 1
                                leads[prev] -= 1
                                node = prev
                            return True
                        queue.append(b)
            return False

        for _ in range(len(parts) * 2 + 1):
            over = [b for b in self.ids if leads[b] > top]
            if over and shift(lambda b: leads[b] > top, lambda b: leads[b] < top):
                continue
            under = [b for b in self.ids if leads[b] < bottom]
            if under and shift(lambda b: leads[b] > bottom, lambda b: leads[b] < bottom):
                continue
            break
        return result
