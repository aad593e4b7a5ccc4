"""The rehearsal's record: what ``rehearsal.json`` holds and the HTML report is drawn from.

Plain TypedDicts (not classes) because the record is written as JSON as it grows and read back by the report,
the tests and operators' own scripts; every time is Unix seconds (float) so the client journal, the steps and
the metric samples share one axis.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

#: Client operations the load runs. Every one but ``metadata`` is a write KIP-590 forwards.
OPS = (
    "create_topic",
    "delete_topic",
    "create_partitions",
    "alter_config",
    "create_acl",
    "delete_acl",
    "alter_quota",
    "reassign",
    "metadata",
)
Verdict = Literal["pass", "fail"]
Phase = Literal["pre-flight", "roll-1", "roll-2", "lockdown", "post-flight"]
StepKind = Literal["check", "restart", "drill", "lockdown"]


class OpRecord(TypedDict):
    """One client operation, acknowledged or failed, as the load worker saw it (one JSON line per record)."""

    worker: str  # "w1", unique per worker process
    client: str  # "confluent-kafka" | "kafka-python"
    seq: int  # per worker, from 0, in the order the worker sent them
    op: str  # one of OPS
    entity: str  # what it touched, e.g. "topic:rh-w1-t3", "quota:client-id:rh-w1-q2"
    args: dict[str, Any]  # what it asked for (partitions, config value, replicas, ...)
    started: float
    ended: float
    ok: bool
    error: str | None  # Kafka's error name ("REQUEST_TIMED_OUT"), or the exception class for transport errors
    retriable: bool | None  # None when ok
    forwardable: bool


class WaitRecord(TypedDict):
    what: str  # "node 2 back in every ISR (14 partitions)"
    started: float
    ended: float
    ok: bool


class StepRecord(TypedDict):
    index: int
    name: str  # "roll 1: restart node 2", "drill kill-controller: SIGKILL node 3", "pre-flight"
    phase: Phase
    kind: StepKind
    node: int | None
    started: float
    ended: float
    outcome: Literal["ok", "failed", "skipped"]
    detail: str
    waits: list[WaitRecord]


class CheckRecord(TypedDict):
    name: str  # a CHECKS id
    step: int  # index of the step after which it ran
    verdict: Verdict
    summary: str  # one line
    evidence: list[str]  # what it looked at, one item per line


class RouteSample(TypedDict):
    """Forwardable admin writes served since the rehearsal began, by route, summed over nodes (counter resets at
    a node's restart corrected), scraped from the nodes' ``bridgekeeper_admin_requests_total``."""

    t: float
    forwarded: float
    controller: float
    direct: float
    nodes_forwarding: int  # nodes whose IBP is at or above the forwarding gate
    nodes: int


class EventRecord(TypedDict):
    """A mark on the timeline: a drill's fault, a controller change, a controller epoch increment."""

    t: float
    kind: Literal["drill", "controller", "epoch"]
    label: str


class Artefact(TypedDict):
    name: str
    path: str  # relative to the report's directory
    description: str


class Rehearsal(TypedDict):
    tool: str  # "bridgekeeper rehearse"
    version: int  # 1
    mode: Literal["owned", "attached"]
    from_ibp: str
    to_ibp: str
    nodes: list[int]
    zk_servers: int
    drills: list[str]
    lockdown: bool
    settings: dict[str, Any]  # rate, thresholds, timeouts as run
    started: float
    ended: float
    passed: bool
    exit_code: int
    steps: list[StepRecord]
    checks: list[CheckRecord]
    ops: list[OpRecord]
    routes: list[RouteSample]
    events: list[EventRecord]
    artefacts: list[Artefact]
    #: A twin's shape (brokers run, production brokers left aside, topics, partitions), on a twin only.
    twin: NotRequired[dict[str, Any] | None]
    #: Every controller failover a node reported: {t, broker, seconds} (election to serving).
    failovers: NotRequired[list[dict[str, float]]]


#: Every check: id, title, why it matters (shown in the report beside the verdict).
CHECKS: tuple[tuple[str, str, str], ...] = (
    (
        "one-active-controller",
        "Exactly one active controller",
        "/controller names one live broker and the nodes' ActiveControllerCount sums to 1.",
    ),
    ("no-offline-partitions", "No offline partitions", "Every partition's leader is a live broker in its ISR."),
    (
        "acknowledged-writes",
        "Every acknowledged write is in ZooKeeper",
        "Each client write answered without error is visible in the znodes; a write reported failed is absent or, "
        "when its error allows it (KIP-4 timeouts), complete; nothing is duplicated.",
    ),
    (
        "ids-unchanged",
        "Cluster id and topic ids unchanged",
        "/cluster/id and every topic id recorded before the step are the same after it (Kafka's upgrade test).",
    ),
    (
        "controller-epoch-explained",
        "Controller epoch changes explained",
        "Every increment of /controller_epoch follows a restart or a fault of the active controller.",
    ),
    (
        "node-logs-clean",
        "Node logs clean",
        "No STALE_CONTROLLER_EPOCH, protocol error or BK-UNEXPECTED line in any node log.",
    ),
    (
        "client-errors",
        "Client errors under threshold, retriable only",
        "Failed client operations per step stay under the threshold and every error is retriable.",
    ),
    (
        "forwarding-share",
        "Forwarding share",
        "Once every broker is past the forwarding gate, every forwardable write reaches ZooKeeper through the "
        "active controller (forwarded or served by it), none written by a broker itself.",
    ),
    (
        "no-broker-zk-writes",
        "No broker writes to ZooKeeper",
        "After the bump, ZooKeeper's transaction log and the znodes' mzxids show metadata written only by the "
        "active controller's session (a broker's own registration aside).",
    ),
    (
        "isr-rejoined",
        "Restarted node back in every ISR",
        "Each restarted node returns to every ISR it belongs to within the timeout (Kafka's wait_until_rejoin).",
    ),
    (
        "min-isr-safe",
        "Restart kept min.insync.replicas",
        "A node is restarted only when no partition would drop below min.insync.replicas (Strimzi's canRoll).",
    ),
    (
        "reassignments-finished",
        "Reassignments finished",
        "No reassignment left in progress: /admin/reassign_partitions absent, no adding or removing replicas.",
    ),
    (
        "brokers-registered",
        "Every broker registered",
        "Every node of the inventory is registered in /brokers/ids with the expected IBP.",
    ),
)
CHECK_IDS = tuple(c[0] for c in CHECKS)
