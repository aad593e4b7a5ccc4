"""A throw-away certificate authority for trying TLS (``bridgekeeper up --tls``) and for the tests: a CA, and
certificates it signs for the nodes and for clients, written as the PEM files Kafka's ``ssl.keystore.type=PEM``
and ``ssl.truststore.type=PEM`` read (a keystore file holds the private key and then the certificate chain).

Not for production: the keys are unencrypted unless a password is given, and live in the stack's data dir.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class Issued:
    """A private key and its certificate (signed by ``ca`` unless self-signed)."""

    key: ec.EllipticCurvePrivateKey
    cert: x509.Certificate

    def key_pem(self, password: str | None = None) -> bytes:
        encryption: serialization.KeySerializationEncryption = (
            serialization.BestAvailableEncryption(password.encode()) if password else serialization.NoEncryption()
        )
        return self.key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)

    def cert_pem(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.PEM)


def _name(text: str) -> x509.Name:
    """``CN=a,OU=b,O=c`` (most specific first, as Kafka prints DNs) as an x509 Name."""
    oids = {
        "CN": NameOID.COMMON_NAME,
        "OU": NameOID.ORGANIZATIONAL_UNIT_NAME,
        "O": NameOID.ORGANIZATION_NAME,
        "L": NameOID.LOCALITY_NAME,
        "ST": NameOID.STATE_OR_PROVINCE_NAME,
        "C": NameOID.COUNTRY_NAME,
    }
    attributes = []
    for part in reversed(text.split(",")):
        key, _eq, value = part.partition("=")
        attributes.append(x509.NameAttribute(oids[key.strip()], value.strip()))
    return x509.Name(attributes)


def make_ca(subject: str = "CN=bridgekeeper throw-away CA", *, days: int = 30) -> Issued:
    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.UTC)
    name = _name(subject)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    return Issued(key, cert)


def issue(
    ca: Issued,
    subject: str,
    *,
    hosts: tuple[str, ...] = ("localhost", "127.0.0.1"),
    not_before: dt.datetime | None = None,
    not_after: dt.datetime | None = None,
) -> Issued:
    """A certificate for ``subject`` (a DN such as ``CN=node-1``) signed by ``ca``, valid for ``hosts`` (DNS
    names or IP addresses) as server and as client. ``not_before``/``not_after`` default to now-5 min / +30 days;
    the tests move them to make expired and not-yet-valid certificates."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.UTC)
    sans: list[x509.GeneralName] = []
    for host in hosts:
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            sans.append(x509.DNSName(host))
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(ca.cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before or now - dt.timedelta(minutes=5))
        .not_valid_after(not_after or now + dt.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False
        )
    )
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return Issued(key, builder.sign(ca.key, hashes.SHA256()))


@dataclass(frozen=True)
class PemFiles:
    """Where a keystore (key, then chain), its certificate and key alone, and the CA were written."""

    keystore: Path
    cert: Path
    key: Path
    ca: Path


def write_pem(directory: Path, name: str, issued: Issued, ca: Issued, *, password: str | None = None) -> PemFiles:
    """``<name>.keystore.pem`` (Kafka's PEM keystore), ``<name>.crt`` / ``<name>.key`` (for clients such as
    librdkafka and kcat), ``ca.crt`` (the truststore), all 0600 under ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    files = PemFiles(
        directory / f"{name}.keystore.pem", directory / f"{name}.crt", directory / f"{name}.key", directory / "ca.crt"
    )
    contents = {
        files.keystore: issued.key_pem(password) + issued.cert_pem() + ca.cert_pem(),
        files.cert: issued.cert_pem(),
        files.key: issued.key_pem(password),
        files.ca: ca.cert_pem(),
    }
    for path, data in contents.items():
        path.write_bytes(data)
        path.chmod(0o600)
    return files
