"""Decoding snapshot rows into typed records, on the executors, with zkmodel's decoders (no second parser).

One wide record type for every kind of znode, because a Spark map emits one schema: each record fills the
columns of its ``kind`` and leaves the rest null. A topic znode becomes one ``topic`` record and one
``assignment`` record per partition; an ACL znode one ``acl`` record per entry; a legacy reassignment one record
per partition. A znode zkmodel rejects becomes a ``malformed`` record carrying the decoder's reason, so one bad
znode in a foreign cluster never fails the job (and the report can name it).

:func:`decode_znode_records` is plain Python (unit-tested without Spark); :func:`decode_arrow` wraps it for
``DataFrame.mapInArrow``, building Arrow columns directly (no pandas in between).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from zkmodel.admin import PartitionReassignmentZnode
from zkmodel.brokers import BrokerRegistration
from zkmodel.configs import EntityConfig
from zkmodel.errors import ZnodeFormatError
from zkmodel.kafka_acls import AclNode
from zkmodel.registry import NULL_IS_EMPTY, decode_znode
from zkmodel.topics import PartitionState, TopicAssignment

#: (column, Spark SQL type) of a decoded record, in order.
COLUMNS: tuple[tuple[str, str], ...] = (
    ("cluster", "string"),
    ("kind", "string"),
    ("path", "string"),
    ("error", "string"),
    ("broker", "int"),
    ("rack", "string"),
    ("endpoints", "array<string>"),
    ("reg_version", "int"),
    ("topic", "string"),
    ("partition", "int"),
    ("topic_id", "string"),
    ("topic_version", "int"),
    ("partition_count", "int"),
    ("replicas", "array<int>"),
    ("adding", "array<int>"),
    ("removing", "array<int>"),
    ("leader", "int"),
    ("isr", "array<int>"),
    ("leader_epoch", "int"),
    ("controller_epoch", "int"),
    ("entity_type", "string"),
    ("entity_name", "string"),
    ("config", "map<string,string>"),
    ("resource_type", "string"),
    ("resource_name", "string"),
    ("pattern_type", "string"),
    ("principal", "string"),
    ("permission", "string"),
    ("operation", "string"),
    ("host", "string"),
)
NAMES = tuple(name for name, _ in COLUMNS)
DDL = ", ".join(f"{name} {kind}" for name, kind in COLUMNS)

#: Structural znodes with nothing to decode and nothing to report, dropped in the JVM before any Python
#: worker sees them (half the rows of a large cluster: every partition's own znode and partitions parent).
STRUCTURAL = r"^/brokers/topics/[^/]+/partitions(/[0-9]+)?$"

Record = dict[str, Any]


def _components(path: str) -> list[str]:
    return path.strip("/").split("/")


def _config_entity(path: str) -> tuple[str, str]:
    parts = _components(path)  # config, <type>, <name> or config, users, <u>, clients, <c>
    if len(parts) == 5:
        return "users/clients", f"{parts[2]}/{parts[4]}"
    return parts[1], parts[2]


def decode_znode_records(cluster: str, path: str, data: bytes | None) -> list[Record]:
    """The records of one znode (none for znodes the pipeline does not model)."""
    if path.startswith("/admin/delete_topics/") and path.count("/") == 3:
        return [{"cluster": cluster, "kind": "delete_marker", "path": path, "topic": _components(path)[2]}]
    if data is None and path in NULL_IS_EMPTY:
        return []
    try:
        value = decode_znode(path, data)
    except ZnodeFormatError as exc:
        return [{"cluster": cluster, "kind": "malformed", "path": path, "error": exc.reason}]
    base: Record = {"cluster": cluster, "path": path}
    if isinstance(value, BrokerRegistration):
        eps = [f"{e.listener}://{e.host}:{e.port}" for e in value.endpoints]
        return [
            {
                **base,
                "kind": "broker",
                "broker": int(_components(path)[2]),
                "rack": value.rack,
                "endpoints": eps,
                "reg_version": value.version,
            }
        ]
    if isinstance(value, TopicAssignment):
        topic = _components(path)[2]
        out = [
            {
                **base,
                "kind": "topic",
                "topic": topic,
                "topic_id": value.topic_id,
                "topic_version": value.version,
                "partition_count": len(value.partitions),
            }
        ]
        for p, replicas in value.partitions.items():
            out.append(
                {
                    **base,
                    "kind": "assignment",
                    "topic": topic,
                    "partition": p,
                    "replicas": list(replicas),
                    "adding": list(value.adding_replicas.get(p, ())),
                    "removing": list(value.removing_replicas.get(p, ())),
                }
            )
        return out
    if isinstance(value, PartitionState):
        parts = _components(path)
        return [
            {
                **base,
                "kind": "state",
                "topic": parts[2],
                "partition": int(parts[4]),
                "leader": value.leader,
                "isr": list(value.isr),
                "leader_epoch": value.leader_epoch,
                "controller_epoch": value.controller_epoch,
            }
        ]
    if isinstance(value, EntityConfig):
        entity_type, name = _config_entity(path)
        return [
            {**base, "kind": "config", "entity_type": entity_type, "entity_name": name, "config": dict(value.config)}
        ]
    if isinstance(value, AclNode):
        parts = _components(path)
        pattern = "LITERAL" if parts[0] == "kafka-acl" else parts[1].upper()
        rtype, rname = parts[-2], parts[-1]
        return [
            {
                **base,
                "kind": "acl",
                "resource_type": rtype,
                "resource_name": rname,
                "pattern_type": pattern,
                "principal": e.principal,
                "permission": e.permission_type.pascal,
                "operation": e.operation.pascal,
                "host": e.host,
            }
            for e in value.acls
        ]
    if isinstance(value, PartitionReassignmentZnode):
        return [
            {
                **base,
                "kind": "legacy_reassignment",
                "topic": tp.topic,
                "partition": tp.partition,
                "replicas": list(replicas),
            }
            for tp, replicas in value.partitions
        ]
    return []


def _arrow_schema() -> Any:
    import pyarrow as pa

    types = {
        "string": pa.string(),
        "int": pa.int32(),
        "array<string>": pa.list_(pa.string()),
        "array<int>": pa.list_(pa.int32()),
        "map<string,string>": pa.map_(pa.string(), pa.string()),
    }
    return pa.schema([(name, types[kind]) for name, kind in COLUMNS])


def decode_arrow(batches: Iterator[Any]) -> Iterator[Any]:
    """``mapInArrow`` body: batches of (cluster, path, data, bad) in, batches of decoded records out."""
    import pyarrow as pa

    schema = _arrow_schema()
    for batch in batches:
        columns: dict[str, list[Any]] = {name: [] for name in NAMES}
        clusters = batch.column("cluster").to_pylist()
        paths = batch.column("path").to_pylist()
        datas = batch.column("data").to_pylist()
        bads = batch.column("bad").to_pylist()
        for cluster, path, data, bad in zip(clusters, paths, datas, bads, strict=True):
            records = (
                [{"cluster": cluster, "kind": "malformed", "path": path, "error": bad}]
                if bad is not None
                else decode_znode_records(cluster, path, data)
            )
            for record in records:
                for name in NAMES:
                    value = record.get(name)
                    if name == "config" and value is not None:
                        value = list(value.items())
                    columns[name].append(value)
        yield pa.RecordBatch.from_pydict(columns, schema=schema)
