"""Synthetic Kafka clusters as snapshot rows: deterministic (one seed, one byte-identical tree), any size, with
chosen defects seeded in, so the pipeline's tests and benchmarks have inputs whose findings are known.

The znodes are what Kafka writes (zkmodel's encoders), the Stat fields consistent (zxids rising in creation
order, ``numChildren`` true, ephemerals owned by a session), so the rows are indistinguishable in shape from
``snapshot export`` or ``snapshot parse`` output. Placement without skew is Kafka's rack-aware round robin
(balanced: replica and leader counts within one of each other); ``skew`` piles a share of the replicas onto
the first brokers, which is what a rebalance plan must undo.
"""

from __future__ import annotations

import base64
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from migrate.snapshot.files import Node
from zkmodel.admin import PartitionReassignmentZnode, TopicPartition
from zkmodel.brokers import BrokerRegistration, EndPoint
from zkmodel.configs import EntityConfig
from zkmodel.kafka_acls import AclEntry, AclNode, AclOperation, PermissionType
from zkmodel.topics import PartitionState, TopicAssignment
from zkmodel.uuid import METADATA_TOPIC_ID, ZERO_UUID

#: Defects a cluster can be seeded with; each is a readiness finding the pipeline must report.
DEFECTS = (
    "topic_v1",  # a topic znode still at version 1 (written before Kafka 2.4's KIP-455 format)
    "no_topic_id",  # a version-2+ topic znode without a topic id (written before IBP 2.8)
    "pending_legacy_reassignment",  # /admin/reassign_partitions present
    "api_reassignment",  # a KIP-455 reassignment in flight (adding/removing replicas)
    "delete_marker",  # a topic marked for deletion under /admin/delete_topics
    "offline_partition",  # a partition whose leader is -1
    "under_replicated",  # a partition whose ISR is smaller than its replicas
    "under_min_isr",  # a partition whose ISR is smaller than its topic's min.insync.replicas
    "unregistered_broker_replica",  # a replica on a broker with no /brokers/ids registration
    "preferred_leader_imbalance",  # a partition led by a replica other than its first
    "malformed_znode",  # a topic znode that is not valid JSON
    "not_rack_aware",  # a partition with two replicas in one rack while other racks are free
)
BASE_TIME_MS = 1_700_000_000_000
SESSION = 0x1000_0000_0000_0001


@dataclass(frozen=True)
class ClusterSpec:
    name: str = "cluster"
    brokers: int = 6
    racks: int = 3  # 0: no broker.rack
    topics: int = 20
    min_partitions: int = 1
    max_partitions: int = 12
    replication_factor: int = 3
    #: Share (0..1) of replicas placed on the first third of the brokers instead of round robin.
    skew: float = 0.0
    defects: frozenset[str] = field(default_factory=frozenset)
    seed: int = 0
    acl_resources: int = 5
    quota_users: int = 3

    def __post_init__(self) -> None:
        unknown = sorted(set(self.defects) - set(DEFECTS))
        if unknown:
            raise ValueError(f"unknown defect(s) {', '.join(unknown)}; known: {', '.join(DEFECTS)}")
        if self.brokers < 1 or self.topics < 0 or self.min_partitions < 1 or self.max_partitions < self.min_partitions:
            raise ValueError("need at least one broker, partitions >= 1 and max partitions >= min partitions")
        if not 1 <= self.replication_factor <= self.brokers:
            raise ValueError(f"replication factor {self.replication_factor} must be between 1 and {self.brokers}")
        if not 0.0 <= self.skew <= 1.0:
            raise ValueError(f"skew {self.skew} must be between 0 and 1")
        if self.racks < 0 or self.racks > self.brokers:
            raise ValueError(f"racks {self.racks} must be between 0 and the broker count {self.brokers}")
        if self.defects and self.topics < len(DEFECTS):
            raise ValueError(f"seeding defects needs at least {len(DEFECTS)} topics (one per defect)")


