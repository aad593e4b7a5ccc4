"""TLS material and contexts: what an SSL or SASL_SSL listener serves with, and what the node presents to another
node's listener (forwarding, AlterPartition, ControlledShutdown).

Everything is loaded and checked when the node's configuration is: a keystore file that is missing, a key
that does not open with its password or does not belong to the certificate, a certificate that has expired or is
not valid yet, a truststore that holds no certificate — each is a :class:`TlsMaterialError` naming the Kafka key
it came from, so that an operator learns of it at start, not from the first client's failed handshake.

Kafka's keystore types: PEM (KIP-651: a file holding the private key and the certificate chain, or both inline)
and PKCS12 (opened here with ``cryptography``). JKS is Java's own format; it is refused with how to convert it.
Python's ``ssl`` reads a certificate chain only from a file, so the checked material is written to a private
temporary file for the moment ``load_cert_chain`` reads it, then removed.
"""

from __future__ import annotations

import datetime as dt
import os
import secrets
import ssl
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

from controller.security.ssl_principal import SslPrincipalMapper

CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}
PROTOCOL_VERSIONS = {
    "TLSv1": ssl.TLSVersion.TLSv1,
    "TLSv1.1": ssl.TLSVersion.TLSv1_1,
    "TLSv1.2": ssl.TLSVersion.TLSv1_2,
    "TLSv1.3": ssl.TLSVersion.TLSv1_3,
}
#: Kafka's ``ssl.cipher.suites`` are Java (IANA) names; OpenSSL names its TLS 1.2 suites differently. TLS 1.3
#: suites keep their IANA names in OpenSSL, and Python's ``ssl`` cannot narrow them (they are always on).
IANA_TO_OPENSSL = {
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384": "DHE-RSA-AES256-GCM-SHA384",
    "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256": "DHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384": "ECDHE-ECDSA-AES256-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384": "ECDHE-RSA-AES256-SHA384",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256": "ECDHE-ECDSA-AES128-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256": "ECDHE-RSA-AES128-SHA256",
    "TLS_RSA_WITH_AES_256_GCM_SHA384": "AES256-GCM-SHA384",
    "TLS_RSA_WITH_AES_128_GCM_SHA256": "AES128-GCM-SHA256",
}
TLS13_SUITES = frozenset({"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"})


