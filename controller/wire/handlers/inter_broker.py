"""What brokers ask the controller: AlterPartition (ISR changes, KIP-497) and ControlledShutdown (hand-coded v3)."""

from __future__ import annotations

from typing import Any

from controller.active.api import IsrUpdate
from controller.wire import controlled_shutdown
from controller.wire.codec import Request, build, entity
from controller.wire.handlers.base import (
    ZERO,
    HandlerBase,
    code,
    controller_call,
    uuid_text,
)
from controller.wire.server import Connection
from zkmodel import errorcodes as E
from zkmodel.kafka_acls import AclOperation


class InterBrokerApis(HandlerBase):
    async def controlled_shutdown(self, frame: bytes, conn: Connection) -> bytes | None:
        """Move leadership off a stopping broker and drop it from ISRs; answer what it still leads."""
        try:
            correlation, broker_id, broker_epoch = controlled_shutdown.decode_request(frame)
        except controlled_shutdown.ShutdownCodecError:
            return None
        if not self.node.authz.cluster(conn, AclOperation.CLUSTER_ACTION):
            return controlled_shutdown.encode_response(correlation, E.CLUSTER_AUTHORIZATION_FAILED.code, [])
        outcome, top, _message = await controller_call(
            self._active_controller(), lambda c: c.controlled_shutdown(broker_id, broker_epoch)
        )
        if outcome is not None:
            top, remaining = outcome
        else:
            remaining = []
        return controlled_shutdown.encode_response(correlation, top.code, remaining)

    async def alter_partition(self, req: Request, _conn: Connection) -> Any:
        """From partition leaders: ISR changes, applied by the controller with Kafka's epoch checks."""
        body = req.body
        updates: dict[tuple[str, int], IsrUpdate] = {}
        for topic in body.topics:
            for p in topic.partitions:
                isr = (
                    tuple(int(b.broker_id) for b in p.new_isr_with_epochs)
                    if hasattr(p, "new_isr_with_epochs")
                    else tuple(int(b) for b in p.new_isr)
                )
                updates[(uuid_text(topic.topic_id), p.partition_index)] = IsrUpdate(
                    int(p.leader_epoch), isr, int(p.partition_epoch), int(p.leader_recovery_state)
                )
        controller = self._active_controller()
        outcome, top, _message = await controller_call(
            controller,
            lambda c: c.alter_partition_by_id(body.broker_id, body.broker_epoch, updates, version=req.api_version),
        )
        if outcome is not None:
            top, results = outcome
        else:
            results = {}
        topic_cls, part_cls = entity(req, "TopicData"), entity(req, "PartitionData")
        topics = []
        for topic in body.topics if top is E.NONE else ():
            parts = []
            for p in topic.partitions:
                r = results.get((uuid_text(topic.topic_id), p.partition_index))
                state = r.state if r is not None else None
                parts.append(
                    build(
                        part_cls,
                        partition_index=p.partition_index,
                        error_code=code(r.error if r is not None else E.UNKNOWN_SERVER_ERROR),
                        leader_id=state.leader if state else -1,
                        leader_epoch=state.leader_epoch if state else -1,
                        isr=tuple(state.isr) if state else (),
                        leader_recovery_state=state.leader_recovery_state if state else 0,
                        partition_epoch=r.partition_epoch if r is not None else -1,
                    )
                )
            topics.append(build(topic_cls, topic_id=topic.topic_id, partitions=tuple(parts)))
        return build(req.schema.AlterPartitionResponse, throttle_time=ZERO, error_code=code(top), topics=tuple(topics))
