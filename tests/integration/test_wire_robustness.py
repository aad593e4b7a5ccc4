"""Protocol robustness over real sockets: bad frames close only their own connection; the server lives on."""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.wire.apikeys import SUPPORTED
from controller.wire.handlers.apis import Apis, NodeView
from controller.wire.runtime import WireRuntime
from zkmodel.brokers import EndPoint

pytestmark = pytest.mark.integration


@dataclass
class StaticSnapshot:
    brokers: dict[int, Any] = field(default_factory=dict)
    topics: dict[str, Any] = field(default_factory=dict)
    controller_id: int = -1


class StaticCache:
    """A fixed, empty view of the cluster: these tests are about framing, not metadata."""

    def snapshot(self) -> StaticSnapshot:
        return StaticSnapshot()

    def wait_for(self, predicate: Any, timeout: float) -> StaticSnapshot:
        return StaticSnapshot()


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[WireRuntime, int]]:
    apis = Apis(NodeView(1, "cluster", StaticCache(), None, 1, 1))
    runtime = WireRuntime(apis.handlers(), SUPPORTED, max_frame=1 << 20)
    bound = runtime.start([EndPoint("PLAINTEXT", "127.0.0.1", 0, "PLAINTEXT")])
    yield runtime, bound[0].port
    runtime.stop()


def api_versions_v0(correlation: int) -> bytes:
    body = struct.pack(">hhi", 18, 0, correlation) + struct.pack(">h", 4) + b"test"
    return struct.pack(">i", len(body)) + body


def exchange(port: int, payload: bytes, *, read: bool = True) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(payload)
        if not read:
            return b""
        chunks = []
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                chunks.append(chunk)
                data = b"".join(chunks)
                if len(data) >= 4 and len(data) >= 4 + struct.unpack(">i", data[:4])[0]:
                    break
        except TimeoutError:
            pass
        return b"".join(chunks)


def healthy(port: int) -> bool:
    reply = exchange(port, api_versions_v0(99))
    return len(reply) > 10 and struct.unpack(">i", reply[4:8])[0] == 99 and reply[8:10] == b"\x00\x00"


def test_api_versions_v0_lists_what_we_serve(server: tuple[WireRuntime, int]) -> None:
    _, port = server
    reply = exchange(port, api_versions_v0(7))
    (size, correlation, error, count) = struct.unpack(">iihi", reply[:14])
    assert (correlation, error, count) == (7, 0, len(SUPPORTED)) and size == len(reply) - 4
    keys = {struct.unpack(">hhh", reply[14 + 6 * i : 20 + 6 * i])[0] for i in range(count)}
    assert keys == set(SUPPORTED)


def test_api_versions_newer_than_ours_gets_the_v0_fallback(server: tuple[WireRuntime, int]) -> None:
    _, port = server
    body = struct.pack(">hhi", 18, 9, 5) + struct.pack(">h", 1) + b"x" + b"\x00" + b"\x00"
    reply = exchange(port, struct.pack(">i", len(body)) + body)
    correlation, error = struct.unpack(">ih", reply[4:10])
    assert (correlation, error) == (5, 35)  # UNSUPPORTED_VERSION with our key list, header v0


@pytest.mark.parametrize(
    "payload",
    [
        pytest.param(struct.pack(">i", -1), id="negative-length"),
        pytest.param(struct.pack(">i", (1 << 20) + 1), id="oversized-length"),
        pytest.param(struct.pack(">i", 2) + b"\x00\x12", id="shorter-than-a-header"),
        pytest.param(struct.pack(">i", 8) + struct.pack(">hhi", 999, 0, 1), id="unknown-api-key"),
        pytest.param(struct.pack(">i", 8) + struct.pack(">hhi", 3, 99, 1), id="unsupported-metadata-version"),
        pytest.param(struct.pack(">i", 9) + struct.pack(">hhi", 3, 12, 1) + b"\xff", id="truncated-body"),
    ],
)
def test_bad_frames_close_the_connection_only(server: tuple[WireRuntime, int], payload: bytes) -> None:
    _, port = server
    with socket.create_connection(("127.0.0.1", port), timeout=5) as bystander:
        bystander.sendall(api_versions_v0(1))
        assert bystander.recv(4)  # an established client on another connection
        assert exchange(port, payload) == b""  # closed without an answer
        bystander.recv(65536)
        bystander.sendall(api_versions_v0(2))
        assert struct.unpack(">i", bystander.recv(8)[4:8])[0] == 2  # undisturbed
    assert healthy(port)


def test_pipelined_requests_are_answered_in_order(server: tuple[WireRuntime, int]) -> None:
    _, port = server
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(b"".join(api_versions_v0(c) for c in range(20)))
        data = b""
        correlations: list[int] = []
        while len(correlations) < 20:
            data += s.recv(65536)
            while len(data) >= 4 and len(data) >= 4 + struct.unpack(">i", data[:4])[0]:
                size = struct.unpack(">i", data[:4])[0]
                correlations.append(struct.unpack(">i", data[4:8])[0])
                data = data[4 + size :]
        assert correlations == list(range(20))


def test_half_closed_and_abandoned_connections(server: tuple[WireRuntime, int]) -> None:
    _, port = server
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(struct.pack(">i", 100) + b"partial")  # promises 100 bytes, sends 7, then half-closes
    s.shutdown(socket.SHUT_WR)
    assert s.recv(10) == b""
    s.close()
    abandoned = socket.create_connection(("127.0.0.1", port), timeout=5)
    abandoned.sendall(struct.pack(">i", 50))
    abandoned.close()  # mid-frame
    assert healthy(port)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    payload=st.one_of(
        st.binary(max_size=300),
        st.builds(
            lambda key, version, rest: struct.pack(">hhi", key, version, 1) + rest,
            st.sampled_from([3, 18, 19, 20, 37, 60, 0, 58, -1]),
            st.integers(-2, 20),
            st.binary(max_size=200),
        ),
    )
)
def test_random_frames_never_crash_the_server(server: tuple[WireRuntime, int], payload: bytes) -> None:
    _, port = server
    exchange(port, struct.pack(">i", len(payload)) + payload)
    exchange(port, payload, read=False)  # raw garbage, no length prefix
    assert healthy(port)
