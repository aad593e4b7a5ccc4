"""The controller candidate of one node: Kafka's single event thread, Patroni's one status line per step.

Every node runs one. It watches ``/controller``; when it wins the election it loads the cluster
(failover), becomes the only writer of controller-owned znodes through a FencedWriter bound to its
epoch, and processes events (watches, API calls, session changes) strictly one at a time. A failed
epoch check, a lost session or a disconnection longer than the session timeout makes it resign.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import Future
from typing import Any, TypeVar

from controller.active import events as ev
from controller.active.api import CALL_TIMEOUT_S, IsrResult, IsrUpdate, NewTopic, Result
from controller.active.context import ControllerContext, PartitionInfo
from controller.active.controller_election import active_controller, release_own_controller_znode, try_elect
from controller.active.failover import LoadReport, load_brokers, load_context, load_topics
from controller.active.feature import ensure_feature_znode
from controller.active.leadership import Leadership
from controller.active.reassignment import Reassigner
from controller.active.standby import context_from_image
from controller.active.topics import (
    add_partitions,
    collision_index,
    create_topics,
    delete_topic,
    plan_new_partitions,
    plan_topic,
    request_deletion,
    topic_znode,
)
from controller.image.snapshot import MetadataSnapshot
from controller.logtags import UNEXPECTED
from controller.zk.errors import ControllerMoved, SessionLost, ZkUnavailable
from controller.zk.fenced_writer import FencedWriter, OpFailed, WriteObserver
from controller.zk.ops import Delete, Op, SetData
from controller.zk.protocol.multi_read import DataResult
from controller.zk.session import ZkSession
from controller.zk.types import EventType, KazooState, WatchedEvent
from zkmodel import errorcodes as E
from zkmodel import ibp, paths
from zkmodel.admin import PreferredReplicaElectionZnode, TopicPartition
from zkmodel.errorcodes import KafkaApiError, KafkaError
from zkmodel.errors import ZnodeFormatError
from zkmodel.notifications import IsrChangeNotification
from zkmodel.reassignment import ReplicaAssignment
from zkmodel.topic_names import has_collision_chars, unify_collision_chars
from zkmodel.topics import TopicAssignment
from zkmodel.uuid import random_uuid

log = logging.getLogger(__name__)

#: The gauges are recounted at most once per this many times the last count's duration (see _publish).
PUBLISH_COST_FACTOR = 20.0
T = TypeVar("T")
#: The ZooKeeper failures that end a controller step, each handled by :meth:`Controller.step`: the controller
#: moved or the session is lost (resign), ZooKeeper away (defer). Deliberately these three rather than a group
#: of :mod:`controller.zk.errors`: the controller meets ZooKeeper only through ZkSession and its fenced writer,
#: which retry kazoo's unanswered requests into ZkUnavailable and turn its session errors into SessionLost,
#: and AdminWriteFenced fences clients' admin writes, never the controller's own.
ENDS_A_STEP = (ControllerMoved, SessionLost, ZkUnavailable)
#: How long a newly elected controller waits for its node's image to catch up with the election before it
#: loads from ZooKeeper instead (a cache still reloading after a reconnect, ZooKeeper slow to answer).
STANDBY_WAIT_S = 10.0
#: The node's metadata image as of now (see :meth:`controller.zk.watched.WatchedCache.catch_up`), or None when
#: it cannot say within the given seconds.
Standby = Callable[[float], MetadataSnapshot | None]


class Active:
    """Everything that exists only while this node is the active controller."""

    def __init__(
        self,
        ctx: ControllerContext,
        writer: FencedWriter,
        session: ZkSession,
        uses_topic_ids: bool,
        on_reassignments_completed: Callable[[int], None] | None = None,
    ) -> None:
        self.ctx = ctx
        self.writer = writer
        self.reassigner = Reassigner(
            ctx, writer, session, uses_topic_ids=uses_topic_ids, on_completed=on_reassignments_completed
        )
        self.leadership = Leadership(ctx, writer, session, self.reassigner)


class Controller:
    def __init__(
        self,
        session: ZkSession,
        broker_id: int,
        version: ibp.MetadataVersion,
        *,
        delete_topic_enable: bool = True,
        on_new_session: Callable[[], None] | None = None,
        tick_seconds: float = 0.5,
        standby: Standby | None = None,
        write_observer: WriteObserver | None = None,
    ) -> None:
        self.session = session
        #: Told of every write this controller sends and how it ended (its node's image takes them in directly).
        self.write_observer = write_observer
        #: The node's image, which a won election loads from (a hot standby); None: every failover reads
        #: ZooKeeper in full.
        self.standby = standby
        self.broker_id = broker_id
        self.ibp = version
        self.uses_topic_ids = ibp.uses_topic_ids(version)
        self.delete_topic_enable = delete_topic_enable
        self.on_new_session = on_new_session
        self.tick_seconds = tick_seconds
        self.active: Active | None = None
        self.active_controller_id: int | None = None
        self.last_status = "not started"
        self.last_load: LoadReport | None = None
        self.failover_seconds: float | None = None
        #: Counts published after every step, for metrics (read from other threads; replaced, never mutated).
        self.summary: dict[str, int] = {}
        self.on_step: Callable[[Controller], None] | None = None
        #: Called with (Kafka ControllerState, seconds processing, seconds queued) after each event: ControllerStats'
        #: timers and ControllerEventManager's EventQueueTimeMs.
        self.on_event: Callable[[str, float, float], None] | None = None
        #: Called with the number of reassignments that just completed (moves finished, not cancellations).
        self.on_reassignments_completed: Callable[[int], None] | None = None
        #: Client requests (API calls) queued or running on this controller: clients waiting on it.
        self.waiting_calls = 0
        self._waiting_lock = threading.Lock()
        self._published_at = 0.0
        self._counted_at, self._publish_cost = 0.0, 0.0  # when the gauges were last counted, and how long it took
        #: Events with the time they were queued (EventQueueTimeMs is measured from there).
        self._queue: queue.Queue[tuple[ev.Event, float]] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._stopped = threading.Event()
        self._suspended = False
        self._expired = False
        #: Watch events that failed while ZooKeeper was unreachable; replayed once it answers again.
        self._deferred: list[ev.Event] = []
        session.add_state_listener(self._on_session_state)

    # -- lifecycle -------------------------------------------------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"controller-{self.broker_id}", daemon=True)
        self._thread.start()
        self._put(ev.Startup())

    def stop(self, timeout: float = 10.0) -> None:
        self._put(ev.Shutdown())
        if self._thread is not None:
            self._thread.join(timeout)

    def _put(self, event: ev.Event) -> None:
        self._queue.put((event, time.perf_counter()))

    @property
    def queue_size(self) -> int:
        """Events waiting (ControllerEventManager's EventQueueSize)."""
        return self._queue.qsize()

    @property
    def is_active(self) -> bool:
        return self.active is not None

    @property
    def epoch(self) -> int:
        return self.active.ctx.epoch if self.active else -1

    def _run(self) -> None:
        while not self._stopped.is_set():
            try:
                event, queued_at = self._queue.get(timeout=self.tick_seconds)
            except queue.Empty:
                event, queued_at = ev.Tick(), time.perf_counter()
            started = time.perf_counter()
            status = self.step(event)
            state = ev.controller_state(event)
            if state is not None and self.on_event is not None:
                self.on_event(state, time.perf_counter() - started, started - queued_at)
            if status:
                self.last_status = status
                log.info("controller %d: %s", self.broker_id, status)
            if status or time.monotonic() - self._published_at > 5.0:
                self._publish()

    def _publish(self) -> None:
        """Counting is O(partitions), so it runs after steps that did something, or every few seconds, and
        never more often than twenty times its own cost: a small cluster's gauges follow every step, a
        million-partition controller spends at most ~5% of its thread counting."""
        now = time.monotonic()
        ctx = self.active.ctx if self.active is not None else None
        if ctx is not None and now - self._counted_at >= PUBLISH_COST_FACTOR * self._publish_cost:
            self.summary = ctx.counts()
            self._counted_at, self._publish_cost = now, time.monotonic() - now
        self._published_at = now
        if self.on_step is not None:
            try:
                self.on_step(self)
            except Exception:
                log.exception("%s metrics update failed", UNEXPECTED)

    def step(self, event: ev.Event) -> str:
        """Process one event; returns the status line for the log."""
        demoted = self._demote_if_presumed_lost()
        if demoted:
            return demoted
        try:
            return self._dispatch(event)
        except ControllerMoved as exc:
            self._resign()
            return f"resigned: controller moved ({exc.message})"
        except SessionLost as exc:
            self._resign()
            return f"resigned: ZooKeeper session lost ({exc})"
        except ZkUnavailable as exc:
            if isinstance(event, ev.ApiCall):
                if not event.future.done():
                    event.future.set_exception(KafkaApiError(E.REQUEST_TIMED_OUT, str(exc)))
            elif self.active is not None and not isinstance(event, ev.Tick):
                # Kafka retries until connected: park the event and replay it once ZooKeeper answers again
                # (meanwhile each step checks whether the session must be presumed lost).
                if event not in self._deferred:
                    self._deferred.append(event)
                return f"ZooKeeper unavailable while handling {type(event).__name__}, deferred: {exc}"
            return f"ZooKeeper unavailable while handling {type(event).__name__}: {exc}"
        except Exception as exc:
            log.exception("%s controller %d failed on %s", UNEXPECTED, self.broker_id, type(event).__name__)
            if isinstance(event, ev.ApiCall) and not event.future.done():
                event.future.set_exception(KafkaApiError(E.UNKNOWN_SERVER_ERROR, repr(exc)))
            if self.active is not None:
                self._trigger_controller_move()
                return f"resigned after an unexpected error: {exc!r}"
            return f"error: {exc!r}"

    # -- dispatch ------------------------------------------------------------------------------------------
    def _dispatch(self, event: ev.Event) -> str:
        match event:
            case ev.Startup():
                return self._elect()
            case ev.Tick():
                return self._tick()
            case ev.Shutdown():
                self._stopped.set()
                was = self.active is not None
                self._resign()
                return "stopped" + (" (resigned)" if was else "")
            case ev.ControllerChange(deleted=deleted):
                status = self._maybe_resign()
                return self._elect() if deleted else status
            case ev.SessionSuspended():
                return "ZooKeeper connection suspended: writes paused" if self.active else ""
            case ev.SessionReconnected():
                return self._reconnected()
            case ev.SessionExpired():
                self._resign()
                return "ZooKeeper session expired: resigned; waiting for a new session"
            case ev.NewSession():
                if self.on_new_session is not None:
                    self.on_new_session()
                return "new ZooKeeper session: re-registered; " + self._elect()
            case ev.ApiCall():
                return self._api(event)
        if self.active is None:
            return ""
        match event:
            case ev.BrokerChange():
                return self._broker_change()
            case ev.TopicChange():
                return self._topic_change()
            case ev.TopicDeletion():
                return self._topic_deletion()
            case ev.PartitionModifications(topic=topic):
                taken = self._take_queued_modifications()
                try:
                    return self._partition_modifications([topic, *taken])
                except ZkUnavailable:
                    self._deferred.extend(ev.PartitionModifications(t) for t in taken)  # step() defers the first
                    raise
            case ev.ZkReassignment(created=created):
                self._watch_reassign_znode()
                if not created:
                    return ""
                done = self.active.reassigner.process_zk_znode()
                return f"legacy reassignment znode: started {len(done)} partition move(s)"
            case ev.PreferredElectionZnode():
                return self._preferred_znode()
            case ev.IsrChangeNotification():
                return self._isr_change_notifications()
        return ""

    # -- watches ----------------------------------------------------------------------------------------------
    def _enqueue(self, event: ev.Event) -> Callable[[WatchedEvent], None]:
        def watcher(_watched: WatchedEvent) -> None:
            self._put(event)

        return watcher

    def _on_controller_watch(self, watched: WatchedEvent) -> None:
        self._put(ev.ControllerChange(deleted=watched.type == EventType.DELETED))

    def _on_reassign_watch(self, watched: WatchedEvent) -> None:
        self._put(ev.ZkReassignment(created=watched.type == EventType.CREATED))

    def _watch_reassign_znode(self) -> bool:
        return self.session.exists(paths.REASSIGN_PARTITIONS, watch=self._on_reassign_watch) is not None

    def _on_session_state(self, state: KazooState) -> None:
        """Runs on kazoo's thread: act on SUSPENDED at once (no more writes), queue the rest."""
        if state == KazooState.SUSPENDED:
            self._suspended = True
            if self.active is not None:
                self.active.writer.suspend()
            self._put(ev.SessionSuspended())
        elif state == KazooState.CONNECTED and self._expired:
            # Kafka's afterInitializingSession: only now can the broker register again and re-elect.
            self._expired = False
            self._suspended = False
            self._put(ev.NewSession())
        elif state == KazooState.CONNECTED and self._suspended:
            self._suspended = False
            self._put(ev.SessionReconnected())
        elif state == KazooState.LOST:
            self._suspended = False
            self._expired = True
            if self.active is not None:
                self.active.writer.suspend()
            self._put(ev.SessionExpired())

    # -- election and resignation -------------------------------------------------------------------------------
    def _read_active_controller(self) -> int | None:
        if self.session.exists(paths.CONTROLLER, watch=self._on_controller_watch) is None:
            self.active_controller_id = None
        else:
            self.active_controller_id = active_controller(self.session)
        return self.active_controller_id

    def _elect(self) -> str:
        current = self._read_active_controller()
        if current is not None:
            if current == self.broker_id and self.active is not None:
                return ""
            if current == self.broker_id and release_own_controller_znode(self.session):
                # We demoted ourselves while disconnected but our session survived, and with it our
                # /controller: release it so a fresh election (with a new epoch) can take place.
                return "released a stale /controller left by this session; " + self._elect()
            return f"no action: broker {current} is the active controller"
        elected = try_elect(self.session, self.broker_id, self.ibp)
        if elected is None:
            current = self._read_active_controller()
            return f"lost the election to broker {current}"
        self.active_controller_id = self.broker_id
        return self._failover(elected.epoch, elected.epoch_zk_version)

    def _maybe_resign(self) -> str:
        was_active = self.active is not None
        current = self._read_active_controller()
        if was_active and current != self.broker_id:
            self._resign()
            return f"resigned: broker {current} is now the active controller"
        return f"controller is broker {current}" if current is not None else "no controller"

    def _resign(self) -> None:
        self._deferred.clear()
        if self.active is not None:
            self.active.writer.suspend()
            self.active = None
            log.info("controller %d: resigned", self.broker_id)

    def _trigger_controller_move(self) -> None:
        """Kafka's triggerControllerMove: resign and delete /controller (fenced) so another broker takes over
        with a fresh context instead of this one continuing from a state it no longer trusts."""
        active = self.active
        self._resign()
        if active is None:
            return
        writer = FencedWriter(self.session, active.writer.epoch, active.writer.epoch_zk_version)
        with contextlib.suppress(*ENDS_A_STEP, OpFailed):
            writer.atomic([Delete(paths.CONTROLLER)])

    def _reconnected(self) -> str:
        if self.active is None:
            return "ZooKeeper connection restored; " + self._elect()
        current = self._read_active_controller()
        found = self.session.get(paths.CONTROLLER_EPOCH)
        still_ours = (
            current == self.broker_id and found is not None and found[1].version == self.active.writer.epoch_zk_version
        )
        if not still_ours:
            self._resign()
            return "resigned: leadership changed while disconnected"
        self.active.writer.resume()
        replay, self._deferred = self._deferred, []
        for event in replay:
            self._put(event)
        return f"ZooKeeper connection restored: still the active controller, writes resumed ({len(replay)} deferred)"

    def _tick(self) -> str:
        return ""

    def _demote_if_presumed_lost(self) -> str:
        """Disconnected for longer than the session timeout: the server has expired us (and elected someone
        else) even though kazoo can only say LOST after it reconnects, so stop being the controller now."""
        if self.active is not None and self.active.writer.suspended and self.session.session_presumed_lost():
            self._resign()
            return "resigned: disconnected for longer than the session timeout"
        return ""

    # -- failover ------------------------------------------------------------------------------------------------
    def _failover(self, epoch: int, epoch_zk_version: int) -> str:
        started = time.monotonic()
        ensure_feature_znode(self.session, self.ibp)
        # Watches first, then read (Kafka registers its handlers before reading): a change between the two
        # fires an event that the diff-based handlers reconcile right after this failover.
        since = self.session.last_zxid
        self._register_watches()
        waited = time.monotonic()
        image = self.standby(STANDBY_WAIT_S) if self.standby is not None else None
        waited = time.monotonic() - waited
        if image is not None:
            ctx, report = context_from_image(
                image, self.session, epoch, epoch_zk_version, uses_topic_ids=self.uses_topic_ids
            )
            self._watch_topics(list(ctx.topics), since)
        else:
            ctx, report = load_context(
                self.session,
                epoch,
                epoch_zk_version,
                uses_topic_ids=self.uses_topic_ids,
                topic_watch=self._on_topic_watch,
            )
        writer = FencedWriter(self.session, epoch, epoch_zk_version, observer=self.write_observer)
        active = Active(ctx, writer, self.session, self.uses_topic_ids, self._reassignments_completed)
        self.active = active
        self._upgrade_topic_znodes(report.topics_to_upgrade)
        # One pass finds what the failover's state changes start from (Kafka's onControllerFailover: online
        # partitions, offline replicas, reassignments to resume); none of its steps before the resume changes
        # the brokers or an assignment it would change.
        survey = ctx.survey()
        active.leadership.trigger_online(survey)
        active.reassigner.offline_replicas(survey.dead_replicas)
        # initializePartitionReassignments: the legacy znode first (it overrides AR/RR), then the rest.
        from_znode = active.reassigner.process_zk_znode() if self._watch_reassign_znode() else set()
        active.reassigner.resume(lambda tp, _a: tp not in from_znode, among=survey.moving)
        deleted = self._process_deletions()
        self._preferred_znode()
        self._isr_change_notifications()
        self.last_load = report
        self.failover_seconds = time.monotonic() - started
        loaded = (
            f"from the node's image, caught up in {waited:.2f}s, built"
            if report.source == "image"
            else f"{report.znodes_read} znodes"
        )
        return (
            f"elected controller with epoch {epoch}: loaded {report.brokers} broker(s), {report.topics} topic(s), "
            f"{report.partitions} partition(s) ({loaded} in {report.seconds:.2f}s), "
            f"upgraded {len(report.topics_to_upgrade)} topic znode(s), deleted {deleted} topic(s); "
            f"failover took {self.failover_seconds:.2f}s"
        )

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

    def _on_topic_watch(self, watched: WatchedEvent) -> None:
        if watched.path:  # kazoo's connection-reset event has no path; the TopicChange re-list covers it
            self._put(ev.PartitionModifications(watched.path.rsplit("/", 1)[1]))

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

    def _take_queued_modifications(self) -> list[str]:
        """The topics of the PartitionModifications events queued right behind the one being handled, taken
        with it: this controller's own writes to 10,000 topic znodes (a reassignment's RS/AR/RR) fire 10,000
        topic watches, then read in a few multiReads instead of 10,000 getData. Only the run at the head of
        the queue is taken, so nothing is handled before an event queued ahead of it. (The queue is unbounded
        and nobody joins it, so taking from its deque under its mutex skips no bookkeeping that matters.)"""
        taken: list[str] = []
        with self._queue.mutex:
            pending = self._queue.queue
            while pending and isinstance(pending[0][0], ev.PartitionModifications):
                event = pending.popleft()[0]
                assert isinstance(event, ev.PartitionModifications)
                taken.append(event.topic)
        return taken

    def _partition_modifications(self, topics: Sequence[str]) -> str:
        """Kafka's processPartitionModifications for each topic whose znode watch fired: create the partitions a
        legacy tool added to the znode. The znodes are read in multiRead batches and watched again relative to
        a zxid taken before the read (a change after it fires at once), as Kafka re-reads with a watch."""
        assert self.active is not None
        ctx = self.active.ctx
        lines = []
        for topic, (data, _stat) in self._read_topics_watched(list(dict.fromkeys(topics))).items():
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
        return sum(delete_topic(ctx, self.active.writer, self.session, t) for t in sorted(markers))

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

    # -- the API (thread-safe; runs on the controller thread) --------------------------------------------------------
    def _api(self, call: ev.ApiCall) -> str:
        if self.active is None:
            call.future.set_exception(
                KafkaApiError(E.NOT_CONTROLLER, "This is not the correct controller for this cluster.")
            )
            return ""
        writer = self.active.writer
        before = (writer.writes, writer.sent, writer.multis)
        try:
            call.future.set_result(call.fn())
        except ENDS_A_STEP as exc:
            # The call ran and ZooKeeper failed under it. If none of its writes was made or may have been made
            # (a fenced multi refused, or ZooKeeper lost before the first write), the answer is NOT_CONTROLLER:
            # nothing was done, send it again to the new controller (KIP-590's forwarding brokers do). Otherwise
            # (a DeleteTopics marker written, a multi sent and never answered) this deposed controller cannot
            # tell what took effect: KIP-4's in-doubt REQUEST_TIMED_OUT.
            if writer.wrote_since(*before):
                error = KafkaApiError(
                    E.REQUEST_TIMED_OUT,
                    f"The controller lost ZooKeeper while handling the request, which may still take effect: {exc}",
                )
            else:
                error = KafkaApiError(E.NOT_CONTROLLER, f"The controller moved before writing anything: {exc}")
            call.future.set_exception(error)
            raise
        except KafkaApiError as exc:
            call.future.set_exception(exc)
        return f"handled {call.name}"

    def call(self, name: str, fn: Callable[[Active], T], timeout: float = CALL_TIMEOUT_S) -> T:
        """Run ``fn`` with the active controller's state on the controller thread and wait for its result.
        Raises KafkaApiError(NOT_CONTROLLER) if this node is not the active controller, and
        KafkaApiError(REQUEST_TIMED_OUT) when the controller has not answered within ``timeout`` seconds (its
        queue is long, or ZooKeeper slow): what Kafka answers when a controller request times out. The call
        stays queued and may still take effect, as in Kafka."""
        future: Future[Any] = Future()

        def run() -> Any:
            assert self.active is not None
            return fn(self.active)

        with self._waiting_lock:
            self.waiting_calls += 1
        future.add_done_callback(self._call_done)
        self._put(ev.ApiCall(name, run, future))
        try:
            result: T = future.result(timeout)
        except TimeoutError:
            raise KafkaApiError(
                E.REQUEST_TIMED_OUT, f"The controller did not complete {name} within {round(timeout * 1000)} ms."
            ) from None
        return result

    def _reassignments_completed(self, n: int) -> None:
        if self.on_reassignments_completed is not None:
            self.on_reassignments_completed(n)

    def _call_done(self, _future: Future[Any]) -> None:
        with self._waiting_lock:
            self.waiting_calls -= 1

    def create_topics(
        self, topics: Sequence[NewTopic], *, validate_only: bool = False, timeout: float = CALL_TIMEOUT_S
    ) -> dict[str, Result]:
        """Names must be distinct: a name given twice is the CreateTopics handler's answer to make (INVALID_REQUEST,
        before authorization, as KafkaApis checks it), never the controller's."""
        repeated = sorted(n for n, k in Counter(t.name for t in topics).items() if k > 1)
        if repeated:
            raise ValueError(f"create_topics takes each topic once; given more than once: {repeated}")

        def run(a: Active) -> dict[str, Result]:
            out: dict[str, Result] = {}
            collisions = collision_index(a.ctx.topics)  # once per request, not a scan of every topic per topic
            planned: list[tuple[NewTopic, dict[int, tuple[int, ...]]]] = []
            for topic in topics:
                try:
                    planned.append((topic, plan_topic(a.ctx, topic, collisions)))
                    out[topic.name] = (E.NONE, None)
                except KafkaApiError as exc:
                    out[topic.name] = (exc.error, exc.message)
                    continue
                if has_collision_chars(topic.name):  # a later topic of this request collides with this one
                    collisions.setdefault(unify_collision_chars(topic.name), []).append(topic.name)
            if validate_only or not planned:
                return out
            created = create_topics(a.ctx, a.writer, planned, uses_topic_ids=self.uses_topic_ids)
            out.update(created)
            self._watch_created_topics([n for n, (error, _m) in created.items() if error == E.NONE])
            return out

        return self.call("CreateTopics", run, timeout)

    def delete_topics(self, names: Sequence[str], *, timeout: float = CALL_TIMEOUT_S) -> dict[str, Result]:
        def run(a: Active) -> dict[str, Result]:
            out: dict[str, Result] = {}
            for name in dict.fromkeys(names):
                try:
                    request_deletion(a.ctx, a.writer, name)
                    out[name] = (E.NONE, None)
                except KafkaApiError as exc:
                    out[name] = (exc.error, exc.message)
            self._process_deletions()
            return out

        return self.call("DeleteTopics", run, timeout)

    def create_partitions(
        self,
        requests: Mapping[str, tuple[int, Sequence[Sequence[int]] | None]],
        *,
        validate_only: bool = False,
        timeout: float = CALL_TIMEOUT_S,
    ) -> dict[str, Result]:
        def run(a: Active) -> dict[str, Result]:
            out: dict[str, Result] = {}
            for name, (count, assignment) in requests.items():
                try:
                    added = plan_new_partitions(a.ctx, name, count, assignment)
                    if not validate_only:
                        add_partitions(a.ctx, a.writer, name, added, uses_topic_ids=self.uses_topic_ids)
                    out[name] = (E.NONE, None)
                except KafkaApiError as exc:
                    out[name] = (exc.error, exc.message)
            return out

        return self.call("CreatePartitions", run, timeout)

    def alter_partition_reassignments(
        self, requests: Mapping[TopicPartition, Sequence[int] | None], *, timeout: float = CALL_TIMEOUT_S
    ) -> dict[TopicPartition, Result]:
        def run(a: Active) -> dict[TopicPartition, Result]:
            results = a.reassigner.alter(requests)
            self._process_deletions()
            return results

        return self.call("AlterPartitionReassignments", run, timeout)

    def list_partition_reassignments(
        self, partitions: Collection[TopicPartition] | None = None
    ) -> dict[TopicPartition, ReplicaAssignment]:
        return self.call("ListPartitionReassignments", lambda a: a.reassigner.list(partitions))

    def elect_leaders(
        self,
        election_type: int,
        partitions: Collection[TopicPartition] | None = None,
        *,
        timeout: float = CALL_TIMEOUT_S,
    ) -> dict[TopicPartition, Result]:
        def run(a: Active) -> dict[TopicPartition, Result]:
            tps = partitions if partitions is not None else [tp for tp, _ in a.ctx.all_partitions()]
            return a.leadership.elect_leaders(election_type, tps)

        return self.call("ElectLeaders", run, timeout)

    def alter_partition(
        self, broker_id: int, broker_epoch: int, updates: Mapping[TopicPartition, IsrUpdate]
    ) -> tuple[KafkaError, dict[TopicPartition, IsrResult]]:
        def run(a: Active) -> tuple[KafkaError, dict[TopicPartition, IsrResult]]:
            result = a.leadership.alter_partition(broker_id, broker_epoch, updates)
            self._process_deletions()  # a finished move may unblock a pending deletion
            return result

        return self.call("AlterPartition", run)

    def alter_partition_by_id(
        self, broker_id: int, broker_epoch: int, updates: Mapping[tuple[str, int], IsrUpdate], *, version: int = 2
    ) -> tuple[KafkaError, dict[tuple[str, int], IsrResult]]:
        """AlterPartition v2+ names topics by id; unknown ids answer UNKNOWN_TOPIC_ID."""

        def run(a: Active) -> tuple[KafkaError, dict[tuple[str, int], IsrResult]]:
            names = {t.topic_id: n for n, t in a.ctx.topics.items() if t.topic_id}
            known: dict[TopicPartition, IsrUpdate] = {}
            back: dict[TopicPartition, tuple[str, int]] = {}
            out: dict[tuple[str, int], IsrResult] = {}
            for (topic_id, partition), update in updates.items():
                name = names.get(topic_id)
                if name is None:
                    out[(topic_id, partition)] = IsrResult(E.UNKNOWN_TOPIC_ID)
                    continue
                tp = TopicPartition(name, partition)
                known[tp], back[tp] = update, (topic_id, partition)
            top, results = a.leadership.alter_partition(broker_id, broker_epoch, known, version=version)
            out.update({back[tp]: r for tp, r in results.items()})
            self._process_deletions()
            return top, out

        return self.call("AlterPartition", run)

    def controlled_shutdown(self, broker_id: int, broker_epoch: int) -> tuple[KafkaError, list[TopicPartition]]:
        return self.call("ControlledShutdown", lambda a: a.leadership.controlled_shutdown(broker_id, broker_epoch))

    def snapshot(self) -> ControllerContext:
        """The active controller's context (for tests and metrics; read it, do not mutate it)."""
        return self.call("Snapshot", lambda a: a.ctx)


__all__ = ["Controller"]
