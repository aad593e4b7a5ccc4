"""The Kafka APIs a node serves outside the config, ACL, quota, SCRAM and SASL families, as one object.

Each family lives in its own module (:mod:`.metadata`, :mod:`.topics`, :mod:`.reassignments`,
:mod:`.elections`, :mod:`.inter_broker`); ``Apis`` puts them together for the node, which binds their
methods to API keys through :func:`controller.wire.apikeys.bind`.
"""

from __future__ import annotations

from typing import Any

from controller.wire.apikeys import bind
from controller.wire.handlers.base import NodeView
from controller.wire.handlers.elections import LeaderElectionApis
from controller.wire.handlers.inter_broker import InterBrokerApis
from controller.wire.handlers.metadata import MetadataApis
from controller.wire.handlers.reassignments import ReassignmentApis
from controller.wire.handlers.topics import TopicApis
from controller.wire.server import Handler

__all__ = ["Apis", "NodeView"]


class Apis(MetadataApis, TopicApis, ReassignmentApis, LeaderElectionApis, InterBrokerApis):
    def handlers(self) -> dict[int, Handler]:
        return bind(self)

    def raw_handlers(self) -> dict[int, Any]:
        return bind(self, raw=True)
