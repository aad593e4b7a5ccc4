"""Request and connection metrics over real sockets: per-API counts and latency series that exist before the
first request, error codes tallied from responses, and KIP-511 client software names on connections."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from types import SimpleNamespace

import pytest
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic
from kio.schema.types import TopicName
from prometheus_client import generate_latest

from controller.metrics import NodeMetrics
from controller.wire.apikeys import SUPPORTED
from controller.wire.client import KafkaClient
from controller.wire.dispatch import Dispatcher
from controller.wire.handlers.apis import Apis, NodeView
from controller.wire.runtime import WireRuntime
from tests.integration.cluster import wait_for
from zkmodel.brokers import EndPoint

pytestmark = pytest.mark.integration
NULL = uuid.UUID(int=0)


class Snapshot:
    def __init__(self) -> None:
        self.brokers: dict[int, object] = {}
        self.topics: dict[str, object] = {}
        self.controller_id = -1
        self.version = 1


@pytest.fixture
def served() -> Iterator[tuple[NodeMetrics, int]]:
    metrics = NodeMetrics(7, SUPPORTED)
    cache = SimpleNamespace(snapshot=lambda: Snapshot(), wait_for=lambda predicate, timeout: Snapshot())
    view = NodeView(
        broker_id=7, cluster_id="c", cache=cache, controller=None, default_partitions=1, default_replication_factor=1
    )
    handlers = Apis(view).handlers()
    dispatcher = Dispatcher(
        handlers,
        SUPPORTED,
        is_active_controller=lambda: False,
        metrics=metrics,
        on_client_software=metrics.client_software,
    )
    runtime = WireRuntime(
        handlers,
        SUPPORTED,
        max_frame=1 << 20,
        dispatch=dispatcher,
        on_open=metrics.connection_opened,
        on_close=metrics.connection_closed,
    )
    [endpoint] = runtime.start([EndPoint("PLAINTEXT", "127.0.0.1", 0, "PLAINTEXT")])
    try:
        yield metrics, endpoint.port
    finally:
        runtime.stop()


def sample(metrics: NodeMetrics, name: str, **labels: str) -> float | None:
    value = metrics.registry.get_sample_value(name, {"broker_id": "7", **labels})
    return None if value is None else float(value)


def test_series_exist_before_the_first_request(served: tuple[NodeMetrics, int]) -> None:
    metrics, _port = served
    text = generate_latest(metrics.registry).decode()
    for api in ("CreateTopics", "IncrementalAlterConfigs", "AlterPartitionReassignments", "Metadata"):
        assert sample(metrics, "bridgekeeper_requests_total", api=api) == 0, api
        assert f'bridgekeeper_request_duration_seconds_count{{api="{api}",broker_id="7"}} 0.0' in text
    assert sample(metrics, "bridgekeeper_forwarding_client_requests_total") == 0
    assert sample(metrics, "bridgekeeper_zookeeper_writes_total", kind="config", outcome="ok") == 0


def test_requests_errors_and_client_software_are_counted(served: tuple[NodeMetrics, int]) -> None:
    metrics, port = served
    client = KafkaClient("127.0.0.1", port, client_id="metrics-test")
    try:
        client.request(18, 3, ApiVersionsRequest(client_software_name="bk-test", client_software_version="9.9"))
        labels = {"listener": "PLAINTEXT", "client_software_name": "bk-test", "client_software_version": "9.9"}
        assert sample(metrics, "bridgekeeper_connections", **labels) == 1
        assert (
            sample(
                metrics,
                "bridgekeeper_connections",
                listener="PLAINTEXT",
                client_software_name="unknown",
                client_software_version="unknown",
            )
            == 0
        )
        body = MetadataRequest(
            topics=tuple(MetadataRequestTopic(name=TopicName(n), topic_id=NULL) for n in ("missing-a", "missing-b")),
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        )
        client.request(3, 12, body)
        assert sample(metrics, "bridgekeeper_requests_total", api="ApiVersions") == 1
        assert sample(metrics, "bridgekeeper_requests_total", api="Metadata") == 1
        assert (
            sample(metrics, "bridgekeeper_request_errors_total", api="Metadata", error="UNKNOWN_TOPIC_OR_PARTITION")
            == 2
        )
        assert sample(metrics, "bridgekeeper_request_duration_seconds_count", api="Metadata") == 1
    finally:
        client.close()
    wait_for(lambda: sample(metrics, "bridgekeeper_connections", **labels) == 0, 10, "the connection to be closed")
