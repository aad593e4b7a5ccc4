"""Security end to end: SASL/PLAIN and SASL/SCRAM logins, the ACL authorizer and KIP-590 forwarding's Envelope
checks, with real clients (confluent-kafka, kafka-python) and raw kio requests over real sockets.

Two stacks: the main one (both listeners SASL_PLAINTEXT, ``User:admin`` and ``User:broker`` super users) for
everything but the last test, which needs brokers whose inter-broker principal lacks CLUSTER_ACTION.
"""

from __future__ import annotations

import contextlib
import datetime
import io
import itertools
import json
import logging
import socket
import struct
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kafka.errors as kafka_errors
import pytest
from confluent_kafka import KafkaError, KafkaException, TopicCollection
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)
from kafka.admin import ACLFilter as KpAclFilter
from kafka.admin import ACLOperation as KpAclOperation
from kafka.admin import ACLPermissionType as KpAclPermissionType
from kafka.admin import ACLResourcePatternType as KpPatternType
from kafka.admin import ConfigResource as KpConfigResource
from kafka.admin import ConfigResourceType, KafkaAdminClient
from kafka.admin import ResourcePatternFilter as KpPatternFilter
from kafka.admin import ResourceType as KpResourceType
from kafka.net.compat import KafkaNetClient
from kafka.protocol.admin import AlterPartitionReassignmentsRequest, ListPartitionReassignmentsRequest
from kafka.structs import TopicPartition
from kazoo.client import KazooClient
from kio.index import load_request_schema, load_response_schema
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i8, i16, i32, i32Timedelta

from controller.devstack.stack import Stack
from controller.logtags import UNEXPECTED
from controller.security.principal import KafkaPrincipal, serialize
from controller.security.scram import credential_from_string, credential_to_string, make_credential
from testing.stack import controller_id, listener_ports, metric_sum, metrics_url
from tests.e2e.conftest import RunningStack
from tests.integration.cluster import wait_for
from zkmodel.configs import EntityConfig, sanitize

pytestmark = pytest.mark.e2e

USERS = {"broker": "broker-secret", "admin": "admin-secret", "alice": "alice-secret"}
JAAS = (
    'org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" password="broker-secret" '
    + " ".join(f'user_{name}="{password}"' for name, password in USERS.items())
    + ";"
)
SASL = {
    "listeners": "INTERNAL://127.0.0.1:0,EXTERNAL://127.0.0.1:0",
    "listener.security.protocol.map": "INTERNAL:SASL_PLAINTEXT,EXTERNAL:SASL_PLAINTEXT",
    "inter.broker.listener.name": "INTERNAL",
    "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
    "sasl.mechanism.inter.broker.protocol": "PLAIN",
    "listener.name.internal.plain.sasl.jaas.config": JAAS,
    "listener.name.external.plain.sasl.jaas.config": JAAS,
    "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
}
#: The conftest ``stack`` fixture's overrides: the broker's own principal is a super user, as usual.
STACK_OVERRIDES = {**SASL, "super.users": "User:admin;User:broker"}
ENABLED_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")

SASL_FAILURES = "bridgekeeper_sasl_authentication_failures_total"
FORWARDED = "bridgekeeper_forwarding_client_requests_total"
FORWARDING_AUTH_FAILURES = "bridgekeeper_forwarding_authorization_failures_total"

# Kafka error codes the tests expect.
NONE, UNKNOWN_SERVER_ERROR, UNKNOWN_TOPIC_OR_PARTITION = 0, -1, 3
TOPIC_AUTHORIZATION_FAILED, CLUSTER_AUTHORIZATION_FAILED = 29, 31
UNSUPPORTED_SASL_MECHANISM, UNSUPPORTED_VERSION, NOT_CONTROLLER, INVALID_REQUEST = 33, 35, 41, 42
SASL_AUTHENTICATION_FAILED, PRINCIPAL_DESERIALIZATION_FAILURE = 58, 97

#: Config resource types (DescribeConfigs / IncrementalAlterConfigs) and ACL enum values on the wire.
TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4
ACL_TOPIC, ACL_LITERAL, ACL_READ, ACL_ALLOW = 2, 3, 3, 3

LOCALHOST = b"\x7f\x00\x00\x01"
THIRTY_SECONDS = i32Timedelta.parse(datetime.timedelta(seconds=30))
_quiet_librdkafka = logging.getLogger("tests.e2e.test_security.librdkafka")
_quiet_librdkafka.addHandler(logging.NullHandler())
_quiet_librdkafka.propagate = False


# --- raw kio requests ------------------------------------------------------------------------------------------
def encode_request(api_key: int, version: int, body: Any, correlation_id: int, client_id: str = "sec-test") -> bytes:
    """A whole request (header + body) without the size prefix: what goes on the wire, or inside an Envelope."""
    header_cls = load_request_schema(api_key, version).__header_schema__
    buf = io.BytesIO()
    header: dict[str, Any] = {
        "request_api_key": i16(api_key),
        "request_api_version": i16(version),
        "correlation_id": i32(correlation_id),
    }
    if "client_id" in header_cls.__dataclass_fields__:
        header["client_id"] = client_id
    entity_writer(header_cls)(buf, header_cls(**header))
    entity_writer(type(body))(buf, body)
    return buf.getvalue()


def decode_response(api_key: int, version: int, data: bytes) -> tuple[int, Any]:
    """(correlation id, body) of a response frame."""
    schema = load_response_schema(api_key, version)
    header, offset = entity_reader(schema.__header_schema__)(data, 0)
    body, _ = entity_reader(schema)(data, offset)
    return int(header.correlation_id), body


class RawConn:
    """One blocking connection speaking kio, authenticated with SASL/PLAIN when a user is given."""

    def __init__(self, port: int, user: str | None = None, password: str | None = None) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=20)
        self._correlation = itertools.count(1)
        if user is not None:
            handshake = self.call(17, 1, req(17, 1, mechanism="PLAIN"))
            assert handshake.error_code == ErrorCode.none
            token = b"\0" + user.encode() + b"\0" + (password if password is not None else USERS[user]).encode()
            auth = self.call(36, 2, req(36, 2, auth_bytes=token))
            assert auth.error_code == ErrorCode.none, auth.error_message

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RawConn:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def exchange(self, payload: bytes) -> bytes | None:
        """Send one frame; the response frame, or None when the server closed the connection instead."""
        try:
            self.sock.sendall(struct.pack(">i", len(payload)) + payload)
            size = self._read(4)
            if size is None:
                return None
            return self._read(struct.unpack(">i", size)[0])
        except (ConnectionResetError, BrokenPipeError):
            return None

    def _read(self, n: int) -> bytes | None:
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                return None
            data += chunk
        return data

    def call(self, api_key: int, version: int, body: Any) -> Any:
        correlation = next(self._correlation)
        reply = self.exchange(encode_request(api_key, version, body, correlation))
        assert reply is not None, f"the server closed the connection instead of answering API {api_key}"
        got, decoded = decode_response(api_key, version, reply)
        assert got == correlation
        return decoded

    def call_or_eof(self, api_key: int, version: int, body: Any) -> bytes | None:
        return self.exchange(encode_request(api_key, version, body, next(self._correlation)))


def req(api_key: int, version: int, **fields: Any) -> Any:
    return load_request_schema(api_key, version)(**fields)


