"""Shared fixtures: a real ZooKeeper for the session, a private chroot per test, and a 3-node ensemble."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Generator, Iterator
from typing import Any

import pytest
from kazoo.client import KazooClient

from controller.devstack.localzk import LocalZooKeeper
from controller.logtags import UNEXPECTED
from tests.zkharness import ZkServer, new_client, start_session_server, unique_chroot

_LOG_SOURCES_KEY = pytest.StashKey[list[Callable[[], str]]]()

#: Markers of the suites that run alone (docs/testing.md): ``./dev test`` runs every other test on two xdist
#: workers, then these in one process, so no other test's servers share the two cores with a fault, load or
#: latency scenario, nor with a Spark ``local[2]`` that takes both, nor with a test that must fit work in a
#: wall-clock window (``timing``).
SERIAL_MARKERS = ("reliability", "spark", "timing")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--part",
        choices=("all", "parallel", "serial"),
        default="all",
        help="run only the tests that may run side by side (parallel), only those that run alone (serial: "
        f"marked {' or '.join(SERIAL_MARKERS)}), or both (all, the default)",
    )


def runs_alone(item: pytest.Item) -> bool:
    """True for a test of a suite that must not share the machine with other tests."""
    return any(item.get_closest_marker(name) is not None for name in SERIAL_MARKERS)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect, not skip, the other part's tests: each part's summary counts only what it ran."""
    part = config.getoption("part")
    if part == "all":
        return
    wanted = part == "serial"
    dropped = [item for item in items if runs_alone(item) != wanted]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if runs_alone(item) == wanted]


@pytest.fixture(autouse=True)
def _fail_on_unexpected_errors(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """DESIGN.md: unexpected exceptions are logged with a fixed tag, and any such line fails the test."""
    yield
    tagged = [r for r in caplog.get_records("call") if UNEXPECTED in r.getMessage()]
    if tagged:
        details = "\n".join(f"{r.name}: {r.getMessage()}\n{r.exc_text or ''}" for r in tagged)
        pytest.fail(f"unexpected errors were logged:\n{details}", pytrace=False)


@pytest.fixture(scope="session")
def zk_server() -> Iterator[ZkServer]:
    server = start_session_server()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def zk_chroot(request: pytest.FixtureRequest, zk_server: ZkServer) -> Iterator[str]:
    """A chroot that exists and is private to this test; removed afterwards."""
    request.node.stash.setdefault(_LOG_SOURCES_KEY, []).append(zk_server.log_tail)
    chroot = unique_chroot(request.node.name)
    admin = new_client(zk_server.hosts)
    admin.start(timeout=20)
    admin.ensure_path(chroot)
    try:
        yield chroot
    finally:
        with contextlib.suppress(Exception):
            admin.delete(chroot, recursive=True)
        admin.stop()
        admin.close()


@pytest.fixture
def zk_hosts(zk_server: ZkServer, zk_chroot: str) -> str:
    """Connect string including this test's chroot."""
    return zk_server.hosts + zk_chroot


@pytest.fixture
def zk_factory(zk_hosts: str) -> Iterator[Callable[..., KazooClient]]:
    """Makes started clients on this test's chroot; all are closed at the end."""
    made: list[KazooClient] = []

    def make(**kwargs: Any) -> KazooClient:
        client = new_client(zk_hosts, **kwargs)
        client.start(timeout=20)
        made.append(client)
        return client

    yield make
    for client in made:
        with contextlib.suppress(Exception):
            client.stop()
        client.close()


@pytest.fixture
def zk(zk_factory: Callable[..., KazooClient]) -> KazooClient:
    return zk_factory()


@pytest.fixture
def zk_ensemble(request: pytest.FixtureRequest) -> Iterator[LocalZooKeeper]:
    """A fresh 3-node ensemble per test, for tests that kill or pause members."""
    ensemble = LocalZooKeeper(3)
    request.node.stash.setdefault(_LOG_SOURCES_KEY, []).append(ensemble.log_tail)
    ensemble.start()
    try:
        yield ensemble
    finally:
        ensemble.stop(keep_dir=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Attach the ZooKeeper server logs to a failing test's report."""
    report: pytest.TestReport = yield
    if report.failed:
        for source in item.stash.get(_LOG_SOURCES_KEY, []):
            with contextlib.suppress(Exception):
                text = source()
                if text:
                    report.sections.append(("ZooKeeper server log (tail)", text))
    return report
