"""The failover soak's records and its one wait: its options and kinds (:data:`KINDS`), one induced failover as
found (:class:`Failover`), the summary over all of them (:class:`Summary`), and :func:`wait`, which polls a
condition through a fault (ZooKeeper away counts as "not yet")."""

from __future__ import annotations

import statistics
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import tenacity

KINDS = ("freeze-controller", "expire-session", "kill-controller", "zookeeper-leader")
#: Kinds that depose the active controller by construction (the ZooKeeper kinds may or may not).
DEPOSING = frozenset({"freeze-controller", "expire-session", "kill-controller"})
Say = Callable[[str], None]


def quiet(_text: str) -> None:
    pass


@dataclass
class SoakOptions:
    data_dir: Path
    nodes: int = 3
    zk_servers: int = 3
    ibp: str = "3.9"  # past the forwarding gate: brokers forward admin writes, only the controller writes
    rate: float = 4.0  # client operations per second, all workers together
    seed: int = 0
    session_timeout_ms: int = 4000
    #: The clients' request timeout; above the nodes' own, so a client hears the node's answer, not its timer.
    client_request_timeout_ms: int = 12000
    node_request_timeout_ms: int = 8000
    settle_s: float = 2.0  # client load before each fault and after each recovery
    recover_timeout_s: float = 90.0
    reassignment_timeout_s: float = 90.0
    kinds: tuple[str, ...] = KINDS


@dataclass
class Failover:
    index: int
    kind: str
    detail: str = ""
    controller_before: int | None = None
    epoch_before: int | None = None
    controller_after: int | None = None
    epoch_after: int | None = None
    moved: bool = False  # another session holds /controller than before the fault
    elected_s: float | None = None  # from the fault to another session holding /controller
    recovered_s: float | None = None  # from the fault to the cluster healthy again
    took_s: float = 0.0
    acked: int = 0  # client operations of this cycle
    failed: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    violations: list[str] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.violations


class SoakError(RuntimeError):
    """The soak could not start or a fault could not be induced (not a finding about the cluster)."""


def _percentile(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


@dataclass
class Summary:
    failovers: int
    by_kind: dict[str, int]
    moved_by_kind: dict[str, int]
    elected: dict[str, float | None]  # p50, p99, max over cycles whose controller moved
    recovered: dict[str, float | None]
    acked: int
    failed: int
    errors: Counter[str]
    violations: list[str]
    took_s: float

    @staticmethod
    def of(cycles: Sequence[Failover], took_s: float) -> Summary:
        elected = [c.elected_s for c in cycles if c.elected_s is not None]
        recovered = [c.recovered_s for c in cycles if c.recovered_s is not None]
        errors: Counter[str] = Counter()
        for c in cycles:
            errors.update(c.errors)
        return Summary(
            failovers=len(cycles),
            by_kind=dict(Counter(c.kind for c in cycles)),
            moved_by_kind=dict(Counter(c.kind for c in cycles if c.moved)),
            elected={
                "p50": statistics.median(elected) if elected else None,
                "p99": _percentile(elected, 0.99),
                "max": max(elected) if elected else None,
            },
            recovered={
                "p50": statistics.median(recovered) if recovered else None,
                "p99": _percentile(recovered, 0.99),
                "max": max(recovered) if recovered else None,
            },
            acked=sum(c.acked for c in cycles),
            failed=sum(c.failed for c in cycles),
            errors=errors,
            violations=[f"#{c.index} {c.kind}: {v}" for c in cycles for v in c.violations],
            took_s=took_s,
        )


def wait(what: str, probe: Callable[[], tuple[bool, str]], timeout: float, say: Say, interval: float = 0.1) -> bool:
    """Poll ``probe`` until it says done or ``timeout`` passes; False on timeout (the caller records why)."""
    started = time.monotonic()
    last = [""]

    def attempt() -> bool:
        try:
            done, detail = probe()
        except Exception as exc:  # ZooKeeper away mid-fault: not done yet
            done, detail = False, f"{type(exc).__name__}: {exc}"
        last[0] = detail
        say(f"waiting for {what}: {detail} ({time.monotonic() - started:.0f}/{timeout:.0f} s)")
        return done

    ok = tenacity.Retrying(
        stop=tenacity.stop_after_delay(timeout),
        wait=tenacity.wait_fixed(interval),
        retry=tenacity.retry_if_result(lambda done: not done),
        retry_error_callback=lambda _s: False,
    )(attempt)
    if not ok:
        say(f"gave up waiting for {what} after {timeout:.0f} s: {last[0]}")
    return bool(ok)