def entity_cls(api_key: int, version: int, name: str) -> Any:
    module = __import__(load_request_schema(api_key, version).__module__, fromlist=[name])
    return getattr(module, name)


def envelope(inner: bytes, principal: bytes | None, host: bytes = LOCALHOST) -> Any:
    return req(58, 0, request_data=inner, request_principal=principal, client_host_address=host)


def as_principal(name: str) -> bytes:
    return serialize(KafkaPrincipal("User", name))


def incremental_alter(resource_type: int, name: str, key: str, value: str) -> Any:
    config = entity_cls(44, 1, "AlterableConfig")(name=key, config_operation=i8(0), value=value)
    resource = entity_cls(44, 1, "AlterConfigsResource")(
        resource_type=i8(resource_type), resource_name=name, configs=(config,)
    )
    return req(44, 1, resources=(resource,), validate_only=False)


def create_topics_request(*names: str) -> Any:
    topic = entity_cls(19, 5, "CreatableTopic")
    topics = tuple(
        topic(name=n, num_partitions=i32(1), replication_factor=i16(1), assignments=(), configs=()) for n in names
    )
    return req(19, 5, topics=topics, validate_only=False)


def create_acls_request(principal: str, topic: str) -> Any:
    creation = entity_cls(30, 3, "AclCreation")(
        resource_type=i8(ACL_TOPIC),
        resource_name=topic,
        resource_pattern_type=i8(ACL_LITERAL),
        principal=principal,
        host="*",
        operation=i8(ACL_READ),
        permission_type=i8(ACL_ALLOW),
    )
    return req(30, 3, creations=(creation,))


def metadata_request(*names: str) -> Any:
    topic = entity_cls(3, 12, "MetadataRequestTopic")
    return req(
        3,
        12,
        topics=tuple(topic(name=n, topic_id=None) for n in names),
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )


# --- clients -----------------------------------------------------------------------------------------------------
def ck_admin(
    bootstrap: str,
    user: str,
    password: str | None = None,
    mechanism: str = "PLAIN",
    options: dict[str, Any] | None = None,
) -> Any:
    config: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanisms": mechanism,
        "sasl.username": user,
        "sasl.password": password if password is not None else USERS[user],
        "socket.timeout.ms": 15000,
        "logger": _quiet_librdkafka,
        **(options or {}),
    }
    return AdminClient(config)


def ck_login_errors(
    bootstrap: str, user: str, password: str, mechanism: str, options: dict[str, Any] | None = None
) -> list[str]:
    """Log in with confluent-kafka and wait for the _AUTHENTICATION errors librdkafka reports (it keeps retrying in
    the background, so they come through ``error_cb`` rather than as a call's exception)."""
    errors: list[Any] = []
    config = {"error_cb": errors.append, "reconnect.backoff.ms": 5000, "reconnect.backoff.max.ms": 10000}
    admin = ck_admin(bootstrap, user, password, mechanism, {**config, **(options or {})})

    def reported() -> bool:
        admin.poll(0.1)
        return bool(auth_errors(errors))

    wait_for(reported, 30, f"a SASL/{mechanism} authentication error")
    return auth_errors(errors)


@contextlib.contextmanager
def kp_admin(bootstrap: list[str], user: str, password: str | None = None, mechanism: str = "PLAIN") -> Iterator[Any]:
    client = KafkaAdminClient(
        bootstrap_servers=bootstrap,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism=mechanism,
        sasl_plain_username=user,
        sasl_plain_password=password if password is not None else USERS[user],
        request_timeout_ms=30000,
    )
    try:
        yield client
    finally:
        client.close()


def ck_error(future: Any) -> int:
    """The Kafka error code a confluent-kafka admin future ends with (0 for success)."""
    try:
        future.result(timeout=30)
    except KafkaException as exc:
        return int(exc.args[0].code())
    return NONE


def auth_errors(errors: list[Any]) -> list[str]:
    return [str(e.str()) for e in errors if e.code() == KafkaError._AUTHENTICATION]


@dataclass
class Cluster:
    """The main stack as the tests see it: per-node listener ports and metrics, clients, ACL helpers."""

    running: RunningStack
    ports: dict[int, dict[str, int]]
    metrics: dict[int, str]
    probes: dict[int, RawConn] = field(default_factory=dict)
    _markers: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    _admin: Any = None

    @property
    def zk(self) -> KazooClient:
        return self.running.zk

    def bootstrap(self, *nodes: int) -> str:
        return ",".join(f"127.0.0.1:{self.ports[n]['EXTERNAL']}" for n in nodes or sorted(self.ports))

    @property
    def controller(self) -> int:
        found = controller_id(self.zk)
        assert found is not None
        return found

    def others(self) -> list[int]:
        active = self.controller
        return [n for n in sorted(self.ports) if n != active]

    def external(self, node: int, user: str) -> RawConn:
        return RawConn(self.ports[node]["EXTERNAL"], user)

    def internal(self, node: int, user: str) -> RawConn:
        return RawConn(self.ports[node]["INTERNAL"], user)

    def admin(self) -> Any:
        """One super-user client for the module (an AdminClient must outlive the futures it hands out)."""
        if self._admin is None:
            self._admin = ck_admin(self.bootstrap(), "admin")
        return self._admin

    def create_topics(self, *names: str) -> None:
        futures = self.admin().create_topics([NewTopic(n, 1, 1) for n in names], operation_timeout=30)
        for future in futures.values():
            future.result(timeout=30)

    def grant(self, *bindings: AclBinding) -> None:
        """Create ACLs as the super user, then wait until every node's ACL cache has them."""
        for future in self.admin().create_acls(list(bindings), request_timeout=30).values():
            future.result(timeout=30)
        self.sync_acls()

    def sync_acls(self) -> None:
        """ACL caches follow ZooKeeper's change notifications in order (literal and prefixed ones separately), so
        once a node honours marker ACLs created after everything else, it honours everything else too."""
        n = next(self._markers)
        literal, prefix = f"sec-marker-{n}", f"sec-marker-p{n}-"
        markers = [
            AclBinding(
                ResourceType.TOPIC,
                literal,
                ResourcePatternType.LITERAL,
                "User:alice",
                "*",
                AclOperation.DESCRIBE,
                AclPermissionType.ALLOW,
            ),
            AclBinding(
                ResourceType.TOPIC,
                prefix,
                ResourcePatternType.PREFIXED,
                "User:alice",
                "*",
                AclOperation.DESCRIBE,
                AclPermissionType.ALLOW,
            ),
        ]
        for future in self.admin().create_acls(markers, request_timeout=30).values():
            future.result(timeout=30)
        for node in sorted(self.ports):
            probe = self.probes.setdefault(node, self.external(node, "alice"))

            def visible(probe: RawConn = probe) -> bool:
                topics = probe.call(3, 12, metadata_request(literal, prefix + "x")).topics
                return all(int(t.error_code) == UNKNOWN_TOPIC_OR_PARTITION for t in topics)

            wait_for(visible, 30, f"node {node} to load the new ACLs")

    def sasl_failures(self, node: int, listener: str = "EXTERNAL") -> float:
        return metric_sum(self.metrics[node], SASL_FAILURES, listener=listener)

    def forwarded(self, node: int) -> float:
        return metric_sum(self.metrics[node], FORWARDED)


