"""``bridgekeeper lockdown`` on a real ZooKeeper holding a Kafka-shaped tree: plan changes nothing, apply saves
the ACLs and locks (others keep READ, only the controller identity writes metadata, brokers may still
register), verify passes then names a path changed by hand, revert restores the original ACLs exactly, and
apply is idempotent; a refusal names its znode, and a connection lost part-way asks for the rerun that
finishes the work."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError
from kazoo.security import ACL, ANYONE_ID_UNSAFE, Permissions

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
        "/brokers",
        "/brokers/ids",
        "/brokers/topics",
        paths.topic("t"),
        paths.partition_state("t", 0),
        "/config",
        "/config/topics",
        "/config/topics/t",
        "/config/users",
        "/config/users/alice",
        "/config/changes",
        "/admin",
        "/admin/delete_topics",
        "/controller_epoch",
        "/isr_change_notification",
    ]
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


def _lockdown(command: str, zk_hosts: str, backup: Path | None = None, identity: str = CONTROLLER) -> int:
    flags = ["--controller-identity", identity, "--broker-identity", BROKER]
    return bridgekeeper(
        ["lockdown", command, "--zookeeper", zk_hosts, *flags, *(["--backup", str(backup)] if backup else [])]
    )


def test_a_znode_the_identity_may_not_change_is_named(
    zk: KazooClient, zk_hosts: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """setACL needs ADMIN: a znode readable by all but administrable by nobody stops apply with exit 1 and
    its path; the backup was saved first, so a rerun by someone who may change it still has the originals."""
    zk.ensure_path("/brokers/topics/open")
    zk.create("/brokers/topics/read-only", b"{}", acl=[ACL(Permissions.READ, ANYONE_ID_UNSAFE)])
    backup = tmp_path / "acls.json"
    assert _lockdown("apply", zk_hosts, backup) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: /brokers/topics/read-only: not authorised to set its ACL"), err
    assert orjson.loads(backup.read_bytes())["acls"]["/brokers/topics/read-only"] == [[1, "world", "anyone"]]


def test_a_reader_without_the_controller_identity_is_told_so(
    zk_hosts: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """After lockdown, credentials are readable by the controller (and brokers) only: another identity's
    verify cannot read the tree and says whose identity it used, exit 1."""
    client = KazooClient(zk_hosts)
    client.start(timeout=20)
    try:
        client.ensure_path("/config/users/alice")
    finally:
        client.stop()
        client.close()
    backup = tmp_path / "acls.json"
    assert _lockdown("apply", zk_hosts, backup) == 0
    try:
        capsys.readouterr()
        assert _lockdown("verify", zk_hosts, identity="digest:someone:else") == 1
        assert "not authorised to read Kafka's znodes as 'someone'" in capsys.readouterr().err
    finally:
        assert _lockdown("revert", zk_hosts, backup) == 0


def test_a_connection_lost_part_way_says_rerun_and_the_rerun_finishes(
    zk: KazooClient,
    zk_hosts: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """ZooKeeper gone after the first setACL: exit 3 with the advice to rerun; the rerun locks the rest and the
    backup still holds every original ACL, so revert restores them all."""
    from controller.store.znode_acls import set_znode_acls as real
    from controller.zk.errors import ZkUnavailable
    from controller.zk.session import ZkSession
    from migrate.lockdown import tool

    tree = ["/brokers/topics/a", "/brokers/topics/b", "/config/topics/a"]
    for path in tree:
        zk.ensure_path(path)
    before = acls(zk, ["/", *tree])
    backup = tmp_path / "acls.json"
    calls: list[str] = []

    def drops_after_one(session: ZkSession, path: str, acl: list[tuple[int, str, str]]) -> bool:
        calls.append(path)
        if len(calls) > 1:
            raise ZkUnavailable(f"setACL {path}: ZooKeeper unavailable for 5.0s")
        return real(session, path, acl)

    monkeypatch.setattr(tool, "set_znode_acls", drops_after_one)
    assert _lockdown("apply", zk_hosts, backup) == 3
    assert "rerun the command (it is safe to rerun)" in capsys.readouterr().err
    assert acls(zk, ["/", *tree]) != before  # the first znode was locked

    monkeypatch.setattr(tool, "set_znode_acls", real)
    assert _lockdown("apply", zk_hosts, backup) == 0
    assert _lockdown("verify", zk_hosts) == 0
    assert _lockdown("revert", zk_hosts, backup) == 0
    assert acls(zk, ["/", *tree]) == before
