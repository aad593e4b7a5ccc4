"""Shared by the handler families: the node as the handlers see it (:class:`NodeView`), the common base with the way
to the active controller, and small codecs (error codes, Kafka's base64 UUIDs).
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import uuid
from collections import Counter
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from kio.schema.errors import ErrorCode

from controller.active.api import CALL_TIMEOUT_S, ControllerApi
from controller.wire.apikeys import SUPPORTED, bind
from controller.wire.authz import ALLOW_ALL, Authz
from controller.wire.dispatch import routed_as_controller
from zkmodel import errorcodes as E
from zkmodel.errorcodes import KafkaApiError, KafkaError

if TYPE_CHECKING:  # a store family passes the node's session to the stores, never calls it
    from controller.wire.server import Handler
    from controller.zk.session import ZkSession

ZERO = datetime.timedelta(0)
NULL_UUID = uuid.UUID(int=0)
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)
H = TypeVar("H", bound=Hashable)


#: What we advertise (a Kafka-3.9-like set inside what kio decodes; reference/kafka-clients.md §1.3).
class Cache(Protocol):
    def snapshot(self) -> Any: ...

    def wait_for(self, predicate: Callable[[Any], bool], timeout: float) -> Any: ...


@dataclass
class NodeView:
    """What the handlers need from the node."""

    broker_id: int
    cluster_id: str
    cache: Cache
    controller: ControllerApi | None
    default_partitions: int
    default_replication_factor: int
    #: What this node advertises in ApiVersions (the Envelope only at or above the forwarding gate).
    supported: dict[int, tuple[int, int]] = field(default_factory=lambda: dict(SUPPORTED))
    authz: Authz = ALLOW_ALL
    #: The ZooKeeper session admin writes go through: the controller identity's while this node is the
    #: active controller, the broker identity's otherwise (None: the node's one session).
    write_session: Callable[[], Any] | None = None
    #: How long an entity-config write waits for a controller to exist before failing (request.timeout.ms).
    controller_wait_s: float = 0.0

    def writes(self, default: Any) -> Any:
        """The session an admin write goes through: ``write_session()`` if the node has one, else ``default``."""
        return self.write_session() if self.write_session is not None else default


def repeated(values: Iterable[H]) -> set[H]:
    """The values that occur more than once: a request's duplicate names, found in one pass (a count per entry
    was a million comparisons for a 1,000-topic batch)."""
    return {v for v, n in Counter(values).items() if n > 1}


def code(error: KafkaError) -> ErrorCode:
    return ErrorCode(error.code)


def kafka_uuid(text: str | None) -> uuid.UUID:
    if not text:
        return NULL_UUID
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=="))


def uuid_text(value: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode()


class HandlerBase:
    """What every handler family shares: the node's view and the way to the active controller."""

    def __init__(self, node: NodeView) -> None:
        self.node = node

    def _active_controller(self) -> ControllerApi | None:
        """The controller to call if this node is the active controller: by the dispatcher's answer for this
        request when it asked (:func:`~controller.wire.dispatch.routed_as_controller`), else by asking now."""
        c = self.node.controller
        if c is None:
            return None
        routed = routed_as_controller()
        return c if (c.is_active if routed is None else routed) else None

    async def _wait(self, predicate: Callable[[Any], bool], timeout_s: float) -> bool:
        try:
            await asyncio.to_thread(self.node.cache.wait_for, predicate, timeout_s)
            return True
        except TimeoutError:
            return False


class StoreApis:
    """What the handler families over the ZooKeeper stores (``store/``: configs, quotas, SCRAM) share: the
    node's view and the session the node's admin writes go through; its handlers are its methods apikeys names."""

    def __init__(self, node: NodeView, session: ZkSession) -> None:
        self.node = node
        self.session = session

    def handlers(self) -> dict[int, Handler]:
        return bind(self)


NOT_CONTROLLER_TOP = (E.NOT_CONTROLLER, "This is not the correct controller for this cluster.")


def controller_error(exc: KafkaApiError) -> tuple[KafkaError, str | None]:
    """The (error, message) answer for a controller call that failed with ``exc``. The controller thread already
    chose it: NOT_CONTROLLER when the call never ran (it was not the active controller when its turn came), the
    in-doubt REQUEST_TIMED_OUT when ZooKeeper failed under a call that had started (``Controller._api``)."""
    return exc.error, exc.message


async def controller_call(
    controller: ControllerApi | None, fn: Callable[[ControllerApi], Any]
) -> tuple[Any, KafkaError, str | None]:
    """Run a blocking controller call off the event loop; a non-controller (or one that just lost the
    election) answers NOT_CONTROLLER as a top-level error, a call cut short by ZooKeeper REQUEST_TIMED_OUT
    (:func:`controller_error`)."""
    if controller is None:
        return None, *NOT_CONTROLLER_TOP
    try:
        return await asyncio.to_thread(fn, controller), E.NONE, None
    except KafkaApiError as exc:
        return None, *controller_error(exc)


def call_wait(timeout_ms: int) -> float:
    """How long a request waits for the controller thread: its own ``timeout_ms``, or the default when it
    asks not to wait (KIP-4's 0: the work must still be accepted, only its completion is not awaited)."""
    return timeout_ms / 1000 if timeout_ms > 0 else CALL_TIMEOUT_S
