"""Listeners: ``listeners``, ``advertised.listeners``, ``listener.security.protocol.map`` and the
inter-broker listener, as Kafka 3.9.0-rc3 parses and checks them.

* listeners: ``SocketServerConfigs.listenerListToEndPoints`` and ``CoreUtils.listenerListToEndPoints`` (the URI
  regex, empty host = wildcard, upper-cased listener names, distinct names, distinct ports unless one IPv4 and
  one IPv6 address share a port, port 0 exempt; ``advertised.listeners`` may repeat ports);
* ``listener.security.protocol.map``: ``Csv.parseCsvMap`` (split at the *last* colon), names normalised
  upper-case, protocols case-insensitive;
* inter-broker listener: ``KafkaConfig.getInterBrokerListenerNameAndSecurityProtocol`` (``inter.broker.
  listener.name`` or the listener named after ``security.inter.broker.protocol``; setting both is an error;
  it must be an advertised listener) and the ``0.0.0.0`` advertised-host ban from ``validateValues``.

Stricter than Kafka where Kafka would fail later: listener names are limited to ``[A-Za-z0-9_.-]`` (what a
broker registration decoder accepts), unbalanced ``[``/``]`` and ports outside 0-65535 are rejected, and a
listener name may appear only once in the protocol map.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping

from controller.config.errors import ConfigError
from controller.config.keys import (
    ADVERTISED_LISTENERS,
    DEFAULT_LISTENER_SECURITY_PROTOCOL_MAP,
    DEFAULT_LISTENERS,
    INTER_BROKER_LISTENER_NAME,
    INTER_BROKER_SECURITY_PROTOCOL,
    LISTENER_SECURITY_PROTOCOL_MAP,
    LISTENERS,
)
from controller.config.values import Values, java_split_csv
from zkmodel.brokers import SECURITY_PROTOCOLS, EndPoint
from zkmodel.java import java_trim

_LISTENER_NAME = re.compile(r"[A-Za-z0-9_.-]+")
# SocketServerConfigs.URI_PARSE_REGEXP, applied with Matcher.matches() (whole string).
_LISTENER_URI = re.compile(r"(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)")


def _normalise_listener_name(key: str, value: str, name: str) -> str:
    """``ListenerName.normalised``: blank is an error, else upper-cased (plus our charset check)."""
    if not java_trim(name):
        raise ConfigError.invalid(key, value, "The provided listener name is null or empty string")
    if _LISTENER_NAME.fullmatch(name) is None:
        raise ConfigError.invalid(key, value, f"listener name {name!r} may only contain letters, digits, '_', '.', '-'")
    return name.upper()


def parse_security_protocol_map(value: str, key: str = LISTENER_SECURITY_PROTOCOL_MAP) -> dict[str, str]:
    """``Csv.parseCsvMap`` + ``effectiveListenerSecurityProtocolMap``: ``NAME:PROTOCOL`` pairs."""
    value = java_trim(value)
    result: dict[str, str] = {}
    if not value:
        return result
    for entry in java_split_csv(value):
        colon = entry.rfind(":")
        if colon < 0:
            raise ConfigError.invalid(key, value, f"entry {entry!r} is not of the form LISTENER_NAME:SECURITY_PROTOCOL")
        name = _normalise_listener_name(key, value, java_trim(entry[:colon]))
        protocol = java_trim(entry[colon + 1 :]).upper()
        if protocol not in SECURITY_PROTOCOLS:
            raise ConfigError.invalid(
                key,
                value,
                f"Invalid security protocol `{java_trim(entry[colon + 1 :])}` defined in {key} "
                f"(valid: {', '.join(SECURITY_PROTOCOLS)})",
            )
        if name in result:
            raise ConfigError.invalid(key, value, f"listener name {name} appears more than once")
        result[name] = protocol
    return result


def ip_version(host: str) -> int | None:
    """4 or 6 for an IP address literal, None for a host name."""
    try:
        return ipaddress.ip_address(host).version
    except ValueError:
        return None


def _check_duplicate_ports(key: str, value: str, endpoints: list[EndPoint]) -> None:
    """``CoreUtils.listenerListToEndPoints`` with ``requireDistinctPorts = true``."""
    by_port: dict[int, list[EndPoint]] = {}
    for ep in endpoints:
        if ep.port != 0:  # port 0 (ephemeral) is exempt, as in Kafka
            by_port.setdefault(ep.port, []).append(ep)
    for port, eps in by_port.items():
        if len(eps) < 2:
            continue
        with_ip: list[EndPoint] = []
        without_ip: list[EndPoint] = []
        for ep in eps:
            (with_ip if ep.host and ip_version(ep.host) is not None else without_ip).append(ep)
        if len(without_ip) > 1:
            raise ConfigError.invalid(key, value, f"Each listener must have a different port (port {port})")
        if not with_ip:
            continue
        if len(with_ip) == 2:
            versions = {ip_version(ep.host) for ep in with_ip}
            if versions != {4, 6} or without_ip:
                raise ConfigError.invalid(
                    key,
                    value,
                    "If you have two listeners on the same port then one needs to be IPv4 and the other IPv6, "
                    f"port: {port}",
                )
        else:
            raise ConfigError.invalid(
                key,
                value,
                "Each listener must have a different port unless exactly one listener has an IPv4 address and "
                f"the other IPv6 address, port: {port}",
            )


def parse_listener_list(
    value: str,
    protocol_map: Mapping[str, str],
    *,
    key: str = LISTENERS,
    require_distinct_ports: bool = True,
) -> tuple[EndPoint, ...]:
    """``listenerListToEndPoints``: ``NAME://host:port`` entries, comma-separated.

    Empty host means the wildcard address (kept as ``""``); IPv6 goes in brackets. Listener names must be
    distinct and mapped in ``protocol_map``; with ``require_distinct_ports`` two listeners may share a port
    only if one binds an IPv4 and the other an IPv6 address.
    """
    value = java_trim(value)
    entries = [e for e in java_split_csv(value) if e] if value else []
    endpoints: list[EndPoint] = []
    for entry in entries:
        m = _LISTENER_URI.fullmatch(entry)
        if m is None:
            raise ConfigError.invalid(key, value, f"Unable to parse {entry} to a broker endpoint")
        name = _normalise_listener_name(key, value, m[1])
        rest = entry[len(m[1]) + 3 :]
        if rest.startswith("[") != (rest.find("]") >= 0) or rest.count("[") > 1 or rest.count("]") > 1:
            raise ConfigError.invalid(key, value, f"Unbalanced brackets in {entry}")
        port = int(m[3])
        if not 0 <= port <= 65535:
            raise ConfigError.invalid(key, value, f"port {port} of {entry} is not in 0-65535")
        protocol = protocol_map.get(name)
        if protocol is None:
            raise ConfigError.invalid(
                key,
                value,
                f"No security protocol defined for listener {name} (add it to {LISTENER_SECURITY_PROTOCOL_MAP})",
            )
        endpoints.append(EndPoint(name, m[2], port, protocol))
    names = [ep.listener for ep in endpoints]
    if len(set(names)) != len(names):
        raise ConfigError.invalid(key, value, "Each listener must have a different name")
    if require_distinct_ports:
        _check_duplicate_ports(key, value, endpoints)
    return tuple(endpoints)


def _inter_broker_listener(values: Values, protocol_map: Mapping[str, str]) -> str:
    name = values.string(INTER_BROKER_LISTENER_NAME, None)
    if name is not None:
        if values.given(INTER_BROKER_SECURITY_PROTOCOL):
            raise ConfigError(
                f"Only one of {INTER_BROKER_LISTENER_NAME} and {INTER_BROKER_SECURITY_PROTOCOL} should be set.",
                INTER_BROKER_LISTENER_NAME,
            )
        listener = _normalise_listener_name(INTER_BROKER_LISTENER_NAME, name, name)
        if listener not in protocol_map:
            raise ConfigError.invalid(
                INTER_BROKER_LISTENER_NAME,
                name,
                f"Listener with name {listener} not found in {LISTENER_SECURITY_PROTOCOL_MAP}",
            )
        return listener
    protocol = values.string(INTER_BROKER_SECURITY_PROTOCOL, "PLAINTEXT") or ""
    if protocol not in SECURITY_PROTOCOLS:
        raise ConfigError.invalid(
            INTER_BROKER_SECURITY_PROTOCOL, protocol, f"String must be one of: {', '.join(SECURITY_PROTOCOLS)}"
        )
    return protocol  # ListenerName.forSecurityProtocol


def read_listeners(
    values: Values,
) -> tuple[dict[str, str], tuple[EndPoint, ...], tuple[EndPoint, ...], str]:
    """The protocol map, the bound and the advertised listeners, and the inter-broker listener's name, checked
    against each other as ``KafkaConfig.validateValues`` does."""
    protocol_map = parse_security_protocol_map(
        values.string(LISTENER_SECURITY_PROTOCOL_MAP, DEFAULT_LISTENER_SECURITY_PROTOCOL_MAP) or ""
    )
    listeners_text = values.string(LISTENERS, DEFAULT_LISTENERS) or ""
    listeners = parse_listener_list(listeners_text, protocol_map, key=LISTENERS)
    if not listeners:
        raise ConfigError.invalid(LISTENERS, listeners_text, "at least one listener is required")
    advertised_text = values.string(ADVERTISED_LISTENERS, None)
    if advertised_text is None:
        advertised = listeners
    else:
        advertised = parse_listener_list(
            advertised_text, protocol_map, key=ADVERTISED_LISTENERS, require_distinct_ports=False
        )
        if not advertised:
            raise ConfigError.invalid(ADVERTISED_LISTENERS, advertised_text, "at least one listener is required")
        bound = {ep.listener for ep in listeners}
        extra = [ep.listener for ep in advertised if ep.listener not in bound]
        if extra:
            raise ConfigError.invalid(
                ADVERTISED_LISTENERS,
                advertised_text,
                f"{ADVERTISED_LISTENERS} listener names must be equal to or a subset of the ones defined in "
                f"{LISTENERS}. Found {','.join(extra)}. The valid options based on the current configuration are "
                f"{','.join(ep.listener for ep in listeners)}",
            )
    for ep in advertised:
        if ep.host == "0.0.0.0":
            raise ConfigError.invalid(
                ADVERTISED_LISTENERS,
                advertised_text if advertised_text is not None else listeners_text,
                f"{ADVERTISED_LISTENERS} cannot use the nonroutable meta-address 0.0.0.0. Use a routable IP address."
                + ("" if advertised_text is not None else f" ({ADVERTISED_LISTENERS} defaults to {LISTENERS})"),
            )
    inter = _inter_broker_listener(values, protocol_map)
    if inter not in {ep.listener for ep in advertised}:
        given_protocol = values.given(INTER_BROKER_SECURITY_PROTOCOL)
        key = INTER_BROKER_SECURITY_PROTOCOL if given_protocol else INTER_BROKER_LISTENER_NAME
        raise ConfigError.invalid(
            key,
            inter,
            f"{INTER_BROKER_LISTENER_NAME} must be a listener name defined in {ADVERTISED_LISTENERS}. "
            f"The valid options based on currently configured listeners are "
            f"{','.join(ep.listener for ep in advertised)}",
        )
    return protocol_map, listeners, advertised, inter
