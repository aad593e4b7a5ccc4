"""Send one Kafka request, encoded with kio, over a real socket and decode the response (tests only)."""

from __future__ import annotations

import io
import socket
import struct
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_reader, entity_writer

CORRELATION_ID = 42


def call(port: int, key: int, version: int, body: Any = None, **fields: Any) -> Any:
    """``body`` is a ready request entity; otherwise the request class is built from ``fields``."""
    req_cls = load_request_schema(key, version)
    buf = io.BytesIO()
    header_cls = req_cls.__header_schema__
    header: dict[str, Any] = {"request_api_key": key, "request_api_version": version, "correlation_id": CORRELATION_ID}
    header |= {"client_id": "test"} if "client_id" in header_cls.__dataclass_fields__ else {}
    entity_writer(header_cls)(buf, header_cls(**header))
    entity_writer(req_cls)(buf, body if body is not None else req_cls(**fields))
    payload = buf.getvalue()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(struct.pack(">i", len(payload)) + payload)
        size = struct.unpack(">i", s.recv(4, socket.MSG_WAITALL))[0]
        data = b""
        while len(data) < size:
            chunk = s.recv(size - len(data))
            assert chunk, "connection closed before the whole response arrived"
            data += chunk
    resp_cls = load_response_schema(key, version)
    response_header, offset = entity_reader(resp_cls.__header_schema__)(data, 0)
    assert response_header.correlation_id == CORRELATION_ID
    decoded, _ = entity_reader(resp_cls)(data, offset)
    return decoded
