"""``--command-config``: a Kafka client properties file, turned into kafka-python's admin client settings.

Kafka's tool hands the file to ``Admin.create`` with ``bootstrap.servers`` and a default ``client.id`` of
``reassign-partitions-tool``. We read it with the node's Java-properties parser and map the keys an operator
puts there (security protocol, SASL PLAIN/SCRAM with ``sasl.jaas.config``, PEM TLS files, timeouts).
Unknown keys are reported the way Kafka's AdminClient logs them and otherwise ignored; a known key we
cannot honour (a JKS keystore, GSSAPI) is refused, naming the key, rather than silently connecting
without it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Any

from controller.config.properties import read_properties
from controller.security.plain import parse_jaas_config

CLIENT_ID = "reassign-partitions-tool"
_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
_JAAS_MODULES = (
    "org.apache.kafka.common.security.plain.PlainLoginModule",
    "org.apache.kafka.common.security.scram.ScramLoginModule",
)


class ClientConfigError(ValueError):
    """A command-config file that cannot be used; the message names the file or key."""


def _int(key: str) -> Callable[[str], int]:
    def parse(value: str) -> int:
        try:
            return int(value.strip())
        except ValueError:
            raise ClientConfigError(
                f"Invalid value {value} for configuration {key}: Not a number of type INT"
            ) from None

    return parse


#: Kafka client key -> (kafka-python keyword, value parser).
_SIMPLE: dict[str, tuple[str, Callable[[str], Any]]] = {
    "client.id": ("client_id", str),
    "request.timeout.ms": ("request_timeout_ms", _int("request.timeout.ms")),
    "retry.backoff.ms": ("retry_backoff_ms", _int("retry.backoff.ms")),
    "reconnect.backoff.ms": ("reconnect_backoff_ms", _int("reconnect.backoff.ms")),
    "reconnect.backoff.max.ms": ("reconnect_backoff_max_ms", _int("reconnect.backoff.max.ms")),
    "connections.max.idle.ms": ("connections_max_idle_ms", _int("connections.max.idle.ms")),
    "metadata.max.age.ms": ("metadata_max_age_ms", _int("metadata.max.age.ms")),
    "send.buffer.bytes": ("send_buffer_bytes", _int("send.buffer.bytes")),
    "receive.buffer.bytes": ("receive_buffer_bytes", _int("receive.buffer.bytes")),
    "ssl.key.password": ("ssl_password", str),
    # Kafka's admin calls wait this long for a broker to talk to; kafka-python waits for one in its constructor.
    "default.api.timeout.ms": ("bootstrap_timeout_ms", _int("default.api.timeout.ms")),
}
#: Keys Kafka's AdminClient knows that change nothing for this tool (accepted silently).
_IGNORED = frozenset(
    {
        "retries",
        "client.dns.lookup",
        "metrics.num.samples",
        "metrics.sample.window.ms",
        "metrics.recording.level",
        "metric.reporters",
        "ssl.protocol",
        "ssl.enabled.protocols",
        "ssl.cipher.suites",
        "ssl.keymanager.algorithm",
        "ssl.trustmanager.algorithm",
        "ssl.secure.random.implementation",
        "sasl.login.class",
        "socket.connection.setup.timeout.ms",
        "socket.connection.setup.timeout.max.ms",
    }
)


def read_client_config(path: str) -> dict[str, str]:
    """The properties in ``path`` (Utils.loadProps); a missing or unreadable file names itself."""
    try:
        return read_properties(path)
    except ValueError as exc:
        raise ClientConfigError(str(exc)) from None


def admin_settings(
    bootstrap: str, props: Mapping[str, str], warn: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """kafka-python ``KafkaAdminClient`` keywords for ``props`` (a command-config file's properties)."""
    say = warn or (lambda text: print(text, file=sys.stderr))
    out: dict[str, Any] = {"bootstrap_servers": bootstrap.split(","), "client_id": CLIENT_ID}
    for key, value in props.items():
        if key == "bootstrap.servers":
            continue  # the tool's --bootstrap-server wins, as Kafka's props.put does
        if key in _SIMPLE:
            name, parse = _SIMPLE[key]
            out[name] = parse(value)
        elif key == "security.protocol":
            protocol = value.strip().upper()
            if protocol not in _PROTOCOLS:
                raise ClientConfigError(
                    f"Invalid value {value} for configuration security.protocol: String must be one of: "
                    + ", ".join(_PROTOCOLS)
                )
            out["security_protocol"] = protocol
        elif key == "sasl.mechanism":
            if value.strip() not in _MECHANISMS:
                raise ClientConfigError(
                    f"sasl.mechanism={value} is not supported by this tool (supported: {', '.join(_MECHANISMS)})"
                )
            out["sasl_mechanism"] = value.strip()
        elif key == "sasl.jaas.config":
            out.update(_jaas(value))
        elif key == "ssl.truststore.location":
            _require_pem(props, "ssl.truststore.type")
            out["ssl_cafile"] = value
        elif key == "ssl.keystore.location":
            _require_pem(props, "ssl.keystore.type")
            out["ssl_certfile"] = value
            out.setdefault("ssl_keyfile", value)
        elif key == "ssl.endpoint.identification.algorithm":
            out["ssl_check_hostname"] = value.strip().lower() == "https"
        elif key in ("ssl.truststore.type", "ssl.keystore.type", "ssl.truststore.password", "ssl.keystore.password"):
            continue  # checked with the location (PEM only)
        elif key in _IGNORED:
            continue
        else:
            say(f"The configuration '{key}' was supplied but isn't a known config.")
    return out


def _require_pem(props: Mapping[str, str], type_key: str) -> None:
    kind = props.get(type_key, "JKS").strip().upper()
    if kind != "PEM":
        raise ClientConfigError(
            f"{type_key}={kind}: this tool reads PEM files only "
            f"(set {type_key}=PEM and point the location at a PEM file)"
        )


def _jaas(value: str) -> dict[str, str]:
    try:
        entry = parse_jaas_config(value)
    except ValueError as exc:
        raise ClientConfigError(f"Invalid value for configuration sasl.jaas.config: {exc}") from None
    if entry.login_module not in _JAAS_MODULES:
        raise ClientConfigError(f"sasl.jaas.config: login module {entry.login_module} is not supported by this tool")
    if entry.username is None or entry.password is None:
        raise ClientConfigError("sasl.jaas.config: username and password are required")
    return {"sasl_plain_username": entry.username, "sasl_plain_password": entry.password}
