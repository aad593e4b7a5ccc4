"""DescribeUserScramCredentials / AlterUserScramCredentials over the wire against a real ZooKeeper chroot.

Scenarios follow Kafka 3.9's AlterUserScramCredentialsRequestTest and DescribeUserScramCredentialsRequestTest
(ZooKeeper mode), plus what only the znodes show: the stored credential authenticates, quota keys on the
same user survive, change notifications are written, and confluent-kafka's AdminClient talks to it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import orjson
import pytest
from kazoo.client import KazooClient
from kio.index import load_request_schema

from controller.security.errors import SaslAuthenticationError
from controller.security.scram import (
    ScramClient,
    ScramCredential,
    ScramServer,
    credential_from_string,
    salted_password,
)
from controller.store import scram as scram_store
from controller.store.registration import ensure_persistent_paths
from controller.wire.apikeys import SUPPORTED
from controller.wire.authz import Authz
from controller.wire.handlers.apis import Apis, NodeView
from controller.wire.handlers.scram import ScramApis
from controller.wire.runtime import WireRuntime
from controller.zk.session import ZkSession
from tests.wireutil import call
from zkmodel.brokers import BrokerRegistration, EndPoint
from zkmodel.configs import sanitize
from zkmodel.kafka_acls import AclOperation, ResourceType

pytestmark = pytest.mark.integration

SHA256, SHA512, UNKNOWN = 1, 2, 0
NONE, UNKNOWN_SERVER_ERROR, STALE_CONTROLLER_EPOCH, CLUSTER_AUTHORIZATION_FAILED = 0, -1, 11, 31
UNSUPPORTED_SASL_MECHANISM, RESOURCE_NOT_FOUND, DUPLICATE_RESOURCE, UNACCEPTABLE_CREDENTIAL = 33, 91, 92, 93
SERVER_ERROR_TEXT = "The server experienced an unexpected error when processing the request."
NAMES = {SHA256: "SCRAM-SHA-256", SHA512: "SCRAM-SHA-512"}
CONTROLLER = b'{"version":2,"brokerid":1,"timestamp":"1","kraftControllerEpoch":-1}'


class Cache:
    def __init__(self) -> None:
        self.current: Any = SimpleNamespace(topics={}, brokers={}, controller_id=1)

    def snapshot(self) -> Any:
        return self.current

    def wait_for(self, predicate: Any, timeout: float) -> Any:
        return self.current


@dataclass
class FakeAuthorizer:
    """Unit-level stand-in for the ACL authorizer: answers ``allow`` and records what it was asked."""

    allow: bool = True
    asked: list[tuple[str, AclOperation, ResourceType, str]] = field(default_factory=list)

    def authorize(
        self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType, name: str
    ) -> bool:
        self.asked.append((principal, operation, resource_type, name))
        return self.allow


@dataclass
class Server:
    port: int
    zk: KazooClient
    apis: ScramApis
    authorizer: FakeAuthorizer
    write_sessions: list[ZkSession]


@pytest.fixture
def server(zk: KazooClient, zk_hosts: str) -> Iterator[Server]:
    session = ZkSession(zk_hosts, name="scram-test")
    session.start()
    writer = ZkSession(zk_hosts, name="scram-test-controller")
    writer.start()
    ensure_persistent_paths(session)
    zk.create("/controller", CONTROLLER, ephemeral=True)
    handed_out: list[ZkSession] = []

    def write_session() -> ZkSession:
        handed_out.append(writer)
        return writer

    authorizer = FakeAuthorizer()
    cache = Cache()
    view = NodeView(
        broker_id=1,
        cluster_id="cluster",
        cache=cache,
        controller=None,
        default_partitions=1,
        default_replication_factor=1,
        authz=Authz(authorizer),
        write_session=write_session,
    )
    apis = ScramApis(view, session)
    handlers = {**Apis(view).handlers(), **apis.handlers()}
    runtime = WireRuntime(handlers, SUPPORTED, max_frame=1 << 20)
    port = runtime.start([EndPoint("PLAINTEXT", "127.0.0.1", 0, "PLAINTEXT")])[0].port
    # Metadata must name this listener for a real client to find its controller.
    registration = BrokerRegistration((EndPoint("PLAINTEXT", "127.0.0.1", port, "PLAINTEXT"),), 1)
    broker = SimpleNamespace(broker_id=1, registration=registration, epoch=1)
    cache.current = SimpleNamespace(topics={}, brokers={1: broker}, controller_id=1)
    try:
        yield Server(port, zk, apis, authorizer, handed_out)
    finally:
        runtime.stop()
        writer.close()
        session.close()


def mod(key: int) -> Any:
    return sys.modules[load_request_schema(key, 0).__module__]


SALT = b"salt"
Upsert = tuple[str, int, int, bytes, bytes]


def upsert(
    user: str, mechanism: int = SHA256, iterations: int = 4096, password: str = "pw", salt: bytes = SALT
) -> Upsert:
    """An upsertion as a client sends it: the password already salted with ``salt``."""
    if not 1 <= iterations <= 16384:  # refused before use anyway; do not spend minutes on PBKDF2
        return (user, mechanism, iterations, salt, b"saltedPassword")
    name = NAMES.get(mechanism, "SCRAM-SHA-256")
    return (user, mechanism, iterations, salt, salted_password(name, password, salt, iterations))


def alter(
    port: int, upsertions: list[Upsert] | None = None, deletions: list[tuple[str, int]] | None = None
) -> list[tuple[str, int, Any]]:
    m = mod(51)
    body = call(
        port,
        51,
        0,
        upsertions=tuple(
            m.ScramCredentialUpsertion(name=n, mechanism=mech, iterations=i, salt=s, salted_password=p)
            for n, mech, i, s, p in upsertions or ()
        ),
        deletions=tuple(m.ScramCredentialDeletion(name=n, mechanism=mech) for n, mech in deletions or ()),
    )
    return [(r.user, int(r.error_code.value), r.error_message) for r in body.results]


def describe(port: int, users: list[str] | None) -> Any:
    m = mod(50)
    return call(port, 50, 0, users=None if users is None else tuple(m.UserName(name=u) for u in users))


def described(port: int, users: list[str] | None) -> list[tuple[str, int, Any, list[tuple[int, int]]]]:
    body = describe(port, users)
    assert (int(body.error_code.value), body.error_message) == (NONE, None)
    return [
        (
            r.user,
            int(r.error_code.value),
            r.error_message,
            [(int(c.mechanism), int(c.iterations)) for c in r.credential_infos],
        )
        for r in body.results
    ]


def config(zk: KazooClient, user: str) -> dict[str, str]:
    data = zk.get(f"/config/users/{sanitize(user)}")[0]
    parsed: dict[str, Any] = orjson.loads(data)
    assert parsed["version"] == 1
    out: dict[str, str] = parsed["config"]
    return out


def changes(zk: KazooClient) -> list[str]:
    return [
        orjson.loads(zk.get(f"/config/changes/{c}")[0])["entity_path"]
        for c in sorted(zk.get_children("/config/changes"))
    ]


def authenticates(credential: ScramCredential, mechanism: str, user: str, password: str) -> bool:
    """A full SCRAM exchange of ScramClient against ScramServer holding ``credential``."""
    server = ScramServer(mechanism, lambda name: credential if name == user else None)
    client = ScramClient(mechanism, user, password)
    try:
        server_first = server.evaluate(client.first())
        server_final = server.evaluate(client.final(server_first))
        client.verify(server_final)
    except SaslAuthenticationError:
        return False
    return server.complete and server.username == user


# -- the happy path ----------------------------------------------------------------------------------------------
def test_upsert_then_describe(server: Server) -> None:
    port, zk = server.port, server.zk
    assert alter(port, [upsert("alice"), upsert("bob", SHA512, 8192, password="bob-pw")]) == [
        ("alice", NONE, None),
        ("bob", NONE, None),
    ]
    assert described(port, ["alice"]) == [("alice", NONE, None, [(SHA256, 4096)])]
    assert described(port, ["bob", "alice"]) == [
        ("bob", NONE, None, [(SHA512, 8192)]),
        ("alice", NONE, None, [(SHA256, 4096)]),
    ]
    # a second mechanism for alice, and a new iteration count for bob: both reported, SHA-256 first
    assert alter(port, [upsert("alice", SHA512, 16384), upsert("bob", SHA512, 4096)]) == [
        ("alice", NONE, None),
        ("bob", NONE, None),
    ]
    assert described(port, ["alice"]) == [("alice", NONE, None, [(SHA256, 4096), (SHA512, 16384)])]
    assert (
        described(port, None)
        == described(port, [])
        == [
            ("alice", NONE, None, [(SHA256, 4096), (SHA512, 16384)]),
            ("bob", NONE, None, [(SHA512, 4096)]),
        ]
    )
    assert changes(zk) == ["users/alice", "users/bob", "users/alice", "users/bob"]
    assert server.write_sessions, "writes go through the node's write session"


def test_stored_credential_authenticates(server: Server) -> None:
    port, zk = server.port, server.zk
    assert alter(port, [upsert("alice", password="secret"), upsert("alice", SHA512, 5000, password="other")]) == [
        ("alice", NONE, None)
    ]
    stored = config(zk, "alice")
    assert set(stored) == {"SCRAM-SHA-256", "SCRAM-SHA-512"}
    sha256 = credential_from_string(stored["SCRAM-SHA-256"])
    assert sha256.salt == SALT and sha256.iterations == 4096
    assert stored["SCRAM-SHA-256"].startswith("salt=c2FsdA==,stored_key=") and stored["SCRAM-SHA-256"].endswith(
        ",iterations=4096"
    )
    assert authenticates(sha256, "SCRAM-SHA-256", "alice", "secret")
    assert not authenticates(sha256, "SCRAM-SHA-256", "alice", "wrong")
    sha512 = credential_from_string(stored["SCRAM-SHA-512"])
    assert sha512.iterations == 5000 and authenticates(sha512, "SCRAM-SHA-512", "alice", "other")


def test_quota_keys_survive_upsert_and_delete(server: Server) -> None:
    port, zk = server.port, server.zk
    zk.create("/config/users/carol", b'{"version":1,"config":{"producer_byte_rate":"1024"}}')
    assert alter(port, [upsert("carol")]) == [("carol", NONE, None)]
    assert set(config(zk, "carol")) == {"producer_byte_rate", "SCRAM-SHA-256"}
    assert config(zk, "carol")["producer_byte_rate"] == "1024"
    assert alter(port, deletions=[("carol", SHA256)]) == [("carol", NONE, None)]
    assert config(zk, "carol") == {"producer_byte_rate": "1024"}
    # a user whose node has a child keeps an empty config node; a lone one is removed (tryCleanQuotaNodes)
    zk.create("/config/users/erin/clients/app", b'{"version":1,"config":{"consumer_byte_rate":"1"}}', makepath=True)
    assert alter(port, [upsert("erin"), upsert("dave")]) == [("erin", NONE, None), ("dave", NONE, None)]
    assert alter(port, deletions=[("erin", SHA256), ("dave", SHA256)]) == [("erin", NONE, None), ("dave", NONE, None)]
    assert zk.get("/config/users/erin")[0] == b'{"version":1,"config":{}}'
    assert zk.exists("/config/users/dave") is None
    assert changes(zk) == ["users/carol"] * 2 + ["users/erin", "users/dave"] * 2
    # only users with credentials are listed
    assert described(port, None) == []


def test_concurrent_quota_write_is_kept(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    """A quota written between our read and our write makes the compare-and-set fail; the retry keeps it."""
    port, zk = server.port, server.zk
    zk.create("/config/users/frank", b'{"version":1,"config":{"producer_byte_rate":"1"}}')
    original = scram_store.commit_user_config
    writes: list[str] = []

    def racing_write(session: Any, sanitized: str, *args: Any, **kwargs: Any) -> None:
        if not writes:  # another writer gets in between our read and our write
            zk.set("/config/users/frank", b'{"version":1,"config":{"producer_byte_rate":"2"}}')
        writes.append(sanitized)
        original(session, sanitized, *args, **kwargs)

    monkeypatch.setattr(scram_store, "commit_user_config", racing_write)
    assert alter(port, [upsert("frank")]) == [("frank", NONE, None)]
    assert len(writes) == 2
    assert config(zk, "frank")["producer_byte_rate"] == "2" and "SCRAM-SHA-256" in config(zk, "frank")


def test_sanitized_user_names(server: Server) -> None:
    port, zk = server.port, server.zk
    user = "CN=a b*,O=x/y"
    assert alter(port, [upsert(user)]) == [(user, NONE, None)]
    assert zk.get_children("/config/users") == [sanitize(user)] == ["CN%3Da%20b%2A%2CO%3Dx%2Fy"]
    assert changes(zk) == [f"users/{sanitize(user)}"]
    assert described(port, None) == [(user, NONE, None, [(SHA256, 4096)])]
    assert described(port, [user]) == [(user, NONE, None, [(SHA256, 4096)])]


# -- Kafka's errors --------------------------------------------------------------------------------------------
def test_alter_nothing(server: Server) -> None:
    assert alter(server.port) == []
    assert changes(server.zk) == []


def test_alter_empty_user(server: Server) -> None:
    expected = [("", UNACCEPTABLE_CREDENTIAL, "Username must not be empty")]
    assert alter(server.port, deletions=[("", SHA256)]) == expected
    assert alter(server.port, [upsert("")]) == expected
    assert alter(server.port, [upsert("")], [("", SHA256), ("", SHA256)]) == expected
    assert server.zk.get_children("/config/users") == [] and changes(server.zk) == []


def test_alter_unknown_mechanism(server: Server) -> None:
    """AlterUserScramCredentialsRequestTest.testAlterUnknownMechanism: 5 users, all refused."""
    results = alter(
        server.port,
        [
            upsert("user4", UNKNOWN, 8192),
            upsert("user4", SHA256, 8192),
            upsert("user5", 10, 8192),
            upsert("user6", UNKNOWN, 8192),
            upsert("user7", -1, 8192),
        ],
        [("user1", UNKNOWN), ("user1", SHA256), ("user2", 10)],
    )
    assert sorted(results) == [
        (u, UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")
        for u in ("user1", "user2", "user4", "user5", "user6", "user7")
    ]
    assert server.zk.get_children("/config/users") == []


def test_alter_iteration_bounds(server: Server) -> None:
    results = alter(
        server.port,
        [
            upsert("few", iterations=1),
            upsert("few512", SHA512, 4095),
            upsert("many", iterations=16385),
            upsert("max", SHA512, 2**31 - 1),
            upsert("low", iterations=4096),
            upsert("high", SHA512, 16384),
        ],
    )
    assert results == [
        ("few", UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
        ("few512", UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
        ("many", UNACCEPTABLE_CREDENTIAL, "Too many iterations"),
        ("max", UNACCEPTABLE_CREDENTIAL, "Too many iterations"),
        ("low", NONE, None),
        ("high", NONE, None),
    ]
    assert sorted(server.zk.get_children("/config/users")) == ["high", "low"]


def test_illegal_request_fails_the_whole_user(server: Server) -> None:
    """One illegal alteration of a user discards the user's legal ones; an upsertion's verdict wins."""
    results = alter(server.port, [upsert("u", iterations=1), upsert("v", SHA512)], [("u", 9), ("v", SHA256)])
    assert results == [
        ("u", UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
        ("v", RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"),
    ]
    assert server.zk.get_children("/config/users") == []


def test_alter_same_thing_twice(server: Server) -> None:
    """AlterUserScramCredentialsRequestTest.testAlterSameThingTwice."""
    port = server.port
    assert alter(port, [upsert("user1"), upsert("user2")]) == [("user1", NONE, None), ("user2", NONE, None)]
    dup = "A user credential cannot be altered twice in the same request"
    assert alter(port, [upsert("user2"), upsert("user2")], [("user1", SHA256), ("user1", SHA256)]) == [
        ("user2", DUPLICATE_RESOURCE, dup),
        ("user1", DUPLICATE_RESOURCE, dup),
    ]
    assert alter(port, [upsert("user1"), upsert("user2")], [("user1", SHA256), ("user2", SHA256)]) == [
        ("user1", DUPLICATE_RESOURCE, dup),
        ("user2", DUPLICATE_RESOURCE, dup),
    ]
    # different mechanisms of one user in one request are fine: delete one, add the other
    assert alter(port, [upsert("user1", SHA512)], [("user1", SHA256)]) == [("user1", NONE, None)]
    assert set(config(server.zk, "user1")) == {"SCRAM-SHA-512"}


def test_delete_something_that_does_not_exist(server: Server) -> None:
    port, zk = server.port, server.zk
    missing = "Attempt to delete a user credential that does not exist"
    assert alter(port, deletions=[("user1", SHA256)]) == [("user1", RESOURCE_NOT_FOUND, missing)]
    assert alter(port, [upsert("user2")]) == [("user2", NONE, None)]
    # the user exists but not with this mechanism; the upsertion for the same user is not applied
    assert alter(port, [upsert("user2", SHA256, 8192)], [("user2", SHA512)]) == [("user2", RESOURCE_NOT_FOUND, missing)]
    assert credential_from_string(config(zk, "user2")["SCRAM-SHA-256"]).iterations == 4096
    assert changes(zk) == ["users/user2"]


def test_underivable_credential_fails_every_user(server: Server) -> None:
    """Kafka derives all users' credentials inside each user's try: one empty salted password fails them all."""
    port, zk = server.port, server.zk
    bad = ("bad", SHA256, 4096, SALT, b"")
    assert alter(port, [upsert("good"), bad]) == [
        ("good", UNKNOWN_SERVER_ERROR, SERVER_ERROR_TEXT),
        ("bad", UNKNOWN_SERVER_ERROR, SERVER_ERROR_TEXT),
    ]
    assert zk.get_children("/config/users") == [] and changes(zk) == []
    # an empty salt is fine, as in Kafka
    assert alter(port, [upsert("nosalt", salt=b"")]) == [("nosalt", NONE, None)]
    assert credential_from_string(config(zk, "nosalt")["SCRAM-SHA-256"]).salt == b""


def test_no_controller_is_stale_controller_epoch(server: Server) -> None:
    port, zk = server.port, server.zk
    zk.delete("/controller")
    assert alter(port, [upsert("x")]) == [("x", STALE_CONTROLLER_EPOCH, "The controller moved to another broker.")]
    assert zk.get_children("/config/users") == [] and changes(zk) == []


def test_stored_unknown_key_fails_validation(server: Server) -> None:
    """DynamicConfig.User.validate rejects the whole config (IllegalArgumentException -> UNKNOWN_SERVER_ERROR)."""
    port, zk = server.port, server.zk
    zk.create("/config/users/odd", b'{"version":1,"config":{"no.such.key":"1"}}')
    zk.create("/config/users/odd2", b'{"version":1,"config":{"producer_byte_rate":"1.5"}}')
    assert alter(port, [upsert("odd"), upsert("odd2"), upsert("fine")]) == [
        ("odd", UNKNOWN_SERVER_ERROR, SERVER_ERROR_TEXT),
        ("odd2", UNKNOWN_SERVER_ERROR, SERVER_ERROR_TEXT),
        ("fine", NONE, None),
    ]
    assert changes(zk) == ["users/fine"]


def test_corrupt_user_znode_fails_the_alter_request(server: Server) -> None:
    """A failed read escapes ZkAdminManager: getErrorResponse, every user once, sorted, no message."""
    server.zk.create("/config/users/broken", b"not json")
    assert alter(server.port, [upsert("zed"), upsert("broken")], [("amy", SHA256), ("zed", SHA512)]) == [
        ("amy", UNKNOWN_SERVER_ERROR, None),
        ("broken", UNKNOWN_SERVER_ERROR, None),
        ("zed", UNKNOWN_SERVER_ERROR, None),
    ]


def test_describe_nothing(server: Server) -> None:
    assert described(server.port, []) == []
    assert described(server.port, None) == []


def test_describe_errors(server: Server) -> None:
    port, zk = server.port, server.zk
    assert alter(port, [upsert("user1")]) == [("user1", NONE, None)]
    zk.create("/config/users/quota-only", b'{"version":1,"config":{"producer_byte_rate":"1"}}')
    dup = "Cannot describe SCRAM credentials for the same user twice in a single request: user2"
    assert described(port, ["user2", "user1", "user2", "", "unknownUser", "quota-only", ""]) == [
        ("user2", DUPLICATE_RESOURCE, dup, []),
        ("user1", NONE, None, [(SHA256, 4096)]),
        ("", RESOURCE_NOT_FOUND, "Username must not be empty", []),
        (
            "unknownUser",
            RESOURCE_NOT_FOUND,
            "Attempt to describe a user credential that does not exist: unknownUser",
            [],
        ),
        ("quota-only", RESOURCE_NOT_FOUND, "Attempt to describe a user credential that does not exist: quota-only", []),
    ]
    # describe-all lists only users with a credential
    assert described(port, None) == [("user1", NONE, None, [(SHA256, 4096)])]


def test_describe_bad_stored_credential(server: Server) -> None:
    port, zk = server.port, server.zk
    assert alter(port, [upsert("good")]) == [("good", NONE, None)]
    zk.create("/config/users/bad", b'{"version":1,"config":{"SCRAM-SHA-512":"salt=x"}}')
    assert described(port, ["bad", "good"]) == [
        ("bad", UNKNOWN_SERVER_ERROR, SERVER_ERROR_TEXT, []),
        ("good", NONE, None, [(SHA256, 4096)]),
    ]
    assert described(port, None)[0] == ("bad", UNKNOWN_SERVER_ERROR, SERVER_ERROR_TEXT, [])
    # a znode that is not even JSON: the explicit user fails alone, describe-all fails as a whole
    zk.create("/config/users/broken", b"not json")
    assert described(port, ["broken"]) == [("broken", UNKNOWN_SERVER_ERROR, SERVER_ERROR_TEXT, [])]
    body = describe(port, None)
    assert (int(body.error_code.value), body.error_message, body.results) == (
        UNKNOWN_SERVER_ERROR,
        SERVER_ERROR_TEXT,
        (),
    )


# -- authorization ---------------------------------------------------------------------------------------------
def test_unauthorized_principal(server: Server) -> None:
    port, zk = server.port, server.zk
    assert alter(port, [upsert("kept")]) == [("kept", NONE, None)]
    server.authorizer.allow = False
    server.authorizer.asked.clear()
    body = describe(port, ["kept", "other"])
    assert (int(body.error_code.value), body.error_message) == (CLUSTER_AUTHORIZATION_FAILED, None)
    # DescribeUserScramCredentialsRequest.getErrorResponse leaves the user names unset
    assert [(r.user, int(r.error_code.value), r.error_message, r.credential_infos) for r in body.results] == [
        ("", CLUSTER_AUTHORIZATION_FAILED, None, ())
    ] * 2
    body = describe(port, None)
    assert (int(body.error_code.value), body.results) == (CLUSTER_AUTHORIZATION_FAILED, ())
    assert alter(port, [upsert("zed"), upsert("")], [("kept", SHA256), ("amy", SHA256)]) == [
        ("", CLUSTER_AUTHORIZATION_FAILED, None),
        ("amy", CLUSTER_AUTHORIZATION_FAILED, None),
        ("kept", CLUSTER_AUTHORIZATION_FAILED, None),
        ("zed", CLUSTER_AUTHORIZATION_FAILED, None),
    ]
    assert server.authorizer.asked == [
        ("User:ANONYMOUS", AclOperation.DESCRIBE, ResourceType.CLUSTER, "kafka-cluster"),
        ("User:ANONYMOUS", AclOperation.DESCRIBE, ResourceType.CLUSTER, "kafka-cluster"),
        ("User:ANONYMOUS", AclOperation.ALTER, ResourceType.CLUSTER, "kafka-cluster"),
    ]
    assert zk.get_children("/config/users") == ["kept"] and changes(zk) == ["users/kept"]


# -- a real client ---------------------------------------------------------------------------------------------
def test_confluent_kafka_admin_client(server: Server) -> None:
    admin_mod = pytest.importorskip("confluent_kafka.admin")
    admin = admin_mod.AdminClient({"bootstrap.servers": f"127.0.0.1:{server.port}", "socket.timeout.ms": 10000})
    info = admin_mod.ScramCredentialInfo(admin_mod.ScramMechanism.SCRAM_SHA_256, 4096)
    upsertion = admin_mod.UserScramCredentialUpsertion("client-user", info, b"client-secret", b"client-salt")
    futures: dict[str, Any] = admin.alter_user_scram_credentials([upsertion], request_timeout=15)
    assert futures["client-user"].result(timeout=20) is None

    stored = credential_from_string(config(server.zk, "client-user")["SCRAM-SHA-256"])
    assert stored.salt == b"client-salt" and stored.iterations == 4096
    assert authenticates(stored, "SCRAM-SHA-256", "client-user", "client-secret")

    result = admin.describe_user_scram_credentials(["client-user"], request_timeout=15)
    description = result["client-user"].result(timeout=20)
    assert [(c.mechanism, c.iterations) for c in description.scram_credential_infos] == [
        (admin_mod.ScramMechanism.SCRAM_SHA_256, 4096)
    ]
    everything = admin.describe_user_scram_credentials(request_timeout=15).result(timeout=20)
    assert list(everything) == ["client-user"]

    # Kafka's errors reach the client as exceptions
    missing = admin.describe_user_scram_credentials(["nobody"], request_timeout=15)["nobody"]
    with pytest.raises(Exception, match="does not exist"):
        missing.result(timeout=20)
    deletion = admin_mod.UserScramCredentialDeletion("client-user", admin_mod.ScramMechanism.SCRAM_SHA_512)
    with pytest.raises(Exception, match="does not exist"):
        admin.alter_user_scram_credentials([deletion], request_timeout=15)["client-user"].result(timeout=20)

    deletion = admin_mod.UserScramCredentialDeletion("client-user", admin_mod.ScramMechanism.SCRAM_SHA_256)
    assert admin.alter_user_scram_credentials([deletion], request_timeout=15)["client-user"].result(timeout=20) is None
    assert server.zk.exists("/config/users/client-user") is None
    assert changes(server.zk) == ["users/client-user"] * 2
