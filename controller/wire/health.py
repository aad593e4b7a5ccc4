"""``bridgekeeper health``: is a node serving? It is when it answers ApiVersions without an error, which it does
only once its listeners are bound, and (being a pre-authentication API) on any listener without credentials:
PLAINTEXT and SASL_PLAINTEXT as they are, SSL and SASL_SSL once a ``--command-config`` names the TLS material
(Kafka's client keys: ``security.protocol``, ``ssl.truststore.*``, ``ssl.keystore.*`` when the listener wants a
client certificate, ``ssl.endpoint.identification.algorithm``). The container health check of the compose
deployment."""

from __future__ import annotations

import ssl

from kio.schema.api_versions.v3.request import ApiVersionsRequest

from controller.config import read_properties
from controller.config_tls import TlsConfigError, tls_settings
from controller.wire.client import ClientError, KafkaClient

API_VERSIONS, VERSION = 18, 3
PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


class HealthConfigError(ValueError):
    """A --command-config that cannot be used; the message names the file or the key."""


def client_tls(path: str) -> ssl.SSLContext | None:
    """The TLS context ``path`` (Kafka client properties) asks for; None for a plaintext security protocol.
    Keys other than ``security.protocol`` and ``ssl.*`` change nothing here (ApiVersions needs no login)."""
    try:
        props = read_properties(path)
    except ValueError as exc:
        raise HealthConfigError(str(exc)) from None
    protocol = props.get("security.protocol", "PLAINTEXT").strip().upper()
    if protocol not in PROTOCOLS:
        raise HealthConfigError(
            f"{path}: Invalid value {props['security.protocol']} for configuration security.protocol: "
            f"String must be one of: {', '.join(PROTOCOLS)}"
        )
    if protocol not in ("SSL", "SASL_SSL"):
        return None
    try:
        return tls_settings(props, None, need_keystore=False).client_context()
    except TlsConfigError as exc:
        raise HealthConfigError(f"{path}: {exc}") from None


def parse_address(address: str) -> tuple[str, int]:
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"--bootstrap-server expects HOST:PORT, got {address!r}")
    return host.strip("[]"), int(port)


def probe(address: str, timeout: float, *, tls: ssl.SSLContext | None = None) -> str | None:
    """None when the node at ``address`` answers ApiVersions (over TLS with ``tls``); otherwise what went
    wrong, in one line."""
    try:
        host, port = parse_address(address)
    except ValueError as exc:
        return str(exc)
    client = KafkaClient(host, port, client_id="bridgekeeper-health", timeout=timeout, tls=tls)
    try:
        response = client.request(
            API_VERSIONS, VERSION, ApiVersionsRequest(client_software_name="bridgekeeper-health",
                                                      client_software_version="1"),
        )  # fmt: skip
    except ClientError as exc:
        return str(exc)  # names the address already
    except OSError as exc:
        return f"{address}: {exc}"
    finally:
        client.close()
    if int(response.error_code) != 0:
        return f"{address}: ApiVersions answered with error code {int(response.error_code)}"
    if not response.api_keys:
        return f"{address}: ApiVersions listed no APIs"
    return None
