"""SSL and SASL_SSL listeners at load: Kafka's keys, every bad file, password, key or date a clear ConfigError
naming the key (never a failure at the first handshake). Certificates come from the throw-away CA of
``bridgekeeper up --tls`` (controller.devstack.certs)."""

from __future__ import annotations

import contextlib
import datetime as dt
import socket
import ssl
import threading
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

from controller.config import ConfigError, NodeConfig, config_from_properties
from controller.devstack import certs

BASE = {"broker.id": "1", "zookeeper.connect": "zk1:2181"}
SSL_LISTENER = {
    "listeners": "SSL://127.0.0.1:0",
    "listener.security.protocol.map": "SSL:SSL",
    "inter.broker.listener.name": "SSL",
}


@pytest.fixture(scope="module")
def ca() -> certs.Issued:
    return certs.make_ca()


def load(extra: dict[str, str]) -> NodeConfig:
    return config_from_properties({**BASE, **SSL_LISTENER, **extra})


def refused(extra: dict[str, str], key: str, words: str) -> str:
    with pytest.raises(ConfigError) as caught:
        load(extra)
    assert caught.value.key == key, str(caught.value)
    assert words in str(caught.value), str(caught.value)
    return str(caught.value)


def pem(tmp: Path, ca: certs.Issued, name: str = "node", password: str | None = None, **kw: object) -> certs.PemFiles:
    return certs.write_pem(tmp, name, certs.issue(ca, f"CN={name}", **kw), ca, password=password)  # type: ignore[arg-type]


def test_a_pem_keystore_file_and_truststore_load_into_working_contexts(tmp_path: Path, ca: certs.Issued) -> None:
    files = pem(tmp_path, ca)
    c = load(
        {
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(files.keystore),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(files.ca),
            "listener.name.ssl.ssl.client.auth": "required",
        }
    )
    tls = c.tls_listeners["SSL"]
    assert tls.client_auth == "required" and tls.keystore is not None and tls.keystore.subject == "CN=node"
    assert tls.server_context().verify_mode == ssl.CERT_REQUIRED
    assert c.inter_broker_tls is not None and c.inter_broker_tls.client_context().check_hostname


def test_inline_pem_and_an_encrypted_key(tmp_path: Path, ca: certs.Issued) -> None:
    issued = certs.issue(ca, "CN=inline")
    c = load(
        {
            "ssl.keystore.type": "PEM",
            "ssl.keystore.certificate.chain": issued.cert_pem().decode(),
            "ssl.keystore.key": issued.key_pem("k-secret").decode(),
            "ssl.key.password": "k-secret",
            "ssl.truststore.type": "PEM",
            "ssl.truststore.certificates": ca.cert_pem().decode(),
        }
    )
    assert c.tls_listeners["SSL"].keystore is not None


