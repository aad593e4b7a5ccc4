"""The active controller's watch handlers (Kafka's ZNodeChangeHandlers and their ``process*`` methods): brokers,
topics, topic deletion, partitions added to a topic znode, the legacy reassignment and preferred-election znodes,
ISR change notifications; and the watches that queue them.

Each handler runs on the controller thread (:mod:`.event_manager`) when its event's turn comes, re-reads what
its watch covers with the watch set again, and reconciles the difference with the context: a handler given a
stale or repeated event does nothing (the diff is empty), which is what lets events be deferred and replayed.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Collection, Sequence

from controller.active import events as ev
from controller.active.active_state import Active
from controller.active.context import PartitionInfo
from controller.active.event_manager import ControllerEventManager
from controller.active.failover import LoadReport, load_brokers, load_topics
from controller.active.topics import delete_topics, topic_znode
from controller.zk.fenced_writer import OpFailed
from controller.zk.handler import inline_watcher
from controller.zk.ops import Delete, Op, SetData
from controller.zk.protocol.multi_read import DataResult
from controller.zk.session import ZkSession
from controller.zk.types import EventType, WatchedEvent
from zkmodel import errorcodes as E
from zkmodel import paths
from zkmodel.admin import PreferredReplicaElectionZnode, TopicPartition
from zkmodel.errors import ZnodeFormatError
from zkmodel.notifications import IsrChangeNotification
from zkmodel.reassignment import ReplicaAssignment
from zkmodel.topics import TopicAssignment
from zkmodel.uuid import random_uuid

log = logging.getLogger(__name__)


class WatchHandlers(ControllerEventManager):
    """The handlers of the watches an active controller sets; the processor (:mod:`.processor`) dispatches to
    them and sets the state they read."""

    session: ZkSession
    #: None unless this node is the active controller (every handler but the watches' own asserts it is).
    active: Active | None
    uses_topic_ids: bool
    delete_topic_enable: bool
    #: Watch events that failed while ZooKeeper was unreachable; replayed once it answers again.
    _deferred: list[ev.Event]

    # -- watches ----------------------------------------------------------------------------------------------
    def _enqueue(self, event: ev.Event) -> Callable[[WatchedEvent], None]:
        def watcher(_watched: WatchedEvent) -> None:
            self._put(event)

        return watcher

    def _on_reassign_watch(self, watched: WatchedEvent) -> None:
        self._put(ev.ZkReassignment(created=watched.type == EventType.CREATED))

    def _watch_reassign_znode(self) -> bool:
        return self.session.exists(paths.REASSIGN_PARTITIONS, watch=self._on_reassign_watch) is not None

    def _upgrade_topic_znodes(self, names: Sequence[str]) -> None:
        """Backfill topic ids (IBP >= 2.8-IV0) and rewrite old-version topic znodes, fenced (processTopicIds)."""
        assert self.active is not None
        ops: list[Op] = []
        for name in names:
            topic = self.active.ctx.topics[name]
            if self.uses_topic_ids and topic.topic_id is None:
                topic.topic_id = random_uuid()
            ops.append(SetData(paths.topic(name), topic_znode(topic, uses_topic_ids=self.uses_topic_ids)))
            topic.znode_json_version = 3 if topic.topic_id is not None else 2
        for op, result in zip(ops, self.active.writer.bulk(ops), strict=True):
            if isinstance(result, Exception):
                log.error("could not upgrade %s: %r", op.path, result)

    def _register_watches(self) -> None:
        s = self.session
        s.get_children(paths.BROKER_IDS, watch=self._enqueue(ev.BrokerChange()))
        s.get_children(paths.BROKER_TOPICS, watch=self._enqueue(ev.TopicChange()))
        s.get_children(paths.DELETE_TOPICS, watch=self._enqueue(ev.TopicDeletion()))
        s.exists(paths.PREFERRED_REPLICA_ELECTION, watch=self._enqueue(ev.PreferredElectionZnode()))
        s.get_children(paths.ISR_CHANGE_NOTIFICATION, watch=self._enqueue(ev.IsrChangeNotification()))

    @inline_watcher  # on kazoo's connection thread, so that the zxid it stamps is the one read before the event
    def _on_topic_watch(self, watched: WatchedEvent) -> None:
        if watched.path:  # kazoo's connection-reset event has no path; the TopicChange re-list covers it
            self._put(ev.PartitionModifications(watched.path.rsplit("/", 1)[1], self.session.last_zxid))

    def _watch_topics(self, names: Collection[str], since_zxid: int) -> None:
        """A data watch per topic znode (Kafka's PartitionModificationsHandler), firing at once for a change
        made after ``since_zxid``."""
        self.session.watch_data([paths.topic(n) for n in names], self._on_topic_watch, since_zxid)

    def _watch_created_topics(self, names: Sequence[str]) -> None:
        """The data watch on each topic this controller just created. Relative to a zxid taken before the
        creation, every one fired at once (the creation is itself a change): an event and a getData per topic,
        10,000 of them after a 10,000-topic CreateTopics. Instead the zxid is taken now, once every creation was
        acknowledged (kazoo's last_zxid is then at least theirs), the znodes are read in multiRead batches and
        watched relative to it: a znode another tool changed since its creation (version > 0, e.g. partitions
        added) gets the PartitionModifications event its watch would have given; a later change fires the
        watch (one between the zxid and the read does both, which the handler's re-read makes harmless)."""
        for name, (_data, stat) in self._read_topics_watched(names).items():
            if stat.version > 0:
                self._put(ev.PartitionModifications(name))

    def _read_topics_watched(self, names: Sequence[str]) -> dict[str, DataResult]:
        """The topic znodes of ``names`` that exist, read in multiRead batches, each left with its data watch
        relative to a zxid taken before the read (so a change after the read fires at once). A topic deleted
        meanwhile is left out: the TopicChange watch has it."""
        if not names:
            return {}
        since = self.session.last_zxid
        found = self.session.read_data([paths.topic(n) for n in names])
        present = {n: result for n in names if (result := found.get(paths.topic(n))) is not None}
        self._watch_topics(list(present), since)
        return present

    def _partition_modifications(self, events: Sequence[ev.PartitionModifications]) -> str:
        """Kafka's processPartitionModifications for each topic whose znode watch fired: create the partitions a
        legacy tool added to the znode. The znodes are read in multiRead batches and watched again relative to
        a zxid taken before the read (a change after it fires at once), as Kafka re-reads with a watch.

        A watch that fired before this controller's own write of the topic was answered (see
        :class:`~controller.active.events.PartitionModifications`) is not read: the znode holds what this
        controller wrote, which the context holds, so the watch is only set again relative to that write's zxid
        (a change made after it fires at once). A reassignment of 100,000 partitions writes 10,000 topic
        znodes and would otherwise read each back; Kafka's controller does."""
        assert self.active is not None
        ctx = self.active.ctx
        seen: dict[str, int] = {}
        for event in events:
            seen[event.topic] = max(seen.get(event.topic, -1), event.seen_zxid)
        own: dict[int, list[str]] = {}
        to_read: list[str] = []
        for topic, seen_zxid in seen.items():
            known = ctx.topics.get(topic)
            if known is not None and 0 <= seen_zxid < known.written_zxid:
                own.setdefault(known.written_zxid, []).append(paths.topic(topic))
            else:
                to_read.append(topic)
        if own:
            self.session.watch_data_at([(zxid, names, ()) for zxid, names in own.items()], self._on_topic_watch)
        lines = []
        for topic, (data, _stat) in self._read_topics_watched(to_read).items():
            known = ctx.topics.get(topic)
            if known is None or topic in ctx.topics_to_delete:
                continue
            try:
                znode = TopicAssignment.decode(paths.topic(topic), data)
            except ZnodeFormatError as exc:
                log.error("ignoring %s", exc)
                continue
            added = {p: r for p, r in znode.partitions.items() if p not in known.partitions}
            if not added:
                continue
            for p, replicas in added.items():
                known.put(p, PartitionInfo.of(p, ReplicaAssignment(replicas)))
            lines.append(f"partitions {sorted(added)} added to topic {topic} outside the controller")
        if lines:
            self.active.leadership.trigger_online()
        return "; ".join(lines)

    # -- watch handlers ------------------------------------------------------------------------------------------
    def _broker_change(self) -> str:
        assert self.active is not None
        ctx = self.active.ctx
        self.session.get_children(paths.BROKER_IDS, watch=self._enqueue(ev.BrokerChange()))
        current = load_brokers(self.session)
        known = ctx.live_brokers
        bounced = [b for b in current if b in known and current[b].epoch != known[b].epoch]
        dead = [b for b in known if b not in current] + bounced
        new = [b for b in current if b not in known] + bounced
        parts = []
        if dead:
            parts.append(self.active.leadership.on_broker_failure(dead))
        for b in new:
            ctx.live_brokers[b] = current[b]
        if new:
            parts.append(self.active.leadership.on_broker_startup(new))
        for b in current:  # registration updates (endpoints, rack) without a new epoch
            ctx.live_brokers[b] = current[b]
        return "; ".join(parts) or ""

    def _topic_change(self) -> str:
        """Topics created or removed by someone else (a legacy tool writing ZooKeeper directly)."""
        assert self.active is not None
        ctx = self.active.ctx
        names = set(self.session.get_children(paths.BROKER_TOPICS, watch=self._enqueue(ev.TopicChange())) or [])
        added = sorted(names - set(ctx.topics))
        removed = sorted(set(ctx.topics) - names)
        for name in removed:
            ctx.topics.pop(name, None)
        if not added:
            return f"topics removed outside the controller: {removed}" if removed else ""
        report = LoadReport()
        loaded = load_topics(self.session, added, report, watch=self._on_topic_watch)
        ctx.topics.update(loaded)
        upgrade = [n for n, t in loaded.items() if (self.uses_topic_ids and t.topic_id is None)]
        self._upgrade_topic_znodes(upgrade)
        self.active.leadership.trigger_online()
        return f"new topic(s) created outside the controller: {added}"

    def _process_deletions(self) -> int:
        assert self.active is not None
        ctx = self.active.ctx
        markers = set(self.session.get_children(paths.DELETE_TOPICS, watch=self._enqueue(ev.TopicDeletion())) or [])
        ctx.topics_to_delete = markers
        if not markers:
            return 0
        if not self.delete_topic_enable:
            self.active.writer.bulk([Delete(paths.delete_topic_marker(t)) for t in sorted(markers)])
            ctx.topics_to_delete = set()
            return 0
        return len(delete_topics(ctx, self.active.writer, self.session, sorted(markers)))

    def _topic_deletion(self) -> str:
        pending = set(self.active.ctx.topics_to_delete) if self.active else set()
        deleted = self._process_deletions()
        waiting = sorted(self.active.ctx.topics_to_delete) if self.active else []
        if not deleted and not waiting and not pending:
            return ""
        return f"deleted {deleted} topic(s)" + (f"; waiting on reassignments for {waiting}" if waiting else "")

    def _preferred_znode(self) -> str:
        assert self.active is not None
        found = self.session.get(paths.PREFERRED_REPLICA_ELECTION)
        self.session.exists(paths.PREFERRED_REPLICA_ELECTION, watch=self._enqueue(ev.PreferredElectionZnode()))
        if found is None:
            return ""
        try:
            partitions = PreferredReplicaElectionZnode.decode(paths.PREFERRED_REPLICA_ELECTION, found[0]).partitions
        except ZnodeFormatError as exc:
            log.error("ignoring %s", exc)
            partitions = ()
        results = self.active.leadership.elect_leaders(0, partitions)
        with contextlib.suppress(OpFailed):
            self.active.writer.atomic([Delete(paths.PREFERRED_REPLICA_ELECTION)])
        ok = sum(1 for r in results.values() if r[0] is E.NONE)
        return f"preferred replica election znode: {ok} of {len(results)} partition(s) moved"

    def _isr_change_notifications(self) -> str:
        """Pre-2.7-IV2 brokers write ISR changes themselves and leave notifications for the controller."""
        assert self.active is not None
        children = (
            self.session.get_children(paths.ISR_CHANGE_NOTIFICATION, watch=self._enqueue(ev.IsrChangeNotification()))
            or []
        )
        if not children:
            return ""
        full = [f"{paths.ISR_CHANGE_NOTIFICATION}/{c}" for c in sorted(children)]
        found = self.session.read_data(full, timeout=30.0)
        changed: set[TopicPartition] = set()
        for path, result in found.items():
            if result is None:
                continue
            try:
                changed.update(IsrChangeNotification.decode(path, result[0]).partitions)
            except ZnodeFormatError as exc:
                log.error("ignoring %s", exc)
        self.active.reassigner.refresh([tp for tp in changed if self.active.ctx.partition(tp) is not None])
        self.active.reassigner.maybe_complete(changed)
        self.active.writer.bulk([Delete(p) for p in full])
        return f"processed {len(full)} ISR change notification(s) for {len(changed)} partition(s)"
