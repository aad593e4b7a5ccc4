"""Kafka's controller election: one multi creates ``/controller`` and bumps ``/controller_epoch``.

Because the epoch bump is conditional on the version just read, two candidates racing can never both
win, and the winner learns the epoch zkVersion that fences all of its later writes.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from controller.zk.errors import NOT_AS_EXPECTED, BadVersionError, NodeExistsError, NoNodeError, RolledBackError
from controller.zk.ops import Create, Op, SetData
from controller.zk.retry import Raced, until_settled
from controller.zk.session import ZkSession
from zkmodel import ibp, paths
from zkmodel.election import (
    INITIAL_CONTROLLER_EPOCH,
    ControllerZnode,
    decode_controller_epoch,
    encode_controller_epoch,
)
from zkmodel.errors import ZnodeFormatError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Elected:
    epoch: int
    epoch_zk_version: int


def active_controller(session: ZkSession, watch: object = None) -> int | None:
    """The broker id in ``/controller``, or None. An unreadable payload counts as no usable controller id
    but is logged: a foreign tool wrote it."""
    found = session.get(paths.CONTROLLER, watch=watch)  # type: ignore[arg-type]
    if found is None:
        return None
    try:
        return ControllerZnode.decode(paths.CONTROLLER, found[0]).broker_id
    except ZnodeFormatError as exc:
        log.error("unreadable /controller: %s", exc)
        return -1


def read_epoch(session: ZkSession) -> tuple[int, int]:
    """(epoch, zkVersion) of ``/controller_epoch``, creating it as "0" when absent, as Kafka does."""

    def attempt() -> tuple[int, int]:
        found = session.get(paths.CONTROLLER_EPOCH)
        if found is not None:
            data, stat = found
            return decode_controller_epoch(paths.CONTROLLER_EPOCH, data), stat.version
        if session.create_only(paths.CONTROLLER_EPOCH, encode_controller_epoch(INITIAL_CONTROLLER_EPOCH)):
            return INITIAL_CONTROLLER_EPOCH, 0
        raise Raced("/controller_epoch created by someone else since we looked")  # read what they wrote

    return until_settled(attempt, max_attempts=None)


def controller_payload(broker_id: int, version: ibp.MetadataVersion) -> bytes:
    return ControllerZnode(
        broker_id=broker_id,
        timestamp=int(time.time() * 1000),
        version=ibp.controller_znode_version(version),
    ).encode()


def try_elect(session: ZkSession, broker_id: int, version: ibp.MetadataVersion) -> Elected | None:
    """Run one election attempt. None if another broker is (or just became) the controller."""
    if session.exists(paths.CONTROLLER) is not None:
        return None
    epoch, zk_version = read_epoch(session)
    ops: list[Op] = [
        Create(paths.CONTROLLER, controller_payload(broker_id, version), ephemeral=True),
        SetData(paths.CONTROLLER_EPOCH, encode_controller_epoch(epoch + 1), zk_version),
    ]
    results = session.multi(ops, what="controller election", write="election")
    if not any(isinstance(r, Exception) for r in results):
        stat = results[1]
        log.info("broker %d elected controller with epoch %d (epoch zkVersion %d)", broker_id, epoch + 1, stat.version)
        return Elected(epoch + 1, stat.version)
    failure = next(r for r in results if isinstance(r, Exception) and not isinstance(r, RolledBackError))
    if isinstance(failure, NodeExistsError | BadVersionError):
        # Kafka's checkControllerAndEpoch: a retried multi may have succeeded the first time.
        if active_controller(session) == broker_id:
            now_epoch, now_version = read_epoch(session)
            if now_epoch == epoch + 1:
                return Elected(now_epoch, now_version)
        return None
    if isinstance(failure, NoNodeError):
        return None
    raise failure


def release_own_controller_znode(session: ZkSession) -> bool:
    """Delete ``/controller`` if this session owns it. Safe without a fence: an ephemeral node can only change
    owner after its owner's session ends, and a call on an ended session fails."""
    stat = session.exists(paths.CONTROLLER)
    if stat is None or stat.ephemeralOwner != session.session_id:
        return False
    try:
        session.delete(paths.CONTROLLER, stat.version, write="election")
    except NOT_AS_EXPECTED:  # gone, or replaced, since the exists above: not ours to release
        return False
    log.info("released /controller owned by this session (0x%x)", session.session_id)
    return True
