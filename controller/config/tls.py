"""Kafka's ``ssl.*`` keys for an SSL or SASL_SSL listener, and for this node as a TLS client, read into checked
:class:`controller.security.tls.TlsSettings`.

Each key is looked up as Kafka does for a listener: ``listener.name.<listener>.<key>`` first, then ``<key>``.
Errors name the key actually read, so an operator knows which line of the properties file to fix.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from controller.security.ssl_principal import InvalidRule, SslPrincipalMapper
from controller.security.tls import (
    CLIENT_AUTH,
    KeyStore,
    TlsMaterialError,
    TlsSettings,
    ciphers,
    pem_keystore,
    pem_truststore,
    pkcs12_keystore,
    pkcs12_truststore,
    protocols,
    read_file,
)

KEYSTORE_TYPE = "ssl.keystore.type"
KEYSTORE_LOCATION = "ssl.keystore.location"
KEYSTORE_PASSWORD = "ssl.keystore.password"
KEYSTORE_CHAIN = "ssl.keystore.certificate.chain"
KEYSTORE_KEY = "ssl.keystore.key"
KEY_PASSWORD = "ssl.key.password"
TRUSTSTORE_TYPE = "ssl.truststore.type"
TRUSTSTORE_LOCATION = "ssl.truststore.location"
TRUSTSTORE_PASSWORD = "ssl.truststore.password"
TRUSTSTORE_CERTIFICATES = "ssl.truststore.certificates"
CLIENT_AUTH_KEY = "ssl.client.auth"
ENABLED_PROTOCOLS = "ssl.enabled.protocols"
PROTOCOL = "ssl.protocol"
CIPHER_SUITES = "ssl.cipher.suites"
ENDPOINT_IDENTIFICATION = "ssl.endpoint.identification.algorithm"
PRINCIPAL_MAPPING_RULES = "ssl.principal.mapping.rules"

#: Java SSLContext algorithms we can honour (``ssl.protocol``); a version caps the enabled protocols.
SSL_PROTOCOLS = ("TLS", "TLSv1.2", "TLSv1.3")
JKS_ADVICE = (
    "JKS keystores are Java's own format: convert it to PKCS12 (keytool -importkeystore -srckeystore <file> "
    "-destkeystore <file>.p12 -deststoretype PKCS12) or to PEM, and set {key}=PKCS12 or PEM"
)


class TlsConfigError(ValueError):
    """A TLS setting Kafka's keys describe wrongly; ``key`` is the full key read (listener-prefixed or not)."""

    def __init__(self, key: str, value: object, message: str) -> None:
        super().__init__(f"Invalid value {value} for configuration {key}: {message}")
        self.key = key


def _java_split_csv(text: str) -> list[str]:
    return [p.strip() for p in text.split(",") if p.strip()]


class _Lookup:
    """``listener.name.<l>.<key>`` before ``<key>`` (or ``zookeeper.<key>`` for the ZooKeeper client's keys);
    remembers which key answered, for the error."""

    def __init__(self, raw: Mapping[str, str], listener: str | None, family: str = "") -> None:
        self.raw = raw
        self.prefix = f"listener.name.{listener.lower()}." if listener else ""
        self.family = family

    def key(self, name: str) -> str:
        name = self.family + name
        prefixed = self.prefix + name
        return prefixed if self.prefix and prefixed in self.raw else name

    def get(self, name: str, default: str | None = None) -> str | None:
        value = self.raw.get(self.key(name))
        return default if value is None else value.strip()


def _hidden(name: str) -> bool:
    return "password" in name or name.endswith(".key")


def tls_settings(
    raw: Mapping[str, str], listener: str | None, *, need_keystore: bool, sasl: bool = False
) -> TlsSettings:
    """The TLS settings of ``listener`` (None: this node as a client, from the global keys). ``need_keystore``:
    a listener must have a certificate to serve; a client only presents one if given. ``sasl``: a SASL_SSL
    listener, which asks for client certificates only when its own ``listener.name.<l>.ssl.client.auth`` says
    so; the broker-wide ``ssl.client.auth`` is for SSL listeners (KIP-684, as Kafka 2.8+)."""
    return _checked(_Lookup(raw, listener), need_keystore, sasl)


