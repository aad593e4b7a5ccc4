"""The broker side of KIP-590: channels to the active controller carrying client admin writes in Envelopes.

Kafka's ForwardingManager, as shipped in 3.9, keeps one request in flight at a time; a disconnect or a
NOT_CONTROLLER answer forgets the controller, rediscovers it from the metadata cache and retries the same
request first, until ``request.timeout.ms`` since it was queued, then REQUEST_TIMED_OUT. Any other envelope
error becomes UNKNOWN_SERVER_ERROR for the client; UNSUPPORTED_VERSION closes the client's connection.

When the controller found does not advertise Envelope (it is below the forwarding gate, mid rolling
bump), the request is handed back to be handled locally, as a pre-bridge broker would.

**A window instead of one in flight** (``bridgekeeper.forwarding.max.in.flight``, default 16; 1 is Kafka's).
One request in flight serializes every client of the broker behind the slowest admin write anywhere
(``bench.forwarding_concurrency``, 50 concurrent clients: 0.55-0.75x the direct path's throughput; 0.88-1.00x
with 16). With a window of N, up to N requests are in flight at once, each on a connection of its own (the
controller, like Kafka's SocketServer, serves one request per connection at a time, so pipelining envelopes on
one connection would gain nothing); waiting requests are admitted first come, first served, and a request being
retried keeps its place in the window.

What order is kept, and why that is all Kafka promises:

* **Per client connection, exactly Kafka's order.** Kafka's guarantee is per TCP connection: a broker reads
  a connection's next request only after it has answered the previous one (the channel is muted meanwhile),
  so requests are processed, and answered, in the order sent. Our wire server does the same
  (``controller.wire.server``: read, handle, answer, then read the next frame), so a connection never has two
  requests in this manager at once, and its second request is sent to the controller only after its first
  was answered by it, whatever the window: SET k=1 then SET k=2 on one connection always ends at k=2.
* **Across connections, no order, as in Kafka.** Two clients' requests were never ordered by Kafka either:
  they may go to different brokers, and each broker's ForwardingManager forwards independently. One in
  flight only happened to serialize the clients of one broker. Concurrent writes to one entity are ordered
  where they meet, by the controller (``controller.zk.cas``: one writer per entity at a time) and by
  ZooKeeper's version checks against writers elsewhere.
* A retried request (NOT_CONTROLLER, a lost connection) is retried in place before it is answered, so its
  client still sees its answers in order; Kafka re-queues it at the head of its one-request queue, which
  with a window means it keeps its slot.
* A client that gives up on a request (its own timeout) and sends the next one on a new connection can have
  both in flight at once here, where Kafka's single slot would have sent them one after the other had both
  reached the same broker. Kafka does not promise that order either: the next request may as well go to
  another broker, whose ForwardingManager is independent, and a timed-out request's outcome is unknown to
  its client anyway.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import struct
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from kio.schema.api_versions.v3.request import ApiVersionsRequest
from tenacity import AsyncRetrying, RetryCallState, Retrying, retry_if_result, stop_never, wait_exponential

from controller.logtags import UNEXPECTED
from controller.security.principal import KafkaPrincipal
from controller.wire import envelope
from controller.wire.client import Channel, ClientError, KafkaClient, SaslFailure
from controller.wire.envelope import Outcome
from zkmodel import errorcodes as E

log = logging.getLogger(__name__)

#: How long to wait for a new controller before asking the metadata cache again.
REDISCOVERY_BACKOFF_S = 0.05
#: What a channel asks first, to learn whether the controller takes our Envelope version.
VERSIONS_REQUEST = ApiVersionsRequest(client_software_name="bridgekeeper", client_software_version="1")
#: A bound on an envelope response's size (socket.request.max.bytes), so a bad peer cannot make us allocate.
MAX_RESPONSE = 104_857_600
RECONNECT_BACKOFF_S = 0.05
RECONNECT_BACKOFF_MAX_S = 1.0


class Backoff:
    """reconnect.backoff.ms (50 ms) doubling up to reconnect.backoff.max.ms (1 s) with each failure in a row,
    as Kafka's NetworkClient; 0 until the first failure and again after a success. Not a loop: the
    forwarding channel consults it between its own attempts, so it keeps the count and tenacity's
    exponential wait does the arithmetic."""

    _WAIT = wait_exponential(multiplier=RECONNECT_BACKOFF_S, min=RECONNECT_BACKOFF_S, max=RECONNECT_BACKOFF_MAX_S)

    def __init__(self) -> None:
        self._state = RetryCallState(Retrying(), None, (), {})
        self._state.attempt_number = 0
        self.seconds = 0.0

    def failed(self) -> float:
        """One more failure in a row: the wait before the next attempt."""
        self._state.attempt_number += 1
        self.seconds = self._WAIT(self._state)
        return self.seconds

    def reset(self) -> None:
        self._state.attempt_number = 0
        self.seconds = 0.0


class ForwardingMetrics(Protocol):
    """What forwarding reports (the node's :class:`controller.metrics.NodeMetrics` counts it). Each method's
    default reports nothing, so a class that names this protocol as its base is the null object."""

    def forwarded_request(self) -> None:
        """A request was forwarded (counted once, however many envelopes it took)."""
        return None

    def envelope_sent(self) -> None:
        """An envelope went to the controller."""
        return None

    def authorization_failed(self) -> None:
        """The controller answered an envelope with CLUSTER_AUTHORIZATION_FAILED (this node may not forward)."""
        return None

    def queue_length(self, n: int) -> None:
        """Requests waiting for a channel."""
        return None

    def queue_time(self, seconds: float) -> None:
        """From a request's arrival to its last envelope's sending (or to its timeout)."""
        return None

    def remote_time(self, seconds: float) -> None:
        """From the last envelope's sending to the controller's answer."""
        return None

    def retry(self, reason: str) -> None:
        """An envelope is sent again, and why."""
        return None


class NoMetrics(ForwardingMetrics):
    """A manager given no metrics: every report is dropped."""


@dataclass
class _Item:
    frame: bytes
    principal: KafkaPrincipal
    client_host: str
    created: float
    #: Counted as forwarded on its first envelope; retries count as envelopes only.
    counted: bool = False


@dataclass(eq=False)
class _Channel:
    """An authenticated connection to one controller, driven by the wire event loop; it carries one envelope
    at a time."""

    target: tuple[int, str, int]
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    #: True, False (not advertised: below the gate), or None (advertised without a version we speak).
    supports_envelope: bool | None
    #: The manager's loss count when it was opened: a channel lost with others of its generation (the
    #: controller went away under all of them) counts as one failure for the reconnect back-off.
    generation: int = 0


class ForwardingManager:
    """Runs on the node's wire event loop: ``forward`` is awaited by the connection handler itself, so a
    forwarded request costs no thread hand-offs; only connecting (and SASL) runs in a worker thread.

    At most ``max_in_flight`` requests are in flight, each on its own channel; idle channels to the current
    controller are kept for the next requests (so at most ``max_in_flight`` connections to it)."""

    def __init__(
        self,
        broker_id: int,
        snapshot: Callable[[], Any],
        listener: str,
        connect: Callable[[str, int, float], KafkaClient],
        *,
        timeout_ms: int,
        metrics: ForwardingMetrics | None = None,
        max_in_flight: int = 1,
        open_async: Callable[[str, int], Awaitable[Channel]] | None = None,
    ) -> None:
        if max_in_flight < 1:
            raise ValueError(f"max_in_flight must be at least 1, got {max_in_flight}")
        self.broker_id = broker_id
        self._snapshot = snapshot
        self.listener = listener
        self._connect = connect
        #: Set when the inter-broker listener speaks TLS: channels are then opened by asyncio (open_channel).
        self._open_async = open_async
        self.timeout_s = timeout_ms / 1000
        self.max_in_flight = max_in_flight
        self.metrics: ForwardingMetrics = metrics or NoMetrics()
        self._queued = 0
        #: The window; created on the loop that uses it.
        self._slots: asyncio.Semaphore | None = None
        #: One connection attempt at a time, so the reconnect back-off counts attempts in a row.
        self._connecting: asyncio.Lock | None = None
        self._stopped = False
        #: Connected channels not carrying a request, most recently used last.
        self._idle: list[_Channel] = []
        self._generation = 0
        self._correlation = 0
        self._stale: tuple[int, int, float] | None = None
        #: How long to wait before the next connection attempt; 0 after a successful exchange.
        self._reconnect_backoff = Backoff()
        #: How long a controller that answered NOT_CONTROLLER is left alone if the cache does not move on.
        self._not_controller_backoff = Backoff()

    def stop(self) -> None:
        """Queued requests end as REQUEST_TIMED_OUT; the channels close with the event loop."""
        self._stopped = True

    async def forward(self, frame: bytes, principal: KafkaPrincipal, client_host: str) -> Outcome:
        if self._stopped:
            return Outcome(error=E.REQUEST_TIMED_OUT)
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.max_in_flight)  # created on the loop that uses it
            self._connecting = asyncio.Lock()
        item = _Item(frame, principal, client_host, time.monotonic())
        self._queued += 1
        self.metrics.queue_length(self._queued)
        try:
            # A slot in the window, first come first served (asyncio.Semaphore is fair). No timeout on the wait
            # itself: _process times out an item that waited past its deadline, and each item ahead of it is
            # bounded by its own.
            await self._slots.acquire()
            try:
                return await self._process(item)
            except Exception:
                log.exception("%s forwarding a request from %s", UNEXPECTED, client_host)
                return Outcome(error=E.UNKNOWN_SERVER_ERROR)
            finally:
                self._slots.release()
        finally:
            self._queued -= 1
            self.metrics.queue_length(self._queued)

    async def _process(self, item: _Item) -> Outcome:
        """Until the request's deadline: find the controller, send, and try again whenever the answer is
        "not me" or nothing (an attempt returns the pause before the next one, or the outcome)."""
        retrying = AsyncRetrying(
            retry=retry_if_result(lambda result: not isinstance(result, Outcome)),
            wait=lambda state: state.outcome.result() if state.outcome is not None else 0.0,
            stop=stop_never,
        )
        outcome: Outcome = await retrying(self._attempt, item)
        return outcome

    async def _attempt(self, item: _Item) -> Outcome | float:
        remaining = item.created + self.timeout_s - time.monotonic()
        if remaining <= 0 or self._stopped:
            self.metrics.queue_time(self.timeout_s)
            return Outcome(error=E.REQUEST_TIMED_OUT)
        target = self._controller()
        if target is None:
            self.metrics.retry("no_controller")
            return min(remaining, REDISCOVERY_BACKOFF_S)
        try:
            channel = await self._checkout(target, remaining)
        except SaslFailure as exc:
            log.warning("forwarding: cannot authenticate to controller %d: %s", target[0], exc)
            return Outcome(error=E.UNKNOWN_SERVER_ERROR)
        except (ClientError, OSError) as exc:
            log.info("forwarding: controller %d unreachable (%s); retrying", target[0], exc)
            self.metrics.retry("unreachable")
            self._reconnect_backoff.failed()  # waited out before the next connection attempt
            return 0.0
        if channel.supports_envelope is None:
            # Kafka: a version mismatch from the network client -> UNKNOWN_SERVER_ERROR for the client.
            self._checkin(channel)
            return Outcome(error=E.UNKNOWN_SERVER_ERROR)
        if not channel.supports_envelope:
            self._checkin(channel)
            return Outcome(local=True)
        outcome = await self._send(item, channel, remaining)
        return outcome if outcome is not None else 0.0

    async def _send(self, item: _Item, channel: _Channel, remaining: float) -> Outcome | None:
        """One envelope exchange on ``channel``, which this request holds until it returns; None means
        "retry": the controller moved or went away. The channel goes back to the idle ones only after a
        complete, well-formed answer; otherwise (an error, a cancellation) it is closed, so that an answer
        still on its way can never be read as another request's."""
        self._correlation += 1
        correlation = self._correlation
        payload = envelope.encode_request(
            correlation, f"broker-{self.broker_id}-forwarding", item.frame, item.principal, item.client_host
        )
        sent = time.monotonic()
        if not item.counted:
            item.counted = True
            self.metrics.forwarded_request()
        self.metrics.envelope_sent()
        target = channel.target
        version_at_send = self._snapshot().version
        reusable = False
        try:
            try:
                channel.writer.write(struct.pack(">i", len(payload)) + payload)
                async with asyncio.timeout(remaining):  # no extra task per read, unlike wait_for
                    await channel.writer.drain()
                    header = await channel.reader.readexactly(4)
                    (size,) = struct.unpack(">i", header)
                    if size < 0 or size > MAX_RESPONSE:
                        raise ConnectionError(f"response of {size} bytes")
                    reply_frame = await channel.reader.readexactly(size)
            except (OSError, asyncio.IncompleteReadError, TimeoutError) as exc:
                log.info("forwarding: lost controller %d (%r); retrying", target[0], exc)
                self.metrics.retry("connection_lost")
                self._lost(channel)
                return None
            try:
                reply = envelope.decode_response(reply_frame, correlation)
            except envelope.EnvelopeDecodeError as exc:
                log.warning("forwarding: %s", exc)
                return self._final(item, sent, Outcome(error=E.UNKNOWN_SERVER_ERROR))
            if reply.error_code == E.NOT_CONTROLLER.code:
                # Retried in place (Kafka re-queues it at the head): no latency samples until answered for good.
                log.info("forwarding: broker %d is no longer the controller; rediscovering", target[0])
                self.metrics.retry("not_controller")
                self._not_the_controller(target, version_at_send)
                return None
            self._reconnect_backoff.reset()
            self._not_controller_backoff.reset()
            reusable = True
            return self._final(item, sent, self._answer(item, target, reply))
        finally:
            if reusable:
                self._checkin(channel)
            else:
                self._close(channel)

    def _final(self, item: _Item, sent: float, outcome: Outcome) -> Outcome:
        self.metrics.queue_time(sent - item.created)
        self.metrics.remote_time(time.monotonic() - sent)
        return outcome

    def _answer(self, item: _Item, target: tuple[int, str, int], reply: envelope.EnvelopeReply) -> Outcome:
        if reply.error_code == E.UNSUPPORTED_VERSION.code:
            return Outcome(close=True)
        if reply.error_code != 0 or reply.response_data is None:
            if reply.error_code == E.CLUSTER_AUTHORIZATION_FAILED.code:
                self.metrics.authorization_failed()
            log.warning("forwarding: controller %d answered the envelope with error %d", target[0], reply.error_code)
            return Outcome(error=E.UNKNOWN_SERVER_ERROR)
        try:
            inner = envelope.inner_correlation_id(reply.response_data)
        except envelope.EnvelopeDecodeError:
            return Outcome(error=E.UNKNOWN_SERVER_ERROR)
        expected = int.from_bytes(item.frame[4:8], "big", signed=True)
        if inner != expected:
            log.warning("forwarding: inner response correlation id %d, expected %d", inner, expected)
            return Outcome(error=E.UNKNOWN_SERVER_ERROR)
        return Outcome(response=reply.response_data)

    def _controller(self) -> tuple[int, str, int] | None:
        snapshot = self._snapshot()
        controller_id = snapshot.controller_id
        if controller_id is None or controller_id < 0:
            return None
        if self._stale is not None:
            stale_id, stale_version, until = self._stale
            # The controller that said NOT_CONTROLLER stays unused until the cache moves on, or for a back-off
            # that doubles while it keeps saying so (it may be the new controller still loading its state).
            if controller_id == stale_id and snapshot.version == stale_version and time.monotonic() < until:
                return None
            self._stale = None
        broker = snapshot.brokers.get(controller_id)
        endpoint = broker.registration.endpoint(self.listener) if broker is not None else None
        if endpoint is None:
            return None
        return controller_id, endpoint.host, endpoint.port

    # -- channels ---------------------------------------------------------------------------------------------
    async def _checkout(self, target: tuple[int, str, int], remaining: float) -> _Channel:
        """An idle channel to ``target``, or a new one (the window bounds how many are ever out at once)."""
        channel = self._idle_to(target)
        if channel is not None:
            return channel
        assert self._connecting is not None
        async with self._connecting:
            channel = self._idle_to(target)  # one came back while this request waited to connect
            if channel is not None:
                return channel
            if self._reconnect_backoff.seconds:
                await asyncio.sleep(min(max(remaining, 0.0), self._reconnect_backoff.seconds))
            if self._open_async is not None:
                return await self._open_channel(target, remaining)
            sock, supports_envelope = await asyncio.to_thread(self._open, target, remaining)
            reader, writer = await asyncio.open_connection(sock=sock)
            return _Channel(target, reader, writer, supports_envelope, self._generation)

    async def _open_channel(self, target: tuple[int, str, int], remaining: float) -> _Channel:
        """A TLS channel: connected, authenticated and asked ApiVersions by asyncio itself (a TLS socket cannot be
        handed from the blocking client to the loop). Failures are the blocking path's: OSError or ClientError
        (retried), SaslFailure (answered)."""
        assert self._open_async is not None
        try:
            opened = await asyncio.wait_for(self._open_async(target[1], target[2]), timeout=max(remaining, 0.001))
        except (TimeoutError, asyncio.IncompleteReadError, ValueError) as exc:
            raise ClientError(f"controller {target[0]} at {target[1]}:{target[2]}: {exc!r}") from exc
        try:
            versions = await asyncio.wait_for(opened.request(18, 3, VERSIONS_REQUEST), timeout=max(remaining, 0.001))
            supports = self._envelope_support(target, versions)
        except BaseException as exc:
            opened.writer.close()
            if isinstance(exc, TimeoutError | asyncio.IncompleteReadError | ValueError):
                raise ClientError(f"ApiVersions from controller {target[0]}: {exc!r}") from exc
            raise
        return _Channel(target, opened.reader, opened.writer, supports, self._generation)

    @staticmethod
    def _envelope_support(target: tuple[int, str, int], versions: Any) -> bool | None:
        """Whether the controller takes our Envelope version: None when it advertises Envelope, but not ours."""
        if int(versions.error_code) != 0:
            raise ClientError(f"ApiVersions from controller {target[0]} failed with error {versions.error_code}")
        spans = [
            (int(k.min_version), int(k.max_version)) for k in versions.api_keys if int(k.api_key) == envelope.API_KEY
        ]
        if not spans:
            return False
        if any(lo <= envelope.VERSION <= hi for lo, hi in spans):
            return True
        return None

    def _idle_to(self, target: tuple[int, str, int]) -> _Channel | None:
        """The most recently used idle channel to ``target``; idle channels to anyone else are closed."""
        while self._idle:
            channel = self._idle.pop()
            if channel.target == target and not channel.writer.is_closing():
                return channel
            self._close(channel)
        return None

    def _checkin(self, channel: _Channel) -> None:
        if self._stopped or channel.writer.is_closing():
            self._close(channel)
        else:
            self._idle.append(channel)

    def _close(self, channel: _Channel) -> None:
        channel.writer.close()

    def _lost(self, channel: _Channel) -> None:
        """A channel broke mid-exchange: the first loss of its generation counts for the reconnect back-off,
        and the idle channels to the same controller are dropped too (they most likely broke with it)."""
        if channel.generation == self._generation:
            self._generation += 1
            self._reconnect_backoff.failed()
        self._drop_idle(channel.target)

    def _not_the_controller(self, target: tuple[int, str, int], version: int) -> None:
        """``target`` answered NOT_CONTROLLER for a request chosen from metadata ``version``: leave it alone
        until the cache moves on or a back-off passes. Several requests in flight may all hear it: the back-off
        grows once per verdict, not once per request."""
        self._drop_idle(target)
        if self._stale is not None and self._stale[:2] == (target[0], version):
            return
        self._stale = (target[0], version, time.monotonic() + self._not_controller_backoff.failed())

    def _drop_idle(self, target: tuple[int, str, int]) -> None:
        keep = []
        for channel in self._idle:
            if channel.target == target:
                self._close(channel)
            else:
                keep.append(channel)
        self._idle = keep

    def _open(self, target: tuple[int, str, int], remaining: float) -> tuple[socket.socket, bool | None]:
        """Connect, authenticate and ask ApiVersions with the blocking client, then hand the socket over."""
        client = self._connect(target[1], target[2], remaining)
        try:
            supports = self._envelope_support(target, client.request(18, 3, VERSIONS_REQUEST))
            sock = client.detach()
        except BaseException:
            client.close()
            raise
        sock.settimeout(None)
        sock.setblocking(False)
        return sock, supports

    async def _forget(self) -> None:
        """Close every idle channel (those carrying a request close when it ends): for shutting down."""
        idle, self._idle = self._idle, []
        for channel in idle:
            channel.writer.close()
            with contextlib.suppress(OSError, ConnectionError):
                await channel.writer.wait_closed()
