"""The twin end to end: a tree made by a live stack through Kafka clients (topics with configs, ACLs, a quota, a
SCRAM user), exported, restored by ``up --from-snapshot`` into a sandbox ZooKeeper of its own, and read back
through Kafka clients from the twin's nodes."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ConfigResource,
    NewTopic,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)
from kafka.admin import KafkaAdminClient

from tests.e2e.conftest import RunningStack
from tests.e2e.test_quotas_clients import alter_request, describe_request, described
from tests.integration.cluster import wait_for
from tests.stackutil import read_until
from zkmodel import paths

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]
BIN = [sys.executable, "-m", "controller.cli"]
STACK_OVERRIDES = {"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer", "super.users": "User:ANONYMOUS"}
AUTHORIZER = [arg for key, value in STACK_OVERRIDES.items() for arg in ("--set", f"{key}={value}")]
TOPICS = {"orders": (6, 3, {"retention.ms": "3600000", "cleanup.policy": "compact"}), "audit": (2, 2, {})}


def bk(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*BIN, *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT)


def kafka_python_send(bootstrap: str, request: Any) -> Any:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30000)
    try:
        return admin._manager.run(admin._manager.send, request)
    finally:
        admin.close()


@dataclass
class ClusterView:
    """What a Kafka client sees of a cluster's metadata."""

    brokers: dict[int, str | None]  # id -> rack
    partitions: dict[tuple[str, int], tuple[list[int], int]]  # (topic, p) -> (replicas, leader)
    configs: dict[str, dict[str, str]]
    acls: set[tuple[str, str, str, str]]
    quotas: dict[Any, dict[str, float]]
    scram_users: set[str]


def view(bootstrap: str) -> ClusterView:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    md = admin.list_topics(timeout=30)
    partitions = {
        (t, p): (list(pm.replicas), pm.leader)
        for t, tm in md.topics.items()
        if t in TOPICS
        for p, pm in tm.partitions.items()
    }
    configs: dict[str, dict[str, str]] = {}
    for resource, future in admin.describe_configs([ConfigResource("topic", t) for t in TOPICS]).items():
        entries = future.result(timeout=30)
        configs[resource.name] = {k: e.value for k, e in entries.items() if not e.is_default}
    anything: Any = None  # AclBindingFilter's wildcard; its stubs want str
    everything = AclBindingFilter(
        ResourceType.ANY, anything, ResourcePatternType.ANY, anything, anything, AclOperation.ANY, AclPermissionType.ANY
    )
    acls = {
        (b.name, b.principal, b.operation.name, b.permission_type.name)
        for b in admin.describe_acls(everything).result(timeout=30)
    }
    try:
        scram = admin.describe_user_scram_credentials().result(timeout=30)  # type: ignore[union-attr]
        scram_users = {user for user, desc in scram.items() if desc.scram_credential_infos}
    except KafkaException:
        scram_users = set()
    quotas = described(kafka_python_send(bootstrap, describe_request([("user", 2, None)])))
    assert set(md.brokers) == set(racks(admin))
    return ClusterView(racks(admin), partitions, configs, acls, quotas, scram_users)


def racks(admin: AdminClient) -> dict[int, str | None]:
    """Broker id -> rack, from DescribeCluster (Metadata's brokers in confluent-kafka carry no rack)."""
    return {n.id: n.rack for n in admin.describe_cluster().result(timeout=30).nodes}