def _checked(look: _Lookup, need_keystore: bool, sasl: bool = False) -> TlsSettings:
    """:func:`_settings`, a bad value reported under the full key it was read from (secrets hidden)."""
    try:
        return _settings(look, need_keystore, sasl)
    except TlsMaterialError as exc:
        shown = "[hidden]" if _hidden(exc.key) else look.get(exc.key, "null")
        raise TlsConfigError(look.key(exc.key), shown, exc.message) from None


def _settings(look: _Lookup, need_keystore: bool, sasl: bool = False) -> TlsSettings:
    keystore = _keystore(look, need_keystore)
    truststore = _truststore(look)
    own_client_auth = look.prefix and look.prefix + CLIENT_AUTH_KEY in look.raw
    client_auth = (look.get(CLIENT_AUTH_KEY, "none") or "none").lower() if own_client_auth or not sasl else "none"
    if client_auth not in CLIENT_AUTH:
        raise TlsMaterialError(CLIENT_AUTH_KEY, f"expected one of {', '.join(CLIENT_AUTH)}")
    enabled = protocols(_java_split_csv(look.get(ENABLED_PROTOCOLS, "TLSv1.2,TLSv1.3") or ""), key=ENABLED_PROTOCOLS)
    protocol = look.get(PROTOCOL, "TLSv1.3") or "TLSv1.3"
    if protocol not in SSL_PROTOCOLS:
        raise TlsMaterialError(PROTOCOL, f"unsupported SSL protocol (supported: {', '.join(SSL_PROTOCOLS)})")
    if protocol != "TLS" and protocol not in enabled:
        enabled = tuple(p for p in enabled if p <= protocol) or enabled
    suites = ciphers(_java_split_csv(look.get(CIPHER_SUITES, "") or ""), key=CIPHER_SUITES)
    identification = (look.get(ENDPOINT_IDENTIFICATION, "https") or "").lower()
    if identification not in ("https", ""):
        raise TlsMaterialError(ENDPOINT_IDENTIFICATION, "expected https (hostname verification) or empty (none)")
    try:
        mapper = SslPrincipalMapper.from_rules(look.get(PRINCIPAL_MAPPING_RULES))
    except InvalidRule as exc:
        raise TlsMaterialError(PRINCIPAL_MAPPING_RULES, str(exc)) from None
    return TlsSettings(keystore, truststore, client_auth, enabled, suites, identification == "https", mapper)


def _keystore(look: _Lookup, need: bool) -> KeyStore | None:
    """The keystore: inline PEM (listeners only, KIP-651) or a PEM / PKCS12 file. A PEM file's key opens with
    ``ssl.key.password`` on a listener and with the keystore password for ZooKeeper, as its PEMFileLoader does."""
    location = look.get(KEYSTORE_LOCATION)
    kind = _store_type(look, KEYSTORE_TYPE, location)
    chain, key = (None, None) if look.family else (look.get(KEYSTORE_CHAIN), look.get(KEYSTORE_KEY))
    if chain is not None or key is not None:
        if kind != "PEM":
            raise TlsMaterialError(KEYSTORE_TYPE, f"{KEYSTORE_CHAIN} and {KEYSTORE_KEY} need {KEYSTORE_TYPE}=PEM")
        if location is not None:
            raise TlsMaterialError(
                KEYSTORE_LOCATION, f"give either {KEYSTORE_LOCATION} or {KEYSTORE_CHAIN} and {KEYSTORE_KEY}"
            )
        if chain is None or key is None:
            missing = KEYSTORE_KEY if key is None else KEYSTORE_CHAIN
            raise TlsMaterialError(missing, f"an inline PEM keystore needs both {KEYSTORE_CHAIN} and {KEYSTORE_KEY}")
        return pem_keystore(
            chain.encode(),
            key.encode(),
            look.get(KEY_PASSWORD),
            chain_key=KEYSTORE_CHAIN,
            key_key=KEYSTORE_KEY,
            password_key=KEY_PASSWORD,
        )
    if location is None:
        if need:
            raise TlsMaterialError(
                KEYSTORE_LOCATION, "an SSL listener needs a keystore: set it (or the inline PEM keys)"
            )
        return None
    if kind == "JKS":
        raise TlsMaterialError(KEYSTORE_TYPE, JKS_ADVICE.format(key=look.key(KEYSTORE_TYPE)))
    data = read_file(KEYSTORE_LOCATION, location)
    if kind == "PEM":
        password_key = KEYSTORE_PASSWORD if look.family else KEY_PASSWORD
        return pem_keystore(
            data,
            data,
            look.get(password_key),
            chain_key=KEYSTORE_LOCATION,
            key_key=KEYSTORE_LOCATION,
            password_key=password_key,
        )
    if kind == "PKCS12":
        return pkcs12_keystore(data, look.get(KEYSTORE_PASSWORD), key=KEYSTORE_LOCATION, password_key=KEYSTORE_PASSWORD)
    raise TlsMaterialError(KEYSTORE_TYPE, "expected PEM or PKCS12")


