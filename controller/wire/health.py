"""``bridgekeeper health``: is a node serving? It is when it answers ApiVersions without an error, which it does
only once its listeners are bound, and (being a pre-authentication API) on any listener without credentials:
PLAINTEXT and SASL_PLAINTEXT as they are, SSL and SASL_SSL once a ``--command-config`` names the TLS material
(Kafka's client keys: ``security.protocol``, ``ssl.truststore.*``, ``ssl.keystore.*`` when the listener wants a
client certificate, ``ssl.endpoint.identification.algorithm``). The container health check of the compose
deployment.

A node that answers but has lost ZooKeeper is not healthy either: past its session timeout the server has expired
its session, so its registration and any leadership are gone. The node serves how long each of its sessions has
been disconnected, beside the timeout, on its metrics endpoint (:data:`DISCONNECTED_SECONDS`,
:data:`SESSION_TIMEOUT_SECONDS`); the check reads them there. From the node's own configuration (its properties
file or ``KAFKA_*`` variables) it learns which listener to probe, with which TLS material, and where the metrics
are: :func:`target_from_config`.
"""

from __future__ import annotations

import socket
import ssl
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any, cast

from kio.schema.api_versions.v3.request import ApiVersionsRequest
from prometheus_client.parser import text_string_to_metric_families

from controller.config import NodeConfig
from controller.config.keys import METRICS_PORT
from controller.config.properties import read_properties
from controller.config.tls import TlsConfigError, tls_settings
from controller.wire.client import ClientError, KafkaClient

API_VERSIONS, VERSION = 18, 3
PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
TLS_PROTOCOLS = ("SSL", "SASL_SSL")
#: The node's gauges the check reads (controller.metrics serves them), by session ("broker", "controller").
DISCONNECTED_SECONDS = "bridgekeeper_zookeeper_disconnected_seconds"
SESSION_TIMEOUT_SECONDS = "bridgekeeper_zookeeper_session_timeout_seconds"
#: Bind addresses that mean "every interface": the check connects to the loopback address instead.
_WILDCARDS = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}


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
            API_VERSIONS,
            VERSION,
            ApiVersionsRequest(client_software_name="bridgekeeper-health", client_software_version="1"),
        )
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


def _host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class _VerifyAs:
    """What :class:`KafkaClient` wraps its socket with: the context's handshake, the certificate checked against
    ``name`` (the listener's advertised host, which is what clients check) while the connection goes to the bind
    address. KafkaClient calls ``wrap_socket`` and nothing else on it."""

    def __init__(self, context: ssl.SSLContext, name: str) -> None:
        self.context = context
        self.name = name

    def wrap_socket(self, sock: socket.socket, server_hostname: str | None = None, **kwargs: Any) -> ssl.SSLSocket:
        return self.context.wrap_socket(sock, server_hostname=self.name, **kwargs)


@dataclass(frozen=True)
class Target:
    """What to check, as the node's configuration says: the listener's address, its TLS, the metrics URL (None
    with ``unchecked`` saying why the ZooKeeper session cannot be checked)."""

    address: str
    tls: ssl.SSLContext | None
    metrics_url: str | None
    unchecked: str | None = None


def target_from_config(config: NodeConfig, listener: str | None = None) -> Target:
    """The node's first listener (or the one named), as a client on this host reaches it: a wildcard bind address
    becomes loopback; over SSL and SASL_SSL with the listener's own TLS keys (``listener.name.<l>.ssl.*``, then
    ``ssl.*``: the truststore that signed the node's certificate and, for a listener that wants one, the node's
    own certificate, as Kafka's inter-broker client uses them). HealthConfigError when it cannot be probed."""
    names = [e.listener for e in config.listeners]
    if listener is None:
        endpoint = config.listeners[0]
    else:
        found = [e for e in config.listeners if e.listener == listener.upper()]
        if not found:
            raise HealthConfigError(f"--listener {listener}: the node has no such listener (it has {', '.join(names)})")
        endpoint = found[0]
    if endpoint.port == 0:
        raise HealthConfigError(
            f"listener {endpoint.listener} binds port 0 (a free port, known only to the node): give --bootstrap-server"
        )
    host = _WILDCARDS.get(endpoint.host, endpoint.host)
    tls: ssl.SSLContext | None = None
    if endpoint.security_protocol in TLS_PROTOCOLS:
        try:
            context = tls_settings(config.raw, endpoint.listener, need_keystore=False).client_context()
        except TlsConfigError as exc:
            raise HealthConfigError(str(exc)) from None
        advertised = next((e.host for e in config.advertised_listeners if e.listener == endpoint.listener), "")
        name = advertised if advertised not in _WILDCARDS else host
        tls = context if name == host else cast(ssl.SSLContext, _VerifyAs(context, name))
    address = _host_port(host, endpoint.port)
    if not config.metrics_enabled:
        return Target(address, tls, None, f"the node serves no metrics ({METRICS_PORT}=-1)")
    if config.metrics_port == 0:
        return Target(address, tls, None, f"{METRICS_PORT}=0 binds a free port, known only to the node")
    metrics_host = _WILDCARDS.get(config.metrics_host, config.metrics_host)
    return Target(address, tls, f"http://{_host_port(metrics_host, config.metrics_port)}/metrics")


def check_metrics_url(url: str) -> None:
    """ValueError unless ``url`` is an http(s) URL with a host (a usage error, found before connecting)."""
    parsed = urllib.parse.urlsplit(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ValueError(f"--metrics-url expects http://HOST:PORT/metrics, got {url!r}")


def zookeeper_session(url: str, timeout: float) -> tuple[str | None, str]:
    """(problem, summary) from the node's metrics at ``url``: a problem when a session has been disconnected
    longer than its session timeout (the server has expired it), or when the metrics cannot be read."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            text = response.read().decode("utf-8", errors="replace")
    except urllib.error.URLError as exc:
        return f"{url}: {exc.reason}", ""
    except (OSError, ValueError) as exc:
        return f"{url}: {exc}", ""
    disconnected: dict[str, float] = {}
    timeouts: dict[str, float] = {}
    try:
        for family in text_string_to_metric_families(text):
            into = {DISCONNECTED_SECONDS: disconnected, SESSION_TIMEOUT_SECONDS: timeouts}.get(family.name)
            if into is not None:
                for sample in family.samples:
                    into[sample.labels.get("session", "")] = float(sample.value)
    except ValueError as exc:
        return f"{url}: not Prometheus metrics ({exc})", ""
    if not disconnected:
        return f"{url} serves no {DISCONNECTED_SECONDS}: not a bridgekeeper node, or one too old to say", ""
    summary = []
    for session in sorted(disconnected):
        seconds, limit = disconnected[session], timeouts.get(session)
        if limit is not None and seconds > limit:
            return (
                f"the {session} ZooKeeper session has been disconnected for {seconds:.1f} s, longer than its "
                f"session timeout ({limit:g} s): ZooKeeper has expired it",
                "",
            )
        summary.append(f"{session} session " + ("connected" if seconds == 0 else f"disconnected for {seconds:.1f} s"))
    return None, "ZooKeeper " + ", ".join(summary)
