"""Read-modify-compare-and-set on one znode (an entity config, a user's SCRAM credentials, a resource's
ACLs), the way Kafka's admin code updates them: read the node and its version, compute the new content,
write it conditional on that version; on a lost race read again and recompute.

Two kinds of racers exist. Writers in *other* processes (another broker, an operator's tool) are caught by
ZooKeeper's version check, and the loop retries as Kafka does. Writers in *this* process — fifty client
requests for the same topic's configs arriving on the wire server's threads — would race each other the
same way and, with a handful of attempts, most of them would give up with an error although nothing was
wrong; so :func:`read_modify_write` first orders them in-process by the key they update (one lock per key, held for
the read-compute-write), and the version check only ever meets the outside world.

Ordering in-process is only half of it: the read must also see the write the previous writer of the key just
made. ZooKeeper promises that to one session (its requests are served in order), not across sessions, and on
an ensemble two sessions of one node (the broker's and the controller identity's) can be connected to
different servers, one of which may not have applied the leader's last commit yet. So the callers read and
write through the *same* session; and when a write loses the race anyway (another process wrote, and our
server may still trail it), ``catch_up`` — a ZooKeeper ``sync`` of the key — runs before the next attempt's
read, so it is not answered from the same stale state again.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from tenacity.wait import WaitBaseT

from controller.zk.retry import Raced, until_settled

__all__ = ["Raced", "ordered", "read_modify_write"]

T = TypeVar("T")

_registry = threading.Lock()
#: key -> (its lock, how many threads hold or wait for it); an entry lives only while in use.
_locks: dict[str, tuple[threading.Lock, int]] = {}


@contextmanager
def ordered(key: str) -> Iterator[None]:
    """Hold the in-process lock of ``key`` (a znode path): updates of one key in this process run one after
    another, updates of different keys in parallel."""
    with _registry:
        lock, users = _locks.get(key, (None, 0))
        if lock is None:
            lock = threading.Lock()
        _locks[key] = (lock, users + 1)
    try:
        with lock:
            yield
    finally:
        with _registry:
            lock, users = _locks[key]
            if users == 1:
                del _locks[key]
            else:
                _locks[key] = (lock, users - 1)


def read_modify_write(
    key: str,
    attempt: Callable[[], T],
    *,
    max_attempts: int,
    give_up: Callable[[], Exception],
    wait: WaitBaseT | None = None,
    sleep: Callable[[float], None] | None = None,
    catch_up: Callable[[], None] | None = None,
) -> T:
    """Run ``attempt`` — read, compute, write at the version read, raising :class:`Raced` when the version
    check (or ``/controller``'s) failed — in ``key``'s order, until it returns; at most ``max_attempts``
    times, then raise ``give_up()``. ``wait`` spaces the attempts (Kafka's ACL back-off), ``sleep`` is for
    tests, ``catch_up`` runs before every attempt but the first (the session's ``sync`` of ``key``). Errors
    other than :class:`Raced` end it at once."""
    tries = 0

    def once() -> T:
        nonlocal tries
        tries += 1
        if tries > 1 and catch_up is not None:
            catch_up()
        return attempt()

    with ordered(key):
        return until_settled(once, max_attempts=max_attempts, give_up=give_up, wait=wait, sleep=sleep)
