"""ElectLeaders (KIP-460: preferred and unclean elections), on the active controller."""

from __future__ import annotations

from typing import Any

from controller.wire.codec import Request, build, entity
from controller.wire.handlers.base import (
    ZERO,
    HandlerBase,
    call_wait,
    code,
    controller_call,
)
from controller.wire.server import Connection
from zkmodel import errorcodes as E
from zkmodel.admin import TopicPartition


class LeaderElectionApis(HandlerBase):
    async def elect_leaders(self, req: Request, _conn: Connection) -> Any:
        body = req.body
        election_type = int(getattr(body, "election_type", 0))
        timeout_ms = int(body.timeout.total_seconds() * 1000)
        wanted = (
            None
            if body.topic_partitions is None
            else [TopicPartition(t.topic, int(p)) for t in body.topic_partitions for p in t.partitions]
        )
        results, top, _message = await controller_call(
            self._active_controller(), lambda c: c.elect_leaders(election_type, wanted, timeout=call_wait(timeout_ms))
        )
        if top is not E.NONE:  # v0 has no top-level error: Kafka reports it on every partition
            results = {tp: (top, _message) for tp in wanted or []}
        topic_cls, part_cls = entity(req, "ReplicaElectionResult"), entity(req, "PartitionResult")
        by_topic: dict[str, list[Any]] = {}
        for tp, (err, msg) in sorted((results or {}).items()):
            by_topic.setdefault(tp.topic, []).append(
                build(part_cls, partition_id=tp.partition, error_code=code(err), error_message=msg)
            )
        return build(
            req.schema.ElectLeadersResponse,
            throttle_time=ZERO,
            error_code=code(top),
            replica_election_results=tuple(
                build(topic_cls, topic=n, partition_result=tuple(ps)) for n, ps in by_topic.items()
            ),
        )
