"""``zookeeper.set.acl``: znodes a session creates get Kafka's defaultAcls -- CREATOR_ALL expanded by the server
to the creator's digest id, plus world READ except under the sensitive roots -- through every create path
(plain creates, sequentials, parents made on the way, and multis, with and without data)."""

from __future__ import annotations

import base64
import hashlib

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError
from kazoo.security import ACL, Id, Permissions

from controller.config import ConfigError, config_from_properties
from controller.zk.ops import Create
from controller.zk.session import ZkSession
from controller.zk.znode_acls import kafka_policy


def digest(user: str, password: str) -> str:
    return user + ":" + base64.b64encode(hashlib.sha1(f"{user}:{password}".encode()).digest()).decode()


OWNER = ACL(Permissions.ALL, Id("digest", digest("ctl", "s3cret")))
#: ZooKeeper 3.8 redacts a digest's hash in getACL answers to anyone without ADMIN on the node.
OWNER_AS_OTHERS_SEE_IT = ACL(Permissions.ALL, Id("digest", "ctl:x"))
READ = ACL(Permissions.READ, Id("world", "anyone"))


def test_every_create_path_sets_kafkas_default_acls(zk: KazooClient, zk_hosts: str) -> None:
    session = ZkSession(zk_hosts, auth=[("digest", "ctl:s3cret")], acl_policy=kafka_policy(True))
    session.start()
    try:
        session.ensure_persistent(["/brokers/topics", "/config/users/alice", "/config/changes", "/admin"])
        assert session.create_only("/brokers/topics/t", b"{}")
        session.create_sequential("/config/changes/config_change_", b"{}")
        results = session.multi([Create("/admin/x", b"1"), Create("/admin/y", None)], what="test", write="test")
        assert not any(isinstance(r, Exception) for r in results)
    finally:
        session.close()
    owner = KazooClient(zk_hosts, auth_data=[("digest", "ctl:s3cret")])
    owner.start(timeout=20)
    try:
        assert owner.get_acls("/brokers/topics/t")[0] == [OWNER, READ]
        assert owner.get_acls("/brokers/topics")[0] == [OWNER, READ]  # parents made on the way too
        assert owner.get_acls("/config/users")[0] == [OWNER]  # a sensitive root: no world READ
        assert owner.get_acls("/config/users/alice")[0] == [OWNER]
        change = sorted(owner.get_children("/config/changes"))[0]
        assert owner.get_acls(f"/config/changes/{change}")[0] == [OWNER, READ]
        assert owner.get_acls("/admin/x")[0] == [OWNER, READ] and owner.get_acls("/admin/y")[0] == [OWNER, READ]
    finally:
        owner.stop()
        owner.close()
    assert zk.get_acls("/brokers/topics/t")[0] == [OWNER_AS_OTHERS_SEE_IT, READ]
    with pytest.raises(NoAuthError):  # anyone else may read but not write
        zk.set("/brokers/topics/t", b"mine")
    assert zk.get("/brokers/topics/t")[0] == b"{}"


def test_without_set_acl_znodes_stay_open(zk: KazooClient, zk_hosts: str) -> None:
    session = ZkSession(zk_hosts, auth=[("digest", "ctl:s3cret")])
    session.start()
    try:
        session.ensure_persistent(["/brokers/topics"])
    finally:
        session.close()
    assert zk.get_acls("/brokers/topics")[0] == [ACL(Permissions.ALL, Id("world", "anyone"))]


def test_set_acl_needs_an_identity() -> None:
    base = {"broker.id": "1", "zookeeper.connect": "127.0.0.1:2181", "zookeeper.set.acl": "true"}
    with pytest.raises(ConfigError, match=r"zookeeper\.set\.acl is true, but no ZooKeeper identity"):
        config_from_properties(base)
    config = config_from_properties({**base, "bridgekeeper.zookeeper.digest": "b:p"})
    assert config.zookeeper_set_acl
