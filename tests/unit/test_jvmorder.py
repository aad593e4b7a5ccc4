"""JVM hash primitives behind byte-identical znodes."""

from zkmodel.jvmorder import (
    java_hashmap_order,
    java_properties_order,
    java_string_hash,
    scala_immutable_map_order,
    scala_mutable_hashmap_order,
)


def test_java_string_hash_known_values() -> None:
    assert java_string_hash("") == 0
    assert java_string_hash("a") == 97
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -(2**31)  # the classic Integer.MIN_VALUE string
    assert java_string_hash("\U0001f600") == 0xD83D * 31 + 0xDE00  # UTF-16 surrogate pair


def test_small_scala_maps_keep_insertion_order() -> None:
    assert scala_immutable_map_order(["version", "brokerid", "timestamp", "kraftControllerEpoch"]) == [
        "version",
        "brokerid",
        "timestamp",
        "kraftControllerEpoch",
    ]


def test_champ_order_does_not_depend_on_insertion_order() -> None:
    keys = ["version", "leader", "leader_epoch", "controller_epoch", "isr"]
    assert scala_immutable_map_order(keys) == scala_immutable_map_order(list(reversed(keys)))


def test_scala_mutable_map_grows_at_three_quarters() -> None:
    # 16 buckets hold 11 keys; the 12th insert doubles the table, which moves "11" to the front.
    assert scala_mutable_hashmap_order([str(i) for i in range(11)])[-1] == "10"
    assert scala_mutable_hashmap_order([str(i) for i in range(12)])[0] == "11"


def test_java_hashmap_keeps_insertion_order_within_a_bucket() -> None:
    # "Aa" and "BB" have the same String.hashCode, so they share a bucket in insertion order.
    assert java_string_hash("Aa") == java_string_hash("BB")
    assert java_hashmap_order(["Aa", "BB"]) == ["Aa", "BB"]
    assert java_hashmap_order(["BB", "Aa"]) == ["BB", "Aa"]


def test_properties_order_depends_on_insertion_only_within_bins() -> None:
    forward = java_properties_order(["cleanup.policy", "min.insync.replicas", "segment.bytes", "retention.ms"])
    assert forward == ["cleanup.policy", "min.insync.replicas", "segment.bytes", "retention.ms"]
    backward = java_properties_order(["retention.ms", "segment.bytes", "min.insync.replicas", "cleanup.policy"])
    assert backward == ["cleanup.policy", "min.insync.replicas", "retention.ms", "segment.bytes"]


def test_properties_resize_keeps_every_key_once() -> None:
    keys = [f"k{i}" for i in range(40)]
    ordered = java_properties_order(keys)
    assert sorted(ordered) == sorted(keys) and len(ordered) == 40
