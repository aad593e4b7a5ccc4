"""The skew findings' balance bands, without Spark: Cruise Control's average ± 9 % around the cluster's average,
or around each rack's reachable average when the rack rule makes the cluster's unreachable."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping

from migrate.pipeline.bands import BAND, around, cluster_bands


def _flagged(
    counts: Mapping[int, int], rack: Mapping[int, str], bands: Mapping[str | None, tuple[int, int]]
) -> set[int]:
    return {b for b, n in counts.items() if not bands[rack[b]][0] <= n <= bands[rack[b]][1]}


def _even_placement(partitions: int, racks: dict[str, list[int]]) -> dict[int, int]:
    """Replicas per broker of a rack-aware placement with one replica of each partition per rack, dealt round
    robin within each rack (as balanced as the rack rule allows)."""
    counts: Counter[int] = Counter()
    for p in range(partitions):
        for members in racks.values():
            counts[members[p % len(members)]] += 1
    return dict(counts)


def test_around_is_the_average_plus_minus_nine_percent_floored_and_ceiled():
    assert BAND == 0.1 * 0.9
    assert around(100, 1) == (91, 110)
    assert around(1000, 3) == (303, 364)  # 333.3 * 0.91 = 303.3, 333.3 * 1.09 = 363.3
    assert around(3960, 11) == (math.floor(3960 * (1 - BAND) / 11), math.ceil(3960 * (1 + BAND) / 11))
    assert around(440, 1) == (400, 480)


def test_racks_of_3_4_4_with_rf_3_each_have_their_own_band():
    """Every rack holds one replica of each partition: 1320 per rack, 440 per broker of the rack of 3, 330 per
    broker of a rack of 4. The cluster-wide band (360 ± 9 %) would flag every broker of the small rack and
    those of the large ones too; each rack's own band flags none of a balanced placement."""
    racks = {"a": [1, 4, 7, 10], "b": [2, 5, 8, 11], "c": [3, 6, 9]}
    rack = {b: r for r, members in racks.items() for b in members}
    bands = cluster_bands({3: 1320}, {r: len(m) for r, m in racks.items()})
    assert bands is not None and bands.per_rack
    assert bands.replicas == {"a": (300, 360), "b": (300, 360), "c": (400, 480)}
    assert bands.leaders == around(1320, 11)  # leaders stay cluster-wide: 120 ± 9 %
    counts = _even_placement(1320, racks)
    assert set(counts.values()) == {330, 440}
    assert _flagged(counts, rack, bands.replicas) == set()
    cluster_wide = around(3960, 11)
    assert {b for b, n in counts.items() if not cluster_wide[0] <= n <= cluster_wide[1]} == {3, 6, 9}
    # A broker holding more than its rack's share is still skewed, and the rack-mate it took them from too.
    counts[3] += 60
    counts[6] -= 60
    assert _flagged(counts, rack, bands.replicas) == {3, 6}


def test_rf_above_the_racks_holds_each_rack_to_its_reachable_share():
    # RF 4 over racks of 1, 3 and 3: the single broker can hold one replica per partition, the rest share 3.
    bands = cluster_bands({4: 700}, {"solo": 1, "x": 3, "y": 3})
    assert bands is not None and bands.per_rack
    assert bands.replicas["solo"] == around(700, 1)
    assert bands.replicas["x"] == bands.replicas["y"] == around(2100, 6)


def test_rf_2_over_3_unequal_racks_keeps_the_cluster_wide_band():
    """RF below the number of racks: the cluster-wide average is reachable, so the band is today's T/N ± 9 %."""
    bands = cluster_bands({2: 1000}, {"a": 4, "b": 4, "c": 3})
    assert bands is not None and not bands.per_rack
    assert set(bands.replicas.values()) == {around(2000, 11)}
    assert bands.leaders == around(1000, 11)


def test_mixed_replication_factors_use_the_reachable_averages():
    """Racks of 1, 5 and 5: the RF-3 partitions put one replica of each on the one-broker rack (300, far above
    the cluster's average of 136), so the most even placement gives it none of the RF-2 partitions and the other
    racks share the remaining 1200 replicas: 120 per broker."""
    bands = cluster_bands({2: 300, 3: 300}, {"a": 1, "b": 5, "c": 5})
    assert bands is not None and bands.per_rack
    assert bands.replicas == {"a": around(300, 1), "b": around(120, 1), "c": around(120, 1)}
    assert bands.leaders == around(600, 11)


def test_a_broker_without_a_rack_means_the_cluster_wide_band():
    """Kafka's rack rule applies only when every broker has a rack: otherwise one band for all."""
    bands = cluster_bands({3: 1320}, {"a": 4, "b": 4, None: 3})
    assert bands is not None and not bands.per_rack
    assert bands.replicas == {"a": around(3960, 11), "b": around(3960, 11), None: around(3960, 11)}


def test_a_single_rack_or_no_racks_means_the_cluster_wide_band():
    one: list[dict[str | None, int]] = [{"only": 6}, {None: 6}]
    for sizes in one:
        bands = cluster_bands({3: 100, 1: 20}, sizes)
        assert bands is not None and not bands.per_rack
        assert list(bands.replicas.values()) == [around(320, 6)]
        assert bands.leaders == around(120, 6)


def test_equal_racks_keep_the_cluster_wide_band_exactly():
    bands = cluster_bands({3: 1000, 2: 17}, {"a": 2, "b": 2, "c": 2})
    assert bands is not None and not bands.per_rack
    assert set(bands.replicas.values()) == {around(3034, 6)}


def test_no_partition_or_no_broker_has_no_band():
    assert cluster_bands({}, {"a": 3, "b": 3}) is None
    assert cluster_bands({3: 10}, {}) is None
