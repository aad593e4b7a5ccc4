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
exactly the fence the controller's own writes carry (:class:`controller.zk.fenced_writer.FencedWriter`). A
write made once this node stopped being the active controller, or after another was elected, fails as a whole
with :class:`AdminWriteFenced` and writes nothing; the client is told NOT_CONTROLLER and (through a forwarding
broker, KIP-590) the request goes to the new controller. Reads are the session's own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from kazoo.protocol.states import ZnodeStat

from controller.zk.errors import AdminWriteFenced, BadVersionError, KazooException, NodeExistsError, RolledBackError
from controller.zk.ops import Check, Create, Delete, Op, SetData
from controller.zk.session import ZkSession
from zkmodel import paths


class FencedSession(ZkSession):
    """``inner`` with its writes fenced; ``epoch_zk_version()`` is the ``/controller_epoch`` version of this
    node's election while it is the active controller, None otherwise. Reads are delegated to ``inner``, and so
    is every attribute (this object holds no state of a session). Every write method of ZkSession is overridden
    here: one added there must be added here too, or it would run unfenced."""

    def __init__(self, inner: ZkSession, epoch_zk_version: Callable[[], int | None]) -> None:
        # Deliberately no ZkSession.__init__: the kazoo client, state and settings are inner's (``__getattr__``).
        self._inner = inner
        self._epoch_zk_version = epoch_zk_version

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    @property
    def connected(self) -> bool:
        return self._inner.connected

    @property
    def session_id(self) -> int:
        return self._inner.session_id

    # -- reads: the session's own -----------------------------------------------------------------------------
    def get(self, path: str, watch: Callable[[Any], None] | None = None) -> tuple[bytes | None, ZnodeStat] | None:
        return self._inner.get(path, watch)

    def get_children(self, path: str, watch: Callable[[Any], None] | None = None) -> list[str] | None:
        return self._inner.get_children(path, watch)

    def exists(self, path: str, watch: Callable[[Any], None] | None = None) -> ZnodeStat | None:
        return self._inner.exists(path, watch)

    def sync(self, path: str) -> None:
        self._inner.sync(path)

    def read_data(
        self, paths: Sequence[str], *, expected_size: int = 256, timeout: float | None = None
    ) -> dict[str, Any]:
        return self._inner.read_data(paths, expected_size=expected_size, timeout=timeout)

    def read_children(self, paths: Sequence[str], *, timeout: float | None = None) -> dict[str, list[str] | None]:
        return self._inner.read_children(paths, timeout=timeout)

    # -- the fence ---------------------------------------------------------------------------------------------
    def _fenced(self, ops: Sequence[Op], what: str, write: str) -> list[Any]:
        version = self._epoch_zk_version()
        if version is None:
            raise AdminWriteFenced(f"{what}: this node is not the active controller")
        # A client's admin write retried after its connection dropped and then refused may have been made by its
        # first attempt: in doubt (WriteInDoubt, REQUEST_TIMED_OUT), never the definite NOT_CONTROLLER or a race.
        results = self._inner.multi(
            [Check(paths.CONTROLLER_EPOCH, version), *ops], what=what, write=write, refusal_in_doubt=True
        )
        check = results[0]
        if isinstance(check, BadVersionError):
            if self._inner.on_fenced is not None:
                self._inner.on_fenced()
            raise AdminWriteFenced(f"{what}: another controller was elected (controller epoch zkVersion {version})")
        if isinstance(check, KazooException) and not isinstance(check, RolledBackError):
            raise check
        return results[1:]

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

    def create_only(self, path: str, data: bytes | None, *, ephemeral: bool = False, write: str = "create") -> bool:
        try:
            self._one(Create(path, data, ephemeral=ephemeral), f"create {path}", write)
            return True
        except NodeExistsError:
            return False

    def set_if_version(self, path: str, data: bytes, version: int, *, write: str = "set") -> ZnodeStat:
        stat: ZnodeStat = self._one(SetData(path, data, version), f"set {path}", write)
        return stat

    def set_acls(self, path: str, acls: Sequence[tuple[int, str, str]], *, write: str = "acl") -> None:
        raise AdminWriteFenced(f"setACL {path}: not an admin write")