def allow(
    name: str,
    operation: Any,
    pattern: Any = ResourcePatternType.LITERAL,
    user: str = "alice",
    permission: Any = AclPermissionType.ALLOW,
) -> AclBinding:
    return AclBinding(ResourceType.TOPIC, name, pattern, f"User:{user}", "*", operation, permission)


@pytest.fixture(scope="module")
def cluster(stack: RunningStack) -> Iterator[Cluster]:
    nodes = stack.stack.nodes
    c = Cluster(
        stack,
        ports={n.broker_id: listener_ports(n.ready) for n in nodes},
        metrics={n.broker_id: metrics_url(n.ready) for n in nodes},
    )
    assert all(set(p) == {"INTERNAL", "EXTERNAL"} for p in c.ports.values())
    try:
        yield c
    finally:
        for probe in c.probes.values():
            probe.close()


@pytest.fixture(scope="module")
def zed(cluster: Cluster) -> str:
    """User zed with SCRAM-SHA-256 and -512 credentials written to ZooKeeper as Kafka's ConfigCommand writes
    them (``/config/users/<sanitized user>``); nodes read them at each login."""
    config = {
        mechanism: credential_to_string(make_credential(mechanism, "zed-secret", 4096))
        for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512")
    }
    cluster.zk.ensure_path("/config/users")
    cluster.zk.create(f"/config/users/{sanitize('zed')}", EntityConfig(config).encode())
    return "zed"


# --- 1. logins -----------------------------------------------------------------------------------------------------
LOGINS = [
    ("PLAIN", "admin", "admin-secret"),
    ("PLAIN", "alice", "alice-secret"),
    ("SCRAM-SHA-256", "zed", "zed-secret"),
    ("SCRAM-SHA-512", "zed", "zed-secret"),
]


def test_logins_with_confluent_kafka(cluster: Cluster, zed: str) -> None:
    external = {n: p["EXTERNAL"] for n, p in cluster.ports.items()}
    for mechanism, user, password in LOGINS:
        admin = ck_admin(cluster.bootstrap(), user, password, mechanism)
        metadata = admin.list_topics(timeout=30)
        # Brokers are advertised on the listener the client came in on.
        assert {b.id: b.port for b in metadata.brokers.values()} == external, (mechanism, user)
        assert metadata.controller_id == cluster.controller
        described = admin.describe_cluster(request_timeout=30).result(timeout=30)
        assert described.controller.id == cluster.controller
        assert {n.port for n in described.nodes} == set(external.values())


def test_logins_with_kafka_python(cluster: Cluster, zed: str) -> None:
    external = {n: p["EXTERNAL"] for n, p in cluster.ports.items()}
    for mechanism, user, password in LOGINS:
        with kp_admin(cluster.bootstrap().split(","), user, password, mechanism) as admin:
            described = admin.describe_cluster()
            assert {b["broker_id"]: b["port"] for b in described["brokers"]} == external, (mechanism, user)
            assert described["controller_id"] == cluster.controller
            assert isinstance(admin.list_topics(), list)


BAD_LOGINS = [
    ("PLAIN", "admin", "wrong", "Authentication failed: Invalid username or password"),
    ("PLAIN", "mallory", "anything", "Authentication failed: Invalid username or password"),
    (
        "SCRAM-SHA-256",
        "zed",
        "wrong",
        "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256",
    ),
    (
        "SCRAM-SHA-512",
        "nobody",
        "wrong",
        "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512",
    ),
]


def test_bad_credentials_with_confluent_kafka(cluster: Cluster, zed: str) -> None:
    node = cluster.others()[0]
    for mechanism, user, password, message in BAD_LOGINS:
        before = cluster.sasl_failures(node)
        errors = ck_login_errors(cluster.bootstrap(node), user, password, mechanism)
        assert all(message in text for text in errors), (mechanism, errors)
        assert cluster.sasl_failures(node) > before, mechanism
    assert cluster.sasl_failures(node, "INTERNAL") == 0
    # What the application sees: calls fail.
    with pytest.raises(KafkaException):
        ck_admin(cluster.bootstrap(node), "admin", "wrong").list_topics(timeout=1)


def test_bad_credentials_with_kafka_python(cluster: Cluster, zed: str) -> None:
    """A kafka-python connection with bad credentials never comes up, and the node counts one failed authentication
    per attempt. kafka-python raises SaslAuthenticationFailedError (with the broker's message) when it reads the
    failure response; but its transport discards bytes that arrive together with the close that follows them
    (Kafka closes right after that response too), so an attempt usually ends as "socket disconnected" instead.
    The response itself is checked on the wire in test_bad_credentials_on_the_wire."""
    node = cluster.others()[-1]
    for mechanism, user, password, message in BAD_LOGINS:
        before = cluster.sasl_failures(node)
        outcomes: list[BaseException] = []
        for _ in range(3):
            client = KafkaNetClient(
                bootstrap_servers=[cluster.bootstrap(node)],
                security_protocol="SASL_PLAINTEXT",
                sasl_mechanism=mechanism,
                sasl_plain_username=user,
                sasl_plain_password=password,
            )
            try:
                conn = client._manager.get_connection(client.cluster.bootstrap_brokers()[0].node_id)
                client._net.poll(timeout_ms=20000, future=conn.init_future)
                assert conn.init_future.is_done and not conn.init_future.succeeded(), mechanism
                assert not conn.connected
                outcomes.append(conn.init_future.exception)
            finally:
                client.close()
        for outcome in outcomes:
            if isinstance(outcome, kafka_errors.SaslAuthenticationFailedError):
                assert message in str(outcome), outcome
            else:
                assert isinstance(outcome, kafka_errors.KafkaConnectionError), outcome
                assert "socket disconnected" in str(outcome)
        expected = before + len(outcomes)

        def counted(expected: float = expected) -> bool:
            return cluster.sasl_failures(node) == expected

        wait_for(counted, 10, "the failure count")

    # The admin client never gets past bootstrapping.
    with pytest.raises(kafka_errors.KafkaTimeoutError, match="Unable to bootstrap"):
        KafkaAdminClient(
            bootstrap_servers=[cluster.bootstrap(node)],
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="PLAIN",
            sasl_plain_username="admin",
            sasl_plain_password="wrong",
            bootstrap_timeout_ms=2000,
        )


def test_bad_credentials_on_the_wire(cluster: Cluster) -> None:
    """Kafka's SaslServerAuthenticator: SASL_AUTHENTICATION_FAILED with its message, then the connection closes."""
    node = cluster.controller
    before = cluster.sasl_failures(node)
    conn = RawConn(cluster.ports[node]["EXTERNAL"])
    try:
        assert conn.call(17, 1, req(17, 1, mechanism="PLAIN")).error_code == ErrorCode.none
        reply = conn.call(36, 2, req(36, 2, auth_bytes=b"\0alice\0wrong"))
        assert int(reply.error_code) == SASL_AUTHENTICATION_FAILED
        assert reply.error_message == "Authentication failed: Invalid username or password"
        assert conn.call_or_eof(18, 3, req(18, 3, client_software_name="t", client_software_version="1")) is None
    finally:
        conn.close()
    assert cluster.sasl_failures(node) == before + 1


