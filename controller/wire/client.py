"""A small blocking Kafka client for broker-to-controller requests (AlterPartition, ControlledShutdown,
Envelope), over TLS when the inter-broker listener is SSL or SASL_SSL, authenticating with SASL PLAIN or SCRAM
when it asks for it; and :func:`open_channel`, the same connection set-up for asyncio callers (forwarding).

The SASL exchange is written once (:func:`sasl_exchanges`, a generator of requests fed with their answers) and
driven by either side."""

from __future__ import annotations

import asyncio
import io
import socket
import ssl
import struct
import threading
from collections.abc import Generator
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
        self,
        host: str,
        port: int,
        *,
        client_id: str,
        timeout: float = 10.0,
        sasl: SaslCredentials | None = None,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.sasl = sasl
        self.tls = tls
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
        """Hand the connected (and authenticated) socket to the caller, who now owns it. Over TLS it is an
        ``ssl.SSLSocket``, which asyncio cannot adopt: async callers connect with :func:`open_channel` instead."""
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
        sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
        if self.tls is not None:
            try:
                sock = self.tls.wrap_socket(sock, server_hostname=self.host)
            except BaseException:
                sock.close()
                raise
        self._sock = sock
        if self.sasl is not None:
            try:
                self._authenticate(self.sasl)
            except BaseException:
                self.close()
                raise

    def _authenticate(self, sasl: SaslCredentials) -> None:
        steps = sasl_exchanges(sasl, f"{self.host}:{self.port}")
        request = next_step(steps, None)
        while request is not None:
            request = next_step(steps, self._exchange(*request))

    def _exchange(self, api_key: int, version: int, body: Any) -> Any:
        if api_key not in (17, 36):
            self._ensure_connected()
        assert self._sock is not None
        self._correlation += 1
        payload = encode_request(api_key, version, body, self._correlation, self.client_id)
        self._sock.sendall(struct.pack(">i", len(payload)) + payload)
        size = struct.unpack(">i", self._recv(4))[0]
        return decode_response(api_key, version, self._recv(size), self._correlation)

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


# -- shared by the blocking client and asyncio callers ------------------------------------------------------------
def encode_request(api_key: int, version: int, body: Any, correlation: int, client_id: str) -> bytes:
    """A request frame's payload (without its size prefix)."""
    request_cls = load_request_schema(api_key, version)
    header_cls = request_cls.__header_schema__
    buf = io.BytesIO()
    entity_writer(header_cls)(
        buf,
        header_cls(
            request_api_key=i16(api_key),
            request_api_version=i16(version),
            correlation_id=i32(correlation),
            client_id=client_id,
        ),
    )
    entity_writer(request_cls)(buf, body)
    return buf.getvalue()


def decode_response(api_key: int, version: int, data: bytes, correlation: int) -> Any:
    """A response payload's body; a correlation id other than ``correlation`` or a bad frame is a ValueError."""
    response_cls = load_response_schema(api_key, version)
    header, offset = entity_reader(response_cls.__header_schema__)(data, 0)
    if header.correlation_id != correlation:
        raise ValueError(f"correlation id {header.correlation_id} != {correlation}")
    check_arrays(response_cls, data, offset)  # FrameError (a ValueError) before kio could abort the process
    response, _ = entity_reader(response_cls)(data, offset)
    return response


def next_step(steps: Generator[tuple[int, int, Any], Any, None], reply: Any) -> tuple[int, int, Any] | None:
    """The request :func:`sasl_exchanges` wants sent after ``reply`` (None to start), or None when it is done."""
    try:
        return steps.send(reply)
    except StopIteration:
        return None


def sasl_exchanges(sasl: SaslCredentials, peer: str) -> Generator[tuple[int, int, Any], Any, None]:
    """SaslHandshake v1 then SaslAuthenticate v2 rounds, as Kafka's SaslClientAuthenticator does: yields each
    request as ``(api_key, version, body)`` and is sent its decoded answer; raises SaslFailure on refusal."""
    handshake = yield (17, 1, SaslHandshakeRequest(mechanism=sasl.mechanism))
    if int(handshake.error_code) != 0:
        raise SaslFailure(
            f"{peer} does not take SASL mechanism {sasl.mechanism} "
            f"(error {handshake.error_code}; enabled: {', '.join(handshake.mechanisms)})"
        )

    def failed(reply: Any) -> SaslFailure | None:
        if int(reply.error_code) == 0:
            return None
        return SaslFailure(f"{peer}: {reply.error_message or 'authentication failed'}")

    if sasl.mechanism == "PLAIN":
        reply = yield (
            36,
            2,
            SaslAuthenticateRequest(auth_bytes=b"\0" + sasl.username.encode() + b"\0" + sasl.password.encode()),
        )
        if (error := failed(reply)) is not None:
            raise error
        return
    scram = ScramClient(sasl.mechanism, sasl.username, sasl.password)
    try:
        reply = yield (36, 2, SaslAuthenticateRequest(auth_bytes=scram.first()))
        if (error := failed(reply)) is not None:
            raise error
        reply = yield (36, 2, SaslAuthenticateRequest(auth_bytes=scram.final(bytes(reply.auth_bytes))))
        if (error := failed(reply)) is not None:
            raise error
        scram.verify(bytes(reply.auth_bytes))
    except SaslAuthenticationError as exc:
        raise SaslFailure(f"{peer}: {exc}") from None


class Channel:
    """An asyncio connection to another node, set up like :class:`KafkaClient`'s (TLS, SASL) and owning its
    correlation ids for the set-up exchanges."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, client_id: str) -> None:
        self.reader = reader
        self.writer = writer
        self.client_id = client_id
        self.correlation = 0

    async def request(self, api_key: int, version: int, body: Any) -> Any:
        self.correlation += 1
        payload = encode_request(api_key, version, body, self.correlation, self.client_id)
        self.writer.write(struct.pack(">i", len(payload)) + payload)
        await self.writer.drain()
        (size,) = struct.unpack(">i", await self.reader.readexactly(4))
        return decode_response(api_key, version, await self.reader.readexactly(size), self.correlation)


async def open_channel(
    host: str, port: int, *, client_id: str, tls: ssl.SSLContext | None, sasl: SaslCredentials | None
) -> Channel:
    """Connect (TLS first when ``tls``), then authenticate with SASL when ``sasl``: KafkaClient's set-up for
    asyncio. Network failures raise OSError (ssl.SSLError for a refused handshake), refused credentials
    SaslFailure; the connection is closed on any failure."""
    reader, writer = await asyncio.open_connection(host, port, ssl=tls, server_hostname=host if tls else None)
    channel = Channel(reader, writer, client_id)
    try:
        if sasl is not None:
            steps = sasl_exchanges(sasl, f"{host}:{port}")
            request = next_step(steps, None)
            while request is not None:
                request = next_step(steps, await channel.request(*request))
    except BaseException:
        writer.close()
        raise
    return channel
