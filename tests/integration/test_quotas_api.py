"""DescribeClientQuotas / AlterClientQuotas over the wire against a real ZooKeeper chroot."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import orjson
import pytest
from kazoo.client import KazooClient
from kio.index import load_request_schema

from controller.store.quotas import java_double_to_string, java_parse_double
from controller.store.registration import ensure_persistent_paths
from controller.wire.apikeys import SUPPORTED as ALL_APIS
from controller.wire.handlers.apis import Apis, NodeView
from controller.wire.handlers.quotas import QuotaApis
from controller.wire.runtime import WireRuntime
from controller.zk.session import ZkSession
from tests.wireutil import call
from zkmodel.brokers import EndPoint

pytestmark = pytest.mark.integration

SUPPORTED = {k: ALL_APIS[k] for k in (18, 48, 49)}
EXACT, DEFAULT, SPECIFIED = 0, 1, 2
INVALID_REQUEST, UNKNOWN_SERVER_ERROR, UNSUPPORTED_VERSION, STALE_CONTROLLER_EPOCH = 42, -1, 35, 11

Entity = tuple[tuple[str, str | None], ...]


class Cache:
    def snapshot(self) -> Any:
        return SimpleNamespace(topics={}, brokers={}, controller_id=1)

    def wait_for(self, predicate: Any, timeout: float) -> Any:
        return self.snapshot()


@pytest.fixture
def server(zk: KazooClient, zk_hosts: str) -> Iterator[tuple[int, KazooClient]]:
    session = ZkSession(zk_hosts, name="quotas-test")
    session.start()
    ensure_persistent_paths(session)
    zk.create("/controller", b'{"version":2,"brokerid":1,"timestamp":"1","kraftControllerEpoch":-1}', ephemeral=True)
    view = NodeView(1, "cluster", Cache(), None, 1, 1)
    handlers = QuotaApis(view, session).handlers()
    runtime = WireRuntime({**handlers, 18: Apis(view).api_versions}, SUPPORTED, max_frame=1 << 20)
    port = runtime.start([EndPoint("PLAINTEXT", "127.0.0.1", 0, "PLAINTEXT")])[0].port
    try:
        yield port, zk
    finally:
        runtime.stop()
        session.close()


def mod(key: int, version: int) -> Any:
    return sys.modules[load_request_schema(key, version).__module__]


def alter_many(
    port: int, entries: list[tuple[Entity, list[tuple[str, float | None]]]], version: int = 1, validate: bool = False
) -> list[tuple[int, str | None]]:
    m = mod(49, version)
    data = tuple(
        m.EntryData(
            entity=tuple(m.EntityData(entity_type=t, entity_name=n) for t, n in ent),
            ops=tuple(m.OpData(key=k, value=0.0 if v is None else v, remove=v is None) for k, v in ops),
        )
        for ent, ops in entries
    )
    body = call(port, 49, version, entries=data, validate_only=validate)
    assert [tuple((e.entity_type, e.entity_name) for e in r.entity) for r in body.entries] == [e for e, _o in entries]
    return [(int(r.error_code.value), r.error_message) for r in body.entries]


def alter(port: int, ent: Entity, ops: list[tuple[str, float | None]], **kw: Any) -> tuple[int, str | None]:
    return alter_many(port, [(ent, ops)], **kw)[0]


def describe(port: int, components: list[tuple[str, int, str | None]], strict: bool = False, version: int = 1) -> Any:
    m = mod(48, version)
    comps = tuple(m.ComponentData(entity_type=t, match_type=mt, match=n) for t, mt, n in components)
    return call(port, 48, version, components=comps, strict=strict)


def found(
    port: int, components: list[tuple[str, int, str | None]], strict: bool = False
) -> dict[Entity, dict[str, float]]:
    body = describe(port, components, strict)
    assert body.error_code.value == 0 and body.error_message is None
    return {
        tuple((e.entity_type, e.entity_name) for e in entry.entity): {v.key: v.value for v in entry.values}
        for entry in body.entries
    }


def changes(zk: KazooClient) -> list[bytes]:
    return [zk.get(f"/config/changes/{c}")[0] for c in sorted(zk.get_children("/config/changes"))]


def note(path: str) -> bytes:
    return orjson.dumps({"version": 2, "entity_path": path})


U, C, IP = "user", "client-id", "ip"


def test_java_number_text() -> None:
    cases = {1024.0: "1024.0", 1e7: "1.0E7", 9999999.5: "9999999.5", 0.001: "0.001", 1e-4: "1.0E-4", 0.1: "0.1"}
    for value, text in cases.items():
        assert java_double_to_string(value) == text
    assert java_double_to_string(-2.5e10) == "-2.5E10"
    assert java_parse_double(" 12.5d ") == 12.5
    with pytest.raises(ValueError):
        java_parse_double("1_0")


@pytest.mark.parametrize("version", [0, 1])
def test_alter_writes_znodes_and_notifications(server: tuple[int, KazooClient], version: int) -> None:
    port, zk = server
    assert alter(
        port, ((U, "alice"),), [("producer_byte_rate", 1024.0), ("request_percentage", 50.0)], version=version
    ) == (0, None)
    assert (
        zk.get("/config/users/alice")[0]
        == b'{"version":1,"config":{"request_percentage":"50.0","producer_byte_rate":"1024"}}'
    )
    assert alter(port, ((U, "alice"), (C, "app 1")), [("consumer_byte_rate", 2048.0)], version=version) == (0, None)
    assert zk.get("/config/users/alice/clients/app%201")[0] == b'{"version":1,"config":{"consumer_byte_rate":"2048"}}'
    assert alter(port, ((C, None),), [("controller_mutation_rate", 1e7)], version=version) == (0, None)
    assert zk.get("/config/clients/<default>")[0] == b'{"version":1,"config":{"controller_mutation_rate":"1.0E7"}}'
    assert alter(port, ((IP, "1.2.3.4"),), [("connection_creation_rate", 10.0)], version=version) == (0, None)
    assert zk.get("/config/ips/1.2.3.4")[0] == b'{"version":1,"config":{"connection_creation_rate":"10"}}'
    assert alter(port, ((U, None), (C, None)), [("producer_byte_rate", 5.0)], version=version) == (0, None)
    assert (
        zk.get("/config/users/<default>/clients/<default>")[0] == b'{"version":1,"config":{"producer_byte_rate":"5"}}'
    )
    assert changes(zk) == [
        note("users/alice"),
        note("users/alice/clients/app%201"),
        note("clients/<default>"),
        note("ips/1.2.3.4"),
        note("users/<default>/clients/<default>"),
    ]
    # remove one key: the rest stays
    assert alter(port, ((U, "alice"),), [("request_percentage", None)], version=version) == (0, None)
    assert zk.get("/config/users/alice")[0] == b'{"version":1,"config":{"producer_byte_rate":"1024"}}'


def test_validate_only_writes_nothing(server: tuple[int, KazooClient]) -> None:
    port, zk = server
    assert alter(port, ((U, "bob"),), [("producer_byte_rate", 1.0)], validate=True) == (0, None)
    assert zk.exists("/config/users/bob") is None and changes(zk) == []
    assert alter(port, ((U, "bob"),), [("producer_byte_rate", 1.5)], validate=True) == (
        INVALID_REQUEST,
        "Configuration producer_byte_rate must be a LONG value",
    )


def test_emptied_entities_are_deleted_like_kafka(server: tuple[int, KazooClient]) -> None:
    port, zk = server
    alter(port, ((U, "u1"),), [("producer_byte_rate", 1.0)])
    alter(port, ((U, "u1"), (C, "c1")), [("producer_byte_rate", 2.0)])
    # the user node has a child: emptied, it stays with an empty config
    assert alter(port, ((U, "u1"),), [("producer_byte_rate", None)]) == (0, None)
    assert zk.get("/config/users/u1")[0] == b'{"version":1,"config":{}}'
    # removing the last client of a config-less user removes the user node too (tryCleanQuotaNodes)
    assert alter(port, ((U, "u1"), (C, "c1")), [("producer_byte_rate", None)]) == (0, None)
    assert zk.exists("/config/users/u1") is None
    # a plain entity left empty is deleted; a removal on a missing entity still announces a change
    alter(port, ((C, "solo"),), [("consumer_byte_rate", 3.0)])
    assert alter(port, ((C, "solo"),), [("consumer_byte_rate", None)]) == (0, None)
    assert zk.exists("/config/clients/solo") is None
    assert alter(port, ((C, "never"),), [("consumer_byte_rate", None)]) == (0, None)
    assert zk.exists("/config/clients/never") is None
    assert changes(zk)[-3:] == [note("clients/solo"), note("clients/solo"), note("clients/never")]
    # two clients: only the emptied one goes
    alter(port, ((U, "u2"), (C, "a")), [("producer_byte_rate", 1.0)])
    alter(port, ((U, "u2"), (C, "b")), [("producer_byte_rate", 1.0)])
    alter(port, ((U, "u2"), (C, "a")), [("producer_byte_rate", None)])
    assert zk.get_children("/config/users/u2/clients") == ["b"]


def test_bad_alterations(server: tuple[int, KazooClient]) -> None:
    port, zk = server
    results = alter_many(
        port,
        [
            ((), [("producer_byte_rate", 1.0)]),
            (((U, ""),), [("producer_byte_rate", 1.0)]),
            ((("group", "g"),), [("producer_byte_rate", 1.0)]),
            (((U, "a"), (IP, "1.2.3.4")), [("producer_byte_rate", 1.0)]),
            (((IP, "no.such.host.invalid"),), [("connection_creation_rate", 1.0)]),
            (((U, "a"),), [("connection_creation_rate", 1.0)]),
            (((IP, "1.2.3.4"),), [("producer_byte_rate", 1.0)]),
            (((IP, "1.2.3.4"),), [("connection_creation_rate", 1.5)]),
            (((IP, "1.2.3.4"),), [("connection_creation_rate", -1.0)]),
            (((U, "a"),), [("SCRAM-SHA-256", 1.0)]),
            (((U, "ok"),), [("request_percentage", 12.5)]),
        ],
    )
    assert results == [
        (INVALID_REQUEST, "Invalid empty client quota entity"),
        (INVALID_REQUEST, "Empty user not supported"),
        (INVALID_REQUEST, "Unhandled client quota entity type: group"),
        (INVALID_REQUEST, "Invalid quota entity combination, IP entity should not be used with user/client ID entity."),
        (INVALID_REQUEST, "no.such.host.invalid is not a valid IP or resolvable host."),
        (INVALID_REQUEST, "Invalid configuration key connection_creation_rate"),
        (INVALID_REQUEST, "Invalid configuration key producer_byte_rate"),
        (INVALID_REQUEST, "Configuration connection_creation_rate must be a INT value"),
        # Kafka's (value + 1e-6).toInt truncates toward zero, so a negative whole number fails this check
        (INVALID_REQUEST, "Configuration connection_creation_rate must be a INT value"),
        (UNKNOWN_SERVER_ERROR, None),  # IllegalStateException: Unexpected config type STRING
        (0, None),
    ]
    assert zk.get_children("/config/users") == ["ok"] and zk.get_children("/config/ips") == []
    assert changes(zk) == [note("users/ok")]


def test_no_controller_is_stale_controller_epoch(server: tuple[int, KazooClient]) -> None:
    port, zk = server
    zk.delete("/controller")
    message = "Cannot set entity configs for users x/clients/y when there is no controller."
    assert alter(port, ((U, "x"), (C, "y")), [("producer_byte_rate", 1.0)]) == (STALE_CONTROLLER_EPOCH, message)
    assert zk.exists("/config/users/x/clients/y") is None and changes(zk) == []


@pytest.fixture
def populated(server: tuple[int, KazooClient]) -> tuple[int, KazooClient]:
    port, zk = server
    for ent, key in [
        (((U, "alice"),), "producer_byte_rate"),
        (((U, None),), "producer_byte_rate"),
        (((U, "alice"), (C, "app")), "consumer_byte_rate"),
        (((U, None), (C, "app")), "consumer_byte_rate"),
        (((U, "bob"), (C, None)), "consumer_byte_rate"),
        (((C, "app"),), "request_percentage"),
        (((C, None),), "request_percentage"),
        (((IP, "1.2.3.4"),), "connection_creation_rate"),
        (((IP, None),), "connection_creation_rate"),
    ]:
        assert alter(port, ent, [(key, 7.0)]) == (0, None)
    zk.create("/config/users/carol", b'{"version":1,"config":{"SCRAM-SHA-256":"salt=x"}}')  # no quota: not listed
    return port, zk


def test_describe_filters(populated: tuple[int, KazooClient]) -> None:
    port, _zk = populated
    all_user_client = {
        ((U, "alice"),),
        ((U, None),),
        ((U, "alice"), (C, "app")),
        ((U, None), (C, "app")),
        ((U, "bob"), (C, None)),
        ((C, "app"),),
        ((C, None),),
    }
    ips = {((IP, "1.2.3.4"),), ((IP, None),)}
    assert set(found(port, [])) == all_user_client | ips
    assert found(port, [], strict=True) == {}
    assert found(port, [(U, EXACT, "alice")], strict=True) == {((U, "alice"),): {"producer_byte_rate": 7.0}}
    assert set(found(port, [(U, EXACT, "alice")])) == {((U, "alice"),), ((U, "alice"), (C, "app"))}
    assert set(found(port, [(U, DEFAULT, None)])) == {((U, None),), ((U, None), (C, "app"))}
    assert set(found(port, [(U, DEFAULT, None)], strict=True)) == {((U, None),)}
    # SPECIFIED matches any name, the default entity included (ZkAdminManager: Some(null) is defined)
    assert set(found(port, [(U, SPECIFIED, None)], strict=True)) == {((U, "alice"),), ((U, None),)}
    assert set(found(port, [(U, SPECIFIED, None)])) == all_user_client - {((C, "app"),), ((C, None),)}
    assert set(found(port, [(C, EXACT, "app")])) == {((C, "app"),), ((U, "alice"), (C, "app")), ((U, None), (C, "app"))}
    assert set(found(port, [(C, DEFAULT, None)], strict=True)) == {((C, None),)}
    assert set(found(port, [(U, EXACT, "bob"), (C, DEFAULT, None)])) == {((U, "bob"), (C, None))}
    assert set(found(port, [(U, SPECIFIED, None), (C, SPECIFIED, None)], strict=True)) == {
        ((U, "alice"), (C, "app")),
        ((U, None), (C, "app")),
        ((U, "bob"), (C, None)),
    }
    assert found(port, [(IP, EXACT, "1.2.3.4")]) == {((IP, "1.2.3.4"),): {"connection_creation_rate": 7.0}}
    assert set(found(port, [(IP, DEFAULT, None)])) == {((IP, None),)}
    assert set(found(port, [(IP, SPECIFIED, None)], strict=True)) == ips
    assert found(port, [(U, EXACT, "nobody")]) == {}


def test_describe_entity_order_and_values(populated: tuple[int, KazooClient]) -> None:
    port, zk = populated
    zk.set("/config/users/alice", b'{"version":1,"config":{"producer_byte_rate":"1024","request_percentage":"1.0E-4"}}')
    body = describe(port, [(U, EXACT, "alice"), (C, EXACT, "app")], version=0)
    [entry] = body.entries
    assert [(e.entity_type, e.entity_name) for e in entry.entity] == [(U, "alice"), (C, "app")]
    assert found(port, [(U, EXACT, "alice")], strict=True) == {
        ((U, "alice"),): {"producer_byte_rate": 1024.0, "request_percentage": 1e-4}
    }


@pytest.mark.parametrize(
    ("components", "error", "message"),
    [
        ([(U, EXACT, "a"), (U, EXACT, "b")], INVALID_REQUEST, "Duplicate user filter component entity type"),
        ([(C, DEFAULT, None), (C, SPECIFIED, None)], INVALID_REQUEST, "Duplicate client filter component entity type"),
        ([(IP, DEFAULT, None), (IP, DEFAULT, None)], INVALID_REQUEST, "Duplicate ip filter component entity type"),
        ([("", EXACT, "a")], INVALID_REQUEST, "Unexpected empty filter component entity type"),
        ([("group", EXACT, "a")], UNSUPPORTED_VERSION, "Custom entity type 'group' not supported"),
        (
            [(U, EXACT, "a"), (IP, SPECIFIED, None)],
            INVALID_REQUEST,
            "Invalid entity filter component combination, IP filter component should not be used with user or "
            "clientId filter component.",
        ),
        ([(U, 7, None)], UNKNOWN_SERVER_ERROR, None),
        ([(U, EXACT, None)], UNKNOWN_SERVER_ERROR, None),
    ],
)
def test_describe_errors(
    server: tuple[int, KazooClient], components: list[tuple[str, int, str | None]], error: int, message: str | None
) -> None:
    port, _zk = server
    body = describe(port, components)
    assert (int(body.error_code.value), body.error_message, body.entries) == (error, message, None)


def test_describe_bad_stored_value(server: tuple[int, KazooClient]) -> None:
    port, zk = server
    zk.create("/config/clients/bad", b'{"version":1,"config":{"producer_byte_rate":"lots"}}')
    body = describe(port, [])
    assert (int(body.error_code.value), body.error_message, body.entries) == (UNKNOWN_SERVER_ERROR, None, None)


def test_stored_unknown_key_fails_validation(server: tuple[int, KazooClient]) -> None:
    port, zk = server
    zk.create("/config/clients/odd", b'{"version":1,"config":{"foo":"bar"}}')
    # DynamicConfig.Client.validate: require(...) fails -> IllegalArgumentException -> UNKNOWN_SERVER_ERROR
    assert alter(port, ((C, "odd"),), [("producer_byte_rate", 1.0)]) == (UNKNOWN_SERVER_ERROR, None)
    # removing the unknown key repairs it
    assert alter(port, ((C, "odd"),), [("foo", None), ("producer_byte_rate", 1.0)]) == (0, None)
    assert zk.get("/config/clients/odd")[0] == b'{"version":1,"config":{"producer_byte_rate":"1"}}'
