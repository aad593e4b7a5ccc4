"""A stack started the README's way (ZooKeeper + three node processes), shared by a module's tests."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from controller.devstack.stack import Stack
from controller.logtags import UNEXPECTED
from testing.stack import controller_id
from tests.integration.cluster import wait_for
from tests.stackutil import every_node_sees_every_broker


@dataclass
class RunningStack:
    stack: Stack
    bootstrap: str
    zk: KazooClient

    @property
    def brokers(self) -> list[str]:
        return self.bootstrap.split(",")


@pytest.fixture(scope="module")
def stack(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningStack]:
    """A module may set ``STACK_OVERRIDES`` (properties for every node) and ``STACK_IBP``."""
    s = Stack(
        nodes=3,
        data_dir=Path(tmp_path_factory.mktemp("stack")),
        overrides=getattr(request.module, "STACK_OVERRIDES", None),
        ibp=getattr(request.module, "STACK_IBP", None),
    )
    s.start()
    zk = KazooClient(hosts=s.zookeeper)
    try:
        zk.start(timeout=20)
        wait_for(lambda: controller_id(zk) is not None, 60, "a controller")
        if not any("sasl" in key for key in s.overrides):  # a SASL stack: its modules log in and wait themselves
            every_node_sees_every_broker(s)
        bootstrap = ",".join(f"127.0.0.1:{n.port}" for n in s.nodes)
        yield RunningStack(s, bootstrap, zk)
    finally:
        with contextlib.suppress(Exception):
            zk.stop()
            zk.close()
        s.stop()
        logs = [(n.log_path.read_text(errors="replace")) for n in s.nodes]
        assert not any(UNEXPECTED in text for text in logs), "a node logged an unexpected error"
