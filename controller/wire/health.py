"""``bridgekeeper health``: is a node serving? It is when it answers ApiVersions without an error, which it does
only once its listeners are bound, and (being a pre-authentication API) on any PLAINTEXT or SASL listener.
The container health check of the compose deployment."""

from __future__ import annotations

from kio.schema.api_versions.v3.request import ApiVersionsRequest

from controller.wire.client import ClientError, KafkaClient

API_VERSIONS, VERSION = 18, 3


def parse_address(address: str) -> tuple[str, int]:
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"--bootstrap-server expects HOST:PORT, got {address!r}")
    return host.strip("[]"), int(port)


def probe(address: str, timeout: float) -> str | None:
    """None when the node at ``address`` answers ApiVersions; otherwise what went wrong, in one line."""
    try:
        host, port = parse_address(address)
    except ValueError as exc:
        return str(exc)
    client = KafkaClient(host, port, client_id="bridgekeeper-health", timeout=timeout)
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
