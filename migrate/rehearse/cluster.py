"""The cluster a rehearsal rolls: one it starts itself (an ensemble and N node processes on this machine) or one
it attaches to from an inventory file. Both answer the same few verbs, so the roll, the drills and the checks
never ask which kind they drive.

Restarts keep each node's addresses: a node started on a free port has that port written into its
configuration before the first roll, as a real deployment's fixed listeners, so clients' bootstrap lists and
the checks' metrics URLs stay valid across restarts.
"""

from __future__ import annotations

import shlex
import signal
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import orjson

from controller.config.properties import dump_properties, parse_properties
from controller.devstack.stack import NodeProcess, Stack, StackError

IBP_KEY = "inter.broker.protocol.version"
#: Digest identities the owned stack runs with: the controller writes ZooKeeper as its own identity, so
#: ZooKeeper's records tell its writes from a broker's, and ``--lockdown`` can lock everyone else out.
CONTROLLER_IDENTITY = "controller:rehearse-controller"
BROKER_IDENTITY = "broker:rehearse-broker"


class ClusterError(RuntimeError):
    """A cluster that cannot be started, attached to or driven as asked; the message names what."""


@dataclass(frozen=True)
class NodeView:
    broker_id: int
    bootstrap: str  # host:port of the client listener
    metrics: str | None  # the node's /metrics URL
    log: Path | None  # its log file, scanned by the node-logs-clean check


class Cluster(Protocol):
    zk_servers: int
    mode: str

    @property
    def zookeeper(self) -> str:
        """The connect string, chroot included."""
        ...

    def launch(self, say: Any = None) -> None: ...
    def nodes(self) -> list[NodeView]: ...
    def restart(self, broker_id: int, ibp: str | None, timeout: float) -> None: ...
    def kill(self, broker_id: int) -> None: ...
    def start(self, broker_id: int, timeout: float) -> None: ...
    def freeze(self, broker_id: int) -> None: ...
    def thaw(self, broker_id: int) -> None: ...
    def pause_zookeeper(self) -> str: ...
    def resume_zookeeper(self) -> None: ...
    def txn_log_dirs(self) -> list[Path]: ...
    def ibp_of(self, broker_id: int) -> str | None: ...
    def close(self) -> None: ...


