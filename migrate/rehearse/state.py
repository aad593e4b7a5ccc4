"""The cluster as ZooKeeper holds it at one moment: what the roll decides on (canRoll, ISR rejoin) and what the
checks compare between steps. Read in a few pipelined multiReads, so a check costs one round of reads, not
one per partition, and decoded with zkmodel's rules; a znode that will not decode is named, not skipped.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from zkmodel import paths
from zkmodel.brokers import BrokerRegistration
from zkmodel.cluster import ClusterIdZnode
from zkmodel.election import ControllerZnode, decode_controller_epoch
from zkmodel.errors import ZnodeFormatError
from zkmodel.topics import PartitionState, TopicAssignment

if TYPE_CHECKING:
    from controller.zk.session import ZkSession

TP = tuple[str, int]


@dataclass(frozen=True)
class Broker:
    broker_id: int
    czxid: int  # a new registration (a restart, a new session) has a new czxid
    session: int  # the ephemeral owner: the broker's session
    ibp_znode_version: int


@dataclass
class Snapshot:
    cluster_id: str | None = None
    controller: int | None = None
    controller_session: int = 0
    epoch: int | None = None
    brokers: dict[int, Broker] = field(default_factory=dict)
    topics: dict[str, TopicAssignment] = field(default_factory=dict)
    states: dict[TP, PartitionState] = field(default_factory=dict)
    deleting: set[str] = field(default_factory=set)
    reassign_znode: bool = False
    min_isr: dict[str, int] = field(default_factory=dict)  # topics with a min.insync.replicas override
    malformed: list[str] = field(default_factory=list)
    #: Partitions the checks and waits do not judge (see :meth:`scoped`).
    out_of_scope: frozenset[TP] = frozenset()

    def replicas(self, tp: TP) -> tuple[int, ...]:
        t = self.topics.get(tp[0])
        return tuple(t.partitions.get(tp[1], ())) if t else ()

    def adding(self, tp: TP) -> tuple[int, ...]:
        t = self.topics.get(tp[0])
        return tuple(t.adding_replicas.get(tp[1], ())) if t else ()

    def reassigning(self) -> list[TP]:
        return sorted(
            (name, p)
            for name, t in self.topics.items()
            for p in set(t.adding_replicas) | set(t.removing_replicas)
            if (t.adding_replicas.get(p) or t.removing_replicas.get(p)) and (name, p) not in self.out_of_scope
        )

    def scoped(self, absent: frozenset[int]) -> Snapshot:
        """This snapshot without the partitions that have a replica on a broker the cluster does not run (a
        twin's production brokers that were offline or left out): those stay under-replicated, offline or mid-move
        whatever the rolls do, so judging them would judge the twin's shape, not the upgrade."""
        if not absent:
            return self
        out = {tp for tp in self.states if absent.intersection(self.replicas(tp))}
        out |= {(n, p) for n, t in self.topics.items() for p, r in t.partitions.items() if absent.intersection(r)}
        if not out:
            return self
        states = {tp: st for tp, st in self.states.items() if tp not in out}
        return dataclasses.replace(self, states=states, out_of_scope=frozenset(out))


def _decode_config(data: bytes | None) -> dict[str, str]:
    from zkmodel.configs import EntityConfig

    return dict(EntityConfig.decode("/config", data).config)


def read_state(session: ZkSession) -> Snapshot:
    snap = Snapshot()
    heads = session.read_data([paths.CLUSTER_ID, paths.CONTROLLER, paths.CONTROLLER_EPOCH, paths.REASSIGN_PARTITIONS])

    def decode(path: str, fn: object) -> object:
        found = heads.get(path)
        if found is None:
            return None
        try:
            return fn(path, found[0])  # type: ignore[operator]
        except ZnodeFormatError as exc:
            snap.malformed.append(str(exc))
            return None

    cid = decode(paths.CLUSTER_ID, ClusterIdZnode.decode)
    snap.cluster_id = cid.id if isinstance(cid, ClusterIdZnode) else None
    ctl = decode(paths.CONTROLLER, ControllerZnode.decode)
    if isinstance(ctl, ControllerZnode):
        snap.controller = ctl.broker_id
        found = heads.get(paths.CONTROLLER)
        snap.controller_session = found[1].ephemeralOwner if found else 0
    epoch = decode(paths.CONTROLLER_EPOCH, decode_controller_epoch)
    snap.epoch = epoch if isinstance(epoch, int) else None
    snap.reassign_znode = heads.get(paths.REASSIGN_PARTITIONS) is not None

    kids = session.read_children([paths.BROKER_IDS, paths.BROKER_TOPICS, paths.DELETE_TOPICS, "/config/topics"])
    ids = [int(c) for c in kids.get(paths.BROKER_IDS) or [] if c.isdigit()]
    topics = sorted(kids.get(paths.BROKER_TOPICS) or [])
    snap.deleting = set(kids.get(paths.DELETE_TOPICS) or [])
    configured = sorted(kids.get("/config/topics") or [])
    data = session.read_data(
        [paths.broker(i) for i in ids]
        + [paths.topic(t) for t in topics]
        + [paths.entity_config("topics", t) for t in configured]
    )
    for i in ids:
        found = data.get(paths.broker(i))
        if found is None:
            continue  # gone between the two reads: not registered
        try:
            version = BrokerRegistration.decode(paths.broker(i), found[0]).version
        except ZnodeFormatError as exc:
            snap.malformed.append(str(exc))
            continue
        snap.brokers[i] = Broker(i, found[1].czxid, found[1].ephemeralOwner, version)
    for t in topics:
        found = data.get(paths.topic(t))
        if found is None:
            continue
        try:
            snap.topics[t] = TopicAssignment.decode(paths.topic(t), found[0])
        except ZnodeFormatError as exc:
            snap.malformed.append(str(exc))
    for t in configured:
        found = data.get(paths.entity_config("topics", t))
        if found is None:
            continue
        try:
            value = _decode_config(found[0]).get("min.insync.replicas")
        except ZnodeFormatError as exc:
            snap.malformed.append(str(exc))
            continue
        if value is not None and value.strip().isdigit():
            snap.min_isr[t] = int(value)
    tps = [(t, p) for t, a in snap.topics.items() for p in a.partitions]
    states = session.read_data([paths.partition_state(t, p) for t, p in tps])
    for t, p in tps:
        found = states.get(paths.partition_state(t, p))
        if found is None:
            continue
        try:
            snap.states[(t, p)] = PartitionState.decode(paths.partition_state(t, p), found[0])
        except ZnodeFormatError as exc:
            snap.malformed.append(str(exc))
    return snap


def would_drop_below_min_isr(snap: Snapshot, broker_id: int, default_min_isr: int) -> list[str]:
    """Strimzi's ``KafkaAvailability.wouldAffectAvailability``, per partition holding the broker: a replica set
    no larger than min.insync.replicas is ignored (it can never satisfy it with one replica down); an ISR already
    below it blocks; an ISR exactly at it with the broker inside blocks. Returns why, one line per partition."""
    out = []
    for (topic, p), state in sorted(snap.states.items()):
        if topic in snap.deleting:
            continue
        replicas = snap.replicas((topic, p))
        if broker_id not in replicas:
            continue
        min_isr = snap.min_isr.get(topic, default_min_isr)
        if len(replicas) <= min_isr:
            continue
        isr = tuple(state.isr)
        if len(isr) < min_isr:
            out.append(f"{topic}-{p}: ISR {list(isr)} already below min.insync.replicas={min_isr}")
        elif len(isr) == min_isr and broker_id in isr:
            out.append(f"{topic}-{p}: ISR {list(isr)} is at min.insync.replicas={min_isr} and holds {broker_id}")
    return out


def missing_from_isr(snap: Snapshot, broker_id: int) -> list[str]:
    """Partitions the broker is a settled replica of but whose ISR lacks it (a replica still being added by a
    reassignment is not expected in the ISR yet; a topic being deleted is not waited for)."""
    out = []
    for tp, state in sorted(snap.states.items()):
        if tp[0] in snap.deleting:
            continue
        if broker_id in snap.replicas(tp) and broker_id not in snap.adding(tp) and broker_id not in state.isr:
            out.append(f"{tp[0]}-{tp[1]}: ISR {list(state.isr)}")
    return out


def offline(snap: Snapshot) -> list[str]:
    """Partitions without a live leader in their ISR (OfflinePartitionsCount), topics being deleted aside."""
    out = []
    for tp, state in sorted(snap.states.items()):
        if tp[0] in snap.deleting:
            continue
        if state.leader not in snap.brokers or state.leader not in state.isr:
            out.append(f"{tp[0]}-{tp[1]}: leader {state.leader}, ISR {list(state.isr)}")
    return out
