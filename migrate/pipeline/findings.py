"""Readiness findings and distribution per cluster, computed by Spark over the model tables.

Every check is a DataFrame of *items* (cluster, check, example: one row per affected znode, topic, partition or
broker); one aggregation counts them and keeps the first ten examples per check. Only those aggregates, the
per-broker and per-rack counts and the cluster totals reach the driver: a few rows per broker, never one per
partition. The checks' meaning (and why each matters) is in :mod:`migrate.pipeline.summary`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from migrate.pipeline.bands import ClusterBands, cluster_bands
from migrate.pipeline.summary import CHECKS, BrokerRow, ClusterSummary, Counts, Finding, RackRow

EXAMPLES = 10
#: The rack key of brokers without broker.rack (in the rack rows and when matching a broker to its band).
NO_RACK = "(none)"
UNITS = {
    "malformed_znode": "znodes",
    "topic_v1": "topics",
    "no_topic_id": "topics",
    "delete_marker": "topics",
    "replica_skew": "brokers",
    "leader_skew": "brokers",
}


def _items(t: dict[str, Any], per_broker: Any, band: Any) -> Any:
    """(cluster, check, example) for every check (``per_broker``: :func:`_broker_counts`; ``band``: the
    DataFrame of :func:`_band_frame`)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    brokers, topics, parts = t["brokers"], t["topics"], t["partitions"]
    tp = F.concat_ws("-", "topic", F.col("partition").cast("string"))

    def item(df: Any, check: str, example: Any) -> Any:
        return df.select("cluster", F.lit(check).alias("check"), example.cast("string").alias("example"))

    def broker_count(column: str, noun: str) -> Any:
        """A skewed broker's example: ``broker <id>: <count> <noun>``."""
        count = F.col(column).cast("string")
        return F.concat(F.lit("broker "), F.col("broker").cast("string"), F.lit(": "), count, F.lit(f" {noun}"))

    registered = brokers.select("cluster", "broker", "rack")
    # Per-replica rows with the broker's registration (null rack and registered=false when unregistered).
    replicas = (
        parts.where(F.col("replicas").isNotNull())
        .select("cluster", "topic", "partition", F.posexplode("replicas").alias("pos", "broker"))
        .join(registered.withColumn("registered", F.lit(True)), ["cluster", "broker"], "left")
        .fillna({"registered": False})
    )
    # min.insync.replicas: the topic's config, else the cluster default (/config/brokers/<default>), else 1.
    default_min_isr = (
        t["configs"]
        .where((F.col("entity_type") == "brokers") & (F.col("entity_name") == "<default>"))
        .select("cluster", F.col("config")["min.insync.replicas"].cast("int").alias("default_min_isr"))
    )
    min_isr = (
        parts.join(
            topics.select("cluster", "topic", F.col("config")["min.insync.replicas"].cast("int").alias("mi")),
            ["cluster", "topic"],
            "left",
        )
        .join(default_min_isr, ["cluster"], "left")
        .withColumn("min_isr", F.coalesce("mi", "default_min_isr", F.lit(1)))
    )
    leader_registered = parts.join(
        registered.select("cluster", F.col("broker").alias("leader"), F.lit(True).alias("leader_up")),
        ["cluster", "leader"],
        "left",
    )
    # Racks: only when every registered broker of the cluster has one (Kafka's rack-aware rule).
    rack_info = registered.groupBy("cluster").agg(
        F.countDistinct("rack").alias("racks"), F.sum(F.when(F.col("rack").isNull(), 1).otherwise(0)).alias("norack")
    )
    spread = (
        replicas.where(F.col("registered"))
        .groupBy("cluster", "topic", "partition")
        .agg(F.countDistinct("rack").alias("spread"), F.count("*").alias("rf"))
        .join(rack_info, ["cluster"])
        .where((F.col("norack") == 0) & (F.col("spread") < F.least("rf", "racks")))
    )
    # Each broker against its rack's band; brokers without a rack match the NO_RACK row. Unregistered brokers
    # (never skew-checked) may find no row at all: in a rack-aware cluster there is none for NO_RACK.
    bands = per_broker.withColumn("band_rack", F.coalesce("rack", F.lit(NO_RACK))).join(band, ["cluster", "band_rack"])
    has = F.col("replicas").isNotNull()
    replica_out = F.col("registered") & ((F.col("replicas") < F.col("rl")) | (F.col("replicas") > F.col("ru")))
    leader_out = F.col("registered") & ((F.col("preferred") < F.col("ll")) | (F.col("preferred") > F.col("lu")))
    checks = [
        item(t["malformed"], "malformed_znode", F.col("path")),
        item(topics.where(F.col("topic_version") == 1), "topic_v1", F.col("topic")),
        item(topics.where((F.col("topic_version") >= 2) & F.col("topic_id").isNull()), "no_topic_id", F.col("topic")),
        item(t["legacy_reassignments"], "pending_legacy_reassignment", tp),
        item(parts.where((F.size("adding") > 0) | (F.size("removing") > 0)), "api_reassignment", tp),
        item(t["delete_markers"], "delete_marker", F.col("topic")),
        item(
            leader_registered.where(has & (F.col("leader").isNull() | F.col("leader_up").isNull())),
            "offline_partition",
            tp,
        ),
        item(
            parts.where(has & F.col("isr").isNotNull() & (F.size("isr") < F.size("replicas"))), "under_replicated", tp
        ),
        item(min_isr.where(has & F.col("isr").isNotNull() & (F.size("isr") < F.col("min_isr"))), "under_min_isr", tp),
        item(
            replicas.where(~F.col("registered")).select("cluster", "topic", "partition").distinct(),
            "unregistered_broker_replica",
            tp,
        ),
        item(
            parts.where(has & (F.col("leader") >= 0) & (F.col("leader") != F.col("replicas")[0])),
            "preferred_leader_imbalance",
            tp,
        ),
        item(spread, "not_rack_aware", tp),
        item(bands.where(replica_out), "replica_skew", broker_count("replicas", "replicas")),
        item(bands.where(leader_out), "leader_skew", broker_count("preferred", "preferred leaders")),
    ]
    out = checks[0]
    for df in checks[1:]:
        out = out.unionByName(df)
    w = Window.partitionBy("cluster", "check").orderBy("example")
    return out.withColumn("n", F.row_number().over(w))


