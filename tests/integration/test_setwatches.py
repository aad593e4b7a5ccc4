"""SetWatches (opcode 101) against a real ZooKeeper: many data watches in a few requests, with the
relative-zxid guarantee that a change between a read and its watch fires at once."""

from __future__ import annotations

import threading
import time

import pytest
from kazoo.client import KazooClient
from kazoo.protocol.states import WatchedEvent

from bench.zkpopulate import populate
from controller.zk import setwatches
from controller.zk.protocol import watches
from controller.zk.protocol.paths import server_path
from controller.zk.watch_table import Watchers, WatchTable, WatchTableClient
from tests.integration.cluster import wait_for
from tests.zkharness import ZkServer, drop_connection, new_client

pytestmark = pytest.mark.integration


class Fired:
    """Every event delivered, and a wait for a count of them."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []
        self.cond = threading.Condition()

    def __call__(self, event: WatchedEvent) -> None:
        with self.cond:
            self.events.append((event.type, event.path))
            self.cond.notify_all()

    def wait(self, count: int, timeout: float = 10.0) -> list[tuple[str, str]]:
        with self.cond:
            self.cond.wait_for(lambda: len(self.events) >= count, timeout)
            return sorted(self.events)


def test_watches_fire_on_change_and_delete_once(zk: KazooClient) -> None:
    for name in ("a", "b", "c"):
        zk.create(f"/w/{name}", name.encode(), makepath=True)
    fired = Fired()
    since = zk.get("/w/a")[1].mzxid  # at least as late as every znode here
    zk.sync("/w")
    setwatches.set_data_watches(zk, ["/w/a", "/w/b", "/w/c"], fired, zk.last_zxid, timeout=10)
    time.sleep(0.3)
    assert fired.events == [], "nothing changed after the zxid: no event yet"
    assert since <= zk.last_zxid
    zk.set("/w/a", b"A")
    zk.delete("/w/c")
    assert fired.wait(2) == [("CHANGED", "/w/a"), ("DELETED", "/w/c")]
    zk.set("/w/a", b"again")  # a data watch fires once
    zk.set("/w/b", b"B")
    assert fired.wait(3) == [("CHANGED", "/w/a"), ("CHANGED", "/w/b"), ("DELETED", "/w/c")]
    time.sleep(0.3)
    assert len(fired.events) == 3


def test_a_change_between_read_and_watch_fires_at_once(zk: KazooClient) -> None:
    """The read happened at zxid Z; the znode changed (or went away) before the watch was set: the server
    compares mzxid with Z and fires immediately, so the change is not lost."""
    zk.create("/g/kept", b"1", makepath=True)
    zk.create("/g/changed", b"1")
    zk.create("/g/gone", b"1")
    zk.get("/g/kept")
    since = zk.last_zxid  # the read's zxid
    zk.set("/g/changed", b"2")
    zk.delete("/g/gone")
    fired = Fired()
    setwatches.set_data_watches(zk, ["/g/kept", "/g/changed", "/g/gone"], fired, since, timeout=10)
    assert fired.wait(2) == [("CHANGED", "/g/changed"), ("DELETED", "/g/gone")]
    time.sleep(0.3)
    assert len(fired.events) == 2  # /g/kept stays armed
    zk.set("/g/kept", b"2")
    assert ("CHANGED", "/g/kept") in fired.wait(3)


def test_many_watches_are_split_under_the_request_limit(zk: KazooClient) -> None:
    """6,000 paths of ~40 bytes are ~240 KiB of paths: more than one request, every watch armed."""
    zk.create("/m")
    names = [f"/m/topic-with-a-longish-name-{i:06d}" for i in range(6000)]
    populate(zk, [(n, b"x") for n in names])
    fired = Fired()
    since = zk.last_zxid
    sent = setwatches.set_data_watches(zk, names, fired, since, timeout=30)
    assert sent >= 2
    request = watches.SetWatchesRequest(since, [server_path(zk, n) for n in names[:3000]])
    assert len(request.serialize()) > watches.MAX_PATH_BYTES  # half of them alone exceed one request
    for n in names[::1000]:
        zk.set(n, b"y")
    assert len(fired.wait(6)) == 6
    txn = zk.transaction()
    for n in names[:10]:
        txn.delete(n)
    txn.commit()


def test_chrooted_client(zk_server: ZkServer, zk_chroot: str, zk: KazooClient) -> None:
    """Paths are the client's: the chroot is added for the server and removed from the events (``zk`` is
    itself chrooted; a second client one level deeper sees the same znode as ``/x``)."""
    zk.create("/c/x", b"1", makepath=True)
    deeper = new_client(zk_server.hosts + zk_chroot + "/c")
    deeper.start(timeout=10)
    try:
        fired = Fired()
        setwatches.set_data_watches(deeper, ["/x"], fired, deeper.last_zxid, timeout=10)
        zk.set("/c/x", b"2")
        assert fired.wait(1) == [("CHANGED", "/x")]
    finally:
        deeper.stop()
        deeper.close()


def test_missing_znodes_get_exists_watches(zk: KazooClient) -> None:
    """A znode the read found absent: created before the watch is set, it fires at once; created later, it
    fires then (what a partition's state znode that a controller has not written yet needs)."""
    zk.ensure_path("/e")
    since = zk.last_zxid
    zk.create("/e/early", b"1")  # between the read and the watch
    fired = Fired()
    setwatches.set_data_watches(zk, [], fired, since, timeout=10, missing=["/e/early", "/e/late"])
    assert fired.wait(1) == [("CREATED", "/e/early")]
    zk.create("/e/late", b"1")
    assert fired.wait(2) == [("CREATED", "/e/early"), ("CREATED", "/e/late")]


def test_kazoo_watches_on_the_same_path_share_the_slot(zk: KazooClient) -> None:
    """A path armed here holds a :class:`Watchers`, not kazoo's set; kazoo's own ``get(watch=)`` on
    it adds to that slot, and one change fires both callbacks once each, as with kazoo's set."""
    zk.create("/s/a", b"1", makepath=True)
    ours, theirs = Fired(), Fired()
    setwatches.set_data_watches(zk, ["/s/a"], ours, zk.last_zxid, timeout=10)
    slot = zk._data_watchers[server_path(zk, "/s/a")]
    assert isinstance(slot, Watchers) and list(slot) == [ours]
    zk.get("/s/a", watch=theirs)
    zk.get("/s/a", watch=theirs)  # the same callback twice: one entry, as in a set
    assert len(slot) == 2 and theirs in slot
    zk.set("/s/a", b"2")
    assert ours.wait(1) == [("CHANGED", "/s/a")] and theirs.wait(1) == [("CHANGED", "/s/a")]
    time.sleep(0.3)
    assert len(ours.events) == 1 and len(theirs.events) == 1
    assert server_path(zk, "/s/a") not in zk._data_watchers  # popped when it fired, as kazoo does


def test_a_nodes_client_holds_state_watches_compactly_and_fires_them(zk_hosts: str) -> None:
    """On a node's client (:class:`WatchTableClient`) a partition state's watch, armed here or by kazoo's own
    ``get(watch=)``, fires each callback once on a change and leaves the table; a lost connection gives kazoo a
    fresh table of the same kind, whose watches work as before."""
    client = WatchTableClient(hosts=zk_hosts, timeout=6.0)
    client.start(timeout=20)
    try:
        _fire_compact_watches(client)
    finally:
        client.stop()
        client.close()


def _fire_compact_watches(client: WatchTableClient) -> None:
    state = "/brokers/topics/t/partitions/3/state"
    client.create(state, b"1", makepath=True)
    ours, theirs = Fired(), Fired()
    setwatches.set_data_watches(client, [state], ours, client.last_zxid, timeout=10)
    table = client._data_watchers
    assert isinstance(table, WatchTable) and not table._paths and len(table) == 1  # held as a byte
    client.get(state, watch=theirs)
    assert set(table[server_path(client, state)]) == {ours, theirs}
    client.set(state, b"2")
    assert ours.wait(1) == [("CHANGED", state)] and theirs.wait(1) == [("CHANGED", state)]
    time.sleep(0.3)
    assert len(ours.events) == 1 and len(theirs.events) == 1 and len(table) == 0
    drop_connection(client)  # kazoo resets its watchers and reconnects
    wait_for(lambda: client.connected and client._data_watchers is not table, what="a reconnect")
    assert isinstance(client._data_watchers, WatchTable)
    again = Fired()
    client.get(state, watch=again)
    client.set(state, b"3")
    assert again.wait(1) == [("CHANGED", state)]


def test_a_persistent_recursive_watch_fires_for_everything_below_it_and_stays(zk_hosts: str) -> None:
    """``addWatch`` (ZooKeeper 3.6+): one watch on a subtree hears every creation, change and deletion at any
    depth, keeps firing, leaves the one-shot watches on the same paths as they are, and goes with the
    connection (kazoo keeps no watch across one; its user adds it again)."""
    client = WatchTableClient(hosts=zk_hosts, timeout=6.0)
    client.start(timeout=20)
    try:
        client.ensure_path("/p")
        seen, once = Fired(), Fired()
        setwatches.add_persistent_watch(client, "/p", seen, timeout=10)
        client.create("/p/t/partitions/0/state", b"1", makepath=True)
        client.set("/p/t/partitions/0/state", b"2")
        client.get("/p/t/partitions/0/state", watch=once)  # a one-shot watch beside it, compact
        client.set("/p/t/partitions/0/state", b"3")
        client.delete("/p/t/partitions/0/state")
        client.create("/q", b"")  # outside the subtree
        expected = [
            ("CREATED", "/p/t"),
            ("CREATED", "/p/t/partitions"),
            ("CREATED", "/p/t/partitions/0"),
            ("CREATED", "/p/t/partitions/0/state"),
            ("CHANGED", "/p/t/partitions/0/state"),
            ("CHANGED", "/p/t/partitions/0/state"),
            ("DELETED", "/p/t/partitions/0/state"),
        ]
        assert seen.wait(len(expected)) == sorted(expected)
        assert once.wait(1) == [("CHANGED", "/p/t/partitions/0/state")]
        time.sleep(0.3)
        assert len(seen.events) == len(expected) and len(once.events) == 1
        table = client._data_watchers
        drop_connection(client)
        wait_for(lambda: client.connected and client._data_watchers is not table, what="a reconnect")
        client.create("/p/after", b"")
        time.sleep(0.5)
        assert len(seen.events) == len(expected) + 1 and seen.events[-1][0] == "NONE"  # told of the drop only
    finally:
        client.stop()
        client.close()
