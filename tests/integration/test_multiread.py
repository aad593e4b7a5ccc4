"""Multi-op reads (ZooKeeper multiRead, opcode 22) against a real ZooKeeper server."""

from __future__ import annotations

import contextlib
import random
import time
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
from kazoo.protocol.paths import _prefix_root

from bench.zkpopulate import populate
from controller.devstack.localzk import LocalZooKeeper
from controller.zk import bulk_read
from controller.zk.bulk_read import DEFAULT_MAX_RESPONSE_BYTES, MAX_REQUEST_BYTES, ReadStats, read_children, read_data
from controller.zk.multiread import (
    MultiReadTimeoutError,
    forget_multi_read_support,
    known_multi_read_support,
    multi_read_async,
    set_multi_read_support,
    supports_multi_read,
)
from controller.zk.protocol import multi_read
from controller.zk.protocol.multi_read import GetChildrenOp, GetDataOp, MultiReadRequest, ReadOp
from controller.zk.protocol.paths import chroot_path
from tests.zkharness import ZkServer, new_client

pytestmark = pytest.mark.integration


def pipelined_get(client: KazooClient, paths: list[str]) -> dict[str, Any]:
    """The baseline: kazoo's own get_async, 1,000 in flight, NoNode as None."""
    out: dict[str, Any] = {}
    window: deque[tuple[str, Any]] = deque()

    def drain() -> None:
        path, result = window.popleft()
        try:
            out[path] = result.get(timeout=30)
        except NoNodeError:
            out[path] = None

    for p in paths:
        window.append((p, client.get_async(p)))
        if len(window) >= 1000:
            drain()
    while window:
        drain()
    return out


def delete_children(client: KazooClient, parent: str) -> None:
    """Fast cleanup (the chroot fixture deletes one znode at a time): multis of 500 deletes."""
    children = client.get_children(parent)
    for i in range(0, len(children), 500):
        txn = client.transaction()
        for name in children[i : i + 500]:
            txn.delete(f"{parent}/{name}")
        txn.commit()


@pytest.fixture
def tree(zk: KazooClient) -> KazooClient:
    zk.create("/t", b"top")
    zk.create("/t/empty", b"")
    zk.create("/t/null", None)
    zk.create("/t/json", b'{"version":1}')
    zk.set("/t/json", b'{"version":2}')
    zk.create("/t/kids")
    for name in ("a", "b", "c"):
        zk.create(f"/t/kids/{name}", name.encode())
    return zk


def test_multi_read_async_mixed_results(tree: KazooClient) -> None:
    ops: list[ReadOp] = [
        GetDataOp("/t/json"),
        GetDataOp("/t/missing"),
        GetChildrenOp("/t/kids"),
        GetChildrenOp("/t/nope"),
        GetDataOp("/t/empty"),
        GetDataOp("/t/null"),
        GetChildrenOp("/t/empty"),
    ]
    results = multi_read_async(tree, ops).get(timeout=10)
    assert len(results) == len(ops)
    assert results[0] == tree.get("/t/json")
    assert results[0][1].version == 1
    # a failed op fails alone: multiRead is not all-or-nothing
    assert isinstance(results[1], NoNodeError)
    assert sorted(results[2]) == ["a", "b", "c"]
    assert isinstance(results[3], NoNodeError)
    assert results[4][0] == b""
    assert results[5][0] is None  # null data stays distinct from empty data
    assert results[6] == []


def test_multi_read_async_empty(zk: KazooClient) -> None:
    assert multi_read_async(zk, []).get(timeout=10) == []


def test_multiread_rejects_write_ops() -> None:
    with pytest.raises(ValueError, match="opcode 3"):
        MultiReadRequest([(3, "/x")])


def test_read_data_mixed_missing_none_and_empty(tree: KazooClient) -> None:
    paths = ["/t", "/t/empty", "/t/null", "/t/missing", "/t/json", "/nothing/here", "/t"]
    got = read_data(tree, paths)
    assert set(got) == set(paths)
    assert got["/t/missing"] is None and got["/nothing/here"] is None
    assert got["/t/empty"] is not None and got["/t/empty"][0] == b""
    assert got["/t/null"] is not None and got["/t/null"][0] is None
    for p in ("/t", "/t/empty", "/t/null", "/t/json"):
        data, stat = tree.get(p)
        result = got[p]
        assert result is not None
        assert result[0] == data
        assert result[1] == stat  # every Stat field, version and czxid included
        assert result[1].version == stat.version and result[1].czxid == stat.czxid
    assert got["/t/json"] is not None and got["/t/json"][1].version == 1