class TlsMaterialError(ValueError):
    """Bad TLS settings or material; ``key`` is the Kafka configuration key it came from."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key
        self.message = message


@dataclass(frozen=True)
class KeyStore:
    """A certificate chain (leaf first) and its private key, both PEM, the key unencrypted once checked."""

    chain_pem: bytes = field(repr=False)
    key_pem: bytes = field(repr=False)
    subject: str


@dataclass(frozen=True)
class TlsSettings:
    """One listener's TLS settings (or this node's as a TLS client), loaded and checked."""

    keystore: KeyStore | None
    #: PEM CA certificates to verify peers with; None: the system's default CAs (Kafka: the JVM's).
    truststore_pem: str | None = field(repr=False)
    client_auth: str = "none"
    protocols: tuple[str, ...] = ("TLSv1.2", "TLSv1.3")
    #: OpenSSL cipher names (translated from Kafka's), empty for OpenSSL's defaults.
    ciphers: tuple[str, ...] = ()
    hostname_verification: bool = True
    mapper: SslPrincipalMapper = field(default_factory=lambda: SslPrincipalMapper.from_rules(None))

    def _base(self, purpose: int) -> ssl.SSLContext:
        ctx = ssl.SSLContext(purpose)
        versions = [PROTOCOL_VERSIONS[p] for p in self.protocols]
        ctx.minimum_version, ctx.maximum_version = min(versions), max(versions)
        if self.ciphers:
            ctx.set_ciphers(":".join(self.ciphers))
        if self.truststore_pem is not None:
            ctx.load_verify_locations(cadata=self.truststore_pem)
        else:
            ctx.load_default_certs(
                ssl.Purpose.CLIENT_AUTH if purpose == ssl.PROTOCOL_TLS_SERVER else ssl.Purpose.SERVER_AUTH
            )
        if self.keystore is not None:
            _load_chain(ctx, self.keystore)
        return ctx

    def write_client_files(self, directory: str) -> tuple[str | None, str | None, str | None, str | None]:
        """For clients that read files (kazoo): (CA bundle, certificate chain, key, key password) written 0600
        under ``directory``; the key is encrypted with a password made here and kept in memory only."""
        ca = cert = key = password = None
        if self.truststore_pem is not None:
            ca = _private_file(directory, "ca.pem", self.truststore_pem.encode())
        if self.keystore is not None:
            password = secrets.token_urlsafe(24)
            loaded = serialization.load_pem_private_key(self.keystore.key_pem, None)
            encrypted = loaded.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.BestAvailableEncryption(password.encode()),
            )
            cert = _private_file(directory, "chain.pem", self.keystore.chain_pem)
            key = _private_file(directory, "key.pem", encrypted)
        return ca, cert, key, password

    def server_context(self) -> ssl.SSLContext:
        """What a listener serves with: its certificate, and client certificates per ``ssl.client.auth``."""
        ctx = self._base(ssl.PROTOCOL_TLS_SERVER)
        ctx.verify_mode = CLIENT_AUTH[self.client_auth]
        return ctx

    def client_context(self) -> ssl.SSLContext:
        """What this node connects with: the peer verified against the truststore, the hostname per
        ``ssl.endpoint.identification.algorithm``, and this node's own certificate for mutual TLS."""
        ctx = self._base(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = self.hostname_verification
        ctx.verify_mode = ssl.CERT_REQUIRED
        return ctx


def _private_file(directory: str, name: str, data: bytes) -> str:
    path = os.path.join(directory, name)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    return path


def _load_chain(ctx: ssl.SSLContext, store: KeyStore) -> None:
    with tempfile.TemporaryDirectory(prefix="bk-tls-") as tmp:
        ctx.load_cert_chain(_private_file(tmp, "keystore.pem", store.key_pem + b"\n" + store.chain_pem))


# -- loading and checking --------------------------------------------------------------------------------------------
def read_file(key: str, location: str) -> bytes:
    try:
        with open(location, "rb") as f:
            return f.read()
    except OSError as exc:
        raise TlsMaterialError(key, f"cannot read {location}: {exc.strerror or exc}") from None


def _certificates(key: str, pem: bytes, what: str) -> list[x509.Certificate]:
    try:
        certs = x509.load_pem_x509_certificates(pem)
    except ValueError:
        certs = []
    if not certs:
        raise TlsMaterialError(key, f"{what} holds no PEM certificate (-----BEGIN CERTIFICATE-----)")
    return certs


def _check_validity(key: str, cert: x509.Certificate, now: dt.datetime) -> None:
    subject = cert.subject.rfc4514_string()
    if cert.not_valid_after_utc < now:
        raise TlsMaterialError(
            key, f"the certificate {subject} expired on {cert.not_valid_after_utc:%Y-%m-%d %H:%M:%S} UTC"
        )
    if cert.not_valid_before_utc > now:
        raise TlsMaterialError(
            key, f"the certificate {subject} is not valid before {cert.not_valid_before_utc:%Y-%m-%d %H:%M:%S} UTC"
        )


def _unencrypted(private_key: object) -> bytes:
    return private_key.private_bytes(  # type: ignore[attr-defined,no-any-return]
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _keystore(chain: list[x509.Certificate], private_key: object, key: str, now: dt.datetime) -> KeyStore:
    leaf = chain[0]
    spki = serialization.PublicFormat.SubjectPublicKeyInfo
    if private_key.public_key().public_bytes(serialization.Encoding.PEM, spki) != leaf.public_key().public_bytes(  # type: ignore[attr-defined]
        serialization.Encoding.PEM, spki
    ):
        raise TlsMaterialError(
            key, f"the private key does not belong to the certificate {leaf.subject.rfc4514_string()}"
        )
    _check_validity(key, leaf, now)
    chain_pem = b"".join(c.public_bytes(serialization.Encoding.PEM) for c in chain)
    return KeyStore(chain_pem, _unencrypted(private_key), leaf.subject.rfc4514_string())


def pem_keystore(
    chain_pem: bytes,
    key_pem: bytes,
    password: str | None,
    *,
    chain_key: str,
    key_key: str,
    password_key: str,
    now: dt.datetime | None = None,
) -> KeyStore:
    """A PEM keystore (KIP-651): ``chain_key`` names where the chain came from, ``key_key`` the key,
    ``password_key`` its password (``ssl.key.password``)."""
    now = now or dt.datetime.now(dt.UTC)
    chain = _certificates(chain_key, chain_pem, "the keystore")
    if b"PRIVATE KEY-----" not in key_pem:
        raise TlsMaterialError(key_key, "the keystore holds no PEM private key (-----BEGIN PRIVATE KEY-----)")
    try:
        private_key = serialization.load_pem_private_key(key_pem, password.encode() if password else None)
    except TypeError:
        if password:
            raise TlsMaterialError(password_key, "the private key is not encrypted, yet a password is set") from None
        raise TlsMaterialError(password_key, "the private key is encrypted: set its password") from None
    except ValueError as exc:
        if password:
            raise TlsMaterialError(password_key, "cannot decrypt the private key: wrong password") from None
        raise TlsMaterialError(key_key, f"cannot read the private key: {exc}") from None
    return _keystore(chain, private_key, chain_key, now)


def _open_pkcs12(data: bytes, password: str | None, *, key: str, password_key: str, what: str) -> Any:
    try:
        return pkcs12.load_key_and_certificates(data, password.encode() if password else None)
    except ValueError as exc:
        if "password" in str(exc).lower() or "mac" in str(exc).lower():
            raise TlsMaterialError(password_key, f"cannot open the PKCS12 {what}: wrong password") from None
        raise TlsMaterialError(key, f"not a PKCS12 {what}: {exc}") from None


def pkcs12_keystore(
    data: bytes, password: str | None, *, key: str, password_key: str, now: dt.datetime | None = None
) -> KeyStore:
    """A PKCS12 keystore file (``ssl.keystore.type=PKCS12``) opened with its store password."""
    now = now or dt.datetime.now(dt.UTC)
    private_key, cert, extra = _open_pkcs12(data, password, key=key, password_key=password_key, what="keystore")
    if private_key is None or cert is None:
        raise TlsMaterialError(key, "the PKCS12 keystore holds no private key with its certificate")
    return _keystore([cert, *extra], private_key, key, now)


def pem_truststore(pem: bytes, *, key: str) -> str:
    certs = _certificates(key, pem, "the truststore")
    return "".join(c.public_bytes(serialization.Encoding.PEM).decode() for c in certs)


def pkcs12_truststore(data: bytes, password: str | None, *, key: str, password_key: str) -> str:
    _k, cert, extra = _open_pkcs12(data, password, key=key, password_key=password_key, what="truststore")
    certs = [c for c in [cert, *extra] if c is not None]
    if not certs:
        raise TlsMaterialError(key, "the PKCS12 truststore holds no certificate")
    return "".join(c.public_bytes(serialization.Encoding.PEM).decode() for c in certs)


def protocols(text: Sequence[str], *, key: str) -> tuple[str, ...]:
    names = tuple(p for p in text if p)
    if not names:
        raise TlsMaterialError(key, "no TLS protocol enabled")
    for name in names:
        if name not in PROTOCOL_VERSIONS:
            raise TlsMaterialError(key, f"unknown TLS protocol {name} (known: {', '.join(PROTOCOL_VERSIONS)})")
    return names


def ciphers(names: Sequence[str], *, key: str) -> tuple[str, ...]:
    """Kafka's (IANA) or OpenSSL cipher names as OpenSSL names; TLS 1.3 suites are always on and dropped here."""
    out = []
    for name in (n for n in names if n):
        if name in TLS13_SUITES:
            continue
        out.append(IANA_TO_OPENSSL.get(name, name))
    if out:
        probe = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        for name in out:
            try:
                probe.set_ciphers(name)
            except ssl.SSLError:
                raise TlsMaterialError(key, f"unknown or unavailable cipher suite {name}") from None
    return tuple(out)