class OwnedCluster:
    """A ZooKeeper ensemble and N ``bridgekeeper node`` processes on 127.0.0.1, stopped by :meth:`close`."""

    mode = "owned"

    def __init__(
        self,
        *,
        nodes: int,
        zk_servers: int,
        ibp: str,
        data_dir: Path,
        overrides: Mapping[str, str],
        node_overrides: Mapping[int, Mapping[str, str]],
        broker_ids: Sequence[int] | None = None,
        racks: Mapping[int, str] | None = None,
        before_nodes: Callable[[Stack], None] | None = None,
        after_nodes: Callable[[Stack], None] | None = None,
        start_timeout: float = 90.0,
        zk_heap_mb: int = 256,
        start_wave: int | None = None,
    ) -> None:
        """``broker_ids``, ``racks`` and the hooks make it a twin (see :mod:`migrate.twin`): the production
        brokers' ids and racks, the tree restored before the nodes start, the election released after."""
        settings = {
            "bridgekeeper.zookeeper.digest": BROKER_IDENTITY,
            "bridgekeeper.zookeeper.controller.digest": CONTROLLER_IDENTITY,
            # The load changes ACLs, which Kafka serves only with an authorizer; its PLAINTEXT clients (and the
            # brokers' forwarding, which needs CLUSTER_ACTION) are User:ANONYMOUS, so that identity is super.
            "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
            "super.users": "User:ANONYMOUS",
            **overrides,
        }
        try:
            self.stack = Stack(
                nodes=nodes,
                data_dir=data_dir,
                ibp=ibp,
                overrides=settings,
                zk_servers=zk_servers,
                node_overrides=node_overrides,
                broker_ids=broker_ids,
                racks=racks,
                before_nodes=before_nodes,
                after_nodes=after_nodes,
                zk_heap_mb=zk_heap_mb,
                start_wave=start_wave,
            )
        except StackError as exc:
            raise ClusterError(str(exc)) from None
        self.zk_servers = zk_servers
        self._paused: int | None = None
        self._start_timeout = start_timeout

    @property
    def zookeeper(self) -> str:
        return self.stack.zookeeper

    def launch(self, say: Any = None) -> None:
        try:
            self.stack.start(progress=say, timeout=self._start_timeout)
        except StackError as exc:
            raise ClusterError(str(exc)) from None
        for node in self.stack.nodes:
            self._pin_ports(node)

    def _pin_ports(self, node: NodeProcess) -> None:
        raw = parse_properties(node.config_path.read_text(), str(node.config_path))
        raw["listeners"] = f"PLAINTEXT://127.0.0.1:{node.port}"
        raw["bridgekeeper.metrics.port"] = str(node.metrics_port)
        node.config_path.write_text(dump_properties(raw, comment=f"bridgekeeper node {node.broker_id}"))

    def _node(self, broker_id: int) -> NodeProcess:
        for n in self.stack.nodes:
            if n.broker_id == broker_id:
                return n
        raise ClusterError(f"no node {broker_id}")

    def nodes(self) -> list[NodeView]:
        return [
            NodeView(n.broker_id, f"127.0.0.1:{n.port}", f"http://127.0.0.1:{n.metrics_port}/metrics", n.log_path)
            for n in self.stack.nodes
        ]

    def ibp_of(self, broker_id: int) -> str | None:
        node = self._node(broker_id)
        return parse_properties(node.config_path.read_text(), str(node.config_path)).get(IBP_KEY)

    def restart(self, broker_id: int, ibp: str | None, timeout: float) -> None:
        try:
            self.stack.restart_node(self._node(broker_id), timeout, {IBP_KEY: ibp} if ibp else None)
        except StackError as exc:
            raise ClusterError(str(exc)) from None

    def kill(self, broker_id: int) -> None:
        self.stack.signal_node(self._node(broker_id), signal.SIGKILL)

    def start(self, broker_id: int, timeout: float) -> None:
        try:
            self.stack.start_node(self._node(broker_id), timeout)
        except StackError as exc:
            raise ClusterError(str(exc)) from None

    def freeze(self, broker_id: int) -> None:
        self.stack.signal_node(self._node(broker_id), signal.SIGSTOP)

    def thaw(self, broker_id: int) -> None:
        self.stack.signal_node(self._node(broker_id), signal.SIGCONT)

    def pause_zookeeper(self) -> str:
        """Freeze the ensemble's leader (the member whose pause costs the most), or the one server."""
        zk = self.stack.zk
        member = zk.leader() or zk.members[0]
        role = (zk.mode(member.myid) or "member") if zk.servers > 1 else "standalone"
        zk.pause(member.myid)
        self._paused = member.myid
        return f"ZooKeeper server {member.myid} ({role})"

    def resume_zookeeper(self) -> None:
        if self._paused is not None:
            self.stack.zk.resume(self._paused)
            self._paused = None
            self.stack.zk.wait_serving(60.0)

    def txn_log_dirs(self) -> list[Path]:
        return [m.data_dir / "data" / "version-2" for m in self.stack.zk.members]

    def close(self) -> None:
        if self._paused is not None:
            self.stack.zk.resume(self._paused)
        for n in self.stack.nodes:
            self.stack.signal_node(n, signal.SIGCONT)  # a frozen node cannot stop gracefully
        self.stack.stop()


@dataclass
class InventoryNode:
    broker_id: int
    bootstrap: str
    metrics: str | None = None
    log: Path | None = None
    config: Path | None = None
    commands: dict[str, str] = field(default_factory=dict)  # restart, kill, start, freeze, thaw


