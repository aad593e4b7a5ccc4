"""The controller the node constructs, and its public API (:class:`controller.active.api.ControllerApi`).

Each API method is a function of the active controller's state (:class:`.active_state.Active`) put on the
controller's queue and waited on (:meth:`.event_manager.ControllerEventManager.put_and_wait`). Every call is
the one generic event ``ApiCall`` with a typed payload (the call's name, which names its Kafka ControllerState,
and the function whose result the caller waits for) rather than an event class per API: the processor does the
same for every call (run it if active, answer NOT_CONTROLLER if not, map ZooKeeper failures to KIP-4's answers),
so a class per API would repeat each method's signature in an event and a dispatch case that adds nothing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TypeVar

from controller.active.active_state import Active
from controller.active.api import CALL_TIMEOUT_S, IsrResult, IsrUpdate, NewTopic, Result, WriteResult
from controller.active.context import ControllerContext
from controller.active.processor import ControllerProcessor
from controller.active.topics import (
    add_partitions,
    collision_index,
    create_topics,
    delete_known,
    plan_new_partitions,
    plan_topic,
    request_deletion,
    written,
)
from zkmodel import errorcodes as E
from zkmodel.admin import TopicPartition
from zkmodel.errorcodes import KafkaApiError, KafkaError
from zkmodel.reassignment import ReplicaAssignment
from zkmodel.topic_names import has_collision_chars, unify_collision_chars

T = TypeVar("T")


class Controller(ControllerProcessor):
    """The node's controller candidate: the event manager, the processor, and the API the wire calls."""

    # -- the API (thread-safe; runs on the controller thread) --------------------------------------------------------
    def call(self, name: str, fn: Callable[[Active], T], timeout: float = CALL_TIMEOUT_S) -> T:
        """Run ``fn`` with the active controller's state on the controller thread and wait for its result.
        Raises KafkaApiError(NOT_CONTROLLER) if this node is not the active controller, and
        KafkaApiError(REQUEST_TIMED_OUT) when the controller has not answered within ``timeout`` seconds (its
        queue is long, or ZooKeeper slow): what Kafka answers when a controller request times out. The call
        stays queued and may still take effect, as in Kafka."""

        def run() -> T:
            assert self.active is not None
            return fn(self.active)

        return self.put_and_wait(name, run, timeout)

    def create_topics(
        self, topics: Sequence[NewTopic], *, validate_only: bool = False, timeout: float = CALL_TIMEOUT_S
    ) -> dict[str, WriteResult]:
        """Names must be distinct: a name given twice is the CreateTopics handler's answer to make (INVALID_REQUEST,
        before authorization, as KafkaApis checks it), never the controller's."""
        repeated = sorted(n for n, k in Counter(t.name for t in topics).items() if k > 1)
        if repeated:
            raise ValueError(f"create_topics takes each topic once; given more than once: {repeated}")

        def run(a: Active) -> dict[str, WriteResult]:
            out: dict[str, WriteResult] = {}
            collisions = collision_index(a.ctx.topics)  # once per request, not a scan of every topic per topic
            planned: list[tuple[NewTopic, dict[int, tuple[int, ...]]]] = []
            for topic in topics:
                try:
                    planned.append((topic, plan_topic(a.ctx, topic, collisions)))
                    out[topic.name] = WriteResult(E.NONE)
                except KafkaApiError as exc:
                    out[topic.name] = WriteResult(exc.error, exc.message)
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
            ctx = a.ctx
            now = [
                name
                for name in dict.fromkeys(names)
                if self.delete_topic_enable
                and (topic := ctx.topics.get(name)) is not None
                and not topic.is_reassigning
                and name not in ctx.topics_to_delete
            ]
            for name in delete_known(ctx, a.writer, now):
                out[name] = (E.NONE, None)
            marked = False
            for name in dict.fromkeys(names):
                if name in out:
                    continue
                try:
                    request_deletion(ctx, a.writer, name)
                    out[name] = (E.NONE, None)
                    marked = True
                except KafkaApiError as exc:
                    out[name] = (exc.error, exc.message)
            if marked:
                self._process_deletions()
            return out

        return self.call("DeleteTopics", run, timeout)

    def create_partitions(
        self,
        requests: Mapping[str, tuple[int, Sequence[Sequence[int]] | None]],
        *,
        validate_only: bool = False,
        timeout: float = CALL_TIMEOUT_S,
    ) -> dict[str, WriteResult]:
        def run(a: Active) -> dict[str, WriteResult]:
            out: dict[str, WriteResult] = {}
            for name, (count, assignment) in requests.items():
                try:
                    added = plan_new_partitions(a.ctx, name, count, assignment)
                    if validate_only:
                        out[name] = WriteResult(E.NONE)
                        continue
                    add_partitions(a.ctx, a.writer, name, added, uses_topic_ids=self.uses_topic_ids)
                    out[name] = WriteResult(E.NONE, None, written(a.ctx.topics[name].topic_id, added))
                except KafkaApiError as exc:
                    out[name] = WriteResult(exc.error, exc.message)
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
