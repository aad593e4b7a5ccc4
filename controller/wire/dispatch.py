"""Where each request goes: this node's handler, the controller via an Envelope, or, for an Envelope that
arrived here, the inner request handled as the principal it carries (reference/kafka-zk-facts.md §4).

Every request is counted, timed and its error codes tallied here, once, whatever route it took. Whether this
node is the active controller is asked here once per request the answer routes (a forwardable request, an
Envelope), and the request is handled under that answer (:func:`routed_as_controller`): its route, the
controller its handler calls and the session its admin writes go through cannot disagree.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, Protocol

from kio.index import load_response_schema
from kio.serial import entity_reader

from controller.security.principal import KafkaPrincipal, PrincipalSerdeError, deserialize
from controller.store.errors import STORE_ERRORS, store_failure
from controller.wire import envelope
from controller.wire.apikeys import api_name, cluster_check, error_response, forwardable, has_error_response
from controller.wire.arrays import check_arrays
from controller.wire.authz import ALLOW_ALL, Authz
from controller.wire.codec import (
    API_VERSIONS,
    Encoded,
    MalformedRequest,
    Request,
    UnsupportedApi,
    encode_response,
    parse_request,
)
from controller.wire.server import Connection, Handler
from zkmodel import errorcodes as E
from zkmodel.errorcodes import KafkaError
from zkmodel.kafka_acls import AclOperation

log = logging.getLogger(__name__)
audit = logging.getLogger("bridgekeeper.audit")


class Forwarder(Protocol):
    """The KIP-590 channel to the active controller (``controller.broker.forwarding.ForwardingManager``):
    the broker side hands it in, so the wire layer does not import the broker."""

    async def forward(self, frame: bytes, principal: KafkaPrincipal, client_host: str) -> envelope.Outcome: ...


class RequestMetrics(Protocol):
    def request(self, api_key: int, seconds: float, errors: list[int]) -> None: ...
    def admin_request(self, api_key: int, route: str) -> None: ...


class NoRequestMetrics:
    def request(self, api_key: int, seconds: float, errors: list[int]) -> None: ...
    def admin_request(self, api_key: int, route: str) -> None: ...


#: How a client's forwardable (admin write) request reached ZooKeeper, for the bridge-progress metric:
#: in an Envelope to the active controller, handled by this node as the active controller, or written by
#: this broker itself (forwarding not enabled yet: the pre-bridge path the upgrade retires).
ROUTES = ("forwarded", "controller", "direct")

#: Whether this node was the active controller when the dispatcher routed the request being handled. Set for
#: the handler's run only (contextvars follow it into ``asyncio.to_thread``); None where no dispatcher asked: a
#: request not routed by the controller (AlterPartition, the raw ControlledShutdown) or a handler called
#: directly, which then asks the controller itself.
_ROUTED_AS_CONTROLLER: ContextVar[bool | None] = ContextVar("routed_as_controller", default=None)


def routed_as_controller() -> bool | None:
    """The dispatcher's one answer for the request being handled (see ``_ROUTED_AS_CONTROLLER``)."""
    return _ROUTED_AS_CONTROLLER.get()


def response_errors(response: Any) -> list[int]:
    """The non-zero error codes a handler's answer holds: counted in an entity, told by an :class:`Encoded`
    body, none in a plain ``bytes`` body (a cached Metadata answer)."""
    if isinstance(response, Encoded):
        return response.errors
    return [] if isinstance(response, bytes) else error_codes(response)


def error_codes(response: Any) -> list[int]:
    """Every non-zero ``error_code`` in a kio response (Kafka's ``AbstractResponse.errorCounts``), in no particular
    order. Walked with a stack and each entity type's field names kept: a 100,000-partition answer is counted for
    the request metrics on the wire thread, before it is sent."""
    found: list[int] = []
    stack = [response]
    while stack:
        item = stack.pop()
        if isinstance(item, tuple):
            if item and _field_names(type(item[0])):  # kio's tuples hold one type: entities, or plain values
                stack.extend(item)
            continue
        for name in _field_names(type(item)):
            value = getattr(item, name)
            if name == "error_code":
                if value:
                    found.append(int(value))
            elif isinstance(value, tuple) or _field_names(type(value)):
                stack.append(value)
    return found


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _field_names(cls: type) -> tuple[str, ...]:
    """A dataclass's field names (kio's entities), empty for any other type."""
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = tuple(f.name for f in dataclasses.fields(cls)) if dataclasses.is_dataclass(cls) else ()
        _FIELD_NAMES[cls] = names
    return names


