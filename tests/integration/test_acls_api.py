"""CreateAcls / DescribeAcls / DeleteAcls over real sockets, kio-encoded, against a real ZooKeeper chroot:
the znodes and change notifications must be byte-for-byte what Kafka's AclAuthorizer writes."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import pytest
from kazoo.client import KazooClient
from kio.index import load_request_schema

from controller.store import kafka_acls as acl_store
from controller.wire.handlers.apis import Apis, NodeView
from controller.wire.handlers.kafka_acls import AclApis
from controller.wire.runtime import WireRuntime
from controller.zk.session import ZkSession
from tests.wireutil import call
from zkmodel.brokers import EndPoint
from zkmodel.kafka_acls import AclEntry, AclOperation, PatternType, PermissionType, ResourcePattern, ResourceType

pytestmark = pytest.mark.integration

VERSIONS = [1, 2, 3]
TOPIC, GROUP, CLUSTER, ANY_TYPE = 2, 3, 4, 1
ANY_PATTERN, MATCH, LITERAL, PREFIXED = 1, 2, 3, 4
ANY_OP, READ, WRITE, DESCRIBE = 1, 3, 4, 8
ANY_PERM, DENY, ALLOW = 1, 2, 3


class _Cache:
    def snapshot(self) -> Any:
        return SimpleNamespace(brokers={}, topics={}, controller_id=-1)

    def wait_for(self, predicate: Any, timeout: float) -> Any:
        return self.snapshot()


@dataclass
class Server:
    port: int
    session: ZkSession
    zk: KazooClient


@pytest.fixture
def server(zk_hosts: str, zk: KazooClient) -> Iterator[Server]:
    session = ZkSession(zk_hosts, session_timeout_ms=6000, name="acls")
    session.start()
    a = AclApis(session)
    view = Apis(NodeView(1, "cluster", _Cache(), None, 1, 1))
    runtime = WireRuntime(
        {29: a.describe_acls, 30: a.create_acls, 31: a.delete_acls, 18: view.api_versions},
        {18: (0, 4), 29: (1, 3), 30: (1, 3), 31: (1, 3)},
        max_frame=1 << 20,
    )
    port = runtime.start([EndPoint("PLAINTEXT", "127.0.0.1", 0, "PLAINTEXT")])[0].port
    try:
        yield Server(port, session, zk)
    finally:
        runtime.stop()
        session.close()


def request_cls(key: int, version: int) -> Any:
    return load_request_schema(key, version)


def _module(key: int, version: int) -> Any:
    cls = load_request_schema(key, version)
    return __import__(cls.__module__, fromlist=["x"])


def creation(
    version: int,
    rtype: int,
    name: str,
    pattern: int,
    principal: str = "User:alice",
    host: str = "*",
    op: int = READ,
    perm: int = ALLOW,
) -> Any:
    return _module(30, version).AclCreation(
        resource_type=rtype,
        resource_name=name,
        resource_pattern_type=pattern,
        principal=principal,
        host=host,
        operation=op,
        permission_type=perm,
    )


def create(port: int, version: int, *creations: Any) -> list[tuple[int, str | None]]:
    resp = call(port, 30, version, request_cls(30, version)(creations=tuple(creations)))
    return [(r.error_code.value, r.error_message) for r in resp.results]


def filter_fields(
    rtype: int = ANY_TYPE,
    name: str | None = None,
    pattern: int = ANY_PATTERN,
    principal: str | None = None,
    host: str | None = None,
    op: int = ANY_OP,
    perm: int = ANY_PERM,
) -> dict[str, Any]:
    return {
        "resource_type_filter": rtype,
        "resource_name_filter": name,
        "pattern_type_filter": pattern,
        "principal_filter": principal,
        "host_filter": host,
        "operation": op,
        "permission_type": perm,
    }


def describe(port: int, version: int, **kw: Any) -> Any:
    return call(port, 29, version, request_cls(29, version)(**filter_fields(**kw)))


def bindings(resp: Any) -> set[tuple[int, str, int, str, str, int, int]]:
    return {
        (r.resource_type, r.resource_name, r.pattern_type, a.principal, a.host, a.operation, a.permission_type)
        for r in resp.resources
        for a in r.acls
    }


def delete(port: int, version: int, *filters: dict[str, Any]) -> Any:
    module = _module(31, version)
    req = request_cls(31, version)(filters=tuple(module.DeleteAclsFilter(**f) for f in filters))
    return call(port, 31, version, req)


def node_json(zk: KazooClient, path: str) -> Any:
    data, _ = zk.get(path)
    return data


def changes(zk: KazooClient, parent: str) -> list[bytes]:
    return [zk.get(f"{parent}/{c}")[0] for c in sorted(zk.get_children(parent))] if zk.exists(parent) else []


@pytest.mark.parametrize("version", VERSIONS)
def test_create_writes_kafka_znodes_and_notifications(server: Server, version: int) -> None:
    port, zk = server.port, server.zk
    results = create(
        port,
        version,
        creation(version, TOPIC, "orders", LITERAL),
        creation(version, TOPIC, "orders", LITERAL, principal="User:bob", op=WRITE, perm=DENY, host="10.0.0.1"),
        creation(version, TOPIC, "pay", PREFIXED, op=DESCRIBE),
        creation(version, GROUP, "*", LITERAL),
    )
    assert results == [(0, None)] * 4
    # One node per resource, both entries in one CAS write, Kafka's HashMap key order.
    assert node_json(zk, "/kafka-acl/Topic/orders") == (
        b'{"acls":[{"principal":"User:alice","permissionType":"Allow","host":"*","operation":"Read"},'
        b'{"principal":"User:bob","permissionType":"Deny","host":"10.0.0.1","operation":"Write"}],"version":1}'
    )
    assert node_json(zk, "/kafka-acl-extended/prefixed/Topic/pay") == (
        b'{"acls":[{"principal":"User:alice","permissionType":"Allow","host":"*","operation":"Describe"}],"version":1}'
    )
    assert json.loads(node_json(zk, "/kafka-acl/Group/*"))["acls"][0]["operation"] == "Read"
    # One notification per changed resource, in the pattern type's change store.
    assert sorted(changes(zk, "/kafka-acl-changes")) == [b"GROUP:*", b"TOPIC:orders"]
    assert changes(zk, "/kafka-acl-extended-changes") == [
        b'{"version":1,"resourceType":"TOPIC","name":"pay","patternType":"PREFIXED"}'
    ]
    assert all(c.startswith("acl_changes_") and len(c) == 22 for c in zk.get_children("/kafka-acl-changes"))
    # Creating an ACL that exists changes nothing: no write, no notification.
    _, stat = zk.get("/kafka-acl/Topic/orders")
    assert create(port, version, creation(version, TOPIC, "orders", LITERAL)) == [(0, None)]
    assert zk.get("/kafka-acl/Topic/orders")[1].version == stat.version
    assert len(changes(zk, "/kafka-acl-changes")) == 2
    # A new entry on an existing resource is a setData at the read version.
    assert create(port, version, creation(version, TOPIC, "orders", LITERAL, principal="User:carol")) == [(0, None)]
    assert zk.get("/kafka-acl/Topic/orders")[1].version == stat.version + 1
    assert len(json.loads(node_json(zk, "/kafka-acl/Topic/orders"))["acls"]) == 3


@pytest.mark.parametrize("version", VERSIONS)
def test_describe_filters(server: Server, version: int) -> None:
    port = server.port
    assert (
        create(
            port,
            version,
            creation(version, TOPIC, "orders", LITERAL),
            creation(version, TOPIC, "*", LITERAL, principal="User:bob"),
            creation(version, TOPIC, "ord", PREFIXED, principal="User:carol", perm=DENY),
            creation(version, TOPIC, "orders-eu", PREFIXED, principal="User:dan"),
            creation(version, GROUP, "orders", LITERAL),
        )
        == [(0, None)] * 5
    )
    everything = describe(port, version)
    assert everything.error_code.value == 0 and everything.error_message is None
    assert len(bindings(everything)) == 5
    match = bindings(describe(port, version, rtype=TOPIC, name="orders", pattern=MATCH))
    assert {(b[1], b[2]) for b in match} == {("orders", LITERAL), ("*", LITERAL), ("ord", PREFIXED)}
    any_ = bindings(describe(port, version, rtype=TOPIC, name="orders", pattern=ANY_PATTERN))
    assert {(b[1], b[2]) for b in any_} == {("orders", LITERAL)}
    literal = bindings(describe(port, version, rtype=ANY_TYPE, name="orders", pattern=LITERAL))
    assert {(b[0], b[1]) for b in literal} == {(TOPIC, "orders"), (GROUP, "orders")}
    prefixed = bindings(describe(port, version, pattern=PREFIXED))
    assert {b[1] for b in prefixed} == {"ord", "orders-eu"}
    assert bindings(describe(port, version, principal="User:carol", perm=DENY)) == {
        (TOPIC, "ord", PREFIXED, "User:carol", "*", READ, DENY)
    }
    assert bindings(describe(port, version, perm=DENY, principal="User:alice")) == set()
    bad = describe(port, version, rtype=0)
    assert bad.error_code.value == 42 and bad.resources == ()
    assert describe(port, version, pattern=9).error_code.value == 42


@pytest.mark.parametrize("version", VERSIONS)
def test_delete_filters(server: Server, version: int) -> None:
    port, zk = server.port, server.zk
    assert (
        create(
            port,
            version,
            creation(version, TOPIC, "orders", LITERAL),
            creation(version, TOPIC, "orders", LITERAL, principal="User:bob"),
            creation(version, TOPIC, "ord", PREFIXED),
            creation(version, GROUP, "g", LITERAL),
        )
        == [(0, None)] * 4
    )
    before_literal = len(changes(zk, "/kafka-acl-changes"))
    resp = delete(
        port,
        version,
        filter_fields(rtype=TOPIC, name="orders", pattern=LITERAL, principal="User:bob"),
        filter_fields(rtype=TOPIC, name="orders", pattern=MATCH),  # bob's is credited to the first filter
        filter_fields(rtype=TOPIC, name="nothing", pattern=LITERAL),
    )
    got = [
        [(m.error_code.value, m.resource_name, m.pattern_type, m.principal) for m in r.matching_acls]
        for r in resp.filter_results
    ]
    assert [r.error_code.value for r in resp.filter_results] == [0, 0, 0]
    assert got[0] == [(0, "orders", LITERAL, "User:bob")]
    assert sorted(got[1]) == [(0, "ord", PREFIXED, "User:alice"), (0, "orders", LITERAL, "User:alice")]
    assert got[2] == []
    # The last ACL of a resource gone: its node is deleted, and the change is announced.
    assert zk.exists("/kafka-acl/Topic/orders") is None
    assert zk.exists("/kafka-acl-extended/prefixed/Topic/ord") is None
    assert changes(zk, "/kafka-acl-changes")[before_literal:] == [b"TOPIC:orders"]
    assert changes(zk, "/kafka-acl-extended-changes")[-1] == (
        b'{"version":1,"resourceType":"TOPIC","name":"ord","patternType":"PREFIXED"}'
    )
    assert bindings(describe(port, version)) == {(GROUP, "g", LITERAL, "User:alice", "*", READ, ALLOW)}
    # UNKNOWN elements: Kafka refuses the whole request, nothing is deleted.
    bad = delete(port, version, filter_fields(), filter_fields(op=0))
    assert [(r.error_code.value, r.matching_acls) for r in bad.filter_results] == [(42, ()), (42, ())]
    assert zk.exists("/kafka-acl/Group/g") is not None
    everything = delete(port, version, filter_fields())
    assert [m.resource_name for m in everything.filter_results[0].matching_acls] == ["g"]
    assert zk.exists("/kafka-acl/Group/g") is None


@pytest.mark.parametrize("version", VERSIONS)
def test_create_rejects_bad_bindings(server: Server, version: int) -> None:
    port, zk = server.port, server.zk
    results = create(
        port,
        version,
        creation(version, TOPIC, "ok", LITERAL),
        creation(version, TOPIC, "x", ANY_PATTERN),
        creation(version, TOPIC, "x", MATCH),
        creation(version, TOPIC, "x", 0),
        creation(version, ANY_TYPE, "x", LITERAL),
        creation(version, 42, "x", LITERAL),
        creation(version, TOPIC, "x", LITERAL, op=ANY_OP),
        creation(version, TOPIC, "x", LITERAL, perm=ANY_PERM),
        creation(version, TOPIC, "x", LITERAL, op=0),
        creation(version, CLUSTER, "my-cluster", LITERAL),
        creation(version, TOPIC, "", LITERAL),
        creation(version, TOPIC, "a/b", PREFIXED),
        creation(version, TOPIC, "x", LITERAL, principal="alice"),
    )
    assert results[0] == (0, None)
    assert [code for code, _ in results[1:]] == [42] * 12
    messages = [m or "" for _, m in results[1:]]
    assert messages[0] == "patternType must not be ANY" and messages[1] == "patternType must not be MATCH"
    assert "unknown elements" in messages[2] and "unknown elements" in messages[4]
    assert messages[3] == "resourceType must not be ANY"
    assert messages[5] == "operation must not be ANY" and messages[6] == "permissionType must not be ANY"
    assert messages[8] == "The only valid name for the CLUSTER resource is kafka-cluster"
    assert messages[9] == "Invalid empty resource name" and "invalid resource name: a/b" in messages[10]
    assert zk.get_children("/kafka-acl/Topic") == ["ok"]
    assert create(port, version, creation(version, CLUSTER, "kafka-cluster", LITERAL)) == [(0, None)]


def test_concurrent_creates_on_one_resource_all_land(server: Server, zk_hosts: str) -> None:
    """The CAS retry loop: writers racing on one node each get their entry in."""
    sessions = [ZkSession(zk_hosts, session_timeout_ms=6000, name=f"w{i}") for i in range(4)]
    for s in sessions:
        s.start()
    pattern = ResourcePattern(ResourceType.TOPIC, "hot", PatternType.LITERAL)
    errors: list[Any] = []

    def writer(i: int, s: ZkSession) -> None:
        for j in range(5):
            entry = AclEntry(f"User:u{i}-{j}", PermissionType.ALLOW, "*", AclOperation.READ)
            errors.extend(e for e, _m in acl_store.create_acls(s, [acl_store.AclBinding(pattern, entry)]) if e.code)

    threads = [threading.Thread(target=writer, args=(i, s)) for i, s in enumerate(sessions)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for s in sessions:
        s.close()
    assert errors == []
    assert len(acl_store.list_acls(server.session)[pattern]) == 20
    assert len(changes(server.zk, "/kafka-acl-changes")) == 20


def test_list_skips_unreadable_nodes(server: Server, caplog: pytest.LogCaptureFixture) -> None:
    zk = server.zk
    zk.create("/kafka-acl/Topic/broken", b"not json", makepath=True)
    zk.create("/kafka-acl/Bogus/x", b"{}", makepath=True)
    zk.create(
        "/kafka-acl/Topic/fine",
        b'{"version":1,"acls":[{"principal":"User:a","permissionType":"Allow","operation":"All","host":"*"}]}',
    )
    got = acl_store.list_acls(server.session)
    assert list(got) == [ResourcePattern(ResourceType.TOPIC, "fine")]
    assert got[ResourcePattern(ResourceType.TOPIC, "fine")][0].operation is AclOperation.ALL
    assert "broken" in caplog.text
