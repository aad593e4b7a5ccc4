"""TLS end to end with real clients over real sockets: confluent-kafka, kafka-python and kcat over SSL
and SASL_SSL; mutual TLS whose principal comes from the client certificate's DN through
``ssl.principal.mapping.rules``, checked through an ACL that allows exactly that principal; clients without a
certificate or from an unknown CA refused and counted; forwarding over an SSL inter-broker listener.

One two-node stack at IBP 3.4-IV0 (forwarding on), the ACL authorizer on, three listeners:

- INTERNAL (SSL, client certificates required): the inter-broker listener; the nodes' own certificate is
  ``CN=node``, a super user;
- CLIENTS (SSL, client certificates required, ``RULE:^CN=([^,]+),OU=clients$/$1/L,DEFAULT``): ``CN=Alice,OU=clients``
  is ``User:alice``;
- SASLSSL (SASL_SSL, PLAIN, no client certificate): ``User:admin`` (a super user) and ``User:alice``.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import logging
import shutil
import socket
import ssl
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)
from cryptography import x509
from kafka import KafkaAdminClient
from kafka.admin import ConfigResource as KpConfigResource
from kafka.admin import ConfigResourceType as KpConfigResourceType
from kafka.admin import NewTopic as KpNewTopic
from kafka.errors import TopicAuthorizationFailedError
from kazoo.client import KazooClient

from controller.devstack import certs
from controller.devstack.stack import Stack
from testing.stack import controller_id, listener_ports, metric_sum, metrics_url
from tests.integration.cluster import wait_for

pytestmark = pytest.mark.e2e

JAAS = (
    'org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" '
    'user_admin="admin-secret" user_alice="alice-secret";'
)
RULES = "RULE:^CN=([^,]+),OU=clients$/$1/L,DEFAULT"
TLS_FAILURES = "bridgekeeper_tls_handshake_failures_total"
FORWARDED = "bridgekeeper_forwarding_client_requests_total"
NONE, TOPIC_AUTHORIZATION_FAILED = 0, 29
_quiet = logging.getLogger("tests.e2e.test_tls.librdkafka")
_quiet.addHandler(logging.NullHandler())
_quiet.propagate = False


@dataclass
class TlsStack:
    stack: Stack
    zk: KazooClient
    dir: Path
    ca: Path
    ca_issued: certs.Issued
    alice: certs.PemFiles
    bob: certs.PemFiles
    stranger: certs.PemFiles

    def port(self, broker_id: int, listener: str) -> int:
        node = next(n for n in self.stack.nodes if n.broker_id == broker_id)
        return listener_ports(node.ready)[listener]

    def bootstrap(self, listener: str) -> str:
        return ",".join(f"127.0.0.1:{self.port(n.broker_id, listener)}" for n in self.stack.nodes)

    def url(self, broker_id: int) -> str:
        return metrics_url(next(n for n in self.stack.nodes if n.broker_id == broker_id).ready)

    def tls_failures(self) -> float:
        return sum(metric_sum(self.url(n.broker_id), TLS_FAILURES) for n in self.stack.nodes)


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsStack]:
    base = tmp_path_factory.mktemp("tls")
    ca = certs.make_ca()
    node = certs.write_pem(base / "pki", "node", certs.issue(ca, "CN=node"), ca)
    alice = certs.write_pem(base / "pki", "alice", certs.issue(ca, "CN=Alice,OU=clients"), ca)
    bob = certs.write_pem(base / "pki", "bob", certs.issue(ca, "CN=Bob,OU=clients"), ca)
    other_ca = certs.make_ca("CN=somebody else's CA")
    stranger = certs.write_pem(base / "stranger", "alice", certs.issue(other_ca, "CN=Alice,OU=clients"), other_ca)
    overrides = {
        "listeners": "INTERNAL://127.0.0.1:0,CLIENTS://127.0.0.1:0,SASLSSL://127.0.0.1:0",
        "listener.security.protocol.map": "INTERNAL:SSL,CLIENTS:SSL,SASLSSL:SASL_SSL",
        "inter.broker.listener.name": "INTERNAL",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(node.keystore),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(node.ca),
        "listener.name.internal.ssl.client.auth": "required",
        "listener.name.clients.ssl.client.auth": "required",
        "listener.name.clients.ssl.principal.mapping.rules": RULES,
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.saslssl.plain.sasl.jaas.config": JAAS,
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": "User:CN=node;User:admin",
        "inter.broker.protocol.version": "3.4-IV0",
    }
    stack = Stack(nodes=2, data_dir=base / "stack", overrides=overrides)
    stack.start()
    zk = KazooClient(hosts=stack.zookeeper)
    try:
        zk.start(timeout=20)
        wait_for(lambda: controller_id(zk) is not None, 60, "a controller")
        yield TlsStack(stack, zk, base, node.ca, ca, alice, bob, stranger)
    finally:
        with contextlib.suppress(Exception):
            zk.stop()
        stack.stop()


def ck_ssl(bootstrap: str, files: certs.PemFiles | None, ca: Path, **extra: Any) -> AdminClient:
    config: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "security.protocol": "SSL",
        "ssl.ca.location": str(ca),
        "socket.timeout.ms": 10000,
        "logger": _quiet,
        **extra,
    }
    if files is not None:
        config |= {"ssl.certificate.location": str(files.cert), "ssl.key.location": str(files.key)}
    return AdminClient(config)


def ck_sasl_ssl(bootstrap: str, user: str, password: str, ca: Path) -> AdminClient:
    config: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "security.protocol": "SASL_SSL",
        "ssl.ca.location": str(ca),
        "sasl.mechanisms": "PLAIN",
        "sasl.username": user,
        "sasl.password": password,
        "socket.timeout.ms": 10000,
        "logger": _quiet,
    }
    return AdminClient(config)


def create_error(admin: AdminClient, name: str) -> int:
    future = admin.create_topics([NewTopic(name, 1, 1)], operation_timeout=30, request_timeout=30)[name]
    try:
        future.result(60)
        return NONE
    except KafkaException as exc:
        return int(exc.args[0].code())


def grant_create(tls: TlsStack, topic: str, principal: str, pattern: Any = ResourcePatternType.LITERAL) -> None:
    admin = ck_sasl_ssl(tls.bootstrap("SASLSSL"), "admin", "admin-secret", tls.ca)
    binding = AclBinding(
        ResourceType.TOPIC, topic, pattern, principal, "*", AclOperation.CREATE, AclPermissionType.ALLOW
    )
    admin.create_acls([binding], request_timeout=30)[binding].result(60)


def created_once_allowed(admin: AdminClient, name: str) -> None:
    """Nodes' ACL caches follow ZooKeeper a moment after CreateAcls answers: try until the grant is seen."""
    wait_for(lambda: create_error(admin, name) == NONE, 30, f"{name} to be created once the ACL is seen")


