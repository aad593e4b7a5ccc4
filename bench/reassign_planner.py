"""``--generate`` at fleet scale: the planner's per-topic scope (:mod:`migrate.planner.generate`) against Kafka's
calculateAssignment (the baseline) on the same clusters, side by side in one run: time ratio, replica moves of
each with the lower bound, and the spread of replicas per broker over all topics (max - min; each topic on its
own is balanced by both).

Scenarios: one broker decommissioned, and one broker added, on clusters placed by Kafka's own algorithm
(AdminUtils, a fixed seed). Rack-aware runs give every broker one of three racks.

    .venv/bin/python -m bench.reassign_planner [--partitions 20000 100000] [--brokers 50 100] [--rounds 3]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections import Counter
from collections.abc import Iterable, Sequence

from migrate.planner.generate import generate
from migrate.planner.model import count_moves
from zkmodel.placement import BrokerMetadata, assign_replicas_to_brokers, calculate_assignment


def cluster(
    partitions: int, brokers: int, topics: int, racks: bool
) -> tuple[dict[tuple[str, int], list[int]], list[BrokerMetadata]]:
    rng = random.Random(1)
    metas = [BrokerMetadata(b, f"r{b % 3}" if racks else None) for b in range(1, brokers + 1)]
    current: dict[tuple[str, int], list[int]] = {}
    for t in range(topics):
        for p, replicas in assign_replicas_to_brokers(metas, partitions // topics, 3, rng=rng).items():
            current[(f"topic-{t}", p)] = list(replicas)
    return current, metas


def run(partitions: int, brokers: int, rounds: int, scenario: str, racks: bool) -> None:
    current, metas = cluster(partitions, brokers, topics=max(1, partitions // 1000), racks=racks)
    listed = (
        metas[:-1] if scenario == "decommission" else [*metas, BrokerMetadata(brokers + 1, "r0" if racks else None)]
    )
    ours_s, kafka_s = [], []
    for _ in range(rounds):  # alternate so both see the same machine load
        t0 = time.perf_counter()
        kafka = calculate_assignment(current, listed, True, random.Random(2))
        t1 = time.perf_counter()
        ours = generate(current, [b.id for b in listed], {b.id: b.rack for b in listed}, True)
        t2 = time.perf_counter()
        kafka_s.append(t1 - t0)
        ours_s.append(t2 - t1)
    k, o = statistics.median(kafka_s), statistics.median(ours_s)
    print(
        f"{partitions:>7} partitions x RF 3, {brokers:>3} brokers, {scenario:<12} "
        f"racks={'yes' if racks else 'no ':<3}  "
        f"kafka {k:6.2f} s  ours {o:6.2f} s  ratio {o / k:5.2f}   moves: kafka {count_moves(current, kafka):>7}  "
        f"ours {ours.moves:>6}  bound {ours.lower_bound:>6}   spread: kafka {spread(kafka.values())}  "
        f"ours {spread(ours.assignment.values())}"
    )


def spread(lists: Iterable[Sequence[int]]) -> int:
    counts = Counter(b for replicas in lists for b in replicas)
    return max(counts.values()) - min(counts.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--partitions", type=int, nargs="+", default=[20000, 100000])
    parser.add_argument("--brokers", type=int, nargs="+", default=[50, 100])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    for partitions, brokers in zip(args.partitions, args.brokers, strict=True):
        for scenario in ("decommission", "add"):
            for racks in (False, True):
                run(partitions, brokers, args.rounds, scenario, racks)


if __name__ == "__main__":
    main()
