"""The node's metadata image (:mod:`controller.image.snapshot`), kept current from two feeds in one order.

Brokers answer Metadata and DescribeCluster from it, a standby controller that wins the election builds its
context from it (:mod:`controller.active.standby`), and ZooKeeper stays the truth: every controller write is
fenced and versioned whatever the image says.

The two feeds:

1. **ZooKeeper's watches**, for every change by anyone: a children watch on ``/brokers/ids`` and
   ``/brokers/topics``, a data watch on ``/controller``, on every broker registration, on every topic znode and
   on every partition state znode (an exists watch where a state znode does not exist yet). kazoo 2.11 has no
   persistent recursive watches and routes events by exact path, hence one-shot watches, registered in
   pipelined batches. A fired path is read again (with a fresh watch) by the cache thread.
2. **This node's own controller's committed writes** (:class:`controller.zk.fenced_writer.WriteObserver`),
   taken in as written, with the Stat and zxid ZooKeeper answered, instead of being read back: Kafka's
   ZooKeeper-mode brokers likewise learn what the controller wrote from the controller (UpdateMetadata),
   never by watching topic or state znodes. Only for a controller on this cache's own ZooKeeper session.

The order rule, and the invariant it keeps — *the image never holds a znode older than one it held before,
and every change made after the image's content of a znode fires a watch that the cache reads*:

- A znode's version decides (and a topic's czxid, which tells incarnations apart): a write or read at a
  version the image already holds, or an older one, changes nothing. So a read that raced with a write can
  never take the image back, and a write that arrives after the watch read that already saw it costs nothing.
- A write's watch events reach the session before the write's answer (ZooKeeper orders a connection's
  notifications before its later replies); the watcher records them inline. The paths of a write in flight
  are announced first (``writing``), and their events are held back until the write settles; then the
  write and its events are taken together and the write explains them: nothing is read back.
- Each written path is watched again with SetWatches relative to the write's own zxid: a change made by
  anyone after the write fires at once and is read as usual; one made before it is older than the write.
- A write that failed, or whose outcome is unknown (connection lost), releases its paths and marks them
  dirty: they are read as any other change. A connection loss reloads everything anyway (kazoo drops every
  watch on it).

The cache thread, its back-off, the full reload after every reconnect and the catch-up a standby waits for are
:class:`controller.zk.watched.WatchedCache`'s; this module says what is read and applied. Each update reads
everything it needs before changing anything, and publishes a new immutable snapshot (copy-on-write), so a
reader holding one never sees a half-applied update.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from controller.broker.image_model import (
    DATA_WRITES,
    Committed,
    Delta,
    Model,
    Reader,
    build_partition,
    build_topic,
    classify,
    decode_topic,
    decode_topic_data,
    image_paths,
    rearm_points,
    served_partition,
    znode_kind,
)
from controller.image.snapshot import (
    EMPTY_SNAPSHOT,
    NO_CONTROLLER,
    CachedBroker,
    CachedPartition,
    CachedTopic,
    MetadataSnapshot,
)
from controller.zk.ops import Create, Delete, Op
from controller.zk.session import ZkSession
from controller.zk.watched import ZK_UNAVAILABLE, DataResult, WatchedCache
from zkmodel import paths
from zkmodel.brokers import BrokerRegistration
from zkmodel.election import ControllerZnode
from zkmodel.errors import ZnodeFormatError
from zkmodel.topics import PartitionState, TopicAssignment

__all__ = ["MetadataCache"]

log = logging.getLogger(__name__)


class MetadataCache(WatchedCache[MetadataSnapshot]):
    """Keeps a :class:`MetadataSnapshot` in sync with ZooKeeper for the broker's request handlers.

    ``start()`` loads everything (on the caller's thread, so a broker knows the cluster before it serves)
    and starts the cache thread; ``snapshot()`` is lock-free; ``listener`` gets every new snapshot, on the
    cache thread (the first one on start()'s caller), so it must be quick and must not block. The thread,
    its back-off and the reload after a reconnect are :class:`~controller.zk.watched.WatchedCache`'s.
    """

    _log = log

    def __init__(
        self,
        session: ZkSession,
        *,
        listener: Callable[[MetadataSnapshot], None] | None = None,
        coalesce_seconds: float = 0.01,
        name: str = "metadata-cache",
    ) -> None:
        super().__init__(session, EMPTY_SNAPSHOT, coalesce_seconds=coalesce_seconds, name=name, listener=listener)
        self._model = Model()
        #: Broker, topic and state znodes read by updates (full loads included): what the committed feed saves.
        self.znodes_read = 0

    # -- the two kinds of update -------------------------------------------------------------------------------
    def _load_all(self) -> str:
        everything = {paths.CONTROLLER, paths.BROKER_IDS, paths.BROKER_TOPICS}
        model = Model()
        delta = self._read(model, everything, self._watch_then_read)
        changed = self._apply(model, delta)
        old = self._snapshot
        model.unreadable_changed = model.unreadable != old.unreadable
        self._model = model
        self._publish(changed_topics=set(old.topics) | set(model.topics) | changed, changed_partitions={})
        partitions = sum(len(t.states) for t in model.topics.values())
        return (
            f"loaded {len(model.brokers)} brokers, {len(model.topics)} topics, {partitions} partitions, "
            f"controller {model.controller_id}"
        )

    def _apply_dirty(self, dirty: set[str]) -> None:
        delta = self._read(self._model, dirty, self._get_watched)
        changed_topics = self._apply(self._model, delta)
        changed_partitions: dict[str, set[int]] = {}
        for topic, p in delta.states:
            if topic not in changed_topics:
                changed_partitions.setdefault(topic, set()).add(p)
        self._publish(changed_topics=changed_topics, changed_partitions=changed_partitions)
        if delta.unwatch:
            self._unwatch(delta.unwatch)

    def _unwatch(self, state_paths: list[str]) -> None:
        """Drop the watches left on a deleted topic's partition states. Kafka deletes the states before the topic
        znode, so the cache, still seeing the topic, re-armed each vanished state with an exists watch (which
        only a creation would fire): ~100 bytes per deleted partition in kazoo and as much in ZooKeeper, for
        as long as the session lives. Best effort: on a ZooKeeper error the server keeps those watches, which
        is harmless (kazoo no longer routes them anywhere)."""
        try:
            dropped = self.session.unwatch_data(state_paths, self._watcher)
        except ZK_UNAVAILABLE as exc:
            log.warning(
                "%s: could not remove the watches of %d deleted partitions: %r", self.name, len(state_paths), exc
            )
            return
        log.debug("%s: removed the watches of %d deleted partition states", self.name, dropped)

    # -- the committed feed: this node's own controller's writes, taken in without reading them back ----------
    def writing(self, ops: Sequence[Op]) -> Committed:
        """:class:`controller.zk.fenced_writer.WriteObserver`: this node's controller sends ``ops``. Only for a
        controller on this cache's own session: ZooKeeper delivers a write's watch events on the connection
        before its answer, and they are held back until the write settles (see :meth:`_apply_committed`)."""
        written = Committed(ops, image_paths(ops))
        self._pending.writing(written.paths)
        return written

    def settled(self, token: Committed, results: Sequence[Any] | None, zxid: int) -> None:
        """:class:`controller.zk.fenced_writer.WriteObserver`: the multi was applied (``results``) or not, or
        not known to be (None: what it may have written is read)."""
        if results is not None:
            self._settle_write(token.paths, token._replace(results=results, zxid=zxid), ())
        else:
            # a topic znode in doubt: list the topics again too (an unknown topic's own path is not read alone)
            relist = any((kind := znode_kind(path)) is not None and kind[1] is None for path in token.paths)
            self._settle_write(token.paths, None, [*token.paths, *([paths.BROKER_TOPICS] if relist else [])])

    def _written_paths(self, committed: list[Any]) -> set[str]:
        return {path for write in committed for path in write.paths}

    def _apply_committed(self, committed: list[Any], dirty: set[str]) -> set[str]:
        """Apply the controller's committed writes to the model as if read back, and publish. The order rule:
        a znode's version decides (and a topic's czxid, which tells incarnations apart), so a write the image
        already holds at that version, or a later one, changes nothing, and a read that raced with a write can
        never take the image back.

        The watch events of these writes are among ``dirty`` (held back until they settled, see :meth:`writing`);
        each written path is
        taken out of it and watched again with SetWatches relative to the write's zxid: a change made by
        anyone after the write fires at once and is read as usual, a change before it is older than the write.
        Returns the dirty paths still to be read."""
        model = self._model
        changed_topics: set[str] = set()
        changed_partitions: dict[str, set[int]] = {}
        rearm: dict[int, list[str]] = {}
        missing: dict[int, list[str]] = {}
        unwatch: list[str] = []
        left = set(dirty)
        for write in committed:
            created_states = {op.path for op in write.ops if isinstance(op, Create)}
            for op, result in zip(write.ops, write.results, strict=True):
                kind = znode_kind(op.path)
                if kind is None:
                    continue
                name, p = kind
                if isinstance(op, Delete):
                    if p is None and name in model.topics:  # a topic's znodes go before its own: it is gone
                        unwatch += model.forget(name, model.topics.pop(name))
                        changed_topics.add(name)
                    left.discard(op.path)
                    continue
                if not isinstance(op, DATA_WRITES):
                    continue
                stat = getattr(result, "stat", None)
                if stat is not None:
                    czxid, version, since = int(stat.czxid), int(stat.version), int(stat.mzxid)
                elif write.zxid >= 0:  # a create answered without its Stat: it has the multi's zxid, version 0
                    czxid, version, since = write.zxid, 0, write.zxid
                else:
                    left.add(op.path)  # nothing tells when it was written: read it back
                    continue
                data = op.data
                if p is None:
                    old = model.topics.get(name)
                    if old is None or old.czxid != czxid or old.version < version:
                        fresh = decode_topic_data(name, data, czxid, version, op.decoded)
                        if old is not None and old.czxid == czxid and fresh.assignment is not None:
                            fresh.states = {q: st for q, st in old.states.items() if q in fresh.assignment.partitions}
                        model.topics[name] = fresh
                        model.readable(op.path, fresh.error)
                        changed_topics.add(name)
                        if fresh.assignment is not None and (old is None or old.czxid != czxid):
                            # a new topic: exists watches on the states not written with it
                            missing.setdefault(since, []).extend(
                                sp
                                for q in fresh.assignment.partitions
                                if (sp := paths.partition_state(name, q)) not in created_states
                            )
                else:
                    topic = model.topics.get(name)
                    if topic is None or topic.assignment is None or p not in topic.assignment.partitions:
                        left.add(op.path)  # not a partition the image knows: read it the usual way
                        continue
                    held = topic.states.get(p)
                    if held is None or held.partition_epoch < version:
                        decoded = self._decode_state_data(model, op.path, data, op.decoded)
                        topic.states[p] = build_partition(p, topic.assignment, decoded, version)
                        if name not in changed_topics:
                            changed_partitions.setdefault(name, set()).add(p)
                left.discard(op.path)
                rearm.setdefault(since, []).append(op.path)
        self._publish(changed_topics=changed_topics, changed_partitions=changed_partitions)
        if unwatch:
            self._unwatch(unwatch)
        points = rearm_points(rearm.keys() | missing.keys())
        at: dict[int, tuple[list[str], list[str]]] = {}
        for since, written in rearm.items():
            at.setdefault(points[since], ([], []))[0].extend(written)
        for since, absent in missing.items():
            at.setdefault(points[since], ([], []))[1].extend(absent)
        if at:
            self.session.watch_data_at([(since, w, a) for since, (w, a) in sorted(at.items())], self._watcher)
        return left

    # -- phase 1: read (no change to the model) -------------------------------------------------------------
    def _read(self, model: Model, dirty: set[str], reader: Reader) -> Delta:
        """Read what ``dirty`` says changed, each znode with a fresh watch."""
        delta = Delta()
        dirty_brokers: set[int] = set()
        dirty_topics: set[str] = set()
        dirty_states: set[tuple[str, int]] = set()
        for path in dirty:
            classify(path, dirty_brokers, dirty_topics, dirty_states)

        if paths.CONTROLLER in dirty:
            delta.controller_id = self._read_controller()

        if paths.BROKER_IDS in dirty:
            listed = {int(c) for c in self._watch_children(paths.BROKER_IDS) if c.isdigit()}
            delta.broker_ids = listed
            to_read = listed  # a handful: re-reading all also catches a quick re-registration
        else:
            to_read = dirty_brokers & model.broker_ids
        found = reader([paths.broker(b) for b in sorted(to_read)], False)
        self.znodes_read += len(to_read)
        delta.brokers = {b: found[paths.broker(b)] for b in to_read}

        if paths.BROKER_TOPICS in dirty:
            names = set(self._watch_children(paths.BROKER_TOPICS))
            delta.topic_names = names
        else:
            names = set(model.topics)
        new_names = names - model.topics.keys()
        # A topic this node's controller is creating arrives with its write (settled), not by a read.
        writing = self._pending.being_written(paths.topic(n) for n in new_names) if new_names else set()
        to_read_topics = sorted({n for n in new_names if paths.topic(n) not in writing} | (dirty_topics & names))
        found = reader([paths.topic(t) for t in to_read_topics], False)
        self.znodes_read += len(to_read_topics)
        state_tps: set[tuple[str, int]] = set()
        for name in to_read_topics:
            fresh = decode_topic(name, found[paths.topic(name)])
            delta.topics[name] = fresh
            if fresh is None or fresh.assignment is None:
                continue
            old = model.topics.get(name)
            if old is None or old.czxid != fresh.czxid or old.assignment is None:
                state_tps.update((name, p) for p in fresh.assignment.partitions)  # a new topic
            else:
                state_tps.update((name, p) for p in fresh.assignment.partitions if p not in old.states)
        for name, p in dirty_states:
            # only partitions that still exist: a deleted topic's state events need no new watch
            topic = delta.topics[name] if name in delta.topics else model.topics.get(name) if name in names else None
            if topic is not None and topic.assignment is not None and p in topic.assignment.partitions:
                state_tps.add((name, p))
        ordered = sorted(state_tps)
        found = reader([paths.partition_state(t, p) for t, p in ordered], True)
        self.znodes_read += len(ordered)
        delta.states = {(t, p): found[paths.partition_state(t, p)] for t, p in ordered}
        return delta

    def _read_controller(self) -> int:
        found = self._watch_data(paths.CONTROLLER)
        if found is None:
            return NO_CONTROLLER
        try:
            return ControllerZnode.decode(paths.CONTROLLER, found[0]).broker_id
        except ZnodeFormatError as exc:
            log.error("%s: no usable controller id: %s", self.name, exc)
            return NO_CONTROLLER

    # -- phase 2: apply (no I/O) ------------------------------------------------------------------------------
    def _apply(self, model: Model, delta: Delta) -> set[str]:
        """Apply ``delta`` to ``model``; returns the topics whose whole entry must be rebuilt."""
        if delta.controller_id is not None:
            model.controller_id = delta.controller_id
        if delta.broker_ids is not None:
            model.broker_ids = delta.broker_ids
            for broker_id in model.brokers.keys() - delta.broker_ids:
                del model.brokers[broker_id]
        for broker_id, result in delta.brokers.items():
            broker = self._decode_broker(broker_id, result)
            if result is None:
                model.broker_ids.discard(broker_id)  # vanished after the listing; its removal fires the watch
            if broker is None:
                model.brokers.pop(broker_id, None)
            else:
                model.brokers[broker_id] = broker

        changed: set[str] = set()
        if delta.topic_names is not None:
            for gone in model.topics.keys() - delta.topic_names:
                delta.unwatch += model.forget(gone, model.topics.pop(gone))
                changed.add(gone)
        for name, fresh in delta.topics.items():
            changed.add(name)
            old = model.topics.pop(name, None)
            if fresh is None:
                # Forget the name too: when it comes back, the children watch will show it as a new topic.
                if old is not None:
                    delta.unwatch += model.forget(name, old)
                continue
            if old is not None and old.czxid == fresh.czxid and fresh.assignment is not None:
                fresh.states = {p: s for p, s in old.states.items() if p in fresh.assignment.partitions}
            model.topics[name] = fresh
            model.readable(paths.topic(name), fresh.error)
        for (name, p), result in delta.states.items():
            topic = model.topics.get(name)
            if topic is not None and topic.assignment is not None and p in topic.assignment.partitions:
                topic.states[p] = self._decode_state(model, paths.partition_state(name, p), result, p, topic.assignment)
        return changed

    def _decode_broker(self, broker_id: int, result: DataResult | None) -> CachedBroker | None:
        if result is None:
            return None
        data, stat = result
        path = paths.broker(broker_id)
        try:
            return CachedBroker(broker_id, BrokerRegistration.decode(path, data), stat.czxid)
        except ZnodeFormatError as exc:
            log.error("%s: ignoring broker %d with an unreadable registration: %s", self.name, broker_id, exc)
            return None

    def _decode_state(
        self, model: Model, path: str, result: DataResult | None, p: int, assignment: TopicAssignment
    ) -> CachedPartition:
        if result is None:
            model.readable(path, None)
            return build_partition(p, assignment, None, -1)
        data, stat = result
        return build_partition(p, assignment, self._decode_state_data(model, path, data), stat.version)

    def _decode_state_data(
        self, model: Model, path: str, data: bytes | None, known: PartitionState | None = None
    ) -> PartitionState | None:
        """A state znode's data as served: None when unreadable (the partition is then served without leader,
        and ``model`` lists the znode as unreadable). ``known``: the state ``data`` encodes, when this node's
        controller wrote it (``SetData.decoded``), taken as it is."""
        try:
            decoded = known if known is not None else PartitionState.decode(path, data)
        except ZnodeFormatError as exc:
            log.error("%s: serving the partition without leader: %s", self.name, exc)
            model.readable(path, str(exc))
            return None
        model.readable(path, None)
        return decoded

    # -- publishing ------------------------------------------------------------------------------------------------
    def _publish(self, *, changed_topics: Iterable[str], changed_partitions: Mapping[str, set[int]]) -> None:
        """Copy-on-write: only the changed entries are rebuilt; a new snapshot only if something differs."""
        old = self._snapshot
        model = self._model
        topics: dict[str, CachedTopic] | None = None

        def writable() -> dict[str, CachedTopic]:
            nonlocal topics
            if topics is None:
                topics = dict(old.topics)
            return topics

        for name in changed_topics:
            built = build_topic(name, model.topics.get(name))
            previous = old.topics.get(name)
            if built is None:
                if previous is not None:
                    del writable()[name]
            elif built != previous:
                writable()[name] = built
        for name, partitions in changed_partitions.items():
            current = (topics if topics is not None else old.topics).get(name)
            entry = model.topics.get(name)
            if current is None or entry is None or entry.assignment is None:
                continue
            rebuilt = {p: served_partition(p, entry) for p in partitions}
            if any(current.partitions.get(p) != part for p, part in rebuilt.items()):
                merged = MappingProxyType({**current.partitions, **rebuilt})
                writable()[name] = CachedTopic(
                    name, current.topic_id, merged, current.is_internal, current.znode_version
                )

        brokers: Mapping[int, CachedBroker] = old.brokers
        if dict(old.brokers) != model.brokers:
            brokers = MappingProxyType(dict(sorted(model.brokers.items())))
        unreadable = old.unreadable
        if model.unreadable_changed:
            unreadable = MappingProxyType(dict(model.unreadable))
            model.unreadable_changed = False
        if (
            topics is None
            and brokers is old.brokers
            and model.controller_id == old.controller_id
            and unreadable is old.unreadable
        ):
            return
        new = MetadataSnapshot(
            brokers=brokers,
            topics=old.topics if topics is None else MappingProxyType(topics),
            controller_id=model.controller_id,
            version=self.version + 1,
            unreadable=unreadable,
        )
        self._install(new)
