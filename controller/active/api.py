"""The active controller as the wire layer sees it: :class:`ControllerApi`, the calls a handler makes, and the
plain values those calls take and give back.

This is the one module of ``controller.active`` that ``controller.wire`` may import (an import-linter contract
in ``pyproject.toml``): the handlers program against the Protocol, the node hands them the concrete
:class:`controller.active.controller.Controller`, and mypy checks there that it satisfies it. So this module imports
nothing of ``controller.active`` (nor of ZooKeeper): only ``zkmodel``'s values.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from zkmodel.admin import TopicPartition
from zkmodel.errorcodes import KafkaError
from zkmodel.reassignment import ReplicaAssignment
from zkmodel.topics import RECOVERED, PartitionState

#: How long an API call waits for the controller thread when the request gives no timeout of its own.
CALL_TIMEOUT_S = 30.0

#: An API outcome: Kafka's error code and message (message None on success).
Result = tuple[KafkaError, str | None]


@dataclass(frozen=True)
class Written:
    """What the controller wrote for one topic of a CreateTopics or CreatePartitions: its id (None below IBP
    2.8-IV0, Kafka's topic ids) and the replicas of each partition it assigned (CreateTopics: every partition;
    CreatePartitions: the new ones)."""

    topic_id: str | None
    assignment: Mapping[int, tuple[int, ...]]

    @property
    def num_partitions(self) -> int:
        return len(self.assignment)

    @property
    def replication_factor(self) -> int:
        """The first partition's replica count (Kafka's CreateTopics answer: every partition has as many)."""
        return len(next(iter(self.assignment.values()))) if self.assignment else -1


class WriteResult(tuple[KafkaError, str | None]):
    """A :data:`Result` (equal to, indexed and unpacked as its ``(error, message)``) that also says, on success,
    what was written (``written``; None for a failure or a ``validate_only`` request). A subtype of Result rather
    than a record of its own, so a caller that needs only the outcome reads it as one, and the Protocol's two
    writing calls return ``Mapping[str, Result]``: an implementation that answers plain Results (a stand-in, a
    validation) still satisfies it, and the handler asks ``isinstance(result, WriteResult)`` for what was written."""

    written: Written | None

    def __new__(cls, error: KafkaError, message: str | None = None, written: Written | None = None) -> WriteResult:
        result = super().__new__(cls, (error, message))
        result.written = written
        return result


@dataclass(frozen=True)
class NewTopic:
    """One topic of a CreateTopics request, as the handler validated it (-1: the broker's default)."""

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    assignment: Mapping[int, Sequence[int]] | None = None
    configs: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class IsrUpdate:
    """One partition of an AlterPartition request: what the leader wants the state to become."""

    leader_epoch: int
    isr: tuple[int, ...]
    partition_epoch: int
    leader_recovery_state: int = RECOVERED


@dataclass(frozen=True)
class IsrResult:
    """One partition's AlterPartition answer: the error, and the state the controller holds (when it has one)."""

    error: KafkaError
    state: PartitionState | None = None
    partition_epoch: int = -1


class ControllerApi(Protocol):
    """What the handlers call on the active controller. Every call but ``is_active`` runs on the controller
    thread and blocks until it has; each raises ``KafkaApiError`` with NOT_CONTROLLER when this node was not
    the active controller when the call's turn came, and with REQUEST_TIMED_OUT when it was not answered
    within ``timeout`` or ZooKeeper failed under a call that had started writing."""

    @property
    def is_active(self) -> bool:
        """Whether this node is the active controller now."""
        ...

    def create_topics(
        self, topics: Sequence[NewTopic], *, validate_only: bool = False, timeout: float = CALL_TIMEOUT_S
    ) -> Mapping[str, Result]:
        """Create topics whose names are distinct (the CreateTopics handler answers a name given twice). A topic
        created is answered with a :class:`WriteResult` saying what was written (its id and assignment)."""
        ...

    def delete_topics(self, names: Sequence[str], *, timeout: float = CALL_TIMEOUT_S) -> dict[str, Result]: ...

    def create_partitions(
        self,
        requests: Mapping[str, tuple[int, Sequence[Sequence[int]] | None]],
        *,
        validate_only: bool = False,
        timeout: float = CALL_TIMEOUT_S,
    ) -> Mapping[str, Result]:
        """Add partitions; a topic grown is answered with a :class:`WriteResult` holding the new partitions'
        assignment."""
        ...

    def alter_partition_reassignments(
        self, requests: Mapping[TopicPartition, Sequence[int] | None], *, timeout: float = CALL_TIMEOUT_S
    ) -> dict[TopicPartition, Result]: ...

    def list_partition_reassignments(
        self, partitions: Collection[TopicPartition] | None = None
    ) -> dict[TopicPartition, ReplicaAssignment]: ...

    def elect_leaders(
        self,
        election_type: int,
        partitions: Collection[TopicPartition] | None = None,
        *,
        timeout: float = CALL_TIMEOUT_S,
    ) -> dict[TopicPartition, Result]: ...

    def alter_partition_by_id(
        self, broker_id: int, broker_epoch: int, updates: Mapping[tuple[str, int], IsrUpdate], *, version: int = 2
    ) -> tuple[KafkaError, dict[tuple[str, int], IsrResult]]: ...

    def controlled_shutdown(self, broker_id: int, broker_epoch: int) -> tuple[KafkaError, list[TopicPartition]]: ...
