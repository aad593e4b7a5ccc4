"""DescribeConfigs / AlterConfigs / IncrementalAlterConfigs over the wire against a real ZooKeeper chroot."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import orjson
import pytest
from kazoo.client import KazooClient
from kio.index import load_request_schema

from controller.store.registration import ensure_persistent_paths
from controller.wire.handlers.apis import Apis, NodeView
from controller.wire.handlers.configs import ConfigApis
from controller.wire.runtime import WireRuntime
from controller.zk.session import ZkSession
from tests.wireutil import call
from zkmodel.brokers import EndPoint
from zkmodel.topic_configs import TOPIC_CONFIG_DEFS, validate_topic_configs

pytestmark = pytest.mark.integration

SUPPORTED = {18: (0, 4), 32: (1, 4), 33: (0, 2), 44: (0, 1)}


class Cache:
    def __init__(self, topics: set[str]) -> None:
        self.topics = topics

    def snapshot(self) -> Any:
        return SimpleNamespace(topics={t: object() for t in self.topics}, brokers={}, controller_id=1)

    def wait_for(self, predicate: Any, timeout: float) -> Any:
        return self.snapshot()


#: The NodeView behind each served port, for tests that change a node setting.
SERVED_VIEWS: dict[int, NodeView] = {}


@pytest.fixture
def server(zk: KazooClient, zk_hosts: str) -> Iterator[tuple[int, KazooClient]]:
    session = ZkSession(zk_hosts, name="configs-test")
    session.start()
    ensure_persistent_paths(session)
    zk.create("/controller", b'{"version":2,"brokerid":1,"timestamp":"1","kraftControllerEpoch":-1}', ephemeral=True)
    zk.create("/brokers/topics/t", b'{"partitions":{"0":[1]},"version":3}')
    view = NodeView(1, "cluster", Cache({"t"}), None, 1, 1)
    cfg = ConfigApis(view, session)
    handlers = {32: cfg.describe_configs, 33: cfg.alter_configs, 44: cfg.incremental_alter_configs}
    runtime = WireRuntime({**handlers, 18: Apis(view).api_versions}, SUPPORTED, max_frame=1 << 20)
    port = runtime.start([EndPoint("PLAINTEXT", "127.0.0.1", 0, "PLAINTEXT")])[0].port
    SERVED_VIEWS[port] = view
    try:
        yield port, zk
    finally:
        SERVED_VIEWS.pop(port, None)
        runtime.stop()
        session.close()


def mod(key: int, version: int) -> Any:
    return sys.modules[load_request_schema(key, version).__module__]


def alter(
    port: int, version: int, rtype: int, name: str, configs: dict[str, str | None], validate: bool = False
) -> Any:
    m = mod(33, version)
    res = m.AlterConfigsResource(
        resource_type=rtype,
        resource_name=name,
        configs=tuple(m.AlterableConfig(name=k, value=v) for k, v in configs.items()),
    )
    return call(port, 33, version, resources=(res,), validate_only=validate).responses[0]


def incremental(port: int, version: int, rtype: int, name: str, ops: list[tuple[str, int, str | None]]) -> Any:
    m = mod(44, version)
    res = m.AlterConfigsResource(
        resource_type=rtype,
        resource_name=name,
        configs=tuple(m.AlterableConfig(name=k, config_operation=o, value=v) for k, o, v in ops),
    )
    return call(port, 44, version, resources=(res,), validate_only=False).responses[0]


def describe(port: int, version: int, rtype: int, name: str, keys: tuple[str, ...] | None = None) -> Any:
    m = mod(32, version)
    res = m.DescribeConfigsResource(resource_type=rtype, resource_name=name, configuration_keys=keys)
    extra = {"include_documentation": False} if version >= 3 else {}
    return call(port, 32, version, resources=(res,), include_synonyms=True, **extra).results[0]


def changes(zk: KazooClient) -> list[bytes]:
    return [zk.get(f"/config/changes/{c}")[0] for c in sorted(zk.get_children("/config/changes"))]


@pytest.mark.parametrize("version", [0, 1, 2])
def test_alter_configs_writes_kafka_bytes(server: tuple[int, KazooClient], version: int) -> None:
    port, zk = server
    r = alter(port, version, 2, "t", {"retention.ms": "1000", "cleanup.policy": "compact"})
    assert (r.error_code, r.error_message, r.resource_name) == (0, None, "t")
    data, _stat = zk.get("/config/topics/t")
    assert orjson.loads(data) == {"version": 1, "config": {"retention.ms": "1000", "cleanup.policy": "compact"}}
    assert data.startswith(b'{"version":1,"config":{')
    assert changes(zk) == [b'{"version":2,"entity_path":"topics/t"}']
    assert sorted(zk.get_children("/config/changes")) == ["config_change_0000000000"]
    # full replacement: a second AlterConfigs drops what it does not name
    assert alter(port, version, 2, "t", {"segment.ms": "5000"}).error_code == 0
    assert orjson.loads(zk.get("/config/topics/t")[0])["config"] == {"segment.ms": "5000"}
    assert len(changes(zk)) == 2


def test_alter_errors(server: tuple[int, KazooClient]) -> None:
    port, zk = server
    r = alter(port, 1, 2, "t", {"retention.ms": "abc"})
    assert r.error_code == 40
    assert r.error_message == (
        "Invalid config value for resource ConfigResource(type=TOPIC, name='t'): "
        "Invalid value abc for configuration retention.ms: Not a number of type LONG"
    )
    r = alter(port, 1, 2, "t", {"nope": "1"})
    assert (r.error_code, r.error_message) == (40, "Unknown topic config name: nope")
    r = alter(port, 1, 2, "missing", {"retention.ms": "1"})
    assert (r.error_code, r.error_message) == (3, "The topic 'missing' does not exist.")
    r = alter(port, 1, 2, "", {"retention.ms": "1"})
    assert (r.error_code, r.error_message) == (42, "Default topic resources are not allowed.")
    r = alter(port, 1, 16, "x", {"a": "1"})
    assert (r.error_code, r.error_message) == (42, "Unknown resource type 16")
    r = alter(port, 1, 2, "t", {"retention.ms": None})
    assert (r.error_code, r.error_message) == (42, "Null value not supported for : retention.ms")
    r = alter(port, 1, 2, "t", {"retention.ms": "5"}, validate=True)
    assert r.error_code == 0
    assert not zk.exists("/config/topics/t") and changes(zk) == []


def test_no_controller_is_stale_controller_epoch(server: tuple[int, KazooClient]) -> None:
    port, zk = server
    zk.delete("/controller")
    r = alter(port, 1, 2, "t", {"retention.ms": "5"})
    assert (r.error_code, r.error_message) == (
        11,
        "Cannot set entity configs for topics t when there is no controller.",
    )
    assert not zk.exists("/config/topics/t")


def test_a_write_between_two_controllers_waits_for_the_next(server: tuple[int, KazooClient]) -> None:
    """Kafka fails a config write with the non-retriable STALE_CONTROLLER_EPOCH in the moment between two
    controllers; with ``controller_wait_s`` (request.timeout.ms on a node) the write waits for the next one."""
    port, zk = server
    view = SERVED_VIEWS[port]
    view.controller_wait_s = 30.0
    zk.delete("/controller")
    elect = threading.Timer(
        0.3,
        lambda: zk.create(
            "/controller", b'{"version":2,"brokerid":2,"timestamp":"2","kraftControllerEpoch":-1}', ephemeral=True
        ),
    )
    elect.start()
    try:
        r = alter(port, 1, 2, "t", {"retention.ms": "5"})
    finally:
        elect.join()
    assert (r.error_code, r.error_message) == (0, None)
    assert orjson.loads(zk.get("/config/topics/t")[0])["config"] == {"retention.ms": "5"}


def test_incremental_ops(server: tuple[int, KazooClient]) -> None:
    port, zk = server
    r = incremental(port, 1, 2, "t", [("retention.ms", 0, "1000"), ("cleanup.policy", 2, "compact")])
    assert r.error_code == 0, r.error_message
    assert orjson.loads(zk.get("/config/topics/t")[0])["config"] == {
        "retention.ms": "1000",
        "cleanup.policy": "delete,compact",
    }
    r = incremental(port, 0, 2, "t", [("retention.ms", 1, None), ("cleanup.policy", 3, "delete")])
    assert r.error_code == 0, r.error_message
    assert orjson.loads(zk.get("/config/topics/t")[0])["config"] == {"cleanup.policy": "compact"}
    r = incremental(port, 1, 2, "t", [("retention.ms", 2, "5")])
    assert (r.error_code, r.error_message) == (40, "Config value append is not allowed for config key: retention.ms")
    assert len(changes(zk)) == 2


def test_fifty_concurrent_writers_of_one_topic_all_succeed(server: tuple[int, KazooClient]) -> None:
    """Concurrent IncrementalAlterConfigs on one topic, each from its own connection, do not race each
    other through the config znode's version check inside this one process (which would answer
    STALE_CONTROLLER_EPOCH "concurrent updates"): writes to one entity are ordered in-process, so every answer
    is 0 and no update is lost. Kafka knows 36 topic configs, so the 50 clients cycle over all of them (each
    key set to its default, which together make a valid config)."""
    port, zk = server
    values = {d.name: _config_text(d.default) for d in TOPIC_CONFIG_DEFS}
    validate_topic_configs(values)  # the precondition: all of them at once are a valid topic config
    keys = sorted(values)
    clients = 50

    def client(i: int) -> Any:
        key = keys[i % len(keys)]
        return incremental(port, 1, 2, "t", [(key, 0, values[key])])

    assert _concurrently(clients, client) == {i: (0, None) for i in range(clients)}
    assert orjson.loads(zk.get("/config/topics/t")[0])["config"] == values
    assert len(changes(zk)) == clients  # one change notification per write, none lost either


def test_fifty_concurrent_distinct_changes_of_one_topic_are_all_kept(server: tuple[int, KazooClient]) -> None:
    """Fix 7 with 50 changes that are all different, so that losing any one shows: a topic has only 36 config
    keys, so each client APPENDs its own ``<partition>:<broker>`` entry to one LIST config (a
    read-modify-write of that key, like a SET of a new key is of the znode). Every answer is 0 and all 50
    entries are in the znode afterwards."""
    port, zk = server
    clients = 50
    key = "follower.replication.throttled.replicas"

    def client(i: int) -> Any:
        return incremental(port, 1, 2, "t", [(key, 2, f"{i}:1")])  # APPEND

    assert _concurrently(clients, client) == {i: (0, None) for i in range(clients)}
    stored = orjson.loads(zk.get("/config/topics/t")[0])["config"]
    assert sorted(stored[key].split(",")) == sorted(f"{i}:1" for i in range(clients))
    assert len(changes(zk)) == clients


def _concurrently(clients: int, request: Callable[[int], Any]) -> dict[int, tuple[int, str | None]]:
    """Run ``request(i)`` for ``i < clients``, each on its own thread (and so its own connection), released
    together; returns each one's (error code, message)."""
    barrier = threading.Barrier(clients)
    answers: dict[int, tuple[int, str | None]] = {}

    def client(i: int) -> None:
        barrier.wait()
        r = request(i)
        answers[i] = (int(r.error_code), r.error_message)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return answers