def test_read_children(tree: KazooClient) -> None:
    got = read_children(tree, ["/t", "/t/kids", "/t/kids/a", "/t/missing", "/"])
    assert sorted(got["/t"] or []) == ["empty", "json", "kids", "null"]
    assert sorted(got["/t/kids"] or []) == ["a", "b", "c"]
    assert got["/t/kids/a"] == []
    assert got["/t/missing"] is None
    assert got["/"] == tree.get_children("/")


def test_large_batch_equals_get_async(zk: KazooClient) -> None:
    zk.create("/big")
    rng = random.Random(7)
    nodes = []
    for i in range(5000):
        size = rng.choice([0, 1, 77, 200, 1500])
        nodes.append((f"/big/n{i:05d}", None if i % 97 == 0 else rng.randbytes(size)))
    populate(zk, nodes)
    for i in range(0, 5000, 250):  # some versions > 0
        zk.set(f"/big/n{i:05d}", b"changed")
    paths = [p for p, _ in nodes] + [f"/big/missing{i}" for i in range(50)]
    rng.shuffle(paths)
    stats = ReadStats()
    ours = read_data(zk, paths, stats=stats)
    assert ours == pipelined_get(zk, paths)
    assert stats.requests == 6 and not stats.fallback and stats.oversized_responses == 0
    children = read_children(zk, ["/big", "/big/n00001"])
    assert sorted(children["/big"] or []) == sorted(p.rsplit("/", 1)[1] for p, _ in nodes)
    delete_children(zk, "/big")


def test_response_near_the_limit_in_one_batch(zk: KazooClient) -> None:
    """900 KB of data in one multiRead: under the budget, one request."""
    zk.create("/large")
    blobs = {f"/large/{i}": bytes([i]) * 100_000 for i in range(9)}
    populate(zk, list(blobs.items()))
    stats = ReadStats()
    got = read_data(zk, list(blobs), stats=stats)
    assert {p: r[0] if r else None for p, r in got.items()} == blobs
    assert stats.requests == 1
    assert 900_000 < stats.largest_response_bytes <= DEFAULT_MAX_RESPONSE_BYTES


def test_size_hint_keeps_responses_under_budget(zk: KazooClient) -> None:
    zk.create("/large")
    blobs = {f"/large/{i:02d}": bytes([i]) * 100_000 for i in range(30)}  # 3 MB
    populate(zk, list(blobs.items()), per_multi=5)
    stats = ReadStats()
    got = read_data(zk, list(blobs), expected_size=100_000, stats=stats)
    assert {p: r[0] if r else None for p, r in got.items()} == blobs
    assert stats.oversized_responses == 0
    assert stats.largest_response_bytes <= DEFAULT_MAX_RESPONSE_BYTES
    assert stats.requests == 4  # 9 + 9 + 9 + 3 ops


def test_unexpectedly_large_response_is_kept_and_later_batches_shrink(zk: KazooClient) -> None:
    """Without a size hint the first batch comes back at ~3 MB: neither ZooKeeper nor kazoo rejects it,
    so it is used as is (no re-read), counted, and the estimate shrinks the following batches."""
    zk.create("/mixed")
    large = [(f"/mixed/a{i:02d}", b"L" * 100_000) for i in range(30)]
    small = [(f"/mixed/b{i:04d}", b"s" * 100) for i in range(3000)]
    populate(zk, large + small, per_multi=5)
    paths = [p for p, _ in large + small]
    stats = ReadStats()
    got = read_data(zk, paths, in_flight=1, stats=stats)
    assert got == pipelined_get(zk, paths)
    assert stats.oversized_responses == 1
    assert stats.largest_response_bytes > 3_000_000
    # after the 1,000-op first batch (~3.1 KB/op observed) the next batches hold ~300 ops, not 1,000
    assert stats.requests >= 5
    delete_children(zk, "/mixed")


def test_single_op_over_budget_is_sent_alone(zk: KazooClient) -> None:
    zk.create("/huge", b"h" * 1_000_000)
    zk.create("/tiny", b"t")
    stats = ReadStats()
    got = read_data(zk, ["/huge", "/tiny"], expected_size=1_000_000, stats=stats)
    assert got["/huge"] is not None and len(got["/huge"][0] or b"") == 1_000_000
    assert got["/tiny"] is not None and got["/tiny"][0] == b"t"
    assert stats.requests == 2 and stats.oversized_responses == 1


