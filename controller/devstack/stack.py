"""``bridgekeeper up``: the local stack. A ZooKeeper and N nodes, each node its own OS process as in a real
deployment, in the foreground until SIGINT/SIGTERM, announced by one machine-readable READY line."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from controller.config import ConfigError, load_config
from controller.config.properties import dump_properties, parse_properties
from controller.devstack import certs
from controller.devstack.localzk import LocalZooKeeper, ServerTls, _die_with_parent
from controller.exits import CommandError, ExitCode

CHROOT = "/kafka"
Progress = Callable[[str], None] | None
#: Held (``flock``) by the stack or ``zk run`` using a data directory, for as long as it runs; it holds the pid.
LOCK_NAME = ".bridgekeeper.lock"
#: ``--base-port P``: node i listens on P+i and serves metrics on P+100+i, so at most this many nodes fit.
MAX_FIXED_PORT_NODES = 99


def _quiet(_message: str) -> None:
    pass


class StackError(RuntimeError):
    """A stack that cannot be set up as asked (bad settings, a data directory that is a file): a usage error."""


class StackRefused(CommandError):
    """Exit 1: the stack would clash with what already runs here (a port in use, a data directory a running stack
    or ``zk run`` holds); refused before anything is started or written."""

    def __init__(self, message: str) -> None:
        super().__init__(message, ExitCode.PROBLEM)


def data_dir_ready(directory: Path, flag: str = "--data-dir") -> None:
    """Make ``directory`` (StackError when it is a file or cannot be made)."""
    if directory.exists() and not directory.is_dir():
        raise StackError(f"{flag} {directory} is a file, not a directory")
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StackError(f"{flag} {directory}: cannot create it ({exc.strerror})") from None


def lock_data_dir(directory: Path, flag: str = "--data-dir") -> IO[str]:
    """Hold ``directory/.bridgekeeper.lock`` until the returned file is closed (or the process ends, when the kernel
    drops the lock: a crashed stack never leaves a stale one). Two servers on one data directory would overwrite
    each other's ZooKeeper data, configurations and certificates; StackRefused names the holder's pid."""
    path = directory / LOCK_NAME
    try:
        f = path.open("a+")  # not truncated: the holder's pid stays readable until we hold the lock
    except OSError as exc:
        raise StackError(f"{flag} {directory}: cannot write {path.name} there ({exc.strerror})") from None
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.seek(0)
        holder = f.read().strip()
        f.close()
        who = f" (pid {holder})" if holder.isdigit() else ""
        raise StackRefused(
            f"{flag} {directory} is in use by a running stack{who}: stop it, or choose another {flag}"
        ) from None
    f.truncate(0)
    f.write(f"{os.getpid()}\n")
    f.flush()
    return f


def refuse_ports_in_use(ports: Iterable[int], advice: str, host: str = "127.0.0.1") -> None:
    """StackRefused naming the first of ``ports`` that cannot be bound on ``host``: a listener holds it. Bound with
    SO_REUSEADDR as the servers bind theirs, so a port in TIME_WAIT from a stack just stopped counts as free."""
    for port in ports:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind((host, port))
            except OSError:
                raise StackRefused(f"port {port} is in use: {advice}") from None


@dataclass
class NodeProcess:
    broker_id: int
    config_path: Path
    log_path: Path
    port: int
    metrics_port: int
    process: subprocess.Popen[str] | None = None
    ready: str = ""

    def log_tail(self, lines: int = 40) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        return ""


class Stack:
    def __init__(
        self,
        *,
        nodes: int = 3,
        data_dir: Path | None = None,
        base_port: int | None = None,
        ibp: str | None = None,
        overrides: Mapping[str, str] | None = None,
        zk_servers: int = 1,
        node_overrides: Mapping[int, Mapping[str, str]] | None = None,
        tls: bool = False,
        broker_ids: Sequence[int] | None = None,
        racks: Mapping[int, str] | None = None,
        before_nodes: Callable[[Stack], None] | None = None,
        after_nodes: Callable[[Stack], None] | None = None,
        zk_heap_mb: int = 256,
        start_wave: int | None = None,
    ) -> None:
        if nodes < 1 and not broker_ids:
            raise StackError("--nodes must be at least 1")
        #: The nodes' broker ids: 1..nodes, or a twin's production ids (each node's ports still follow its
        #: position in this list, so --base-port keeps its meaning).
        self.broker_ids = list(broker_ids) if broker_ids else list(range(1, nodes + 1))
        if len(set(self.broker_ids)) != len(self.broker_ids) or min(self.broker_ids) < 0:
            raise StackError(f"broker ids must be distinct and not negative, got {self.broker_ids}")
        self.n = len(self.broker_ids)
        self.racks = dict(racks or {})
        #: Run after ZooKeeper serves and before any node starts (a twin's restore), and once every node is
        #: ready (a twin releasing the election it held until all its brokers were registered).
        self.before_nodes = before_nodes
        self.after_nodes = after_nodes
        #: Nodes started at once (all by default): every node reads the whole tree as it starts, and a big twin's
        #: nodes all reading at once starve ZooKeeper and one another past their session timeouts.
        self.start_wave = start_wave
        self._owns_dir = data_dir is None
        self.data_dir = Path(tempfile.mkdtemp(prefix="bk-stack-")) if data_dir is None else data_dir
        self.base_port = base_port
        if base_port is not None and (self.n > MAX_FIXED_PORT_NODES or base_port + 100 + self.n > 65535):
            raise StackError(
                f"--base-port {base_port} with {self.n} nodes: node i listens on P+i and serves metrics on P+100+i, "
                f"so at most {MAX_FIXED_PORT_NODES} nodes and P+100+{self.n} <= 65535; choose a lower port or omit it"
            )
        #: A data directory the caller chose is held for the stack's life (a temporary one is ours alone). Checked
        #: here, before the TLS material below is written into it or any port is bound.
        self._lock: IO[str] | None = None
        if not self._owns_dir:
            data_dir_ready(self.data_dir)
            self._lock = lock_data_dir(self.data_dir)
        try:
            refuse_ports_in_use(self.fixed_ports(zk_servers), "choose another --base-port, or omit it for free ports")
        except StackRefused:
            self._unlock()
            raise
        self.ibp = ibp
        self.overrides = dict(overrides or {})
        #: Settings for one node only (broker id -> key -> value), over ``overrides``: a rehearsal gives one
        #: node a deliberately wrong setting to prove its checks catch it.
        self.node_overrides = {i: dict(o) for i, o in (node_overrides or {}).items()}
        #: With ``tls`` (``bridgekeeper up --tls``): a throw-away CA and certificates under ``<data dir>/tls``, the
        #: nodes serving SSL (client certificates requested, not required) and talking to each other and to
        #: ZooKeeper's TLS-only port over TLS.
        self.tls_dir: Path | None = None
        server_tls: ServerTls | None = None
        if tls:
            self.tls_dir = self.data_dir / "tls"
            ca = certs.make_ca()
            certs.write_pem(self.tls_dir, "node", certs.issue(ca, "CN=bridgekeeper-node"), ca)
            certs.write_pem(self.tls_dir, "client", certs.issue(ca, "CN=client"), ca)
            zk = certs.write_pem(self.tls_dir, "zookeeper", certs.issue(ca, "CN=zookeeper"), ca)
            server_tls = ServerTls(zk.keystore, zk.ca, client_auth="want")
        self.zk = LocalZooKeeper(
            zk_servers,
            base_dir=self.data_dir / "zookeeper",
            client_port=base_port if zk_servers == 1 else None,
            tls=server_tls,
            heap_mb=zk_heap_mb,
        )
        self.nodes: list[NodeProcess] = []

    @property
    def zookeeper(self) -> str:
        """What the nodes connect to: the TLS-only ports with ``tls``."""
        return (self.zk.secure_connect_string if self.tls_dir is not None else self.zk.connect_string) + CHROOT

    def _tls_config(self) -> dict[str, str]:
        assert self.tls_dir is not None
        keystore, ca = str(self.tls_dir / "node.keystore.pem"), str(self.tls_dir / "ca.crt")
        return {
            "listener.security.protocol.map": "SSL:SSL",
            "inter.broker.listener.name": "SSL",
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": keystore,
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": ca,
            "ssl.client.auth": "requested",
            "zookeeper.ssl.client.enable": "true",
            "zookeeper.ssl.keystore.type": "PEM",
            "zookeeper.ssl.keystore.location": keystore,
            "zookeeper.ssl.truststore.type": "PEM",
            "zookeeper.ssl.truststore.location": ca,
        }

    def node_config(self, broker_id: int, port: int, metrics_port: int) -> dict[str, str]:
        raw = {
            "broker.id": str(broker_id),
            "zookeeper.connect": self.zookeeper,
            "listeners": f"{'SSL' if self.tls_dir is not None else 'PLAINTEXT'}://127.0.0.1:{port}",
            "bridgekeeper.metrics.host": "127.0.0.1",
            "bridgekeeper.metrics.port": str(metrics_port),
        }
        if self.tls_dir is not None:
            raw.update(self._tls_config())
        if self.ibp is not None:
            raw["inter.broker.protocol.version"] = self.ibp
        if broker_id in self.racks:
            raw["broker.rack"] = self.racks[broker_id]
        raw.update(self.overrides)
        raw.update(self.node_overrides.get(broker_id, {}))
        return raw

    def fixed_ports(self, zk_servers: int) -> list[int]:
        """The ports ``--base-port`` fixes, in the order the stack binds them (none without it)."""
        if self.base_port is None:
            return []
        zookeeper = [self.base_port] if zk_servers == 1 else []
        return zookeeper + [p for i in range(1, self.n + 1) for p in self._ports(i)]

    def _unlock(self) -> None:
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    def _ports(self, i: int) -> tuple[int, int]:
        """Fixed ports from --base-port; otherwise the metrics port is 0 (the node binds a free one and
        reports it, so there is no window for another process to take it)."""
        if self.base_port is not None:
            return self.base_port + i, self.base_port + 100 + i
        return 0, 0

    def start(self, progress: Progress = None, timeout: float = 60.0) -> None:
        say = progress or _quiet
        if self._lock is None and not self._owns_dir:  # started again after stop()
            data_dir_ready(self.data_dir)
            self._lock = lock_data_dir(self.data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        # Validate every node's config before starting anything, so a bad --set names its key at once.
        planned = []
        for i, broker_id in enumerate(self.broker_ids, start=1):
            port, metrics_port = self._ports(i)
            raw = self.node_config(broker_id, port, metrics_port)
            raw["zookeeper.connect"] = "127.0.0.1:2181" + CHROOT  # placeholder until ZooKeeper has a port
            try:
                load_config(None, raw)
            except ConfigError as exc:
                raise StackError(f"invalid node configuration: {exc}") from None
            planned.append((broker_id, port, metrics_port))
        say(f"starting ZooKeeper ({self.zk.servers} server{'s' if self.zk.servers > 1 else ''}) ...")
        self.zk.start()
        say(
            f"ZooKeeper serving on {self.zk.connect_string}"
            + (f" (TLS-only: {self.zk.secure_connect_string})" if self.tls_dir is not None else "")
        )
        if self.before_nodes is not None:
            self.before_nodes(self)
        deadline = time.monotonic() + timeout
        wave = self.start_wave or len(planned)
        for first in range(0, len(planned), wave):
            started = []
            for i, port, metrics_port in planned[first : first + wave]:
                node_dir = self.data_dir / f"node-{i}"
                node_dir.mkdir(parents=True, exist_ok=True)
                config_path = node_dir / "server.properties"
                config_path.write_text(
                    dump_properties(self.node_config(i, port, metrics_port), comment=f"bridgekeeper node {i}")
                )
                node = NodeProcess(i, config_path, node_dir / "node.log", port, metrics_port)
                self._launch(node)
                self.nodes.append(node)
                started.append(node)
            for node in started:
                self._await_ready(node, deadline)
                say(f"node {node.broker_id} ready on 127.0.0.1:{node.port}")
        if self.after_nodes is not None:
            self.after_nodes(self)

    def _launch(self, node: NodeProcess) -> None:
        log = node.log_path.open("ab")
        node.process = subprocess.Popen(
            [sys.executable, "-m", "controller.cli", "node", "--config", str(node.config_path)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            preexec_fn=_die_with_parent,
        )
        log.close()

    def _await_ready(self, node: NodeProcess, deadline: float) -> None:
        assert node.process is not None and node.process.stdout is not None
        found: list[str] = []

        def read() -> None:
            assert node.process is not None and node.process.stdout is not None
            for line in node.process.stdout:
                if line.startswith("NODE-READY"):
                    found.append(line.strip())
                    return

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        reader.join(max(0.0, deadline - time.monotonic()))
        if not found:
            code = node.process.poll()
            if code is None and not reader.is_alive():  # stdout closed: the process is exiting, its status follows
                with contextlib.suppress(subprocess.TimeoutExpired):
                    code = node.process.wait(timeout=5)
            state = f"exited with code {code}" if code is not None else "did not become ready in time"
            raise StackError(f"node {node.broker_id} {state}; its log ({node.log_path}):\n{node.log_tail()}")
        node.ready = found[0]
        fields = dict(part.split("=", 1) for part in node.ready.split()[1:] if "=" in part)
        metrics = fields.get("metrics", "-")
        if metrics != "-":
            node.metrics_port = int(metrics.rsplit(":", 1)[1].split("/", 1)[0])
        endpoint = fields.get("endpoints", "").split(",")[0]
        if endpoint:
            node.port = int(endpoint.rsplit(":", 1)[1])

    def ready_line(self) -> str:
        bootstrap = ",".join(f"127.0.0.1:{n.port}" for n in self.nodes)
        metrics = ",".join(f"http://127.0.0.1:{n.metrics_port}/metrics" for n in self.nodes)
        tls = f" tls={self.tls_dir}" if self.tls_dir is not None else ""
        return f"READY bootstrap={bootstrap} zookeeper={self.zookeeper} metrics={metrics}{tls}"

    def stop_node(self, node: NodeProcess, timeout: float = 20.0) -> None:
        p = node.process
        if p is None or p.poll() is not None:
            return
        p.terminate()
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(10)

    def start_node(self, node: NodeProcess, timeout: float = 60.0) -> None:
        """Start a stopped (or killed) node again with its configuration file as it stands."""
        if node.process is not None and node.process.poll() is None:
            raise StackError(f"node {node.broker_id} is running")
        self._launch(node)
        self._await_ready(node, time.monotonic() + timeout)

    def signal_node(self, node: NodeProcess, sig: int) -> None:
        """Send a signal to a running node (SIGKILL for a crash, SIGSTOP/SIGCONT to freeze it past its
        ZooKeeper session); a node that already exited is left alone."""
        p = node.process
        if p is not None and p.poll() is None:
            p.send_signal(sig)
            if sig == signal.SIGKILL:
                p.wait(10)

    def restart_node(
        self, node: NodeProcess, timeout: float = 60.0, overrides: Mapping[str, str] | None = None
    ) -> None:
        """Stop a node gracefully and start it again with the same broker id, plus ``overrides`` (a rolling
        bump: ``{"inter.broker.protocol.version": "3.4-IV0"}``). A bad override is refused before the node
        is stopped."""
        if overrides:
            raw = {**parse_properties(node.config_path.read_text(), str(node.config_path)), **overrides}
            try:
                load_config(None, raw)
            except ConfigError as exc:
                raise StackError(f"invalid configuration for node {node.broker_id}: {exc}") from None
        self.stop_node(node)
        if overrides:
            node.config_path.write_text(dump_properties(raw, comment=f"bridgekeeper node {node.broker_id}"))
        self._launch(node)
        self._await_ready(node, time.monotonic() + timeout)

    def stop(self, progress: Progress = None) -> None:
        say = progress or _quiet
        for node in reversed(self.nodes):
            say(f"stopping node {node.broker_id} ...")
            self.stop_node(node)
        say("stopping ZooKeeper ...")
        self.zk.stop(keep_dir=True)
        self._unlock()
        if self._owns_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)