def topic_id(rng: random.Random) -> str:
    """A Kafka Uuid string from the seeded generator (never reserved, never starting with '-')."""
    while True:
        text = base64.urlsafe_b64encode(rng.randbytes(16)).rstrip(b"=").decode()
        if text not in (ZERO_UUID, METADATA_TOPIC_ID) and not text.startswith("-"):
            return text


def rack_of(spec: ClusterSpec, broker: int) -> str | None:
    return None if spec.racks == 0 else f"rack-{(broker - 1) % spec.racks}"


def rack_alternating(spec: ClusterSpec) -> list[int]:
    """Broker ids ordered rack by rack in turn, as Kafka's rack-aware assignment orders them."""
    ids = list(range(1, spec.brokers + 1))
    if spec.racks == 0:
        return ids
    by_rack: dict[str, list[int]] = {}
    for b in ids:
        by_rack.setdefault(rack_of(spec, b) or "", []).append(b)
    out: list[int] = []
    columns = list(by_rack.values())
    for i in range(max(len(c) for c in columns)):
        out += [c[i] for c in columns if i < len(c)]
    return out


def place(spec: ClusterSpec, rng: random.Random, partitions: int, start: int) -> dict[int, tuple[int, ...]]:
    """Replicas per partition: round robin over the rack-alternating list (start and shift like Kafka's
    AdminUtils), or, for the skewed share, drawn from the first third of the brokers."""
    order = rack_alternating(spec)
    n, rf = len(order), spec.replication_factor
    hot = order[: max(rf, n // 3)]
    out: dict[int, tuple[int, ...]] = {}
    racks = {b: rack_of(spec, b) for b in order}
    rack_count = len(set(racks.values()))
    for p in range(partitions):
        if spec.skew and rng.random() < spec.skew:
            out[p] = tuple(rng.sample(hot, rf))
            continue
        first = (start + p) % n
        shift = (start + p // n) % max(1, n - 1)
        replicas = [order[first]]
        used = {racks[order[first]]}
        k = 0
        while len(replicas) < rf:
            # Kafka's replicaIndex: the j-th follower is 1 + (shift + j) % (n - 1) places after the first;
            # rack-aware, a broker on a rack already used is skipped while unused racks remain.
            candidate = order[(first + 1 + (shift + k) % max(1, n - 1)) % n] if k < 2 * n else order[k % n]
            k += 1
            if candidate in replicas or (racks[candidate] in used and len(used) < rack_count and k < 2 * n):
                continue
            replicas.append(candidate)
            used.add(racks[candidate])
        out[p] = tuple(replicas)
    return out


def cluster_znodes(spec: ClusterSpec) -> list[tuple[str, bytes | None, bool]]:
    """(path, data, ephemeral) in creation order, parents first."""
    return list(iter_znodes(spec))


def _z(path: str, data: bytes | None = None, ephemeral: bool = False) -> tuple[str, bytes | None, bool]:
    return (path, data, ephemeral)


def iter_znodes(spec: ClusterSpec) -> Iterator[tuple[str, bytes | None, bool]]:
    """:func:`cluster_znodes` lazily: the same seed gives the same sequence on every call, which is what lets
    :func:`cluster_nodes` make two passes instead of holding a million-partition tree in memory."""
    rng = random.Random(f"{spec.seed}:{spec.name}")

    for parent in (
        "/brokers",
        "/brokers/ids",
        "/brokers/topics",
        "/brokers/seqid",
        "/config",
        "/config/topics",
        "/config/clients",
        "/config/users",
        "/config/brokers",
        "/config/changes",
        "/admin",
        "/admin/delete_topics",
        "/isr_change_notification",
        "/cluster",
        "/kafka-acl",
        "/kafka-acl/Topic",
        "/kafka-acl-changes",
    ):
        yield _z(parent)
    cluster_id = topic_id(rng)
    yield _z("/cluster/id", f'{{"version":"1","id":"{cluster_id}"}}'.encode())
    yield _z("/controller_epoch", b"3")
    yield _z("/controller", b'{"version":1,"brokerid":1,"timestamp":"1700000000000"}', ephemeral=True)
    registered = list(range(1, spec.brokers + 1))
    for b in registered:
        endpoint = EndPoint("PLAINTEXT", f"broker-{b}.{spec.name}", 9092, "PLAINTEXT")
        registration = BrokerRegistration((endpoint,), BASE_TIME_MS + b, version=5, rack=rack_of(spec, b))
        yield _z(f"/brokers/ids/{b}", registration.encode(), ephemeral=True)

    defects = set(spec.defects)
    start = rng.randrange(spec.brokers)
    pending_legacy: list[tuple[TopicPartition, tuple[int, ...]]] = []
    for t in range(spec.topics):
        name = f"topic-{t:05d}"
        count = rng.randint(spec.min_partitions, spec.max_partitions)
        replicas = place(spec, rng, count, start + t)
        adding: dict[int, tuple[int, ...]] = {}
        removing: dict[int, tuple[int, ...]] = {}
        version, tid = 3, topic_id(rng)
        tid_or_none: str | None = tid
        leaders = {p: r[0] for p, r in replicas.items()}
        isrs = dict(replicas)
        min_isr = None
        # Each defect lands on its own topic (the first few), so a test can find it by name.
        if t == 0 and "topic_v1" in defects:
            version, tid_or_none = 1, None
        if t == 1 and "no_topic_id" in defects:
            version, tid_or_none = 2, None
        if t == 2 and "api_reassignment" in defects and spec.brokers > spec.replication_factor:
            origin = replicas[0]
            extra = next(b for b in registered if b not in origin)
            target = (extra, *origin[1:])
            replicas[0] = (*target, *[r for r in origin if r not in target])
            adding[0], removing[0] = (extra,), tuple(r for r in origin if r not in target)
            isrs[0] = origin
        if t == 3 and "offline_partition" in defects:
            leaders[0], isrs[0] = -1, (replicas[0][-1],)
        if t == 4 and "under_replicated" in defects and len(replicas[0]) > 1:
            isrs[0] = replicas[0][:-1]
        if t == 5 and "under_min_isr" in defects and len(replicas[0]) > 1:
            min_isr = str(len(replicas[0]))
            isrs[0] = replicas[0][:1]
        if t == 6 and "unregistered_broker_replica" in defects:
            replicas[0] = (*replicas[0][:-1], spec.brokers + 100)
            isrs[0] = tuple(r for r in replicas[0] if r <= spec.brokers)
        if t == 7 and "preferred_leader_imbalance" in defects and len(replicas[0]) > 1:
            leaders[0] = replicas[0][1]
        if t == 8 and "pending_legacy_reassignment" in defects:
            pending_legacy.append((TopicPartition(name, 0), tuple(reversed(replicas[0]))))
        if t == 11 and "not_rack_aware" in defects and len(replicas[0]) > 1:
            first, second = replicas[0][0], replicas[0][1]
            twin = next(
                (
                    b
                    for b in registered
                    if b not in replicas[0]
                    and rack_of(spec, b) is not None
                    and rack_of(spec, b) == rack_of(spec, first)
                ),
                None,
            )
            if twin is not None:
                replicas[0] = tuple(twin if r == second else r for r in replicas[0])
                isrs[0], leaders[0] = replicas[0], replicas[0][0]
        assignment = TopicAssignment(replicas, adding, removing, topic_id=tid_or_none, version=version)
        data = assignment.encode()
        if t == 9 and "malformed_znode" in defects:
            data = data[: len(data) // 2]
        yield _z(f"/brokers/topics/{name}", data)
        yield _z(f"/brokers/topics/{name}/partitions")
        for p in range(count):
            yield _z(f"/brokers/topics/{name}/partitions/{p}")
            leader = leaders[p]
            state = PartitionState(leader, rng.randrange(1, 20), 3, isrs[p])
            yield _z(f"/brokers/topics/{name}/partitions/{p}/state", state.encode())
        config = {"retention.ms": str(rng.choice((86_400_000, 604_800_000)))}
        if min_isr is not None:
            config["min.insync.replicas"] = min_isr
        yield _z(f"/config/topics/{name}", EntityConfig(config).encode())
        if t == 10 and "delete_marker" in defects:
            yield _z(f"/admin/delete_topics/{name}")
    if pending_legacy:
        yield _z("/admin/reassign_partitions", PartitionReassignmentZnode(pending_legacy).encode())
    for i in range(spec.acl_resources):
        entry = AclEntry(f"User:app-{i}", PermissionType.ALLOW, "*", AclOperation.READ)
        yield _z(f"/kafka-acl/Topic/topic-{i:05d}", AclNode([entry]).encode())
    for i in range(spec.quota_users):
        yield _z(f"/config/users/user-{i}", EntityConfig({"producer_byte_rate": str(1_048_576 * (i + 1))}).encode())


def _leaf_parent(path: str) -> bool:
    """A partition's own znode (``.../partitions/<n>``): its one child, ``state``, is created right after it.
    Counting these in the first pass would cost a dict entry per partition (a million at the benchmark's size);
    the second pass looks one node ahead instead."""
    head, _, tail = path.rpartition("/")
    return tail.isdigit() and head.endswith("/partitions")


def cluster_nodes(spec: ClusterSpec) -> Iterator[Node]:
    """The tree as snapshot Nodes: zxids in creation order, true child counts, ephemerals owned by a session.

    Two passes over the lazy :func:`iter_znodes` (deterministic, so both see the same tree): the first counts
    children and the last child's zxid (``pzxid``) per parent, the second emits. Memory is one entry per
    parent that is not a partition's own znode, not one per znode."""
    first = 0x1_0000_0001
    children: dict[str, int] = {}
    last_child: dict[str, int] = {}  # pzxid: the zxid of the last change to the children list
    for zxid, (path, _data, _eph) in enumerate(iter_znodes(spec), start=first):
        parent = path.rsplit("/", 1)[0] or "/"
        if _leaf_parent(parent):
            continue
        children[parent] = children.get(parent, 0) + 1
        last_child[parent] = zxid
    acl = [(31, "world", "anyone")]
    pending: tuple[int, tuple[str, bytes | None, bool]] | None = None

    def emit(zxid: int, znode: tuple[str, bytes | None, bool], n: int, pzxid: int) -> Node:
        path, data, ephemeral = znode
        return Node(
            path=path,
            data=data,
            acl=acl,
            czxid=zxid,
            mzxid=zxid,
            ctime=BASE_TIME_MS + zxid - first,
            mtime=BASE_TIME_MS + zxid - first,
            version=0,
            cversion=n,
            aversion=0,
            ephemeral_owner=SESSION if ephemeral else 0,
            pzxid=pzxid,
            num_children=n,
        )

    for zxid, znode in enumerate(iter_znodes(spec), start=first):
        if pending is not None:
            pz, pnode = pending
            child = znode[0].rsplit("/", 1)[0] == pnode[0]
            yield emit(pz, pnode, 1 if child else 0, zxid if child else pz)
            pending = None
        if _leaf_parent(znode[0]):
            pending = (zxid, znode)
            continue
        yield emit(zxid, znode, children.get(znode[0], 0), last_child.get(znode[0], zxid))
    if pending is not None:
        yield emit(pending[0], pending[1], 0, pending[0])


def fleet(specs: Sequence[ClusterSpec]) -> dict[str, list[Node]]:
    return {s.name: list(cluster_nodes(s)) for s in specs}