def test_handshake_v0_then_raw_tokens(cluster: Cluster) -> None:
    """SaslHandshake v0 as pre-1.0 clients use it (and as librdkafka before 2.1, Debian's kcat, needs advertised):
    the tokens then travel raw, one size-prefixed frame each; a bad one closes the connection unanswered."""
    node = cluster.controller
    before = cluster.sasl_failures(node)
    with RawConn(cluster.ports[node]["EXTERNAL"]) as conn:
        assert conn.call(17, 0, req(17, 0, mechanism="PLAIN")).error_code == ErrorCode.none
        assert conn.exchange(b"\0alice\0" + USERS["alice"].encode()) == b""  # PLAIN's empty server token
        versions = conn.call(18, 3, req(18, 3, client_software_name="t", client_software_version="1"))
        assert versions.error_code == ErrorCode.none  # authenticated: requests are served
    with RawConn(cluster.ports[node]["EXTERNAL"]) as conn:
        assert conn.call(17, 0, req(17, 0, mechanism="PLAIN")).error_code == ErrorCode.none
        assert conn.exchange(b"\0alice\0wrong") is None
    assert cluster.sasl_failures(node) == before + 1


def test_unknown_mechanism_is_refused(cluster: Cluster) -> None:
    node = cluster.controller
    with RawConn(cluster.ports[node]["EXTERNAL"]) as conn:
        reply = conn.call(17, 1, req(17, 1, mechanism="GSSAPI"))
        assert int(reply.error_code) == UNSUPPORTED_SASL_MECHANISM
        assert tuple(reply.mechanisms) == ENABLED_MECHANISMS
        assert conn.call_or_eof(17, 1, req(17, 1, mechanism="PLAIN")) is None  # closed after the refusal

    errors = ck_login_errors(
        cluster.bootstrap(node),
        "admin",
        "",
        "OAUTHBEARER",
        {"enable.sasl.oauthbearer.unsecure.jwt": True, "sasl.oauthbearer.config": "principal=admin"},
    )
    assert "Unsupported SASL mechanism" in errors[0]
    assert "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512" in errors[0]


def test_plaintext_client_on_a_sasl_listener_is_disconnected(cluster: Cluster) -> None:
    node = cluster.controller
    with RawConn(cluster.ports[node]["EXTERNAL"]) as conn:
        # ApiVersions is answered before authentication (clients need it to pick the handshake version) ...
        versions = conn.call(18, 3, req(18, 3, client_software_name="t", client_software_version="1"))
        assert versions.error_code == ErrorCode.none
        # ... anything else is "Unexpected Kafka request during SASL handshake": the connection is closed.
        assert conn.call_or_eof(3, 12, metadata_request()) is None
    config: dict[str, Any] = {"bootstrap.servers": cluster.bootstrap(node), "logger": _quiet_librdkafka}
    admin = AdminClient(config)
    with pytest.raises(KafkaException) as info:
        admin.list_topics(timeout=2)
    # librdkafka reports the closed connection, or, when its reconnect backoff outlasts the 2 s, the timeout
    # of the metadata request that connection could never answer (seen once under load).
    assert info.value.args[0].code() in (KafkaError._TRANSPORT, KafkaError._TIMED_OUT)


# --- 2. SCRAM credentials through the admin API ------------------------------------------------------------------
def test_scram_credentials_created_with_alter_user_scram_credentials(cluster: Cluster) -> None:
    admin = cluster.admin()
    upserts = [
        UserScramCredentialUpsertion("carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), b"carol-256"),
        UserScramCredentialUpsertion(
            "carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), b"carol-512", b"some-salt"
        ),
    ]
    for future in admin.alter_user_scram_credentials(upserts, request_timeout=30).values():
        future.result(timeout=30)

    described = admin.describe_user_scram_credentials(["carol"], request_timeout=30)["carol"].result(timeout=30)
    assert {(i.mechanism, i.iterations) for i in described.scram_credential_infos} == {
        (ScramMechanism.SCRAM_SHA_256, 4096),
        (ScramMechanism.SCRAM_SHA_512, 8192),
    }
    stored = json.loads(cluster.zk.get("/config/users/carol")[0])
    assert stored["version"] == 1
    assert credential_from_string(stored["config"]["SCRAM-SHA-256"]).iterations == 4096
    assert credential_from_string(stored["config"]["SCRAM-SHA-512"]).salt == b"some-salt"

    for mechanism, password in (("SCRAM-SHA-256", "carol-256"), ("SCRAM-SHA-512", "carol-512")):
        metadata = ck_admin(cluster.bootstrap(), "carol", password, mechanism).list_topics(timeout=30)
        assert set(metadata.brokers) == set(cluster.ports)
        with kp_admin(cluster.bootstrap().split(","), "carol", password, mechanism) as kp:
            assert kp.describe_cluster()["controller_id"] == cluster.controller

    # Each mechanism has its own credential: the 256 password does not open SCRAM-SHA-512.
    node = cluster.controller
    before = cluster.sasl_failures(node)
    assert ck_login_errors(cluster.bootstrap(node), "carol", "carol-256", "SCRAM-SHA-512")
    assert cluster.sasl_failures(node) > before

    # Altering and describing credentials needs ALTER / DESCRIBE on the cluster.
    alice = ck_admin(cluster.bootstrap(), "alice")
    mine = UserScramCredentialUpsertion("alice", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), b"x")
    assert ck_error(alice.alter_user_scram_credentials([mine], request_timeout=30)["alice"]) == (
        CLUSTER_AUTHORIZATION_FAILED
    )
    # (kafka-python here: librdkafka frees a request-level error string it never allocated and aborts the process
    # on any DescribeUserScramCredentials error response, whoever the broker is.)
    with (
        kp_admin(cluster.bootstrap().split(","), "alice") as kp,
        pytest.raises(kafka_errors.ClusterAuthorizationFailedError),
    ):
        kp.describe_user_scram_credentials(["carol"])
    assert not cluster.zk.exists("/config/users/alice")

    # A deleted credential no longer logs in.
    deletion = UserScramCredentialDeletion("carol", ScramMechanism.SCRAM_SHA_256)
    admin.alter_user_scram_credentials([deletion], request_timeout=30)["carol"].result(timeout=30)
    described = admin.describe_user_scram_credentials(["carol"], request_timeout=30)["carol"].result(timeout=30)
    assert [i.mechanism for i in described.scram_credential_infos] == [ScramMechanism.SCRAM_SHA_512]
    assert ck_login_errors(cluster.bootstrap(node), "carol", "carol-256", "SCRAM-SHA-256")
    with kp_admin(cluster.bootstrap().split(","), "carol", "carol-512", "SCRAM-SHA-512") as kp:  # the other stays
        assert kp.describe_cluster()["controller_id"] == cluster.controller


