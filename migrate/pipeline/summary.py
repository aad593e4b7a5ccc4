"""The readiness summary: what the Spark stages hand the report, and what ``report.json`` holds.

One plain JSON document (these TypedDicts describe it), so the HTML renderer, the JSON file and any
operator's own tooling read the same thing, and the renderer can be tested without Spark. Everything in it is
small (per broker, per rack, per finding, per plan): the per-partition work stays in Spark.
"""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict

Severity = Literal["blocker", "warning", "info"]

#: Readiness checks, in report order: (id, severity, title, why it matters). ``count`` in a finding is how many
#: znodes/partitions/topics/brokers it concerns (the unit is in ``unit``).
CHECKS: tuple[tuple[str, Severity, str, str], ...] = (
    (
        "malformed_znode",
        "blocker",
        "Malformed znodes",
        "Kafka's controller cannot decode these znodes; the bridge controller will refuse them too.",
    ),
    (
        "topic_v1",
        "blocker",
        "Version-1 topic znodes",
        "Written before Kafka 2.4 (KIP-455): no adding/removing replicas fields; rewrite before the bridge.",
    ),
    (
        "no_topic_id",
        "blocker",
        "Topics without a topic id",
        "Written before IBP 2.8: the controller assigns ids on failover; KRaft migration needs them.",
    ),
    (
        "pending_legacy_reassignment",
        "blocker",
        "Pending /admin/reassign_partitions",
        "A legacy reassignment the controller has not finished; let it complete or cancel it first.",
    ),
    (
        "api_reassignment",
        "warning",
        "In-flight API reassignments",
        "KIP-455 reassignments with adding/removing replicas; finish them before rolling controllers.",
    ),
    (
        "delete_marker",
        "warning",
        "Topics marked for deletion",
        "/admin/delete_topics entries still pending: deletion stalls while a replica's broker is down.",
    ),
    ("offline_partition", "blocker", "Offline partitions", "Leader -1: no replica can serve the partition."),
    ("under_replicated", "warning", "Under-replicated partitions", "ISR smaller than the replica set."),
    (
        "under_min_isr",
        "blocker",
        "Partitions under min.insync.replicas",
        "acks=all producers fail on these; a rolling restart would take them offline.",
    ),
    (
        "unregistered_broker_replica",
        "blocker",
        "Replicas on unregistered brokers",
        "Replicas assigned to broker ids with no /brokers/ids registration.",
    ),
    (
        "preferred_leader_imbalance",
        "info",
        "Partitions not led by their preferred replica",
        "Leadership away from the first replica; a preferred election would move it back.",
    ),
    (
        "not_rack_aware",
        "warning",
        "Partitions not spread over racks",
        "Fewer distinct racks than min(replication factor, racks): a rack failure takes more than one replica.",
    ),
    (
        "replica_skew",
        "warning",
        "Brokers outside the replica balance band",
        "Replica counts more than 9 % away from the average (Cruise Control's default balance band); the average "
        "of the broker's rack when unequal racks make the cluster's unreachable.",
    ),
    (
        "leader_skew",
        "info",
        "Brokers outside the leader balance band",
        "Preferred-leader counts more than 9 % away from the average (partitions / brokers).",
    ),
)
CHECK_IDS = tuple(c[0] for c in CHECKS)


class Finding(TypedDict):
    check: str  # one of CHECK_IDS
    severity: Severity
    title: str
    count: int
    unit: str  # "znodes", "topics", "partitions", "brokers"
    examples: list[str]  # up to 10, sorted (topic names, "topic-partition", broker ids, paths)


class BrokerRow(TypedDict):
    broker: int
    rack: str | None
    registered: bool  # False: replicas point at it but it has no /brokers/ids znode
    replicas: int
    leaders: int  # current leaders (from partition state)
    preferred: int  # partitions whose first replica it is


class RackRow(TypedDict):
    rack: str  # "(none)" for brokers without broker.rack
    brokers: int
    replicas: int
    leaders: int
    #: [low, high] replicas each registered broker of this rack is held to ([0, 0] when the cluster has no
    #: partition). The cluster's band unless the rack rule makes that unreachable (replication factor >= racks
    #: over unequal racks: every rack holds one replica of each partition), then this rack's reachable average
    #: ± 9 % (see :mod:`migrate.pipeline.bands`).
    band: list[int]


class Counts(TypedDict):
    brokers: int
    topics: int
    partitions: int
    replicas: int
    acls: int  # ACL entries
    acl_resources: int
    quotas: int  # quota entities (users, clients, ips) with a quota config
    malformed: int


class PlanSummary(TypedDict):
    cluster: str
    operation: str  # decommission, add-brokers, rebalance, fix-racks
    brokers: list[int]  # the brokers the operation names (removed or added); empty for rebalance/fix-racks
    moves: int  # replicas placed on a broker that did not hold that partition
    lower_bound: int
    kafka_generate_moves: int | None  # Kafka's --generate on the same input, None if it could not plan
    partitions_changed: int
    leader_changes: int  # partitions whose first replica changed
    waves: int
    plan_file: str
    before: dict[str, int]  # broker id (as a string, JSON keys) -> replicas before
    after: dict[str, int]
    leaders_before: dict[str, int]  # broker id -> preferred leaders before
    leaders_after: dict[str, int]
    violations: list[str]  # hard constraints the plan could not meet (empty when it meets them all)
    warnings: NotRequired[list[str]]  # e.g. planned rack-unaware because only some brokers have a rack
    seconds: float


class ClusterSummary(TypedDict):
    cluster: str
    counts: Counts
    findings: list[Finding]  # one per CHECK_IDS entry, count 0 when clean
    brokers: list[BrokerRow]
    racks: list[RackRow]
    #: [low, high] replicas per registered broker outside which a broker is reported skewed: Cruise Control's
    #: band, average ± 9 % (the planner's own target is stricter: within one of the average). When the racks'
    #: bands differ (``racks[i]["band"]``) this spans them all, [lowest low, highest high], and a broker is held
    #: to its own rack's band; otherwise it is the one band every rack shares.
    replica_band: list[int]
    leader_band: list[int]  # the same for preferred leaders


class Summary(TypedDict):
    generated_at: str  # ISO 8601, UTC
    inputs: list[str]
    clusters: list[ClusterSummary]
    plans: list[PlanSummary]
    stages: NotRequired[dict[str, float]]  # wall seconds per pipeline stage
