"""What every broker writes for itself at start: persistent paths, its registration, the cluster id.

None of these are controller-owned, so none carry the epoch fence; the registration is Kafka's
"checked ephemeral" so that a broker never silently takes over another live broker's id.
"""

from __future__ import annotations

import logging

from controller.zk.errors import KazooException, NodeExistsError
from controller.zk.ops import Create, Op, SetData
from controller.zk.retry import Raced, until_settled
from controller.zk.session import ZkSession
from controller.zk.types import ZnodeStat
from zkmodel import paths
from zkmodel.brokers import BrokerRegistration
from zkmodel.cluster import ClusterIdZnode
from zkmodel.uuid import random_uuid

log = logging.getLogger(__name__)


class BrokerIdInUse(RuntimeError):
    """Another live session owns ``/brokers/ids/<id>``."""


class Registrar:
    """Registers one broker, remembering the session that did it (Kafka's KAFKA-7165 workaround: after an
    expiry the server may still show our old ephemeral; we may delete and re-create it, nobody else's)."""

    def __init__(self, session: ZkSession, broker_id: int) -> None:
        self.session = session
        self.broker_id = broker_id
        self.registered_session_id = 0
        self.broker_epoch = -1

    @property
    def path(self) -> str:
        return paths.broker(self.broker_id)

    def register(self, registration: BrokerRegistration) -> int:
        """Create the ephemeral registration; returns the broker epoch (its czxid)."""
        stat = self._create(registration.encode())
        self.registered_session_id = self.session.session_id
        self.broker_epoch = stat.czxid
        log.info(
            "registered broker %d at %s, broker epoch (czxid) %d",
            self.broker_id,
            ",".join(e.connection_string for e in registration.endpoints),
            stat.czxid,
        )
        return self.broker_epoch

    def _create(self, data: bytes) -> ZnodeStat:
        return until_settled(
            lambda: self._try_create(data),
            max_attempts=5,
            give_up=lambda: KazooException(f"could not register {self.path} after repeated races"),
        )

    def _try_create(self, data: bytes) -> ZnodeStat:
        """One attempt; raises Raced when the node vanished under us or was our expired session's."""
        ops: list[Op] = [Create(self.path, None, ephemeral=True), SetData(self.path, data, 0)]
        results = self.session.multi(ops, what=f"register {self.path}", write="registration")
        if not any(isinstance(r, Exception) for r in results):
            stat: ZnodeStat = results[1]
            return stat
        failure = next(r for r in results if isinstance(r, Exception))
        if not isinstance(failure, NodeExistsError):
            raise failure
        found = self.session.get(self.path)
        if found is None:
            raise Raced(f"{self.path} went away while we looked")
        owner = found[1].ephemeralOwner
        current = self.session.session_id
        if owner == current:
            return found[1]
        if owner == self.registered_session_id and owner != current:
            log.info("removing our registration left by expired session 0x%x", owner)
            self.session.delete(self.path, write="registration")
            raise Raced(f"{self.path} was left by our expired session")
        raise BrokerIdInUse(
            f"broker id {self.broker_id} is registered by another session (0x{owner:x}); is another node "
            f"running with broker.id={self.broker_id}?"
        )

    def update(self, registration: BrokerRegistration) -> None:
        """Kafka's updateBrokerInfo: setData at any version; a missing node is an error (NoNodeError)."""
        self.session.set_unconditionally(self.path, registration.encode(), write="registration")


def ensure_persistent_paths(session: ZkSession) -> None:
    session.ensure_persistent(paths.PERSISTENT_PATHS)


def get_or_create_cluster_id(session: ZkSession) -> str:
    """Create-once: the first node to get here picks the id; everyone else reads it."""
    found = session.get(paths.CLUSTER_ID)
    if found is None:
        session.ensure_persistent(["/cluster"])
        candidate = ClusterIdZnode(random_uuid())
        if session.create_only(paths.CLUSTER_ID, candidate.encode()):
            return candidate.id
        found = session.get(paths.CLUSTER_ID)
        assert found is not None
    return ClusterIdZnode.decode(paths.CLUSTER_ID, found[0]).id
