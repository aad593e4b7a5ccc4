"""The broker side of KIP-590: one channel to the active controller carrying client admin writes in Envelopes.

Kafka's ForwardingManager, as shipped in 3.9: one request in flight at a time; a disconnect or a
NOT_CONTROLLER answer forgets the controller, rediscovers it from the metadata cache and retries the same
request first, until ``request.timeout.ms`` since it was queued, then REQUEST_TIMED_OUT. Any other envelope
error becomes UNKNOWN_SERVER_ERROR for the client; UNSUPPORTED_VERSION closes the client's connection.

When the controller found does not advertise Envelope (it is below the forwarding gate, mid rolling
bump), the request is handed back to be handled locally, as a pre-bridge broker would.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from kio.schema.api_versions.v3.request import ApiVersionsRequest
from tenacity import AsyncRetrying, RetryCallState, Retrying, retry_if_result, stop_never, wait_exponential

from controller.logtags import UNEXPECTED
from controller.security.principal import KafkaPrincipal
from controller.wire import envelope
from controller.wire.client import ClientError, KafkaClient, SaslFailure
from controller.wire.envelope import Outcome
from zkmodel import errorcodes as E

log = logging.getLogger(__name__)

#: How long to wait for a new controller before asking the metadata cache again.
REDISCOVERY_BACKOFF_S = 0.05
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
    def forwarded_request(self) -> None: ...
    def envelope_sent(self) -> None: ...
    def authorization_failed(self) -> None: ...
    def queue_length(self, n: int) -> None: ...
    def queue_time(self, seconds: float) -> None: ...
    def remote_time(self, seconds: float) -> None: ...
    def retry(self, reason: str) -> None: ...


class NoMetrics:
    def forwarded_request(self) -> None: ...
    def envelope_sent(self) -> None: ...
    def authorization_failed(self) -> None: ...
    def queue_length(self, n: int) -> None: ...
    def queue_time(self, seconds: float) -> None: ...
    def remote_time(self, seconds: float) -> None: ...
    def retry(self, reason: str) -> None: ...


@dataclass
class _Item:
    frame: bytes
    principal: KafkaPrincipal
    client_host: str
    created: float
    #: Counted as forwarded on its first envelope; retries count as envelopes only.
    counted: bool = False


@dataclass
class _Channel:
    """An authenticated connection to one controller, driven by the wire event loop."""

    target: tuple[int, str, int]
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    #: True, False (not advertised: below the gate), or None (advertised without a version we speak).
    supports_envelope: bool | None


class ForwardingManager:
    """Runs on the node's wire event loop: ``forward`` is awaited by the connection handler itself, so a
    forwarded request costs no thread hand-offs; only connecting (and SASL) runs in a worker thread."""

    def __init__(
        self,
        broker_id: int,
        snapshot: Callable[[], Any],
        listener: str,
        connect: Callable[[str, int, float], KafkaClient],
        *,
        timeout_ms: int,
        metrics: ForwardingMetrics | None = None,
    ) -> None:
        self.broker_id = broker_id
        self._snapshot = snapshot
        self.listener = listener
        self._connect = connect
        self.timeout_s = timeout_ms / 1000
        self.metrics: ForwardingMetrics = metrics or NoMetrics()
        self._queued = 0
        self._lock: asyncio.Lock | None = None
        self._stopped = False
        self._channel: _Channel | None = None
        self._correlation = 0
        self._stale: tuple[int, int, float] | None = None
        #: How long to wait before the next connection attempt; 0 after a successful exchange.
        self._reconnect_backoff = Backoff()
        #: How long a controller that answered NOT_CONTROLLER is left alone if the cache does not move on.
        self._not_controller_backoff = Backoff()

    def start(self) -> None:
        """Nothing to start: the first forwarded request connects."""

    def stop(self) -> None:
        """Queued requests end as REQUEST_TIMED_OUT; the channel closes with the event loop."""
        self._stopped = True

    async def forward(self, frame: bytes, principal: KafkaPrincipal, client_host: str) -> Outcome:
        if self._stopped:
            return Outcome(error=E.REQUEST_TIMED_OUT)
        if self._lock is None:
            self._lock = asyncio.Lock()  # created on the loop that uses it
        item = _Item(frame, principal, client_host, time.monotonic())
        self._queued += 1
        self.metrics.queue_length(self._queued)
        try:
            # One request in flight at a time, first come first served (asyncio.Lock is fair). No timeout on
            # the wait itself (cancelling an acquire can leak the lock on 3.11); _process times out an item
            # that waited past its deadline, and each item ahead of it is bounded by its own.
            await self._lock.acquire()
            try:
                return await self._process(item)
            except Exception:
                log.exception("%s forwarding a request from %s", UNEXPECTED, client_host)
                await self._forget()
                return Outcome(error=E.UNKNOWN_SERVER_ERROR)
            finally:
                self._lock.release()
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
            channel = await self._channel_to(target, remaining)
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
            return Outcome(error=E.UNKNOWN_SERVER_ERROR)
        if not channel.supports_envelope:
            return Outcome(local=True)
        outcome = await self._send(item, channel, remaining)
        return outcome if outcome is not None else 0.0

    async def _send(self, item: _Item, channel: _Channel, remaining: float) -> Outcome | None:
        """One envelope exchange; None means "retry": the controller moved or went away."""
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
            await self._forget()
            self._reconnect_backoff.failed()
            return None
        except asyncio.CancelledError:
            # The answer may still arrive: a channel with an unread response must not carry the next request.
            await self._forget()
            raise
        try:
            reply = envelope.decode_response(reply_frame, correlation)
        except envelope.EnvelopeDecodeError as exc:
            log.warning("forwarding: %s", exc)
            await self._forget()
            return self._final(item, sent, Outcome(error=E.UNKNOWN_SERVER_ERROR))
        if reply.error_code == E.NOT_CONTROLLER.code:
            # Re-queued at the head as Kafka does: no latency samples until the request is answered for good.
            log.info("forwarding: broker %d is no longer the controller; rediscovering", target[0])
            self.metrics.retry("not_controller")
            await self._forget(stale_controller=(target[0], version_at_send))
            return None
        self._reconnect_backoff.reset()
        self._not_controller_backoff.reset()
        return self._final(item, sent, self._answer(item, target, reply))

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

    async def _channel_to(self, target: tuple[int, str, int], remaining: float) -> _Channel:
        if self._channel is not None and self._channel.target == target:
            return self._channel
        await self._forget()
        if self._reconnect_backoff.seconds:
            await asyncio.sleep(min(max(remaining, 0.0), self._reconnect_backoff.seconds))
        sock, supports_envelope = await asyncio.to_thread(self._open, target, remaining)
        reader, writer = await asyncio.open_connection(sock=sock)
        self._channel = _Channel(target, reader, writer, supports_envelope)
        return self._channel

    def _open(self, target: tuple[int, str, int], remaining: float) -> tuple[socket.socket, bool | None]:
        """Connect, authenticate and ask ApiVersions with the blocking client, then hand the socket over."""
        client = self._connect(target[1], target[2], remaining)
        try:
            versions = client.request(18, 3, ApiVersionsRequest(client_software_name="bridgekeeper",
                                                                client_software_version="1"))  # fmt: skip
            if int(versions.error_code) != 0:
                raise ClientError(f"ApiVersions from controller {target[0]} failed with error {versions.error_code}")
            spans = [(int(k.min_version), int(k.max_version)) for k in versions.api_keys
                     if int(k.api_key) == envelope.API_KEY]  # fmt: skip
            supports: bool | None = None  # None: advertised, but not the version we speak
            if not spans:
                supports = False
            elif any(lo <= envelope.VERSION <= hi for lo, hi in spans):
                supports = True
            sock = client.detach()
        except BaseException:
            client.close()
            raise
        sock.settimeout(None)
        sock.setblocking(False)
        return sock, supports

    async def _forget(self, stale_controller: tuple[int, int] | None = None) -> None:
        """Drop the channel; ``stale_controller`` = (id, the metadata version it was chosen from)."""
        channel, self._channel = self._channel, None
        if channel is not None:
            channel.writer.close()
            with contextlib.suppress(OSError, ConnectionError):
                await channel.writer.wait_closed()
        if stale_controller is not None:
            self._stale = (*stale_controller, time.monotonic() + self._not_controller_backoff.failed())
