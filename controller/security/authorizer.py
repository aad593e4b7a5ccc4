"""Kafka's ZooKeeper-mode ACL authorization: the decision (:class:`AclAuthorizer`) and the ACL cache that
feeds it (:class:`AclCache`).

Why two parts: the decision is a pure function of an immutable ACL snapshot, so it can be tested
exhaustively without ZooKeeper and shared lock-free by every request thread; keeping the snapshot current is
the part that must survive connection loss, session expiry and znodes written by foreign tools.

Decision rules are Kafka 3.9's ``kafka.security.authorizer.AclAuthorizer`` (``authorizeAction``,
``matchingAcls``, ``matchingAclExists``, ``authorizeByResourceType``):

- a super user (``super.users``) may do anything;
- the ACLs that apply to a (literal) resource are those of the literal pattern with its exact name, of the
  literal wildcard ``*`` and of every prefixed pattern whose name is a prefix of it, all of its resource type;
- when none apply, the answer is ``allow.everyone.if.no.acl.found`` — whether *any* ACL applies to the
  resource, not whether one matches the caller;
- otherwise a matching DENY wins, else a matching ALLOW is needed. An ACL matches when its principal is the
  caller's or ``User:*``, its host the caller's or ``*``, and its operation the requested one or ALL. For
  ALLOW only, DESCRIBE is also granted by READ, WRITE, DELETE and ALTER, and DESCRIBE_CONFIGS by
  ALTER_CONFIGS (a DENY never implies anything beyond itself and ALL).

Principals are compared as text (``User:alice``): Kafka compares KafkaPrincipals by type and name, and a
principal's text is ``type:name`` split at the first colon, so both comparisons agree. Hosts are compared as
text as well; callers pass the client address as Java's ``InetAddress.getHostAddress`` writes it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from kazoo.exceptions import KazooException
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import EventType, KazooState, WatchedEvent

from controller.store import acls as acl_store
from controller.zk.session import SessionLost, ZkSession, ZkTimeout, ZkUnavailable
from zkmodel import paths
from zkmodel.acls import (
    WILDCARD_HOST,
    WILDCARD_RESOURCE,
    AclEntry,
    AclOperation,
    PatternType,
    PermissionType,
    ResourcePattern,
    ResourceType,
    decode_extended_acl_change,
    decode_literal_acl_change,
)
from zkmodel.errorcodes import KafkaApiError
from zkmodel.errors import ZnodeFormatError

__all__ = ["WILDCARD_PRINCIPAL", "AclAuthorizer", "AclCache", "AclSnapshot"]

log = logging.getLogger(__name__)

#: Logged with every unexpected exception; the test suite fails if it appears.
UNEXPECTED: Final = "BK-UNEXPECTED"
#: AclEntry.WILDCARD_PRINCIPAL_STRING: only the ``User`` type has a wildcard.
WILDCARD_PRINCIPAL: Final = "User:*"

#: All ACLs by resource pattern. Treated as immutable: publish a new mapping, never mutate one in place.
AclSnapshot = Mapping[ResourcePattern, Sequence[AclEntry]]

_ALL = AclOperation.ALL
#: authorizeAction's allowOps: the operations whose ALLOW grants the requested one (besides ALL).
_ALLOWED_BY: Final[Mapping[AclOperation, frozenset[AclOperation]]] = MappingProxyType(
    {
        AclOperation.DESCRIBE: frozenset(
            {AclOperation.DESCRIBE, AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE, AclOperation.ALTER}
        ),
        AclOperation.DESCRIBE_CONFIGS: frozenset({AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS}),
    }
)


def allowed_by(operation: AclOperation) -> frozenset[AclOperation]:
    """The ALLOW operations that grant ``operation`` (ALL grants everything and is not listed)."""
    return _ALLOWED_BY.get(operation) or frozenset({operation})


# -- the index: one per snapshot, shared by all checks on it ------------------------------------------------


@dataclass(frozen=True)
class _Rules:
    """One pattern's ACLs split by permission, so a check scans only the side it needs."""

    deny: tuple[AclEntry, ...]
    allow: tuple[AclEntry, ...]


#: AclAuthorizer.ResourceTypeKey without the resource type: (permission, pattern type, principal, host, op).
_AceKey = tuple[PermissionType, PatternType, str, str, AclOperation]


