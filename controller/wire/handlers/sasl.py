"""SaslHandshake (17) and SaslAuthenticate (36): SASL PLAIN and SCRAM-SHA-256/512 on SASL_PLAINTEXT listeners,
with Kafka's SaslServerAuthenticator states and errors.

A failed authentication is answered (SASL_AUTHENTICATION_FAILED with Kafka's message) and then the
connection is closed, as Kafka does. After a handshake v0 (clients before Kafka 1.0) the tokens come raw, each
in a size-prefixed frame of its own and answered the same way; a failure there closes the connection without an
answer, as Kafka's SaslServerAuthenticator does.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
from collections.abc import Callable, Mapping
from typing import Any

from kio.schema.errors import ErrorCode

from controller.security.errors import SaslAuthenticationError
from controller.security.plain import PlainServer
from controller.security.principal import KafkaPrincipal
from controller.security.scram import ScramCredential, ScramServer
from controller.security.settings import ListenerSasl
from controller.wire.apikeys import bind
from controller.wire.codec import Request, build
from controller.wire.server import Connection
from zkmodel import errorcodes as E

log = logging.getLogger(__name__)
ZERO = datetime.timedelta(0)


class SaslApis:
    def __init__(
        self,
        listeners: Mapping[str, ListenerSasl],
        scram_lookup: Callable[[str, str], ScramCredential | None],
        *,
        on_failure: Callable[[Connection], None] | None = None,
        failure_close_delay_s: float = 0.0,
    ) -> None:
        self.failure_close_delay_s = failure_close_delay_s
        self.listeners = listeners
        self.scram_lookup = scram_lookup
        self.on_failure = on_failure

    def handlers(self) -> dict[int, Any]:
        return bind(self)

    async def handshake(self, req: Request, conn: Connection) -> Any:
        sasl = self.listeners.get(conn.listener)
        mechanisms = tuple(sasl.mechanisms) if sasl else ()
        if sasl is None or conn.authenticated or conn.sasl_mechanism is not None:
            # KafkaApis answers a handshake on a non-SASL or already authenticated connection like this.
            return build(
                req.schema.SaslHandshakeResponse, error_code=ErrorCode(E.ILLEGAL_SASL_STATE.code), mechanisms=mechanisms
            )
        mechanism = req.body.mechanism
        if mechanism not in mechanisms:
            conn.close_after_reply = True
            conn.close_delay = self.failure_close_delay_s
            if self.on_failure is not None:
                self.on_failure(conn)  # Kafka counts an unsupported mechanism as a failed authentication
            return build(
                req.schema.SaslHandshakeResponse,
                error_code=ErrorCode(E.UNSUPPORTED_SASL_MECHANISM.code),
                mechanisms=mechanisms,
            )
        conn.sasl_mechanism = mechanism
        if req.api_version == 0:
            conn.sasl_raw = self.raw_token
        if mechanism == "PLAIN":
            conn.sasl_server = PlainServer(sasl.plain_users)
        else:
            conn.sasl_server = ScramServer(mechanism, lambda user: self.scram_lookup(mechanism, user))
        return build(req.schema.SaslHandshakeResponse, error_code=ErrorCode.none, mechanisms=mechanisms)

    async def _evaluate(self, conn: Connection, token: bytes) -> tuple[str | None, bytes]:
        """One token through the connection's SASL server: (the user once complete, the reply token). Raises
        SaslAuthenticationError, counted and logged here."""
        server = conn.sasl_server
        try:
            if isinstance(server, PlainServer):
                return server.authenticate(token), b""
            reply = await asyncio.to_thread(server.evaluate, token)
            return (server.username if server.complete else None), reply
        except SaslAuthenticationError as exc:
            log.info("SASL/%s authentication of %s failed: %s", conn.sasl_mechanism, conn.peer_host, exc.message)
            if self.on_failure is not None:
                self.on_failure(conn)
            raise

    def _authenticated(self, conn: Connection, username: str) -> None:
        conn.authenticated = True
        conn.principal = KafkaPrincipal("User", username)
        conn.sasl_server = None
        conn.sasl_raw = None

    async def raw_token(self, frame: bytes, conn: Connection) -> bytes | None:
        """A raw token after SaslHandshake v0: the reply token, or None (close) when authentication failed."""
        if conn.sasl_server is None:
            return None
        try:
            username, reply = await self._evaluate(conn, frame)
        except SaslAuthenticationError:
            if self.failure_close_delay_s > 0:
                await asyncio.sleep(self.failure_close_delay_s)
            return None
        if username is not None:
            self._authenticated(conn, username)
        return reply

    async def authenticate(self, req: Request, conn: Connection) -> Any:
        response_cls = req.schema.SaslAuthenticateResponse
        if conn.authenticated or conn.sasl_server is None:
            message = (
                "SaslAuthenticate request received after successful authentication"
                if conn.authenticated
                else "Unexpected SaslAuthenticate request before SaslHandshake"
            )
            if not conn.authenticated:
                conn.close_after_reply = True
            return build(
                response_cls,
                error_code=ErrorCode(E.ILLEGAL_SASL_STATE.code),
                error_message=message,
                auth_bytes=b"",
                session_lifetime=ZERO,
            )
        try:
            username, reply = await self._evaluate(conn, bytes(req.body.auth_bytes))
        except SaslAuthenticationError as exc:
            conn.close_after_reply = True
            conn.close_delay = self.failure_close_delay_s
            return build(
                response_cls,
                error_code=ErrorCode(E.SASL_AUTHENTICATION_FAILED.code),
                error_message=exc.client_message(conn.sasl_mechanism or ""),
                auth_bytes=b"",
                session_lifetime=ZERO,
            )
        if username is not None:
            self._authenticated(conn, username)
        return build(
            response_cls, error_code=ErrorCode.none, error_message=None, auth_bytes=reply, session_lifetime=ZERO
        )
