"""The guard a node passes before it writes anything: never join a chroot where Apache Kafka brokers live.

Such a node would race those brokers for ``/controller``, and if it won they would wait for LeaderAndIsr and
UpdateMetadata requests bridgekeeper never sends. A broker registration (``/brokers/ids/<id>``) is a bridgekeeper
node's when its node marker (``/bridgekeeper/nodes/<id>``) exists with the *same czxid*: :class:`Registrar`
creates both in one multi, and both go in one transaction when their session ends (ZooKeeper removes a
session's ephemerals together), so "registration present, marker absent" is never a state of ours, not even
for a moment.

The two are read one after the other, not atomically, so a registration is called foreign only if the *same*
registration (same czxid) is there before and after a read that found no marker with its czxid: had it been ours,
that marker existed for as long as the registration did. A node restarting meanwhile (its registration replaced)
is read again.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from controller.config.keys import UNSAFE_JOIN_KAFKA_CHROOT
from controller.store.registration import BrokerIdInUse
from controller.zk.session import ZkSession
from zkmodel import paths

log = logging.getLogger(__name__)
#: How often one registration is read again while it keeps changing under us (a node restarting in a loop);
#: past that it counts as foreign, which refuses the start: a refusal can be retried, a wrong join cannot.
MAX_READS = 5


class ForeignBrokers(RuntimeError):
    """The chroot holds registrations that are not bridgekeeper nodes; the message names their ids."""

    def __init__(self, broker_ids: list[int], own_id: int) -> None:
        ids = ", ".join(str(b) for b in broker_ids)
        own = f"; this node's own broker.id={own_id} among them" if own_id in broker_ids else ""
        super().__init__(
            f"refusing to join a chroot where brokers that are not bridgekeeper nodes are registered: broker "
            f"id{'s' if len(broker_ids) > 1 else ''} {ids} (Apache Kafka brokers?{own}). A node there would contend "
            f"with them for /controller and, if elected, leave them waiting for requests it never sends: point "
            f"zookeeper.connect at a chroot of its own ({UNSAFE_JOIN_KAFKA_CHROOT}=true starts it anyway)"
        )
        self.broker_ids = broker_ids


@dataclass(frozen=True)
class Registered:
    """One registration as the guard found it: the session holding it, and whether it is a bridgekeeper node."""

    broker_id: int
    owner: int
    bridgekeeper: bool


def registered_brokers(session: ZkSession) -> list[Registered]:
    """Every registration in ``/brokers/ids`` (none when the chroot has no such path), by broker id."""
    children = session.get_children(paths.BROKER_IDS) or []
    found = (_classify(session, int(c)) for c in sorted(children, key=lambda c: (len(c), c)) if c.isdigit())
    return [r for r in found if r is not None]


def _classify(session: ZkSession, broker_id: int) -> Registered | None:
    """Whose ``/brokers/ids/<id>`` is; None when it went away while we looked."""
    for _ in range(MAX_READS):
        before = session.exists(paths.broker(broker_id))
        if before is None:
            return None
        marker = session.exists(paths.node_marker(broker_id))
        if marker is not None and marker.czxid == before.czxid:
            return Registered(broker_id, before.ephemeralOwner, True)
        after = session.exists(paths.broker(broker_id))
        if after is None:
            return None
        if after.czxid == before.czxid:
            return Registered(broker_id, before.ephemeralOwner, False)
    log.warning("/brokers/ids/%d kept changing while it was read %d times: counted as foreign", broker_id, MAX_READS)
    return Registered(broker_id, 0, False)


def guard_chroot(session: ZkSession, broker_id: int, *, allow_foreign: bool) -> list[int]:
    """Raise :class:`ForeignBrokers` when the chroot holds registrations that are not bridgekeeper nodes (unless
    ``allow_foreign``), and :class:`BrokerIdInUse` when ``broker_id`` is registered by another live session (never
    overridable: the registration would fail anyway, after this node had joined the election). Returns the foreign
    ids it let pass. Reads only: a node that is refused has written nothing."""
    found = registered_brokers(session)
    foreign = [r.broker_id for r in found if not r.bridgekeeper]
    if foreign and not allow_foreign:
        raise ForeignBrokers(foreign, broker_id)
    own = next((r for r in found if r.broker_id == broker_id), None)
    if own is not None and own.owner != session.session_id:
        raise BrokerIdInUse(broker_id, own.owner, bridgekeeper=own.bridgekeeper)
    return foreign