def _config_text(default: object) -> str:
    if isinstance(default, bool):
        return "true" if default else "false"
    return "" if default is None else str(default)


def test_describe_topic(server: tuple[int, KazooClient]) -> None:
    port, _zk = server
    assert alter(port, 1, 2, "t", {"retention.ms": " 1000 "}).error_code == 0
    for version in (1, 2, 3, 4):
        res = describe(port, version, 2, "t")
        assert res.error_code == 0
        by_name = {c.name: c for c in res.configs}
        assert "segment.bytes" in by_name and len(by_name) == 36
        ret = by_name["retention.ms"]
        assert (ret.value, ret.config_source, ret.read_only, ret.is_sensitive) == ("1000", 1, False, False)
        assert [(s.name, s.value, s.source) for s in ret.synonyms] == [
            ("retention.ms", "1000", 1),
            ("log.retention.hours", "168", 5),
        ]
        seg = by_name["cleanup.policy"]
        assert (seg.value, seg.config_source) == ("delete", 5)
        if version >= 3:
            assert ret.config_type == 5 and seg.config_type == 7
    only = describe(port, 4, 2, "t", ("min.insync.replicas",))
    assert [(c.name, c.value) for c in only.configs] == [("min.insync.replicas", "1")]
    missing = describe(port, 1, 2, "missing")
    assert (missing.error_code, missing.configs) == (3, ())
    bad = describe(port, 1, 2, "a/b")
    assert bad.error_code == 17


