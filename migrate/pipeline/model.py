"""The model tables: decoded records split by kind and joined into what an operator asks about.

Written as Parquet partitioned by cluster (``<dir>/<table>/cluster=<name>/``), each with a fixed schema (below)
so a later run can read them back with ``--model`` instead of decoding the snapshots again, and so other tools
(Spark SQL, DuckDB, pandas) can query a fleet without knowing any znode format.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

#: table -> Spark SQL schema (``cluster`` first; Parquet keeps it in the directory names).
TABLES: dict[str, str] = {
    "brokers": "cluster string, broker int, rack string, endpoints array<string>, reg_version int",
    "topics": "cluster string, topic string, topic_id string, topic_version int, partition_count int, "
    "config map<string,string>",
    "partitions": "cluster string, topic string, partition int, replicas array<int>, adding array<int>, "
    "removing array<int>, leader int, isr array<int>, leader_epoch int, controller_epoch int",
    "configs": "cluster string, entity_type string, entity_name string, config map<string,string>",
    "acls": "cluster string, resource_type string, resource_name string, pattern_type string, principal string, "
    "permission string, operation string, host string",
    "quotas": "cluster string, entity_type string, entity_name string, config map<string,string>",
    "legacy_reassignments": "cluster string, topic string, partition int, replicas array<int>",
    "delete_markers": "cluster string, topic string",
    "malformed": "cluster string, path string, error string",
}

#: Kafka's quota keys (DynamicConfig.QuotaConfigs): an entity config holding one of these is a quota.
QUOTA_KEYS = (
    "producer_byte_rate",
    "consumer_byte_rate",
    "request_percentage",
    "controller_mutation_rate",
    "connection_creation_rate",
)
QUOTA_ENTITIES = ("users", "clients", "ips", "users/clients")


def _columns(ddl: str) -> list[str]:
    return [part.strip().split(" ", 1)[0] for part in ddl.split(",") if " " in part.strip()]


def _shape(df: Any, table: str) -> Any:
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    schema = StructType.fromDDL(TABLES[table])
    assert isinstance(schema, StructType)
    return df.select([F.col(f.name).cast(f.dataType).alias(f.name) for f in schema.fields])


def build(decoded: Any) -> dict[str, Any]:
    """Every model table as a DataFrame over the decoded records (lazy: nothing runs until written)."""
    from pyspark.sql import functions as F

    def kind(name: str) -> Any:
        return decoded.where(F.col("kind") == name)

    configs = kind("config")
    topic_configs = configs.where(F.col("entity_type") == "topics").select(
        "cluster", F.col("entity_name").alias("topic"), "config"
    )
    topics = kind("topic").drop("config").join(topic_configs, ["cluster", "topic"], "left")
    keys = ["cluster", "topic", "partition"]
    assignment = kind("assignment").select(*keys, "replicas", "adding", "removing")
    state = kind("state").select(*keys, "leader", "isr", "leader_epoch", "controller_epoch")
    has_quota = F.exists(F.map_keys("config"), lambda k: k.isin(*QUOTA_KEYS))
    quotas = configs.where(F.col("entity_type").isin(*QUOTA_ENTITIES) & has_quota)
    frames = {
        "brokers": kind("broker"),
        "topics": topics,
        "partitions": assignment.join(state, keys, "full_outer"),
        "configs": configs,
        "acls": kind("acl"),
        "quotas": quotas,
        "legacy_reassignments": kind("legacy_reassignment"),
        "delete_markers": kind("delete_marker"),
        "malformed": kind("malformed"),
    }
    return {name: _shape(df, name) for name, df in frames.items()}


def write(tables: dict[str, Any], directory: str | Path) -> None:
    """Each table under ``directory/<table>``, partitioned by cluster (replacing what a previous run left)."""
    for name, df in tables.items():
        df.write.mode("overwrite").partitionBy("cluster").parquet(str(Path(directory) / name))


def read(spark: Any, directory: str | Path) -> dict[str, Any]:
    """Tables written by :func:`write` (schemas fixed here, so an empty table reads as empty, not an error)."""
    from pyspark.sql.types import StructType

    out = {}
    for name, ddl in TABLES.items():
        path = Path(directory) / name
        if not path.is_dir():
            raise FileNotFoundError(f"{path}: no '{name}' model table here (write it with 'pipeline model')")
        out[name] = spark.read.schema(StructType.fromDDL(ddl)).parquet(str(path)).select(*_columns(ddl))
    return out
