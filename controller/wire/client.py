"""A small blocking Kafka client for broker-to-controller requests (AlterPartition, ControlledShutdown,
Envelope), authenticating with SASL PLAIN or SCRAM when the inter-broker listener asks for it."""

from __future__ import annotations

import io
import socket
import struct
import threading
from typing import Any, NoReturn

from kio.index import load_request_schema, load_response_schema
from kio.schema.sasl_authenticate.v2.request import SaslAuthenticateRequest
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i16, i32
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt

from controller.security.errors import SaslAuthenticationError
from controller.security.scram import ScramClient
from controller.security.settings import SaslCredentials
from controller.wire.arrays import check_arrays


class ClientError(ConnectionError):
    """The peer could not be reached or answered garbage; the caller decides whether to retry."""


class SaslFailure(ClientError):
    """The controller refused our credentials: retrying will not help (Kafka: AuthenticationException)."""


#: What a broken connection raises while a request is exchanged (a short read, a garbled frame).
_BROKEN = (OSError, struct.error, ValueError)


def _reconnect_helps(exc: BaseException) -> bool:
    return isinstance(exc, _BROKEN) and not isinstance(exc, SaslFailure)


class KafkaClient:
    def __init__(
        self, host: str, port: int, *, client_id: str, timeout: float = 10.0, sasl: SaslCredentials | None = None
    ) -> None:
        self.sasl = sasl
        self.host = host
        self.port = port
        self.client_id = client_id
        self.timeout = timeout
        self._sock: socket.socket | None = None
        # Built once per client, not per request: two attempts, the second on a fresh connection.
        self._retrying = Retrying(
            stop=stop_after_attempt(2), retry=retry_if_exception(_reconnect_helps), retry_error_callback=self._gave_up
        )
        self._correlation = 0
        self._lock = threading.Lock()

    def detach(self) -> socket.socket:
        """Hand the connected (and authenticated) socket to the caller, who now owns it."""
        self._ensure_connected()
        sock, self._sock = self._sock, None
        assert sock is not None
        return sock

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def request(self, api_key: int, version: int, body: Any) -> Any:
        """Send one request and return the decoded response body, on a new connection once more if the
        connection broke (a controller restarts between two requests); refused credentials are final."""
        with self._lock:
            return self._retrying(self._exchange_or_close, api_key, version, body)

    def _exchange_or_close(self, api_key: int, version: int, body: Any) -> Any:
        try:
            return self._exchange(api_key, version, body)
        except _BROKEN:
            self.close()
            raise

    def _gave_up(self, state: RetryCallState) -> NoReturn:
        exc = state.outcome.exception() if state.outcome is not None else None
        raise ClientError(f"{self.host}:{self.port}: {exc!r}") from exc

    def raw_request(self, encode: Any) -> bytes:
        """For APIs kio has no schema for: ``encode(correlation_id)`` builds the frame; returns the raw reply."""
        with self._lock:
            try:
                self._ensure_connected()
                self._correlation += 1
                payload = encode(self._correlation)
                assert self._sock is not None
                self._sock.sendall(struct.pack(">i", len(payload)) + payload)
                size = struct.unpack(">i", self._recv(4))[0]
                return self._recv(size)
            except SaslFailure:
                self.close()
                raise
            except (OSError, struct.error, ValueError) as exc:
                self.close()
                raise ClientError(f"{self.host}:{self.port}: {exc!r}") from exc

    def _ensure_connected(self) -> None:
        if self._sock is not None:
            self._sock.settimeout(self.timeout)
            return
        self._sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
        if self.sasl is not None:
            try:
                self._authenticate(self.sasl)
            except BaseException:
                self.close()
                raise

    def _authenticate(self, sasl: SaslCredentials) -> None:
        """SaslHandshake v1 then SaslAuthenticate v2 rounds, as Kafka's SaslClientAuthenticator does."""
        handshake = self._exchange(17, 1, SaslHandshakeRequest(mechanism=sasl.mechanism))
        if int(handshake.error_code) != 0:
            raise SaslFailure(
                f"{self.host}:{self.port} does not take SASL mechanism {sasl.mechanism} "
                f"(error {handshake.error_code}; enabled: {', '.join(handshake.mechanisms)})"
            )

        def step(token: bytes) -> bytes:
            reply = self._exchange(36, 2, SaslAuthenticateRequest(auth_bytes=token))
            if int(reply.error_code) != 0:
                raise SaslFailure(f"{self.host}:{self.port}: {reply.error_message or 'authentication failed'}")
            return bytes(reply.auth_bytes)

        if sasl.mechanism == "PLAIN":
            step(b"\0" + sasl.username.encode() + b"\0" + sasl.password.encode())
            return
        scram = ScramClient(sasl.mechanism, sasl.username, sasl.password)
        try:
            server_first = step(scram.first())
            server_final = step(scram.final(server_first))
            scram.verify(server_final)
        except SaslAuthenticationError as exc:
            raise SaslFailure(f"{self.host}:{self.port}: {exc}") from None

    def _exchange(self, api_key: int, version: int, body: Any) -> Any:
        if api_key not in (17, 36):
            self._ensure_connected()
        assert self._sock is not None
        self._correlation += 1
        request_cls = load_request_schema(api_key, version)
        header_cls = request_cls.__header_schema__
        buf = io.BytesIO()
        entity_writer(header_cls)(
            buf,
            header_cls(
                request_api_key=i16(api_key),
                request_api_version=i16(version),
                correlation_id=i32(self._correlation),
                client_id=self.client_id,
            ),
        )
        entity_writer(request_cls)(buf, body)
        payload = buf.getvalue()
        self._sock.sendall(struct.pack(">i", len(payload)) + payload)
        size = struct.unpack(">i", self._recv(4))[0]
        data = self._recv(size)
        response_cls = load_response_schema(api_key, version)
        header, offset = entity_reader(response_cls.__header_schema__)(data, 0)
        if header.correlation_id != self._correlation:
            raise ValueError(f"correlation id {header.correlation_id} != {self._correlation}")
        check_arrays(response_cls, data, offset)  # FrameError (a ValueError) before kio could abort the process
        response, _ = entity_reader(response_cls)(data, offset)
        return response

    def _recv(self, n: int) -> bytes:
        assert self._sock is not None
        chunks = []
        while n:
            chunk = self._sock.recv(n)
            if not chunk:
                raise OSError("connection closed by peer")
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)
