"""Kafka's controlled shutdown, the broker's side: before it deregisters, a broker asks the active controller
to move partition leadership off it (and it out of ISRs), retrying as ``controlled.shutdown.max.retries``
and ``controlled.shutdown.retry.backoff.ms`` say (KafkaServer.controlledShutdown).

The controller is whoever the metadata cache says it is right now, asked afresh on every attempt: when the
controller is this very node, the request is a call into it; otherwise it travels as a ControlledShutdown
v3 request over the inter-broker listener.
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Callable
from dataclasses import dataclass

from tenacity import Retrying, retry_if_result, stop_after_attempt, wait_fixed

from controller.broker.metadata_cache import MetadataCache
from controller.security.settings import SaslCredentials
from controller.wire import controlled_shutdown as codec
from controller.wire.client import ClientError, KafkaClient
from zkmodel.admin import TopicPartition
from zkmodel.errorcodes import KafkaApiError, KafkaError

log = logging.getLogger(__name__)

#: The active controller's own entry point, when it runs in this process: (broker id, epoch) → answer.
LocalController = Callable[[int, int], tuple[KafkaError, list[TopicPartition]]]
#: (done, partitions this broker still leads) of one attempt.
Attempt = tuple[bool, list[str]]


@dataclass
class ControlledShutdown:
    broker_id: int
    broker_epoch: Callable[[], int]
    cache: MetadataCache
    listener: str
    sasl: SaslCredentials | None
    max_retries: int
    retry_backoff_ms: int
    #: Set when this node is a controller candidate: used when the cache names this node the controller.
    local: LocalController | None = None
    #: Whether this node's controller is the active one now. The cache can name this node while it is not: a
    #: ``/controller`` left by this broker's previous process (killed, its session not yet expired), or one this
    #: node just resigned. Asking itself then only queues behind its own controller thread to hear NOT_CONTROLLER.
    local_active: Callable[[], bool] | None = None
    #: The inter-broker listener's TLS client context when it is SSL or SASL_SSL.
    tls: ssl.SSLContext | None = None

    def run(self) -> list[str]:
        """Ask until the controller says nothing is left, at most ``max_retries + 1`` times, waiting the
        back-off (capped at 1 s, so that a node's stop stays prompt) between attempts. Returns the
        partitions still led after the last attempt (single-replica ones cannot move)."""
        retrying = Retrying(
            stop=stop_after_attempt(self.max_retries + 1),
            wait=wait_fixed(min(self.retry_backoff_ms / 1000, 1.0)),
            retry=retry_if_result(lambda outcome: not outcome[0]),
            retry_error_callback=lambda state: state.outcome.result() if state.outcome else (False, []),
        )
        number = iter(range(1, self.max_retries + 2))
        _done, remaining = retrying(lambda: self._attempt(next(number)))
        return remaining

    def _attempt(self, number: int) -> Attempt:
        snapshot = self.cache.snapshot()
        controller_id = snapshot.controller_id
        try:
            if controller_id == self.broker_id and self.local is not None:
                if self.local_active is not None and not self.local_active():
                    raise ClientError("the metadata names this broker the controller, but it is not the active one")
                error, parts = self.local(self.broker_id, self.broker_epoch())
                code = error.code
            else:
                broker = snapshot.brokers.get(controller_id)
                endpoint = broker.registration.endpoint(self.listener) if broker else None
                if endpoint is None:
                    raise ClientError("no controller to ask")
                code, parts = self._request(endpoint.host, endpoint.port)
        except (ClientError, KafkaApiError, codec.ShutdownCodecError) as exc:
            log.info("controlled shutdown attempt %d failed: %s", number, exc)
            code, parts = -1, []
        remaining = [str(tp) for tp in parts]
        if code == 0 and not parts:
            log.info("controlled shutdown of broker %d succeeded", self.broker_id)
            return True, []
        if code == 0:
            log.info("controlled shutdown: broker %d still leads %s", self.broker_id, remaining)
        return False, remaining

    def _request(self, host: str, port: int) -> tuple[int, list[TopicPartition]]:
        client_id = f"broker-{self.broker_id}"
        broker_id, epoch = self.broker_id, self.broker_epoch()
        client = KafkaClient(host, port, client_id=client_id, sasl=self.sasl, tls=self.tls)
        try:
            reply = client.raw_request(lambda c: codec.encode_request(c, client_id, broker_id, epoch))
        finally:
            client.close()
        _, code, parts = codec.decode_response(reply)
        return code, parts
