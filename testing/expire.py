"""Really expire another process's ZooKeeper session, for fault drills and reliability tests.

ZooKeeper's own test technique: open a second connection with the session's id and password, then close it.
The server ends the session at once (closeSession), deletes its ephemeral znodes, and the owner learns that
its session expired the next time it talks to the server: exactly what a node sees after a long GC pause or
a partition, without freezing the process. (kazoo's test harness only pretends, inside the client.)

The owner does not have to hand its password over: ZooKeeper derives it from the session id
(``ZooKeeperServer.generatePasswd``: ``new java.util.Random(id ^ superSecret).nextBytes(new byte[16])``, with a
fixed ``superSecret`` of ``0xB3415C00``), so the id alone, which every ephemeral znode shows as its
``ephemeralOwner``, is enough. Anyone who can reach the ensemble can do this; it is one more reason why
ZooKeeper must be reachable only from the cluster's own hosts.
"""

from __future__ import annotations

import contextlib

from kazoo.client import KazooClient

#: ZooKeeperServer.superSecret (unchanged from 3.4 to 3.9).
SUPER_SECRET = 0xB3415C00
_MULTIPLIER = 0x5DEECE66D
_ADDEND = 0xB
_MASK = (1 << 48) - 1
PASSWORD_BYTES = 16


def _java_random_bytes(seed: int, n: int) -> bytes:
    """``new java.util.Random(seed).nextBytes(new byte[n])``: the 48-bit LCG, each int's bytes low first."""
    state = (seed ^ _MULTIPLIER) & _MASK
    out = bytearray()
    while len(out) < n:
        state = (state * _MULTIPLIER + _ADDEND) & _MASK
        word = state >> 16  # next(32)
        for _ in range(min(4, n - len(out))):
            out.append(word & 0xFF)
            word >>= 8
    return bytes(out)


def session_password(session_id: int) -> bytes:
    """The password the ensemble gave session ``session_id``."""
    return _java_random_bytes((session_id ^ SUPER_SECRET) & 0xFFFFFFFFFFFFFFFF, PASSWORD_BYTES)


def expire_session(hosts: str, session_id: int, *, timeout: float = 20.0, attempts: int = 20) -> bool:
    """End session ``session_id`` on the ensemble at ``hosts`` (a connect string; a chroot is ignored).
    True if the session was live and is now gone; False if the server no longer knew it (already expired).

    The owner reconnects as soon as the second connection takes its session over, and may take it back
    before the close goes out (the close then goes nowhere): so the session is attached to and closed until
    an attach finds it gone, at most ``attempts`` times."""
    servers = hosts.split("/", 1)[0]
    closed = False
    for _ in range(attempts):
        twin = KazooClient(hosts=servers, client_id=(session_id, session_password(session_id)), timeout=timeout)
        try:
            twin.start(timeout=timeout)
            if twin.client_id is None or int(twin.client_id[0]) != session_id:
                return closed  # the server gave the twin a session of its own: ours is gone
            twin.stop()
            closed = True
        finally:
            with contextlib.suppress(Exception):
                twin.close()
    raise RuntimeError(f"session 0x{session_id:x} still alive after {attempts} attempts to close it")
