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
import collections
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from kio.schema.api_versions.v3.request import ApiVersionsRequest

from controller.security.principal import KafkaPrincipal
from controller.wire import envelope
from controller.wire.client import ClientError, KafkaClient, SaslFailure
from zkmodel import errorcodes as E
from zkmodel.errorcodes import KafkaError

log = logging.getLogger(__name__)

#: How long to wait for a new controller before asking the metadata cache again.
REDISCOVERY_BACKOFF_S = 0.05


class ForwardingMetrics(Protocol):
    def forwarded_request(self) -> None: ...
    def envelope_sent(self) -> None: ...
    def authorization_failed(self) -> None: ...
    def queue_length(self, n: int) -> None: ...
    def queue_time(self, seconds: float) -> None: ...
    def remote_time(self, seconds: float) -> None: ...


class NoMetrics:
    def forwarded_request(self) -> None: ...
    def envelope_sent(self) -> None: ...
    def authorization_failed(self) -> None: ...
    def queue_length(self, n: int) -> None: ...
    def queue_time(self, seconds: float) -> None: ...
    def remote_time(self, seconds: float) -> None: ...


@dataclass(frozen=True)
class Outcome:
    """What to tell the client: relay ``response`` (inner header + body), answer ``error`` for the whole
    request, close the connection, or handle the request locally (the controller takes no envelopes)."""

    response: bytes | None = None
    error: KafkaError | None = None
    close: bool = False
    local: bool = False


@dataclass
class _Item:
    frame: bytes
    principal: KafkaPrincipal
    client_host: str
    created: float
    done: Callable[[Outcome], None]
    sent_at: float | None = field(default=None)


class ForwardingManager:
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
        self._queue: collections.deque[_Item] = collections.deque()
        self._cond = threading.Condition()
        self._stopped = False
        self._client: KafkaClient | None = None
        self._client_target: tuple[int, str, int] | None = None
        self._supports_envelope = False
        self._correlation = 0
        self._stale: tuple[int, int, float] | None = None
        self._thread = threading.Thread(target=self._run, name=f"forwarding-{broker_id}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            pending = list(self._queue)
            self._queue.clear()
            self._cond.notify_all()
        for item in pending:
            item.done(Outcome(error=E.REQUEST_TIMED_OUT))
        self._thread.join(timeout=10)
        self._forget()

    async def forward(self, frame: bytes, principal: KafkaPrincipal, client_host: str) -> Outcome:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Outcome] = loop.create_future()

        def settle(outcome: Outcome) -> None:
            if not future.done():
                future.set_result(outcome)

        def done(outcome: Outcome) -> None:
            loop.call_soon_threadsafe(settle, outcome)

        with self._cond:
            if self._stopped:
                return Outcome(error=E.REQUEST_TIMED_OUT)
            self._queue.append(_Item(frame, principal, client_host, time.monotonic(), done))
            self.metrics.queue_length(len(self._queue))
            self._cond.notify()
        return await future

    # -- the worker thread ------------------------------------------------------------------------------------
    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._stopped:
                    self._cond.wait()
                if self._stopped:
                    return
                item = self._queue[0]
            try:
                outcome = self._process(item)
            except Exception:
                log.exception("BK-UNEXPECTED forwarding a request from %s", item.client_host)
                self._forget()
                outcome = Outcome(error=E.UNKNOWN_SERVER_ERROR)
            with self._cond:
                if self._queue and self._queue[0] is item:
                    self._queue.popleft()
                self.metrics.queue_length(len(self._queue))
            item.done(outcome)

    def _process(self, item: _Item) -> Outcome:
        while True:
            remaining = item.created + self.timeout_s - time.monotonic()
            if remaining <= 0 or self._stopped:
                self.metrics.queue_time(self.timeout_s)
                return Outcome(error=E.REQUEST_TIMED_OUT)
            target = self._controller()
            if target is None:
                self._wait_for_controller(min(remaining, REDISCOVERY_BACKOFF_S))
                continue
            try:
                client = self._client_for(target, remaining)
            except SaslFailure as exc:
                log.warning("forwarding: cannot authenticate to controller %d: %s", target[0], exc)
                self._forget()
                return Outcome(error=E.UNKNOWN_SERVER_ERROR)
            except ClientError as exc:
                log.info("forwarding: controller %d unreachable (%s); retrying", target[0], exc)
                self._forget()
                self._wait_for_controller(min(remaining, REDISCOVERY_BACKOFF_S))
                continue
            if not self._supports_envelope:
                return Outcome(local=True)
            outcome = self._send(item, client, target)
            if outcome is not None:
                return outcome

    def _send(self, item: _Item, client: KafkaClient, target: tuple[int, str, int]) -> Outcome | None:
        """One envelope exchange; None means "retry": the controller moved or went away."""
        self._correlation += 1
        correlation = self._correlation
        payload = envelope.encode_request(
            correlation, f"broker-{self.broker_id}-forwarding", item.frame, item.principal, item.client_host
        )
        sent = time.monotonic()
        if item.sent_at is None:
            self.metrics.forwarded_request()
        item.sent_at = sent
        self.metrics.envelope_sent()
        try:
            reply_frame = client.raw_request(lambda _c: payload)
        except ClientError as exc:
            log.info("forwarding: lost controller %d (%s); retrying", target[0], exc)
            self._forget()
            return None
        self.metrics.queue_time(sent - item.created)
        self.metrics.remote_time(time.monotonic() - sent)
        try:
            reply = envelope.decode_response(reply_frame, correlation)
        except envelope.EnvelopeDecodeError as exc:
            log.warning("forwarding: %s", exc)
            self._forget()
            return Outcome(error=E.UNKNOWN_SERVER_ERROR)
        if reply.error_code == E.NOT_CONTROLLER.code:
            log.info("forwarding: broker %d is no longer the controller; rediscovering", target[0])
            self._forget(stale_controller=target[0])
            return None
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
            stale_id, stale_version, since = self._stale
            # The controller that said NOT_CONTROLLER stays unused until the cache moves on (or a moment has
            # passed: it may have won the election again).
            if controller_id == stale_id and snapshot.version == stale_version and time.monotonic() - since < 1.0:
                return None
            self._stale = None
        broker = snapshot.brokers.get(controller_id)
        endpoint = broker.registration.endpoint(self.listener) if broker is not None else None
        if endpoint is None:
            return None
        return controller_id, endpoint.host, endpoint.port

    def _wait_for_controller(self, seconds: float) -> None:
        with self._cond:
            self._cond.wait(timeout=max(seconds, 0.0))

    def _client_for(self, target: tuple[int, str, int], remaining: float) -> KafkaClient:
        if self._client is not None and self._client_target == target:
            self._client.timeout = remaining
            return self._client
        self._forget()
        client = self._connect(target[1], target[2], remaining)
        try:
            versions = client.request(18, 3, ApiVersionsRequest(client_software_name="bridgekeeper",
                                                                client_software_version="1"))  # fmt: skip
        except ClientError:
            client.close()
            raise
        if int(versions.error_code) != 0:
            client.close()
            raise ClientError(f"ApiVersions from controller {target[0]} failed with error {versions.error_code}")
        self._supports_envelope = any(int(k.api_key) == envelope.API_KEY for k in versions.api_keys)
        self._client, self._client_target = client, target
        return client

    def _forget(self, stale_controller: int | None = None) -> None:
        if self._client is not None:
            self._client.close()
        self._client, self._client_target = None, None
        if stale_controller is not None:
            self._stale = (stale_controller, self._snapshot().version, time.monotonic())
