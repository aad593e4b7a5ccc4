"""Metadata and DescribeCluster at every version class (classic and flexible), decoded with kio."""

from __future__ import annotations

import asyncio
import base64
import time
import uuid
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from kio.index import load_request_schema

from bench import metadata_rate
from controller.wire.apikeys import SUPPORTED
from controller.wire.codec import parse_request
from controller.wire.handlers.apis import Apis, NodeView
from controller.wire.handlers.metadata import MetadataApis
from controller.wire.runtime import WireRuntime
from controller.wire.server import Connection
from tests.wireutil import call
from zkmodel.brokers import BrokerRegistration, EndPoint

pytestmark = pytest.mark.integration


def broker(i: int, rack: str | None = None) -> Any:
    reg = BrokerRegistration((EndPoint("PLAINTEXT", "127.0.0.1", 9000 + i, "PLAINTEXT"),), 1, rack=rack)
    return SimpleNamespace(broker_id=i, registration=reg, epoch=i)


def part(p: int, replicas: tuple[int, ...], isr: tuple[int, ...], leader: int) -> Any:
    return SimpleNamespace(partition=p, replicas=replicas, isr=isr, leader=leader, leader_epoch=3)


SNAPSHOT = SimpleNamespace(
    brokers={1: broker(1, "r1"), 2: broker(2, "r2")},  # broker 3 is down
    topics={
        "orders": SimpleNamespace(
            name="orders",
            topic_id="W3mXDtj1RsWmsEhQrZjN5g",
            is_internal=False,
            partitions={0: part(0, (1, 2), (1, 2), 1), 1: part(1, (3, 1), (3,), 3)},
        ),
        "__consumer_offsets": SimpleNamespace(
            name="__consumer_offsets", topic_id=None, is_internal=True, partitions={0: part(0, (2,), (2,), 2)}
        ),
    },
    controller_id=2,
)


class Cache:
    def snapshot(self) -> Any:
        return SNAPSHOT

    def wait_for(self, predicate: Any, timeout: float) -> Any:
        return SNAPSHOT


@pytest.fixture(scope="module")
def port() -> Iterator[int]:
    runtime = WireRuntime(Apis(NodeView(1, "my-cluster", Cache(), None, 1, 1)).handlers(), SUPPORTED, max_frame=1 << 20)
    yield runtime.start([EndPoint("PLAINTEXT", "127.0.0.1", 0, "PLAINTEXT")])[0].port
    runtime.stop()


def topic_request(version: int, names: list[str] | None) -> Any:
    cls = load_request_schema(3, version)
    module = __import__(cls.__module__, fromlist=["MetadataRequestTopic"])
    if names is None:
        return None
    extra = {"topic_id": uuid.UUID(int=0)} if "topic_id" in module.MetadataRequestTopic.__dataclass_fields__ else {}
    return tuple(module.MetadataRequestTopic(name=n, **extra) for n in names)


def metadata(port: int, version: int, names: list[str] | None) -> Any:
    extra: dict[str, Any] = {}
    fields = load_request_schema(3, version).__dataclass_fields__
    if "allow_auto_topic_creation" in fields:
        extra["allow_auto_topic_creation"] = False
    for flag in ("include_cluster_authorized_operations", "include_topic_authorized_operations"):
        if flag in fields:
            extra[flag] = False
    return call(port, 3, version, topics=topic_request(version, names), **extra)


@pytest.mark.parametrize("version", [0, 1, 4, 9, 12])
def test_metadata_versions(port: int, version: int) -> None:
    everything = metadata(port, version, [] if version == 0 else None)
    assert sorted(t.name for t in everything.topics) == ["__consumer_offsets", "orders"]
    assert sorted(b.node_id for b in everything.brokers) == [1, 2]  # only live brokers are listed
    if version >= 1:
        assert everything.controller_id == 2
        assert {b.node_id: b.rack for b in everything.brokers} == {1: "r1", 2: "r2"}
        assert {t.name: t.is_internal for t in everything.topics} == {"__consumer_offsets": True, "orders": False}
        assert metadata(port, version, []).topics == ()  # v1+: an empty list means no topics
    if version >= 2:
        assert everything.cluster_id == "my-cluster"
    orders = next(t for t in everything.topics if t.name == "orders")
    by_index = {p.partition_index: p for p in orders.partitions}
    assert by_index[0].error_code == 0 and by_index[0].leader_id == 1 and by_index[0].replica_nodes == (1, 2)
    # Partition 1's leader (3) is down: LEADER_NOT_AVAILABLE, leader -1, replicas still listed.
    assert by_index[1].error_code == 5 and by_index[1].leader_id == -1 and by_index[1].replica_nodes == (3, 1)
    if version >= 5:
        assert by_index[1].offline_replicas == (3,)
    unknown = metadata(port, version, ["missing", "bad name!"])
    assert [(t.name, t.error_code) for t in unknown.topics] == [("missing", 3), ("bad name!", 17)]


