"""What exists only while this node is the active controller: its context, fenced writer, reassigner and
leadership, built together at failover and dropped together at resignation."""

from __future__ import annotations

from collections.abc import Callable

from controller.active.context import ControllerContext
from controller.active.leadership import Leadership
from controller.active.reassignment import Reassigner
from controller.zk.fenced_writer import FencedWriter
from controller.zk.session import ZkSession


class Active:
    """Everything that exists only while this node is the active controller."""

    def __init__(
        self,
        ctx: ControllerContext,
        writer: FencedWriter,
        session: ZkSession,
        uses_topic_ids: bool,
        on_reassignments_completed: Callable[[int], None] | None = None,
    ) -> None:
        self.ctx = ctx
        self.writer = writer
        self.reassigner = Reassigner(
            ctx, writer, session, uses_topic_ids=uses_topic_ids, on_completed=on_reassignments_completed
        )
        self.leadership = Leadership(ctx, writer, session, self.reassigner)
