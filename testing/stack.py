"""A running stack seen from outside, as tests and benchmarks both see it: who the controller is (``/controller``),
what a node's metrics say, and what a node's READY line announced (its metrics URL, its listeners' ports)."""

from __future__ import annotations

import re
import urllib.request

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from zkmodel import paths
from zkmodel.election import ControllerZnode


def controller_id(zk: KazooClient) -> int | None:
    """The broker id in ``/controller``, None when there is none. One read: the ephemeral znode can vanish
    between an exists and a get (a session expiring is exactly what some callers wait for)."""
    try:
        data, _stat = zk.get(paths.CONTROLLER)
    except NoNodeError:
        return None
    return ControllerZnode.decode(paths.CONTROLLER, data).broker_id


def metric_sum(url: str, name: str, **labels: str) -> float:
    """The sum of every sample of ``name`` whose labels include ``labels`` (0 when there is none)."""
    with urllib.request.urlopen(url, timeout=5) as response:
        text = response.read().decode()
    total = 0.0
    for line in text.splitlines():
        match = re.match(r"^([A-Za-z_:][A-Za-z0-9_:]*)(\{[^}]*\})? (\S+)$", line)
        if match is None or match.group(1) != name:
            continue
        found = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', match.group(2) or ""))
        if all(found.get(k) == v for k, v in labels.items()):
            total += float(match.group(3))
    return total


def metrics_url(ready_line: str) -> str:
    """The metrics URL a NODE-READY line reports."""
    fields = dict(part.split("=", 1) for part in ready_line.split()[1:] if "=" in part)
    return fields["metrics"]


def listener_ports(ready_line: str) -> dict[str, int]:
    """Listener name -> bound port, from a NODE-READY line's ``endpoints=NAME://host:port,...``."""
    fields = dict(part.split("=", 1) for part in ready_line.split()[1:] if "=" in part)
    ports: dict[str, int] = {}
    for endpoint in fields.get("endpoints", "").split(","):
        name, _, address = endpoint.partition("://")
        if address:
            ports[name] = int(address.rsplit(":", 1)[1])
    return ports
