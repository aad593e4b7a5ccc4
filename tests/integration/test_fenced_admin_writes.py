"""A deposed controller writes no admin metadata: the controller's session as the config and ACL
handlers use it (:class:`controller.zk.fenced_session.FencedSession`) carries the controller-epoch check on every
write. Without it, a controller frozen past its session finished the config write it had under way once it woke
up, through a new session and under the new controller's ``/controller`` (found by the failover soak in
ZooKeeper's transaction log)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from kazoo.client import KazooClient
from kio.index import load_request_schema

from controller.store.registration import ensure_persistent_paths
from controller.wire.handlers.apis import Apis, NodeView
from controller.wire.handlers.configs import ConfigApis
from controller.wire.handlers.kafka_acls import AclApis
from controller.wire.runtime import WireRuntime
from controller.zk.fenced_session import FencedSession
from controller.zk.session import ZkSession
from tests.wireutil import call
from zkmodel import paths
from zkmodel.brokers import EndPoint
from zkmodel.configs import EntityConfig
from zkmodel.kafka_acls import PatternType

pytestmark = pytest.mark.integration
CONTROLLER = b'{"version":2,"brokerid":1,"timestamp":"1","kraftControllerEpoch":-1}'
TOPIC, LITERAL, READ, ALLOW = 2, 3, 3, 3


class Cache:
    def snapshot(self) -> Any:
        return SimpleNamespace(topics={"t": object()}, brokers={}, controller_id=1)

    def wait_for(self, predicate: Any, timeout: float) -> Any:
        return self.snapshot()


@pytest.fixture
def served(zk: KazooClient, zk_hosts: str) -> Iterator[tuple[int, list[int | None]]]:
    """Config and ACL handlers whose writes go through a fenced session at the epoch version in ``fence[0]``."""
    session = ZkSession(zk_hosts, name="fence-test")
    session.start()
    ensure_persistent_paths(session)
    zk.create(paths.CONTROLLER_EPOCH, b"1")
    zk.create(paths.CONTROLLER, CONTROLLER, ephemeral=True)
    zk.create(paths.topic("t"), b'{"partitions":{"0":[1]},"version":3}')
    fence: list[int | None] = [0]
    fenced = FencedSession(session, lambda: fence[0])
    view = NodeView(1, "cluster", Cache(), None, 1, 1, write_session=lambda: fenced)
    handlers = {
        **ConfigApis(view, session).handlers(),
        **AclApis(session, lambda: fenced).handlers(),
        18: Apis(view).api_versions,
    }
    runtime = WireRuntime(handlers, {18: (0, 4), 44: (0, 1), 30: (0, 3)}, max_frame=1 << 20)
    port = runtime.start([EndPoint("PLAINTEXT", "127.0.0.1", 0, "PLAINTEXT")])[0].port
    try:
        yield port, fence
    finally:
        runtime.stop()
        session.close()


def _m(key: int, version: int) -> Any:
    return sys.modules[load_request_schema(key, version).__module__]


def set_retention(port: int, value: str) -> int:
    m = _m(44, 1)
    config = m.AlterableConfig(name="retention.ms", config_operation=0, value=value)
    resource = m.AlterConfigsResource(resource_type=TOPIC, resource_name="t", configs=(config,))
    (result,) = call(
        port, 44, 1, m.IncrementalAlterConfigsRequest(resources=(resource,), validate_only=False)
    ).responses
    return int(result.error_code)


def create_acl(port: int, resource: str) -> int:
    m = _m(30, 2)
    creation = m.AclCreation(
        resource_type=TOPIC,
        resource_name=resource,
        resource_pattern_type=LITERAL,
        principal="User:a",
        host="*",
        operation=READ,
        permission_type=ALLOW,
    )
    (result,) = call(port, 30, 2, m.CreateAclsRequest(creations=(creation,))).results
    return int(result.error_code)


def retention(zk: KazooClient) -> str | None:
    data, _stat = zk.get(paths.entity_config("topics", "t"))
    return EntityConfig.decode("c", data).config.get("retention.ms")


def test_the_active_controllers_admin_writes_pass_the_fence(
    served: tuple[int, list[int | None]], zk: KazooClient
) -> None:
    port, _fence = served
    assert set_retention(port, "1000") == 0
    assert create_acl(port, "a") == 0
    assert retention(zk) == "1000"
    assert zk.exists("/kafka-acl/Topic/a") is not None
    assert len(zk.get_children(paths.acl_changes(PatternType.LITERAL))) == 1


def test_after_another_election_they_are_refused_whole(served: tuple[int, list[int | None]], zk: KazooClient) -> None:
    port, _fence = served
    assert set_retention(port, "1000") == 0
    changes = len(zk.get_children("/config/changes"))
    zk.set(paths.CONTROLLER_EPOCH, b"2")  # another controller was elected: the epoch's zkVersion moved on
    assert set_retention(port, "2000") == 41  # NOT_CONTROLLER: nothing written, ask the new controller
    assert create_acl(port, "b") == 41
    assert retention(zk) == "1000"
    assert len(zk.get_children("/config/changes")) == changes
    assert zk.exists("/kafka-acl/Topic/b") is None


def test_once_the_node_resigned_nothing_is_even_sent(served: tuple[int, list[int | None]], zk: KazooClient) -> None:
    port, fence = served
    fence[0] = None
    assert set_retention(port, "3000") == 41
    assert create_acl(port, "c") == 41
    assert zk.exists(paths.entity_config("topics", "t")) is None or retention(zk) is None
    assert zk.exists("/kafka-acl/Topic/c") is None