@dataclass(frozen=True)
class _TypeIndex:
    literal: Mapping[str, _Rules]
    prefixed: Mapping[str, _Rules]
    #: Distinct lengths of the prefixed names, ascending: a name's candidate prefixes are looked up by length.
    prefix_lengths: tuple[int, ...]
    #: AclAuthorizer.resourceCache: the resource names holding each ACL, for authorizeByResourceType.
    by_ace: Mapping[_AceKey, frozenset[str]]


def _build_index(acls: AclSnapshot) -> dict[ResourceType, _TypeIndex]:
    literal: dict[ResourceType, dict[str, _Rules]] = {}
    prefixed: dict[ResourceType, dict[str, _Rules]] = {}
    by_ace: dict[ResourceType, dict[_AceKey, set[str]]] = {}
    for pattern, entries in acls.items():
        if not entries:
            continue  # Kafka's cache drops a resource whose last ACL went: no ACLs, not an empty rule
        if pattern.pattern_type is PatternType.LITERAL:
            table = literal.setdefault(pattern.resource_type, {})
        elif pattern.pattern_type is PatternType.PREFIXED:
            table = prefixed.setdefault(pattern.resource_type, {})
        else:  # pragma: no cover - PatternType has no other stored member
            continue
        unique = tuple(dict.fromkeys(entries))
        table[pattern.name] = _Rules(
            deny=tuple(e for e in unique if e.permission_type is PermissionType.DENY),
            allow=tuple(e for e in unique if e.permission_type is PermissionType.ALLOW),
        )
        keys = by_ace.setdefault(pattern.resource_type, {})
        for e in unique:
            key = (e.permission_type, pattern.pattern_type, e.principal, e.host, e.operation)
            keys.setdefault(key, set()).add(pattern.name)
    out: dict[ResourceType, _TypeIndex] = {}
    for resource_type in literal.keys() | prefixed.keys():
        pre = prefixed.get(resource_type, {})
        out[resource_type] = _TypeIndex(
            literal=literal.get(resource_type, {}),
            prefixed=pre,
            prefix_lengths=tuple(sorted({len(name) for name in pre})),
            by_ace={k: frozenset(v) for k, v in by_ace[resource_type].items()},
        )
    return out


def _matches(entry: AclEntry, principal: str, host: str) -> bool:
    return (entry.principal == principal or entry.principal == WILDCARD_PRINCIPAL) and (
        entry.host == host or entry.host == WILDCARD_HOST
    )


def _dominated(name: str, deny_prefixes: list[frozenset[str]]) -> bool:
    """AclAuthorizer.hasDominantPrefixedDeny: a DENY prefix covers ``name`` (a prefix of it, itself included)."""
    return any(name[:i] in names for i in range(1, len(name) + 1) for names in deny_prefixes)


