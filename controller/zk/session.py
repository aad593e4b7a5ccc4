"""The ZooKeeper session every node holds: one interface, timeouts everywhere, retry policy by error.

Patroni's lesson: a coordination call that can block forever will, at the worst moment. Every call
here goes through kazoo's async API with a timeout, and transient connection loss is retried within a
deadline that is shorter than the session timeout, while session expiry is never retried through (the
caller must learn that its ephemeral nodes, and its leadership, are gone).

Which methods are compare-and-set is in their names: ``create_only`` and ``set_if_version``.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

from kazoo.protocol.states import KazooState, ZnodeStat
from kazoo.retry import KazooRetry
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_delay, wait_exponential

from controller.logtags import UNEXPECTED
from controller.zk import bulk, bulk_acls, bulk_read, multiread, setwatches
from controller.zk.errors import (
    KAZOO_SESSION_LOST,
    ConnectionLoss,
    KazooTimeoutError,
    NodeExistsError,
    NoNodeError,
    RolledBackError,
    SessionLost,
    WriteInDoubt,
    ZkReadTimeout,
    ZkTimeout,
    ZkUnavailable,
    is_transient,
)
from controller.zk.handler import NodeHandler
from controller.zk.ops import Op, build_transaction, set_acl_policy
from controller.zk.protocol.multi_read import DataResult
from controller.zk.tls import ZkTls, tls_refusal
from controller.zk.watch_table import WatchTableClient
from controller.zk.znode_acls import AclPolicy, kafka_policy, kazoo_acls

log = logging.getLogger(__name__)
T = TypeVar("T")


@contextlib.contextmanager
def _watch_errors(what: str) -> Iterator[None]:
    """The watch requests' errors in the session's vocabulary: no answer in time, the session gone, or the
    connection dropped under the request (kazoo fails a request in flight with ConnectionLoss when its connection
    drops, as when a server goes away in a failover): the caller retries or defers as for any ZooKeeper outage."""
    try:
        yield
    except TimeoutError as exc:
        raise ZkReadTimeout(str(exc)) from None
    except KAZOO_SESSION_LOST as exc:
        raise SessionLost(f"{what}: {exc!r}") from exc
    except ConnectionLoss as exc:
        raise ZkUnavailable(f"{what}: {exc!r}") from exc


@contextlib.contextmanager
def _bulk_read_errors(count: int) -> Iterator[None]:
    """The bulk reads' errors in the session's vocabulary: multiRead batches that took too long, or the session
    gone under them."""
    try:
        yield
    except multiread.MultiReadTimeoutError as exc:
        raise ZkReadTimeout(str(exc)) from exc
    except KAZOO_SESSION_LOST as exc:
        raise SessionLost(f"bulk read of {count} znodes: {exc!r}") from exc


class ZkSession:
    """A kazoo client with the node's session semantics: fast reconnect, bounded calls, state tracking."""

    def __init__(
        self,
        hosts: str,
        *,
        session_timeout_ms: int = 18_000,
        retry_deadline_ms: int | None = None,
        request_timeout_s: float = 5.0,
        auth: Sequence[tuple[str, str]] = (),
        name: str = "zk",
        read_only: bool = False,
        acl_policy: AclPolicy | None = None,
        tls: ZkTls | None = None,
    ) -> None:
        if retry_deadline_ms is None:
            retry_deadline_ms = session_timeout_ms // 3
        if retry_deadline_ms >= session_timeout_ms:
            raise ValueError(
                f"retry deadline {retry_deadline_ms} ms must be below the session timeout {session_timeout_ms} ms"
            )
        self.hosts = hosts
        self.session_timeout_ms = session_timeout_ms
        self.retry_deadline_s = retry_deadline_ms / 1000
        self.request_timeout_s = request_timeout_s
        self.name = name
        self.client = WatchTableClient(  # a partition state's watch costs a byte (controller/zk/watch_table.py)
            hosts=hosts,
            timeout=session_timeout_ms / 1000,
            auth_data=list(auth) or None,
            read_only=read_only,  # a tool that only reads may use a server cut off from the quorum
            # kazoo's default backoff grows to an hour; a node must be back within its session timeout.
            connection_retry=KazooRetry(max_tries=-1, delay=0.1, max_delay=0.5),
            command_retry=KazooRetry(max_tries=0, ignore_expire=False),
            handler=NodeHandler(),  # poll(2) select, inline watch dispatch (controller/zk/handler.py)
            **(tls.kazoo_options() if tls is not None else {}),
        )
        self.tls = tls
        #: The ACL each znode this session creates gets (Kafka's ``zookeeper.set.acl``, or lockdown's rules). Fixed
        #: for the session's life: registered once for its client, whose multis (the fenced writer's too) read it.
        self.acl_policy: AclPolicy = acl_policy or kafka_policy(False)
        set_acl_policy(self.client, self.acl_policy)
        self._lock = threading.Lock()
        self._state = KazooState.LOST
        self._disconnected_since: float | None = time.monotonic()
        self._listeners: list[Callable[[KazooState], None]] = []
        #: Called after every write with (kind, seconds, succeeded): the node's ZooKeeper write metrics.
        self.on_write: Callable[[str, float, bool], None] | None = None
        #: Called when a fenced write (controller.zk.fenced_writer) fails its controller-epoch check.
        self.on_fenced: Callable[[], None] | None = None
        self.client.add_listener(self._on_state)

    # -- lifecycle and state ---------------------------------------------------------------------
    def start(self, timeout: float = 30.0) -> None:
        try:
            self.client.start(timeout=timeout)
        except KazooTimeoutError:
            self.client.stop()
            why = tls_refusal(self.hosts, self.tls) if self.tls is not None else None
            raise ZkUnavailable(
                f"could not connect to ZooKeeper at {self.hosts} within {timeout:g} s"
                + (f": the TLS handshake failed ({why})" if why else "")
            ) from None

    def close(self) -> None:
        try:
            self.client.stop()
        finally:
            self.client.close()

    def add_state_listener(self, listener: Callable[[KazooState], None]) -> None:
        """Listeners run on kazoo's thread: keep them short (set a flag, enqueue an event)."""
        self._listeners.append(listener)

    def _on_state(self, state: KazooState) -> None:
        with self._lock:
            self._state = state
            if state == KazooState.CONNECTED:
                self._disconnected_since = None
            elif self._disconnected_since is None:
                self._disconnected_since = time.monotonic()
        log.info("%s: ZooKeeper session %s", self.name, state)
        for listener in list(self._listeners):
            try:
                listener(state)
            except Exception:
                log.exception("%s state listener failed", UNEXPECTED)

    @property
    def connected(self) -> bool:
        return self.client.connected  # type: ignore[no-any-return]

    @property
    def session_id(self) -> int:
        client_id = self.client.client_id
        return int(client_id[0]) if client_id else 0

    def disconnected_for(self) -> float:
        """Seconds since the connection was lost (0 when connected)."""
        with self._lock:
            since = self._disconnected_since
        return 0.0 if since is None else time.monotonic() - since

    def session_presumed_lost(self) -> bool:
        """Disconnected for longer than the session timeout: the server has expired us even though kazoo
        will only say LOST after it reconnects."""
        return self.disconnected_for() * 1000 > self.session_timeout_ms

    # -- retry machinery ---------------------------------------------------------------------------
    def call(
        self, fn: Callable[[], Any], *, what: str, write: str | None = None, refusal_in_doubt: bool = False
    ) -> Any:
        """Run ``fn`` (which returns a kazoo async result) and wait for it, retrying transient failures
        within the retry deadline. Session expiry raises SessionLost at once. ``write`` names the kind of
        write this is, for the ZooKeeper write metrics; ``refusal_in_doubt``: a multi refused after a retry
        raises :class:`WriteInDoubt` (see :meth:`multi`)."""
        if write is not None and self.on_write is not None:
            started = time.perf_counter()
            ok = False
            try:
                result = self._call(fn, what, refusal_in_doubt=refusal_in_doubt)
                # A multi answers with per-op results: one exception among them means nothing was written.
                ok = not (isinstance(result, list) and any(isinstance(r, Exception) for r in result))
                return result
            finally:
                self.on_write(write, time.perf_counter() - started, ok)
        return self._call(fn, what, refusal_in_doubt=refusal_in_doubt)

    def _call(self, fn: Callable[[], Any], what: str, *, refusal_in_doubt: bool = False) -> Any:
        unanswered: list[BaseException] = []  # attempts that may have been applied without our hearing of it

        def attempt() -> Any:
            try:
                result = fn().get(timeout=self.request_timeout_s)
            except KazooTimeoutError:
                unanswered.append(ZkTimeout(f"{what}: no answer within {self.request_timeout_s}s"))
                raise unanswered[-1] from None
            except BaseException as exc:
                if is_transient(exc):
                    unanswered.append(exc)
                raise
            if refusal_in_doubt and unanswered and isinstance(result, list):
                refused = next(
                    (r for r in result if isinstance(r, Exception) and not isinstance(r, RolledBackError)), None
                )
                if refused is not None:
                    raise WriteInDoubt(
                        f"{what}: the connection dropped before ZooKeeper answered ({unanswered[0]!r}) and the retry "
                        f"was refused ({type(refused).__name__}), perhaps by the first attempt's own write"
                    )
            return result

        def give_up(state: RetryCallState) -> Any:
            exc = state.outcome.exception() if state.outcome else None
            raise ZkUnavailable(f"{what}: ZooKeeper unavailable for {self.retry_deadline_s:.1f}s ({exc!r})")

        retrying = Retrying(
            retry=retry_if_exception(is_transient),
            stop=stop_after_delay(self.retry_deadline_s),
            wait=wait_exponential(multiplier=0.05, max=0.5),
            retry_error_callback=give_up,
            reraise=True,
        )
        try:
            return retrying(attempt)
        except BaseException as exc:
            # tenacity keeps the failed attempt's outcome (this exception) in its retry state, a local of its own
            # frames, which the exception's traceback holds: a reference cycle. Through the frames' callers it would
            # keep everything on the stack alive (a 100,000-partition request's maps, after an expected NoNode)
            # until a full collection. The finished frames' locals are not needed once the exception left them.
            traceback.clear_frames(exc.__traceback__)
            if isinstance(exc, KAZOO_SESSION_LOST):
                raise SessionLost(f"{what}: {exc!r}") from exc
            raise

    # -- reads ---------------------------------------------------------------------------------------
    def get(self, path: str, watch: Callable[[Any], None] | None = None) -> tuple[bytes | None, ZnodeStat] | None:
        try:
            result: tuple[bytes | None, ZnodeStat] = self.call(
                lambda: self.client.get_async(path, watch=watch), what=f"get {path}"
            )
            return result
        except NoNodeError:
            return None

    def get_children(self, path: str, watch: Callable[[Any], None] | None = None) -> list[str] | None:
        try:
            children: list[str] = self.call(
                lambda: self.client.get_children_async(path, watch=watch), what=f"get_children {path}"
            )
            return children
        except NoNodeError:
            return None

    def exists(self, path: str, watch: Callable[[Any], None] | None = None) -> ZnodeStat | None:
        stat: ZnodeStat | None = self.call(lambda: self.client.exists_async(path, watch=watch), what=f"exists {path}")
        return stat

    def sync(self, path: str) -> None:
        """ZooKeeper's ``sync``: once it returns, this session's server has caught up with the leader as of the
        call, so the next read here sees every write committed before it, by any session. Each server of an
        ensemble applies the leader's commits on its own schedule: a read on one session can trail a write
        just made through another, connected to a different server."""
        self.call(lambda: self.client.sync_async(path), what=f"sync {path}")

    @property
    def bulk_timeout_s(self) -> float:
        """How long one bulk read may take: a failover-sized read at least 30 s, and never less than the
        session timeout (a read that outlives the session is pointless, one cut shorter fails needlessly)."""
        return max(30.0, self.session_timeout_ms / 1000)

    def read_data(
        self, paths: Sequence[str], *, expected_size: int = 256, timeout: float | None = None
    ) -> dict[str, DataResult | None]:
        """Data and Stat of every path (None for a missing znode) in pipelined multiRead batches
        (:func:`controller.zk.bulk_read.read_data`); bounded by :attr:`bulk_timeout_s` unless told."""
        with _bulk_read_errors(len(paths)):
            return bulk_read.read_data(
                self.client,
                paths,
                expected_size=expected_size,
                timeout=self.bulk_timeout_s if timeout is None else timeout,
            )

    def read_data_into(
        self,
        paths: Sequence[str],
        sink: Callable[[int, list[bytes | None], list[int]], None],
        *,
        expected_size: int = 256,
        timeout: float | None = None,
    ) -> None:
        """Data and version of every path handed to ``sink`` batch by batch as it arrives
        (:func:`controller.zk.bulk_read.read_data_into`); bounded like :meth:`read_data`."""
        with _bulk_read_errors(len(paths)):
            bulk_read.read_data_into(
                self.client,
                paths,
                sink,
                expected_size=expected_size,
                timeout=self.bulk_timeout_s if timeout is None else timeout,
            )

    def read_children(self, paths: Sequence[str], *, timeout: float | None = None) -> dict[str, list[str] | None]:
        """Children of every path (None for a missing znode), like :meth:`read_data`."""
        with _bulk_read_errors(len(paths)):
            return bulk_read.read_children(
                self.client, paths, timeout=self.bulk_timeout_s if timeout is None else timeout
            )

    def read_acls(
        self, paths: Sequence[str], *, in_flight: int = 1000, timeout: float | None = None
    ) -> dict[str, list[tuple[int, str, str]] | None]:
        """The ACL of every path as (perms, scheme, id), None for a missing znode. ZooKeeper's multiRead
        carries no getACL, so these are single getACL requests, pipelined ``in_flight`` at a time."""
        return bulk_acls.read_acls(
            self.client, paths, in_flight=in_flight, timeout=self.bulk_timeout_s if timeout is None else timeout
        )

    def acl_for(self, path: str) -> list[Any]:
        """kazoo ACLs for a znode this session creates at ``path`` (chroot-relative)."""
        return kazoo_acls(self.acl_policy(path))

    def set_acls(self, path: str, acls: Sequence[tuple[int, str, str]], *, write: str = "acl") -> None:
        """setACL at any aversion (as ZkSecurityMigrator does); ``acls`` as (perms, scheme, id)."""
        entries = kazoo_acls(acls)
        self.call(lambda: self.client.set_acls_async(path, entries, -1), what=f"setACL {path}", write=write)

    def create_tree(
        self, groups: Iterable[Sequence[tuple[str, bytes | None]]], *, progress: Callable[[int], None] | None = None
    ) -> int:
        """Create every znode of ``groups`` (persistent, open ACL, parents first) in pipelined write multis, a
        group in one multi where it fits (:func:`controller.zk.bulk.create_groups`); *unfenced*, for a tree
        copied into an empty chroot. Raises :class:`controller.zk.bulk.BulkWriteError` saying how many are
        certainly written."""
        return bulk.create_groups(self.client, groups, progress=progress, timeout=self.bulk_timeout_s)

    def set_acls_pipelined(
        self,
        acls: Iterable[tuple[str, Sequence[tuple[int, str, str]]]],
        *,
        in_flight: int = 1000,
        progress: Callable[[int], None] | None = None,
    ) -> int:
        """setACL at any aversion on each (path, ACL), ``in_flight`` requests at a time (ZooKeeper's multi
        carries no setACL); returns the count. The first refusal (an invalid ACL, a missing znode) is raised as
        :class:`controller.zk.bulk.BulkWriteError` after the requests already sent have been answered."""
        return bulk_acls.set_acls(
            self.client, acls, in_flight=in_flight, progress=progress, timeout=self.bulk_timeout_s
        )

    def probe_multi_read(self, timeout: float) -> bool:
        """Whether the server answers multiRead (probed once, cached). An old server answers by dropping the
        connection, so call it right after connecting, before this session holds leadership."""
        return multiread.supports_multi_read(self.client, timeout=timeout)

    @property
    def last_zxid(self) -> int:
        """The zxid of the last answer this session received: any read sent after now is served at this
        zxid or later (one connection's requests are answered in order). For :meth:`watch_data`."""
        return int(self.client.last_zxid)

    def watch_data(
        self, paths: Sequence[str], watch: Callable[[Any], None], since_zxid: int, *, missing: Sequence[str] = ()
    ) -> None:
        """Leave a data watch on each path in a few SetWatches requests (:mod:`controller.zk.setwatches`); a
        znode changed after ``since_zxid`` (take :attr:`last_zxid` before reading it) or gone fires at once.
        ``missing`` (found absent) get exists watches, which fire at once if they were created since."""
        with _watch_errors(f"watches on {len(paths)} znodes"):
            setwatches.set_data_watches(
                self.client, paths, watch, since_zxid, timeout=self.bulk_timeout_s, missing=missing
            )

    def watch_data_at(
        self, groups: Sequence[tuple[int, Sequence[str], Sequence[str]]], watch: Callable[[Any], None]
    ) -> None:
        """:meth:`watch_data` for several ``(since_zxid, paths, missing)`` groups in one pipelined round
        (:func:`controller.zk.setwatches.set_data_watches_at`)."""
        count = sum(len(paths) + len(missing) for _since, paths, missing in groups)
        with _watch_errors(f"watches on {count} znodes"):
            setwatches.set_data_watches_at(self.client, groups, watch, timeout=self.bulk_timeout_s)

    def unwatch_data(self, paths: Sequence[str], watch: Callable[[Any], None]) -> int:
        """Take ``watch`` off ``paths`` (:func:`controller.zk.setwatches.remove_data_watches`): a path left
        without watchers is forgotten by kazoo, and by the server when it is known to answer multiRead (3.6+,
        so removeWatches too). Returns the paths dropped."""
        server = multiread.known_multi_read_support(self.client) is True
        with _watch_errors(f"removing watches on {len(paths)} znodes"):
            return setwatches.remove_data_watches(self.client, paths, watch, timeout=self.bulk_timeout_s, server=server)

    # -- writes for node-owned (not controller-owned) paths ------------------------------------------
    def multi(self, ops: Sequence[Op], *, what: str, write: str, refusal_in_doubt: bool = False) -> list[Any]:
        """One atomic ZooKeeper multi, *unfenced*: for node-owned paths and for callers that put their own
        ``Check`` first (entity configs check ``/controller``). Returns the per-op results; an op's failure is
        an exception instance in its slot and means nothing was written. Controller-owned writes go through
        :class:`controller.zk.fenced_writer.FencedWriter` instead.

        A multi whose connection dropped is sent again; if that retry is refused, the refusal may be the first
        attempt's own write. Callers that sort this out themselves (the election, a broker's registration: they
        look whose node it is) get the refusal; with ``refusal_in_doubt`` (a client's admin write, which must
        not be reported as certainly not made) it raises :class:`WriteInDoubt`."""
        results: list[Any] = self.call(
            lambda: build_transaction(self.client, list(ops)).commit_async(),
            what=what,
            write=write,
            refusal_in_doubt=refusal_in_doubt,
        )
        return results

    def delete(self, path: str, version: int = -1, *, write: str = "delete") -> None:
        """Delete at ``version`` (-1: any). Raises NoNodeError / BadVersionError / NotEmptyError."""
        self.call(lambda: self.client.delete_async(path, version), what=f"delete {path}", write=write)

    def create_sequential(self, prefix: str, data: bytes, *, write: str = "create") -> str:
        """A persistent sequential node under ``prefix``; returns its path (change notifications)."""
        created: str = self.call(
            lambda: self.client.create_async(prefix, data, acl=self.acl_for(prefix), sequence=True),
            what=f"create {prefix}",
            write=write,
        )
        return created

    def set_unconditionally(self, path: str, data: bytes, *, write: str = "set") -> ZnodeStat:
        """setData at any version (Kafka's updateBrokerInfo): *not* compare-and-set."""
        stat: ZnodeStat = self.call(lambda: self.client.set_async(path, data, -1), what=f"set {path}", write=write)
        return stat

    def ensure_persistent(self, paths: Sequence[str]) -> None:
        """Create each path (and its parents) with null data if absent, as Kafka's makeSurePersistentPathExists."""
        for path in paths:
            parts = path.strip("/").split("/")
            for i in range(1, len(parts) + 1):
                prefix = "/" + "/".join(parts[:i])
                # Look first: under lockdown a create of an existing znode whose parent denies us CREATE
                # answers NoAuth, not NodeExists, and a restarting node must not fail on paths that are there.
                if self.exists(prefix) is None:
                    self.create_only(prefix, None)

    def create_only(self, path: str, data: bytes | None, *, ephemeral: bool = False, write: str = "create") -> bool:
        """Compare-and-set by existence: create if absent. True if this call created it."""
        try:
            self.call(
                lambda: self.client.create_async(path, data, acl=self.acl_for(path), ephemeral=ephemeral),
                what=f"create {path}",
                write=write,
            )
            return True
        except NodeExistsError:
            return False

    def set_if_version(self, path: str, data: bytes, version: int, *, write: str = "set") -> ZnodeStat:
        """Compare-and-set: setData only if the node is still at ``version`` (raises BadVersionError)."""
        stat: ZnodeStat = self.call(lambda: self.client.set_async(path, data, version), what=f"set {path}", write=write)
        return stat


def ensure_chroot(hosts: str, chroot: str, timeout: float, tls: ZkTls | None = None) -> None:
    """Create a missing chroot path, as Kafka does at start (KafkaServer.createChrootIfNecessary): through a
    short-lived session *without* the chroot, since a chrooted client cannot create its own root. Failing to
    connect is ZkUnavailable, with the TLS handshake's reason when that is what failed."""
    root = ZkSession(hosts, session_timeout_ms=max(int(timeout * 1000), 1000), tls=tls, name="chroot")
    root.start(timeout=timeout)
    try:
        root.client.ensure_path(chroot)
    finally:
        root.close()
