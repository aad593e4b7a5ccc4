"""The fault injector: every fault the rehearsal's drills and the failover soak induce, one function each, named
for what it does to the cluster.

- :func:`kill_node`: SIGKILL of a node process (no controlled shutdown), then a start once the caller's wait is
  over.
- :func:`freeze_node`: SIGSTOP of a node process for as long as the caller's wait runs, then SIGCONT. Frozen past
  its ``zookeeper.session.timeout.ms``, the node's sessions expire on the server while the process holds on to
  them: a zombie that wakes up mid-write and must find itself deposed.
- :func:`expire_session`: a ZooKeeper session ended on the server (:mod:`testing.expire`), the process untouched:
  what a node sees after a partition from ZooKeeper, without the freeze.
- :func:`restart_node`: a node stopped (controlled shutdown) and started again.
- :func:`freeze_zookeeper`: the ensemble's leader (the one server, or whatever an attached cluster's inventory
  command freezes) SIGSTOPped for as long as the caller's wait runs, then resumed.
- :func:`kill_zookeeper_server`: one ensemble member SIGKILLed, then started again once the caller's wait is over.

Each fault takes the waits from its caller (``until``): the rehearsal records them on its step, the soak times
them for its report. A wait that raises leaves a killed process down (both callers stop there), while a frozen
one is always thawed: a process left stopped would hang everything after it.

The node faults act through the rehearsal's :class:`~migrate.rehearse.cluster.Cluster` verbs, so they work on a
cluster the rehearsal started and on one it attached to from an inventory alike.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from testing.expire import expire_session

if TYPE_CHECKING:
    from controller.devstack.localzk import LocalZooKeeper
    from migrate.rehearse.cluster import Cluster

T = TypeVar("T")

__all__ = [
    "expire_session",
    "freeze_node",
    "freeze_zookeeper",
    "kill_node",
    "kill_zookeeper_server",
    "restart_node",
]


def kill_node(cluster: Cluster, broker_id: int, *, until: Callable[[], None], start_timeout: float) -> None:
    """SIGKILL the node, wait ``until`` (raising leaves it down), then start it and wait up to ``start_timeout``
    for it to serve."""
    cluster.kill(broker_id)
    until()
    cluster.start(broker_id, start_timeout)


def freeze_node(cluster: Cluster, broker_id: int, until: Callable[[], T]) -> T:
    """SIGSTOP the node for as long as ``until`` runs, then SIGCONT it (whatever ``until`` returned or raised);
    returns what ``until`` returned."""
    cluster.freeze(broker_id)
    try:
        return until()
    finally:
        cluster.thaw(broker_id)


def restart_node(cluster: Cluster, broker_id: int, timeout: float) -> None:
    """Stop the node (controlled shutdown) and start it with the configuration it had; up to ``timeout`` to serve."""
    cluster.restart(broker_id, None, timeout)


def freeze_zookeeper(cluster: Cluster, until: Callable[[str], T]) -> T:
    """SIGSTOP ZooKeeper's leader (:meth:`~migrate.rehearse.cluster.Cluster.pause_zookeeper`) for as long as
    ``until`` runs, then resume it; ``until`` is told which server is frozen."""
    what = cluster.pause_zookeeper()
    try:
        return until(what)
    finally:
        cluster.resume_zookeeper()


def kill_zookeeper_server(zk: LocalZooKeeper, myid: int, *, until: Callable[[], None], timeout: float = 60.0) -> None:
    """SIGKILL ensemble member ``myid``, wait ``until`` (raising leaves it down), then start it again and wait up to
    ``timeout`` for it to serve."""
    zk.kill(myid, signal.SIGKILL)
    until()
    zk.restart(myid, timeout=timeout)
