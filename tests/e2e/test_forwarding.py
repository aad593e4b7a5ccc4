"""KIP-590 forwarding end to end: node processes, real ZooKeeper, kafka-python as the client.

Who wrote a change is read from each node's Prometheus metrics: ``bridgekeeper_zookeeper_writes_total`` counts
the ZooKeeper writes *that node* made, ``bridgekeeper_forwarding_*`` what a broker sent to the controller and
``bridgekeeper_requests_total`` what a node handled (a forwarded request counts on the broker under its own
API and on the controller only as ``Envelope``).

kafka-python is the client because it lets a test pick the broker: ``KafkaAdminClient.alter_configs`` sends
a BROKER resource's change to that broker (librdkafka would send topic changes to the controller), and its
connection manager sends any request to a chosen node id (``Admin.send``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import socket
import struct
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import kafka.errors as kafka_errors
import orjson
import pytest
from kafka import errors as kerrors
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient
from kafka.protocol.admin import (
    AlterClientQuotasRequest,
    CreateAclsRequest,
    CreateTopicsRequest,
    DeleteAclsRequest,
    IncrementalAlterConfigsRequest,
)
from kafka.protocol.metadata import ApiVersionsRequest
from kazoo.client import KazooClient
from kio.schema.incremental_alter_configs.v1 import request as iac_v1
from kio.schema.incremental_alter_configs.v1.response import IncrementalAlterConfigsResponse
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i8, i16, i32
from tenacity import Retrying, retry_if_exception_type, stop_after_delay, wait_fixed

from controller.config.keys import DEFAULT_FORWARDING_MAX_IN_FLIGHT
from controller.devstack.stack import NodeProcess, Stack
from testing.stack import controller_id, metric_sum, metrics_url
from tests.e2e.conftest import RunningStack
from tests.integration.cluster import wait_for
from tests.stackutil import assert_no_unexpected, error_codes, every_node_sees_every_broker, stop_stack

pytestmark = pytest.mark.e2e

BELOW_GATE = "3.3-IV3"
AT_GATE = "3.4-IV0"
ENVELOPE = 58
#: ACL APIs answer SECURITY_DISABLED without an authorizer; the PLAINTEXT test clients are super users.
ACLS_ON = {"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer", "super.users": "User:ANONYMOUS"}
#: A dynamic per-broker config (ConfigResource type BROKER = 4).
THROTTLE = "leader.replication.throttled.rate"
BROKER_RESOURCE = 4
#: Kafka's wire enums: ResourceType TOPIC, PatternType LITERAL, AclOperation ANY/READ, AclPermissionType ANY/ALLOW.
TOPIC, LITERAL, ANY, READ, ALLOW = 2, 3, 1, 3, 3
PRINCIPAL = "User:alice"
#: How many requests a measured batch sends (counters must move by exactly this much).
BATCH = 5


# -- stacks ---------------------------------------------------------------------------------------------------------
@contextlib.contextmanager
def running_stack(
    data_dir: Path,
    ibp: str,
    overrides: Mapping[str, str] | None = None,
    *,
    nodes: int = 3,
    want_controller: bool = True,
) -> Iterator[RunningStack]:
    """The e2e conftest's stack, for one IBP (several per module); fails if a node logged BK-UNEXPECTED."""
    s = Stack(nodes=nodes, data_dir=data_dir, ibp=ibp, overrides=overrides)
    zk: KazooClient | None = None
    try:
        s.start()
        zk = KazooClient(hosts=s.zookeeper)
        zk.start(timeout=20)
        if want_controller:
            wait_for(lambda: controller_id(zk) is not None, 60, "a controller")
            every_node_sees_every_broker(s)
        yield RunningStack(s, bootstrap(s.nodes), zk)
    finally:
        stop_stack(s, zk)
    assert_no_unexpected(s, data_dir)


def bootstrap(nodes: Sequence[NodeProcess]) -> str:
    """Current listener ports: a restarted node binds a new one."""
    return ",".join(f"127.0.0.1:{n.port}" for n in nodes)


@pytest.fixture(scope="module")
def below(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningStack]:
    with running_stack(tmp_path_factory.mktemp("below"), BELOW_GATE, ACLS_ON) as s:
        yield s


@pytest.fixture(scope="module")
def at(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningStack]:
    with running_stack(tmp_path_factory.mktemp("at"), AT_GATE, ACLS_ON) as s:
        yield s


