"""Garbage frames sent to a real node (``bridgekeeper node`` on a real ZooKeeper) over real sockets: whatever
arrives, the node closes that connection or answers it, keeps answering ApiVersions on the next one, and
logs no unexpected error. ``test_wire_decoder.py`` fuzzes the decoders in-process; this is the same input
through the node's own server, handlers and process.

Mutated frames are seeded from read-only APIs only: a mutation that still decodes is a real request, and a
CreateTopics for two billion partitions is a (separate) capacity question, not a decoding one.
"""

from __future__ import annotations

import dataclasses
import socket
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kio.index import load_request_schema
from kio.serial._introspect import classify_field

from controller.devstack.stack import NodeProcess, Stack
from controller.logtags import UNEXPECTED
from tests.fuzz.budget import budget
from tests.fuzz.test_wire_decoder import KIO_APIS, mutated, valid_requests
from tests.wireutil import call

pytestmark = [pytest.mark.fuzz, pytest.mark.integration]

READ_ONLY = {3, 18, 29, 32, 46, 48, 50, 60}  # Metadata, ApiVersions, Describe*, ListPartitionReassignments
SEEDS = [(key, version) for key, version in KIO_APIS if key in READ_ONLY]
#: Flexible versions whose body starts with a compact array (one of each API).
FLEXIBLE_WITH_ARRAYS = [
    (3, 12),
    (19, 7),
    (20, 6),
    (30, 3),
    (31, 3),
    (32, 4),
    (33, 2),
    (37, 3),
    (44, 1),
    (48, 1),
    (49, 1),
    (50, 0),
    (51, 0),
]


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeProcess]:
    stack = Stack(nodes=1, data_dir=Path(tmp_path_factory.mktemp("wirenode")))
    stack.start()
    try:
        yield stack.nodes[0]
    finally:
        stack.stop()
    log = stack.nodes[0].log_path.read_text(errors="replace")
    assert UNEXPECTED not in log and "Traceback" not in log, stack.nodes[0].log_tail(60)


def send(port: int, payload: bytes) -> bytes:
    """Send ``payload``, half-close, and read until the node closes (or answers and then sees the EOF)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        try:
            s.sendall(payload)
            s.shutdown(socket.SHUT_WR)
        except OSError:
            return b""  # the node closed first: it refused what it had read
        chunks = []
        while chunk := s.recv(65536):
            chunks.append(chunk)
        return b"".join(chunks)


def still_serving(node: NodeProcess) -> None:
    assert node.process is not None and node.process.poll() is None, f"the node exited:\n{node.log_tail(30)}"
    versions = call(node.port, 18, 3, client_software_name="fuzz", client_software_version="1")
    assert versions.error_code == 0 and versions.api_keys


def framed(frame: bytes) -> bytes:
    return struct.pack(">i", len(frame)) + frame


GARBAGE = st.one_of(
    st.binary(max_size=300).map(framed),  # a size prefix, then anything
    st.binary(min_size=1, max_size=300),  # no size prefix: the first four bytes are read as one
    st.builds(
        lambda key, version, rest: framed(struct.pack(">hhi", key, version, 1) + rest),
        st.integers(-1, 70),
        st.integers(-1, 15),
        st.binary(max_size=200),
    ),
    valid_requests(SEEDS).flatmap(lambda r: mutated(r[3])).map(framed),
)


@budget(100)
@given(payload=GARBAGE)
def test_garbage_frames_close_one_connection_and_the_node_serves_on(node: NodeProcess, payload: bytes) -> None:
    send(node.port, payload)
    still_serving(node)


@pytest.mark.parametrize(("key", "version"), FLEXIBLE_WITH_ARRAYS)
def test_a_frame_claiming_four_billion_elements_is_refused(node: NodeProcess, key: int, version: int) -> None:
    """Before the count check (controller/wire/arrays.py), each of these 28-byte frames made kio ask for up
    to 32 GiB and the node process died on the failed allocation."""
    schema = load_request_schema(key, version)
    assert schema.__flexible__ and classify_field(dataclasses.fields(schema)[0]).is_array
    header = struct.pack(">hhih", key, version, 7, 4) + b"fuzz" + b"\x00"  # request header v2, no tags
    for count in (b"\xff\xff\xff\xff\x0f", b"\xff\xff\xff\xff\x07"):
        assert send(node.port, framed(header + count + b"\x00" * 8)) == b""  # refused: closed, no answer
        still_serving(node)


@pytest.mark.parametrize("version", [10, 11])
def test_a_metadata_request_naming_a_topic_by_null_before_v12_is_invalid(node: NodeProcess, version: int) -> None:
    """Found by the garbage above: the response has no null topic name before v12, so answering such a request
    failed in the encoder (logged as unexpected, connection closed). Kafka answers INVALID_REQUEST with ""."""
    import sys
    import uuid

    from controller.wire.codec import build

    schema = load_request_schema(3, version)
    topic_cls = sys.modules[schema.__module__].MetadataRequestTopic
    topics = (topic_cls(topic_id=uuid.UUID(int=0), name=None), topic_cls(topic_id=uuid.UUID(int=0), name="t"))
    body = build(
        schema,
        topics=topics,
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
        include_cluster_authorized_operations=False,
    )
    response = call(node.port, 3, version, body)
    assert [(t.name, t.error_code) for t in response.topics] == [("", 42), ("t", 42)]  # INVALID_REQUEST
    still_serving(node)
