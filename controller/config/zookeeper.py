"""``zookeeper.connect`` as ZooKeeper's ``ConnectStringParser`` reads it: the chroot from the first ``/``, a bare
``/`` meaning none, ``PathUtils.validatePath`` rules for the chroot, port 2181 when omitted.

Stricter than ZooKeeper: hosts must be host names, IPv4 addresses or bracketed IPv6 addresses, and ports 1-65535.
"""

from __future__ import annotations

import re

from controller.config.errors import ConfigError
from controller.config.keys import DEFAULT_ZK_PORT, ZK_CONNECT
from controller.config.listeners import ip_version
from zkmodel.java import java_trim

_ZK_HOSTNAME = re.compile(r"[A-Za-z0-9_.-]+")


def _zk_path_problem(path: str) -> str | None:
    """ZooKeeper's ``PathUtils.validatePath``; returns the reason it fails, or None."""
    if not path.startswith("/"):
        return "Path must start with / character"
    if len(path) == 1:
        return None
    if path.endswith("/"):
        return "Path must not end with / character"
    for i in range(1, len(path)):
        c = path[i]
        last = path[i - 1]
        code = ord(c)
        following_ends = i + 1 == len(path) or path[i + 1] == "/"
        if c == "\0":
            return f"null character not allowed @{i}"
        if c == "/" and last == "/":
            return f"empty node name specified @{i}"
        if c == "." and last == "." and path[i - 2] == "/" and following_ends:
            return f"relative paths not allowed @{i}"
        if c == "." and last == "/" and following_ends:
            return f"relative paths not allowed @{i}"
        if 0 < code <= 0x1F or 0x7F <= code <= 0x9F or 0xD800 <= code <= 0xF8FF or code >= 0xFFF0:
            return f"invalid character @{i}"
    return None


def _parse_zk_host(key: str, value: str, item: str) -> tuple[str, int]:
    port_text: str | None
    if item.startswith("["):
        close = item.find("]")
        if close < 0:
            raise ConfigError.invalid(key, value, f"{item} starts with '[' but has no matching ']'")
        host = item[1:close]
        rest = item[close + 1 :]
        if rest and not rest.startswith(":"):
            raise ConfigError.invalid(key, value, f"{item}: expected ':port' after ']'")
        port_text = rest[1:] if rest else None
        if ip_version(host) != 6:
            raise ConfigError.invalid(key, value, f"{item}: {host!r} is not an IPv6 address")
    else:
        host, colon, after = item.partition(":")
        port_text = after if colon else None
        if ":" in after:
            raise ConfigError.invalid(key, value, f"{item}: an IPv6 address must be written in brackets, [addr]:port")
        if not host or _ZK_HOSTNAME.fullmatch(host) is None:
            raise ConfigError.invalid(key, value, f"{item}: {host!r} is not a valid host name")
    if port_text is None:
        return host, DEFAULT_ZK_PORT
    if re.fullmatch(r"[0-9]+", port_text) is None or not 1 <= int(port_text) <= 65535:
        raise ConfigError.invalid(key, value, f"{item}: port must be a number in 1-65535")
    return host, int(port_text)


def parse_zookeeper_connect(value: str, key: str = ZK_CONNECT) -> tuple[tuple[tuple[str, int], ...], str | None]:
    """ZooKeeper's ``ConnectStringParser``: ``host[:port][,host[:port]...][/chroot]``.

    Returns the ``(host, port)`` pairs (port 2181 when omitted) and the chroot (None for none or ``/``).
    """
    text = java_trim(value)
    chroot: str | None = None
    slash = text.find("/")
    if slash >= 0:
        path = text[slash:]
        text = text[:slash]
        problem = _zk_path_problem(path)
        if problem is not None:
            raise ConfigError.invalid(key, value, f'Invalid path string "{path}" caused by {problem}')
        chroot = None if path == "/" else path
    items = [java_trim(item) for item in text.split(",")]
    items = [item for item in items if item]
    if not items:
        raise ConfigError.invalid(key, value, "no ZooKeeper server given (expected host:port[,host:port...][/chroot])")
    return tuple(_parse_zk_host(key, value, item) for item in items), chroot


def format_host_port(host: str, port: int) -> str:
    """``host:port``, an IPv6 host in brackets."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