def test_mutual_tls_principal_from_the_dn_with_confluent_kafka(tls: TlsStack) -> None:
    alice = ck_ssl(tls.bootstrap("CLIENTS"), tls.alice, tls.ca)
    bob = ck_ssl(tls.bootstrap("CLIENTS"), tls.bob, tls.ca)
    assert create_error(alice, "tls-ck-alice") == TOPIC_AUTHORIZATION_FAILED
    # the DN CN=Alice,OU=clients, mapped by the listener's rule and lowered: User:alice
    grant_create(tls, "tls-ck-", "User:alice", ResourcePatternType.PREFIXED)
    created_once_allowed(alice, "tls-ck-alice")
    assert tls.zk.exists("/brokers/topics/tls-ck-alice") is not None
    assert create_error(bob, "tls-ck-bob") == TOPIC_AUTHORIZATION_FAILED  # exactly that principal, not any cert


def test_kafka_python_over_ssl_with_a_client_certificate(tls: TlsStack) -> None:
    grant_create(tls, "tls-kp-", "User:alice", ResourcePatternType.PREFIXED)
    admin = KafkaAdminClient(
        bootstrap_servers=tls.bootstrap("CLIENTS").split(","),
        security_protocol="SSL",
        ssl_cafile=str(tls.ca),
        ssl_certfile=str(tls.alice.cert),
        ssl_keyfile=str(tls.alice.key),
        request_timeout_ms=30000,
    )

    def created() -> bool:
        try:
            admin.create_topics([KpNewTopic("tls-kp-alice", 1, 1)], timeout_ms=30000)
            return True
        except TopicAuthorizationFailedError:
            return False

    try:
        wait_for(created, 30, "kafka-python's create once the ACL is seen")
        with pytest.raises(TopicAuthorizationFailedError):
            admin.create_topics([KpNewTopic("tls-denied", 1, 1)], timeout_ms=30000)
        assert tls.zk.exists("/brokers/topics/tls-kp-alice") is not None
        assert admin.list_topics() == []  # alice may create, not describe: Metadata hides the topic from her
    finally:
        admin.close()


