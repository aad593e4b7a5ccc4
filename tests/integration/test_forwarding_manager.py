"""ForwardingManager over real loopback sockets against a scripted fake controller.

A port of Kafka's ForwardingManagerTest (core/src/test/scala/unit/kafka/server/ForwardingManagerTest.scala at
3.9.0-rc3) plus the retry, ordering and envelope-content cases of reference/kafka-zk-facts.md §4. The real
ForwardingManager connects with the real KafkaClient (ApiVersions v3, then ``detach()``) and sends Envelope v0
frames; the fake controller is a small asyncio server on 127.0.0.1 that speaks just ApiVersions and Envelope and
answers each envelope as the test scripts it. Every test runs its own event loop with ``asyncio.run``.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import io
import struct
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest
from kio.index import load_request_schema
from kio.schema.alter_configs.v0.request import AlterableConfig, AlterConfigsRequest, AlterConfigsResource
from kio.schema.alter_configs.v0.response import AlterConfigsResourceResponse, AlterConfigsResponse
from kio.schema.api_versions.v3.response import ApiVersion, ApiVersionsResponse
from kio.schema.envelope.v0.response import EnvelopeResponse
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i8, i16, i32, i32Timedelta

from controller.broker.forwarding import Backoff, ForwardingManager
from controller.security.principal import KafkaPrincipal, serialize
from controller.wire.client import KafkaClient
from controller.wire.envelope import Outcome
from zkmodel import errorcodes as E
from zkmodel.brokers import BrokerRegistration, EndPoint

# timing: the retry scenarios must fit several envelopes into 300 ms timeouts; beside a second worker on the
# same two cores one of them fitted only one (docs/testing.md).
pytestmark = [pytest.mark.integration, pytest.mark.timing]

LISTENER = "INTERNAL"
BROKER_ID = 1
ALICE = KafkaPrincipal(KafkaPrincipal.USER_TYPE, "alice")
#: Kafka's ForwardingManagerTest uses correlation id 27 for the client's request.
CORRELATION = 27
#: A long request.timeout.ms for tests that must not time out, a short one for those that must.
LONG_MS = 10_000
SHORT_MS = 300
#: No test may take longer than this, whatever the forwarding manager does.
TEST_DEADLINE_S = 30.0
ALTER_CONFIGS, ENVELOPE, API_VERSIONS = 33, 58, 18
NO_THROTTLE = i32Timedelta.parse(datetime.timedelta(0))


# -- the client's inner request and the controller's inner response --------------------------------------------------
def inner_request(correlation: int = CORRELATION, topic: str = "foo") -> bytes:
    """An AlterConfigs v0 request (header v1 + body), as the client sent it: no size prefix."""
    buf = io.BytesIO()
    header = AlterConfigsRequest.__header_schema__
    entity_writer(header)(
        buf,
        header(
            request_api_key=i16(ALTER_CONFIGS),
            request_api_version=i16(0),
            correlation_id=i32(correlation),
            client_id="clientId",
        ),
    )
    body = AlterConfigsRequest(
        resources=(
            AlterConfigsResource(
                resource_type=i8(2),
                resource_name=topic,
                configs=(AlterableConfig(name="min.insync.replicas", value="1"),),
            ),
        ),
        validate_only=False,
    )
    entity_writer(AlterConfigsRequest)(buf, body)
    return buf.getvalue()


def inner_response(correlation: int, marker: str) -> bytes:
    """An AlterConfigs v0 response (header v0 + body); ``marker`` names who answered, as the resource name."""
    buf = io.BytesIO()
    entity_writer(AlterConfigsResponse.__header_schema__)(
        buf, AlterConfigsResponse.__header_schema__(correlation_id=i32(correlation))
    )
    body = AlterConfigsResponse(
        throttle_time=NO_THROTTLE,
        responses=(
            AlterConfigsResourceResponse(
                error_code=ErrorCode.none, error_message=None, resource_type=i8(2), resource_name=marker
            ),
        ),
    )
    entity_writer(AlterConfigsResponse)(buf, body)
    return buf.getvalue()


def correlation_of(frame: bytes) -> int:
    return int(struct.unpack_from(">i", frame, 4)[0])


# -- the scripted fake controller -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Seen:
    """One Envelope request as the fake controller decoded it."""

    correlation_id: int
    api_version: int
    client_id: str | None
    request_data: bytes
    request_principal: bytes | None
    client_host_address: bytes
    connection: int


@dataclass(frozen=True)
class Answer:
    """An Envelope response. ``inner`` builds ResponseData from the envelope received (None: null data);
    ``correlation_delta`` skews the envelope's own correlation id; ``close_after`` closes the connection once
    answered."""

    error: int = 0
    inner: Callable[[Seen, str], bytes | None] | None = None
    correlation_delta: int = 0
    close_after: bool = False


@dataclass(frozen=True)
class Raw:
    """A response frame of these exact bytes (size prefix added)."""

    frame: bytes


@dataclass(frozen=True)
class Close:
    """Close the connection instead of answering, after writing ``partial`` raw bytes (maybe half a response)."""

    partial: bytes = b""


@dataclass(frozen=True)
class Hold:
    """Wait for ``gate`` before acting as ``then``."""

    gate: asyncio.Event
    then: Answer | Raw | Close = field(default_factory=Answer)


Action = Answer | Raw | Close | Hold


def echo(seen: Seen, name: str) -> bytes:
    """The controller's inner response to the inner request received: same correlation id, marked with ``name``."""
    return inner_response(correlation_of(seen.request_data), name)


