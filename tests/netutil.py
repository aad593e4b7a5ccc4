"""Loopback ports for tests: every server a test starts listens on 127.0.0.1 on a port picked here.

``free_port`` is the local stack's own picker; ``closed_port`` names the same port for what a test uses it for:
nothing listens there, so connecting is refused (another process may take it in between; tests that bind use it
at once)."""

from __future__ import annotations

from controller.devstack.localzk import free_port

closed_port = free_port

__all__ = ["closed_port", "free_port"]