def _store_type(look: _Lookup, type_key: str, location: str | None) -> str:
    """The store type: as set, else (ZooKeeper's keys, which have no default) from the file's extension as
    ZooKeeper's X509Util infers it, else Kafka's default JKS."""
    given = look.get(type_key)
    if given:
        return given.upper()
    if look.family and location:
        suffix = location.rsplit(".", 1)[-1].lower()
        return {"pem": "PEM", "crt": "PEM", "p12": "PKCS12", "pfx": "PKCS12"}.get(suffix, "JKS")
    return "JKS"


def _truststore(look: _Lookup) -> str | None:
    location, inline = look.get(TRUSTSTORE_LOCATION), look.get(TRUSTSTORE_CERTIFICATES)
    kind = _store_type(look, TRUSTSTORE_TYPE, location)
    if inline is not None:
        if kind != "PEM":
            raise TlsMaterialError(TRUSTSTORE_TYPE, f"{TRUSTSTORE_CERTIFICATES} needs {TRUSTSTORE_TYPE}=PEM")
        return pem_truststore(inline.encode(), key=TRUSTSTORE_CERTIFICATES)
    if location is None:
        return None
    if kind == "JKS":
        raise TlsMaterialError(TRUSTSTORE_TYPE, JKS_ADVICE.format(key=look.key(TRUSTSTORE_TYPE)))
    data = read_file(TRUSTSTORE_LOCATION, location)
    if kind == "PEM":
        return pem_truststore(data, key=TRUSTSTORE_LOCATION)
    if kind == "PKCS12":
        return pkcs12_truststore(
            data, look.get(TRUSTSTORE_PASSWORD), key=TRUSTSTORE_LOCATION, password_key=TRUSTSTORE_PASSWORD
        )
    raise TlsMaterialError(TRUSTSTORE_TYPE, "expected PEM or PKCS12")


ZK_CLIENT_ENABLE = "zookeeper.ssl.client.enable"
ZK_ENDPOINT_IDENTIFICATION_ENABLE = "zookeeper.ssl.endpoint.identification.enable"
ZK_UNSUPPORTED = ("zookeeper.ssl.crl.enable", "zookeeper.ssl.ocsp.enable")


def zookeeper_tls_settings(raw: Mapping[str, str]) -> TlsSettings | None:
    """Kafka's ZooKeeper client TLS (KIP-515): None unless ``zookeeper.ssl.client.enable=true``. The keys are
    the listener keys under ``zookeeper.`` (``zookeeper.ssl.keystore.location``, ...); hostname verification
    follows ``zookeeper.ssl.endpoint.identification.algorithm`` (HTTPS, the default, or empty), and the boolean
    ``zookeeper.ssl.endpoint.identification.enable`` is taken too. Revocation checks are not offered."""
    enable = (raw.get(ZK_CLIENT_ENABLE) or "false").strip().lower()
    if enable not in ("true", "false"):
        raise TlsConfigError(ZK_CLIENT_ENABLE, enable, "Expected value to be either true or false")
    if enable != "true":
        return None
    for key in ZK_UNSUPPORTED:
        if (raw.get(key) or "false").strip().lower() == "true":
            raise TlsConfigError(key, "true", "certificate revocation checks are not supported by bridgekeeper")
    settings = _checked(_Lookup(raw, None, family="zookeeper."), need_keystore=False)
    verify = (raw.get(ZK_ENDPOINT_IDENTIFICATION_ENABLE) or "").strip().lower()
    if verify not in ("", "true", "false"):
        raise TlsConfigError(ZK_ENDPOINT_IDENTIFICATION_ENABLE, verify, "Expected value to be either true or false")
    if verify:
        settings = dataclasses.replace(settings, hostname_verification=verify == "true")
    return settings