def roles(s: RunningStack) -> tuple[int, int, int]:
    """(active controller, a non-controller broker X, the third node Y)."""
    c = controller_id(s.zk)
    assert c is not None
    x, y = sorted(n.broker_id for n in s.stack.nodes if n.broker_id != c)
    return c, x, y


def node(s: RunningStack, broker_id: int) -> NodeProcess:
    return next(n for n in s.stack.nodes if n.broker_id == broker_id)


# -- kafka-python ---------------------------------------------------------------------------------------------------
class Admin:
    """kafka-python's KafkaAdminClient, plus "send this request to broker N and return the response" through
    its own connection manager: the path KafkaAdminClient itself takes for BROKER-resource config changes
    (``await self._manager.send(request, node_id=broker_id)``), run on its IO thread by ``_manager.run``."""

    def __init__(self, nodes: Sequence[NodeProcess], request_timeout_ms: int = 30000) -> None:
        self.client = KafkaAdminClient(bootstrap_servers=bootstrap(nodes), request_timeout_ms=request_timeout_ms)

    def send(self, node_id: int, request: Any) -> Any:
        """One request to ``node_id``. While a node restarts, the metadata kafka-python refreshed from it can
        lack the other brokers for a moment (its cache is a ZooKeeper watch behind, as after Kafka's
        UpdateMetadata): "unknown broker" then is the client's view catching up, so it waits for that."""
        retrying = Retrying(
            retry=retry_if_exception_type(kafka_errors.UnknownBrokerIdError),
            stop=stop_after_delay(15),
            wait=wait_fixed(0.2),
            before_sleep=lambda _state: self.client._manager.cluster.request_update(),  # ask again now
            reraise=True,
        )
        return retrying(self.client._manager.run, self.client._manager.send, request, node_id)

    def alter_broker_config(self, broker_id: int, value: str) -> None:
        """The public method; it sends the BROKER resource's IncrementalAlterConfigs to that broker."""
        resource = ConfigResource(ConfigResourceType.BROKER, str(broker_id), configs={THROTTLE: value})
        result = self.client.alter_configs([resource], raise_on_unknown=False)
        assert result == {"broker": {str(broker_id): "OK"}}, result

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> Admin:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def set_broker_config(broker_id: int, value: str) -> Any:
    r = IncrementalAlterConfigsRequest.AlterConfigsResource
    config = r.AlterableConfig(name=THROTTLE, config_operation=0, value=value)  # SET
    resource = r(resource_type=BROKER_RESOURCE, resource_name=str(broker_id), configs=[config])
    return IncrementalAlterConfigsRequest(resources=[resource], validate_only=False)


def create_read_acl(topic: str) -> Any:
    creation = CreateAclsRequest.AclCreation(
        resource_type=TOPIC,
        resource_name=topic,
        resource_pattern_type=LITERAL,
        principal=PRINCIPAL,
        host="*",
        operation=READ,
        permission_type=ALLOW,
    )
    return CreateAclsRequest(creations=[creation])


def delete_topic_acls(topic: str) -> Any:
    f = DeleteAclsRequest.DeleteAclsFilter(
        resource_type_filter=TOPIC,
        resource_name_filter=topic,
        pattern_type_filter=LITERAL,
        principal_filter=None,
        host_filter=None,
        operation=ANY,
        permission_type=ANY,
    )
    return DeleteAclsRequest(filters=[f])


def set_user_quota(user: str, rate: float) -> Any:
    e = AlterClientQuotasRequest.EntryData
    entry = e(
        entity=[e.EntityData(entity_type="user", entity_name=user)],
        ops=[e.OpData(key="producer_byte_rate", value=rate, remove=False)],
    )
    return AlterClientQuotasRequest(entries=[entry], validate_only=False)


def ok(response: Any) -> Any:
    codes = error_codes(response)
    assert set(codes) == {0}, response
    return response


# -- ZooKeeper --------------------------------------------------------------------------------------------------------
def broker_config(zk: KazooClient, broker_id: int) -> str | None:
    found = zk.exists(f"/config/brokers/{broker_id}")
    if found is None:
        return None
    config: dict[str, str] = orjson.loads(zk.get(f"/config/brokers/{broker_id}")[0])["config"]
    return config.get(THROTTLE)


def topic_acls(zk: KazooClient, topic: str) -> list[dict[str, str]] | None:
    path = f"/kafka-acl/Topic/{topic}"
    if zk.exists(path) is None:
        return None
    acls: list[dict[str, str]] = orjson.loads(zk.get(path)[0])["acls"]
    return acls


READ_ACL = {"principal": PRINCIPAL, "permissionType": "Allow", "operation": "Read", "host": "*"}


