"""Broker registrations (``/brokers/ids/<id>``, versions 1-5).

The registration is how every other node learns a broker's listeners and rack; its czxid is the broker
epoch, so the payload itself carries no epoch.
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from zkmodel.errors import ZnodeFormatError
from zkmodel.fields import (
    as_int,
    dumps,
    get_int,
    get_list,
    get_long_str,
    get_object,
    get_optional_str,
    parse_object,
)
from zkmodel.jvmorder import java_hashmap_order, scala_immutable_map_order, scala_mutable_hashmap_order

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
# Kafka's EndPoint regex (``^(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)``) matches the whole string, in ASCII.
_ENDPOINT = re.compile(
    r"(?P<listener>[A-Za-z0-9_.-]+)://(?P<host>\[[0-9A-Za-z%._:-]*\]|[^:\[\]]*):(?P<port>-?[0-9]{1,6})", re.ASCII
)
_BASE_KEYS = ("version", "host", "port", "endpoints", "jmx_port", "timestamp")


@dataclass(frozen=True)
class EndPoint:
    listener: str
    host: str
    port: int
    security_protocol: str

    @property
    def connection_string(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.listener}://{host}:{self.port}"


def parse_endpoint(path: str, text: str, protocol_map: Mapping[str, str]) -> EndPoint:
    """Parse ``LISTENER://host:port`` as Kafka's ``listenerListToEndPoints`` does."""
    m = _ENDPOINT.fullmatch(text)
    if m is None:
        raise ZnodeFormatError(path, f"endpoint {text!r} is not of the form LISTENER://host:port")
    listener = m["listener"]
    port = int(m["port"])
    if not 0 <= port <= 65535:
        raise ZnodeFormatError(path, f"endpoint {text!r} has an invalid port")
    protocol = protocol_map.get(listener)
    if protocol is None:
        raise ZnodeFormatError(path, f"endpoint {text!r}: no security protocol is mapped for listener {listener!r}")
    host = m["host"]
    if host.startswith("["):
        host = host[1:-1]
    return EndPoint(listener, host, port, protocol)


@dataclass(frozen=True)
class BrokerRegistration:
    """What a broker writes about itself. ``features`` maps name to (min_version, max_version)."""

    endpoints: tuple[EndPoint, ...]
    timestamp: int
    version: int = 5
    rack: str | None = None
    jmx_port: int = -1
    features: Mapping[str, tuple[int, int]] = field(default_factory=dict)

    def encode(self) -> bytes:
        plaintext = next((e for e in self.endpoints if e.security_protocol == "PLAINTEXT"), None)
        values: dict[str, Any] = {
            "version": self.version,
            "host": plaintext.host if plaintext else None,
            "port": plaintext.port if plaintext else -1,
            "jmx_port": self.jmx_port,
            "timestamp": str(self.timestamp),
        }
        if self.version == 1:  # v1 predates endpoints; its order is not pinned, keep Kafka's docs' order
            return dumps({k: values[k] for k in ("version", "host", "port", "jmx_port", "timestamp")})
        values["endpoints"] = [e.connection_string for e in self.endpoints]
        keys = list(_BASE_KEYS)
        if self.rack is not None and self.version >= 3:
            values["rack"] = self.rack
            keys.append("rack")
        if self.version >= 4:
            protocols = {e.listener: e.security_protocol for e in self.endpoints}
            values["listener_security_protocol_map"] = {
                k: protocols[k] for k in scala_immutable_map_order(list(protocols))
            }
            keys.append("listener_security_protocol_map")
        if self.version >= 5:
            values["features"] = {
                name: {
                    k: {"min_version": lo, "max_version": hi}[k]
                    for k in java_hashmap_order(["min_version", "max_version"])
                }
                for name, (lo, hi) in ((n, self.features[n]) for n in java_hashmap_order(list(self.features)))
            }
            keys.append("features")
        return dumps({k: values[k] for k in scala_mutable_hashmap_order(keys, initial=_BASE_KEYS)})

    @classmethod
    def decode(cls, path: str, data: bytes | None) -> "BrokerRegistration":
        obj = parse_object(path, data)
        version = get_int(path, obj, "version")
        if version < 1:
            raise ZnodeFormatError(path, f"unsupported version of broker registration: {version}")
        jmx_port = get_int(path, obj, "jmx_port", minimum=-1)
        timestamp = get_long_str(path, obj, "timestamp") if "timestamp" in obj else -1
        if version == 1:
            host = get_optional_str(path, obj, "host")
            if host is None:
                raise ZnodeFormatError(path, "version 1 registration needs 'host'")
            port = get_int(path, obj, "port", minimum=0)
            endpoints: tuple[EndPoint, ...] = (EndPoint("PLAINTEXT", host, port, "PLAINTEXT"),)
        else:
            raw_map = get_object(path, obj, "listener_security_protocol_map", required=False)
            protocol_map: dict[str, str] = {}
            if raw_map:
                for listener, protocol in raw_map.items():
                    if protocol not in SECURITY_PROTOCOLS:
                        raise ZnodeFormatError(
                            path, f"listener {listener!r} has unknown security protocol {protocol!r}"
                        )
                    protocol_map[listener] = protocol
            else:
                protocol_map = {p: p for p in SECURITY_PROTOCOLS}
            raw_endpoints = get_list(path, obj, "endpoints")
            parsed = []
            for raw in raw_endpoints:
                if not isinstance(raw, str):
                    raise ZnodeFormatError(path, "'endpoints' entries must be strings")
                parsed.append(parse_endpoint(path, raw, protocol_map))
            names = [e.listener for e in parsed]
            if len(set(names)) != len(names):
                raise ZnodeFormatError(path, f"'endpoints' repeats a listener name: {names}")
            endpoints = tuple(parsed)
        features: dict[str, tuple[int, int]] = {}
        for name, rng in get_object(path, obj, "features", required=False).items():
            if not isinstance(rng, dict):
                raise ZnodeFormatError(path, f"feature {name!r} must be an object")
            lo = as_int(path, f"feature {name!r} min_version", rng.get("min_version"), minimum=0)
            hi = as_int(path, f"feature {name!r} max_version", rng.get("max_version"), minimum=lo)
            features[name] = (lo, hi)
        return cls(
            endpoints=endpoints,
            timestamp=timestamp,
            version=version,
            rack=get_optional_str(path, obj, "rack"),
            jmx_port=jmx_port,
            features=features,
        )

    def endpoint(self, listener: str) -> EndPoint | None:
        return next((e for e in self.endpoints if e.listener == listener), None)
