"""Real-ZooKeeper test helpers (in the spirit of kazoo's own harness, but with real session expiry)."""

from __future__ import annotations

import contextlib
import os
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from kazoo.client import KazooClient
from kazoo.protocol.connection import _CONNECTION_DROP  # kazoo's own harness uses this sentinel
from kazoo.protocol.states import KazooState
from kazoo.retry import KazooRetry

from controller.devstack.localzk import LocalZooKeeper

ENV_ZK = "BRIDGEKEEPER_TEST_ZK"


@dataclass
class ZkServer:
    """Where the tests' ZooKeeper is, and how to show its logs when a test fails."""

    hosts: str
    kind: str  # "env", "testcontainers" or "local"
    log_tail: Callable[[], str] = field(default=lambda: "")
    close: Callable[[], None] = field(default=lambda: None)


def _docker_engine_answers() -> bool:
    try:
        import docker

        docker.from_env(timeout=2).ping()
        return True
    except Exception:
        return False


def start_session_server() -> ZkServer:
    """An address from the environment, else testcontainers if a Docker engine answers, else the local server."""
    hosts = os.environ.get(ENV_ZK)
    if hosts:
        return ZkServer(hosts, "env")
    if _docker_engine_answers():
        try:
            from testcontainers.core.container import DockerContainer
            from testcontainers.core.waiting_utils import wait_for_logs

            container = DockerContainer("zookeeper:3.8").with_exposed_ports(2181)
            container.with_env("ZOO_4LW_COMMANDS_WHITELIST", "*")
            container.start()
            wait_for_logs(container, "binding to port", timeout=60)
            address = f"{container.get_container_host_ip()}:{container.get_exposed_port(2181)}"

            def tail() -> str:
                out, err = container.get_logs()
                return (out + err).decode(errors="replace")[-8000:]

            return ZkServer(address, "testcontainers", tail, container.stop)
        except Exception:
            pass  # image unavailable offline, etc.: fall back to the Debian package
    local = LocalZooKeeper(1).start()
    return ZkServer(local.connect_string, "local", local.log_tail, local.stop)


def new_client(hosts: str, **kwargs: Any) -> KazooClient:
    """A client that reconnects fast (kazoo's default backoff grows to an hour) and never retries
    through session expiry: tests must see LOST when it happens."""
    kwargs.setdefault("timeout", 6.0)
    kwargs.setdefault("connection_retry", KazooRetry(max_tries=-1, delay=0.05, max_delay=0.5))
    kwargs.setdefault("command_retry", KazooRetry(max_tries=3, delay=0.05, max_delay=0.5, ignore_expire=False))
    return KazooClient(hosts=hosts, **kwargs)


def unique_chroot(name: str) -> str:
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in name)[:60]
    return f"/bktest/{safe}-{uuid.uuid4().hex[:8]}"


class StateRecorder:
    """Records every KazooState a client goes through, for asserting transitions."""

    def __init__(self, client: KazooClient) -> None:
        self.states: list[KazooState] = []
        self._cond = threading.Condition()
        client.add_listener(self._on_state)

    def _on_state(self, state: KazooState) -> None:
        with self._cond:
            self.states.append(state)
            self._cond.notify_all()

    def wait_for(self, *sequence: KazooState, timeout: float = 20.0) -> bool:
        """True once the recorded states contain ``sequence`` in order (not necessarily adjacent)."""

        def seen() -> bool:
            it = iter(self.states)
            return all(any(s == want for s in it) for want in sequence)

        with self._cond:
            return self._cond.wait_for(seen, timeout)


def drop_connection(client: KazooClient) -> None:
    """Break the client's TCP connection; the session lives on and the client reconnects (SUSPENDED →
    CONNECTED)."""
    client._call(_CONNECTION_DROP, None)


def expire_session(client: KazooClient, timeout: float = 20.0) -> None:
    """Really expire the client's session on the server (ZooKeeper's classic test technique: open a second
    connection with the same session id and password, then close it). The client sees LOST when it next
    talks to the server, and its ephemeral nodes are gone at once.

    Not :func:`testing.expire.expire_session`, which the fault drills use on a node in another process (it
    knows only the session id, and waits until the server has dropped the session): here the test holds the
    client, and asserts what that client meets on its very next call, so the twin must be closed and nothing
    else waited for."""
    session_id, password = client.client_id
    hosts = ",".join(f"{host}:{port}" for host, port in client.hosts)
    twin = KazooClient(hosts=hosts, client_id=(session_id, password), timeout=client._session_timeout / 1000)
    twin.start(timeout=timeout)
    twin.stop()
    twin.close()


@contextlib.contextmanager
def chroot_client(server_hosts: str, chroot: str) -> Iterator[KazooClient]:
    client = new_client(server_hosts + chroot)
    client.start(timeout=20)
    try:
        yield client
    finally:
        with contextlib.suppress(Exception):
            client.stop()
        client.close()
