"""ACL znodes (``/kafka-acl*``) and their change notifications, in Kafka's AclAuthorizer format.

Literal resources live under ``/kafka-acl``; prefixed ones under ``/kafka-acl-extended/prefixed`` with
JSON change events, because pre-2.0 brokers only understood the literal store.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from zkmodel.errors import ZnodeFormatError
from zkmodel.fields import check_version, dumps, get_list, get_str, parse_object, utf8
from zkmodel.jvmorder import java_hashmap_order

WILDCARD_RESOURCE = "*"
WILDCARD_HOST = "*"
CLUSTER_NAME = "kafka-cluster"


def _pascal(enum_name: str) -> str:
    return "".join(part.capitalize() for part in enum_name.split("_"))


class _Named(Enum):
    """Enums stored in PascalCase and matched as SecurityUtils does (exact, or upper-case without '_')."""

    @property
    def pascal(self) -> str:
        return _pascal(self.name)

    @classmethod
    def parse(cls, text: str) -> "Any":
        wanted = text.replace("_", "").upper()
        for member in cls:
            if member.pascal == text or member.pascal.upper() == wanted:
                return member
        raise ValueError(f"unknown {cls.__name__} {text!r}")


class ResourceType(_Named):
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class AclOperation(_Named):
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class PermissionType(_Named):
    DENY = 2
    ALLOW = 3


class PatternType(_Named):
    LITERAL = 3
    PREFIXED = 4


@dataclass(frozen=True, order=True)
class AclEntry:
    principal: str
    permission_type: PermissionType
    host: str
    operation: AclOperation

    def as_json(self) -> dict[str, Any]:
        values = {
            "principal": self.principal,
            "permissionType": self.permission_type.pascal,
            "operation": self.operation.pascal,
            "host": self.host,
        }
        return {k: values[k] for k in java_hashmap_order(list(values))}


@dataclass(frozen=True)
class AclNode:
    """All ACLs of one resource; writers replace it with a CAS on the node's version."""

    acls: Sequence[AclEntry]

    def encode(self) -> bytes:
        values = {"version": 1, "acls": [a.as_json() for a in self.acls]}
        return dumps({k: values[k] for k in java_hashmap_order(["version", "acls"])})

    @classmethod
    def decode(cls, path: str, data: bytes | None) -> "AclNode":
        obj = parse_object(path, data)
        check_version(path, obj, (1,))
        out = []
        for i, raw in enumerate(get_list(path, obj, "acls")):
            if not isinstance(raw, dict):
                raise ZnodeFormatError(path, f"'acls'[{i}] must be an object")
            principal = get_str(path, raw, "principal")
            if ":" not in principal:
                raise ZnodeFormatError(path, f"principal {principal!r} is not of the form Type:name")
            permission_text, operation_text = get_str(path, raw, "permissionType"), get_str(path, raw, "operation")
            try:  # only the enum lookups: a ZnodeFormatError from the reads already names the path
                permission = PermissionType.parse(permission_text)
                operation = AclOperation.parse(operation_text)
            except ValueError as exc:
                raise ZnodeFormatError(path, f"'acls'[{i}]: {exc}") from None
            out.append(AclEntry(principal, permission, get_str(path, raw, "host"), operation))
        return cls(tuple(out))


@dataclass(frozen=True)
class ResourcePattern:
    resource_type: ResourceType
    name: str
    pattern_type: PatternType = PatternType.LITERAL


def encode_literal_acl_change(resource: ResourcePattern) -> bytes:
    """``/kafka-acl-changes`` payload: ``TOPIC:foo`` (Java enum name, a colon, the name)."""
    return f"{resource.resource_type.name}:{resource.name}".encode()


def decode_literal_acl_change(path: str, data: bytes | None) -> ResourcePattern:
    text = utf8(path, data)
    kind, sep, name = text.partition(":")
    if not sep:
        raise ZnodeFormatError(path, f"ACL change {text!r} is not of the form TYPE:name")
    try:
        resource_type = ResourceType.parse(kind)
    except ValueError as exc:
        raise ZnodeFormatError(path, str(exc)) from None
    return ResourcePattern(resource_type, name, PatternType.LITERAL)


def encode_extended_acl_change(resource: ResourcePattern) -> bytes:
    """``/kafka-acl-extended-changes`` payload, a Jackson bean (declaration order)."""
    return dumps(
        {
            "version": 1,
            "resourceType": resource.resource_type.name,
            "name": resource.name,
            "patternType": resource.pattern_type.name,
        }
    )


def decode_extended_acl_change(path: str, data: bytes | None) -> ResourcePattern:
    obj = parse_object(path, data)
    check_version(path, obj, (1,))
    try:
        resource_type = ResourceType.parse(get_str(path, obj, "resourceType"))
        pattern = PatternType.parse(get_str(path, obj, "patternType"))
    except ValueError as exc:
        raise ZnodeFormatError(path, str(exc)) from None
    if pattern is PatternType.LITERAL:
        raise ZnodeFormatError(path, "extended ACL change events are for non-literal patterns")
    return ResourcePattern(resource_type, get_str(path, obj, "name"), pattern)
