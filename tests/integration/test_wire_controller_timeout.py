"""A controller slower than the request's timeout: the client gets REQUEST_TIMED_OUT, as Kafka
answers a controller timeout, and keeps its connection — not a closed socket and a BK-UNEXPECTED log line."""

from __future__ import annotations

import io
import socket
import struct
import threading
from collections.abc import Iterator
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import pytest
from kazoo.client import KazooClient
from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_reader, entity_writer

from controller.wire.apikeys import SUPPORTED
from controller.wire.handlers.apis import Apis, NodeView
from controller.wire.runtime import WireRuntime
from tests.integration.cluster import cluster
from zkmodel.brokers import EndPoint

pytestmark = pytest.mark.integration


class Cache:
    def snapshot(self) -> Any:
        return SimpleNamespace(topics={}, brokers={}, controller_id=1)

    def wait_for(self, predicate: Any, timeout: float) -> Any:
        return self.snapshot()


class Connection:
    """One client connection that sends several requests in turn (kio-encoded, as a client would)."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=20)
        self.correlation = 0

    def request(self, key: int, version: int, **fields: Any) -> Any:
        self.correlation += 1
        req_cls = load_request_schema(key, version)
        header_cls = req_cls.__header_schema__
        buf = io.BytesIO()
        header: dict[str, Any] = {
            "request_api_key": key,
            "request_api_version": version,
            "correlation_id": self.correlation,
            "client_id": "timeout-test",
        }
        entity_writer(header_cls)(buf, header_cls(**header))
        entity_writer(req_cls)(buf, req_cls(**fields))
        payload = buf.getvalue()
        self.sock.sendall(struct.pack(">i", len(payload)) + payload)
        size = struct.unpack(">i", self._read(4))[0]
        data = self._read(size)
        resp_cls = load_response_schema(key, version)
        answered, offset = entity_reader(resp_cls.__header_schema__)(data, 0)
        assert answered.correlation_id == self.correlation
        return entity_reader(resp_cls)(data, offset)[0]

    def _read(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            assert chunk, "the server closed the connection"
            data += chunk
        return data


@pytest.fixture
def served(zk_hosts: str, zk: KazooClient) -> Iterator[tuple[int, Any]]:
    with cluster(zk_hosts, zk) as c:
        c.start_broker(1)
        controller = c.active()
        view = NodeView(1, "cluster", Cache(), controller, 1, 1)
        runtime = WireRuntime(Apis(view).handlers(), SUPPORTED, max_frame=1 << 20)
        port = runtime.start([EndPoint("PLAINTEXT", "127.0.0.1", 0, "PLAINTEXT")])[0].port
        try:
            yield port, controller
        finally:
            runtime.stop()


def test_a_stalled_controller_answers_request_timed_out_and_keeps_the_connection(served: tuple[int, Any]) -> None:
    port, controller = served
    release = threading.Event()
    busy = threading.Thread(target=controller.call, args=("Stall", lambda _a: release.wait(20)), daemon=True)
    busy.start()  # the controller thread is now occupied: every later call queues behind this one
    conn = Connection(port)
    try:
        m = __import__(load_request_schema(19, 5).__module__, fromlist=["CreatableTopic"])
        topic = m.CreatableTopic(name="slow", num_partitions=1, replication_factor=1, assignments=(), configs=())
        response = conn.request(19, 5, topics=(topic,), timeout=timedelta(milliseconds=300), validate_only=False)
        (result,) = response.topics
        assert (result.name, int(result.error_code)) == ("slow", 7)  # REQUEST_TIMED_OUT
        assert result.error_message == "The controller did not complete CreateTopics within 300 ms."
        # The same connection still answers.
        versions = conn.request(18, 3, client_software_name="t", client_software_version="1")
        assert int(versions.error_code) == 0
    finally:
        release.set()
        busy.join(20)
        conn.sock.close()