def user_quota(zk: KazooClient, user: str) -> dict[str, str] | None:
    path = f"/config/users/{user}"
    if zk.exists(path) is None:
        return None
    config: dict[str, str] = orjson.loads(zk.get(path)[0])["config"]
    return config


# -- metrics ----------------------------------------------------------------------------------------------------------
SERIES: dict[str, tuple[str, dict[str, str]]] = {
    "forwarded": ("bridgekeeper_forwarding_client_requests_total", {}),
    "envelopes": ("bridgekeeper_forwarding_envelopes_sent_total", {}),
    "enabled": ("bridgekeeper_forwarding_enabled", {}),
    "queue": ("bridgekeeper_forwarding_queue_length", {}),
    "handled.Envelope": ("bridgekeeper_requests_total", {"api": "Envelope"}),
    "handled.IncrementalAlterConfigs": ("bridgekeeper_requests_total", {"api": "IncrementalAlterConfigs"}),
    "handled.CreateAcls": ("bridgekeeper_requests_total", {"api": "CreateAcls"}),
    "handled.DeleteAcls": ("bridgekeeper_requests_total", {"api": "DeleteAcls"}),
    "handled.AlterClientQuotas": ("bridgekeeper_requests_total", {"api": "AlterClientQuotas"}),
    "writes.config": ("bridgekeeper_zookeeper_writes_total", {"kind": "config", "outcome": "ok"}),
    "writes.acl": ("bridgekeeper_zookeeper_writes_total", {"kind": "acl", "outcome": "ok"}),
    "writes.quota": ("bridgekeeper_zookeeper_writes_total", {"kind": "quota", "outcome": "ok"}),
}

Snapshot = dict[str, dict[int, float]]


def snapshot(nodes: Sequence[NodeProcess]) -> Snapshot:
    """Every series in SERIES, per node (read from each node's current NODE-READY metrics URL)."""
    out: Snapshot = {key: {} for key in SERIES}
    for n in nodes:
        url = metrics_url(n.ready)
        for key, (name, labels) in SERIES.items():
            out[key][n.broker_id] = metric_sum(url, name, **labels)
    return out


def delta(before: Snapshot, after: Snapshot, key: str) -> dict[int, float]:
    return {b: after[key][b] - before[key].get(b, 0.0) for b in after[key]}


def total(snap: Snapshot, key: str) -> float:
    return sum(snap[key].values())


def only(node_id: int, count: float, nodes: Sequence[int]) -> dict[int, float]:
    """``count`` on ``node_id``, 0 everywhere else."""
    return {b: (count if b == node_id else 0.0) for b in nodes}


# -- 1. below the gate -------------------------------------------------------------------------------------------------
def test_below_gate_the_receiving_broker_writes_configs_itself(below: RunningStack) -> None:
    c, x, y = roles(below)
    ids = (c, x, y)
    before = snapshot(below.stack.nodes)
    with Admin(below.stack.nodes) as admin:
        for i in range(BATCH):
            admin.alter_broker_config(x, f"{1000 + i}")
    after = snapshot(below.stack.nodes)
    assert after["enabled"] == only(x, 0, ids)
    assert delta(before, after, "handled.IncrementalAlterConfigs") == only(x, BATCH, ids)
    assert delta(before, after, "writes.config") == only(x, BATCH, ids)  # X wrote; the controller did not
    assert after["forwarded"] == only(x, 0, ids) and after["envelopes"] == only(x, 0, ids)
    assert after["handled.Envelope"] == only(c, 0, ids)
    assert broker_config(below.zk, x) == f"{1000 + BATCH - 1}"


def test_below_gate_the_receiving_broker_writes_acls_and_quotas_itself(below: RunningStack) -> None:
    c, x, y = roles(below)
    ids = (c, x, y)
    before = snapshot(below.stack.nodes)
    with Admin(below.stack.nodes) as admin:
        ok(admin.send(x, create_read_acl("below-acl")))
        assert topic_acls(below.zk, "below-acl") == [READ_ACL]
        ok(admin.send(x, delete_topic_acls("below-acl")))
        assert topic_acls(below.zk, "below-acl") is None
        ok(admin.send(x, set_user_quota("below-user", 2048.0)))
    after = snapshot(below.stack.nodes)
    acl_writes = delta(before, after, "writes.acl")
    assert acl_writes[x] >= 2 and acl_writes[c] == 0 and acl_writes[y] == 0, acl_writes
    assert delta(before, after, "writes.quota") == only(x, 1, ids)
    assert total(after, "forwarded") == 0 and total(after, "envelopes") == 0
    assert user_quota(below.zk, "below-user") == {"producer_byte_rate": "2048"}


