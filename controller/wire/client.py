"""A small blocking Kafka client for broker-to-controller requests (AlterPartition now, Envelope later)."""

from __future__ import annotations

import io
import socket
import struct
import threading
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i16, i32


class ClientError(ConnectionError):
    """The peer could not be reached or answered garbage; the caller decides whether to retry."""


class KafkaClient:
    def __init__(self, host: str, port: int, *, client_id: str, timeout: float = 10.0) -> None:
        self.host = host
        self.port = port
        self.client_id = client_id
        self.timeout = timeout
        self._sock: socket.socket | None = None
        self._correlation = 0
        self._lock = threading.Lock()

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def request(self, api_key: int, version: int, body: Any) -> Any:
        """Send one request and return the decoded response body (reconnecting once if needed)."""
        with self._lock:
            for attempt in range(2):
                try:
                    return self._exchange(api_key, version, body)
                except (OSError, struct.error, ValueError) as exc:
                    self.close()
                    if attempt == 1:
                        raise ClientError(f"{self.host}:{self.port}: {exc!r}") from exc
            raise AssertionError("unreachable")

    def raw_request(self, encode: Any) -> bytes:
        """For APIs kio has no schema for: ``encode(correlation_id)`` builds the frame; returns the raw reply."""
        with self._lock:
            try:
                if self._sock is None:
                    self._sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
                self._correlation += 1
                payload = encode(self._correlation)
                self._sock.sendall(struct.pack(">i", len(payload)) + payload)
                size = struct.unpack(">i", self._recv(4))[0]
                return self._recv(size)
            except (OSError, struct.error) as exc:
                self.close()
                raise ClientError(f"{self.host}:{self.port}: {exc!r}") from exc

    def _exchange(self, api_key: int, version: int, body: Any) -> Any:
        if self._sock is None:
            self._sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
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