class AclAuthorizer:
    """Kafka's AclAuthorizer decisions over the ACL snapshot ``acls()`` returns at each call.

    ``acls`` is typically :meth:`AclCache.snapshot`. Each distinct snapshot object is indexed once (by
    resource type, pattern type and permission) and the index is reused while ``acls()`` returns that same
    object, so a check costs a few dictionary lookups plus a scan of the ACLs that apply to the resource.
    Snapshots must therefore be replaced, never mutated in place.
    """

    def __init__(
        self,
        acls: Callable[[], AclSnapshot],
        super_users: Iterable[str] = (),
        allow_everyone_if_no_acl_found: bool = False,
    ) -> None:
        users = frozenset(u.strip() for u in super_users)
        bad = sorted(u for u in users if ":" not in u)
        if bad:
            # SecurityUtils.parseKafkaPrincipal refuses these, and so the broker refuses the config.
            raise ValueError(f"expected super users in format principalType:principalName but got {bad}")
        self._acls = acls
        self.super_users = users
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found
        self._indexed: tuple[AclSnapshot, dict[ResourceType, _TypeIndex]] | None = None

    def _index(self) -> dict[ResourceType, _TypeIndex]:
        snapshot = self._acls()
        indexed = self._indexed  # one read: another thread may replace it meanwhile
        if indexed is not None and indexed[0] is snapshot:
            return indexed[1]
        index = _build_index(snapshot)
        self._indexed = (snapshot, index)  # holds the snapshot, so its id cannot be reused while cached
        return index

    def _applicable(self, resource_type: ResourceType, name: str) -> list[_Rules]:
        """AclAuthorizer.matchingAcls: the ACLs of the patterns that apply to the literal resource."""
        index = self._index().get(resource_type)
        if index is None:
            return []
        out: list[_Rules] = []
        for length in index.prefix_lengths:
            if length > len(name):
                break
            rules = index.prefixed.get(name[:length])
            if rules is not None:
                out.append(rules)
        for literal in (WILDCARD_RESOURCE, name) if name != WILDCARD_RESOURCE else (name,):
            rules = index.literal.get(literal)
            if rules is not None:
                out.append(rules)
        return out

    def authorize(
        self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType, name: str
    ) -> bool:
        """AclAuthorizer.authorizeAction for ``operation`` on the literal resource ``resource_type:name``."""
        if principal in self.super_users:
            return True
        rules = self._applicable(resource_type, name)
        if not rules:
            return self.allow_everyone_if_no_acl_found
        for r in rules:
            for e in r.deny:
                if (e.operation is operation or e.operation is _ALL) and _matches(e, principal, host):
                    return False
        granting = allowed_by(operation)
        for r in rules:
            for e in r.allow:
                if (e.operation in granting or e.operation is _ALL) and _matches(e, principal, host):
                    return True
        return False

    def authorize_any(self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType) -> bool:
        """AclAuthorizer.authorizeByResourceType: may the caller do ``operation`` on at least one resource of
        this type (e.g. "CREATE on some topic")? Kafka's rules, quirks included:

        - a matching DENY on the literal wildcard denies, even to allow.everyone.if.no.acl.found;
        - otherwise allow.everyone.if.no.acl.found allows, whatever ACLs exist;
        - otherwise some matching ALLOW must not be covered by a matching DENY: an ALLOW prefix is covered by
          a DENY prefix that is a prefix of it, an ALLOW literal by the same DENY literal or a DENY prefix of
          it; an ALLOW on the literal wildcard is never covered.

        Operations are matched exactly (or ALL): unlike :meth:`authorize`, READ does not grant DESCRIBE here.
        """
        if principal in self.super_users:
            return True
        index = self._index().get(resource_type)
        by_ace: Mapping[_AceKey, frozenset[str]] = index.by_ace if index is not None else {}

        def matching(permission: PermissionType, pattern_type: PatternType) -> list[frozenset[str]]:
            """AclAuthorizer.matchingResources: names per matching (principal, host, operation) key."""
            out = []
            for p in {principal, WILDCARD_PRINCIPAL}:
                for h in {host, WILDCARD_HOST}:
                    for o in {operation, _ALL}:
                        names = by_ace.get((permission, pattern_type, p, h, o))
                        if names:
                            out.append(names)
            return out

        deny_literals = matching(PermissionType.DENY, PatternType.LITERAL)
        if any(WILDCARD_RESOURCE in names for names in deny_literals):
            return False
        if self.allow_everyone_if_no_acl_found:
            return True
        deny_prefixes = matching(PermissionType.DENY, PatternType.PREFIXED)
        allow_literals = matching(PermissionType.ALLOW, PatternType.LITERAL)
        allow_prefixes = matching(PermissionType.ALLOW, PatternType.PREFIXED)
        if not deny_literals and not deny_prefixes:
            return bool(allow_prefixes or allow_literals)
        for names in allow_prefixes:
            if any(not _dominated(prefix, deny_prefixes) for prefix in names):
                return True
        for names in allow_literals:
            for literal in names:
                if literal == WILDCARD_RESOURCE:
                    return True
                if not any(literal in d for d in deny_literals) and not _dominated(literal, deny_prefixes):
                    return True
        return False


# -- the cache -----------------------------------------------------------------------------------------------