# --- 3. the ACL authorizer with real clients ---------------------------------------------------------------------
def test_topic_acls_with_confluent_kafka(cluster: Cluster) -> None:
    alice = ck_admin(cluster.bootstrap(), "alice")

    def create(*names: str) -> dict[str, int]:
        futures = alice.create_topics([NewTopic(n, 1, 1) for n in names], operation_timeout=30, request_timeout=30)
        return {name: ck_error(f) for name, f in futures.items()}

    names = ("sec-acl-lit", "sec-acl-pfx-1", "sec-acl-other")
    assert create(*names) == dict.fromkeys(names, TOPIC_AUTHORIZATION_FAILED)
    assert not any(cluster.zk.exists(f"/brokers/topics/{n}") for n in names)

    cluster.grant(
        allow("sec-acl-lit", AclOperation.CREATE),
        allow("sec-acl-pfx-", AclOperation.CREATE, ResourcePatternType.PREFIXED),
    )
    assert create(*names) == {"sec-acl-lit": NONE, "sec-acl-pfx-1": NONE, "sec-acl-other": TOPIC_AUTHORIZATION_FAILED}
    assert cluster.zk.exists("/brokers/topics/sec-acl-lit") and cluster.zk.exists("/brokers/topics/sec-acl-pfx-1")

    # DeleteTopics needs DELETE on the topic.
    assert ck_error(alice.delete_topics(["sec-acl-lit"], operation_timeout=30)["sec-acl-lit"]) == (
        TOPIC_AUTHORIZATION_FAILED
    )
    assert cluster.zk.exists("/brokers/topics/sec-acl-lit")
    cluster.grant(allow("sec-acl-lit", AclOperation.DELETE))
    assert ck_error(alice.delete_topics(["sec-acl-lit"], operation_timeout=30)["sec-acl-lit"]) == NONE
    wait_for(lambda: not cluster.zk.exists("/brokers/topics/sec-acl-lit"), 30, "the topic to be deleted")

    # A DENY beats an ALLOW that matches the same topic.
    cluster.grant(
        allow("sec-acl-deny-", AclOperation.CREATE, ResourcePatternType.PREFIXED),
        allow("sec-acl-deny-x", AclOperation.CREATE, permission=AclPermissionType.DENY),
    )
    assert create("sec-acl-deny-x", "sec-acl-deny-y") == {
        "sec-acl-deny-x": TOPIC_AUTHORIZATION_FAILED,
        "sec-acl-deny-y": NONE,
    }

    # The ACL APIs themselves need ALTER / DESCRIBE on the cluster.
    binding = allow("sec-acl-lit", AclOperation.READ)
    assert ck_error(alice.create_acls([binding], request_timeout=30)[binding]) == CLUSTER_AUTHORIZATION_FAILED
    assert '"Read"' not in cluster.zk.get("/kafka-acl/Topic/sec-acl-lit")[0].decode()  # CREATE and DELETE only
    # (kafka-python for these two: librdkafka drops DescribeAcls' request-level error and reports success.)
    anything = KpAclFilter(
        None,
        None,
        KpAclOperation.ANY,
        KpAclPermissionType.ANY,
        KpPatternFilter(KpResourceType.ANY, None, KpPatternType.ANY),
    )
    with kp_admin(cluster.bootstrap().split(","), "alice") as kp:
        with pytest.raises(kafka_errors.ClusterAuthorizationFailedError):
            kp.describe_acls(anything)
        [(_filter, matched, error)] = kp.delete_acls([anything])
        assert (matched, error) == ([], kafka_errors.ClusterAuthorizationFailedError)
    assert cluster.zk.exists("/kafka-acl/Topic/sec-acl-lit") is not None  # nothing was deleted


def test_config_acls_with_confluent_kafka(cluster: Cluster) -> None:
    cluster.create_topics("sec-cfg")
    alice = ck_admin(cluster.bootstrap(), "alice")
    topic = ConfigResource(ResourceType.TOPIC, "sec-cfg")
    broker = ConfigResource(ResourceType.BROKER, str(cluster.others()[0]))
    assert ck_error(alice.describe_configs([topic], request_timeout=30)[topic]) == TOPIC_AUTHORIZATION_FAILED
    assert ck_error(alice.describe_configs([broker], request_timeout=30)[broker]) == CLUSTER_AUTHORIZATION_FAILED

    def alter(restype: Any, name: str, key: str, value: str) -> int:
        res = ConfigResource(
            restype, name, incremental_configs=[ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)]
        )
        return ck_error(alice.incremental_alter_configs([res], request_timeout=30)[res])

    def legacy_alter(restype: Any, name: str, key: str, value: str) -> int:  # AlterConfigs (33), not incremental
        res = ConfigResource(restype, name, set_config={key: value})
        return ck_error(alice.alter_configs([res], request_timeout=30)[res])

    for change in (alter, legacy_alter):
        assert change(ResourceType.TOPIC, "sec-cfg", "retention.ms", "1234567") == TOPIC_AUTHORIZATION_FAILED
        assert change(ResourceType.BROKER, broker.name, "log.cleaner.threads", "2") == CLUSTER_AUTHORIZATION_FAILED
    assert (
        not cluster.zk.exists("/config/topics/sec-cfg")
        or "retention.ms" not in json.loads(cluster.zk.get("/config/topics/sec-cfg")[0])["config"]
    )
    assert not cluster.zk.exists(f"/config/brokers/{broker.name}")

    cluster.grant(allow("sec-cfg", AclOperation.DESCRIBE_CONFIGS), allow("sec-cfg", AclOperation.ALTER_CONFIGS))
    assert alter(ResourceType.TOPIC, "sec-cfg", "retention.ms", "1234567") == NONE
    assert json.loads(cluster.zk.get("/config/topics/sec-cfg")[0])["config"]["retention.ms"] == "1234567"
    assert legacy_alter(ResourceType.TOPIC, "sec-cfg", "retention.ms", "7654321") == NONE
    assert json.loads(cluster.zk.get("/config/topics/sec-cfg")[0])["config"] == {"retention.ms": "7654321"}
    assert alter(ResourceType.TOPIC, "sec-cfg", "retention.ms", "1234567") == NONE
    configs = alice.describe_configs([topic], request_timeout=30)[topic].result(timeout=30)
    assert configs["retention.ms"].value == "1234567"
    assert ck_error(alice.describe_configs([broker], request_timeout=30)[broker]) == CLUSTER_AUTHORIZATION_FAILED


def test_metadata_shows_only_described_topics(cluster: Cluster) -> None:
    names = ("sec-md-visible", "sec-md-hidden", "sec-md-denied")
    cluster.create_topics(*names)
    cluster.grant(
        allow("sec-md-visible", AclOperation.DESCRIBE),
        allow("sec-md-denied", AclOperation.DESCRIBE),
        allow("sec-md-d", AclOperation.DESCRIBE, ResourcePatternType.PREFIXED, permission=AclPermissionType.DENY),
    )
    alice = ck_admin(cluster.bootstrap(), "alice")
    everything = alice.list_topics(timeout=30)
    assert {t for t in everything.topics if t.startswith("sec-md-")} == {"sec-md-visible"}
    assert everything.topics["sec-md-visible"].error is None
    assert set(cluster.admin().list_topics(timeout=30).topics) >= set(names)  # the super user sees them all
    for name, code in (
        ("sec-md-visible", None),
        ("sec-md-hidden", TOPIC_AUTHORIZATION_FAILED),
        ("sec-md-denied", TOPIC_AUTHORIZATION_FAILED),
    ):
        found = alice.list_topics(topic=name, timeout=30).topics[name]
        assert (found.error.code() if found.error else None) == code, name
    # The same on every node, over kafka-python's client too.
    with kp_admin(cluster.bootstrap().split(","), "alice") as kp:
        assert {t for t in kp.list_topics() if t.startswith("sec-md-")} == {"sec-md-visible"}
    for node in sorted(cluster.ports):
        with cluster.external(node, "alice") as conn:
            topics = conn.call(3, 12, metadata_request(*names)).topics
            assert [int(t.error_code) for t in topics] == [NONE, TOPIC_AUTHORIZATION_FAILED, TOPIC_AUTHORIZATION_FAILED]