def api_versions_response(correlation: int, envelope_versions: tuple[int, int] | None) -> bytes:
    keys = [
        ApiVersion(api_key=i16(API_VERSIONS), min_version=i16(0), max_version=i16(3)),
        ApiVersion(api_key=i16(ALTER_CONFIGS), min_version=i16(0), max_version=i16(2)),
    ]
    if envelope_versions is not None:
        low, high = envelope_versions
        keys.append(ApiVersion(api_key=i16(ENVELOPE), min_version=i16(low), max_version=i16(high)))
    buf = io.BytesIO()
    entity_writer(ApiVersionsResponse.__header_schema__)(
        buf, ApiVersionsResponse.__header_schema__(correlation_id=i32(correlation))
    )
    entity_writer(ApiVersionsResponse)(
        buf, ApiVersionsResponse(error_code=ErrorCode.none, api_keys=tuple(keys), throttle_time=NO_THROTTLE)
    )
    return buf.getvalue()


def envelope_response(correlation: int, error: int, data: bytes | None) -> bytes:
    buf = io.BytesIO()
    entity_writer(EnvelopeResponse.__header_schema__)(
        buf, EnvelopeResponse.__header_schema__(correlation_id=i32(correlation))
    )
    entity_writer(EnvelopeResponse)(buf, EnvelopeResponse(response_data=data, error_code=ErrorCode(error)))
    return buf.getvalue()


def decode_envelope(frame: bytes, connection: int) -> Seen:
    schema = load_request_schema(ENVELOPE, 0)
    header, offset = entity_reader(schema.__header_schema__)(frame, 0)
    body: Any
    body, _ = entity_reader(schema)(frame, offset)
    return Seen(
        correlation_id=int(header.correlation_id),
        api_version=int(header.request_api_version),
        client_id=header.client_id,
        request_data=bytes(body.request_data),
        request_principal=None if body.request_principal is None else bytes(body.request_principal),
        client_host_address=bytes(body.client_host_address),
        connection=connection,
    )


class FakeController:
    """Answers ApiVersions (advertising Envelope at ``envelope_versions``, or not at all when None) and answers
    each Envelope with the next scripted action, then ``default`` once the script runs out. Requests on a
    connection are read as soon as they arrive and answered in order, so pipelined envelopes would be seen."""

    def __init__(
        self,
        name: str,
        script: list[Action] | None = None,
        *,
        default: Action | None = None,
        envelope_versions: tuple[int, int] | None = (0, 0),
    ) -> None:
        self.name = name
        self.script = list(script or [])
        self.default: Action = default if default is not None else Answer()
        self.envelope_versions = envelope_versions
        self.port = 0
        self.connections = 0
        self.api_versions = 0
        self.envelopes: list[Seen] = []
        self.answered = 0
        self.max_outstanding = 0
        #: Envelopes read and not yet answered (or dropped), over all connections, and the most at once.
        self.in_flight = 0
        self.max_in_flight = 0
        self.unexpected: list[str] = []
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> FakeController:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self

    async def aclose(self) -> None:
        if self._server is not None:
            self._server.close()
        for writer in list(self._writers):
            writer.close()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self._server is not None:
            await self._server.wait_closed()

    @property
    def open_connections(self) -> int:
        return len(self._writers)

    def _next(self) -> Action:
        return self.script.pop(0) if self.script else self.default

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._writers.add(writer)
        self.connections += 1
        connection = self.connections
        queue: asyncio.Queue[bytes] = asyncio.Queue()
        state = {"outstanding": 0}
        responder = asyncio.create_task(self._respond(queue, writer, connection, state))
        self._tasks.add(responder)
        try:
            while True:
                (size,) = struct.unpack(">i", await reader.readexactly(4))
                frame = bytes(await reader.readexactly(size))
                if int.from_bytes(frame[:2], "big", signed=True) == ENVELOPE:
                    state["outstanding"] += 1
                    self.max_outstanding = max(self.max_outstanding, state["outstanding"])
                    self.in_flight += 1
                    self.max_in_flight = max(self.max_in_flight, self.in_flight)
                queue.put_nowait(frame)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            responder.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await responder
            self._tasks.discard(responder)
            self._writers.discard(writer)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
            self._tasks.discard(task)

    async def _respond(
        self, queue: asyncio.Queue[bytes], writer: asyncio.StreamWriter, connection: int, state: dict[str, int]
    ) -> None:
        while True:
            frame = await queue.get()
            key, version, correlation = struct.unpack_from(">hhi", frame)
            if key == API_VERSIONS and version == 3:
                self.api_versions += 1
                reply = api_versions_response(correlation, self.envelope_versions)
                writer.write(struct.pack(">i", len(reply)) + reply)
                await writer.drain()
                continue
            span = self.envelope_versions
            if key != ENVELOPE or span is None or not span[0] <= version <= span[1]:
                # What Kafka does with an API or version it does not serve: close the connection.
                self.unexpected.append(f"API {key} v{version}")
                writer.close()
                return
            seen = decode_envelope(frame, connection)
            self.envelopes.append(seen)
            action = self._next()
            if isinstance(action, Hold):
                await action.gate.wait()
                action = action.then
            if isinstance(action, Close):
                self.in_flight -= 1
                writer.write(action.partial)
                await writer.drain()
                writer.close()
                return
            if isinstance(action, Raw):
                reply = action.frame
            else:
                inner = (action.inner or echo)(seen, self.name)
                reply = envelope_response(seen.correlation_id + action.correlation_delta, action.error, inner)
            writer.write(struct.pack(">i", len(reply)) + reply)
            await writer.drain()
            state["outstanding"] -= 1
            self.in_flight -= 1
            self.answered += 1
            if isinstance(action, Answer) and action.close_after:
                writer.close()
                return