def test_requests_are_cut_under_the_server_limit(zk: KazooClient) -> None:
    """A request over the server's jute.maxbuffer makes it drop the connection; batches are cut by size."""
    long = "x" * 200
    paths = [f"/{long}/{i:05d}" for i in range(6000)]  # 1.3 MB of paths, all missing
    stats = ReadStats()
    got = read_data(zk, paths, batch=10_000, stats=stats)
    assert set(got) == set(paths) and all(v is None for v in got.values())
    assert stats.resends == 0
    per_request = (MAX_REQUEST_BYTES - 9) // (14 + len(zk.chroot) + 207)
    assert stats.requests == -(-6000 // per_request) >= 3


def test_chroot_prefixing(zk: KazooClient, zk_server: ZkServer, zk_chroot: str) -> None:
    """Paths get the client's chroot the way kazoo's own calls do; a root client sees the same znodes."""
    assert zk.chroot == zk_chroot
    zk.create("/c/d", b"inside", makepath=True)
    got = read_data(zk, ["/c/d", "c/d", "/c//d", "/c/d/", "/", "/missing"])
    assert got["/c/d"] is not None and got["/c/d"][0] == b"inside"
    assert got["c/d"] == got["/c//d"] == got["/c/d/"] == got["/c/d"]
    assert got["/"] is not None and got["/"][1] == zk.get("/")[1]
    assert got["/missing"] is None
    assert read_children(zk, ["/", "/c"]) == {"/": ["c"], "/c": ["d"]}
    root = new_client(zk_server.hosts)
    root.start(timeout=20)
    try:
        absolute = read_data(root, [f"{zk_chroot}/c/d", "/c/d"])
        assert absolute[f"{zk_chroot}/c/d"] == got["/c/d"]
        assert absolute["/c/d"] is None  # not in the root namespace
    finally:
        root.stop()
        root.close()
    for p in ["/a", "a", "/a/b", "/a//b/", "/", "", "//", "/a.b/.c", "a/b/"]:
        for chroot in ["", zk_chroot]:
            assert chroot_path(chroot, p) == _prefix_root(chroot, p), (chroot, p)


def test_support_probe_is_cached(zk: KazooClient) -> None:
    forget_multi_read_support(zk)
    assert supports_multi_read(zk) is True
    assert known_multi_read_support(zk) is True


def test_forced_fallback_gives_the_same_results(tree: KazooClient) -> None:
    paths = ["/t", "/t/empty", "/t/null", "/t/missing", "/t/json"]
    fb_stats, mr_stats = ReadStats(), ReadStats()
    fallback = read_data(tree, paths, multi_read=False, stats=fb_stats)
    assert fb_stats.fallback and fb_stats.requests == len(paths)
    assert fallback == read_data(tree, paths, stats=mr_stats)
    assert not mr_stats.fallback
    kids = ["/t", "/t/kids", "/t/missing"]
    assert read_children(tree, kids, multi_read=False) == read_children(tree, kids)


def test_multi_read_async_fallback_when_known_unsupported(tree: KazooClient) -> None:
    ops: list[ReadOp] = [GetDataOp("/t/json"), GetDataOp("/t/missing"), GetChildrenOp("/t/kids")]
    native = multi_read_async(tree, ops).get(timeout=10)
    set_multi_read_support(tree, False)
    try:
        emulated = multi_read_async(tree, ops).get(timeout=10)
    finally:
        forget_multi_read_support(tree)
    assert emulated[0] == native[0]
    assert isinstance(emulated[1], NoNodeError)
    assert sorted(emulated[2]) == sorted(native[2])


@pytest.fixture
def pre36_server(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the server answer our requests as ZooKeeper < 3.6 answers opcode 22: an unknown opcode gets
    UNIMPLEMENTED, then the server closes the connection (the session survives)."""
    monkeypatch.setattr(MultiReadRequest, "type", 99)


def test_detects_unsupported_server_and_falls_back(tree: KazooClient, pre36_server: None) -> None:
    forget_multi_read_support(tree)
    paths = ["/t", "/t/null", "/t/missing"]
    stats = ReadStats()
    got = read_data(tree, paths, stats=stats)
    assert stats.fallback
    assert known_multi_read_support(tree) is False
    assert got["/t/missing"] is None and got["/t/null"] is not None and got["/t/null"][0] is None
    assert got["/t"] is not None and got["/t"][0] == b"top"
    forget_multi_read_support(tree)


def test_multi_read_async_falls_back_on_unimplemented(tree: KazooClient, pre36_server: None) -> None:
    forget_multi_read_support(tree)
    ops: list[ReadOp] = [GetDataOp("/t"), GetChildrenOp("/t/kids")]
    results = multi_read_async(tree, ops).get(timeout=20)
    assert results[0][0] == b"top" and sorted(results[1]) == ["a", "b", "c"]
    assert known_multi_read_support(tree) is False
    forget_multi_read_support(tree)


def test_unsupported_mid_read_falls_back_for_the_rest(zk: KazooClient, monkeypatch: pytest.MonkeyPatch) -> None:
    """The server stops supporting multiRead while batches are in flight (a rolling downgrade)."""
    zk.create("/r")
    populate(zk, [(f"/r/{i}", str(i).encode()) for i in range(3000)])
    paths = [f"/r/{i}" for i in range(3000)]
    set_multi_read_support(zk, True)
    monkeypatch.setattr(MultiReadRequest, "type", 99)
    stats = ReadStats()
    got = read_data(zk, paths, batch=500, stats=stats)
    assert stats.fallback
    assert all(got[p] is not None and got[p][0] == p.rsplit("/", 1)[1].encode() for p in paths)  # type: ignore[index]
    forget_multi_read_support(zk)
    monkeypatch.undo()
    delete_children(zk, "/r")


def pause(server: LocalZooKeeper) -> None:
    """SIGSTOP the server and wait until every JVM thread has stopped (kill returns before they do)."""
    server.pause(1)
    process = server.member(1).process
    assert process is not None
    tasks = Path(f"/proc/{process.pid}/task")
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        states = []
        for task in tasks.iterdir():
            with contextlib.suppress(OSError):
                states.append((task / "stat").read_text().rsplit(")", 1)[1].split()[0])
        if states and all(state in "Tt" for state in states):
            return
        time.sleep(0.01)
    raise AssertionError("ZooKeeper did not stop")


@pytest.fixture
def own_server() -> Iterator[LocalZooKeeper]:
    with LocalZooKeeper() as server:
        yield server


@pytest.mark.timing  # asserts a wall-clock bound of a few seconds: run alone (docs/testing.md)
@pytest.mark.parametrize("multi_read", [True, False], ids=["multiRead", "fallback"])
def test_timeout_when_the_server_does_not_answer(own_server: LocalZooKeeper, multi_read: bool) -> None:
    client = new_client(own_server.connect_string, timeout=20.0)
    client.start(timeout=20)
    try:
        client.create("/x", b"1")
        pause(own_server)
        start = time.monotonic()
        with pytest.raises(MultiReadTimeoutError, match="unanswered"):
            read_data(client, ["/x", "/y"], timeout=1.0, multi_read=multi_read)
        assert time.monotonic() - start < 3.0
        own_server.resume(1)
        assert read_data(client, ["/x"], timeout=20.0)["/x"] is not None
    finally:
        own_server.resume(1)
        client.stop()
        client.close()


def test_probe_times_out_when_the_server_does_not_answer(own_server: LocalZooKeeper) -> None:
    client = new_client(own_server.connect_string, timeout=20.0)
    client.start(timeout=20)
    try:
        pause(own_server)
        with pytest.raises(MultiReadTimeoutError, match="probe"):
            read_children(client, ["/"], timeout=0.5)
        own_server.resume(1)
        assert read_children(client, ["/"], timeout=20.0)["/"] == ["zookeeper"]
    finally:
        own_server.resume(1)
        client.stop()
        client.close()


def test_connection_drop_mid_read_resends(zk: KazooClient) -> None:
    """Batches lost to a dropped connection are sent again after kazoo reconnects (same session).

    Whether a batch is still in flight when the drop lands depends on scheduling, so the scenario is
    repeated until one attempt exercised a resend; every attempt must return complete, correct data.
    """
    from tests.zkharness import drop_connection

    zk.create("/d")
    populate(zk, [(f"/d/{i}", b"v") for i in range(4000)])
    paths = [f"/d/{i}" for i in range(4000)]
    set_multi_read_support(zk, True)
    original = multi_read.MultiReadRequest.serialize
    resends = 0
    try:
        for _attempt in range(5):
            stats = ReadStats()
            dropped: list[bool] = []

            def serialize_then_drop(self: MultiReadRequest, dropped: list[bool] = dropped) -> bytes:
                if not dropped and len(self.ops) == 200:
                    dropped.append(True)
                    drop_connection(zk)  # queued behind this request: it breaks the connection after sending
                return original(self)

            multi_read.MultiReadRequest.serialize = serialize_then_drop  # type: ignore[method-assign]
            got = read_data(zk, paths, batch=200, in_flight=4, stats=stats, timeout=30)
            multi_read.MultiReadRequest.serialize = original  # type: ignore[method-assign]
            assert dropped
            assert all(got[p] == (b"v", got[p][1]) for p in paths)  # type: ignore[index]
            resends += stats.resends
            if resends:
                break
    finally:
        multi_read.MultiReadRequest.serialize = original  # type: ignore[method-assign]
        forget_multi_read_support(zk)
    assert resends >= 1, "no attempt had a batch in flight when the connection dropped"
    delete_children(zk, "/d")


def test_other_errors_are_raised(zk: KazooClient) -> None:
    from kazoo.exceptions import NoAuthError
    from kazoo.security import make_digest_acl

    zk.create("/secret", b"s", acl=[make_digest_acl("u", "p", all=True)])
    with pytest.raises(NoAuthError) as info:
        read_data(zk, ["/secret"])
    assert "/secret" in "".join(getattr(info.value, "__notes__", []))
    ops: list[ReadOp] = [GetDataOp("/secret"), GetChildrenOp("/")]
    result = multi_read_async(zk, ops).get(timeout=10)
    assert isinstance(result[0], NoAuthError) and "secret" in result[1]
    zk.delete("/secret")  # needs DELETE on the parent only; the chroot cleanup could not list it


def test_arguments_are_checked(zk: KazooClient) -> None:
    with pytest.raises(TypeError):
        read_data(zk, "/a")
    with pytest.raises(TypeError):
        read_data(zk, [b"/a"])  # type: ignore[list-item]
    with pytest.raises(ValueError):
        read_data(zk, ["/a"], batch=0)
    with pytest.raises(TypeError):
        multi_read_async(zk, [("/a",)])  # type: ignore[list-item]
    assert read_data(zk, []) == {}


# -- read_data_into: the failover's streaming read ---------------------------------------------------------------
def collect_into(client: KazooClient, paths: list[str], **kwargs: Any) -> tuple[list[tuple[int, int]], list[Any]]:
    """read_data_into's batches as (first index, count) and its results as (data, version) per path."""
    batches: list[tuple[int, int]] = []
    results: list[Any] = [None] * len(paths)

    def sink(start: int, datas: list[bytes | None], versions: list[int]) -> None:
        batches.append((start, len(datas)))
        assert len(datas) == len(versions)
        for i, (d, v) in enumerate(zip(datas, versions, strict=True), start):
            results[i] = (d, v)

    bulk_read.read_data_into(client, paths, sink, **kwargs)
    return batches, results


@pytest.mark.parametrize("multi_read", [True, False])
def test_read_data_into_matches_read_data_in_order(zk: KazooClient, multi_read: bool) -> None:
    zk.create("/s")
    populate(zk, [(f"/s/{i}", None if i % 7 == 0 else str(i).encode()) for i in range(2500)])
    zk.set("/s/5", b"five")  # version 1
    paths = [f"/s/{i}" for i in range(2600)]  # the last 100 do not exist
    batches, results = collect_into(zk, paths, batch=400, multi_read=multi_read)
    # batches arrive in order and cover every path once
    covered = 0
    for start, count in batches:
        assert start == covered
        covered += count
    assert covered == len(paths) and (len(batches) > 1 or not multi_read)
    expected = read_data(zk, paths)
    for p, (data, version) in zip(paths, results, strict=True):
        found = expected[p]
        assert (data, version) == ((None, -1) if found is None else (found[0], found[1].version)), p
    assert results[5] == (b"five", 1) and results[7] == (None, 0) and results[2599] == (None, -1)
    delete_children(zk, "/s")


def test_read_data_into_raises_other_errors_naming_the_path(zk: KazooClient) -> None:
    from kazoo.exceptions import NoAuthError
    from kazoo.security import make_digest_acl

    zk.create("/secret2", b"s", acl=[make_digest_acl("u", "p", all=True)])
    with pytest.raises(NoAuthError) as info:
        collect_into(zk, ["/secret2"])
    assert "/secret2" in "".join(getattr(info.value, "__notes__", []))
    zk.delete("/secret2")
