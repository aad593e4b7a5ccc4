"""What the benches that run a real stack share: finding its controller, creating their topics, percentiles."""

from __future__ import annotations

import datetime
import time
from collections.abc import Sequence

from kazoo.client import KazooClient
from kio.schema.create_topics.v5.request import CreatableTopic, CreateTopicsRequest
from kio.schema.incremental_alter_configs.v1.request import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
)
from kio.schema.types import TopicName
from kio.static.primitive import i8, i16, i32, i32Timedelta

from controller.devstack.stack import NodeProcess, Stack
from controller.wire.client import KafkaClient
from testing.stack import controller_id

TOPIC_ALREADY_EXISTS = 36


def controller_and_broker(stack: Stack, zk: KazooClient, timeout: float = 60) -> tuple[NodeProcess, NodeProcess]:
    """The active controller's node and another node (the forwarding path's entry), once one is elected."""
    deadline = time.monotonic() + timeout
    while controller_id(zk) is None and time.monotonic() < deadline:
        time.sleep(0.05)
    cid = controller_id(zk)
    if cid is None:
        raise SystemExit(f"no controller elected within {timeout:.0f}s")
    controller = next(n for n in stack.nodes if n.broker_id == cid)
    broker = next(n for n in stack.nodes if n.broker_id != cid)
    return controller, broker


def create_topics(client: KafkaClient, names: Sequence[str], timeout_s: float = 60) -> None:
    """One-partition, one-replica topics for a bench (existing ones are fine); exits naming any that failed."""
    created = client.request(
        19,
        5,
        CreateTopicsRequest(
            topics=tuple(
                CreatableTopic(
                    name=TopicName(n), num_partitions=i32(1), replication_factor=i16(1), assignments=(), configs=()
                )
                for n in names
            ),
            timeout=i32Timedelta.parse(datetime.timedelta(seconds=timeout_s)),
            validate_only=False,
        ),
    )
    failed = {t.name: int(t.error_code) for t in created.topics if int(t.error_code) not in (0, TOPIC_ALREADY_EXISTS)}
    if failed:
        raise SystemExit(f"cannot create the bench's topics: {failed}")


def timed_alter(client: KafkaClient, topic: str, value: int, *, validate_only: bool = False) -> float:
    """Seconds one IncrementalAlterConfigs (SET ``retention.ms`` on ``topic``) takes to be answered; exits if it
    fails. The latency benches' request: a ZooKeeper multi on the controller."""
    body = IncrementalAlterConfigsRequest(
        resources=(
            AlterConfigsResource(
                resource_type=i8(2),
                resource_name=topic,
                configs=(AlterableConfig(name="retention.ms", config_operation=i8(0), value=str(value)),),
            ),
        ),
        validate_only=validate_only,
    )
    started = time.perf_counter()
    response = client.request(44, 1, body)
    elapsed = time.perf_counter() - started
    errors = [int(r.error_code) for r in response.responses]
    if errors != [0]:
        raise SystemExit(f"IncrementalAlterConfigs failed with {errors}")
    return elapsed


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]