def run_on(admin: Any, request: Any, node: int) -> Any:
    """Send a kafka-python request to one broker (what _send_request_to_controller does for the controller)."""

    async def send() -> Any:
        return await admin._manager.send(request, node_id=node)

    return admin._manager.run(send)


def test_reassignment_apis_need_cluster_permissions_with_kafka_python(cluster: Cluster) -> None:
    cluster.create_topics("sec-reassign")
    with kp_admin(cluster.bootstrap().split(","), "alice") as alice:
        with pytest.raises(kafka_errors.ClusterAuthorizationFailedError):
            alice.alter_partition_reassignments({TopicPartition("sec-reassign", 0): [1]})
        with pytest.raises(kafka_errors.ClusterAuthorizationFailedError):
            alice.list_partition_reassignments()
        # The same answer from every broker: the others forward, and the controller authorizes alice.
        alter = AlterPartitionReassignmentsRequest(
            timeout_ms=30000,
            topics=alice._process_alter_partition_reassignments_input({TopicPartition("sec-reassign", 0): [1]}),
        )
        for node in sorted(cluster.ports):
            forwarded = cluster.forwarded(node)
            assert run_on(alice, alter, node).error_code == CLUSTER_AUTHORIZATION_FAILED
            assert run_on(alice, ListPartitionReassignmentsRequest(timeout_ms=30000, topics=None), node).error_code == (
                CLUSTER_AUTHORIZATION_FAILED
            )
            assert cluster.forwarded(node) == forwarded + (0 if node == cluster.controller else 2)
    # The super user may (nothing is moving).
    with kp_admin(cluster.bootstrap().split(","), "admin") as admin:
        assert admin.list_partition_reassignments() == {}


def test_forwarded_requests_are_authorized_as_the_client(cluster: Cluster) -> None:
    """Every forwardable request alice sends gets the same answer from every broker: the non-controllers forward it
    (their forwarding counter moves) and the controller authorizes the inner request as alice."""
    cluster.create_topics("sec-fwd-theirs")
    cluster.grant(allow("sec-fwd-ok-", AclOperation.CREATE, ResourcePatternType.PREFIXED))
    reassign = entity_cls(45, 0, "ReassignableTopic")(
        name="sec-fwd-theirs",
        partitions=(entity_cls(45, 0, "ReassignablePartition")(partition_index=i32(0), replicas=(i32(1),)),),
    )
    scram = entity_cls(51, 0, "ScramCredentialUpsertion")(
        name="alice", mechanism=i8(1), iterations=i32(4096), salt=b"salt", salted_password=b"x" * 32
    )
    requests: list[tuple[str, int, int, Callable[[int], Any], Callable[[Any], list[int]]]] = [
        (
            "CreateTopics denied",
            19,
            5,
            lambda n: create_topics_request(f"sec-fwd-denied-{n}"),
            lambda r: [int(t.error_code) for t in r.topics],
        ),
        (
            "CreateTopics allowed",
            19,
            5,
            lambda n: create_topics_request(f"sec-fwd-ok-{n}"),
            lambda r: [int(t.error_code) for t in r.topics],
        ),
        (
            "DeleteTopics",
            20,
            4,
            lambda n: req(20, 4, topic_names=("sec-fwd-theirs",), timeout=THIRTY_SECONDS),
            lambda r: [int(t.error_code) for t in r.responses],
        ),
        (
            "IncrementalAlterConfigs topic",
            44,
            1,
            lambda n: incremental_alter(TOPIC_RESOURCE, "sec-fwd-theirs", "retention.ms", "1000"),
            lambda r: [int(x.error_code) for x in r.responses],
        ),
        (
            "IncrementalAlterConfigs broker",
            44,
            1,
            lambda n: incremental_alter(BROKER_RESOURCE, str(n), "log.cleaner.threads", "2"),
            lambda r: [int(x.error_code) for x in r.responses],
        ),
        (
            "CreateAcls",
            30,
            3,
            lambda n: create_acls_request("User:alice", "sec-fwd-theirs"),
            lambda r: [int(x.error_code) for x in r.results],
        ),
        ("AlterPartitionReassignments", 45, 0, lambda n: req(45, 0, topics=(reassign,)), lambda r: [int(r.error_code)]),
        ("ListPartitionReassignments", 46, 0, lambda n: req(46, 0, topics=None), lambda r: [int(r.error_code)]),
        (
            "AlterUserScramCredentials",
            51,
            0,
            lambda n: req(51, 0, deletions=(), upsertions=(scram,)),
            lambda r: [int(x.error_code) for x in r.results],
        ),
    ]
    expected = {
        "CreateTopics denied": [TOPIC_AUTHORIZATION_FAILED],
        "CreateTopics allowed": [NONE],
        "DeleteTopics": [TOPIC_AUTHORIZATION_FAILED],
        "IncrementalAlterConfigs topic": [TOPIC_AUTHORIZATION_FAILED],
        "IncrementalAlterConfigs broker": [CLUSTER_AUTHORIZATION_FAILED],
        "CreateAcls": [CLUSTER_AUTHORIZATION_FAILED],
        "AlterPartitionReassignments": [CLUSTER_AUTHORIZATION_FAILED],
        "ListPartitionReassignments": [CLUSTER_AUTHORIZATION_FAILED],
        "AlterUserScramCredentials": [CLUSTER_AUTHORIZATION_FAILED],
    }
    active = cluster.controller
    for node in [active, *cluster.others()]:
        forwarded = cluster.forwarded(node)
        with cluster.external(node, "alice") as conn:
            answers = {
                name: errors(conn.call(key, version, build(node))) for name, key, version, build, errors in requests
            }
        assert answers == expected, f"node {node} (controller {active})"
        assert cluster.forwarded(node) == forwarded + (0 if node == active else len(requests)), node
        assert cluster.zk.exists(f"/brokers/topics/sec-fwd-ok-{node}")
    assert cluster.zk.exists("/brokers/topics/sec-fwd-theirs")
    assert not any(cluster.zk.exists(f"/brokers/topics/sec-fwd-denied-{n}") for n in cluster.ports)
    assert not any(cluster.zk.exists(f"/config/brokers/{n}") for n in cluster.ports)

    # kafka-python sends a BROKER resource's configs to that broker: a non-controller forwards it.
    other = cluster.others()[0]
    forwarded = cluster.forwarded(other)
    with kp_admin(cluster.bootstrap().split(","), "alice") as alice:
        result = alice.alter_configs(
            [KpConfigResource(ConfigResourceType.BROKER, str(other), {"log.cleaner.threads": "2"})],
            raise_on_unknown=False,
            incremental=True,
        )
    assert result["broker"][str(other)].startswith("[Error 31] ClusterAuthorizationFailedError"), result
    assert cluster.forwarded(other) == forwarded + 1


def test_create_topics_hides_configs_without_describe_configs(cluster: Cluster) -> None:
    """KafkaApis.handleCreateTopicsRequest: a topic created by a principal without DESCRIBE_CONFIGS on it gets
    TopicConfigErrorCode TOPIC_AUTHORIZATION_FAILED, and ZkAdminManager leaves NumPartitions/ReplicationFactor at
    -1 (they are only filled in for topics in ``includeConfigsAndMetadata``)."""
    cluster.grant(allow("sec-cfgerr", AclOperation.CREATE))
    with cluster.external(cluster.controller, "alice") as conn:
        [topic] = conn.call(19, 5, create_topics_request("sec-cfgerr")).topics
    assert int(topic.error_code) == NONE
    assert (int(topic.topic_config_error_code), topic.num_partitions, topic.replication_factor) == (
        TOPIC_AUTHORIZATION_FAILED,
        -1,
        -1,
    )


