"""DescribeAcls (29), CreateAcls (30) and DeleteAcls (31), answered as a broker configured with Kafka's
ZooKeeper AclAuthorizer does (AclApis.scala), over the ACL store in :mod:`controller.store.kafka_acls`.

Validation follows Kafka: UNKNOWN enum values (Kafka's ``fromCode`` maps every unrecognised code to
UNKNOWN) are refused with INVALID_REQUEST: per creation for CreateAcls, top-level for DescribeAcls, and on
every filter for DeleteAcls (where Kafka refuses the whole request). ANY/MATCH are only valid in filters.
Who may call these APIs (cluster ALTER/DESCRIBE) is not checked here yet.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
from collections.abc import Callable
from enum import Enum
from typing import TYPE_CHECKING, Any, TypeVar

from kio.schema.errors import ErrorCode

from controller.store import kafka_acls as acl_store
from controller.store.errors import STORE_ERRORS, zk_error
from controller.store.kafka_acls import AclBinding, AclBindingFilter, FilterPattern
from controller.wire.apikeys import bind, error_response
from controller.wire.codec import Request, build, entity
from controller.wire.server import Connection, Handler
from zkmodel import errorcodes as E
from zkmodel.errorcodes import KafkaError
from zkmodel.kafka_acls import AclEntry, AclOperation, PatternType, PermissionType, ResourcePattern, ResourceType

if TYPE_CHECKING:  # the handler passes the node's session to the stores, never calls it
    from controller.zk.session import ZkSession

log = logging.getLogger(__name__)

ZERO = datetime.timedelta(0)
#: Kafka's wire code for ANY in ResourceType, PatternType, AclOperation and AclPermissionType.
ANY_CODE = 1
MATCH_CODE = 2

E_ = TypeVar("E_", bound=Enum)


class _Unknown(Exception):
    pass


def _decode(enum_cls: type[E_], value: int, *, any_ok: bool) -> E_ | None:
    """The member with Kafka code ``value``; None for ANY (if ``any_ok``). Raises _Unknown otherwise."""
    if value == ANY_CODE and any_ok:
        return None
    try:
        return enum_cls(int(value))
    except ValueError:
        raise _Unknown(enum_cls) from None


def _code(error: KafkaError) -> ErrorCode:
    return ErrorCode(error.code)


def parse_creation(c: Any) -> AclBinding | str:
    """A CreateAcls creation as a binding, or why Kafka refuses it (checked in Kafka's order: UNKNOWN
    elements, then the ResourcePattern and AccessControlEntry constructors, then AclApis/AclAuthorizer)."""
    pattern_code = int(c.resource_pattern_type)
    try:
        resource_type = _decode(ResourceType, c.resource_type, any_ok=True)
        pattern_type = (
            None if pattern_code in (ANY_CODE, MATCH_CODE) else _decode(PatternType, pattern_code, any_ok=False)
        )
        operation = _decode(AclOperation, c.operation, any_ok=True)
        permission = _decode(PermissionType, c.permission_type, any_ok=True)
    except _Unknown:
        return "Failed to create ACL: ACL binding contains unknown elements"
    if resource_type is None:
        return "resourceType must not be ANY"
    if pattern_type is None:
        return f"patternType must not be {'ANY' if pattern_code == ANY_CODE else 'MATCH'}"
    if operation is None:
        return "operation must not be ANY"
    if permission is None:
        return "permissionType must not be ANY"
    binding = AclBinding(
        ResourcePattern(resource_type, c.resource_name, pattern_type),
        AclEntry(c.principal, permission, c.host, operation),
    )
    return acl_store.validate_binding(binding) or binding


def parse_filter(f: Any) -> AclBindingFilter | None:
    """A DescribeAcls request or DeleteAcls filter as a binding filter; None if it has UNKNOWN elements."""
    pattern_code = int(f.pattern_type_filter)
    try:
        pattern_type: PatternType | FilterPattern | None
        if pattern_code in (ANY_CODE, MATCH_CODE):
            pattern_type = FilterPattern(pattern_code)
        else:
            pattern_type = _decode(PatternType, pattern_code, any_ok=False)
        assert pattern_type is not None
        return AclBindingFilter(
            resource_type=_decode(ResourceType, f.resource_type_filter, any_ok=True),
            name=f.resource_name_filter,
            pattern_type=pattern_type,
            principal=f.principal_filter,
            host=f.host_filter,
            operation=_decode(AclOperation, f.operation, any_ok=True),
            permission_type=_decode(PermissionType, f.permission_type, any_ok=True),
        )
    except _Unknown:
        return None


def _read_failure(exc: BaseException) -> tuple[KafkaError, str | None]:
    """Reading the ACLs failed: ZooKeeper away or slow is the retriable REQUEST_TIMED_OUT (nothing was
    changed yet), anything else UNKNOWN_SERVER_ERROR without a message, as Kafka's unexpected exceptions."""
    error = zk_error(exc) if isinstance(exc, STORE_ERRORS) else E.UNKNOWN_SERVER_ERROR
    if error is E.REQUEST_TIMED_OUT:
        return error, f"ZooKeeper did not answer the ACL read in time ({type(exc).__name__})"
    return error, None


def _sort_key(pattern: ResourcePattern) -> tuple[int, int, str]:
    return pattern.resource_type.value, pattern.pattern_type.value, pattern.name


NO_AUTHORIZER = "No Authorizer is configured on the broker"