#: Errors that mean "ZooKeeper cannot answer right now": keep serving the last snapshot, retry later.
_ZK_ERRORS: Final = (ZkUnavailable, SessionLost, ZkTimeout, KazooException, KazooTimeoutError, TimeoutError)
#: The change stores and how each one's notifications name a resource (ZkAclChangeStore.stores).
_CHANGE_STORES: Final[Mapping[str, Callable[[str, bytes | None], ResourcePattern]]] = MappingProxyType(
    {
        paths.acl_changes(PatternType.LITERAL): decode_literal_acl_change,
        paths.acl_changes(PatternType.PREFIXED): decode_extended_acl_change,
    }
)
#: A znode that keeps appearing and vanishing between a getChildren and an exists is retried this often.
_MAX_RACE_ROUNDS: Final = 10
_EMPTY: Final[Mapping[ResourcePattern, tuple[AclEntry, ...]]] = MappingProxyType({})


def _storable(name: str) -> bool:
    """Whether an ACL znode can exist for this resource name (a foreign notification may name anything)."""
    return name not in ("", ".", "..") and "/" not in name and "\x00" not in name


class AclCache:
    """All of ZooKeeper's ACLs, kept current the way Kafka's AclAuthorizer keeps its cache.

    A full load (``acl_store.list_acls``) at start, then children watches on ``/kafka-acl-changes`` and
    ``/kafka-acl-extended-changes``: each new sequential notification (numbered above the last one seen, as
    ZkNodeChangeNotificationListener does) names one resource, whose znode is read again. The Java client
    re-sends its watches after a reconnect; kazoo 2.11 drops them on any connection loss and does not, so
    after SUSPENDED or LOST the cache reloads everything (re-arming the watches first) once CONNECTED again.
    Notifications are persistent, so a change made while disconnected is still there to be seen.

    Why a thread: watch callbacks run on kazoo's event thread and only record what changed; the cache thread
    does the reads and publishes each new state as one immutable mapping (copy-on-write), so a reader never
    sees half an update. Until ZooKeeper answers again the last snapshot keeps being served.

    Foreign data is skipped with a warning naming the znode: an unreadable notification, an unreadable ACL
    znode at the full load (left out, as list_acls does), or at a later change (its previous ACLs are kept,
    as Kafka keeps its cache entry when processing a notification fails). Notifications are never purged
    here (Kafka brokers purge theirs after 15 minutes); this cache only reads.
    """

    def __init__(self, session: ZkSession, *, coalesce_seconds: float = 0.01, name: str = "acl-cache") -> None:
        self.session = session
        #: Pause after the first watch event before reading, so a burst of notifications is one update.
        self.coalesce_seconds = coalesce_seconds
        self.name = name
        #: Full loads done (start, every reconnect, every refresh_now).
        self.full_loads = 0
        self._acls: dict[ResourcePattern, tuple[AclEntry, ...]] = {}
        self._last_change: dict[str, int] = {}
        self._snapshot: Mapping[ResourcePattern, tuple[AclEntry, ...]] = _EMPTY
        self._version = 0
        self._published = threading.Condition(threading.Lock())
        self._lock = threading.Lock()
        self._dirty: set[str] = set()
        # Full reloads by generation: one is wanted while wanted > done (refresh_now waits on ``done``).
        self._reload_wanted = 1
        self._reload_done = 0
        self._watches_lost = False
        self._stopping = False
        self._warned: set[str] = set()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # One bound method for every watch: kazoo keeps watchers in a set per path, so re-arming an
        # outstanding watch adds no second callback.
        self._watcher: Callable[[WatchedEvent], None] = self._on_watch
        session.add_state_listener(self._on_session_state)

    # -- public API ------------------------------------------------------------------------------------------
    def start(self) -> Mapping[ResourcePattern, tuple[AclEntry, ...]]:
        """Load everything on the caller's thread (a broker must know its ACLs before it serves), then start
        the cache thread. ZooKeeper errors propagate and nothing is started; start() may be retried."""
        if self._thread is not None:
            raise RuntimeError(f"{self.name} already started")
        with self._lock:
            generation = self._reload_wanted
            self._watches_lost = False
        self._full_load(generation)
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()
        return self._snapshot

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the cache thread; later watch events are ignored and the last snapshot stays readable."""
        with self._lock:
            self._stopping = True
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def snapshot(self) -> Mapping[ResourcePattern, tuple[AclEntry, ...]]:
        """The current ACLs by resource pattern (lock-free; an immutable mapping, replaced on every change)."""
        return self._snapshot

    @property
    def version(self) -> int:
        """Incremented each time a different snapshot is published."""
        return self._version

    def wait_for(
        self, predicate: Callable[[Mapping[ResourcePattern, tuple[AclEntry, ...]]], bool], timeout: float = 30.0
    ) -> Mapping[ResourcePattern, tuple[AclEntry, ...]]:
        """The first snapshot (the current one or a later one) for which ``predicate`` holds; TimeoutError
        when none does within ``timeout``. Lets callers and tests wait for a change without sleeping."""
        deadline = time.monotonic() + timeout
        current = self._snapshot
        while not predicate(current):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"{self.name}: condition not met within {timeout:.1f}s (version {self._version})")
            current = self._next_snapshot(current, remaining)
        return current

    def _next_snapshot(
        self, seen: Mapping[ResourcePattern, tuple[AclEntry, ...]], timeout: float
    ) -> Mapping[ResourcePattern, tuple[AclEntry, ...]]:
        with self._published:
            self._published.wait_for(lambda: self._snapshot is not seen, timeout)
            return self._snapshot

    def refresh_now(self, timeout: float = 30.0) -> Mapping[ResourcePattern, tuple[AclEntry, ...]]:
        """Reload everything from ZooKeeper and return the snapshot once a load that started after this call
        has finished: afterwards every change acknowledged before the call is in the snapshot."""
        if self._thread is None or self._stop.is_set():
            raise RuntimeError(f"{self.name} is not running")
        with self._lock:
            self._reload_wanted += 1
            generation = self._reload_wanted
        self._wake.set()
        with self._published:
            if not self._published.wait_for(lambda: self._reload_done >= generation, timeout):
                raise TimeoutError(f"{self.name}: no full reload within {timeout:.1f}s")
        return self._snapshot

    # -- kazoo's threads: record, never read -----------------------------------------------------------------
    def _on_watch(self, event: WatchedEvent) -> None:
        try:
            if event.type == EventType.NONE or event.path is None:
                return  # kazoo dropping its watchers on a disconnect: the state listener schedules the reload
            with self._lock:
                if self._stopping:
                    return
                self._dirty.add(event.path)
            self._wake.set()
        except Exception:
            log.exception("%s %s: watch callback failed for %r", UNEXPECTED, self.name, event)

    def _on_session_state(self, state: KazooState) -> None:
        with self._lock:
            if self._stopping:
                return
            if state != KazooState.CONNECTED:
                self._watches_lost = True  # SUSPENDED or LOST: kazoo has just dropped every watcher
                return
            if not self._watches_lost:
                return
            self._watches_lost = False
            self._reload_wanted += 1
        self._wake.set()

    # -- the cache thread --------------------------------------------------------------------------------------
    def _run(self) -> None:
        backoff = 0.0
        while not self._stop.is_set():
            self._wake.wait()
            if self._stop.is_set() or (self.coalesce_seconds > 0 and self._stop.wait(self.coalesce_seconds)):
                break
            with self._lock:
                self._wake.clear()
                generation = self._reload_wanted
                reload = generation > self._reload_done
                dirty, self._dirty = self._dirty, set()
            try:
                if reload:
                    self._full_load(generation)  # re-lists both change stores: covers ``dirty``
                elif dirty:
                    self._process_changes(dirty)
                backoff = 0.0
                continue
            except _ZK_ERRORS as exc:
                if self._stop.is_set():
                    break
                backoff = min(max(2 * backoff, 0.1), 2.0)
                log.warning(
                    "%s: ZooKeeper unavailable (%r); serving version %d, retrying in %.1fs",
                    self.name,
                    exc,
                    self._version,
                    backoff,
                )
            except Exception:
                backoff = min(max(2 * backoff, 0.1), 2.0)
                log.exception("%s %s: update failed; full reload in %.1fs", UNEXPECTED, self.name, backoff)
                with self._lock:
                    self._reload_wanted += 1
            with self._lock:
                self._dirty |= dirty
            self._wake.set()
            if self._stop.wait(backoff):
                break

    def _full_load(self, generation: int) -> None:
        """Arm both watches and note the newest notification first, then read every ACL: a change after the
        noted one fires a watch and is read again, one before it is already in what the load reads."""
        started = time.monotonic()
        last: dict[str, int] = {}
        for store in _CHANGE_STORES:
            listing = self._list_changes(store)
            last[store] = listing[-1][0] if listing else -1
        acls = acl_store.list_acls(self.session, timeout=self._bulk_timeout(), fail_closed=True)
        self._acls = dict(acls)
        self._last_change = last
        self._publish()
        self.full_loads += 1
        with self._published:
            self._reload_done = max(self._reload_done, generation)
            self._published.notify_all()
        log.info(
            "%s: loaded ACLs of %d resources in %.2fs (version %d)",
            self.name,
            len(self._acls),
            time.monotonic() - started,
            self._version,
        )

    def _process_changes(self, dirty: set[str]) -> None:
        """ZkNodeChangeNotificationListener.processNotifications for the change stores whose watch fired:
        read every notification newer than the last one seen, then each resource they name. Everything is
        read before anything is applied, so a ZooKeeper failure half-way leaves the cache as it was."""
        last = dict(self._last_change)
        named: dict[ResourcePattern, None] = {}
        for store in sorted(dirty & _CHANGE_STORES.keys()):
            listing = self._list_changes(store)
            seen = last.get(store, -1)
            if listing and listing[-1][0] < seen:
                log.warning("%s: %s was re-created (sequence restarted); reloading all ACLs", self.name, store)
                with self._lock:
                    self._reload_wanted += 1
                self._wake.set()
                return
            decode = _CHANGE_STORES[store]
            for sequence, child in listing:
                if sequence <= seen:
                    continue
                path = f"{store}/{child}"
                found = self.session.get(path)
                if found is not None:  # else purged meanwhile: its resource was re-read when it was new
                    try:
                        pattern = decode(path, found[0])
                    except ZnodeFormatError as exc:
                        log.warning("%s: skipping unreadable ACL change notification %s: %s", self.name, path, exc)
                    else:
                        if _storable(pattern.name):
                            named[pattern] = None
                        else:
                            log.warning(
                                "%s: skipping ACL change notification %s: no such resource name %r",
                                self.name,
                                path,
                                pattern.name,
                            )
                seen = sequence
            last[store] = seen
        updates: dict[ResourcePattern, tuple[AclEntry, ...]] = {}
        for pattern in named:
            try:
                updates[pattern] = acl_store.read_resource(self.session, pattern)[0]
            except KafkaApiError as exc:  # the znode is not in Kafka's format
                if pattern in self._acls:
                    log.warning("%s: keeping the cached ACLs of %s: %s", self.name, pattern, exc.message)
                else:  # nothing to keep: fail closed rather than treat the resource as having no ACLs
                    log.warning("%s: denying everyone but super users on %s: %s", self.name, pattern, exc.message)
                    updates[pattern] = acl_store.FAIL_CLOSED
        for pattern, entries in updates.items():
            if entries:
                self._acls[pattern] = entries
            else:
                self._acls.pop(pattern, None)
        self._last_change = last
        if updates:
            log.info("%s: re-read the ACLs of %d resources", self.name, len(updates))
            self._publish()

    def _list_changes(self, store: str) -> list[tuple[int, str]]:
        """The store's notifications as (sequence, child), ascending, with a children watch on the store
        (or an exists watch while it does not exist; its creation then fires like a new notification)."""
        for _ in range(_MAX_RACE_ROUNDS):
            children = self.session.get_children(store, watch=self._watcher)
            if children is not None:
                break
            if self.session.exists(store, watch=self._watcher) is None:
                return []
        else:
            raise ZkUnavailable(f"{store} keeps appearing and vanishing")
        out = []
        for child in children:
            suffix = child[len(paths.ACL_CHANGE_PREFIX) :]
            if child.startswith(paths.ACL_CHANGE_PREFIX) and suffix.isascii() and suffix.isdigit():
                out.append((int(suffix), child))
            elif f"{store}/{child}" not in self._warned:
                self._warned.add(f"{store}/{child}")
                log.warning("%s: ignoring %s/%s: not an ACL change notification", self.name, store, child)
        out.sort()
        return out

    def _publish(self) -> None:
        if dict(self._snapshot) == self._acls:
            return
        new = MappingProxyType(dict(self._acls))
        with self._published:
            self._snapshot = new
            self._version += 1
            self._published.notify_all()

    def _bulk_timeout(self) -> float:
        return max(30.0, self.session.session_timeout_ms / 1000)