def test_authorized_operations_are_reported(cluster: Cluster) -> None:
    """KIP-430: asked for them, Kafka computes the operations the principal may perform (AuthHelper
    .computeDescribeClusterResponse, KafkaApis.handleTopicMetadataRequest); a principal without DESCRIBE on the
    cluster gets 0, i.e. none."""
    cluster.create_topics("sec-ops")
    admin = cluster.admin()
    ops = admin.describe_cluster(include_authorized_operations=True, request_timeout=30).result(timeout=30)
    assert ops.authorized_operations is not None
    assert {AclOperation.ALTER, AclOperation.CLUSTER_ACTION, AclOperation.DESCRIBE} <= set(ops.authorized_operations)
    topics = admin.describe_topics(TopicCollection(["sec-ops"]), include_authorized_operations=True, request_timeout=30)
    found = topics["sec-ops"].result(timeout=30).authorized_operations
    assert found is not None and {AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE} <= set(found)
    # alice may not DESCRIBE the cluster: Kafka answers 0, no operations (librdkafka shows that as None or []).
    alice = ck_admin(cluster.bootstrap(), "alice")
    ops = alice.describe_cluster(include_authorized_operations=True, request_timeout=30).result(timeout=30)
    assert not ops.authorized_operations
    from kio.schema.describe_cluster.v0.request import DescribeClusterRequest

    with cluster.external(cluster.controller, "alice") as conn:
        reply = conn.call(60, 0, DescribeClusterRequest(include_cluster_authorized_operations=True))
    assert int(reply.error_code) == NONE and reply.cluster_authorized_operations == 0


# --- 4. Envelope checks ------------------------------------------------------------------------------------------
ENVELOPE_RETENTION = "7654321"


def inner_alter(correlation_id: int, topic: str, value: str = ENVELOPE_RETENTION) -> bytes:
    return encode_request(
        44,
        1,
        incremental_alter(TOPIC_RESOURCE, topic, "retention.ms", value),
        correlation_id,
        client_id="original-client",
    )


def topic_config(zk: KazooClient, topic: str) -> dict[str, str]:
    path = f"/config/topics/{topic}"
    return dict(json.loads(zk.get(path)[0])["config"]) if zk.exists(path) else {}


def test_envelope_needs_cluster_action(cluster: Cluster) -> None:
    cluster.create_topics("sec-env")
    active = cluster.controller
    # alice authenticates on the inter-broker listener, but may not CLUSTER_ACTION: the envelope is refused.
    with cluster.internal(active, "alice") as conn:
        reply = conn.call(58, 0, envelope(inner_alter(101, "sec-env"), as_principal("admin")))
        assert (int(reply.error_code), reply.response_data) == (CLUSTER_AUTHORIZATION_FAILED, None)
        # The connection stays usable (an error response, not a close).
        assert int(conn.call(58, 0, envelope(inner_alter(102, "sec-env"), b"garbage")).error_code) == (
            CLUSTER_AUTHORIZATION_FAILED
        )
    assert ENVELOPE_RETENTION not in topic_config(cluster.zk, "sec-env").values()

    # The broker's own principal (a super user) may: the inner request runs as the principal the envelope names.
    with cluster.internal(active, "broker") as conn:
        reply = conn.call(58, 0, envelope(inner_alter(103, "sec-env"), as_principal("alice")))
        assert int(reply.error_code) == NONE
        correlation, inner = decode_response(44, 1, bytes(reply.response_data))
        assert correlation == 103
        assert [int(r.error_code) for r in inner.responses] == [TOPIC_AUTHORIZATION_FAILED]
        assert ENVELOPE_RETENTION not in topic_config(cluster.zk, "sec-env").values()

        reply = conn.call(58, 0, envelope(inner_alter(104, "sec-env"), as_principal("admin")))
        assert int(reply.error_code) == NONE
        correlation, inner = decode_response(44, 1, bytes(reply.response_data))
        assert correlation == 104
        assert [(int(r.error_code), r.resource_name) for r in inner.responses] == [(NONE, "sec-env")]
    assert topic_config(cluster.zk, "sec-env")["retention.ms"] == ENVELOPE_RETENTION

    # ACL hosts are matched against the original client's address the envelope carries, not the broker's.
    cluster.grant(
        AclBinding(
            ResourceType.TOPIC,
            "sec-env",
            ResourcePatternType.LITERAL,
            "User:alice",
            "10.9.8.7",
            AclOperation.ALTER_CONFIGS,
            AclPermissionType.ALLOW,
        )
    )
    with cluster.internal(active, "broker") as conn:
        answers = {}
        for host, value in ((LOCALHOST, "1001"), (bytes([10, 9, 8, 7]), "1002")):
            reply = conn.call(58, 0, envelope(inner_alter(105, "sec-env", value), as_principal("alice"), host))
            assert int(reply.error_code) == NONE
            _, inner = decode_response(44, 1, bytes(reply.response_data))
            answers[value] = [int(r.error_code) for r in inner.responses]
    assert answers == {"1001": [TOPIC_AUTHORIZATION_FAILED], "1002": [NONE]}
    assert topic_config(cluster.zk, "sec-env")["retention.ms"] == "1002"


def test_envelope_on_a_non_inter_broker_listener_closes_the_connection(cluster: Cluster) -> None:
    active = cluster.controller
    with cluster.external(active, "broker") as bystander, cluster.external(active, "broker") as conn:
        assert bystander.call(3, 12, metadata_request()).brokers
        reply = conn.call_or_eof(58, 0, envelope(inner_alter(201, "sec-env", "1111"), as_principal("admin")))
        assert reply is None  # closed, not answered, although the principal is a super user
        assert "1111" not in topic_config(cluster.zk, "sec-env").values()
        # Other connections are unaffected, on that listener and on the inter-broker one.
        assert {b.node_id for b in bystander.call(3, 12, metadata_request()).brokers} == set(cluster.ports)
        with cluster.internal(active, "broker") as internal:
            reply = internal.call(58, 0, envelope(inner_alter(202, "sec-env", "2222"), as_principal("admin")))
            assert int(reply.error_code) == NONE
        assert topic_config(cluster.zk, "sec-env")["retention.ms"] == "2222"