# -- the cluster view, metrics and the manager ------------------------------------------------------------------------
class ClusterView:
    """The metadata cache as the forwarding manager sees it: who the controller is, and every broker's listeners."""

    def __init__(self) -> None:
        self.controller_id: int | None = None
        self.version = 1
        self.brokers: dict[int, Any] = {}
        #: Every look at the cache finds a newer version (metadata keeps changing, the controller unchanged).
        self.churn = False

    def register(self, broker_id: int, port: int, listener: str = LISTENER) -> None:
        endpoint = EndPoint(listener, "127.0.0.1", port, "PLAINTEXT")
        self.brokers[broker_id] = SimpleNamespace(broker_id=broker_id, registration=BrokerRegistration((endpoint,), 1))
        self.version += 1

    def elect(self, broker_id: int | None) -> None:
        self.controller_id = broker_id
        self.version += 1

    def snapshot(self) -> Any:
        if self.churn:
            self.version += 1
        return SimpleNamespace(controller_id=self.controller_id, version=self.version, brokers=dict(self.brokers))


@dataclass
class RecordingMetrics:
    forwarded: int = 0
    envelopes: int = 0
    authorization_failures: int = 0
    lengths: list[int] = field(default_factory=list)
    queue_times: list[float] = field(default_factory=list)
    remote_times: list[float] = field(default_factory=list)
    retries: dict[str, int] = field(default_factory=dict)

    def forwarded_request(self) -> None:
        self.forwarded += 1

    def envelope_sent(self) -> None:
        self.envelopes += 1

    def authorization_failed(self) -> None:
        self.authorization_failures += 1

    def queue_length(self, n: int) -> None:
        self.lengths.append(n)

    def queue_time(self, seconds: float) -> None:
        self.queue_times.append(seconds)

    def remote_time(self, seconds: float) -> None:
        self.remote_times.append(seconds)

    def retry(self, reason: str) -> None:
        self.retries[reason] = self.retries.get(reason, 0) + 1


def connect(host: str, port: int, timeout: float) -> KafkaClient:
    return KafkaClient(host, port, client_id="t", timeout=timeout)


@dataclass
class Rig:
    view: ClusterView
    metrics: RecordingMetrics
    fm: ForwardingManager
    controllers: dict[int, FakeController]

    async def forward(self, frame: bytes | None = None, client_host: str = "127.0.0.1") -> Outcome:
        return await self.fm.forward(inner_request() if frame is None else frame, ALICE, client_host)


@contextlib.asynccontextmanager
async def rig(
    *controllers: FakeController, timeout_ms: int = LONG_MS, elect: int | None = 0, window: int = 1
) -> AsyncIterator[Rig]:
    """Start the fake controllers as brokers 100, 101, …, elect the ``elect``-th (None: no controller) and build a
    ForwardingManager for broker 1 keeping ``window`` requests in flight (1: Kafka's). Everything is closed on
    the way out, whether the test passed or not."""
    view = ClusterView()
    started: dict[int, FakeController] = {}
    metrics = RecordingMetrics()
    fm = ForwardingManager(
        BROKER_ID, view.snapshot, LISTENER, connect, timeout_ms=timeout_ms, metrics=metrics, max_in_flight=window
    )
    try:
        for i, fake in enumerate(controllers):
            await fake.start()
            started[100 + i] = fake
            view.register(100 + i, fake.port)
        if elect is not None:
            view.elect(100 + elect)
        yield Rig(view, metrics, fm, started)
    finally:
        fm.stop()
        await fm._forget()  # the manager has no close(): drop its channels so no socket outlives the loop
        for fake in started.values():
            await fake.aclose()


