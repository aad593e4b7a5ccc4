"""AclCache against a real ZooKeeper chroot: it follows Kafka's change notifications, survives a dropped
connection and an expired session (kazoo drops watches on both), and skips znodes written by foreign tools."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

import pytest
from kazoo.client import KazooClient
from kazoo.protocol.states import KazooState

from controller.security.acl_cache import AclCache
from controller.security.authorizer import AclAuthorizer
from controller.store import kafka_acls as acl_store
from controller.store.kafka_acls import AclBinding, AclBindingFilter
from controller.zk.session import ZkSession
from tests.zkharness import drop_connection, expire_session
from zkmodel import paths
from zkmodel.kafka_acls import (
    AclEntry,
    AclNode,
    AclOperation,
    PatternType,
    PermissionType,
    ResourcePattern,
    ResourceType,
)

pytestmark = pytest.mark.integration

Snap = Mapping[ResourcePattern, tuple[AclEntry, ...]]
WAIT = 20.0  # a deadline for convergence, never a timing assertion

ALICE_READ = AclEntry("User:alice", PermissionType.ALLOW, "*", AclOperation.READ)
BOB_WRITE = AclEntry("User:bob", PermissionType.ALLOW, "10.0.0.1", AclOperation.WRITE)
ALICE_DENY = AclEntry("User:alice", PermissionType.DENY, "*", AclOperation.ALL)


def topic(name: str, kind: PatternType = PatternType.LITERAL) -> ResourcePattern:
    return ResourcePattern(ResourceType.TOPIC, name, kind)


@dataclass
class Env:
    cache: AclCache
    session: ZkSession  # the cache's own session
    writer: ZkSession  # another "broker" writing ACLs
    zk: KazooClient  # a foreign tool

    def create(self, pattern: ResourcePattern, *entries: AclEntry) -> None:
        results = acl_store.create_acls(self.writer, [AclBinding(pattern, e) for e in entries])
        assert all(error.code == 0 for error, _ in results), results

    def delete(self, pattern: ResourcePattern) -> None:
        acl_store.delete_acls(
            self.writer, [AclBindingFilter(pattern.resource_type, pattern.name, pattern.pattern_type)]
        )

    def converges(self, predicate: Callable[[Snap], bool]) -> Snap:
        return self.cache.wait_for(predicate, timeout=WAIT)


@pytest.fixture
def make_env(zk_hosts: str, zk: KazooClient) -> Iterator[Callable[[], Env]]:
    """Builds the sessions; the test starts the cache (some tests write first)."""
    made: list[Env] = []

    def make() -> Env:
        session = ZkSession(zk_hosts, session_timeout_ms=6000, name="acl-cache")
        writer = ZkSession(zk_hosts, session_timeout_ms=6000, name="acl-writer")
        session.start()
        writer.start()
        env = Env(AclCache(session), session, writer, zk)
        made.append(env)
        return env

    yield make
    for env in made:
        env.cache.stop()
        env.session.close()
        env.writer.close()


@pytest.fixture
def env(make_env: Callable[[], Env]) -> Env:
    e = make_env()
    e.cache.start()
    return e


def has(pattern: ResourcePattern, *entries: AclEntry) -> Callable[[Snap], bool]:
    return lambda snap: set(snap.get(pattern, ())) == set(entries)


def lacks(pattern: ResourcePattern) -> Callable[[Snap], bool]:
    return lambda snap: pattern not in snap


def test_follows_creations_and_deletions_from_an_empty_cluster(env: Env) -> None:
    assert env.cache.snapshot() == {}
    assert not env.zk.exists(paths.ACL_LITERAL_CHANGES), "the change stores do not exist yet: exists watches"
    authz = AclAuthorizer(env.cache.snapshot)
    env.create(topic("orders"), ALICE_READ, BOB_WRITE)
    env.create(topic("logs-", PatternType.PREFIXED), ALICE_READ)
    env.converges(has(topic("orders"), ALICE_READ, BOB_WRITE))
    env.converges(has(topic("logs-", PatternType.PREFIXED), ALICE_READ))
    assert authz.authorize("User:alice", "10.9.9.9", AclOperation.READ, ResourceType.TOPIC, "logs-app")
    assert authz.authorize("User:bob", "10.0.0.1", AclOperation.DESCRIBE, ResourceType.TOPIC, "orders")
    assert not authz.authorize("User:bob", "10.0.0.1", AclOperation.READ, ResourceType.TOPIC, "orders")

    env.create(topic("orders"), ALICE_DENY)
    env.converges(has(topic("orders"), ALICE_READ, BOB_WRITE, ALICE_DENY))
    assert not authz.authorize("User:alice", "10.9.9.9", AclOperation.READ, ResourceType.TOPIC, "orders")

    env.delete(topic("orders"))
    env.delete(topic("logs-", PatternType.PREFIXED))
    env.converges(lambda snap: snap == {})
    assert not authz.authorize("User:alice", "10.9.9.9", AclOperation.READ, ResourceType.TOPIC, "logs-app")


def test_start_loads_what_is_already_there(make_env: Callable[[], Env]) -> None:
    env = make_env()
    env.create(topic("a"), ALICE_READ)
    env.create(ResourcePattern(ResourceType.GROUP, "g", PatternType.PREFIXED), BOB_WRITE)
    snap = env.cache.start()
    assert snap == {
        topic("a"): (ALICE_READ,),
        ResourcePattern(ResourceType.GROUP, "g", PatternType.PREFIXED): (BOB_WRITE,),
    }
    env.create(topic("b"), ALICE_READ)  # old notifications are not replayed, new ones are followed
    env.converges(has(topic("b"), ALICE_READ))


def test_change_made_while_disconnected_is_picked_up(env: Env) -> None:
    env.create(topic("before"), ALICE_READ)
    env.converges(has(topic("before"), ALICE_READ))
    loads = env.cache.full_loads

    # Hold kazoo's connection thread in the SUSPENDED callback, so the cache is really disconnected while
    # another broker changes the ACLs (its watch cannot fire, and kazoo drops it).
    suspended, release = threading.Event(), threading.Event()

    def hold(state: KazooState) -> None:
        if state == KazooState.SUSPENDED and not release.is_set():
            suspended.set()
            release.wait(WAIT)

    env.session.client.add_listener(hold)
    try:
        drop_connection(env.session.client)
        assert suspended.wait(WAIT), "the connection did not drop"
        env.create(topic("during"), BOB_WRITE)
        env.delete(topic("before"))
    finally:
        release.set()
        env.session.client.remove_listener(hold)

    env.converges(lambda snap: set(snap) == {topic("during")})
    assert env.cache.full_loads > loads, "a reconnect reloads everything"
    env.create(topic("after"), ALICE_READ)  # the watches are armed again
    env.converges(has(topic("after"), ALICE_READ))


def test_session_expiry_is_survived(env: Env) -> None:
    env.create(topic("before"), ALICE_READ)
    env.converges(has(topic("before"), ALICE_READ))
    expire_session(env.session.client)
    env.create(topic("after"), BOB_WRITE)
    env.converges(has(topic("after"), BOB_WRITE))
    env.create(topic("later", PatternType.PREFIXED), ALICE_DENY)
    env.converges(has(topic("later", PatternType.PREFIXED), ALICE_DENY))
    assert env.cache.snapshot()[topic("before")] == (ALICE_READ,)


def test_malformed_znodes_from_other_tools_fail_closed_or_keep_what_was_cached(
    make_env: Callable[[], Env], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    env = make_env()
    zk = env.zk
    bad_at_start = paths.acl(ResourceType.TOPIC, "bad-at-start")
    zk.create(bad_at_start, b"not json", makepath=True)
    env.create(topic("good"), ALICE_READ)
    env.cache.start()
    # Kafka refuses to start here; we start, but nobody except super users may touch that resource.
    assert env.cache.snapshot() == {topic("good"): (ALICE_READ,), topic("bad-at-start"): acl_store.FAIL_CLOSED}
    assert bad_at_start in caplog.text

    literal_changes = paths.ACL_LITERAL_CHANGES
    extended_changes = paths.ACL_EXTENDED_CHANGES
    prefix = paths.ACL_CHANGE_PREFIX
    # An unreadable ACL znode, announced properly.
    bad_later = paths.acl(ResourceType.TOPIC, "bad-later")
    zk.create(bad_later, b'{"version":1,"acls":[{"principal":"nocolon"}]}', makepath=True)
    zk.create(f"{literal_changes}/{prefix}", b"TOPIC:bad-later", sequence=True, makepath=True)
    # Unreadable notifications in both stores, one naming an impossible resource, and a stray child.
    broken = zk.create(f"{literal_changes}/{prefix}", b"\xff\xfe", sequence=True)
    unknown_type = zk.create(f"{literal_changes}/{prefix}", b"NOSUCHTYPE:x", sequence=True)
    bad_json = zk.create(f"{extended_changes}/{prefix}", b"{not json", sequence=True, makepath=True)
    slashed = zk.create(f"{literal_changes}/{prefix}", b"TOPIC:a/b", sequence=True)
    zk.create(f"{literal_changes}/foreign-node", b"hello")
    # A valid ACL that was cached, then overwritten with garbage: its cached ACLs are kept.
    zk.set(paths.acl(ResourceType.TOPIC, "good"), b"[]")
    zk.create(f"{literal_changes}/{prefix}", b"TOPIC:good", sequence=True)

    # Changes after all of that are still followed, in both stores.
    env.create(topic("fine"), BOB_WRITE)
    env.create(topic("fine", PatternType.PREFIXED), BOB_WRITE)
    snap = env.converges(lambda s: topic("fine") in s and topic("fine", PatternType.PREFIXED) in s)
    assert snap[topic("bad-later")] == acl_store.FAIL_CLOSED  # nothing cached to keep: closed
    assert snap[topic("bad-at-start")] == acl_store.FAIL_CLOSED
    assert snap[topic("good")] == (ALICE_READ,)  # cached ACLs are kept, as Kafka does
    for path in (bad_later, broken, unknown_type, bad_json, slashed, f"{literal_changes}/foreign-node"):
        assert path in caplog.text, f"no warning names {path}"
    assert all(r.levelno < logging.ERROR for r in caplog.records if r.name == "controller.security.acl_cache")


def test_refresh_now_sees_writes_that_were_never_announced(env: Env) -> None:
    """A tool that writes ACL znodes without a change notification (brokers would miss it too until they
    restart): refresh_now reloads everything, and returns only once that load is done."""
    env.zk.create(paths.acl(ResourceType.TOPIC, "silent"), AclNode((ALICE_READ,)).encode(), makepath=True)
    snap = env.cache.refresh_now(timeout=WAIT)
    assert snap[topic("silent")] == (ALICE_READ,)


def test_stop_keeps_the_last_snapshot(env: Env) -> None:
    env.create(topic("kept"), ALICE_READ)
    snap = env.converges(has(topic("kept"), ALICE_READ))
    env.cache.stop()
    assert env.cache.snapshot() is snap
    with pytest.raises(RuntimeError):
        env.cache.start()
