"""The balance bands the skew findings hold brokers to, computed on the driver from a few numbers per cluster.

A broker is skewed when its count is outside Cruise Control's band, average ± 9 % (floored and ceiled): Kafka
places each topic on its own, so a healthy cluster's brokers differ by a few replicas, and a finding must mean
something is skewed. *Which* average depends on the racks. When every registered broker has a rack and there
are at least two racks, the rack rule may make the cluster-wide average T/N unreachable: with a replication
factor at least the number of racks every rack holds one replica of every partition, so a rack of 3 brokers
carries P/3 per broker and a rack of 4 P/4, whatever any plan does. Each broker is then held to its own rack's
reachable average (:func:`migrate.planner.reach.rack_averages`, the most even per-rack averages any rack-valid
placement reaches: T/N for every rack whenever the cluster-wide band is reachable, so nothing changes there).

Leaders need no such band (a partition may be led from any rack holding one of its replicas; see
:mod:`migrate.planner.reach`): the preferred-leader band is always the cluster's, P/N ± 9 %.

Only the replication factors (how many partitions of each) and the rack sizes matter, so the inputs are a few
rows per cluster whatever its size.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

from migrate.planner.reach import rack_averages

#: Cruise Control's default replica/leader balance band: threshold 1.1 times the 0.9 balance margin.
BAND = 0.1 * 0.9


@dataclass(frozen=True)
class ClusterBands:
    #: Per rack (None: brokers without broker.rack) the [lo, hi] replicas each of its registered brokers is
    #: held to. Every rack has the cluster-wide band unless the rack rule forces per-rack averages.
    replicas: dict[str | None, tuple[int, int]]
    #: The preferred-leader band, cluster-wide.
    leaders: tuple[int, int]
    #: Whether each broker is held to its rack's reachable average rather than the cluster's (the rack rule
    #: applied and at least one rack's average differs from T/N).
    per_rack: bool


def around(numerator: int, denominator: int) -> tuple[int, int]:
    """average ± :data:`BAND` for the average ``numerator / denominator``: the low end floored, the high end
    ceiled, computed in floating point as ``floor(numerator * (1 - BAND) / denominator)`` (the same arithmetic
    for the cluster-wide band whether or not racks apply)."""
    return (
        math.floor(numerator * (1 - BAND) / denominator),
        math.ceil(numerator * (1 + BAND) / denominator),
    )


def cluster_bands(rf_counts: Mapping[int, int], rack_sizes: Mapping[str | None, int]) -> ClusterBands | None:
    """The bands of one cluster: ``rf_counts[r]`` partitions of replication factor r (partitions with a replica
    list; every replica counted, registered broker or not), ``rack_sizes[rack]`` registered brokers in each rack
    (None for brokers without a rack). None when the cluster has no partition or no registered broker (there is
    nothing to hold a broker to)."""
    partitions = sum(rf_counts.values())
    total = sum(r * n for r, n in rf_counts.items())
    brokers = sum(rack_sizes.values())
    if partitions <= 0 or brokers <= 0:
        return None
    cluster_wide = around(total, brokers)
    leaders = around(partitions, brokers)
    names = sorted(r for r in rack_sizes if r is not None)
    averages = None
    if None not in rack_sizes and len(names) >= 2:
        averages = rack_averages({r: n for r, n in rf_counts.items() if r > 0}, [rack_sizes[r] for r in names])
    mean = Fraction(total, brokers)
    if averages is None or all(a == mean for a in averages):
        return ClusterBands({r: cluster_wide for r in rack_sizes}, leaders, per_rack=False)
    replicas: dict[str | None, tuple[int, int]] = {
        r: cluster_wide if a == mean else around(a.numerator, a.denominator)
        for r, a in zip(names, averages, strict=True)
    }
    return ClusterBands(replicas, leaders, per_rack=True)
