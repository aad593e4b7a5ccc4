"""The asyncio Kafka protocol server: framing, per-connection ordering, and Kafka's close-on-bad-input.

Requests on one connection are answered strictly in order (clients pipeline and match by correlation
id, but Kafka guarantees order and librdkafka relies on it). A bad frame closes that connection only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import struct
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

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
UNEXPECTED = "BK-UNEXPECTED"
#: socket.request.max.bytes default in Kafka.
DEFAULT_MAX_FRAME = 104_857_600


@dataclass(frozen=True)
class Connection:
    listener: str
    peer_host: str
    peer_port: int


Handler = Callable[[Request, Connection], Awaitable[Any]]
#: Handlers for APIs kio has no schema for: they get the raw frame and return the raw response.
RawHandler = Callable[[bytes, Connection], Awaitable[bytes | None]]


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
    ) -> None:
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
        self._server = await asyncio.start_server(self._serve, self.host, self.port)
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
        conn = Connection(self.listener, str(peer[0]), int(peer[1]))
        self.connections += 1
        self._writers.add(writer)
        try:
            while True:
                header = await reader.readexactly(4)
                (size,) = struct.unpack(">i", header)
                if size < 0 or size > self.max_frame:
                    log.info("closing %s:%d: frame of %d bytes (limit %d)", conn.peer_host, conn.peer_port, size,
                             self.max_frame)  # fmt: skip
                    self.closed_for_bad_input += 1
                    return
                frame = bytes(await reader.readexactly(size))
                reply = await self._handle(frame, conn)
                if reply is None:
                    self.closed_for_bad_input += 1
                    return
                writer.write(struct.pack(">i", len(reply)) + reply)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            return  # the client went away (or half-closed): nothing to answer
        finally:
            self.connections -= 1
            self._writers.discard(writer)
            writer.close()
            with contextlib.suppress(ConnectionError, OSError):
                await writer.wait_closed()

    async def _handle(self, frame: bytes, conn: Connection) -> bytes | None:
        if len(frame) >= 2 and int.from_bytes(frame[:2], "big", signed=True) in self.raw_handlers:
            try:
                return await self.raw_handlers[int.from_bytes(frame[:2], "big", signed=True)](frame, conn)
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
            response = await self.handlers[request.api_key](request, conn)
            return encode_response(request, response)
        except Exception:
            log.exception("%s handling API %d v%d", UNEXPECTED, request.api_key, request.api_version)
            return None
