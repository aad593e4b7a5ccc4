"""The asyncio Kafka protocol server: framing, per-connection ordering, and Kafka's close-on-bad-input.

Requests on one connection are answered strictly in order (clients pipeline and match by correlation
id, but Kafka guarantees order and librdkafka relies on it). A bad frame closes that connection only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import struct
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from controller import heap
from controller.logtags import UNEXPECTED
from controller.security.principal import ANONYMOUS, KafkaPrincipal
from controller.security.ssl_principal import NoMatchingRule, certificate_dn
from controller.security.tls import TlsSettings
from controller.wire.apikeys import PRE_AUTH
from controller.wire.codec import (
    API_VERSIONS,
    MalformedRequest,
    Request,
    UnsupportedApi,
    api_versions_fallback,
    encode_response,
    parse_request,
)

log = logging.getLogger(__name__)
#: socket.request.max.bytes default in Kafka.
DEFAULT_MAX_FRAME = 104_857_600
#: A request frame at least this large (tens of thousands of partitions) is decoded, handled and answered as one
#: :func:`controller.heap.bulk_request` phase: the collector does not rescan the heap while it allocates, and what
#: it left alive is collected once the node has had no such request for a moment, not before its answer or the
#: client's next batch.
BULK_FRAME_BYTES = 16 * 1024


@dataclass(eq=False)
class Connection:
    """One client connection and what we learned about it: who it is (SASL) and what it runs (KIP-511)."""

    listener: str
    peer_host: str
    peer_port: int
    security_protocol: str = "PLAINTEXT"
    principal: KafkaPrincipal = ANONYMOUS
    #: False on a SASL listener until SaslAuthenticate succeeds: only the handshake APIs are served.
    authenticated: bool = True
    sasl_mechanism: str | None = None
    sasl_server: Any = None
    client_software: tuple[str, str] | None = None
    #: Set on the view an Envelope's inner request is handled under: never forward it again.
    from_envelope: bool = False
    #: Answer the current request, then close (a failed SASL authentication, as Kafka does).
    close_after_reply: bool = False
    #: Seconds to wait between that answer and the close (connection.failed.authentication.delay.ms).
    close_delay: float = 0.0
    #: Set by a SaslHandshake v0: the next frames are raw SASL tokens, answered by this (None closes).
    sasl_raw: Callable[[bytes, Connection], Awaitable[bytes | None]] | None = None


Handler = Callable[[Request, Connection], Awaitable[Any]]
#: Handlers for APIs kio has no schema for: they get the raw frame and return the raw response.
RawHandler = Callable[[bytes, Connection], Awaitable[bytes | None]]
#: Routes a parsed request: returns the whole response (header + body) or None to close the connection.
Dispatch = Callable[[Request, bytes, Connection], Awaitable[bytes | None]]
#: Told of a refused TLS handshake: (listener, OpenSSL's reason, e.g. CERTIFICATE_VERIFY_FAILED).
TlsFailure = Callable[[str, str], None]
#: How long a client may take over its TLS handshake (Kafka has no such bound; asyncio's default is 60 s).
TLS_HANDSHAKE_TIMEOUT_S = 10.0


def counting_context(settings: TlsSettings, listener: str, on_failure: TlsFailure | None) -> ssl.SSLContext:
    """The listener's server context, its handshakes watched: asyncio finishes a TLS handshake before the
    connection reaches :meth:`KafkaServer._serve` and drops a failed one silently, so the SSL objects it makes
    report their own failures (``SSLContext.sslobject_class``) — for the handshake-failure metric and the log."""
    ctx = settings.server_context()
    if on_failure is None:
        return ctx
    report = on_failure

    class Watched(ssl.SSLObject):
        def do_handshake(self) -> None:
            try:
                super().do_handshake()
            except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
                raise
            except ssl.SSLError as exc:
                reason = exc.reason or type(exc).__name__
                log.info("TLS handshake refused on listener %s: %s", listener, exc)
                report(listener, str(reason))
                raise

    ctx.sslobject_class = Watched
    return ctx


class KafkaServer:
    """Serves one listener. ``handlers`` maps an API key to an async handler returning a kio response."""

    def __init__(
        self,
        listener: str,
        host: str,
        port: int,
        handlers: dict[int, Handler],
        supported: dict[int, tuple[int, int]],
        *,
        max_frame: int = DEFAULT_MAX_FRAME,
        raw_handlers: dict[int, RawHandler] | None = None,
        security_protocol: str = "PLAINTEXT",
        dispatch: Dispatch | None = None,
        on_close: Callable[[Connection], None] | None = None,
        on_open: Callable[[Connection], None] | None = None,
        on_auth_failure: Callable[[Connection], None] | None = None,
        tls: TlsSettings | None = None,
        on_tls_failure: TlsFailure | None = None,
    ) -> None:
        self.tls = tls
        self.on_tls_failure = on_tls_failure
        self._ssl = counting_context(tls, listener, on_tls_failure) if tls is not None else None
        self.on_auth_failure = on_auth_failure
        self.on_open = on_open
        self.on_close = on_close
        self.security_protocol = security_protocol
        self.dispatch: Dispatch = dispatch or self.call_handler
        self.raw_handlers = raw_handlers or {}
        self.listener = listener
        self.host = host
        self.port = port
        self.handlers = handlers
        self.supported = supported
        self.max_frame = max_frame
        self._server: asyncio.Server | None = None
        self.connections = 0
        self.closed_for_bad_input = 0
        self._writers: set[asyncio.StreamWriter] = set()

    async def start(self) -> int:
        self._server = await asyncio.start_server(
            self._serve,
            self.host,
            self.port,
            ssl=self._ssl,
            ssl_handshake_timeout=TLS_HANDSHAKE_TIMEOUT_S if self._ssl else None,
        )
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self.port

    async def stop(self) -> None:
        """Stop accepting, then close every client connection, so nothing is left for a closed loop."""
        if self._server is not None:
            self._server.close()
        for writer in list(self._writers):
            writer.close()
        if self._server is not None:
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername") or ("", 0)
        sasl = self.security_protocol.startswith("SASL_")
        conn = Connection(self.listener, str(peer[0]), int(peer[1]), self.security_protocol, authenticated=not sasl)
        if self.tls is not None and not sasl:
            principal = self._ssl_principal(writer, conn)
            if principal is None:
                writer.close()
                return
            conn.principal = principal
        self.connections += 1
        if self.on_open is not None:
            self.on_open(conn)
        self._writers.add(writer)
        try:
            while True:
                header = await reader.readexactly(4)
                (size,) = struct.unpack(">i", header)
                if size < 0 or size > self.max_frame:
                    log.info(
                        "closing %s:%d: frame of %d bytes (limit %d)",
                        conn.peer_host,
                        conn.peer_port,
                        size,
                        self.max_frame,
                    )
                    self.closed_for_bad_input += 1
                    return
                frame = bytes(await reader.readexactly(size))
                with heap.bulk_request("a bulk frame") if size >= BULK_FRAME_BYTES else contextlib.nullcontext():
                    reply = await self._handle(frame, conn)
                    if reply is not None:
                        writer.write(struct.pack(">i", len(reply)) + reply)
                if reply is None:
                    self.closed_for_bad_input += 1
                    return
                await writer.drain()
                if conn.close_after_reply:
                    if conn.close_delay > 0:
                        await asyncio.sleep(conn.close_delay)
                    return
        except (asyncio.IncompleteReadError, ConnectionError):
            return  # the client went away (or half-closed): nothing to answer
        finally:
            if self.on_close is not None:
                self.on_close(conn)
            self.connections -= 1
            self._writers.discard(writer)
            writer.close()
            with contextlib.suppress(ConnectionError, OSError):
                await writer.wait_closed()

    def _ssl_principal(self, writer: asyncio.StreamWriter, conn: Connection) -> KafkaPrincipal | None:
        """Kafka's DefaultKafkaPrincipalBuilder on an SSL listener: ``User:`` and the client certificate's DN
        through ``ssl.principal.mapping.rules``; ANONYMOUS without a certificate; None (refused, as Kafka fails
        the authentication) when no rule applies."""
        assert self.tls is not None
        ssl_object = writer.get_extra_info("ssl_object")
        der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
        if not der:
            return ANONYMOUS
        dn = certificate_dn(der)
        try:
            return KafkaPrincipal(KafkaPrincipal.USER_TYPE, self.tls.mapper.name(dn))
        except NoMatchingRule as exc:
            log.info("closing %s:%d: %s", conn.peer_host, conn.peer_port, exc)
            if self.on_tls_failure is not None:
                self.on_tls_failure(self.listener, "NO_MATCHING_PRINCIPAL_RULE")
            return None

    async def _handle(self, frame: bytes, conn: Connection) -> bytes | None:
        if conn.sasl_raw is not None and not conn.authenticated:
            return await conn.sasl_raw(frame, conn)  # after SaslHandshake v0: a raw token, not a request
        api_key = int.from_bytes(frame[:2], "big", signed=True) if len(frame) >= 2 else None
        if not conn.authenticated and api_key not in PRE_AUTH:
            # Kafka: "Unexpected Kafka request of type X during SASL handshake" -> the connection is closed.
            log.info("closing %s:%d: request before SASL authentication", conn.peer_host, conn.peer_port)
            if self.on_auth_failure is not None:
                self.on_auth_failure(conn)
            return None
        if api_key in self.raw_handlers:
            try:
                return await self.raw_handlers[api_key](frame, conn)
            except Exception:
                log.exception("%s handling a raw API request", UNEXPECTED)
                return None
        try:
            request = parse_request(frame, self.supported)
        except UnsupportedApi as exc:
            if exc.api_key == API_VERSIONS and exc.api_version > self.supported[API_VERSIONS][1]:
                return api_versions_fallback(exc.correlation_id, self.supported)
            log.info("closing %s:%d: %s", conn.peer_host, conn.peer_port, exc)
            return None
        except MalformedRequest as exc:
            log.info("closing %s:%d: %s", conn.peer_host, conn.peer_port, exc)
            return None
        try:
            return await self.dispatch(request, frame, conn)
        except Exception:
            log.exception("%s handling API %d v%d", UNEXPECTED, request.api_key, request.api_version)
            return None

    async def call_handler(self, request: Request, _frame: bytes, conn: Connection) -> bytes | None:
        """The plain route: this node's handler for the API, encoded."""
        response = await self.handlers[request.api_key](request, conn)
        return encode_response(request, response)