def test_metadata_v12_finds_a_topic_by_id_and_names_an_unknown_id() -> None:
    """v12 asks by topic id with a null name: the id index is built only for such a request (the name path
    must not pay a decode per topic in the cluster), and it still answers both a known and an unknown id."""
    cls = load_request_schema(3, 12)
    module = __import__(cls.__module__, fromlist=["MetadataRequestTopic"])
    orders_id = uuid.UUID(bytes=base64.urlsafe_b64decode("W3mXDtj1RsWmsEhQrZjN5g=="))
    runtime = WireRuntime(Apis(NodeView(1, "my-cluster", Cache(), None, 1, 1)).handlers(), SUPPORTED, max_frame=1 << 20)
    port = runtime.start([EndPoint("PLAINTEXT", "127.0.0.1", 0, "PLAINTEXT")])[0].port
    try:
        topics = (
            module.MetadataRequestTopic(name=None, topic_id=orders_id),
            module.MetadataRequestTopic(name=None, topic_id=uuid.UUID(int=7)),
            module.MetadataRequestTopic(name="orders", topic_id=uuid.UUID(int=0)),
        )
        answer = call(
            port, 3, 12, topics=topics, allow_auto_topic_creation=False, include_topic_authorized_operations=False
        )
    finally:
        runtime.stop()
    found = [(t.name, t.topic_id, t.error_code) for t in answer.topics]
    assert found == [("orders", orders_id, 0), (None, uuid.UUID(int=7), 100), ("orders", orders_id, 0)]


def test_all_topics_bodies_asked_for_during_a_build_share_it() -> None:
    """The all-topics body is built off the event loop; requests arriving while it is being made wait for that
    one build instead of starting their own (a 100k-partition body costs a second or more)."""
    apis = MetadataApis(NodeView(1, "my-cluster", Cache(), None, 1, 1))
    builds: list[int] = []
    real = apis._all_topics_body

    def slow(req: Any, conn: Any, snapshot: Any) -> bytes:
        builds.append(1)
        time.sleep(0.2)
        return real(req, conn, snapshot)

    apis._all_topics_body = slow  # type: ignore[method-assign]
    frame = metadata_rate.metadata_request(12)
    conn = Connection("PLAINTEXT", "127.0.0.1", 0)

    async def ask(n: int) -> list[Any]:
        return list(await asyncio.gather(*(apis.metadata(parse_request(frame[4:], SUPPORTED), conn) for _ in range(n))))

    bodies = asyncio.run(ask(5))
    assert len(builds) == 1 and all(isinstance(b, bytes) for b in bodies) and len(set(bodies)) == 1
    assert asyncio.run(ask(1)) == bodies[:1] and len(builds) == 1  # the same snapshot: served from the cache


@pytest.mark.parametrize("version", [0, 1])
def test_describe_cluster(port: int, version: int) -> None:
    extra = {"endpoint_type": 1} if version >= 1 else {}
    body = call(port, 60, version, include_cluster_authorized_operations=False, **extra)
    assert body.error_code == 0 and body.cluster_id == "my-cluster" and body.controller_id == 2
    assert sorted((b.broker_id, b.port) for b in body.brokers) == [(1, 9001), (2, 9002)]


def test_api_versions_v3_lists_every_key(port: int) -> None:
    body = call(port, 18, 3, client_software_name="test", client_software_version="1")
    assert body.error_code == 0
    assert {k.api_key: (k.min_version, k.max_version) for k in body.api_keys} == SUPPORTED
