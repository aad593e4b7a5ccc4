"""Helpers for tests that run real node processes (``bridgekeeper up`` style) against a real ZooKeeper."""

from __future__ import annotations

import re
import urllib.request

from kazoo.client import KazooClient

from zkmodel import paths
from zkmodel.election import ControllerZnode


def metric(url: str, name: str) -> float | None:
    with urllib.request.urlopen(url, timeout=5) as response:
        text = response.read().decode()
    match = re.search(rf"^{re.escape(name)}\{{[^}}]*\}} ([-0-9.e+]+)$", text, re.MULTILINE)
    return None if match is None else float(match.group(1))


def controller_id(zk: KazooClient) -> int | None:
    found = zk.exists(paths.CONTROLLER)
    if found is None:
        return None
    return ControllerZnode.decode(paths.CONTROLLER, zk.get(paths.CONTROLLER)[0]).broker_id
