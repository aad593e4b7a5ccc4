"""ControlledShutdown (API key 7), hand-coded: kio is generated from Kafka 4 schemas, which dropped it.

Only v3 (flexible) is served, the version Kafka 2.4+ brokers send: request ``BrokerId int32,
BrokerEpoch int64``; response ``ErrorCode int16, RemainingPartitions [TopicName, PartitionIndex]``.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from controller.wire.framing import FrameError, read_uvarint, skip_tags, uvarint
from zkmodel.admin import TopicPartition

API_KEY = 7
VERSION = 3


class ShutdownCodecError(ValueError):
    pass


def encode_request(correlation_id: int, client_id: str, broker_id: int, broker_epoch: int) -> bytes:
    """Request header v2 (client id as a legacy nullable string, then tags) and the v3 body."""
    cid = client_id.encode()
    header = struct.pack(">hhih", API_KEY, VERSION, correlation_id, len(cid)) + cid + b"\x00"
    return header + struct.pack(">iq", broker_id, broker_epoch) + b"\x00"


def decode_request(frame: bytes) -> tuple[int, int, int]:
    """(correlation id, broker id, broker epoch) from a v3 request frame."""
    try:
        key, version, correlation, cid_len = struct.unpack_from(">hhih", frame, 0)
        if (key, version) != (API_KEY, VERSION):
            raise ShutdownCodecError(f"ControlledShutdown v{version} is not served (v3 only)")
        offset = 10 + max(cid_len, 0)
        offset = skip_tags(frame, offset)
        broker_id, broker_epoch = struct.unpack_from(">iq", frame, offset)
    except (struct.error, FrameError) as exc:
        raise ShutdownCodecError(str(exc)) from None
    return int(correlation), int(broker_id), int(broker_epoch)


def encode_response(correlation_id: int, error_code: int, remaining: Sequence[TopicPartition]) -> bytes:
    out = bytearray(struct.pack(">i", correlation_id) + b"\x00")  # response header v1
    out += struct.pack(">h", error_code)
    out += uvarint(len(remaining) + 1)
    for tp in remaining:
        name = tp.topic.encode()
        out += uvarint(len(name) + 1) + name + struct.pack(">i", tp.partition) + b"\x00"
    out += b"\x00"
    return bytes(out)


def decode_response(data: bytes) -> tuple[int, int, list[TopicPartition]]:
    """(correlation id, error code, remaining partitions)."""
    try:
        (correlation,) = struct.unpack_from(">i", data, 0)
        offset = skip_tags(data, 4)
        (error,) = struct.unpack_from(">h", data, offset)
        count, offset = read_uvarint(data, offset + 2)
        remaining = []
        for _ in range(max(count - 1, 0)):
            size, offset = read_uvarint(data, offset)
            name = data[offset : offset + size - 1].decode()
            offset += size - 1
            (partition,) = struct.unpack_from(">i", data, offset)
            offset = skip_tags(data, offset + 4)
            remaining.append(TopicPartition(name, int(partition)))
    except (struct.error, UnicodeDecodeError, FrameError) as exc:
        raise ShutdownCodecError(str(exc)) from None
    return int(correlation), int(error), remaining