def advertised(admin: Admin, node_id: int) -> set[int]:
    response = admin.send(node_id, ApiVersionsRequest(client_software_name="bk-test", client_software_version="1"))
    assert response.error_code == 0, response
    return {int(k.api_key) for k in response.api_keys}


def test_envelope_is_advertised_only_at_the_gate(below: RunningStack, at: RunningStack) -> None:
    for s, expected in ((below, False), (at, True)):
        with Admin(s.stack.nodes) as admin:
            for n in s.stack.nodes:
                assert (ENVELOPE in advertised(admin, n.broker_id)) is expected, (s.stack.ibp, n.broker_id)


# -- 2. at the gate ----------------------------------------------------------------------------------------------------
def test_at_gate_configs_are_forwarded_and_written_by_the_controller(at: RunningStack) -> None:
    c, x, y = roles(at)
    ids = (c, x, y)
    before = snapshot(at.stack.nodes)
    assert before["enabled"] == {b: 1.0 for b in ids}
    with Admin(at.stack.nodes) as admin:
        for i in range(BATCH):
            admin.alter_broker_config(x, f"{2000 + i}")
    after = snapshot(at.stack.nodes)
    assert delta(before, after, "forwarded") == only(x, BATCH, ids)
    assert delta(before, after, "envelopes") == only(x, BATCH, ids)  # a steady controller: no retries
    assert delta(before, after, "handled.IncrementalAlterConfigs") == only(x, BATCH, ids)
    assert delta(before, after, "handled.Envelope") == only(c, BATCH, ids)
    assert delta(before, after, "writes.config") == only(c, BATCH, ids)  # the controller wrote; X did not
    assert after["queue"] == only(x, 0, ids)
    assert broker_config(at.zk, x) == f"{2000 + BATCH - 1}"


def test_at_gate_acls_are_forwarded_and_written_by_the_controller(at: RunningStack) -> None:
    c, x, y = roles(at)
    ids = (c, x, y)
    topics = [f"fwd-acl-{i}" for i in range(BATCH)]
    with Admin(at.stack.nodes) as admin:
        before = snapshot(at.stack.nodes)
        for topic in topics:
            ok(admin.send(x, create_read_acl(topic)))
        created = snapshot(at.stack.nodes)
        assert [topic_acls(at.zk, t) for t in topics] == [[READ_ACL]] * BATCH
        for topic in topics:
            response = ok(admin.send(x, delete_topic_acls(topic)))
            [result] = response.filter_results
            assert [(m.resource_name, m.principal) for m in result.matching_acls] == [(topic, PRINCIPAL)]
        deleted = snapshot(at.stack.nodes)
    assert [topic_acls(at.zk, t) for t in topics] == [None] * BATCH
    for start, end, api in ((before, created, "CreateAcls"), (created, deleted, "DeleteAcls")):
        assert delta(start, end, "forwarded") == only(x, BATCH, ids), api
        assert delta(start, end, "handled." + api) == only(x, BATCH, ids), api
        assert delta(start, end, "handled.Envelope") == only(c, BATCH, ids), api
        writes = delta(start, end, "writes.acl")
        assert writes[c] >= BATCH and writes[x] == 0 and writes[y] == 0, (api, writes)


def test_at_gate_quotas_are_forwarded_and_written_by_the_controller(at: RunningStack) -> None:
    c, x, y = roles(at)
    ids = (c, x, y)
    before = snapshot(at.stack.nodes)
    with Admin(at.stack.nodes) as admin:
        for i in range(BATCH):
            ok(admin.send(x, set_user_quota("fwd-user", 4096.0 + i)))
    after = snapshot(at.stack.nodes)
    assert delta(before, after, "forwarded") == only(x, BATCH, ids)
    assert delta(before, after, "handled.AlterClientQuotas") == only(x, BATCH, ids)
    assert delta(before, after, "handled.Envelope") == only(c, BATCH, ids)
    assert delta(before, after, "writes.quota") == only(c, BATCH, ids)
    assert user_quota(at.zk, "fwd-user") == {"producer_byte_rate": f"{4096 + BATCH - 1}"}


