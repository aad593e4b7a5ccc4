"""The controller writes ZooKeeper with its own digest identity, distinct from the brokers': once ZooKeeper's
ACLs admit only the controller to metadata paths (what ``lockdown`` will set), forwarded admin writes still
land and a broker writing by itself (below the forwarding gate) is refused with a clear error."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient
from kazoo.client import KazooClient
from kazoo.security import OPEN_ACL_UNSAFE, READ_ACL_UNSAFE, make_digest_acl

from controller.devstack.stack import Stack
from testing.stack import controller_id, metric_sum, metrics_url
from tests.integration.cluster import wait_for

pytestmark = pytest.mark.e2e

IDENTITIES = {
    "bridgekeeper.zookeeper.digest": "broker:broker-secret",
    "bridgekeeper.zookeeper.controller.digest": "controller:controller-secret",
}
#: What lockdown will do to a metadata path: the controller may do anything, everyone else may only read.
CONTROLLER_ONLY = [make_digest_acl("controller", "controller-secret", all=True), *READ_ACL_UNSAFE]


@contextlib.contextmanager
def locked_stack(tmp_path: Path, ibp: str) -> Iterator[tuple[Stack, KazooClient, int]]:
    stack = Stack(nodes=2, data_dir=tmp_path / ibp, ibp=ibp, overrides=IDENTITIES)
    stack.start()
    zk = KazooClient(hosts=stack.zookeeper)
    try:
        zk.start(timeout=20)
        wait_for(lambda: controller_id(zk) is not None, 60, "a controller")
        for path in ("/config/brokers", "/config/changes"):
            zk.ensure_path(path)
            zk.set_acls(path, CONTROLLER_ONLY)
        cid = controller_id(zk)
        assert cid is not None
        yield stack, zk, cid
    finally:
        with contextlib.suppress(Exception):
            zk.stop()
            zk.close()
        stack.stop()


def alter_broker_config(stack: Stack, broker_id: int, value: str) -> str:
    node = next(n for n in stack.nodes if n.broker_id == broker_id)
    admin = KafkaAdminClient(bootstrap_servers=f"127.0.0.1:{node.port}", request_timeout_ms=30000)
    try:
        resource = ConfigResource(
            ConfigResourceType.BROKER, str(broker_id), configs={"leader.replication.throttled.rate": value}
        )
        result: Any = admin.alter_configs([resource], raise_on_unknown=False)
        return str(result["broker"][str(broker_id)])
    finally:
        admin.close()


def config_writes(stack: Stack, broker_id: int, outcome: str) -> float:
    node = next(n for n in stack.nodes if n.broker_id == broker_id)
    return metric_sum(metrics_url(node.ready), "bridgekeeper_zookeeper_writes_total", kind="config", outcome=outcome)


def test_forwarded_writes_carry_the_controller_identity(tmp_path: Path) -> None:
    with locked_stack(tmp_path, "3.4-IV0") as (stack, zk, cid):
        broker = next(n.broker_id for n in stack.nodes if n.broker_id != cid)
        assert alter_broker_config(stack, broker, "4096") == "OK"
        data, _ = zk.get(f"/config/brokers/{broker}")
        assert orjson.loads(data)["config"] == {"leader.replication.throttled.rate": "4096"}
        assert config_writes(stack, cid, "ok") == 1  # the controller wrote it ...
        assert config_writes(stack, broker, "ok") + config_writes(stack, broker, "failed") == 0  # ... not the broker


def test_a_broker_writing_by_itself_is_refused_by_zookeeper(tmp_path: Path) -> None:
    with locked_stack(tmp_path, "3.3-IV3") as (stack, zk, cid):
        broker = next(n.broker_id for n in stack.nodes if n.broker_id != cid)
        outcome = alter_broker_config(stack, broker, "4096")
        assert "NoAuth" in outcome and "ZooKeeper identity may not write" in outcome, outcome
        assert zk.exists(f"/config/brokers/{broker}") is None
        assert config_writes(stack, broker, "failed") == 1
        # The controller, writing as the controller identity, is admitted even below the gate.
        assert alter_broker_config(stack, cid, "2048") == "OK"
        data, _ = zk.get(f"/config/brokers/{cid}")
        assert orjson.loads(data)["config"] == {"leader.replication.throttled.rate": "2048"}


def test_a_cluster_with_zookeeper_set_acl_serves_and_its_znodes_are_closed_to_others(tmp_path: Path) -> None:
    """Kafka's secure mode: one identity for every node, ``zookeeper.set.acl=true``: the cluster works as usual and
    the znodes it creates can be read, not written, by anyone else."""
    from kafka.admin import NewTopic
    from kazoo.exceptions import NoAuthError

    secure = {"bridgekeeper.zookeeper.digest": "kafka:kafka-secret", "zookeeper.set.acl": "true"}
    stack = Stack(nodes=2, data_dir=tmp_path / "secure", overrides=secure)
    stack.start()
    zk = KazooClient(hosts=stack.zookeeper)
    try:
        zk.start(timeout=20)
        wait_for(lambda: controller_id(zk) is not None, 60, "a controller")
        admin = KafkaAdminClient(
            bootstrap_servers=",".join(f"127.0.0.1:{n.port}" for n in stack.nodes), request_timeout_ms=30000
        )
        try:
            admin.create_topics([NewTopic("locked", num_partitions=2, replication_factor=2)], timeout_ms=30000)
            admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, "locked", configs={"retention.ms": "1000"})])
        finally:
            admin.close()
        wait_for(lambda: zk.exists("/brokers/topics/locked/partitions/1/state") is not None, 30, "the partitions")
        assert orjson.loads(zk.get("/config/topics/locked")[0])["config"] == {"retention.ms": "1000"}
        for path in ("/brokers/topics/locked", "/brokers/topics/locked/partitions/0/state", "/config/topics/locked"):
            acls = zk.get_acls(path)[0]
            assert [(a.perms, a.id.scheme) for a in acls] == [(31, "digest"), (1, "world")], path
            with pytest.raises(NoAuthError):
                zk.set(path, b"{}")
        with pytest.raises(NoAuthError):  # a sensitive root: no world READ, so not even its ACL is visible
            zk.get_acls("/config/brokers")
    finally:
        zk.stop()
        zk.close()
        stack.stop()


def test_lockdown_against_a_live_stack(tmp_path: Path) -> None:
    """Two identities and ``zookeeper.set.acl``: lockdown apply leaves only the controller identity writing
    metadata; the cluster keeps serving (topics, configs, a reassignment, a node restart) and the znodes it
    creates afterwards already carry lockdown's ACLs; verify catches a hand-made change; revert restores."""
    import subprocess
    import sys

    from kafka import TopicPartition
    from kafka.admin import NewTopic
    from kazoo.exceptions import NoAuthError

    secure = {**IDENTITIES, "zookeeper.set.acl": "true"}
    stack = Stack(nodes=2, data_dir=tmp_path / "lock", overrides=secure)
    stack.start()
    zk = KazooClient(hosts=stack.zookeeper)
    ctl = KazooClient(hosts=stack.zookeeper, auth_data=[("digest", "controller:controller-secret")])
    brk = KazooClient(hosts=stack.zookeeper, auth_data=[("digest", "broker:broker-secret")])
    backup = tmp_path / "acls.json"
    args = [
        "--zookeeper",
        stack.zookeeper,
        "--controller-identity",
        "digest:controller:controller-secret",
        "--broker-identity",
        "digest:broker:broker-secret",
        "--backup",
        str(backup),
    ]

    def lockdown(action: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "controller.cli", "lockdown", action, *args],
            capture_output=True,
            text=True,
            timeout=120,
        )

    def admin() -> KafkaAdminClient:
        return KafkaAdminClient(
            bootstrap_servers=",".join(f"127.0.0.1:{n.port}" for n in stack.nodes), request_timeout_ms=30000
        )

    try:
        for client in (zk, ctl, brk):
            client.start(timeout=20)
        wait_for(lambda: controller_id(zk) is not None, 60, "a controller")
        a = admin()
        try:
            a.create_topics([NewTopic("before", num_partitions=2, replication_factor=1)], timeout_ms=30000)
        finally:
            a.close()
        wait_for(lambda: zk.exists("/brokers/topics/before/partitions/1/state") is not None, 30, "partitions")
        original = {p: ctl.get_acls(p)[0] for p in ("/", "/brokers/topics/before", "/config/changes", "/consumers")}
        assert original["/consumers"] == OPEN_ACL_UNSAFE  # Kafka leaves /consumers open, and so do we

        applied = lockdown("apply")
        assert applied.returncode == 0, applied.stdout + applied.stderr
        assert lockdown("verify").returncode == 0
        for client in (zk, brk):  # neither anyone nor the brokers' identity may write metadata now
            with pytest.raises(NoAuthError):
                client.set("/brokers/topics/before", b"{}")
            with pytest.raises(NoAuthError):
                client.create("/brokers/topics/rogue", b"{}")

        a = admin()
        try:  # ... while the cluster keeps serving: every metadata write goes through the controller identity
            a.create_topics([NewTopic("after", num_partitions=2, replication_factor=1)], timeout_ms=30000)
            a.alter_configs([ConfigResource(ConfigResourceType.TOPIC, "after", configs={"retention.ms": "5000"})])
            wait_for(lambda: zk.exists("/brokers/topics/after/partitions/1/state") is not None, 30, "partitions")
            replicas = orjson.loads(zk.get("/brokers/topics/after")[0])["partitions"]["0"]
            target = [b for b in (1, 2) if b not in replicas][:1]
            a.alter_partition_reassignments({TopicPartition("after", 0): target})
            wait_for(
                lambda: orjson.loads(zk.get("/brokers/topics/after")[0])["partitions"]["0"] == target,
                60,
                "the reassignment",
            )
        finally:
            a.close()
        assert orjson.loads(zk.get("/config/topics/after")[0])["config"] == {"retention.ms": "5000"}
        stack.restart_node(stack.nodes[1])  # a node restarting under lockdown finds its paths and registers
        verified = lockdown("verify")
        assert verified.returncode == 0, verified.stdout  # new znodes were created with lockdown's ACLs

        ctl.set_acls("/config/topics/after", OPEN_ACL_UNSAFE)  # a hand-made change
        changed = lockdown("verify")
        assert changed.returncode == 1 and "/config/topics/after: is [world:anyone:rwcda]" in changed.stdout

        assert lockdown("revert").returncode == 0
        assert {p: ctl.get_acls(p)[0] for p in original} == original
    finally:
        for client in (zk, ctl, brk):
            with contextlib.suppress(Exception):
                client.stop()
                client.close()
        stack.stop()