class AclApis:
    def __init__(
        self,
        session: ZkSession,
        write_session: Callable[[], ZkSession] | None = None,
        *,
        authorizer_configured: bool = True,
    ) -> None:
        #: Kafka answers the ACL APIs with SECURITY_DISABLED when the broker has no authorizer.
        self.authorizer_configured = authorizer_configured
        self.session = session
        self.write_session = write_session

    def _write_session(self) -> ZkSession:
        return self.write_session() if self.write_session is not None else self.session

    def handlers(self) -> dict[int, Handler]:
        return bind(self)

    async def describe_acls(self, req: Request, _conn: Connection) -> Any:
        body = req.body
        response_cls = req.schema.DescribeAclsResponse
        if not self.authorizer_configured:
            return build(
                response_cls,
                throttle_time=ZERO,
                error_code=_code(E.SECURITY_DISABLED),
                error_message=NO_AUTHORIZER,
                resources=(),
            )
        f = parse_filter(body)
        if f is None:
            return build(
                response_cls,
                throttle_time=ZERO,
                error_code=_code(E.INVALID_REQUEST),
                error_message="DescribeAclsRequest contains UNKNOWN elements",
                resources=(),
            )
        try:
            acls = await asyncio.to_thread(acl_store.list_acls, self.session)
        except Exception as exc:
            log.warning("DescribeAcls: cannot read ACLs: %r", exc)
            error, message = _read_failure(exc)
            return build(response_cls, throttle_time=ZERO, error_code=_code(error), error_message=message, resources=())
        resource_cls, acl_cls = entity(req, "DescribeAclsResource"), entity(req, "AclDescription")
        resources = tuple(
            build(
                resource_cls,
                resource_type=pattern.resource_type.value,
                resource_name=pattern.name,
                pattern_type=pattern.pattern_type.value,
                acls=tuple(
                    build(
                        acl_cls,
                        principal=e.principal,
                        host=e.host,
                        operation=e.operation.value,
                        permission_type=e.permission_type.value,
                    )
                    for e in entries
                ),
            )
            for pattern, entries in sorted(acl_store.filter_acls(acls, f).items(), key=lambda kv: _sort_key(kv[0]))
        )
        return build(
            response_cls, throttle_time=ZERO, error_code=ErrorCode.none, error_message=None, resources=resources
        )

    async def create_acls(self, req: Request, _conn: Connection) -> Any:
        if not self.authorizer_configured:
            return error_response(req, E.SECURITY_DISABLED, NO_AUTHORIZER)
        parsed = [parse_creation(c) for c in req.body.creations]
        valid = [p for p in parsed if isinstance(p, AclBinding)]
        results: list[tuple[KafkaError, str | None]] = []
        if valid:
            results = await asyncio.to_thread(acl_store.create_acls, self._write_session(), valid)
        stored = iter(results)
        result_cls = entity(req, "AclCreationResult")
        out = []
        for p in parsed:
            error, message = (E.INVALID_REQUEST, p) if isinstance(p, str) else next(stored)
            out.append(build(result_cls, error_code=_code(error), error_message=message))
        return build(req.schema.CreateAclsResponse, throttle_time=ZERO, results=tuple(out))

    async def delete_acls(self, req: Request, _conn: Connection) -> Any:
        if not self.authorizer_configured:
            return error_response(req, E.SECURITY_DISABLED, NO_AUTHORIZER)
        filters = [parse_filter(f) for f in req.body.filters]
        result_cls, acl_cls = entity(req, "DeleteAclsFilterResult"), entity(req, "DeleteAclsMatchingAcl")
        response_cls = req.schema.DeleteAclsResponse
        if any(f is None for f in filters):  # Kafka refuses the whole request
            bad = build(
                result_cls,
                error_code=_code(E.INVALID_REQUEST),
                error_message="Filters contain UNKNOWN elements",
                matching_acls=(),
            )
            return build(response_cls, throttle_time=ZERO, filter_results=tuple(bad for _ in filters))
        good = [f for f in filters if f is not None]
        try:
            deleted, filter_errors = (
                await asyncio.to_thread(acl_store.delete_acls_checked, self._write_session(), good)
                if good
                else ([], [])
            )
        except Exception as exc:
            log.warning("DeleteAcls: cannot read ACLs: %r", exc)
            error, message = _read_failure(exc)
            failed = build(result_cls, error_code=_code(error), error_message=message, matching_acls=())
            return build(response_cls, throttle_time=ZERO, filter_results=tuple(failed for _ in good))
        out = []
        for bindings, filter_error in zip(deleted, filter_errors, strict=True):
            matching = tuple(
                build(
                    acl_cls,
                    error_code=_code(d.error),
                    error_message=d.message,
                    resource_type=d.binding.pattern.resource_type.value,
                    resource_name=d.binding.pattern.name,
                    pattern_type=d.binding.pattern.pattern_type.value,
                    principal=d.binding.entry.principal,
                    host=d.binding.entry.host,
                    operation=d.binding.entry.operation.value,
                    permission_type=d.binding.entry.permission_type.value,
                )
                for d in bindings
            )
            # Kafka reports a failed deletion on the binding only; the filter carries it too, because some
            # clients (kafka-python 3) drop binding errors and would take a failed delete for a done one.
            error, message = filter_error or next(
                ((d.error, d.message) for d in bindings if d.error is not E.NONE), (E.NONE, None)
            )
            out.append(build(result_cls, error_code=_code(error), error_message=message, matching_acls=matching))
        return build(response_cls, throttle_time=ZERO, filter_results=tuple(out))
