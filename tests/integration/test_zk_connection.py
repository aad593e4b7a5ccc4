"""A node's ZooKeeper connection reads ahead (controller.zk.connection) and never leaves a packet waiting."""

from __future__ import annotations

import threading
import uuid
from typing import Any

import pytest
from kazoo.protocol.states import WatchedEvent

from controller.zk.connection import BufferedConnectionHandler
from controller.zk.watch_table import WatchTableClient

ZNODES = 2000


def test_a_burst_of_events_and_answers_is_read_in_chunks_and_none_waits_in_the_buffer(
    zk_hosts: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """2,000 watch events and 2,000 answers arrive back to back: every one is handled within seconds, while
    the connection's next ping (what would bring a packet left in the buffer out) is ~10 s away, and they are
    read in far fewer ``recv`` calls than the two per packet kazoo makes."""
    client = WatchTableClient(hosts=zk_hosts, timeout=30.0)
    client.start(timeout=20)
    connection = client._connection
    assert isinstance(connection, BufferedConnectionHandler)
    receives = 0
    receive = connection._receive

    def counted(*args: Any) -> None:
        nonlocal receives
        receives += 1
        receive(*args)

    monkeypatch.setattr(connection, "_receive", counted)
    base = f"/burst-{uuid.uuid4().hex[:8]}"
    fired: set[str] = set()
    all_fired = threading.Event()
    lock = threading.Lock()

    def on_change(event: WatchedEvent) -> None:
        with lock:
            fired.add(event.path)
            if len(fired) == ZNODES:
                all_fired.set()

    try:
        paths = [f"{base}/{i}" for i in range(ZNODES)]
        client.ensure_path(base)
        for created in [client.create_async(p, b"0") for p in paths]:
            created.get(timeout=10)
        for read in [client.get_async(p, watch=on_change) for p in paths]:
            read.get(timeout=10)
        receives = 0
        answers = [client.set_async(p, b"1") for p in paths]
        for answer in answers:
            assert answer.get(timeout=5).version == 1
        assert all_fired.wait(5), f"{ZNODES - len(fired)} watch events not handled within 5 s"
        assert receives < ZNODES, f"{receives} recv calls for {2 * ZNODES} packets (kazoo alone: two a packet)"
        assert client.exists_async(base).get(timeout=2) is not None  # and the connection still answers at once
    finally:
        client.stop()
        client.close()