def test_at_gate_the_active_controller_handles_requests_itself(at: RunningStack) -> None:
    c, x, y = roles(at)
    ids = (c, x, y)
    before = snapshot(at.stack.nodes)
    with Admin(at.stack.nodes) as admin:
        for i in range(BATCH):
            admin.alter_broker_config(c, f"{3000 + i}")
        ok(admin.send(c, create_read_acl("ctl-acl")))
        ok(admin.send(c, delete_topic_acls("ctl-acl")))
    after = snapshot(at.stack.nodes)
    for key in ("forwarded", "envelopes", "handled.Envelope"):
        assert delta(before, after, key) == only(c, 0, ids), key
    assert delta(before, after, "handled.IncrementalAlterConfigs") == only(c, BATCH, ids)
    assert delta(before, after, "writes.config") == only(c, BATCH, ids)
    assert delta(before, after, "writes.acl")[c] >= 2
    assert broker_config(at.zk, c) == f"{3000 + BATCH - 1}"
    assert topic_acls(at.zk, "ctl-acl") is None


# -- 2b. several forwarded requests in flight, one client's still in order ------------------------------------------
PIPELINED = 30


def set_retention_frame(correlation: int, topic: str, value: str) -> bytes:
    """A size-prefixed IncrementalAlterConfigs v1 (SET retention.ms on ``topic``), encoded with kio."""
    header_cls = iac_v1.IncrementalAlterConfigsRequest.__header_schema__
    buf = io.BytesIO()
    entity_writer(header_cls)(
        buf,
        header_cls(
            request_api_key=i16(44), request_api_version=i16(1), correlation_id=i32(correlation), client_id="pipelined"
        ),
    )
    config = iac_v1.AlterableConfig(name="retention.ms", config_operation=i8(0), value=value)
    resource = iac_v1.AlterConfigsResource(resource_type=i8(2), resource_name=topic, configs=(config,))
    body = iac_v1.IncrementalAlterConfigsRequest(resources=(resource,), validate_only=False)
    entity_writer(iac_v1.IncrementalAlterConfigsRequest)(buf, body)
    return struct.pack(">i", len(buf.getvalue())) + buf.getvalue()


def read_answers(sock: socket.socket, n: int) -> list[tuple[int, int]]:
    """``n`` IncrementalAlterConfigs v1 responses off ``sock``: (correlation id, error code) each, in arrival order."""
    stream = sock.makefile("rb")
    out = []
    for _ in range(n):
        (size,) = struct.unpack(">i", stream.read(4))
        frame = stream.read(size)
        header, offset = entity_reader(IncrementalAlterConfigsResponse.__header_schema__)(frame, 0)
        body, _ = entity_reader(IncrementalAlterConfigsResponse)(frame, offset)
        [result] = body.responses
        out.append((int(header.correlation_id), int(result.error_code)))
    return out


def test_at_gate_one_connections_pipelined_requests_are_answered_and_applied_in_order(at: RunningStack) -> None:
    """The forwarding broker keeps several requests in flight to the controller (the node default is a window
    of more than one), yet a client that pipelines SET retention.ms=1, 2, ..., 30 on one topic over one
    connection gets its answers in that order and the topic ends at 30: Kafka's per-connection order (a
    connection's next request is read only once the previous one is answered). Other clients keep the window
    busy meanwhile, so the pipelined requests share it with theirs."""
    assert DEFAULT_FORWARDING_MAX_IN_FLIGHT > 1
    c, x, y = roles(at)
    busy_topics = [f"busy-{i}" for i in range(8)]
    with Admin(at.stack.nodes) as admin:
        topics = [
            CreateTopicsRequest.CreatableTopic(
                name=t, num_partitions=1, replication_factor=1, assignments=[], configs=[]
            )
            for t in ("ordered", *busy_topics)
        ]
        ok(admin.send(c, CreateTopicsRequest(topics=topics, timeout_ms=30000, validate_only=False)))
    port = node(at, x).port
    stop = threading.Event()
    busy_answers: dict[str, list[int]] = {t: [] for t in busy_topics}

    def busy(topic: str) -> None:
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            n = 0
            while not stop.is_set() or not busy_answers[topic]:
                n += 1
                sock.sendall(set_retention_frame(n, topic, str(n)))
                busy_answers[topic].extend(code for _c, code in read_answers(sock, 1))

    before = snapshot(at.stack.nodes)
    threads = [threading.Thread(target=busy, args=(t,)) for t in busy_topics]
    for t in threads:
        t.start()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            sock.sendall(b"".join(set_retention_frame(k, "ordered", str(k)) for k in range(1, PIPELINED + 1)))
            answers = read_answers(sock, PIPELINED)
    finally:
        stop.set()
        for t in threads:
            t.join(60)
    after = snapshot(at.stack.nodes)
    assert answers == [(k, 0) for k in range(1, PIPELINED + 1)]
    config = orjson.loads(at.zk.get("/config/topics/ordered")[0])["config"]
    assert config["retention.ms"] == str(PIPELINED)
    assert all(codes and set(codes) == {0} for codes in busy_answers.values()), busy_answers
    forwarded = PIPELINED + sum(len(codes) for codes in busy_answers.values())
    assert delta(before, after, "forwarded") == only(x, forwarded, (c, x, y))
    assert delta(before, after, "writes.config") == only(c, forwarded, (c, x, y))