def test_envelope_error_codes(cluster: Cluster) -> None:
    active = cluster.controller
    alter = inner_alter(301, "sec-env", "3333")
    with cluster.internal(active, "broker") as conn:

        def code(request: Any) -> int:
            reply = conn.call(58, 0, request)
            assert reply.response_data is None
            return int(reply.error_code)

        assert code(envelope(alter, b"\x00\x05garbage")) == PRINCIPAL_DESERIALIZATION_FAILURE
        assert code(envelope(alter, None)) == PRINCIPAL_DESERIALIZATION_FAILURE
        assert code(envelope(alter, as_principal("admin")[:-1])) == PRINCIPAL_DESERIALIZATION_FAILURE
        metadata = encode_request(3, 12, metadata_request(), 302)
        assert code(envelope(metadata, as_principal("admin"))) == INVALID_REQUEST  # Metadata is not forwardable
        assert code(envelope(alter, as_principal("admin"), host=b"\x7f\x00\x01")) == INVALID_REQUEST
        too_new = encode_request(44, 1, incremental_alter(TOPIC_RESOURCE, "sec-env", "retention.ms", "3333"), 303)
        too_new = too_new[:2] + struct.pack(">h", 99) + too_new[4:]
        assert code(envelope(too_new, as_principal("admin"))) == UNSUPPORTED_VERSION
        # The connection survived every refusal.
        assert int(conn.call(58, 0, envelope(alter, as_principal("admin"))).error_code) == NONE
    assert topic_config(cluster.zk, "sec-env")["retention.ms"] == "3333"

    other = cluster.others()[0]
    with cluster.internal(other, "broker") as conn:
        reply = conn.call(58, 0, envelope(inner_alter(304, "sec-env", "4444"), as_principal("admin")))
        assert (int(reply.error_code), reply.response_data) == (NOT_CONTROLLER, None)
    with cluster.internal(other, "alice") as conn:  # authorization comes before the controller check
        reply = conn.call(58, 0, envelope(inner_alter(305, "sec-env", "4444"), as_principal("admin")))
        assert int(reply.error_code) == CLUSTER_AUTHORIZATION_FAILED
    assert topic_config(cluster.zk, "sec-env")["retention.ms"] == "3333"


# --- 4c. a forwarding broker whose own principal lacks CLUSTER_ACTION -----------------------------------------
@pytest.fixture(scope="module")
def weak_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Stack, KazooClient]]:
    """Two nodes whose inter-broker principal (User:broker) is not a super user and has no ACLs. Their
    AlterPartition and ControlledShutdown requests are refused too, as in Kafka; the nodes still start and stop."""
    s = Stack(
        nodes=2,
        data_dir=Path(tmp_path_factory.mktemp("weak-stack")),
        overrides={**SASL, "super.users": "User:admin", "controlled.shutdown.max.retries": "0"},
    )
    s.start()
    zk = KazooClient(hosts=s.zookeeper)
    try:
        zk.start(timeout=20)
        wait_for(lambda: controller_id(zk) is not None, 60, "a controller")
        yield s, zk
    finally:
        with contextlib.suppress(Exception):
            zk.stop()
            zk.close()
        s.stop()
        logs = [n.log_path.read_text(errors="replace") for n in s.nodes]
        assert not any(UNEXPECTED in text for text in logs), "a node logged an unexpected error"


def test_forwarding_broker_without_cluster_action(weak_stack: tuple[Stack, KazooClient]) -> None:
    stack, zk = weak_stack
    ports = {n.broker_id: listener_ports(n.ready) for n in stack.nodes}
    urls = {n.broker_id: metrics_url(n.ready) for n in stack.nodes}
    active = controller_id(zk)
    [other] = [n for n in ports if n != active]
    assert active is not None

    def failures(node: int) -> float:
        return metric_sum(urls[node], FORWARDING_AUTH_FAILURES)

    before = failures(other)
    bootstrap = [f"127.0.0.1:{p['EXTERNAL']}" for p in ports.values()]
    # kafka-python sends the BROKER resource to that broker, which forwards it as User:broker: the controller
    # refuses the envelope and the client gets UNKNOWN_SERVER_ERROR.
    with kp_admin(bootstrap, "admin") as admin:
        resource = KpConfigResource(ConfigResourceType.BROKER, str(other), {"log.cleaner.threads": "2"})
        result = admin.alter_configs([resource], raise_on_unknown=False, incremental=True)
    assert result["broker"][str(other)].startswith("[Error -1] UnknownError"), result
    assert failures(other) == before + 1
    assert not zk.exists(f"/config/brokers/{other}")

    with RawConn(ports[other]["EXTERNAL"], "admin") as conn:
        reply = conn.call(30, 3, create_acls_request("User:carol", "sec-weak"))
        assert [int(r.error_code) for r in reply.results] == [UNKNOWN_SERVER_ERROR]
        assert failures(other) == before + 2
        reply = conn.call(19, 5, create_topics_request("sec-weak"))
        assert [int(t.error_code) for t in reply.topics] == [UNKNOWN_SERVER_ERROR]
        assert failures(other) == before + 3
        # Requests the broker answers itself are unaffected.
        assert {b.node_id for b in conn.call(3, 12, metadata_request()).brokers} == set(ports)
    assert not zk.exists("/kafka-acl/Topic/sec-weak") and not zk.exists("/brokers/topics/sec-weak")

    # Sent to the controller directly, the same requests as admin succeed, and nothing is counted there.
    with RawConn(ports[active]["EXTERNAL"], "admin") as conn:
        reply = conn.call(30, 3, create_acls_request("User:carol", "sec-weak"))
        assert [int(r.error_code) for r in reply.results] == [NONE]
    assert zk.exists("/kafka-acl/Topic/sec-weak")
    assert failures(active) == 0
    assert failures(other) == before + 3


# --- reassign tool over SASL ---------------------------------------------------------------------------------------
def _reassign(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "controller.cli", "reassign", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[2],
    )


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512"])
def test_reassign_tool_logs_in_with_its_command_config(
    cluster: Cluster, zed: str, tmp_path: Path, mechanism: str
) -> None:
    """--command-config carries the client's SASL settings, as Kafka's tool hands them to Admin.create."""
    module = "plain.PlainLoginModule" if mechanism == "PLAIN" else "scram.ScramLoginModule"
    user, password = ("admin", "admin-secret") if mechanism == "PLAIN" else (zed, "zed-secret")

    def properties(name: str, who: str, secret: str, extra: str = "") -> str:
        path = tmp_path / name
        login = f'org.apache.kafka.common.security.{module} required username="{who}" password="{secret}";'
        path.write_text(
            f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism={mechanism}\nsasl.jaas.config={login}\n{extra}"
        )
        return str(path)

    # zed is no super user: the listing needs CLUSTER DESCRIBE, which only the super user admin has.
    ok = _reassign(
        "--bootstrap-server",
        cluster.bootstrap(),
        "--list",
        "--command-config",
        properties("ok.properties", user, password),
    )
    if user == "admin":
        assert (ok.returncode, ok.stdout) == (0, "No partition reassignments found.\n"), ok.stderr
    else:
        assert ok.returncode == 1
        assert ok.stdout == (
            "Error: org.apache.kafka.common.errors.ClusterAuthorizationException: Cluster authorization failed.\n"
        )
    # The bootstrap wait is the command-config's default.api.timeout.ms, as Kafka's Admin takes it.
    bad = _reassign(
        "--bootstrap-server",
        cluster.bootstrap(),
        "--list",
        "--command-config",
        properties("bad.properties", user, "wrong", "default.api.timeout.ms=3000\n"),
    )
    # kafka-python retries a refused login until its bootstrap timeout, then reports that (Kafka's Java client
    # reports the SaslAuthenticationException at once): the tool exits 1 with one line, no traceback.
    assert bad.returncode == 1 and "Traceback" not in bad.stdout + bad.stderr
    timed_out = "Error: org.apache.kafka.common.errors.TimeoutException: Unable to bootstrap"
    assert bad.stdout.startswith(timed_out), bad.stdout
