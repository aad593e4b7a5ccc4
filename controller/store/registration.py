"""What every broker writes for itself at start: persistent paths, its registration, the cluster id.

None of these are controller-owned, so none carry the epoch fence; the registration is Kafka's
"checked ephemeral" so that a broker never silently takes over another live broker's id. Beside it, in the same
multi, goes bridgekeeper's node marker (:data:`zkmodel.paths.NODE_MARKERS`): the registration's bytes stay
exactly Kafka's, and a registration without a marker is known to be somebody else's (an Apache Kafka broker).
"""

from __future__ import annotations

import logging

import orjson

from controller.zk.errors import KazooException, NodeExistsError, NoNodeError, RolledBackError
from controller.zk.ops import Create, Delete, Op, SetData
from controller.zk.retry import Raced, until_settled
from controller.zk.session import ZkSession
from controller.zk.types import ZnodeStat
from zkmodel import paths
from zkmodel.brokers import BrokerRegistration
from zkmodel.cluster import ClusterIdZnode
from zkmodel.uuid import random_uuid

log = logging.getLogger(__name__)


#: The node marker's format version (its payload: ``{"version":1,"broker_id":<id>,"software":"bridgekeeper"}``).
MARKER_VERSION = 1


def marker_payload(broker_id: int) -> bytes:
    """What ``/bridgekeeper/nodes/<id>`` holds: enough for an operator reading it with ``zkCli`` to know whose it
    is. Readers go by its existence and czxid, never by these bytes."""
    return orjson.dumps({"version": MARKER_VERSION, "broker_id": broker_id, "software": "bridgekeeper"})


class BrokerIdInUse(RuntimeError):
    """Another live session owns ``/brokers/ids/<id>``; the message names the id and that session."""

    def __init__(self, broker_id: int, owner: int, *, bridgekeeper: bool) -> None:
        who = "a bridgekeeper node" if bridgekeeper else "not a bridgekeeper node: an Apache Kafka broker?"
        super().__init__(
            f"broker id {broker_id} is registered by another session, 0x{owner:x} ({who}), which is still live: "
            f"is another node running with broker.id={broker_id}? (a node that was killed leaves its "
            "registration until its ZooKeeper session times out)"
        )
        self.broker_id = broker_id
        self.owner = owner


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

    @property
    def marker_path(self) -> str:
        return paths.node_marker(self.broker_id)

    def register(self, registration: BrokerRegistration) -> int:
        """Create the ephemeral registration and its marker; returns the broker epoch (its czxid)."""
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
        """One attempt; raises Raced when the node vanished under us or was our expired session's. The
        registration (Kafka's checked ephemeral: create, then setData at version 0) and the marker are one multi,
        so neither ever exists without the other: the chroot guard relies on it."""
        ops: list[Op] = [
            Create(self.path, None, ephemeral=True),
            SetData(self.path, data, 0),
            Create(self.marker_path, marker_payload(self.broker_id), ephemeral=True),
        ]
        results = self.session.multi(ops, what=f"register {self.path}", write="registration")
        if not any(isinstance(r, Exception) for r in results):
            stat: ZnodeStat = results[1]
            return stat
        registration_failed, marker_failed = results[0], results[2]
        if isinstance(marker_failed, NoNodeError):
            # A chroot last run by a release without markers, or a caller that made only Kafka's paths.
            self.session.ensure_persistent([paths.NODE_MARKERS])
            raise Raced(f"{paths.NODE_MARKERS} was missing")
        if not isinstance(registration_failed, NodeExistsError) and not isinstance(marker_failed, NodeExistsError):
            raise next(r for r in results if isinstance(r, Exception) and not isinstance(r, RolledBackError))
        return self._settle_existing()

    def _settle_existing(self) -> ZnodeStat:
        """The registration or its marker exists already: ours (a retried multi that had gone through), our
        expired session's (removed, then Raced), or another live session's (BrokerIdInUse)."""
        found = self.session.get(self.path)
        registration = found[1] if found is not None else None
        marker = self.session.exists(self.marker_path)
        either = registration or marker
        if either is None:
            raise Raced(f"{self.path} went away while we looked")
        owner, current = either.ephemeralOwner, self.session.session_id
        if registration is not None and owner == current:
            return registration
        if owner == self.registered_session_id and owner != current:
            log.info("removing our registration left by expired session 0x%x", owner)
            stale: list[Op] = [
                Delete(path)
                for path, stat in ((self.path, registration), (self.marker_path, marker))
                if stat is not None and stat.ephemeralOwner == owner
            ]
            self.session.multi(stale, what=f"remove {self.path} of an expired session", write="registration")
            raise Raced(f"{self.path} was left by our expired session")
        ours = registration is not None and marker is not None and marker.czxid == registration.czxid
        raise BrokerIdInUse(self.broker_id, owner, bridgekeeper=ours)

    def update(self, registration: BrokerRegistration) -> None:
        """Kafka's updateBrokerInfo: setData at any version; a missing node is an error (NoNodeError)."""
        self.session.set_unconditionally(self.path, registration.encode(), write="registration")


def ensure_persistent_paths(session: ZkSession) -> None:
    """Kafka's persistent paths (ZkData.PersistentZkPaths), and the parent of bridgekeeper's node markers."""
    session.ensure_persistent([*paths.PERSISTENT_PATHS, paths.NODE_MARKERS])


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