def test_kafka_python_over_sasl_ssl(tls: TlsStack) -> None:
    admin = KafkaAdminClient(
        bootstrap_servers=tls.bootstrap("SASLSSL").split(","),
        security_protocol="SASL_SSL",
        ssl_cafile=str(tls.ca),
        sasl_mechanism="PLAIN",
        sasl_plain_username="admin",
        sasl_plain_password="admin-secret",
        request_timeout_ms=30000,
    )
    try:
        admin.create_topics([KpNewTopic("tls-kp-sasl", 1, 1)], timeout_ms=30000)
        assert tls.zk.exists("/brokers/topics/tls-kp-sasl") is not None
    finally:
        admin.close()


def test_confluent_kafka_over_sasl_ssl_takes_the_sasl_identity(tls: TlsStack) -> None:
    alice = ck_sasl_ssl(tls.bootstrap("SASLSSL"), "alice", "alice-secret", tls.ca)
    assert create_error(alice, "tls-sasl") == TOPIC_AUTHORIZATION_FAILED
    grant_create(tls, "tls-sasl", "User:alice")
    created_once_allowed(alice, "tls-sasl")


def kcat(*args: str) -> subprocess.CompletedProcess[str]:
    binary = shutil.which("kcat") or shutil.which("kafkacat")
    assert binary, "kcat is installed by ./dev (apt-get install kcat)"
    return subprocess.run([binary, *args], capture_output=True, text=True, timeout=60)


def test_kcat_over_ssl_and_sasl_ssl(tls: TlsStack) -> None:
    broker = f"127.0.0.1:{tls.port(tls.stack.nodes[0].broker_id, 'CLIENTS')}"
    out = kcat(
        "-b",
        broker,
        "-X",
        "security.protocol=ssl",
        "-X",
        f"ssl.ca.location={tls.ca}",
        "-X",
        f"ssl.certificate.location={tls.alice.cert}",
        "-X",
        f"ssl.key.location={tls.alice.key}",
        "-L",
        "-J",
    )
    assert out.returncode == 0, out.stderr
    assert sorted(b["id"] for b in json.loads(out.stdout)["brokers"]) == sorted(n.broker_id for n in tls.stack.nodes)
    sasl_broker = f"127.0.0.1:{tls.port(tls.stack.nodes[1].broker_id, 'SASLSSL')}"
    out = kcat(
        "-b",
        sasl_broker,
        "-X",
        "security.protocol=sasl_ssl",
        "-X",
        f"ssl.ca.location={tls.ca}",
        "-X",
        "sasl.mechanisms=PLAIN",
        "-X",
        "sasl.username=admin",
        "-X",
        "sasl.password=admin-secret",
        "-L",
    )
    assert out.returncode == 0 and "2 brokers:" in out.stdout, out.stderr


def _refused(admin: AdminClient) -> bool:
    try:
        admin.list_topics(timeout=5)
    except KafkaException:
        return True
    return False


def test_clients_without_a_certificate_or_from_another_ca_are_refused_and_counted(tls: TlsStack) -> None:
    before = tls.tls_failures()
    assert _refused(ck_ssl(tls.bootstrap("CLIENTS"), None, tls.ca))
    assert _refused(ck_ssl(tls.bootstrap("CLIENTS"), tls.stranger, tls.ca))
    wait_for(lambda: tls.tls_failures() >= before + 2, 30, "the refused handshakes to be counted")
    # a plaintext client on a TLS port is refused too, and the node goes on serving
    port = tls.port(tls.stack.nodes[0].broker_id, "CLIENTS")
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 5) as s:
        s.sendall(b"\x00\x00\x00\x0a" + b"\x00" * 10)
        s.recv(100)
    assert not _refused(ck_ssl(tls.bootstrap("CLIENTS"), tls.alice, tls.ca))


