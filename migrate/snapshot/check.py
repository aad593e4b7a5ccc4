"""``snapshot check``: every Kafka znode of a snapshot (export or parse output) decoded with zkmodel, and what
would block a bridge upgrade reported.

Blocking: a znode Kafka's code would refuse to read (path and reason; ACL nodes included), a topic without a
topic id (Kafka assigns them from IBP 2.8 on; the bridge and a later KRaft migration need them), a partition
whose replicas name a broker that is not registered, a pending legacy ``/admin/reassign_partitions`` request,
a topic still marked for deletion. Reported but not blocking: topic znodes still at version 1 (Kafka rewrites
them on the next change).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from zkmodel import paths
from zkmodel.errors import ZnodeFormatError
from zkmodel.registry import NULL_IS_EMPTY, decode_znode
from zkmodel.topics import TopicAssignment


@dataclass(frozen=True)
class Finding:
    kind: str
    path: str
    detail: str
    blocking: bool


def detect_chroot(all_paths: Iterable[str]) -> str:
    """The prefix under which Kafka's tree lives ("" when ``/brokers`` is at the root): the parent of the one
    ``.../brokers/ids`` or ``.../brokers/topics`` there is."""
    roots = {p.rsplit("/brokers/", 1)[0] for p in all_paths if p.endswith(("/brokers/ids", "/brokers/topics"))}
    return roots.pop() if len(roots) == 1 else ""


def check_rows(rows: Iterable[Mapping[str, Any]], chroot: str | None = None) -> list[Finding]:
    by_path = {str(r["path"]): r for r in rows}
    prefix = detect_chroot(by_path) if chroot is None else chroot.rstrip("/")
    kafka = {p[len(prefix) :] or "/": r for p, r in by_path.items() if p == prefix or p.startswith(prefix + "/")}
    findings: list[Finding] = []
    decoded: dict[str, Any] = {}
    for path in sorted(kafka):
        if kafka[path]["data"] is None and path in NULL_IS_EMPTY:
            continue
        try:
            decoded[path] = decode_znode(path, kafka[path]["data"])
        except ZnodeFormatError as exc:
            findings.append(Finding("malformed", prefix + path, exc.reason, True))
    ids = (p.rsplit("/", 1)[1] for p in kafka if p.startswith(paths.BROKER_IDS + "/"))
    brokers = {int(i) for i in ids if i.isdigit()}
    for path, value in sorted(decoded.items()):
        if not isinstance(value, TopicAssignment):
            continue
        topic = path.rsplit("/", 1)[1]
        if value.version == 1:
            findings.append(Finding("topic_znode_v1", prefix + path, "topic znode still at version 1", False))
        if not value.topic_id:
            findings.append(Finding("no_topic_id", prefix + path, f"topic {topic} has no topic id", True))
        for partition, replicas in sorted(value.partitions.items()):
            missing = [b for b in replicas if b not in brokers]
            if missing:
                names = ",".join(map(str, missing))
                detail = f"partition {topic}-{partition} names broker(s) {names} that are not registered"
                findings.append(Finding("unregistered_broker", prefix + path, detail, True))
    if paths.REASSIGN_PARTITIONS in kafka:
        value = decoded.get(paths.REASSIGN_PARTITIONS)
        count = len(value.partitions) if value is not None else 0
        findings.append(
            Finding(
                "pending_reassignment",
                prefix + paths.REASSIGN_PARTITIONS,
                f"a legacy reassignment request of {count} partition(s) is pending",
                True,
            )
        )
    for path in sorted(kafka):
        if path.startswith(paths.DELETE_TOPICS + "/"):
            findings.append(
                Finding("delete_marker", prefix + path, f"topic {path.rsplit('/', 1)[1]} is marked for deletion", True)
            )
    return findings