def _broker_counts(t: dict[str, Any]) -> Any:
    """(cluster, broker, rack, registered, replicas, preferred, leaders) for every broker that is registered or
    holds a replica."""
    from pyspark.sql import functions as F

    parts = t["partitions"].where(F.col("replicas").isNotNull())
    per = (
        parts.select("cluster", F.posexplode("replicas").alias("pos", "broker"))
        .groupBy("cluster", "broker")
        .agg(F.count("*").alias("replicas"), F.sum(F.when(F.col("pos") == 0, 1).otherwise(0)).alias("preferred"))
    )
    leaders = (
        t["partitions"]
        .where(F.col("leader") >= 0)
        .groupBy("cluster", F.col("leader").alias("broker"))
        .agg(F.count("*").alias("leaders"))
    )
    reg = t["brokers"].select("cluster", "broker", "rack", F.lit(True).alias("registered"))
    return (
        reg.join(per, ["cluster", "broker"], "full_outer")
        .join(leaders, ["cluster", "broker"], "left")
        .fillna({"registered": False, "replicas": 0, "preferred": 0, "leaders": 0})
    )


def _bands(t: dict[str, Any]) -> dict[str, ClusterBands]:
    """Per cluster the replica band of each rack and the preferred-leader band (:mod:`migrate.pipeline.bands`:
    Cruise Control's average ± 9 %, around each rack's reachable average when the rack rule forces one).

    The inputs are a few rows per cluster (partitions per replication factor, registered brokers per rack), so
    they are collected and the bands computed on the driver. Clusters without a partition or a registered broker
    have no band (no broker is skew-checked there)."""
    from pyspark.sql import functions as F

    parts = t["partitions"].where(F.col("replicas").isNotNull())
    rf_counts: dict[str, dict[int, int]] = {}
    for r in parts.groupBy("cluster", F.size("replicas").alias("rf")).agg(F.count("*").alias("n")).collect():
        rf_counts.setdefault(r["cluster"], {})[int(r["rf"])] = int(r["n"])
    rack_sizes: dict[str, dict[str | None, int]] = {}
    for r in t["brokers"].groupBy("cluster", "rack").agg(F.count("*").alias("n")).collect():
        rack_sizes.setdefault(r["cluster"], {})[r["rack"]] = int(r["n"])
    out: dict[str, ClusterBands] = {}
    for cluster, sizes in rack_sizes.items():
        bands = cluster_bands(rf_counts.get(cluster, {}), sizes)
        if bands is not None:
            out[cluster] = bands
    return out


def _by_rack_key(bands: ClusterBands) -> dict[str, tuple[int, int]]:
    """The replica band per rack key (NO_RACK for brokers without a rack). A rack literally named NO_RACK beside
    brokers without one shares their key; the cluster is then not rack-aware, so both have the one band."""
    return {NO_RACK if rack is None else rack: band for rack, band in bands.replicas.items()}


def _band_frame(spark: Any, bands: Mapping[str, ClusterBands]) -> Any:
    """(cluster, band_rack, rl, ru, ll, lu): a few rows per cluster, joined to the per-broker counts."""
    rows = [
        (cluster, key, lo, hi, *b.leaders)
        for cluster, b in sorted(bands.items())
        for key, (lo, hi) in sorted(_by_rack_key(b).items())
    ]
    return spark.createDataFrame(rows, "cluster string, band_rack string, rl int, ru int, ll int, lu int")


