"""The movement-minimal planner (``migrate.planner``) on one synthetic cluster: time, moves against the
lower bound, Kafka's ``--generate`` moves (and its time) on the same input, and the process's max RSS.

The layout is built in memory with numpy (not through ``cluster_znodes``, which is far too slow at 1M
partitions): each partition picks ``--rf`` distinct racks (weighted by rack size, so brokers end up nearly
balanced) and, within each rack, brokers in round robin. ``--skew S`` places a share S of the partitions on
the first third of each rack's brokers instead (still one replica per rack): a skewed but rack-valid cluster.
``--rack-violations V`` puts a share V of the partitions on random brokers regardless of racks.

    .venv/bin/python -m bench.pipeline_plan --partitions 1000000 --brokers 200 --racks 6 --operation decommission
    .venv/bin/python -m bench.pipeline_plan --partitions 1000000 --brokers 200 --racks 6 --operation rebalance
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np

from migrate.planner import Layout, plan
from migrate.planner.kafka import kafka_generate_moves


def distinct(rng: np.random.Generator, rows: int, k: int, pool: np.ndarray) -> np.ndarray:
    """``rows`` x ``k`` distinct integers, row i drawn from range(pool[i]) (redrawn where a row repeats one)."""
    out = (rng.random((rows, k)) * pool[:, None]).astype(np.int64)
    while True:
        s = np.sort(out, axis=1)
        bad = np.flatnonzero((s[:, 1:] == s[:, :-1]).any(axis=1))
        if not len(bad):
            return np.asarray(out)
        out[bad] = (rng.random((len(bad), k)) * pool[bad, None]).astype(np.int64)


def build(
    partitions: int, brokers: int, racks: int, rf: int, skew: float, violations: float, per_topic: int, seed: int
) -> Layout:
    rng = np.random.default_rng(seed)
    ids = np.arange(1, brokers + 1)
    n_racks = max(1, racks)
    rack = (ids - 1) % n_racks
    members = [ids[rack == r] for r in range(n_racks)]
    size = np.array([len(m) for m in members], dtype=np.float64)
    gumbel = np.log(size)[None, :] - np.log(-np.log(rng.random((partitions, n_racks))))
    chosen = np.argsort(-gumbel, axis=1)[:, :rf] if rf <= n_racks else None
    out = np.zeros((partitions, rf), dtype=np.int64)
    hot = rng.random(partitions) < skew
    if chosen is not None:
        flat_rack = chosen.ravel()
        flat_hot = np.repeat(hot, rf)
        placed = np.zeros(len(flat_rack), dtype=np.int64)
        for r in range(n_racks):
            for is_hot in (False, True):
                sel = np.flatnonzero((flat_rack == r) & (flat_hot == is_hot))
                pool = members[r][: max(1, len(members[r]) // 3)] if is_hot else members[r]
                placed[sel] = pool[(np.arange(len(sel)) + r) % len(pool)]
        out[:] = placed.reshape(partitions, rf)
    else:  # more replicas than racks: random distinct brokers, the skewed share from the first third
        out[:] = distinct(rng, partitions, rf, np.where(hot, max(rf, brokers // 3), brokers)) + 1
    bad = np.flatnonzero(rng.random(partitions) < violations)
    if len(bad):
        out[bad] = distinct(rng, len(bad), rf, np.full(len(bad), brokers)) + 1
    keys = [(f"topic-{p // per_topic:05d}", p % per_topic) for p in range(partitions)]
    assignment = dict(zip(keys, map(tuple, out.tolist()), strict=True))
    names = {int(b): (f"rack-{int(r)}" if racks else None) for b, r in zip(ids, rack, strict=True)}
    return Layout(names, assignment)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--partitions", type=int, default=100_000)
    parser.add_argument("--brokers", type=int, default=200)
    parser.add_argument("--racks", type=int, default=6, help="0: no racks")
    parser.add_argument(
        "--operation", choices=("rebalance", "decommission", "add-brokers", "fix-racks"), default="decommission"
    )
    parser.add_argument("--count", type=int, default=3, help="brokers to decommission or add")
    parser.add_argument("--rf", type=int, default=3)
    parser.add_argument("--skew", type=float, default=None, help="default 0.3 for rebalance, else 0")
    parser.add_argument("--rack-violations", type=float, default=0.0)
    parser.add_argument("--per-topic", type=int, default=1000, help="partitions per topic")
    parser.add_argument("--unaware", action="store_true", help="plan with rack_aware=False")
    parser.add_argument("--no-kafka", action="store_true", help="skip Kafka's --generate")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    skew = args.skew if args.skew is not None else (0.3 if args.operation == "rebalance" else 0.0)

    t0 = time.perf_counter()
    layout = build(
        args.partitions, args.brokers, args.racks, args.rf, skew, args.rack_violations, args.per_topic, args.seed
    )
    built = time.perf_counter() - t0
    kwargs: dict[str, object] = {}
    if args.operation == "decommission":
        kwargs["brokers"] = list(range(1, args.count + 1))
    elif args.operation == "add-brokers":
        new = list(range(args.brokers + 1, args.brokers + args.count + 1))
        kwargs["brokers"] = new
        if args.racks:
            kwargs["racks"] = {b: f"rack-{i % args.racks}" for i, b in enumerate(new)}
    elif args.operation == "fix-racks":
        kwargs["racks"] = {b: f"rack-{(b * 7) % max(1, args.racks)}" for b in range(1, args.count + 1)}
    result = plan(
        layout,
        args.operation,
        rack_aware=not args.unaware,
        compare_kafka=False,
        **kwargs,  # type: ignore[arg-type]
    )
    rss_plan = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"layout: {args.partitions:,} partitions, {args.brokers} brokers, {args.racks} racks, RF {args.rf}, "
        f"skew {skew}, rack violations {args.rack_violations} (built in {built:.1f} s)"
    )
    print(f"operation: {args.operation} {kwargs or ''}")
    before, after = list(result.before.values()), list(result.after.values())
    print(f"replicas per broker: before {min(before)}..{max(before)}, after {min(after)}..{max(after)}")
    lb = result.lower_bound
    ratio = result.moves / max(1, lb)
    print(f"plan: {result.seconds:.1f} s, moves {result.moves:,}, lower bound {lb:,}, ratio {ratio:.4f}")
    print(
        f"leader changes {result.leader_changes:,}, partitions changed {len(result.changed):,}, "
        f"violations {len(result.violations)}, warnings {result.warnings}"
    )
    for v in result.violations[:5]:
        print(f"  {v}")
    print(f"max RSS after plan: {rss_plan:.0f} MB")
    if not args.no_kafka:
        t1 = time.perf_counter()
        moves, refusal = kafka_generate_moves(
            layout.assignment, result.targets, result.racks, result.rack_aware, seed=args.seed
        )
        print(f"kafka --generate: {time.perf_counter() - t1:.1f} s, moves {moves if moves is not None else refusal}")
    print(f"max RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