# -- 3. rolling IBP bump under load ----------------------------------------------------------------------------------
@dataclasses.dataclass
class Traffic:
    """A steady stream of admin requests, as an application's AdminClient would send them.

    Retries follow the Java AdminClient's rules: a call is retried (until its deadline) after a connection
    failure, a client-side timeout or a response error Kafka marks retriable (``RetriableException``:
    NOT_CONTROLLER, REQUEST_TIMED_OUT, ...); while the target broker is missing from the client's metadata
    (it is re-registering) the call waits for it, as the AdminClient's NodeProvider does. A response with a
    non-retriable error ends the call as a failure, and is never retried.
    """

    nodes: list[NodeProcess]
    deadline_s: float = 60.0
    done: list[tuple[str, int]] = dataclasses.field(default_factory=list)
    failures: list[str] = dataclasses.field(default_factory=list)
    retries: list[str] = dataclasses.field(default_factory=list)
    last_config: dict[int, str] = dataclasses.field(default_factory=dict)
    stop: threading.Event = dataclasses.field(default_factory=threading.Event)
    _lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)
    _admin: Admin | None = None
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="admin-traffic", daemon=True)
        self._thread.start()

    def finish(self) -> None:
        self.stop.set()
        assert self._thread is not None
        self._thread.join(timeout=self.deadline_s + 30)
        assert not self._thread.is_alive(), "the traffic thread is stuck"
        if self._admin is not None:
            self._admin.close()

    def count(self, node_id: int | None = None, api: str = "") -> int:
        """Successful requests (to ``node_id``, of APIs whose name starts with ``api``)."""
        with self._lock:
            return sum(1 for name, target in self.done if node_id in (None, target) and name.startswith(api))

    def _run(self) -> None:
        i = 0
        try:
            while not self.stop.is_set():
                ids = sorted(n.broker_id for n in self.nodes)
                target = ids[i % len(ids)]
                value = str(10_000 + i)
                if self._call(f"IncrementalAlterConfigs broker {target}", target, set_broker_config(target, value)):
                    self.last_config[target] = value
                acl_target = ids[(i + 1) % len(ids)]
                topic = f"roll-{i}"
                # A pair, so no ACL is left behind when the stream stops.
                self._call(f"CreateAcls {topic}", acl_target, create_read_acl(topic))
                self._call(f"DeleteAcls {topic}", acl_target, delete_topic_acls(topic))
                i += 1
        except Exception as exc:  # reported by the test
            self.failures.append(f"traffic thread died: {exc!r}")

    def _client(self) -> Admin:
        if self._admin is None:
            self._admin = Admin(self.nodes, request_timeout_ms=15000)
        return self._admin

    def _reconnect(self) -> None:
        """A fresh client from the current ports: a real AdminClient refreshes its metadata instead."""
        if self._admin is not None:
            with contextlib.suppress(Exception):
                self._admin.close()
        self._admin = None

    def _call(self, name: str, target: int, request: Any) -> bool:
        deadline = time.monotonic() + self.deadline_s
        attempt = 0
        while True:
            attempt += 1
            reason: str
            try:
                response = self._client().send(target, request)
            except kerrors.UnknownBrokerIdError as exc:
                reason = f"broker not in metadata: {exc!r}"
                self._reconnect()
            except kerrors.KafkaError as exc:
                if not exc.retriable:
                    self.failures.append(f"{name} to {target}: {exc!r}")
                    return False
                reason = f"{exc!r}"
                self._reconnect()
            else:
                codes = [code for code in error_codes(response) if code != 0]
                if not codes:
                    with self._lock:
                        self.done.append((name, target))
                    return True
                errors = [kerrors.for_code(code) for code in codes]
                if not all(e.retriable for e in errors):
                    self.failures.append(
                        f"{name} to {target}: non-retriable {[e.__name__ for e in errors]} in {response!r}"
                    )
                    return False
                reason = f"retriable {[e.__name__ for e in errors]}"
            self.retries.append(f"{name} to {target} attempt {attempt}: {reason}")
            if time.monotonic() > deadline:
                self.failures.append(f"{name} to {target}: gave up after {attempt} attempts ({reason})")
                return False
            time.sleep(0.1)


