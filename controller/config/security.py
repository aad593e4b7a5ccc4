"""The node's security settings, read from Kafka's keys and checked at load:

* ``super.users``: ``StandardAuthorizer.getConfiguredSuperUsers`` (``;``-separated, trimmed, empty pieces
  skipped, each ``type:name``);
* SASL per SASL listener (``sasl.enabled.mechanisms``, listener-prefixed first, and the PLAIN users of its
  JAAS entry) and this node's inter-broker credentials (``sasl.mechanism.inter.broker.protocol``);
* TLS per SSL / SASL_SSL listener, for the inter-broker client and to ZooKeeper (the keys: :mod:`.tls`);
* the ZooKeeper digest identities this node writes with (``bridgekeeper.zookeeper.digest``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType

from controller.config.errors import ConfigError
from controller.config.keys import SASL_ENABLED_MECHANISMS, SASL_MECHANISM_INTER_BROKER, SUPER_USERS
from controller.config.tls import TlsConfigError, tls_settings, zookeeper_tls_settings
from controller.config.values import Values, java_split_csv
from controller.security.plain import JaasConfig, parse_jaas_config
from controller.security.settings import SUPPORTED_SASL_MECHANISMS, ListenerSasl, SaslCredentials, ZkDigest
from controller.security.tls import TlsSettings
from zkmodel.brokers import EndPoint
from zkmodel.java import java_trim


def read_super_users(values: Values) -> tuple[str, ...]:
    """``super.users``: ``;``-separated principals, each ``type:name``, duplicates dropped."""
    text = values.raw.get(SUPER_USERS)
    if text is None:
        return ()
    users: list[str] = []
    for piece in text.split(";"):
        principal = java_trim(piece)
        if not principal:
            continue
        kind, colon, _name = principal.partition(":")
        if not colon or not kind:
            raise ConfigError.invalid(
                SUPER_USERS, text, f"expected a string in format principalType:principalName but got {principal}"
            )
        if principal not in users:
            users.append(principal)
    return tuple(users)


def _mechanisms(values: Values, listener: str) -> tuple[str, tuple[str, ...]]:
    """The listener's ``sasl.enabled.mechanisms`` (listener-prefixed first, as Kafka looks it up)."""
    prefixed = f"listener.name.{listener.lower()}.{SASL_ENABLED_MECHANISMS}"
    key = prefixed if prefixed in values.raw else SASL_ENABLED_MECHANISMS
    text = values.string(key, "GSSAPI") or ""
    mechanisms = tuple(dict.fromkeys(m for m in (java_trim(x) for x in java_split_csv(text)) if m))
    if not mechanisms:
        raise ConfigError.invalid(key, text, f"listener {listener} is a SASL listener but enables no SASL mechanism")
    for m in mechanisms:
        if m not in SUPPORTED_SASL_MECHANISMS:
            raise ConfigError.invalid(
                key,
                text,
                f"SASL mechanism {m} is not supported by bridgekeeper "
                f"(supported: {', '.join(SUPPORTED_SASL_MECHANISMS)})",
            )
    return key, mechanisms


def _jaas(values: Values, listener: str, mechanism: str) -> tuple[str, JaasConfig | None]:
    key = f"listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config"
    text = values.raw.get(key)
    if text is None:
        return key, None
    try:
        return key, parse_jaas_config(text)
    except ValueError as exc:
        raise ConfigError.invalid(key, "[hidden]", str(exc)) from None


def read_sasl(
    values: Values, listeners: Sequence[EndPoint], protocol_map: Mapping[str, str], inter: str
) -> tuple[dict[str, ListenerSasl], SaslCredentials | None]:
    """Kafka's SASL server settings per SASL listener, and the inter-broker client's credentials."""
    result: dict[str, ListenerSasl] = {}
    for ep in listeners:
        protocol = protocol_map.get(ep.listener, ep.listener)
        if not protocol.startswith("SASL_"):
            continue
        _key, mechanisms = _mechanisms(values, ep.listener)
        users: dict[str, str] = {}
        if "PLAIN" in mechanisms:
            key, jaas = _jaas(values, ep.listener, "PLAIN")
            if jaas is None:
                raise ConfigError.invalid(
                    key,
                    "",
                    f"Could not find a JAAS configuration for SASL/PLAIN on listener {ep.listener}; set "
                    f'{key} to a PlainLoginModule entry with user_<name>="<password>" options',
                )
            users = jaas.plain_users()
        result[ep.listener] = ListenerSasl(mechanisms, MappingProxyType(users))
    inter_sasl: SaslCredentials | None = None
    if inter in result:
        text = values.string(SASL_MECHANISM_INTER_BROKER, "GSSAPI") or ""
        mechanism = java_trim(text)
        if mechanism not in result[inter].mechanisms:
            raise ConfigError.invalid(
                SASL_MECHANISM_INTER_BROKER,
                text,
                f"{SASL_MECHANISM_INTER_BROKER} must be included in {SASL_ENABLED_MECHANISMS} when SASL is used "
                f"for inter-broker communication (listener {inter} enables {', '.join(result[inter].mechanisms)})",
            )
        key, jaas = _jaas(values, inter, mechanism)
        if jaas is None or not jaas.username or jaas.password is None:
            raise ConfigError.invalid(
                key,
                "",
                f"the inter-broker listener {inter} uses SASL/{mechanism}: {key} must give this node's "
                "username and password",
            )
        inter_sasl = SaslCredentials(mechanism, jaas.username, jaas.password)
    return result, inter_sasl


#: The security protocols whose listeners speak TLS.
TLS_PROTOCOLS = ("SSL", "SASL_SSL")


def read_tls(
    values: Values, listeners: Sequence[EndPoint], protocol_map: Mapping[str, str], inter: str
) -> tuple[dict[str, TlsSettings], TlsSettings | None, TlsSettings | None]:
    """Each SSL / SASL_SSL listener's TLS settings (its keystore required), this node's as a TLS client of the
    inter-broker listener (Kafka builds that client from the same listener's keys), and its TLS to ZooKeeper
    (None unless ``zookeeper.ssl.client.enable``), all checked now."""
    result: dict[str, TlsSettings] = {}
    try:
        for ep in listeners:
            protocol = protocol_map.get(ep.listener, ep.listener)
            if protocol in TLS_PROTOCOLS:
                result[ep.listener] = tls_settings(
                    values.raw, ep.listener, need_keystore=True, sasl=protocol == "SASL_SSL"
                )
        inter_tls = None
        if protocol_map.get(inter, inter) in TLS_PROTOCOLS:
            inter_tls = tls_settings(values.raw, inter, need_keystore=False)
        zk_tls = zookeeper_tls_settings(values.raw)
    except TlsConfigError as exc:
        raise ConfigError(str(exc), exc.key) from None
    return result, inter_tls, zk_tls


def read_digest(values: Values, key: str) -> ZkDigest | None:
    """A ZooKeeper digest identity, ``USER:PASSWORD`` or ``digest:USER:PASSWORD``; None when unset or blank."""
    text = values.raw.get(key)
    if text is None or not java_trim(text):
        return None
    text = java_trim(text)
    # The tools' form, digest:USER:PASSWORD, is taken too, so one identity string serves the file and the flags.
    if text.startswith("digest:") and text.count(":") >= 2:
        text = text.removeprefix("digest:")
    user, colon, password = text.partition(":")
    if not colon or not user:
        raise ConfigError.invalid(key, "[hidden]", "expected digest:USER:PASSWORD or USER:PASSWORD")
    return ZkDigest(user, password)
