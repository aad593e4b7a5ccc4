"""The ACL cache that feeds :class:`controller.security.authorizer.AclAuthorizer`: every Kafka ACL stored in
ZooKeeper, kept current the way Kafka's AclAuthorizer keeps its cache.

The decision is a pure function of an immutable snapshot (``authorizer.py``); keeping that snapshot current
is this module's part, the one that must survive connection loss, session expiry and znodes written by
foreign tools. The cache thread, its back-off and the full reload after every reconnect are
:class:`controller.zk.watched.WatchedCache`'s; this module says what is read.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Final

from controller.store import kafka_acls as acl_store
from controller.zk.session import ZkSession
from controller.zk.watched import WatchedCache
from zkmodel import paths
from zkmodel.errorcodes import KafkaApiError
from zkmodel.errors import ZnodeFormatError
from zkmodel.kafka_acls import (
    AclEntry,
    PatternType,
    ResourcePattern,
    decode_extended_acl_change,
    decode_literal_acl_change,
)

__all__ = ["AclCache"]

log = logging.getLogger(__name__)

#: The change stores and how each one's notifications name a resource (ZkAclChangeStore.stores).
_CHANGE_STORES: Final[Mapping[str, Callable[[str, bytes | None], ResourcePattern]]] = MappingProxyType(
    {
        paths.acl_changes(PatternType.LITERAL): decode_literal_acl_change,
        paths.acl_changes(PatternType.PREFIXED): decode_extended_acl_change,
    }
)
_EMPTY: Final[Mapping[ResourcePattern, tuple[AclEntry, ...]]] = MappingProxyType({})


def _storable(name: str) -> bool:
    """Whether an ACL znode can exist for this resource name (a foreign notification may name anything)."""
    return name not in ("", ".", "..") and "/" not in name and "\x00" not in name


class AclCache(WatchedCache[Mapping[ResourcePattern, tuple[AclEntry, ...]]]):
    """All of ZooKeeper's ACLs, kept current the way Kafka's AclAuthorizer keeps its cache.

    A full load (``acl_store.list_acls``) at start, then children watches on ``/kafka-acl-changes`` and
    ``/kafka-acl-extended-changes``: each new sequential notification (numbered above the last one seen, as
    ZkNodeChangeNotificationListener does) names one resource, whose znode is read again. The Java client
    re-sends its watches after a reconnect; kazoo 2.11 drops them on any connection loss and does not, so
    after SUSPENDED or LOST the cache reloads everything (re-arming the watches first) once CONNECTED again.
    Notifications are persistent, so a change made while disconnected is still there to be seen.

    Watch callbacks only record what changed; the cache thread does the reads and publishes each new state as
    one immutable mapping (copy-on-write), so a reader never sees half an update. Until ZooKeeper answers
    again the last snapshot keeps being served. ``snapshot()`` is lock-free, ``version`` counts the
    snapshots published, ``refresh_now()`` reloads everything and waits for it.

    Foreign data is skipped with a warning naming the znode: an unreadable notification, an unreadable ACL
    znode at the full load (left out, as list_acls does), or at a later change (its previous ACLs are kept,
    as Kafka keeps its cache entry when processing a notification fails). Notifications are never purged
    here (Kafka brokers purge theirs after 15 minutes); this cache only reads.
    """

    _log = log

    def __init__(self, session: ZkSession, *, coalesce_seconds: float = 0.01, name: str = "acl-cache") -> None:
        super().__init__(session, _EMPTY, coalesce_seconds=coalesce_seconds, name=name)
        self._acls: dict[ResourcePattern, tuple[AclEntry, ...]] = {}
        self._last_change: dict[str, int] = {}
        self._warned: set[str] = set()

    def _load_all(self) -> str:
        """Arm both watches and note the newest notification first, then read every ACL: a change after the
        noted one fires a watch and is read again, one before it is already in what the load reads."""
        last: dict[str, int] = {}
        for store in _CHANGE_STORES:
            listing = self._list_changes(store)
            last[store] = listing[-1][0] if listing else -1
        acls = acl_store.list_acls(self.session, timeout=self.session.bulk_timeout_s, fail_closed=True)
        self._acls = dict(acls)
        self._last_change = last
        self._publish()
        return f"loaded ACLs of {len(self._acls)} resources"

    def _apply_dirty(self, dirty: set[str]) -> None:
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
                self._request_reload()
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
        out = []
        for child in self._watch_children(store):
            suffix = child[len(paths.ACL_CHANGE_PREFIX) :]
            if child.startswith(paths.ACL_CHANGE_PREFIX) and suffix.isascii() and suffix.isdigit():
                out.append((int(suffix), child))
            elif f"{store}/{child}" not in self._warned:
                self._warned.add(f"{store}/{child}")
                log.warning("%s: ignoring %s/%s: not an ACL change notification", self.name, store, child)
        out.sort()
        return out

    def _publish(self) -> None:
        if dict(self._snapshot) != self._acls:
            self._install(MappingProxyType(dict(self._acls)))