def test_a_pkcs12_keystore_opens_with_its_password(tmp_path: Path, ca: certs.Issued) -> None:
    issued = certs.issue(ca, "CN=p12")
    path = tmp_path / "node.p12"
    path.write_bytes(
        pkcs12.serialize_key_and_certificates(
            b"node", issued.key, issued.cert, [ca.cert], serialization.BestAvailableEncryption(b"store-pw")
        )
    )
    good = {"ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(path), "ssl.keystore.password": "store-pw"}
    assert load(good).tls_listeners["SSL"].keystore is not None
    refused({**good, "ssl.keystore.password": "nope"}, "ssl.keystore.password", "wrong password")


def test_bad_material_is_refused_naming_the_key(tmp_path: Path, ca: certs.Issued) -> None:
    files = pem(tmp_path, ca, password="right")
    ks = {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(files.keystore)}
    refused({**ks, "ssl.key.password": "wrong"}, "ssl.key.password", "wrong password")
    refused(ks, "ssl.key.password", "the private key is encrypted")
    refused(
        {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(tmp_path / "missing.pem")},
        "ssl.keystore.location",
        "cannot read",
    )
    refused({}, "ssl.keystore.location", "needs a keystore")
    refused({"ssl.keystore.location": str(files.keystore)}, "ssl.keystore.type", "JKS keystores")
    other = certs.issue(ca, "CN=other")
    mismatched = tmp_path / "mismatched.pem"
    mismatched.write_bytes(other.key_pem() + certs.issue(ca, "CN=node").cert_pem())
    refused(
        {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(mismatched)},
        "ssl.keystore.location",
        "does not belong to the certificate CN=node",
    )
    now = dt.datetime.now(dt.UTC)
    expired = pem(tmp_path / "e", ca, not_before=now - dt.timedelta(days=9), not_after=now - dt.timedelta(days=1))
    refused(
        {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(expired.keystore)},
        "ssl.keystore.location",
        "expired on",
    )
    future = pem(tmp_path / "f", ca, not_before=now + dt.timedelta(days=1))
    refused(
        {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(future.keystore)},
        "ssl.keystore.location",
        "is not valid before",
    )
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a certificate")
    refused(
        {**ks, "ssl.key.password": "right", "ssl.truststore.type": "PEM", "ssl.truststore.location": str(garbage)},
        "ssl.truststore.location",
        "holds no PEM certificate",
    )


def test_listener_keys_come_before_global_ones_and_errors_name_the_key_read(tmp_path: Path, ca: certs.Issued) -> None:
    files = pem(tmp_path, ca)
    ks = {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(files.keystore)}
    assert (
        load({**ks, "ssl.client.auth": "required", "listener.name.ssl.ssl.client.auth": "none"})
        .tls_listeners["SSL"]
        .client_auth
        == "none"
    )
    key = "listener.name.ssl.ssl.client.auth"
    refused({**ks, key: "maybe"}, key, "expected one of")
    refused({**ks, "ssl.enabled.protocols": "TLSv1.2,SSLv3"}, "ssl.enabled.protocols", "unknown TLS protocol SSLv3")
    refused({**ks, "ssl.cipher.suites": "TLS_NOT_A_SUITE"}, "ssl.cipher.suites", "TLS_NOT_A_SUITE")
    rules = "ssl.principal.mapping.rules"
    refused({**ks, rules: "RULE:^CN=(.*?)$/$1/LU"}, rules, "Invalid rule")
    refused({**ks, "ssl.endpoint.identification.algorithm": "ldap"}, "ssl.endpoint.identification.algorithm", "https")
    c = load(
        {
            **ks,
            "ssl.cipher.suites": "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_AES_128_GCM_SHA256",
            "ssl.enabled.protocols": "TLSv1.2",
            "ssl.endpoint.identification.algorithm": "",
        }
    )
    tls = c.tls_listeners["SSL"]
    assert tls.ciphers == ("ECDHE-ECDSA-AES128-GCM-SHA256",) and tls.protocols == ("TLSv1.2",)
    assert tls.server_context().maximum_version == ssl.TLSVersion.TLSv1_2
    assert c.inter_broker_tls is not None and not c.inter_broker_tls.client_context().check_hostname


def test_sasl_ssl_needs_both_sasl_and_tls_settings(tmp_path: Path, ca: certs.Issued) -> None:
    files = pem(tmp_path, ca)
    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="b" password="p" user_b="p";'
    c = config_from_properties(
        {
            **BASE,
            "listeners": "SASL_SSL://127.0.0.1:0",
            "inter.broker.listener.name": "SASL_SSL",
            "sasl.enabled.mechanisms": "PLAIN",
            "sasl.mechanism.inter.broker.protocol": "PLAIN",
            "listener.name.sasl_ssl.plain.sasl.jaas.config": jaas,
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(files.keystore),
        }
    )
    assert c.sasl_listeners["SASL_SSL"].mechanisms == ("PLAIN",) and "SASL_SSL" in c.tls_listeners
    assert c.inter_broker_sasl is not None and c.inter_broker_tls is not None


def test_the_global_client_auth_is_for_ssl_listeners_only(tmp_path: Path, ca: certs.Issued) -> None:
    """KIP-684: a SASL_SSL listener asks for client certificates only through its own listener-prefixed
    ssl.client.auth; the broker-wide one (here ``required``) applies to SSL listeners."""
    files = pem(tmp_path, ca)
    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="b" password="p" user_b="p";'
    base = {
        **BASE,
        "listeners": "TLS://127.0.0.1:0,SASLTLS://127.0.0.1:0,MTLS://127.0.0.1:0",
        "listener.security.protocol.map": "TLS:SSL,SASLTLS:SASL_SSL,MTLS:SASL_SSL",
        "inter.broker.listener.name": "TLS",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasltls.plain.sasl.jaas.config": jaas,
        "listener.name.mtls.plain.sasl.jaas.config": jaas,
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(files.keystore),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(files.ca),
        "ssl.client.auth": "required",
        "listener.name.mtls.ssl.client.auth": "requested",
    }
    c = config_from_properties(base)
    assert c.tls_listeners["TLS"].client_auth == "required"
    assert c.tls_listeners["SASLTLS"].client_auth == "none"
    assert c.tls_listeners["SASLTLS"].server_context().verify_mode == ssl.CERT_NONE
    assert c.tls_listeners["MTLS"].client_auth == "requested"


def test_zookeeper_tls_keys(tmp_path: Path, ca: certs.Issued) -> None:
    files = pem(tmp_path, ca, password="zk-pw")
    assert config_from_properties(BASE).zookeeper_tls is None  # zookeeper.ssl.client.enable defaults to false
    zk = {
        "zookeeper.ssl.client.enable": "true",
        "zookeeper.ssl.keystore.location": str(files.keystore),
        "zookeeper.ssl.keystore.password": "zk-pw",
        "zookeeper.ssl.truststore.location": str(files.ca),
        "listeners": "PLAINTEXT://127.0.0.1:0",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT",
        "inter.broker.listener.name": "PLAINTEXT",
    }
    tls = config_from_properties({**BASE, **zk}).zookeeper_tls  # PEM inferred from the .pem / .crt names
    assert tls is not None and tls.keystore is not None and tls.hostname_verification
    off = config_from_properties({**BASE, **zk, "zookeeper.ssl.endpoint.identification.algorithm": ""})
    assert off.zookeeper_tls is not None and not off.zookeeper_tls.hostname_verification
    with pytest.raises(ConfigError) as caught:
        config_from_properties({**BASE, **zk, "zookeeper.ssl.keystore.password": "nope"})
    assert caught.value.key == "zookeeper.ssl.keystore.password" and "wrong password" in str(caught.value)
    with pytest.raises(ConfigError) as caught:
        config_from_properties({**BASE, **zk, "zookeeper.ssl.ocsp.enable": "true"})
    assert caught.value.key == "zookeeper.ssl.ocsp.enable"
    with pytest.raises(ConfigError) as caught:
        config_from_properties({**BASE, **zk, "zookeeper.ssl.truststore.location": str(tmp_path / "x.jks")})
    assert caught.value.key == "zookeeper.ssl.truststore.type" and "keytool" in str(caught.value)


def _serve_once(context: ssl.SSLContext) -> tuple[int, threading.Thread]:
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def serve() -> None:
        with server:
            conn, _ = server.accept()
            with contextlib.suppress(OSError), context.wrap_socket(conn, server_side=True) as tls:
                tls.recv(1)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return port, thread


@pytest.mark.parametrize("identification", ["https", ""])
def test_inter_broker_hostname_verification(tmp_path: Path, ca: certs.Issued, identification: str) -> None:
    """The client side of inter-broker connections checks the peer's name when ssl.endpoint.identification.algorithm
    is https (Kafka's default): a certificate for another host is refused, accepted with it empty."""
    server_files = certs.write_pem(tmp_path / "s", "peer", certs.issue(ca, "CN=peer", hosts=("peer.invalid",)), ca)
    me = pem(tmp_path, ca)
    c = load(
        {
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(me.keystore),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(me.ca),
            "ssl.endpoint.identification.algorithm": identification,
        }
    )
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(str(server_files.keystore))
    port, thread = _serve_once(server)
    assert c.inter_broker_tls is not None
    client = c.inter_broker_tls.client_context()
    raw = socket.create_connection(("127.0.0.1", port), 5)
    if identification:
        with pytest.raises(ssl.SSLCertVerificationError, match="mismatch"):
            client.wrap_socket(raw, server_hostname="127.0.0.1")
        raw.close()
    else:
        with client.wrap_socket(raw, server_hostname="127.0.0.1") as s:
            s.sendall(b"x")
    thread.join(5)