def test_rolling_ibp_bump_under_a_steady_stream_of_admin_requests(tmp_path: Path) -> None:
    with running_stack(tmp_path, BELOW_GATE, ACLS_ON) as s:
        nodes = s.stack.nodes
        traffic = Traffic(nodes)
        traffic.start()
        try:
            wait_for(lambda: traffic.count() >= 15, 60, "admin traffic before the bump")
            before = snapshot(nodes)
            assert total(before, "enabled") == 0
            assert total(before, "forwarded") == 0 and total(before, "envelopes") == 0

            first = controller_id(s.zk)
            assert first is not None
            order = [*sorted(n.broker_id for n in nodes if n.broker_id != first), first]
            for broker_id in order:
                n = node(s, broker_id)
                s.stack.restart_node(n, overrides={"inter.broker.protocol.version": AT_GATE})
                assert metric_sum(metrics_url(n.ready), "bridgekeeper_forwarding_enabled") == 1
                seen = traffic.count(broker_id, "IncrementalAlterConfigs")

                def served(b: int = broker_id, k: int = seen) -> bool:
                    return traffic.count(b, "IncrementalAlterConfigs") >= k + 1

                wait_for(served, 60, f"a config change served by node {broker_id}")
                if broker_id != first:
                    # Mixed IBP: this broker forwards, but the controller (still below the gate) advertises no
                    # Envelope, so it handles requests itself, writing to ZooKeeper as a pre-bridge broker.
                    assert controller_id(s.zk) == first
                    mixed = snapshot(nodes)
                    assert total(mixed, "forwarded") == 0 and total(mixed, "envelopes") == 0
                    assert mixed["writes.config"][broker_id] >= 1

            # Every node is at the gate and the controller has moved to one that takes envelopes.
            wait_for(lambda: total(snapshot(nodes), "forwarded") > 0, 60, "forwarding to start after the bump")
            settled = traffic.count()
            wait_for(lambda: traffic.count() >= settled + 9, 60, "admin traffic after the bump")
        finally:
            traffic.finish()

        assert traffic.count() >= 30
        end = snapshot(nodes)
        assert end["enabled"] == {n.broker_id: 1.0 for n in nodes}
        c, x, y = roles(s)
        assert c != first
        ids = (c, x, y)
        for b, value in traffic.last_config.items():
            assert broker_config(s.zk, b) == value, b
        assert [t for t in (s.zk.get_children("/kafka-acl/Topic") or []) if t.startswith("roll-")] == []

        # After the bump, a measured batch to each non-controller broker is forwarded, request for request.
        with Admin(nodes) as admin:
            for target in (x, y):
                start = snapshot(nodes)
                for i in range(BATCH):
                    admin.alter_broker_config(target, f"{5000 + i}")
                finish = snapshot(nodes)
                assert delta(start, finish, "forwarded") == only(target, BATCH, ids), target
                assert delta(start, finish, "handled.Envelope") == only(c, BATCH, ids), target
                assert delta(start, finish, "writes.config") == only(c, BATCH, ids), target
                assert broker_config(s.zk, target) == f"{5000 + BATCH - 1}"

        # Checked last so that everything above is verified on every run. A failure seen here: a broker
        # handling an entity-config change locally (below the gate, or at it while the controller it found
        # takes no envelopes) in the moment the old controller has resigned and no new one is elected answers
        # STALE_CONTROLLER_EPOCH "... when there is no controller." (Kafka's ControllerMovedException), which
        # no client retries.
        assert traffic.failures == [], f"{len(traffic.failures)} admin request(s) failed: {traffic.failures}"


