"""The controller's processor (Kafka's ``KafkaController.process``): what each event does.

Every node runs one. It watches ``/controller``; when it wins the election it loads the cluster (failover),
becomes the only writer of controller-owned znodes through a FencedWriter bound to its epoch, and processes
events (watches, API calls, session changes) strictly one at a time, as the event manager (:mod:`.event_manager`)
hands them over. A failed epoch check, a lost session or a disconnection longer than the session timeout makes
it resign. The watch handlers are :mod:`.watch_handlers`; the public API is :mod:`.controller`.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable

from controller import heap
from controller.active import events as ev
from controller.active.active_state import Active
from controller.active.controller_election import active_controller, release_own_controller_znode, try_elect
from controller.active.failover import LoadReport, load_context
from controller.active.feature import ensure_feature_znode
from controller.active.reassignment import Reassigner
from controller.active.standby import context_from_image
from controller.active.watch_handlers import WatchHandlers
from controller.image.snapshot import MetadataSnapshot
from controller.logtags import UNEXPECTED
from controller.zk.errors import ControllerMoved, SessionLost, ZkUnavailable
from controller.zk.fenced_writer import FencedWriter, OpFailed, WriteObserver
from controller.zk.ops import Delete
from controller.zk.session import ZkSession
from controller.zk.types import EventType, KazooState, WatchedEvent
from zkmodel import errorcodes as E
from zkmodel import ibp, paths
from zkmodel.errorcodes import KafkaApiError

log = logging.getLogger(__name__)

#: The ZooKeeper failures that end a controller step, each handled by :meth:`ControllerProcessor.step`: the controller
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


class ControllerProcessor(WatchHandlers):
    """Election, resignation, failover and the dispatch of every event; :class:`.controller.Controller` adds
    the public API on top."""

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
        super().__init__(broker_id, tick_seconds)
        self.session = session
        #: Told of every write this controller sends and how it ended (its node's image takes them in directly).
        self.write_observer = write_observer
        #: The node's image, which a won election loads from (a hot standby); None: every failover reads
        #: ZooKeeper in full.
        self.standby = standby
        self.ibp = version
        self.uses_topic_ids = ibp.uses_topic_ids(version)
        self.delete_topic_enable = delete_topic_enable
        self.on_new_session = on_new_session
        self.active: Active | None = None
        self.active_controller_id: int | None = None
        self.last_load: LoadReport | None = None
        self.failover_seconds: float | None = None
        #: Called with the number of reassignments that just completed (moves finished, not cancellations).
        self.on_reassignments_completed: Callable[[int], None] | None = None
        self._suspended = False
        self._expired = False
        self._deferred = []
        session.add_state_listener(self._on_session_state)

    @property
    def is_active(self) -> bool:
        return self.active is not None

    @property
    def epoch(self) -> int:
        return self.active.ctx.epoch if self.active else -1

    def _counts(self) -> dict[str, int] | None:
        return self.active.ctx.counts() if self.active is not None else None

    def step(self, event: ev.Event) -> str:
        """Process one event (Kafka's ``KafkaController.process``); returns the status line for the log."""
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
            case ev.PartitionModifications():
                taken = self._take_queued_modifications()
                try:
                    return self._partition_modifications([event, *taken])
                except ZkUnavailable:
                    self._deferred.extend(taken)  # step() defers the first
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

    def _on_controller_watch(self, watched: WatchedEvent) -> None:
        self._put(ev.ControllerChange(deleted=watched.type == EventType.DELETED))

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
        with heap.building("the controller's failover"):  # the context, and the image taking in its writes
            return self._failover_steps(epoch, epoch_zk_version)

    def _failover_steps(self, epoch: int, epoch_zk_version: int) -> str:
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
        active = Active(
            Reassigner(
                ctx,
                writer,
                self.session,
                uses_topic_ids=self.uses_topic_ids,
                on_completed=self._reassignments_completed,
            )
        )
        self.active = active
        self._upgrade_topic_znodes(report.topics_to_upgrade)
        # One pass finds what the failover's state changes start from: partitions to bring online (Kafka's
        # PartitionStateMachine.startup, triggerOnlinePartitionStateChange), replicas on brokers not live, taken
        # out of their ISRs (ReplicaStateMachine.startup moves them to OfflineReplica), reassignments to resume.
        # Kafka runs the replica step first, writing a leaderless state for a partition its dead leader led and
        # then electing it; electing first writes such a partition once, its new ISR already without the dead
        # replicas. None of the steps before the resume changes the brokers or an assignment it would change.
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
            with heap.quiet("a controller request"):
                result = call.fn()
            call.future.set_result(result)
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

    def _reassignments_completed(self, n: int) -> None:
        if self.on_reassignments_completed is not None:
            self.on_reassignments_completed(n)