def _totals(t: dict[str, Any]) -> dict[str, dict[str, int]]:
    from pyspark.sql import functions as F

    def per_cluster(key: str, df: Any, agg: Any) -> Any:
        return df.groupBy("cluster").agg(agg.cast("long").alias("v")).select("cluster", F.lit(key).alias("key"), "v")

    # One job for all of them: on a cluster every collect is a round of task launches, and these are tiny.
    parts = t["partitions"]
    sources = [
        per_cluster("brokers", t["brokers"], F.count("*")),
        per_cluster("topics", t["topics"], F.count("*")),
        per_cluster("partitions", parts.where(F.col("replicas").isNotNull()), F.count("*")),
        per_cluster("replicas", parts, F.sum(F.size(F.coalesce("replicas", F.array())))),
        per_cluster("acls", t["acls"], F.count("*")),
        per_cluster("acl_resources", t["acls"], F.countDistinct("resource_type", "resource_name", "pattern_type")),
        per_cluster("quotas", t["quotas"], F.count("*")),
        per_cluster("malformed", t["malformed"], F.count("*")),
    ]
    union = sources[0]
    for df in sources[1:]:
        union = union.unionByName(df)
    counts: dict[str, dict[str, int]] = {}
    for r in union.collect():
        counts.setdefault(r["cluster"], {})[r["key"]] = int(r["v"] or 0)
    return counts


def summarize(tables: dict[str, Any], clusters: list[str]) -> list[ClusterSummary]:
    """A :class:`ClusterSummary` per cluster, in the order given (clusters with no rows at all included)."""
    # Per-broker counts feed both the skew checks and the driver's rows: computed once, kept (a few rows per
    # broker), instead of re-reading every partition for each use. The bands are already on the driver.
    per_broker = _broker_counts(tables).persist()
    try:
        return _summarize(tables, clusters, per_broker, _bands(tables))
    finally:
        per_broker.unpersist()


def _summarize(
    tables: dict[str, Any], clusters: list[str], per_broker: Any, bands: dict[str, ClusterBands]
) -> list[ClusterSummary]:
    from pyspark.sql import functions as F

    items = _items(tables, per_broker, _band_frame(tables["brokers"].sparkSession, bands))
    agg = items.groupBy("cluster", "check").agg(
        F.count("*").alias("count"),
        F.sort_array(F.collect_list(F.when(F.col("n") <= EXAMPLES, F.col("example")))).alias("examples"),
    )
    found: dict[tuple[str, str], tuple[int, list[str]]] = {
        (r["cluster"], r["check"]): (int(r["count"]), [e for e in r["examples"] if e is not None])
        for r in agg.collect()
    }
    brokers: dict[str, list[BrokerRow]] = {}
    for r in per_broker.orderBy("cluster", "broker").collect():
        brokers.setdefault(r["cluster"], []).append(
            BrokerRow(
                broker=int(r["broker"]),
                rack=r["rack"],
                registered=bool(r["registered"]),
                replicas=int(r["replicas"]),
                leaders=int(r["leaders"]),
                preferred=int(r["preferred"]),
            )
        )
    totals = _totals(tables)
    out: list[ClusterSummary] = []
    for cluster in clusters:
        c = totals.get(cluster, {})
        counts = Counts(
            brokers=c.get("brokers", 0),
            topics=c.get("topics", 0),
            partitions=c.get("partitions", 0),
            replicas=c.get("replicas", 0),
            acls=c.get("acls", 0),
            acl_resources=c.get("acl_resources", 0),
            quotas=c.get("quotas", 0),
            malformed=c.get("malformed", 0),
        )
        findings = []
        for check, severity, title, _why in CHECKS:
            count, examples = found.get((cluster, check), (0, []))
            findings.append(
                Finding(
                    check=check,
                    severity=severity,
                    title=title,
                    count=count,
                    unit=UNITS.get(check, "partitions"),
                    examples=examples,
                )
            )
        rows = brokers.get(cluster, [])
        band = bands.get(cluster)
        by_key = _by_rack_key(band) if band else {}
        racks: dict[str, RackRow] = {}
        for b in rows:
            if not b["registered"]:
                continue
            lo, hi = by_key.get(NO_RACK if b["rack"] is None else b["rack"], (0, 0))
            rack = racks.setdefault(
                b["rack"] or NO_RACK,
                RackRow(rack=b["rack"] or NO_RACK, brokers=0, replicas=0, leaders=0, band=[lo, hi]),
            )
            rack["brokers"] += 1
            rack["replicas"] += b["replicas"]
            rack["leaders"] += b["leaders"]
        spans = list(band.replicas.values()) if band else [(0, 0)]
        out.append(
            ClusterSummary(
                cluster=cluster,
                counts=counts,
                findings=findings,
                brokers=rows,
                racks=[racks[k] for k in sorted(racks)],
                replica_band=[min(lo for lo, _ in spans), max(hi for _, hi in spans)],
                leader_band=list(band.leaders) if band else [0, 0],
            )
        )
    return out