# -- 4. the controller moves mid-request -------------------------------------------------------------------------------
def test_forwarded_requests_survive_a_controller_restart(tmp_path: Path) -> None:
    """Requests stream to broker X, without client retries, while the active controller restarts: X's
    forwarder loses the controller (closed connection, NOT_CONTROLLER, or no controller for a moment), finds
    the new one and retries; every request must succeed."""
    with running_stack(tmp_path, AT_GATE) as s:
        c, x, _y = roles(s)
        url = metrics_url(node(s, x).ready)
        answers: list[list[int]] = []
        problems: list[str] = []
        stop = threading.Event()

        def stream() -> None:
            with Admin(s.stack.nodes, request_timeout_ms=60000) as admin:
                i = 0
                while not stop.is_set():
                    try:
                        answers.append(error_codes(admin.send(x, set_broker_config(x, str(7000 + i)))))
                    except Exception as exc:
                        problems.append(repr(exc))
                        return
                    i += 1

        thread = threading.Thread(target=stream, name="forwarded-stream", daemon=True)
        thread.start()
        try:
            wait_for(lambda: len(answers) >= 3 or problems, 30, "forwarded requests before the restart")
            s.stack.restart_node(node(s, c))
            wait_for(lambda: controller_id(s.zk) not in (None, c), 30, "a new controller")
            seen = len(answers)
            wait_for(lambda: len(answers) >= seen + 3 or problems, 30, "forwarded requests after the restart")
        finally:
            stop.set()
            thread.join(timeout=90)
        assert not thread.is_alive()
        assert problems == []
        assert [codes for codes in answers if set(codes) != {0}] == []
        forwarded = metric_sum(url, "bridgekeeper_forwarding_client_requests_total")
        envelopes = metric_sum(url, "bridgekeeper_forwarding_envelopes_sent_total")
        assert forwarded >= 3 and envelopes >= forwarded, (forwarded, envelopes)
        assert controller_id(s.zk) != c
        assert broker_config(s.zk, x) == str(7000 + len(answers) - 1)


def test_a_forwarded_request_finds_the_new_controller_after_the_old_one_dies(tmp_path: Path) -> None:
    """The controller's process is killed just before a request reaches broker X: X's cache still names it
    (its /controller znode lives until its ZooKeeper session expires) and X holds an open connection to it,
    so the first envelope is lost; X must retry until the new controller is elected and then succeed."""
    with running_stack(tmp_path, AT_GATE, {"zookeeper.session.timeout.ms": "4000"}) as s:
        c, x, y = roles(s)
        url = metrics_url(node(s, x).ready)
        with Admin(s.stack.nodes, request_timeout_ms=60000) as admin:
            ok(admin.send(x, set_broker_config(x, "8000")))  # X now holds a connection to the controller
            forwarded = metric_sum(url, "bridgekeeper_forwarding_client_requests_total")
            envelopes = metric_sum(url, "bridgekeeper_forwarding_envelopes_sent_total")
            assert (forwarded, envelopes) == (1, 1)
            victim = node(s, c).process
            assert victim is not None
            victim.kill()
            victim.wait(10)
            assert controller_id(s.zk) == c  # the dead controller's session has not expired yet
            ok(admin.send(x, set_broker_config(x, "8001")))
        assert metric_sum(url, "bridgekeeper_forwarding_client_requests_total") == forwarded + 1
        # At least one envelope went to the dead controller over the old connection, so X retried.
        assert metric_sum(url, "bridgekeeper_forwarding_envelopes_sent_total") > envelopes + 1
        new = controller_id(s.zk)
        assert new is not None and new in (x, y)
        assert broker_config(s.zk, x) == "8001"
        # The new controller wrote it (X's first request was written by the old one).
        assert (
            metric_sum(
                metrics_url(node(s, new).ready), "bridgekeeper_zookeeper_writes_total", kind="config", outcome="ok"
            )
            == 1
        )


# -- 5. no controller --------------------------------------------------------------------------------------------------
def test_no_controller_for_longer_than_request_timeout_answers_request_timed_out(tmp_path: Path) -> None:
    overrides = {"process.roles": "broker", "request.timeout.ms": "2000"}
    with running_stack(tmp_path, AT_GATE, overrides, nodes=2, want_controller=False) as s:
        assert controller_id(s.zk) is None  # no node is a controller candidate
        url = metrics_url(node(s, 1).ready)
        assert metric_sum(url, "bridgekeeper_forwarding_enabled") == 1
        with Admin(s.stack.nodes, request_timeout_ms=15000) as admin:
            response = admin.send(1, set_broker_config(1, "9000"))
        assert error_codes(response) == [7], response  # REQUEST_TIMED_OUT
        assert broker_config(s.zk, 1) is None  # not written locally either
        assert metric_sum(url, "bridgekeeper_forwarding_envelopes_sent_total") == 0
        assert metric_sum(url, "bridgekeeper_forwarding_queue_length") == 0
        assert (
            metric_sum(
                url, "bridgekeeper_request_errors_total", api="IncrementalAlterConfigs", error="REQUEST_TIMED_OUT"
            )
            == 1
        )