@pytest.fixture(scope="module")
def production(stack: RunningStack, tmp_path_factory: pytest.TempPathFactory) -> tuple[ClusterView, Path]:
    """The live stack given topics, configs, an ACL, a quota and a SCRAM user; its view and its exported rows."""
    admin = AdminClient({"bootstrap.servers": stack.bootstrap})
    new = [NewTopic(t, n, rf, config=c) for t, (n, rf, c) in TOPICS.items()]
    for future in admin.create_topics(new, operation_timeout=30).values():
        future.result(timeout=60)
    acl = AclBinding(
        ResourceType.TOPIC,
        "orders",
        ResourcePatternType.LITERAL,
        "User:alice",
        "*",
        AclOperation.READ,
        AclPermissionType.ALLOW,
    )
    for future in admin.create_acls([acl]).values():
        future.result(timeout=30)
    upsert = UserScramCredentialUpsertion("alice", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), b"s3cret")
    for future in admin.alter_user_scram_credentials([upsert]).values():
        future.result(timeout=30)
    resp = kafka_python_send(stack.bootstrap, alter_request({"user": "alice"}, {"producer_byte_rate": 1048576.0}))
    assert resp.entries[0].error_code == 0
    wait_for(
        lambda: all(stack.zk.exists(paths.partition_state(t, n - 1)) for t, (n, _rf, _c) in TOPICS.items()),
        30,
        "partition states",
    )
    before = view(stack.bootstrap)
    assert before.scram_users == {"alice"} and before.acls and before.quotas  # the setup took
    rows = tmp_path_factory.mktemp("rows") / "prod.parquet"
    exported = bk("snapshot", "export", "--zookeeper", stack.stack.zookeeper, "-o", str(rows))
    assert exported.returncode == 0, exported.stderr
    return before, rows


@dataclass
class Twin:
    ready: dict[str, str]
    output: list[str]  # what ``up`` printed up to its READY line

    @property
    def bootstrap(self) -> str:
        return self.ready["bootstrap"]


@contextlib.contextmanager
def twin(*args: str, timeout: float = 180) -> Iterator[Twin]:
    """``bridgekeeper up --from-snapshot ...`` until its READY line; stopped with Ctrl-C (exit 0) afterwards."""
    proc = subprocess.Popen(
        [*BIN, "up", "--from-snapshot", *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT
    )
    try:
        seen = read_until(proc, "READY ", timeout)
        yield Twin(dict(part.split("=", 1) for part in seen[-1].split()[1:]), seen)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=90)
        assert proc.returncode == 0, out
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_twin_serves_the_production_metadata_without_its_credentials(
    stack: RunningStack, production: tuple[ClusterView, Path], tmp_path: Path
) -> None:
    before, rows = production
    # production's static settings are not in ZooKeeper: a twin is given them as every node is, with --set
    with twin(str(rows), "--data-dir", str(tmp_path / "twin"), *AUTHORIZER) as t:
        assert t.bootstrap not in stack.bootstrap  # its own nodes and its own ZooKeeper
        text = "\n".join(t.output)
        assert "credentials redacted: 1 SCRAM credential(s)" in text
        assert "skipped 4: ephemeral (its session is gone)" in text  # three registrations and /controller
        wait_for(lambda: view(t.bootstrap).partitions == before.partitions, 30, "the production leaders")
        after = view(t.bootstrap)
    assert after.brokers == before.brokers
    assert after.partitions == before.partitions and len(after.partitions) == 8
    assert after.configs == before.configs and after.configs["orders"]["retention.ms"] == "3600000"
    assert after.acls == before.acls == {("orders", "User:alice", "READ", "ALLOW")}
    assert after.quotas == before.quotas == {(("user", "alice"),): {"producer_byte_rate": 1048576.0}}
    assert before.scram_users == {"alice"} and after.scram_users == set()
    assert view(stack.bootstrap) == before  # production untouched


def test_keep_credentials_restores_the_scram_user(production: tuple[ClusterView, Path], tmp_path: Path) -> None:
    before, rows = production
    with twin(str(rows), "--keep-credentials", "--max-nodes", "1", "--data-dir", str(tmp_path / "twin")) as t:
        assert any("left out by --max-nodes: brokers" in line for line in t.output)
        assert any("credentials kept as recorded" in line for line in t.output)
        after = view(t.bootstrap)
    assert after.scram_users == before.scram_users == {"alice"}
    assert len(after.brokers) == 1


