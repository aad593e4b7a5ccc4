"""The authorization checks every API handler makes, as Kafka's AuthHelper makes them.

Without ``authorizer.class.name`` every request is allowed, as in Kafka. With it, checks go to the ACL
authorizer as the connection's principal from the client's address (for a forwarded request: the inner
principal and the original client's address, carried in the Envelope).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from controller.wire.server import Connection
from zkmodel.kafka_acls import AclOperation, ResourceType

CLUSTER_NAME = "kafka-cluster"


class Authorizer(Protocol):
    def authorize(
        self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType, name: str
    ) -> bool: ...


class Authz:
    def __init__(self, authorizer: Authorizer | None = None, *, version: Any = None) -> None:
        self.authorizer = authorizer
        #: Something whose value changes whenever the ACLs do (cached responses include it in their keys).
        self._version = version

    @property
    def enabled(self) -> bool:
        return self.authorizer is not None

    def version(self) -> Any:
        return self._version() if callable(self._version) else None

    def allowed(self, conn: Connection, operation: AclOperation, resource_type: ResourceType, name: str) -> bool:
        if self.authorizer is None:
            return True
        return self.authorizer.authorize(str(conn.principal), conn.peer_host, operation, resource_type, name)

    def cluster(self, conn: Connection, operation: AclOperation) -> bool:
        return self.allowed(conn, operation, ResourceType.CLUSTER, CLUSTER_NAME)

    def topic(self, conn: Connection, operation: AclOperation, name: str) -> bool:
        return self.allowed(conn, operation, ResourceType.TOPIC, name)

    def topics(self, conn: Connection, operation: AclOperation, names: Iterable[str]) -> set[str]:
        """The names ``operation`` is allowed on (Kafka's filterByAuthorized)."""
        if self.authorizer is None:
            return set(names)
        return {n for n in set(names) if self.topic(conn, operation, n)}

    def operations(self, conn: Connection, resource_type: ResourceType, name: str) -> int:
        """KIP-430 authorized operations: a bit per supported operation the client may perform
        (AuthHelper.authorizedOperations; every supported one without an authorizer)."""
        bits = 0
        for operation in SUPPORTED_OPERATIONS[resource_type]:
            if self.allowed(conn, operation, resource_type, name):
                bits |= 1 << operation.value
        return bits


#: AclEntry.supportedOperations for the resources whose operations clients ask about.
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (
        AclOperation.READ,
        AclOperation.WRITE,
        AclOperation.CREATE,
        AclOperation.DESCRIBE,
        AclOperation.DELETE,
        AclOperation.ALTER,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
    ),
    ResourceType.CLUSTER: (
        AclOperation.CREATE,
        AclOperation.CLUSTER_ACTION,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
        AclOperation.IDEMPOTENT_WRITE,
        AclOperation.ALTER,
        AclOperation.DESCRIBE,
    ),
}

ALLOW_ALL = Authz()