NODE_COMMANDS = ("restart", "kill", "start", "freeze", "thaw")
#: What each drill needs from an attached cluster's inventory.
DRILL_NEEDS: dict[str, tuple[str, ...]] = {
    "kill-controller": ("kill", "start"),
    "freeze-controller": ("freeze", "thaw"),
    "restart-during-reassignment": ("restart",),
    "pause-zookeeper": ("zookeeper_pause", "zookeeper_resume"),
}


KINDS = {int: "an integer", str: "a string", list: "a list", dict: "an object", float: "a number", bool: "a boolean"}


def _field(doc: Mapping[str, Any], key: str, kind: type, where: str, *, required: bool = True) -> Any:
    value = doc.get(key)
    if value is None:
        if required:
            raise ClusterError(f'{where}: missing "{key}"')
        return None
    if not isinstance(value, kind) or isinstance(value, bool):
        found = KINDS.get(type(value), type(value).__name__)
        raise ClusterError(f'{where}: "{key}" must be {KINDS[kind]}, not {found}')
    return value


def read_inventory(path: Path) -> dict[str, Any]:
    """The inventory file, checked field by field: every mistake names the file, the node and the key."""
    try:
        doc = orjson.loads(path.read_bytes())
    except OSError as exc:
        raise ClusterError(f"cannot read inventory {path}: {exc.strerror}") from None
    except orjson.JSONDecodeError as exc:
        raise ClusterError(f"inventory {path} is not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise ClusterError(f"inventory {path}: expected a JSON object")
    where = f"inventory {path}"
    zookeeper = _field(doc, "zookeeper", str, where)
    nodes_doc = _field(doc, "nodes", list, where)
    if not nodes_doc:
        raise ClusterError(f'{where}: "nodes" is empty')
    nodes: list[InventoryNode] = []
    for i, raw in enumerate(nodes_doc):
        at = f"{where}, nodes[{i}]"
        if not isinstance(raw, dict):
            raise ClusterError(f"{at}: expected a JSON object")
        broker_id = _field(raw, "broker_id", int, at)
        bootstrap = _field(raw, "bootstrap", str, at)
        host, _, port = bootstrap.rpartition(":")
        if not host or not port.isdigit():
            raise ClusterError(f'{at}: "bootstrap" must be host:port, not {bootstrap!r}')
        commands = {k: _field(raw, k, str, at, required=False) for k in NODE_COMMANDS}
        if commands["restart"] is None:
            raise ClusterError(f'{at}: missing "restart" (the shell command that restarts this node)')
        config = _field(raw, "config", str, at, required=False)
        log = _field(raw, "log", str, at, required=False)
        nodes.append(
            InventoryNode(
                broker_id,
                bootstrap,
                _field(raw, "metrics", str, at, required=False),
                Path(log) if log else None,
                Path(config) if config else None,
                {k: v for k, v in commands.items() if v is not None},
            )
        )
    ids = [n.broker_id for n in nodes]
    if len(set(ids)) != len(ids):
        raise ClusterError(f"{where}: broker ids repeat: {sorted(ids)}")
    dirs = _field(doc, "zookeeper_data_dirs", list, where, required=False) or []
    if not all(isinstance(d, str) for d in dirs):
        raise ClusterError(f'{where}: "zookeeper_data_dirs" must be a list of paths')
    return {
        "zookeeper": zookeeper,
        "nodes": nodes,
        "zookeeper_data_dirs": [Path(d) for d in dirs],
        "zookeeper_pause": _field(doc, "zookeeper_pause", str, where, required=False),
        "zookeeper_resume": _field(doc, "zookeeper_resume", str, where, required=False),
        "zk_servers": len(zookeeper.split("/", 1)[0].split(",")),
    }


class AttachedCluster:
    """A running cluster, driven through the shell commands its inventory gives (systemctl, ssh, kubectl ...).

    A roll-2 restart rewrites ``inter.broker.protocol.version`` in the node's ``config`` file first, so the
    inventory must name it for every node; restarts are then awaited by the roll (re-registration, ISR)."""

    mode = "attached"

    def __init__(self, path: Path, drills: Sequence[str], bump: bool) -> None:
        inv = read_inventory(path)
        self.zookeeper: str = inv["zookeeper"]
        self.zk_servers: int = inv["zk_servers"]
        self._nodes: list[InventoryNode] = inv["nodes"]
        self._dirs: list[Path] = inv["zookeeper_data_dirs"]
        self._zk_cmds = {"zookeeper_pause": inv["zookeeper_pause"], "zookeeper_resume": inv["zookeeper_resume"]}
        if bump:
            for n in self._nodes:
                if n.config is None:
                    raise ClusterError(
                        f'inventory {path}: node {n.broker_id} has no "config" (the '
                        "server.properties whose inter.broker.protocol.version roll 2 sets)"
                    )
        for drill in drills:
            for need in DRILL_NEEDS.get(drill, ()):
                if need.startswith("zookeeper_"):
                    if not self._zk_cmds[need]:
                        raise ClusterError(f'inventory {path}: drill {drill} needs "{need}"')
                    continue
                missing = [n.broker_id for n in self._nodes if need not in n.commands]
                if missing:
                    raise ClusterError(f'inventory {path}: drill {drill} needs "{need}" for node(s) {missing}')

    def launch(self, say: Any = None) -> None:
        """Nothing to start: the cluster runs already."""

    def nodes(self) -> list[NodeView]:
        return [NodeView(n.broker_id, n.bootstrap, n.metrics, n.log) for n in self._nodes]

    def _node(self, broker_id: int) -> InventoryNode:
        for n in self._nodes:
            if n.broker_id == broker_id:
                return n
        raise ClusterError(f"no node {broker_id} in the inventory")

    def _run(self, broker_id: int | None, command: str, timeout: float = 120.0) -> None:
        who = f"node {broker_id}" if broker_id is not None else "ZooKeeper"
        try:
            done = subprocess.run(shlex.split(command), capture_output=True, text=True, timeout=timeout)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ClusterError(f"{who}: command {command!r} failed: {exc}") from None
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            raise ClusterError(f"{who}: command {command!r} exited {done.returncode}: {' | '.join(tail)}")

    def ibp_of(self, broker_id: int) -> str | None:
        n = self._node(broker_id)
        if n.config is None:
            return None
        return parse_properties(n.config.read_text(), str(n.config)).get(IBP_KEY)

    def restart(self, broker_id: int, ibp: str | None, timeout: float) -> None:
        n = self._node(broker_id)
        if ibp is not None and n.config is not None:
            raw = parse_properties(n.config.read_text(), str(n.config))
            raw[IBP_KEY] = ibp
            n.config.write_text(dump_properties(raw, comment=f"bridgekeeper node {broker_id}"))
        self._run(broker_id, n.commands["restart"], timeout)

    def kill(self, broker_id: int) -> None:
        self._run(broker_id, self._node(broker_id).commands["kill"])

    def start(self, broker_id: int, timeout: float) -> None:
        self._run(broker_id, self._node(broker_id).commands["start"], timeout)

    def freeze(self, broker_id: int) -> None:
        self._run(broker_id, self._node(broker_id).commands["freeze"])

    def thaw(self, broker_id: int) -> None:
        self._run(broker_id, self._node(broker_id).commands["thaw"])

    def pause_zookeeper(self) -> str:
        cmd = self._zk_cmds["zookeeper_pause"]
        assert cmd is not None
        self._run(None, cmd)
        return "ZooKeeper (inventory's zookeeper_pause)"

    def resume_zookeeper(self) -> None:
        cmd = self._zk_cmds["zookeeper_resume"]
        assert cmd is not None
        self._run(None, cmd)

    def txn_log_dirs(self) -> list[Path]:
        return list(self._dirs)

    def close(self) -> None:
        """The cluster is the operator's: it keeps running."""
