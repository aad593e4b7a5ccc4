"""The stores on controller.zk.cas, without ZooKeeper: each caller's limits, waits and final error when
another process keeps winning the race, what counts as a lost race, and the ``/controller`` rules of an
entity-config write (read with zkmodel's ControllerZnode)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import Any, cast

import pytest

from controller.store import kafka_acls as acl_store
from controller.store.entity_configs import alter_entity, commit_entity_multi, controller_for_config_write
from controller.store.errors import ApiFailure
from controller.store.quotas import alter_quota_entity, validate_quota_config
from controller.store.scram import ScramAdminError, alter_scram, alter_user, validate_user_config
from controller.zk.cas import Raced
from controller.zk.errors import BadVersionError, NodeExistsError, NoNodeError, RolledBackError
from controller.zk.ops import Op
from controller.zk.session import ZkSession
from zkmodel import errorcodes as E
from zkmodel.errorcodes import KafkaApiError
from zkmodel.kafka_acls import (
    AclEntry,
    AclNode,
    AclOperation,
    PatternType,
    PermissionType,
    ResourcePattern,
    ResourceType,
)

CONTROLLER = b'{"version":2,"brokerid":1,"timestamp":"1","kraftControllerEpoch":-1}'
CONFIG = b'{"version":1,"config":{"producer_byte_rate":"1"}}'


class LosingSession:
    """A ZkSession stand-in where another process writes between every read and conditional write: each
    multi fails its first op with BadVersionError (the rest roll back), each setData at a version too."""

    def __init__(self, nodes: dict[str, bytes]) -> None:
        self.nodes = {"/controller": CONTROLLER, **nodes}
        self.multis = 0
        self.sets = 0
        #: ZooKeeper syncs, by path: a lost race catches the session's server up before reading again.
        self.syncs: list[str] = []

    def get(self, path: str) -> tuple[bytes, Any] | None:
        return (self.nodes[path], SimpleNamespace(version=7)) if path in self.nodes else None

    def sync(self, path: str) -> None:
        self.syncs.append(path)

    def get_children(self, path: str) -> list[str]:
        return []

    def exists(self, path: str) -> Any:
        return SimpleNamespace(version=7) if path in self.nodes else None

    def ensure_persistent(self, paths: Sequence[str]) -> None:
        pass

    def multi(self, ops: Sequence[Op], *, what: str, write: str, refusal_in_doubt: bool = False) -> list[Any]:
        self.multis += 1
        return [BadVersionError(), *(RolledBackError() for _ in ops[1:])]

    def set_if_version(self, path: str, data: bytes, version: int, *, write: str = "set") -> Any:
        self.sets += 1
        raise BadVersionError()


def session(nodes: dict[str, bytes] | None = None) -> tuple[LosingSession, ZkSession]:
    fake = LosingSession(nodes or {})
    return fake, cast(ZkSession, fake)


# -- each caller's policy -----------------------------------------------------------------------------------------
def write_topic(zk: ZkSession) -> None:
    alter_entity(zk, "topics", "t", lambda c: {**c, "retention.ms": "1"})


def write_quota(zk: ZkSession) -> None:
    alter_quota_entity(zk, "clients", "c", lambda c: {**c, "producer_byte_rate": "2"}, user_client=False)


def write_user(zk: ZkSession) -> None:
    alter_user(zk, "alice", lambda c: {**c, "consumer_byte_rate": "2"})


@pytest.mark.parametrize(
    ("write", "nodes", "entity"),
    [
        (write_topic, {}, "topics t"),
        (write_quota, {"/config/clients/c": CONFIG}, "clients c"),
        (write_user, {"/config/users/alice": CONFIG}, "users alice"),
    ],
)
def test_an_entity_config_write_gives_up_after_five_attempts(
    write: Callable[[ZkSession], None], nodes: dict[str, bytes], entity: str
) -> None:
    """Entity configs, client quotas and SCRAM credentials (AlterConfigs, AlterClientQuotas,
    AlterUserScramCredentials): five attempts, then STALE_CONTROLLER_EPOCH "concurrent updates"."""
    fake, zk = session(nodes)
    with pytest.raises(ApiFailure) as info:
        write(zk)
    assert (info.value.error, info.value.message) == (
        E.STALE_CONTROLLER_EPOCH,
        f"Cannot set entity configs for {entity}: concurrent updates.",
    )
    assert fake.multis == 5
    assert fake.syncs == [f"/config/{entity.replace(' ', '/')}"] * 4  # before each re-read, not before the first


def test_scram_bootstrap_gives_up_after_five_attempts() -> None:
    fake, zk = session({"/config/users/alice": CONFIG})
    with pytest.raises(ScramAdminError, match=r"^the config of user 'alice' kept changing underneath; try again$"):
        alter_scram(zk, "alice", "SCRAM-SHA-256", password="pw")
    assert fake.multis == 5


def test_acl_update_retries_ten_times_with_kafkas_backoff() -> None:
    pattern = ResourcePattern(ResourceType.TOPIC, "t", PatternType.LITERAL)
    entry = AclEntry("User:a", PermissionType.ALLOW, "*", AclOperation.READ)
    added = AclEntry("User:b", PermissionType.ALLOW, "*", AclOperation.READ)
    fake, zk = session({acl_store.resource_path(pattern): AclNode((entry,)).encode()})
    slept: list[float] = []
    with pytest.raises(KafkaApiError) as info:
        acl_store.update_resource(zk, pattern, lambda acls: (*acls, added), sleep=slept.append)
    assert info.value.error is E.UNKNOWN_SERVER_ERROR
    assert info.value.message == f"Failed to update ACLs for {pattern} after trying a maximum of 10 times"
    assert fake.sets == 11  # the first try and 10 retries
    assert fake.syncs == [acl_store.resource_path(pattern)] * 10
    assert len(slept) == 10 and all(0.1 <= s <= 0.15 for s in slept)  # 100 ms + up to 50 ms jitter


@pytest.mark.timing  # asserts a wall-clock bound of a few seconds: run alone (docs/testing.md)
def test_writers_queued_behind_one_entity_share_the_wait_for_a_controller() -> None:
    """Ordering writers of one entity must not stack their waits for a missing controller: both give up
    about ``controller_wait_s`` after they arrived (one after the other would take twice as long)."""
    fake, zk = session()
    del fake.nodes["/controller"]
    errors: list[str | None] = []

    def writer() -> None:
        try:
            alter_entity(zk, "topics", "t", lambda c: {**c, "retention.ms": "1"}, controller_wait_s=1.0)
        except ApiFailure as exc:
            errors.append(exc.message)

    started = time.monotonic()
    threads = [threading.Thread(target=writer) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert time.monotonic() - started < 1.6
    assert errors == ["Cannot set entity configs for topics t when there is no controller."] * 2


# -- what a lost race is -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("error", [BadVersionError(), NoNodeError(), NodeExistsError()])
def test_a_failed_compare_and_set_is_a_lost_race(error: Exception) -> None:
    zk = cast(ZkSession, SimpleNamespace(multi=lambda ops, **_kw: [RolledBackError(), error, RolledBackError()]))
    with pytest.raises(Raced):
        commit_entity_multi(zk, [], what="w", write="config")


def test_a_failed_change_notification_is_an_error_not_a_race() -> None:
    failure = NoNodeError()
    zk = cast(ZkSession, SimpleNamespace(multi=lambda ops, **_kw: [RolledBackError(), RolledBackError(), failure]))
    with pytest.raises(NoNodeError) as info:
        commit_entity_multi(zk, [], what="w", write="config")
    assert info.value is failure


def test_a_multi_that_succeeds_returns() -> None:
    zk = cast(ZkSession, SimpleNamespace(multi=lambda ops, **_kw: [True, SimpleNamespace(), "/config/changes/c_1"]))
    commit_entity_multi(zk, [], what="w", write="config")


# -- /controller -----------------------------------------------------------------------------------------------------
def controller_session(data: bytes | None, present: bool = True) -> ZkSession:
    stat = SimpleNamespace(version=4)
    return cast(ZkSession, SimpleNamespace(get=lambda path: (data, stat) if present else None))


@pytest.mark.parametrize(
    "data",
    [
        CONTROLLER,
        b'{"version":1,"brokerid":1,"timestamp":"1"}',
        b'{"version":2,"brokerid":1,"timestamp":"1","kraftControllerEpoch":0}',
        # Not readable as a controller: still a ZooKeeper-mode one, the write goes ahead.
        None,
        b"",
        b"x",
        b"\xff",
        b"[]",
        b"null",
        b"{}",
        b'{"version":2,"brokerid":1,"timestamp":"1","kraftControllerEpoch":null}',
    ],
)
def test_a_zookeeper_mode_controller_allows_the_write(data: bytes | None) -> None:
    assert controller_for_config_write(controller_session(data), "topics t").version == 4


@pytest.mark.parametrize(
    "data",
    [
        b'{"version":2,"brokerid":3000,"timestamp":"1","kraftControllerEpoch":1}',
        b'{"version":2,"brokerid":1,"kraftControllerEpoch":5}',
        # Malformed otherwise, but the KRaft epoch is there: a write would be lost to that controller.
        b'{"version":3,"brokerid":1,"timestamp":"1","kraftControllerEpoch":5}',
        b'{"version":2,"brokerid":"one","kraftControllerEpoch":5}',
    ],
)
def test_a_kraft_controller_refuses_the_write(data: bytes) -> None:
    with pytest.raises(ApiFailure) as info:
        controller_for_config_write(controller_session(data), "topics t")
    assert (info.value.error, info.value.message) == (
        E.STALE_CONTROLLER_EPOCH,
        "Cannot set entity configs for topics t directly when there is a KRaft controller.",
    )


def test_no_controller_refuses_the_write() -> None:
    with pytest.raises(ApiFailure) as info:
        controller_for_config_write(controller_session(None, present=False), "topics t")
    assert (info.value.error, info.value.message) == (
        E.STALE_CONTROLLER_EPOCH,
        "Cannot set entity configs for topics t when there is no controller.",
    )


# -- AdminZkClient.changeConfigs' validation -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("root", "name", "props", "ok"),
    [
        ("users", "u", {"producer_byte_rate": " 10 ", "request_percentage": "1.5d", "SCRAM-SHA-256": "x"}, True),
        ("users", "u/clients/c", {"SCRAM-SHA-256": "x"}, False),  # a user's client has no credentials
        ("users", "<default>", {"SCRAM-SHA-512": "x"}, False),
        ("clients", "c", {"producer_byte_rate": "1.5"}, False),
        ("clients", "c", {"nope": "1"}, False),
        ("ips", "1.2.3.4", {"connection_creation_rate": "0"}, True),
        ("ips", "1.2.3.4", {"connection_creation_rate": "-1"}, False),
        ("ips", "1.2.3.4", {"connection_creation_rate": "2147483648"}, False),
    ],
)
def test_quota_config_validation(root: str, name: str, props: dict[str, str], ok: bool) -> None:
    if ok:
        validate_quota_config(root, name, props)
        return
    with pytest.raises(ApiFailure) as info:
        validate_quota_config(root, name, props)
    assert (info.value.error, info.value.message) == (E.UNKNOWN_SERVER_ERROR, None)


def test_user_config_validation() -> None:
    validate_user_config({"SCRAM-SHA-256": "x", "producer_byte_rate": "+5", "controller_mutation_rate": "NaN"})
    with pytest.raises(ValueError, match="requirement failed: Unknown Dynamic Configuration: nope"):
        validate_user_config({"nope": "1"})
    with pytest.raises(ValueError):
        validate_user_config({"producer_byte_rate": "9223372036854775808"})
