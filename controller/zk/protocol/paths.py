"""Paths as the server sees them: a client's chroot prefixed exactly as kazoo prefixes it for its own requests
(``kazoo.protocol.paths._prefix_root``), and stripped from the paths an answer names as ``KazooClient.unchroot``
strips them. The records of this package carry server paths, so whoever builds one applies these first.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from kazoo.protocol.paths import _prefix_root

__all__ = ["Chrooted", "chroot_path", "server_path", "server_paths", "unchroot"]


class Chrooted(Protocol):
    """What a path needs of a client: its chroot (``KazooClient.chroot``: None or ``""`` for none)."""

    chroot: str | None


def server_path(client: Chrooted, path: str) -> str:
    """``path`` as the server sees it, for ``client``; a non-string is a TypeError, as kazoo's own calls raise."""
    if not isinstance(path, str):
        raise TypeError(f"Invalid type for 'path' (string expected): {path!r}")
    return chroot_path(client.chroot or "", path)


def server_paths(client: Chrooted, paths: Iterable[str]) -> list[str]:
    """:func:`server_path` of each of ``paths``, in order."""
    chroot = client.chroot or ""
    out = []
    for p in paths:
        if not isinstance(p, str):
            raise TypeError(f"Invalid type for 'path' (string expected): {p!r}")
        out.append(chroot_path(chroot, p))
    return out


def chroot_path(chroot: str, path: str) -> str:
    """``_prefix_root(chroot, path)``, with a fast path for an already-normal absolute path (one concatenation:
    a bulk read prefixes a million of them)."""
    if path.startswith("/") and len(path) > 1 and not path.endswith("/") and "//" not in path and "/." not in path:
        return chroot + path
    result: str = _prefix_root(chroot, path)
    return result


def unchroot(chroot: str, path: str) -> str:
    """A server path as the client's: ``chroot`` stripped (the chroot itself is ``/``), as ``KazooClient.unchroot``;
    a path outside the chroot is returned as it is."""
    if not chroot:
        return path
    if path == chroot:
        return "/"
    return path[len(chroot) :] if path.startswith(chroot) else path
