"""The harness itself works against a real ZooKeeper: isolation, connection loss, expiry, ensembles."""

from __future__ import annotations

from pathlib import Path

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
from kazoo.protocol.states import KazooState
from kazoo.retry import KazooRetry

from controller.devstack.localzk import LocalZooKeeper
from tests.zkharness import ENV_ZK, StateRecorder, ZkServer, chroot_client, drop_connection, expire_session, new_client

pytestmark = pytest.mark.integration


def test_chroots_isolate_tests(zk_server: ZkServer, zk: KazooClient, zk_chroot: str) -> None:
    zk.create("/brokers/ids/1", b"mine", makepath=True)
    other_chroot = zk_chroot + "-other"
    root = new_client(zk_server.hosts)
    root.start(timeout=20)
    try:
        root.ensure_path(other_chroot)
        with chroot_client(zk_server.hosts, other_chroot) as other:
            assert other.exists("/brokers/ids/1") is None
            other.create("/brokers/ids/1", b"theirs", makepath=True)
            assert other.get("/brokers/ids/1")[0] == b"theirs"
        assert zk.get("/brokers/ids/1")[0] == b"mine"
        # Seen from the root, each test's znodes live under its own prefix.
        assert root.get(zk_chroot + "/brokers/ids/1")[0] == b"mine"
        assert root.get(other_chroot + "/brokers/ids/1")[0] == b"theirs"
    finally:
        root.delete(other_chroot, recursive=True)
        root.stop()
        root.close()


def test_forced_connection_loss_is_suspended_then_connected(zk_factory) -> None:  # type: ignore[no-untyped-def]
    client: KazooClient = zk_factory()
    client.create("/ephemeral", b"x", ephemeral=True)
    session_before = client.client_id[0]
    recorder = StateRecorder(client)

    drop_connection(client)

    assert recorder.wait_for(KazooState.SUSPENDED, KazooState.CONNECTED), recorder.states
    assert KazooState.LOST not in recorder.states
    assert client.client_id[0] == session_before  # same session, so ...
    assert client.exists("/ephemeral") is not None  # ... its ephemeral node survived


def test_forced_expiry_is_lost_and_removes_ephemerals(zk_factory) -> None:  # type: ignore[no-untyped-def]
    victim: KazooClient = zk_factory()
    observer: KazooClient = zk_factory()
    victim.create("/controller", b"victim", ephemeral=True)
    old_session = victim.client_id[0]
    recorder = StateRecorder(victim)

    expire_session(victim)

    # The server dropped the session at once: its ephemeral node is gone for everyone.
    with pytest.raises(NoNodeError):
        observer.get("/controller")
    # The victim learns it when it next talks to the server.
    with pytest.raises(Exception):  # noqa: B017 - SessionExpiredError or ConnectionLoss, depending on timing
        victim.get("/")
    assert recorder.wait_for(KazooState.LOST), recorder.states
    # kazoo starts a fresh session afterwards.
    assert recorder.wait_for(KazooState.LOST, KazooState.CONNECTED), recorder.states
    assert victim.client_id[0] != old_session


def test_ensemble_keeps_serving_when_a_member_dies(zk_ensemble: LocalZooKeeper) -> None:
    client = new_client(zk_ensemble.connect_string)
    client.start(timeout=20)
    try:
        client.create("/before", b"1")
        leader = zk_ensemble.leader()
        assert leader is not None
        assert sorted(zk_ensemble.mode(m.myid) or "" for m in zk_ensemble.members) == [
            "follower",
            "follower",
            "leader",
        ]

        zk_ensemble.kill(leader.myid)

        # A write needs a quorum: the two survivors elect a new leader, and the client may have to move
        # to another member first, so retry connection loss within a deadline as any writer would.
        retry = KazooRetry(max_tries=-1, delay=0.05, max_delay=0.5, deadline=30, ignore_expire=False)
        retry(client.create, "/after", b"2")
        survivors = [m for m in zk_ensemble.members if m.myid != leader.myid]
        assert sorted(zk_ensemble.mode(m.myid) or "" for m in survivors) == ["follower", "leader"]
        assert zk_ensemble.mode(leader.myid) is None
        assert client.get("/before")[0] == b"1"

        zk_ensemble.restart(leader.myid)
        assert zk_ensemble.mode(leader.myid) == "follower"
    finally:
        client.stop()
        client.close()


def test_failing_test_report_carries_server_log(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """The hook attaches the ZooKeeper log to a failing test's report (the inner run starts its own server)."""
    root = Path(__file__).resolve().parents[2]
    monkeypatch.delenv(ENV_ZK, raising=False)
    pytester.makeconftest(f"import sys\nsys.path.insert(0, {str(root)!r})\npytest_plugins = ['tests.conftest']\n")
    pytester.makepyfile(
        """
        def test_fails(zk):
            zk.create("/x", b"1")
            assert False, "deliberate"
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*ZooKeeper server log (tail)*", "*ZooKeeperServer*"])