def test_an_expired_client_certificate_from_the_trusted_ca_is_refused(tls: TlsStack) -> None:
    now = dt.datetime.now(dt.UTC)
    old = certs.issue(
        tls.ca_issued,
        "CN=Alice,OU=clients",
        not_before=now - dt.timedelta(days=9),
        not_after=now - dt.timedelta(days=1),
    )
    expired = certs.write_pem(tls.dir / "expired", "alice", old, tls.ca_issued)
    node = tls.stack.nodes[0]
    before = metric_sum(tls.url(node.broker_id), TLS_FAILURES, reason="CERTIFICATE_VERIFY_FAILED")
    assert _refused(ck_ssl(f"127.0.0.1:{tls.port(node.broker_id, 'CLIENTS')}", expired, tls.ca))
    wait_for(
        lambda: metric_sum(tls.url(node.broker_id), TLS_FAILURES, reason="CERTIFICATE_VERIFY_FAILED") > before,
        30,
        "the refused handshake to be counted",
    )
    # and what the node serves is its own certificate, chained to the CA
    context = ssl.create_default_context(cafile=str(tls.ca))
    context.load_cert_chain(str(tls.alice.cert), str(tls.alice.key))
    raw = socket.create_connection(("127.0.0.1", tls.port(node.broker_id, "CLIENTS")), 5)
    with context.wrap_socket(raw, server_hostname="127.0.0.1") as s:
        der = s.getpeercert(binary_form=True)
    assert der is not None and x509.load_der_x509_certificate(der).subject.rfc4514_string() == "CN=node"


def test_forwarding_over_the_ssl_inter_broker_listener(tls: TlsStack) -> None:
    """A broker config change sent to a non-controller broker (kafka-python sends a BROKER resource to that
    broker) is forwarded over the mutual-TLS inter-broker listener and written by the controller."""
    cid = controller_id(tls.zk)
    broker = next(n for n in tls.stack.nodes if n.broker_id != cid)
    before = metric_sum(tls.url(broker.broker_id), FORWARDED)
    admin = KafkaAdminClient(
        bootstrap_servers=f"127.0.0.1:{tls.port(broker.broker_id, 'SASLSSL')}",
        security_protocol="SASL_SSL",
        ssl_cafile=str(tls.ca),
        sasl_mechanism="PLAIN",
        sasl_plain_username="admin",
        sasl_plain_password="admin-secret",
        request_timeout_ms=30000,
    )
    try:
        resource = KpConfigResource(
            KpConfigResourceType.BROKER, str(broker.broker_id), configs={"leader.replication.throttled.rate": "4321"}
        )
        result: Any = admin.alter_configs([resource], raise_on_unknown=False)
        assert str(result["broker"][str(broker.broker_id)]) == "OK"
    finally:
        admin.close()
    assert b'"leader.replication.throttled.rate":"4321"' in tls.zk.get(f"/config/brokers/{broker.broker_id}")[0]
    assert metric_sum(tls.url(broker.broker_id), FORWARDED) == before + 1


def test_the_envelope_carries_the_certificates_principal(tls: TlsStack) -> None:
    """Alice's mTLS principal reaches the controller inside the Envelope: a broker config change she sends to a
    non-controller broker is refused until User:alice (and only she) may ALTER_CONFIGS the cluster."""
    cid = controller_id(tls.zk)
    broker = next(n for n in tls.stack.nodes if n.broker_id != cid)

    def alter(value: str) -> str:
        admin = KafkaAdminClient(
            bootstrap_servers=f"127.0.0.1:{tls.port(broker.broker_id, 'CLIENTS')}",
            security_protocol="SSL",
            ssl_cafile=str(tls.ca),
            ssl_certfile=str(tls.alice.cert),
            ssl_keyfile=str(tls.alice.key),
            request_timeout_ms=30000,
        )
        try:
            resource = KpConfigResource(
                KpConfigResourceType.BROKER,
                str(broker.broker_id),
                configs={"follower.replication.throttled.rate": value},
            )
            result: Any = admin.alter_configs([resource], raise_on_unknown=False)
            return str(result["broker"][str(broker.broker_id)])
        finally:
            admin.close()

    refused = alter("111")
    assert "ClusterAuthorizationFailed" in refused, refused
    admin = ck_sasl_ssl(tls.bootstrap("SASLSSL"), "admin", "admin-secret", tls.ca)
    binding = AclBinding(
        ResourceType.BROKER,
        "kafka-cluster",
        ResourcePatternType.LITERAL,
        "User:alice",
        "*",
        AclOperation.ALTER_CONFIGS,
        AclPermissionType.ALLOW,
    )
    admin.create_acls([binding], request_timeout=30)[binding].result(60)
    before = metric_sum(tls.url(broker.broker_id), FORWARDED)
    wait_for(lambda: alter("222") == "OK", 30, "alice's forwarded change once her ACL is seen")
    assert b'"follower.replication.throttled.rate":"222"' in tls.zk.get(f"/config/brokers/{broker.broker_id}")[0]
    assert metric_sum(tls.url(broker.broker_id), FORWARDED) >= before + 1
