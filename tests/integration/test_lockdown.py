"""``bridgekeeper lockdown`` on a real ZooKeeper holding a Kafka-shaped tree: plan changes nothing, apply saves
the ACLs and locks (others keep READ, only the controller identity writes metadata, brokers may still
register), verify passes then names a path changed by hand, revert restores the original ACLs exactly, and
apply is idempotent."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError

from controller.cli import main as bridgekeeper
from zkmodel import paths

CONTROLLER = "digest:ctl:ctl-secret"
BROKER = "digest:brk:brk-secret"


def acls(client: KazooClient, tree: list[str]) -> dict[str, list[tuple[int, str, str]]]:
    return {p: [(a.perms, a.id.scheme, a.id.id) for a in client.get_acls(p)[0]] for p in tree}


def test_plan_apply_verify_revert(
    zk: KazooClient, zk_hosts: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = [
        "/brokers", "/brokers/ids", "/brokers/topics", paths.topic("t"), paths.partition_state("t", 0), "/config",
        "/config/topics", "/config/topics/t", "/config/users", "/config/users/alice", "/config/changes", "/admin",
        "/admin/delete_topics", "/controller_epoch", "/isr_change_notification",
    ]  # fmt: skip
    for path in tree:
        zk.ensure_path(path)
    zk.create("/consumers", b"")
    before = acls(zk, [*tree, "/consumers"])
    common = ["lockdown", "--zookeeper", zk_hosts, "--controller-identity", CONTROLLER, "--broker-identity", BROKER]
    backup = tmp_path / "acls.json"

    assert bridgekeeper(["lockdown", "plan", *common[1:]]) == 0
    planned = capsys.readouterr().out
    assert f"{paths.topic('t')}: [world:anyone:rwcda] -> [digest:ctl:…:rwcda, world:anyone:r]" in planned
    assert "/consumers" not in planned
    assert acls(zk, [*tree, "/consumers"]) == before  # plan changed nothing

    assert bridgekeeper(["lockdown", "apply", *common[1:], "--backup", str(backup)]) == 0
    saved = orjson.loads(backup.read_bytes())["acls"]
    assert saved[paths.topic("t")] == [[31, "world", "anyone"]]
    with pytest.raises(NoAuthError):  # anyone else: read only
        zk.set(paths.topic("t"), b"{}")
    with pytest.raises(NoAuthError):
        zk.get("/config/users/alice")  # credentials: not even READ
    assert zk.get(paths.topic("t")) is not None
    assert zk.get_acls("/consumers")[0][0].perms == 31  # left alone, as ZkSecurityMigrator does

    def as_identity(identity: str) -> KazooClient:
        client = KazooClient(zk_hosts, auth_data=[("digest", identity.split(":", 1)[1])])
        client.start(timeout=20)
        return client

    controller, broker = as_identity(CONTROLLER), as_identity(BROKER)
    try:
        controller.set(paths.topic("t"), b'{"version":3}')  # the controller writes metadata
        controller.create(paths.topic("new"), b"{}")
        broker.create("/brokers/ids/7", b"{}", ephemeral=True)  # brokers still register
        with pytest.raises(NoAuthError):
            broker.set(paths.topic("t"), b"{}")
        with pytest.raises(NoAuthError):
            broker.create(paths.topic("rogue"), b"{}")
    finally:
        broker.stop()
        broker.close()

    assert bridgekeeper(["lockdown", "apply", *common[1:], "--backup", str(backup)]) == 0
    capsys.readouterr()
    # /brokers/topics/new was created with an open ACL by the test: apply locked it; a second apply has nothing to do
    assert bridgekeeper(["lockdown", "apply", *common[1:], "--backup", str(backup)]) == 0
    assert "0 znode(s) locked" in capsys.readouterr().out
    assert bridgekeeper(["lockdown", "verify", *common[1:]]) == 0

    controller.set_acls("/config/topics/t", [zk.get_acls("/consumers")[0][0]])  # a hand-made change
    assert bridgekeeper(["lockdown", "verify", *common[1:]]) == 1
    assert "/config/topics/t: is [world:anyone:rwcda]" in capsys.readouterr().out

    assert bridgekeeper(["lockdown", "revert", *common[1:], "--backup", str(backup)]) == 0
    controller.stop()
    controller.close()
    assert acls(zk, [*tree, "/consumers"]) == before  # exactly the original ACLs
