"""Whether the sides of :mod:`bench.bulk_writes` wrote the same znodes, and deleting a side's chroot between
rounds. The first round checks that every side holds the same znodes: every path under ``/brokers/topics`` and
``/config/topics`` on each chroot, configs byte for byte, topic znodes and states by shape (replica counts,
epochs, version, topic id present; the placement itself is random in the controller, as in Kafka).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson
from kazoo.client import KazooClient, TransactionRequest

from bench.raw_writes import commit_pipelined
from controller.zk.bulk_read import read_children, read_data
from zkmodel import paths


def list_tree(client: KazooClient, top: str) -> list[str]:
    """Every znode under ``top`` (not ``top`` itself), parents before children; multiRead per level."""
    out: list[str] = []
    level = [top]
    while level:
        found = read_children(client, level, timeout=300)
        level = [f"{p.rstrip('/')}/{c}" for p in level for c in found[p] or ()]
        out.extend(level)
    return out


def shape(path: str, data: bytes | None) -> Any:
    """What must agree between the sides: placement and topic ids are each side's own."""
    if data is None:
        return None
    if path.startswith("/brokers/topics/") and path.count("/") == 3:
        obj = orjson.loads(data)
        return (
            len(data),
            obj["version"],
            "topic_id" in obj,
            {p: len(r) for p, r in obj["partitions"].items()},
            {p: len(r) for p, r in obj.get("adding_replicas", {}).items()},
            {p: len(r) for p, r in obj.get("removing_replicas", {}).items()},
        )
    if path.endswith("/state"):
        obj = orjson.loads(data)
        rest = {k: v for k, v in obj.items() if k not in ("leader", "isr")}
        return len(data), list(obj), rest, len(obj["isr"]), obj["leader"] in obj["isr"]
    return data


def compare(clients: dict[str, KazooClient]) -> list[str]:
    """Differences between the sides' topic trees, each against the first; empty when they hold the same
    znodes."""
    problems: list[str] = []
    trees = {}
    for side, client in clients.items():
        znodes = [*list_tree(client, paths.BROKER_TOPICS), *list_tree(client, "/config/topics")]
        found = read_data(client, znodes, timeout=300)
        trees[side] = {p: shape(p, r[0]) if r else "missing" for p, r in found.items()}
    first, *others = list(trees)
    a = trees[first]
    for other in others:
        b = trees[other]
        only_a, only_b = sorted(a.keys() - b.keys()), sorted(b.keys() - a.keys())
        if only_a:
            problems.append(f"{len(only_a)} znodes only in {first} (not {other}), e.g. {only_a[:3]}")
        if only_b:
            problems.append(f"{len(only_b)} znodes only in {other}, e.g. {only_b[:3]}")
        differ = [p for p in a.keys() & b.keys() if a[p] != b[p]]
        if differ:
            p = sorted(differ)[0]
            problems.append(f"{len(differ)} znodes differ, e.g. {p}: {first} {a[p]!r} vs {other} {b[p]!r}")
    for side, client in clients.items():
        changes = read_children(client, [paths.CONFIG_CHANGES])[paths.CONFIG_CHANGES] or []
        if changes:
            problems.append(f"{side} wrote {len(changes)} /config/changes notifications")
    return problems


def wipe(root: KazooClient, chroot: str) -> None:
    """Delete a chroot's whole tree: pipelined multis of deletes, deepest znodes first."""
    znodes = [*sorted(list_tree(root, chroot), key=lambda p: p.count("/"), reverse=True), chroot]

    def transactions() -> Iterator[TransactionRequest]:
        for start in range(0, len(znodes), 500):
            t = root.transaction()
            for path in znodes[start : start + 500]:
                t.delete(path)
            yield t

    commit_pipelined(transactions(), 16)
