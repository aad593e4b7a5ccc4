"""What a rehearsal's steps run with: its options, the topics it makes for itself, the failure that ends the rolls,
and what a step's body may ask of the rehearsal running it.

A drill sees a :class:`StepHost`: the cluster, ZooKeeper's state, the waits, and the three things it must tell the
checks (a timeline mark, a disruption that explains an epoch change, a node it took away); nothing of how the
rehearsal records or judges a step. The rehearsal's own steps (the rolls, lockdown) and the checks after every
step see a :class:`RunHost`, which adds the record so far (:class:`Progress`) and the step loop. Both are
protocols, so the modules holding the steps never import the one holding the rehearsal.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from controller.zk.session import ZkSession
    from migrate.rehearse.checks import Checker
    from migrate.rehearse.cluster import Cluster
    from migrate.rehearse.display import Display
    from migrate.rehearse.load import LoadPool
    from migrate.rehearse.model import Artefact, CheckRecord, Phase, StepKind, StepRecord
    from migrate.rehearse.observe import Monitor
    from migrate.rehearse.state import Snapshot

#: Topics the rehearsal creates for itself: one the min-ISR rule guards, one the reassignment drill moves.
GUARDED, MOVED = "rh-guarded", "rh-moved"
#: What a wait polls: (done, what it is still waiting for).
Probe = Callable[[], tuple[bool, str]]


@dataclass
class Options:
    from_ibp: str
    to_ibp: str
    out_dir: Path
    drills: list[str] = field(default_factory=list)
    lockdown: bool = False
    rate: float = 8.0
    clients: tuple[str, ...] = ("confluent-kafka", "kafka-python")
    error_threshold: float = 0.1
    isr_timeout: float = 60.0
    min_isr_timeout: float = 60.0
    restart_timeout: float = 90.0
    reassignment_timeout: float = 120.0
    settle: float = 3.0  # load-only time before and after the rolls, so every step has traffic to judge
    step_settle: float = 2.0  # load after each restart, once the node is back in its ISRs
    zk_pause: float = 4.0
    session_timeout_ms: int = 6000
    #: A twin's production brokers it does not run: partitions with a replica there are not judged.
    absent: frozenset[int] = frozenset()
    #: A twin's shape for the report (brokers, topics, partitions, the brokers left out), None otherwise.
    twin: dict[str, Any] | None = None


class StepFailed(Exception):
    """A step's own wait failed (the check it names is recorded); the rolls stop here."""


@dataclass
class Progress:
    """The record so far, and what the checks after the next step must know of the steps since the last ones."""

    steps: list[StepRecord] = field(default_factory=list)
    checks: list[CheckRecord] = field(default_factory=list)
    artefacts: list[Artefact] = field(default_factory=list)
    #: Controller moves the steps since the last checks caused (the epoch-explained check reads them).
    disruptions: list[str] = field(default_factory=list)
    #: Nodes the steps since the last checks stopped, killed or froze (see Checker.client_errors).
    away: set[int] = field(default_factory=set)
    #: The IBP each node runs with, as the rolls set it.
    expected_ibp: dict[int, str] = field(default_factory=dict)
    #: Every node restarted with the target IBP.
    bumped: bool = False
    #: The newest registration after roll 2: writes after it are judged by the no-broker-ZooKeeper-writes check.
    bump_zxid: int | None = None
    #: A step failed and the rolls stopped.
    aborted: bool = False
    #: When the last checks ran: the client operations after it are the next step's.
    last_check: float = 0.0


class StepHost(Protocol):
    """What a drill may ask of the rehearsal running it."""

    options: Options
    cluster: Cluster

    def snapshot(self) -> Snapshot:
        """ZooKeeper's state now, the twin's absent brokers left out."""
        ...

    def wait(self, rec: StepRecord, what: str, probe: Probe, timeout: float) -> bool:
        """Poll ``probe`` until done or ``timeout``; the wait is recorded on the step either way."""
        ...

    def settle(self, rec: StepRecord, seconds: float | None = None) -> None:
        """Client load against the cluster as it now is (``seconds``, else the options' settle)."""
        ...

    def settled(self) -> tuple[bool, str]:
        """Whether every reassignment finished (a probe for :meth:`wait`)."""
        ...

    def rejoin(self, rec: StepRecord, broker_id: int, old_czxid: int) -> None:
        """Wait for the node to register again and to be back in every ISR; raises StepFailed if it is not."""
        ...

    def mark(self, label: str) -> None:
        """Mark the timeline where the drill did something (a dashed line on every plot)."""
        ...

    def disrupted(self, what: str) -> None:
        """Say that this step moved the controller (the epoch-explained check accepts a new epoch for it)."""
        ...

    def took_down(self, broker_id: int) -> None:
        """Say that this step stopped, killed or froze the node (its clients' errors are judged accordingly)."""
        ...


class RunHost(StepHost, Protocol):
    """What the rehearsal's own steps and the checks after every step may ask of it."""

    show: Display
    checker: Checker
    progress: Progress
    session: ZkSession | None
    monitor: Monitor | None
    load: LoadPool | None

    def step(
        self, name: str, phase: Phase, kind: StepKind, node: int | None, body: Callable[[StepRecord], None]
    ) -> None:
        """Run one step: record it, run ``body``, run the checks; StepFailed goes on unless it is post-flight."""
        ...

    def skip(self, name: str, phase: Phase, node: int | None) -> None:
        """Record a step that was not run because an earlier one failed."""
        ...