def run(test: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """Each test on its own event loop, bounded so a hang fails instead of stalling the suite."""

    async def bounded() -> None:
        await asyncio.wait_for(test(), TEST_DEADLINE_S)

    asyncio.run(bounded())


async def eventually(predicate: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.005)


def assert_no_surprises(*fakes: FakeController) -> None:
    for fake in fakes:
        assert fake.unexpected == [], f"{fake.name} got requests it does not serve: {fake.unexpected}"


# -- the happy path and what the envelope carries ---------------------------------------------------------------------
def test_forwarded_request_is_answered_with_the_controllers_inner_response() -> None:
    async def body() -> None:
        fake = FakeController("c0")
        async with rig(fake) as r:
            outcome = await r.forward()
            assert outcome == Outcome(response=inner_response(CORRELATION, "c0"))
            assert fake.api_versions == 1
            assert len(fake.envelopes) == 1
            assert (r.metrics.forwarded, r.metrics.envelopes, r.metrics.authorization_failures) == (1, 1, 0)
            assert r.metrics.lengths == [1, 0]
            # testForwardingManagerMetricsOnComplete: both histograms get one sample.
            assert len(r.metrics.queue_times) == 1
            assert len(r.metrics.remote_times) == 1
            assert r.metrics.queue_times[0] >= 0
            assert r.metrics.remote_times[0] >= 0
            assert_no_surprises(fake)

    run(body)


@pytest.mark.parametrize(
    ("client_host", "address"),
    [("127.0.0.1", bytes([127, 0, 0, 1])), ("10.1.2.3", bytes([10, 1, 2, 3])), ("::1", bytes(15) + b"\x01")],
)
def test_envelope_carries_inner_frame_principal_and_client_address(client_host: str, address: bytes) -> None:
    async def body() -> None:
        fake = FakeController("c0")
        async with rig(fake) as r:
            frame = inner_request(CORRELATION, "exact-bytes")
            outcome = await r.fm.forward(frame, ALICE, client_host)
            assert outcome.response == inner_response(CORRELATION, "c0")
            (seen,) = fake.envelopes
            assert seen.api_version == 0
            assert seen.request_data == frame
            assert seen.request_principal == serialize(ALICE)
            # reference §4: User:alice → 0000 05 55736572 06 616c696365 00 00
            assert seen.request_principal == bytes.fromhex("0000055573657206616c6963650000")
            assert seen.client_host_address == address
            assert seen.client_id == f"broker-{BROKER_ID}-forwarding"
            assert_no_surprises(fake)

    run(body)


def test_token_authenticated_principal_is_serialized_with_its_flag() -> None:
    async def body() -> None:
        fake = FakeController("c0")
        async with rig(fake) as r:
            token_user = KafkaPrincipal(KafkaPrincipal.USER_TYPE, "alice", token_authenticated=True)
            await r.fm.forward(inner_request(), token_user, "127.0.0.1")
            (seen,) = fake.envelopes
            assert seen.request_principal == bytes.fromhex("0000055573657206616c6963650100")

    run(body)


def test_channel_is_reused_for_consecutive_requests() -> None:
    async def body() -> None:
        fake = FakeController("c0")
        async with rig(fake) as r:
            for correlation in (1, 2, 3):
                outcome = await r.forward(inner_request(correlation))
                assert outcome.response == inner_response(correlation, "c0")
            assert fake.connections == 1
            assert fake.api_versions == 1
            # Envelope correlation ids are the channel's own, distinct per envelope.
            assert len({s.correlation_id for s in fake.envelopes}) == 3

    run(body)


# -- testForwardingTimeoutWaitingForControllerDiscovery ---------------------------------------------------------------
@pytest.mark.parametrize("case", ["no controller", "controller not registered", "controller lacks the listener"])
def test_timeout_waiting_for_controller_discovery(case: str) -> None:
    async def body() -> None:
        fake = FakeController("c0")
        async with rig(fake, timeout_ms=SHORT_MS, elect=None) as r:
            if case == "controller not registered":
                r.view.elect(7)
            elif case == "controller lacks the listener":
                r.view.register(100, fake.port, listener="OTHER")
                r.view.elect(100)
            outcome = await r.forward()
            assert outcome == Outcome(error=E.REQUEST_TIMED_OUT)
            assert fake.connections == 0
            assert (r.metrics.forwarded, r.metrics.envelopes) == (0, 0)
            assert r.metrics.lengths == [1, 0]
            # testForwardingManagerMetricsOnTimeout: queue time records the timeout, remote time nothing.
            assert r.metrics.queue_times == [SHORT_MS / 1000]
            assert r.metrics.remote_times == []

    run(body)


def test_request_waiting_for_discovery_is_sent_once_a_controller_appears() -> None:
    async def body() -> None:
        fake = FakeController("c0")
        async with rig(fake, elect=None) as r:
            pending = asyncio.create_task(r.forward())
            await eventually(lambda: r.metrics.lengths == [1], "the request to be queued")
            await asyncio.sleep(0.1)  # a few rediscovery rounds with no controller
            assert not pending.done()
            r.view.elect(100)
            outcome = await pending
            assert outcome.response == inner_response(CORRELATION, "c0")
            assert (r.metrics.forwarded, r.metrics.envelopes) == (1, 1)
            assert set(r.metrics.retries) == {"no_controller"}  # the waiting rounds, each counted
            assert r.metrics.retries["no_controller"] >= 2

    run(body)


# -- testForwardingTimeoutAfterRetry ----------------------------------------------------------------------------------
def test_timeout_after_retrying_a_controller_that_keeps_disconnecting() -> None:
    async def body() -> None:
        fake = FakeController("c0", default=Close())
        async with rig(fake, timeout_ms=SHORT_MS) as r:
            outcome = await r.forward()
            assert outcome == Outcome(error=E.REQUEST_TIMED_OUT)
            assert r.metrics.envelopes > 1
            assert r.metrics.forwarded == 1
            # The last envelope may still be unread by the fake when the request times out.
            assert 1 < len(fake.envelopes) <= r.metrics.envelopes
            # Every retry is the same request: same inner bytes, a fresh connection each time.
            assert {s.request_data for s in fake.envelopes} == {inner_request()}
            assert len({s.connection for s in fake.envelopes}) == len(fake.envelopes)
            assert r.metrics.lengths == [1, 0]
            assert r.metrics.queue_times == [SHORT_MS / 1000]
            assert r.metrics.remote_times == []

    run(body)


def test_timeout_after_retrying_a_controller_that_keeps_answering_not_controller() -> None:
    async def body() -> None:
        fake = FakeController("c0", default=Answer(error=E.NOT_CONTROLLER.code, inner=lambda _s, _n: None))
        async with rig(fake, timeout_ms=SHORT_MS) as r:
            # The cache keeps moving on while still naming broker 100 (it won again), so the manager goes back
            # to it at once rather than waiting out its NOT_CONTROLLER back-off.
            r.view.churn = True
            outcome = await r.forward()
            assert outcome == Outcome(error=E.REQUEST_TIMED_OUT)
            assert r.metrics.envelopes > 1
            assert r.metrics.forwarded == 1
            # The last envelope may still be unread by the fake when the request times out.
            assert 1 < len(fake.envelopes) <= r.metrics.envelopes
            assert {s.request_data for s in fake.envelopes} == {inner_request()}
            assert r.metrics.lengths == [1, 0]
            assert r.metrics.queue_times[-1] == SHORT_MS / 1000

    run(body)


def test_not_controller_retries_record_no_latency_samples_of_their_own() -> None:
    async def body() -> None:
        fake = FakeController("c0", default=Answer(error=E.NOT_CONTROLLER.code, inner=lambda _s, _n: None))
        async with rig(fake, timeout_ms=SHORT_MS) as r:
            r.view.churn = True
            outcome = await r.forward()
            assert outcome == Outcome(error=E.REQUEST_TIMED_OUT)
            assert r.metrics.envelopes > 1
            assert r.metrics.queue_times == [SHORT_MS / 1000]
            assert r.metrics.remote_times == []

    run(body)


def test_not_controller_without_a_metadata_change_is_not_hammered() -> None:
    async def body() -> None:
        fake = FakeController("c0", default=Answer(error=E.NOT_CONTROLLER.code, inner=lambda _s, _n: None))
        async with rig(fake, timeout_ms=SHORT_MS) as r:
            outcome = await r.forward()
            assert outcome == Outcome(error=E.REQUEST_TIMED_OUT)
            # The broker that said NOT_CONTROLLER is asked again only after a doubling back-off (50, 100, 200 ms
            # within the 300 ms timeout) unless the cache moves on: a few envelopes, not hundreds.
            assert 2 <= len(fake.envelopes) <= 5
            assert (r.metrics.forwarded, r.metrics.envelopes) == (1, len(fake.envelopes))
            assert r.metrics.retries.get("not_controller") == len(fake.envelopes)

    run(body)


def test_unreachable_controller_times_out() -> None:
    async def body() -> None:
        fake = FakeController("c0")
        async with rig(fake, timeout_ms=SHORT_MS) as r:
            await fake.aclose()  # registered and elected, but nothing listens on its port any more
            outcome = await r.forward()
            assert outcome == Outcome(error=E.REQUEST_TIMED_OUT)
            assert (r.metrics.forwarded, r.metrics.envelopes) == (0, 0)
            assert r.metrics.queue_times == [SHORT_MS / 1000]
            assert r.metrics.retries.get("unreachable", 0) >= 1
            assert "not_controller" not in r.metrics.retries

    run(body)


# -- invisible retries ------------------------------------------------------------------------------------------------
def test_not_controller_then_new_controller_answers_invisibly() -> None:
    async def body() -> None:
        old = FakeController("old", default=Answer(error=E.NOT_CONTROLLER.code, inner=lambda _s, _n: None))
        new = FakeController("new")
        async with rig(old, new) as r:
            pending = asyncio.create_task(r.forward())
            await eventually(lambda: old.answered == 1, "the old controller to answer NOT_CONTROLLER")
            assert not pending.done()
            r.view.elect(101)  # the metadata cache learns of the new controller
            outcome = await pending
            assert outcome == Outcome(response=inner_response(CORRELATION, "new"))
            assert len(new.envelopes) == 1
            assert new.envelopes[0].request_data == old.envelopes[0].request_data == inner_request()
            assert new.envelopes[0].request_principal == serialize(ALICE)
            assert r.metrics.forwarded == 1
            assert r.metrics.envelopes == len(old.envelopes) + 1
            assert r.metrics.lengths == [1, 0]
            assert_no_surprises(old, new)

    run(body)


@pytest.mark.parametrize(
    "failure",
    [Close(), Close(partial=struct.pack(">i", 64) + b"\x00\x00"), Close(partial=b"\x00\x00")],
    ids=["before-answering", "mid-response", "mid-size-prefix"],
)
def test_disconnect_retries_on_a_new_connection_and_succeeds(failure: Close) -> None:
    async def body() -> None:
        fake = FakeController("c0", [failure])
        async with rig(fake) as r:
            outcome = await r.forward()
            assert outcome == Outcome(response=inner_response(CORRELATION, "c0"))
            assert len(fake.envelopes) == 2
            first, second = fake.envelopes
            assert (first.connection, second.connection) == (1, 2)
            assert first.request_data == second.request_data == inner_request()
            assert fake.api_versions == 2  # the new connection asks ApiVersions again
            assert (r.metrics.forwarded, r.metrics.envelopes) == (1, 2)
            assert r.metrics.retries == {"connection_lost": 1}
            assert r.metrics.lengths == [1, 0]
            assert_no_surprises(fake)

    run(body)


def test_controller_closing_an_idle_channel_is_survived() -> None:
    async def body() -> None:
        fake = FakeController("c0", [Answer(close_after=True)])
        async with rig(fake) as r:
            assert (await r.forward(inner_request(1))).response == inner_response(1, "c0")
            await eventually(lambda: fake.open_connections == 0, "the controller to drop the connection")
            assert (await r.forward(inner_request(2))).response == inner_response(2, "c0")
            assert fake.connections == 2
            assert r.metrics.forwarded == 2

    run(body)


# -- envelope errors: testUnsupportedVersions, testFailedAuthentication ------------------------------------------------
def test_unsupported_version_closes_the_client_connection() -> None:
    async def body() -> None:
        # Kafka's test answers UNSUPPORTED_VERSION with a valid inner response: it is still not relayed.
        fake = FakeController("c0", [Answer(error=E.UNSUPPORTED_VERSION.code)])
        async with rig(fake) as r:
            outcome = await r.forward()
            assert outcome == Outcome(close=True)
            assert len(fake.envelopes) == 1
            assert r.metrics.lengths == [1, 0]

    run(body)


def test_cluster_authorization_failed_is_unknown_server_error_and_counted_once() -> None:
    async def body() -> None:
        fake = FakeController("c0", [Answer(error=E.CLUSTER_AUTHORIZATION_FAILED.code, inner=lambda _s, _n: None)])
        async with rig(fake) as r:
            outcome = await r.forward()
            assert outcome == Outcome(error=E.UNKNOWN_SERVER_ERROR)
            assert r.metrics.authorization_failures == 1
            assert len(fake.envelopes) == 1  # not retried
            # The channel is still good: the next request goes through on it.
            assert (await r.forward(inner_request(2))).response == inner_response(2, "c0")
            assert r.metrics.authorization_failures == 1
            assert fake.connections == 1

    run(body)


@pytest.mark.parametrize(
    "error",
    [E.PRINCIPAL_DESERIALIZATION_FAILURE, E.INVALID_REQUEST, E.UNKNOWN_SERVER_ERROR, E.REQUEST_TIMED_OUT],
    ids=lambda e: e.name,
)
def test_other_envelope_errors_are_unknown_server_error(error: E.KafkaError) -> None:
    async def body() -> None:
        fake = FakeController("c0", [Answer(error=error.code, inner=lambda _s, _n: None)])
        async with rig(fake) as r:
            outcome = await r.forward()
            assert outcome == Outcome(error=E.UNKNOWN_SERVER_ERROR)
            assert r.metrics.authorization_failures == 0
            assert len(fake.envelopes) == 1

    run(body)


def test_envelope_error_with_inner_data_is_still_unknown_server_error() -> None:
    async def body() -> None:
        fake = FakeController("c0", [Answer(error=E.INVALID_REQUEST.code)])  # inner bytes present, but an error
        async with rig(fake) as r:
            assert await r.forward() == Outcome(error=E.UNKNOWN_SERVER_ERROR)

    run(body)


def test_none_with_null_response_data_is_unknown_server_error() -> None:
    async def body() -> None:
        fake = FakeController("c0", [Answer(inner=lambda _s, _n: None)])
        async with rig(fake) as r:
            assert await r.forward() == Outcome(error=E.UNKNOWN_SERVER_ERROR)

    run(body)


# -- testResponseCorrelationIdMismatch and unreadable responses -------------------------------------------------------
def test_inner_correlation_id_mismatch_is_unknown_server_error() -> None:
    async def body() -> None:
        fake = FakeController("c0", [Answer(inner=lambda s, n: inner_response(correlation_of(s.request_data) + 1, n))])
        async with rig(fake) as r:
            outcome = await r.forward()
            assert outcome == Outcome(error=E.UNKNOWN_SERVER_ERROR)
            assert len(fake.envelopes) == 1

    run(body)


def test_inner_response_too_short_for_a_header_is_unknown_server_error() -> None:
    async def body() -> None:
        fake = FakeController("c0", [Answer(inner=lambda _s, _n: b"\x00\x1b")])
        async with rig(fake) as r:
            assert await r.forward() == Outcome(error=E.UNKNOWN_SERVER_ERROR)

    run(body)


def test_envelope_correlation_id_mismatch_is_unknown_server_error() -> None:
    async def body() -> None:
        fake = FakeController("c0", [Answer(correlation_delta=5)])
        async with rig(fake) as r:
            outcome = await r.forward()
            assert outcome == Outcome(error=E.UNKNOWN_SERVER_ERROR)
            # The channel is out of step: the next request gets a fresh one and succeeds.
            assert (await r.forward(inner_request(2))).response == inner_response(2, "c0")
            assert fake.connections == 2

    run(body)


@pytest.mark.parametrize(
    "garbage",
    [b"", b"\xde\xad", b"\x00\x00\x00\x01", b"\x00\x00\x00\x01\x00\xff\xff\xff\xff\x7f", b"\xff" * 64],
    ids=["empty", "two-bytes", "header-only-no-tags", "huge-data-length", "ff"],
)
def test_garbage_envelope_response_is_unknown_server_error(garbage: bytes) -> None:
    async def body() -> None:
        fake = FakeController("c0", [Raw(garbage)])
        async with rig(fake) as r:
            outcome = await r.forward()
            assert outcome == Outcome(error=E.UNKNOWN_SERVER_ERROR)
            assert len(fake.envelopes) == 1
            assert r.metrics.lengths == [1, 0]
            # The manager recovers: a fresh channel serves the next request.
            assert (await r.forward(inner_request(2))).response == inner_response(2, "c0")

    run(body)


def test_oversized_response_size_is_treated_as_a_disconnect() -> None:
    async def body() -> None:
        fake = FakeController("c0", [Close(partial=struct.pack(">i", -1))])
        async with rig(fake) as r:
            assert (await r.forward()).response == inner_response(CORRELATION, "c0")
            assert len(fake.envelopes) == 2

    run(body)


# -- a controller below the forwarding gate ---------------------------------------------------------------------------
def test_controller_without_envelope_hands_the_request_back() -> None:
    async def body() -> None:
        fake = FakeController("c0", envelope_versions=None)
        async with rig(fake) as r:
            outcome = await r.forward()
            assert outcome == Outcome(local=True)
            assert fake.api_versions == 1
            assert fake.envelopes == []
            assert (r.metrics.forwarded, r.metrics.envelopes) == (0, 0)
            assert r.metrics.lengths == [1, 0]
            assert_no_surprises(fake)

    run(body)


def test_new_controller_with_envelope_is_used_after_one_without() -> None:
    async def body() -> None:
        old = FakeController("old", envelope_versions=None)
        new = FakeController("new")
        async with rig(old, new) as r:
            assert await r.forward() == Outcome(local=True)
            r.view.elect(101)
            assert (await r.forward()).response == inner_response(CORRELATION, "new")
            assert old.envelopes == []
            assert_no_surprises(old, new)

    run(body)


def test_envelope_version_the_controller_does_not_serve_is_unknown_server_error() -> None:
    async def body() -> None:
        fake = FakeController("c0", envelope_versions=(1, 1))
        async with rig(fake, timeout_ms=SHORT_MS) as r:
            outcome = await r.forward()
            assert outcome == Outcome(error=E.UNKNOWN_SERVER_ERROR)
            assert fake.unexpected == []

    run(body)


# -- QueueLength, ordering, one request in flight ---------------------------------------------------------------------
def test_queue_length_and_one_request_in_flight() -> None:
    async def body() -> None:
        gate = asyncio.Event()
        fake = FakeController("c0", [Hold(gate)])
        async with rig(fake) as r:
            first = asyncio.create_task(r.forward(inner_request(1)))
            await eventually(lambda: len(fake.envelopes) == 1, "the first envelope to arrive")
            assert r.metrics.lengths == [1]

            second = asyncio.create_task(r.forward(inner_request(2)))
            third = asyncio.create_task(r.forward(inner_request(3)))
            await eventually(lambda: r.metrics.lengths[-1] == 3, "three requests to be queued")
            assert r.metrics.lengths == [1, 2, 3]
            await asyncio.sleep(0.05)  # give a pipelining manager every chance to send another envelope
            assert len(fake.envelopes) == 1
            assert not (first.done() or second.done() or third.done())

            gate.set()
            outcomes = await asyncio.gather(first, second, third)
            assert [o.response for o in outcomes] == [inner_response(c, "c0") for c in (1, 2, 3)]
            assert [correlation_of(s.request_data) for s in fake.envelopes] == [1, 2, 3]  # first come, first served
            assert fake.max_outstanding == 1
            assert r.metrics.lengths == [1, 2, 3, 2, 1, 0]
            assert (r.metrics.forwarded, r.metrics.envelopes) == (3, 3)
            assert fake.connections == 1

    run(body)


def test_queued_request_waits_behind_a_retrying_one() -> None:
    async def body() -> None:
        old = FakeController("old", default=Answer(error=E.NOT_CONTROLLER.code, inner=lambda _s, _n: None))
        new = FakeController("new")
        async with rig(old, new) as r:
            first = asyncio.create_task(r.forward(inner_request(1)))
            await eventually(lambda: old.answered == 1, "NOT_CONTROLLER for the first request")
            second = asyncio.create_task(r.forward(inner_request(2)))
            await eventually(lambda: r.metrics.lengths[-1] == 2, "the second request to be queued")
            r.view.elect(101)
            assert (await first).response == inner_response(1, "new")
            assert (await second).response == inner_response(2, "new")
            # The retried request went first: it was re-queued at the head, not behind the second.
            assert [correlation_of(s.request_data) for s in new.envelopes] == [1, 2]
            assert new.max_outstanding == 1
            assert r.metrics.lengths == [1, 2, 1, 0]

    run(body)


def test_stop_ends_queued_requests_with_request_timed_out() -> None:
    async def body() -> None:
        gate = asyncio.Event()
        fake = FakeController("c0", [Hold(gate)])
        async with rig(fake) as r:
            first = asyncio.create_task(r.forward(inner_request(1)))
            await eventually(lambda: len(fake.envelopes) == 1, "the first envelope to arrive")
            second = asyncio.create_task(r.forward(inner_request(2)))
            await eventually(lambda: r.metrics.lengths[-1] == 2, "the second request to be queued")
            r.fm.stop()
            gate.set()
            assert (await first).response == inner_response(1, "c0")  # already in flight: answered
            assert await second == Outcome(error=E.REQUEST_TIMED_OUT)
            assert len(fake.envelopes) == 1
            assert await r.forward(inner_request(3)) == Outcome(error=E.REQUEST_TIMED_OUT)
            assert r.metrics.lengths[-1] == 0

    run(body)


def test_cancelled_forward_does_not_poison_the_next_request() -> None:
    """A forward() cancelled while awaiting the answer drops its channel, so the late answer is never read as
    the next request's (the fake may answer into the closed connection or not at all)."""

    async def body() -> None:
        gate = asyncio.Event()
        fake = FakeController("c0", [Hold(gate)])
        async with rig(fake) as r:
            first = asyncio.create_task(r.forward(inner_request(1)))
            await eventually(lambda: len(fake.envelopes) == 1, "the first envelope to arrive")
            first.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await first
            gate.set()
            assert (await r.forward(inner_request(2))).response == inner_response(2, "c0")

    run(body)


# -- a window of several requests in flight (bridgekeeper.forwarding.max.in.flight) -----------------------------------
def test_a_window_keeps_that_many_requests_in_flight_each_on_its_own_connection() -> None:
    async def body() -> None:
        gate = asyncio.Event()
        fake = FakeController("c0", [Hold(gate), Hold(gate), Hold(gate)])
        async with rig(fake, window=3) as r:
            pending = [asyncio.create_task(r.forward(inner_request(c))) for c in (1, 2, 3, 4, 5)]
            await eventually(lambda: len(fake.envelopes) == 3, "three envelopes in flight")
            await asyncio.sleep(0.05)  # every chance to send a fourth
            assert len(fake.envelopes) == 3 and fake.in_flight == 3
            assert fake.connections == 3 and fake.max_outstanding == 1  # one per connection, never pipelined
            assert {correlation_of(s.request_data) for s in fake.envelopes} == {1, 2, 3}  # first come, first in
            assert r.metrics.lengths[-1] == 5 and not any(p.done() for p in pending)

            gate.set()
            outcomes = await asyncio.gather(*pending)
            assert [o.response for o in outcomes] == [inner_response(c, "c0") for c in (1, 2, 3, 4, 5)]
            assert fake.connections == 3  # the last two went on connections the first three left idle
            assert fake.max_in_flight == 3
            assert (r.metrics.forwarded, r.metrics.envelopes) == (5, 5)
            assert r.metrics.lengths[-1] == 0

    run(body)


def test_a_window_never_opens_more_connections_than_it_has_slots() -> None:
    async def body() -> None:
        fake = FakeController("c0")
        async with rig(fake, window=4) as r:
            for _burst in range(3):
                outcomes = await asyncio.gather(*(r.forward(inner_request(c)) for c in range(20)))
                assert [o.response for o in outcomes] == [inner_response(c, "c0") for c in range(20)]
            assert fake.max_in_flight <= 4 and fake.connections <= 4
            assert fake.api_versions == fake.connections  # each connection asked once, then reused
            assert r.metrics.envelopes == 60

    run(body)


def counted(monkeypatch: pytest.MonkeyPatch, backoff: Backoff) -> list[float]:
    """The waits ``backoff.failed()`` returns from now on, one per failure it is told of."""
    grow = backoff.failed
    waits: list[float] = []

    def failed() -> float:
        waits.append(grow())
        return waits[-1]

    monkeypatch.setattr(backoff, "failed", failed)
    return waits


def test_requests_in_flight_that_all_hear_not_controller_grow_the_back_off_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Three requests in flight to a deposed controller each hear NOT_CONTROLLER: one verdict about one metadata
    version, so the back-off before asking that broker again doubles once, not three times."""

    async def body() -> None:
        gate = asyncio.Event()
        refuse = Answer(error=E.NOT_CONTROLLER.code, inner=lambda _s, _n: None)
        old = FakeController("old", [Hold(gate, refuse), Hold(gate, refuse), Hold(gate, refuse)])
        new = FakeController("new")
        async with rig(old, new, window=3) as r:
            verdicts = counted(monkeypatch, r.fm._not_controller_backoff)
            pending = [asyncio.create_task(r.forward(inner_request(c))) for c in (1, 2, 3)]
            await eventually(lambda: len(old.envelopes) == 3, "three envelopes at the old controller")
            r.view.elect(101)
            gate.set()
            outcomes = await asyncio.gather(*pending)
            assert [o.response for o in outcomes] == [inner_response(c, "new") for c in (1, 2, 3)]
            assert r.metrics.retries == {"not_controller": 3}
            assert len(verdicts) == 1
            assert_no_surprises(old, new)

    run(body)


def test_connections_lost_together_grow_the_reconnect_back_off_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The controller drops all three connections carrying requests: one failure for the reconnect back-off (the
    second connection lost with the first says nothing new), and every request is retried and answered."""

    async def body() -> None:
        gate = asyncio.Event()
        fake = FakeController("c0", [Hold(gate, Close()), Hold(gate, Close()), Hold(gate, Close())])
        async with rig(fake, window=3) as r:
            failures = counted(monkeypatch, r.fm._reconnect_backoff)
            pending = [asyncio.create_task(r.forward(inner_request(c))) for c in (1, 2, 3)]
            await eventually(lambda: len(fake.envelopes) == 3, "three envelopes in flight")
            gate.set()
            outcomes = await asyncio.gather(*pending)
            assert [o.response for o in outcomes] == [inner_response(c, "c0") for c in (1, 2, 3)]
            assert r.metrics.retries == {"connection_lost": 3}
            assert len(failures) == 1
            assert len(fake.envelopes) == 6  # three lost, three answered on new connections (some maybe reused)
            assert 4 <= fake.connections <= 6

    run(body)


def test_a_window_of_zero_is_refused() -> None:
    with pytest.raises(ValueError, match="max_in_flight must be at least 1"):
        ForwardingManager(BROKER_ID, ClusterView().snapshot, LISTENER, connect, timeout_ms=LONG_MS, max_in_flight=0)