def test_export_can_redact_credentials_at_the_source(stack: RunningStack, production: Any, tmp_path: Path) -> None:
    out = tmp_path / "redacted.jsonl"
    exported = bk("snapshot", "export", "--zookeeper", stack.stack.zookeeper, "-o", str(out), "--redact-credentials")
    assert exported.returncode == 0, exported.stderr
    assert "credentials redacted: 1 SCRAM credential(s)" in exported.stderr
    import base64

    by_path = {r["path"]: r for r in map(orjson.loads, out.read_bytes().splitlines())}
    alice = orjson.loads(base64.b64decode(by_path["/config/users/alice"]["data"]))
    assert alice["config"] == {"producer_byte_rate": "1048576"}  # the quota stays, the credential is gone
    assert b"SCRAM" not in out.read_bytes()


def test_a_synthetic_production_tree_as_a_twin_runs_exactly_its_registered_brokers(tmp_path: Path) -> None:
    rows = tmp_path / "synthetic.parquet"
    made = bk(
        "pipeline",
        "synth",
        "-o",
        str(rows),
        "--brokers",
        "6",
        "--racks",
        "3",
        "--topics",
        "40",
        "--defect",
        "unregistered_broker_replica",
    )
    assert made.returncode == 0, made.stderr
    with twin(str(rows), "--data-dir", str(tmp_path / "twin")) as t:
        assert any(
            "offline as in production (no registration; --start-missing starts them): brokers 106" in line
            for line in t.output
        )
        admin = AdminClient({"bootstrap.servers": t.bootstrap})
        md = admin.list_topics(timeout=30)
        assert set(md.brokers) == set(range(1, 7))
        assert racks(admin) == {b: f"rack-{(b - 1) % 3}" for b in range(1, 7)}
        assert len(md.topics["topic-00000"].partitions) >= 1
        # the partition whose replica sits on the unregistered broker still names it, as production's does
        assert 106 in md.topics["topic-00006"].partitions[0].replicas


def test_rehearse_on_a_twin_passes_judging_what_the_twin_runs(tmp_path: Path) -> None:
    rows = tmp_path / "prod.parquet"
    synth = ["--brokers", "4", "--racks", "2", "--topics", "60", "--partitions", "1-8", "--replication-factor", "2"]
    made = bk("pipeline", "synth", "-o", str(rows), *synth, "--defect", "unregistered_broker_replica")
    assert made.returncode == 0, made.stderr
    out = tmp_path / "rehearsal"
    run = bk(
        "rehearse",
        "--from-snapshot",
        str(rows),
        "--from-ibp",
        "3.3-IV3",
        "--to-ibp",
        "3.4-IV0",
        "--zk-servers",
        "1",
        "--client",
        "confluent-kafka",
        "--drill",
        "kill-controller",
        "-o",
        str(out),
        timeout=900,
    )
    doc = orjson.loads((out / "rehearsal.json").read_bytes())
    failed = [(c["name"], c["summary"]) for c in doc["checks"] if c["verdict"] == "fail"]
    assert run.returncode == 0, (failed, run.stdout[-2000:], run.stderr[-2000:])
    assert doc["passed"] and doc["nodes"] == [1, 2, 3, 4]
    assert doc["twin"]["absent"] == [104] and doc["twin"]["partitions"] > 60
    assert doc["failovers"] and all(f["seconds"] > 0 for f in doc["failovers"])
    # the partition with a replica on the unregistered broker is left out, and the evidence says so
    offline = [c for c in doc["checks"] if c["name"] == "no-offline-partitions"]
    assert offline and all(any("not judged: 1 partition(s)" in e for e in c["evidence"]) for c in offline)
    # the load worked beside the production topics, which it left as they were
    ops = [o for o in doc["ops"] if o["op"] == "create_topic" and o["error"] is None]
    assert ops and all(o["entity"].startswith("topic:rh-") for o in ops)
    before = {
        r["path"]: r["data"] for r in map(orjson.loads, (out / "zookeeper-before.jsonl").read_bytes().splitlines())
    }
    after = {r["path"]: r["data"] for r in map(orjson.loads, (out / "zookeeper-after.jsonl").read_bytes().splitlines())}
    production = [p for p in before if p.startswith("/brokers/topics/topic-") and p.count("/") == 3]
    assert len(production) == 60 and all(after[p] == before[p] for p in production)
    assert "Twin of prod.parquet: 4 brokers, 60 topics" in (out / "report.html").read_text()
