"""What exists only while this node is the active controller: its context, fenced writer, reassigner and
leadership, built together at failover and dropped together at resignation."""

from __future__ import annotations

from controller.active.context import ControllerContext
from controller.active.leadership import Leadership
from controller.active.reassignment import Reassigner
from controller.zk.fenced_writer import FencedWriter


class Active:
    """Everything that exists only while this node is the active controller, around one epoch's reassigner
    (which holds the context, the fenced writer and the session the rest shares)."""

    def __init__(self, reassigner: Reassigner) -> None:
        self.ctx: ControllerContext = reassigner.ctx
        self.writer: FencedWriter = reassigner.writer
        self.reassigner = reassigner
        self.leadership = Leadership(reassigner.ctx, reassigner.writer, reassigner.session, reassigner)