class Dispatcher:
    def __init__(
        self,
        handlers: dict[int, Handler],
        supported: dict[int, tuple[int, int]],
        *,
        is_active_controller: Callable[[], bool],
        forwarder: Forwarder | None = None,
        accept_envelopes: bool = False,
        privileged_listener: str = "PLAINTEXT",
        authz: Authz = ALLOW_ALL,
        metrics: RequestMetrics | None = None,
        on_client_software: Callable[[Connection, str, str], None] | None = None,
    ) -> None:
        self.on_client_software = on_client_software
        self.handlers = handlers
        self.supported = supported
        self.is_active_controller = is_active_controller
        self.forwarder = forwarder
        self.accept_envelopes = accept_envelopes
        self.privileged_listener = privileged_listener
        self.authz = authz
        self.metrics: RequestMetrics = metrics or NoRequestMetrics()

    async def __call__(self, request: Request, frame: bytes, conn: Connection) -> bytes | None:
        started = time.perf_counter()
        errors: list[int] = []
        route: str | None = None
        try:
            if request.api_key == API_VERSIONS and self.on_client_software is not None:
                name = getattr(request.body, "client_software_name", None)
                if name is not None:
                    self.on_client_software(conn, name, request.body.client_software_version)
            if request.api_key == envelope.API_KEY:
                return await self._envelope(request, conn, errors)
            active: bool | None = None
            if forwardable(request.api_key) and not conn.from_envelope:
                active = self.is_active_controller()
                if not active and self.forwarder is not None:
                    route = "forwarded"
                    outcome = await self.forwarder.forward(frame, conn.principal, conn.peer_host)
                    if outcome.close:
                        return None
                    if outcome.response is not None:
                        return self._relay(request, outcome.response, errors)
                    if outcome.error is not None:
                        response = error_response(request, outcome.error)
                        errors.extend(error_codes(response))
                        return encode_response(request, response)
                    # Handled here after all (the controller takes no envelopes): a new route, decided after
                    # the forwarding attempt's wait, so asked anew.
                    active = self.is_active_controller()
                route = "controller" if active else "direct"
            response = await self._local(request, conn, active)
            errors.extend(response_errors(response))
            return encode_response(request, response)
        finally:
            self.metrics.request(request.api_key, time.perf_counter() - started, errors)
            if route is not None:
                self.metrics.admin_request(request.api_key, route)

    async def _local(self, request: Request, conn: Connection, active: bool | None) -> Any:
        """This node's handler, behind the whole-request cluster check Kafka makes for the API (if any), run
        under ``active``: whether this node was the active controller when the request was routed (None: not
        asked)."""
        operation = cluster_check(request.api_key)
        if operation is not None and not self.authz.cluster(conn, operation):
            return error_response(request, E.CLUSTER_AUTHORIZATION_FAILED)
        routed = _ROUTED_AS_CONTROLLER.set(active)
        try:
            return await self.handlers[request.api_key](request, conn)
        except STORE_ERRORS as exc:
            if not has_error_response(request.api_key):
                raise
            failure = store_failure(exc, f"for {api_name(request.api_key)}")
            return error_response(request, failure.error, failure.message)
        finally:
            _ROUTED_AS_CONTROLLER.reset(routed)

    @staticmethod
    def _relay(request: Request, inner: bytes, errors: list[int]) -> bytes:
        """Check the controller's inner response parses as the API the client asked (Kafka parses it too)."""
        schema = load_response_schema(request.api_key, request.api_version)
        try:
            _header, offset = entity_reader(schema.__header_schema__)(inner, 0)
            check_arrays(schema, inner, offset)  # a count beyond the bytes would make kio abort the process
            body, _ = entity_reader(schema)(inner, offset)
        except Exception as exc:
            log.warning("forwarding: unparseable inner %s response from the controller: %r", schema.__name__, exc)
            response = error_response(request, E.UNKNOWN_SERVER_ERROR)
            errors.extend(error_codes(response))
            return encode_response(request, response)
        errors.extend(error_codes(body))
        return inner

    # -- the controller side --------------------------------------------------------------------------------
    async def _envelope(self, request: Request, conn: Connection, errors: list[int]) -> bytes | None:
        """KafkaApis.handleEnvelope's checks, in Kafka's order, then the inner request as its principal."""
        if not self.accept_envelopes:
            log.info("closing %s:%d: Envelope while forwarding is disabled here", conn.peer_host, conn.peer_port)
            return None
        if conn.listener != self.privileged_listener:
            log.info(
                "closing %s:%d: Envelope on listener %s, not the inter-broker listener %s",
                conn.peer_host,
                conn.peer_port,
                conn.listener,
                self.privileged_listener,
            )
            return None

        def fail(error: KafkaError) -> bytes:
            errors.append(error.code)
            return envelope.encode_response(request.correlation_id, error.code, None)

        if not self.authz.cluster(conn, AclOperation.CLUSTER_ACTION):
            return fail(E.CLUSTER_AUTHORIZATION_FAILED)
        if not self.is_active_controller():
            return fail(E.NOT_CONTROLLER)
        body = request.body
        try:
            principal = deserialize(body.request_principal or b"")
        except PrincipalSerdeError as exc:
            log.info("Envelope from %s: %s", conn.peer_host, exc)
            return fail(E.PRINCIPAL_DESERIALIZATION_FAILURE)
        try:
            client_host = envelope.address_text(body.client_host_address)
        except ValueError:
            return fail(E.INVALID_REQUEST)
        inner_frame = bytes(body.request_data)
        if len(inner_frame) < 8:
            return fail(E.INVALID_REQUEST)
        inner_key = int.from_bytes(inner_frame[:2], "big", signed=True)
        if not forwardable(inner_key):
            return fail(E.INVALID_REQUEST)
        try:
            inner = parse_request(inner_frame, self.supported)
        except (UnsupportedApi, MalformedRequest):
            return fail(E.UNSUPPORTED_VERSION)
        if inner.api_key not in self.handlers:
            return fail(E.UNSUPPORTED_VERSION)
        inner_conn = dataclasses.replace(conn, principal=principal, peer_host=client_host, from_envelope=True)
        audit.info(
            "forwarded %s v%d principal=%s client=%s client_id=%s via=%s:%d listener=%s",
            api_name(inner.api_key),
            inner.api_version,
            principal,
            client_host,
            inner.client_id,
            conn.peer_host,
            conn.peer_port,
            conn.listener,
        )
        response = await self._local(inner, inner_conn, True)  # the NOT_CONTROLLER check above passed
        inner_errors = response_errors(response)
        if E.NOT_CONTROLLER.code in inner_errors:
            return fail(E.NOT_CONTROLLER)
        return envelope.encode_response(request.correlation_id, 0, encode_response(inner, response))
