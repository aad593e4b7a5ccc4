"""Loopback ports for tests: every server a test starts listens on 127.0.0.1 on a port picked here."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A loopback port nothing listens on now: free to bind, and closed (connecting is refused) until something
    does. Another process may take it in between; tests that bind use it at once."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


closed_port = free_port
