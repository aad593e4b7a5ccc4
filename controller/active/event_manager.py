"""The controller's event manager (Kafka's ControllerEventManager): one queue, one thread, put-and-wait.

Everything the controller reacts to (watches, session changes, API calls, ticks) is put on one queue and taken
off by one thread, one event at a time; what an event does is the processor's (:mod:`.processor`, Kafka's
``KafkaController.process``). API calls are put here and waited on (:meth:`ControllerEventManager.put_and_wait`)
so a client thread never touches the controller's state.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

from controller.active import events as ev
from controller.active.api import CALL_TIMEOUT_S
from controller.logtags import UNEXPECTED
from zkmodel import errorcodes as E
from zkmodel.errorcodes import KafkaApiError

log = logging.getLogger(__name__)

#: The gauges are recounted at most once per this many times the last count's duration (see _publish).
PUBLISH_COST_FACTOR = 20.0
T = TypeVar("T")


class ControllerEventManager:
    """The queue and the controller thread. Subclasses say what an event does (:meth:`step`) and what the
    gauges count (:meth:`_counts`); this class owns only when events run and what is measured about them."""

    def __init__(self, broker_id: int, tick_seconds: float) -> None:
        self.broker_id = broker_id
        self.tick_seconds = tick_seconds
        self.last_status = "not started"
        #: Counts published after every step, for metrics (read from other threads; replaced, never mutated).
        self.summary: dict[str, int] = {}
        #: Called with this controller after each step that published (its metrics: the concrete Controller).
        self.on_step: Callable[[Any], None] | None = None
        #: Called with (Kafka ControllerState, seconds processing, seconds queued) after each event: ControllerStats'
        #: timers and ControllerEventManager's EventQueueTimeMs.
        self.on_event: Callable[[str, float, float], None] | None = None
        #: Client requests (API calls) queued or running on this controller: clients waiting on it.
        self.waiting_calls = 0
        self._waiting_lock = threading.Lock()
        self._published_at = 0.0
        self._counted_at, self._publish_cost = 0.0, 0.0  # when the gauges were last counted, and how long it took
        #: Events with the time they were queued (EventQueueTimeMs is measured from there).
        self._queue: queue.Queue[tuple[ev.Event, float]] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._stopped = threading.Event()

    def step(self, event: ev.Event) -> str:
        """Process one event; returns the status line for the log."""
        raise NotImplementedError

    def _counts(self) -> dict[str, int] | None:
        """The gauges' counts, O(partitions); None while there is nothing to count."""
        raise NotImplementedError

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
        if now - self._counted_at >= PUBLISH_COST_FACTOR * self._publish_cost:
            counts = self._counts()
            if counts is not None:
                self.summary = counts
                self._counted_at, self._publish_cost = now, time.monotonic() - now
        self._published_at = now
        if self.on_step is not None:
            try:
                self.on_step(self)
            except Exception:
                log.exception("%s metrics update failed", UNEXPECTED)

    def _take_queued_modifications(self) -> list[ev.PartitionModifications]:
        """The topics of the PartitionModifications events queued right behind the one being handled, taken
        with it: this controller's own writes to 10,000 topic znodes (a reassignment's RS/AR/RR) fire 10,000
        topic watches, then read in a few multiReads instead of 10,000 getData. Only the run at the head of
        the queue is taken, so nothing is handled before an event queued ahead of it. (The queue is unbounded
        and nobody joins it, so taking from its deque under its mutex skips no bookkeeping that matters.)"""
        taken: list[ev.PartitionModifications] = []
        with self._queue.mutex:
            pending = self._queue.queue
            while pending and isinstance(pending[0][0], ev.PartitionModifications):
                event = pending.popleft()[0]
                assert isinstance(event, ev.PartitionModifications)
                taken.append(event)
        return taken

    def put_and_wait(self, name: str, fn: Callable[[], T], timeout: float = CALL_TIMEOUT_S) -> T:
        """Queue ``fn`` as the API call ``name``, run by the controller thread in its turn, and wait for its
        result. Raises KafkaApiError(REQUEST_TIMED_OUT) when the controller has not answered within ``timeout``
        seconds (its queue is long, or ZooKeeper slow): what Kafka answers when a controller request times out.
        The call stays queued and may still take effect, as in Kafka."""
        future: Future[Any] = Future()
        with self._waiting_lock:
            self.waiting_calls += 1
        future.add_done_callback(self._call_done)
        self._put(ev.ApiCall(name, fn, future))
        try:
            result: T = future.result(timeout)
        except TimeoutError:
            raise KafkaApiError(
                E.REQUEST_TIMED_OUT, f"The controller did not complete {name} within {round(timeout * 1000)} ms."
            ) from None
        return result

    def _call_done(self, _future: Future[Any]) -> None:
        with self._waiting_lock:
            self.waiting_calls -= 1