def test_broker_configs(server: tuple[int, KazooClient]) -> None:
    port, zk = server
    r = alter(port, 1, 4, "1", {"leader.replication.throttled.rate": "100"})
    assert r.error_code == 0, r.error_message
    assert zk.get("/config/brokers/1")[0] == b'{"version":1,"config":{"leader.replication.throttled.rate":"100"}}'
    assert changes(zk) == [b'{"version":2,"entity_path":"brokers/1"}']
    r = incremental(port, 1, 4, "", [("follower.replication.throttled.rate", 0, "7")])
    assert r.error_code == 0, r.error_message
    assert orjson.loads(zk.get("/config/brokers/<default>")[0])["config"] == {
        "follower.replication.throttled.rate": "7"
    }
    assert changes(zk)[-1] == b'{"version":2,"entity_path":"brokers/<default>"}'
    r = alter(port, 1, 4, "1", {"log.dirs": "/x"})
    assert (r.error_code, r.error_message) == (42, "Cannot update these configs dynamically: Set(log.dirs)")
    r = alter(port, 1, 4, "2", {"leader.replication.throttled.rate": "1"})
    assert (r.error_code, r.error_message) == (42, "Unexpected broker id, expected 1, but received 2")
    r = alter(port, 1, 4, "1", {"leader.replication.throttled.rate": "x"})
    assert r.error_code == 42
    assert (
        r.error_message
        == "Invalid value x for configuration leader.replication.throttled.rate: Not a number of type LONG"
    )
    res = describe(port, 4, 4, "1")
    by_name = {c.name: c for c in res.configs}
    assert (
        by_name["leader.replication.throttled.rate"].value,
        by_name["leader.replication.throttled.rate"].config_source,
    ) == ("100", 2)
    assert (
        by_name["follower.replication.throttled.rate"].value,
        by_name["follower.replication.throttled.rate"].config_source,
    ) == ("7", 3)
    default = describe(port, 4, 4, "")
    assert [(c.name, c.value, c.config_source) for c in default.configs] == [
        ("follower.replication.throttled.rate", "7", 3)
    ]
    other = describe(port, 4, 4, "9")
    assert (other.error_code, other.error_message) == (
        42,
        "Unexpected broker id, expected 1 or empty string, but received 9",
    )
