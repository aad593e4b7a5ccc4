"""The active controller's session as the admin stores see it: every write fenced by the controller epoch.

Past the forwarding gate the active controller writes what brokers used to write themselves: entity configs,
quotas, SCRAM credentials, ACLs. Kafka fences none of those by the controller epoch (a broker wrote them with
its own compare-and-set; configs check only that *some* ``/controller`` exists), so a deposed controller whose
request was already under way finishes it: frozen past its session, it wakes up, reconnects with a new session,
finds the new controller's ``/controller`` and writes. ZooKeeper's transaction log then shows a metadata write
by a session that does not hold ``/controller``, and the single-writer promise (DESIGN.md, invariant 1) is
broken even though the value written is the client's.

:class:`FencedSession` closes that: it is the controller's :class:`~controller.zk.session.ZkSession` with every
write turned into a multi that first checks ``/controller_epoch`` at the version this node's election gave it,
exactly the fence the controller's own writes carry (both are built by :mod:`controller.zk.fence`). A
write made once this node stopped being the active controller, or after another was elected, fails as a whole
with :class:`AdminWriteFenced` and writes nothing; the client is told NOT_CONTROLLER and (through a forwarding
broker, KIP-590) the request goes to the new controller. Reads are the session's own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from kazoo.protocol.states import KazooState, ZnodeStat

from controller.zk import fence
from controller.zk.errors import AdminWriteFenced, NodeExistsError
from controller.zk.ops import Create, Delete, Op, SetData
from controller.zk.protocol.multi_read import DataResult
from controller.zk.session import ZkSession

#: ZkSession's public members that only read (or watch) and so are the session's own. Every other public member
#: of ZkSession is a write: fenced here, or refused with AdminWriteFenced (tests/unit/test_fenced_session_surface.py
#: holds FencedSession to that).
READS = frozenset(
    {
        "add_state_listener",
        "connected",
        "session_id",
        "disconnected_for",
        "session_presumed_lost",
        "get",
        "get_children",
        "exists",
        "sync",
        "bulk_timeout_s",
        "read_data",
        "read_data_into",
        "read_children",
        "read_acls",
        "acl_for",
        "probe_multi_read",
        "last_zxid",
        "watch_data",
        "watch_data_at",
        "unwatch_data",
    }
)


class FencedSession(ZkSession):
    """``inner`` with its writes fenced; ``epoch_zk_version()`` is the ``/controller_epoch`` version of this
    node's election while it is the active controller, None otherwise.

    A ZkSession, so the admin stores and the wire take it wherever they take the node's own session; but no
    ZkSession state and no delegation by name: every public member of ZkSession is overridden here, explicitly
    and checked by mypy against ZkSession's signature. Reads (:data:`READS`) go to ``inner``; writes go through
    the fence; writes that cannot carry it (setACL, the tree copy, the raw retry loop) and ``inner``'s lifecycle
    are refused. ``tests/unit/test_fenced_session_surface.py`` fails when ZkSession gains a public member that
    is not overridden here, so a new write method cannot run unfenced through the controller's session."""

    def __init__(self, inner: ZkSession, epoch_zk_version: Callable[[], int | None]) -> None:
        # Deliberately no ZkSession.__init__: the kazoo client, state and settings are inner's, reached only
        # through the members below.
        self._inner = inner
        self._epoch_zk_version = epoch_zk_version

    # -- reads: the session's own -----------------------------------------------------------------------------
    def add_state_listener(self, listener: Callable[[KazooState], None]) -> None:
        self._inner.add_state_listener(listener)

    @property
    def connected(self) -> bool:
        return self._inner.connected

    @property
    def session_id(self) -> int:
        return self._inner.session_id

    def disconnected_for(self) -> float:
        return self._inner.disconnected_for()

    def session_presumed_lost(self) -> bool:
        return self._inner.session_presumed_lost()

    def get(self, path: str, watch: Callable[[Any], None] | None = None) -> tuple[bytes | None, ZnodeStat] | None:
        return self._inner.get(path, watch)

    def get_children(self, path: str, watch: Callable[[Any], None] | None = None) -> list[str] | None:
        return self._inner.get_children(path, watch)

    def exists(self, path: str, watch: Callable[[Any], None] | None = None) -> ZnodeStat | None:
        return self._inner.exists(path, watch)

    def sync(self, path: str) -> None:
        self._inner.sync(path)

    @property
    def bulk_timeout_s(self) -> float:
        return self._inner.bulk_timeout_s

    def read_data(
        self, paths: Sequence[str], *, expected_size: int = 256, timeout: float | None = None
    ) -> dict[str, DataResult | None]:
        return self._inner.read_data(paths, expected_size=expected_size, timeout=timeout)

    def read_data_into(
        self,
        paths: Sequence[str],
        sink: Callable[[int, list[bytes | None], list[int]], None],
        *,
        expected_size: int = 256,
        timeout: float | None = None,
    ) -> None:
        self._inner.read_data_into(paths, sink, expected_size=expected_size, timeout=timeout)

    def read_children(self, paths: Sequence[str], *, timeout: float | None = None) -> dict[str, list[str] | None]:
        return self._inner.read_children(paths, timeout=timeout)

    def read_acls(
        self, paths: Sequence[str], *, in_flight: int = 1000, timeout: float | None = None
    ) -> dict[str, list[tuple[int, str, str]] | None]:
        return self._inner.read_acls(paths, in_flight=in_flight, timeout=timeout)

    def acl_for(self, path: str) -> list[Any]:
        return self._inner.acl_for(path)

    def probe_multi_read(self, timeout: float) -> bool:
        return self._inner.probe_multi_read(timeout)

    @property
    def last_zxid(self) -> int:
        return self._inner.last_zxid

    def watch_data(
        self, paths: Sequence[str], watch: Callable[[Any], None], since_zxid: int, *, missing: Sequence[str] = ()
    ) -> None:
        self._inner.watch_data(paths, watch, since_zxid, missing=missing)

    def watch_data_at(
        self, groups: Sequence[tuple[int, Sequence[str], Sequence[str]]], watch: Callable[[Any], None]
    ) -> None:
        self._inner.watch_data_at(groups, watch)

    def unwatch_data(self, paths: Sequence[str], watch: Callable[[Any], None]) -> int:
        return self._inner.unwatch_data(paths, watch)

    # -- the fence ---------------------------------------------------------------------------------------------
    def _fenced(self, ops: Sequence[Op], what: str, write: str) -> list[Any]:
        version = self._epoch_zk_version()
        if version is None:
            raise AdminWriteFenced(f"{what}: this node is not the active controller")
        # A client's admin write retried after its connection dropped and then refused may have been made by its
        # first attempt: in doubt (WriteInDoubt, REQUEST_TIMED_OUT), never the definite NOT_CONTROLLER or a race.
        results = self._inner.multi(fence.fenced(ops, version), what=what, write=write, refusal_in_doubt=True)

        def moved() -> AdminWriteFenced:
            if self._inner.on_fenced is not None:
                self._inner.on_fenced()
            return AdminWriteFenced(f"{what}: another controller was elected (controller epoch zkVersion {version})")

        return fence.unfence(results, moved)

    def _one(self, op: Op, what: str, write: str) -> Any:
        """One fenced op: its result, or its own exception raised as the unfenced call would raise it."""
        (result,) = self._fenced([op], what, write)
        if isinstance(result, Exception):
            raise result
        return result

    # -- the writes ----------------------------------------------------------------------------------------------
    def multi(self, ops: Sequence[Op], *, what: str, write: str, refusal_in_doubt: bool = True) -> list[Any]:
        """Always with ``refusal_in_doubt``: every write here is a client's."""
        return self._fenced(ops, what, write)

    def delete(self, path: str, version: int = -1, *, write: str = "delete") -> None:
        self._one(Delete(path, version), f"delete {path}", write)

    def create_sequential(self, prefix: str, data: bytes, *, write: str = "create") -> str:
        created: str = self._one(Create(prefix, data, sequential=True), f"create {prefix}", write)
        return created

    def set_unconditionally(self, path: str, data: bytes, *, write: str = "set") -> ZnodeStat:
        return self.set_if_version(path, data, -1, write=write)

    def ensure_persistent(self, paths: Sequence[str]) -> None:
        """ZkSession's, through this object's own ``exists`` and fenced ``create_only``."""
        ZkSession.ensure_persistent(self, paths)

    def create_only(self, path: str, data: bytes | None, *, ephemeral: bool = False, write: str = "create") -> bool:
        try:
            self._one(Create(path, data, ephemeral=ephemeral), f"create {path}", write)
            return True
        except NodeExistsError:
            return False

    def set_if_version(self, path: str, data: bytes, version: int, *, write: str = "set") -> ZnodeStat:
        stat: ZnodeStat = self._one(SetData(path, data, version), f"set {path}", write)
        return stat

    # -- refused: no fence can be put on them ----------------------------------------------------------------------
    def set_acls(self, path: str, acls: Sequence[tuple[int, str, str]], *, write: str = "acl") -> None:
        raise AdminWriteFenced(f"setACL {path}: not an admin write")

    def create_tree(
        self, groups: Iterable[Sequence[tuple[str, bytes | None]]], *, progress: Callable[[int], None] | None = None
    ) -> int:
        raise AdminWriteFenced("a tree copy: not an admin write")

    def set_acls_pipelined(
        self,
        acls: Iterable[tuple[str, Sequence[tuple[int, str, str]]]],
        *,
        in_flight: int = 1000,
        progress: Callable[[int], None] | None = None,
    ) -> int:
        raise AdminWriteFenced("setACL: not an admin write")

    def call(
        self, fn: Callable[[], Any], *, what: str, write: str | None = None, refusal_in_doubt: bool = False
    ) -> Any:
        """Any kazoo request, unchecked: it could write around the fence."""
        raise AdminWriteFenced(f"{what}: a raw request, not an admin write")

    def start(self, timeout: float = 30.0) -> None:
        """``inner`` is started and closed by its owner, the node, never through the fenced view of it."""
        raise AdminWriteFenced("starting the controller's session: not an admin write")

    def close(self) -> None:
        raise AdminWriteFenced("closing the controller's session: not an admin write")
