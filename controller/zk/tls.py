"""TLS to ZooKeeper: the options kazoo takes, and the handshake's own reason when a connection fails.

kazoo only retries and times out when a TLS handshake fails; an operator needs the reason (an untrusted CA, a
hostname mismatch, a plaintext port), so :func:`tls_refusal` makes the handshake once by itself.
"""

from __future__ import annotations

import socket
import ssl
from dataclasses import dataclass, field
from typing import Any

from kazoo.handlers.utils import create_tcp_connection


@dataclass(frozen=True)
class ZkTls:
    """TLS to ZooKeeper as kazoo takes it (files): the CA bundle to verify servers with (None: the system's),
    this node's certificate chain and key for servers that want a client certificate, and whether the server's
    hostname must match its certificate."""

    ca: str | None = None
    certfile: str | None = None
    keyfile: str | None = None
    keyfile_password: str | None = field(default=None, repr=False)
    check_hostname: bool = True

    def kazoo_options(self) -> dict[str, Any]:
        return {
            "use_ssl": True,
            "verify_certs": True,
            "ca": self.ca,
            "certfile": self.certfile,
            "keyfile": self.keyfile,
            "keyfile_password": self.keyfile_password,
            "check_hostname": self.check_hostname,
        }


def tls_refusal(hosts: str, tls: ZkTls) -> str | None:
    """Why a TLS connection to the first server of ``hosts`` fails, if the handshake is what fails; None when
    the handshake succeeds or the server cannot be reached at all."""
    host, _, port = hosts.split(",")[0].rpartition(":")
    opts = tls.kazoo_options()
    del opts["use_ssl"]
    try:
        sock = create_tcp_connection(
            socket, (host.strip("[]"), int(port)), hostname=host.strip("[]"), timeout=5.0, use_ssl=True, **opts
        )
    except ssl.SSLError as exc:
        return str(exc)
    except OSError:
        return None
    sock.close()
    return None
