"""Metadata v12 on the wire, for :mod:`bench.metadata_scale`: request frames (all topics or named ones), answers
read size-prefixed into a reused buffer, decoded with kio; connections with TCP_NODELAY."""

from __future__ import annotations

import io
import socket
import struct
import uuid
from collections.abc import Sequence
from typing import Any

from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic
from kio.schema.metadata.v12.response import MetadataResponse
from kio.schema.types import TopicName
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i16, i32

METADATA = 3
VERSION = 12
#: Longest a client waits for one answer (uncached at 100k partitions with 20 clients queues tens of seconds).
ANSWER_TIMEOUT_S = 600.0
NULL_TOPIC_ID = uuid.UUID(int=0)


def metadata_frame(topics: Sequence[str] | None, correlation: int = 1) -> bytes:
    """One size-prefixed Metadata v12 request: all topics (``None``) or the named ones."""
    header_cls = MetadataRequest.__header_schema__
    buf = io.BytesIO()
    header = header_cls(
        request_api_key=i16(METADATA),
        request_api_version=i16(VERSION),
        correlation_id=i32(correlation),
        client_id="bench-metadata-scale",
    )
    entity_writer(header_cls)(buf, header)
    wanted = (
        None
        if topics is None
        else tuple(MetadataRequestTopic(topic_id=NULL_TOPIC_ID, name=TopicName(t)) for t in topics)
    )
    body = MetadataRequest(topics=wanted, allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    entity_writer(MetadataRequest)(buf, body)
    payload = buf.getvalue()
    return struct.pack(">i", len(payload)) + payload


def recv_answer(sock: socket.socket, buf: bytearray) -> tuple[bytearray, int]:
    """Read one size-prefixed answer into ``buf``, or into a new buffer when it does not fit; returns the
    buffer holding it and its size."""
    head = bytearray(4)
    _fill(sock, memoryview(head))
    size = struct.unpack(">i", head)[0]
    if len(buf) < size:
        buf = bytearray(size)
    _fill(sock, memoryview(buf)[:size])
    return buf, size


def _fill(sock: socket.socket, view: memoryview) -> None:
    got = 0
    while got < len(view):
        n = sock.recv_into(view[got:])
        if n == 0:
            raise ConnectionError("the server closed the connection")
        got += n


def decode_metadata(payload: bytes) -> Any:
    _header, offset = entity_reader(MetadataResponse.__header_schema__)(payload, 0)
    body, _ = entity_reader(MetadataResponse)(payload, offset)
    return body


def connect(port: int, timeout: float = ANSWER_TIMEOUT_S) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def fetch(port: int, frame: bytes) -> bytes:
    """One request on a fresh connection; the answer's payload (correlation id and body)."""
    with connect(port) as sock:
        sock.sendall(frame)
        buf, size = recv_answer(sock, bytearray())
        return bytes(buf[:size])
