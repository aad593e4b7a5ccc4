"""Kafka's ACLs in ZooKeeper, stored and changed exactly as Kafka's AclAuthorizer does (ZooKeeper mode). The
ZooKeeper ACLs of znodes are :mod:`controller.store.znode_acls`'s.

Every resource pattern is one znode holding all its ACLs (``/kafka-acl/<Type>/<name>`` for literal
patterns, ``/kafka-acl-extended/prefixed/<Type>/<name>`` for prefixed ones). Writers replace a node's
ACL set with a compare-and-set on the node's own version (create if absent, setData at the version read,
delete at that version when the last ACL goes) and retry on a lost race. Each change is announced with a
sequential node in the pattern type's change store, which is what brokers watch to refresh their caches.

The filter semantics (:func:`matches`) are Kafka's ``AclBindingFilter.matches``: ``None`` fields match
anything, ``FilterPattern.ANY`` matches every pattern type, ``FilterPattern.MATCH`` matches the patterns
that would apply to a resource of that name (literal exact, literal ``*``, prefixes of the name).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import Enum

from tenacity import wait_fixed, wait_random

from controller.store.errors import zk_error
from controller.zk import cas
from controller.zk.errors import NOT_AS_EXPECTED, AdminWriteFenced, BadVersionError, NoNodeError, ZkUnavailable
from controller.zk.session import ZkSession
from zkmodel import errorcodes as E
from zkmodel import paths
from zkmodel.errorcodes import KafkaApiError, KafkaError
from zkmodel.errors import ZnodeFormatError
from zkmodel.kafka_acls import (
    WILDCARD_RESOURCE,
    AclEntry,
    AclNode,
    AclOperation,
    PatternType,
    PermissionType,
    ResourcePattern,
    ResourceType,
    encode_extended_acl_change,
    encode_literal_acl_change,
)

log = logging.getLogger(__name__)

#: AclAuthorizer.maxUpdateRetries and its backoff (100 ms + up to 50 ms jitter).
MAX_UPDATE_RETRIES = 10
RETRY_BACKOFF_S = 0.1
RETRY_JITTER_S = 0.05

#: The pattern types that have a store, and so the stores list_acls reads.
STORED_PATTERN_TYPES = (PatternType.LITERAL, PatternType.PREFIXED)


class FilterPattern(Enum):
    """Pattern types only a filter may use (Kafka's PatternType.ANY and MATCH)."""

    ANY = 1
    MATCH = 2


@dataclass(frozen=True)
class AclBinding:
    pattern: ResourcePattern
    entry: AclEntry


@dataclass(frozen=True)
class AclBindingFilter:
    """Kafka's AclBindingFilter; ``None`` means ANY (resource type, operation, permission) or any value."""

    resource_type: ResourceType | None = None
    name: str | None = None
    pattern_type: PatternType | FilterPattern = FilterPattern.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation | None = None
    permission_type: PermissionType | None = None


ANY_FILTER = AclBindingFilter()


# -- matching (pure) -----------------------------------------------------------------------------------
def pattern_matches(f: AclBindingFilter, pattern: ResourcePattern) -> bool:
    """ResourcePatternFilter.matches."""
    if f.resource_type is not None and f.resource_type is not pattern.resource_type:
        return False
    if isinstance(f.pattern_type, PatternType) and f.pattern_type is not pattern.pattern_type:
        return False
    if f.name is None:
        return True
    if f.pattern_type is FilterPattern.ANY or f.pattern_type is pattern.pattern_type:
        return f.name == pattern.name
    # MATCH: the patterns that apply to a resource named f.name.
    if pattern.pattern_type is PatternType.LITERAL:
        return f.name == pattern.name or pattern.name == WILDCARD_RESOURCE
    return f.name.startswith(pattern.name)


def entry_matches(f: AclBindingFilter, entry: AclEntry) -> bool:
    """AccessControlEntryFilter.matches."""
    if f.principal is not None and f.principal != entry.principal:
        return False
    if f.host is not None and f.host != entry.host:
        return False
    if f.operation is not None and f.operation is not entry.operation:
        return False
    return f.permission_type is None or f.permission_type is entry.permission_type


def matches(f: AclBindingFilter, pattern: ResourcePattern, entry: AclEntry) -> bool:
    """AclBindingFilter.matches for the binding (pattern, entry)."""
    return pattern_matches(f, pattern) and entry_matches(f, entry)


def filter_acls(
    acls: dict[ResourcePattern, tuple[AclEntry, ...]], f: AclBindingFilter
) -> dict[ResourcePattern, tuple[AclEntry, ...]]:
    """The bindings of ``acls`` that ``f`` matches, grouped by resource (resources with none left out)."""
    out: dict[ResourcePattern, tuple[AclEntry, ...]] = {}
    for pattern, entries in acls.items():
        if pattern_matches(f, pattern):
            kept = tuple(e for e in entries if entry_matches(f, e))
            if kept:
                out[pattern] = kept
    return out


def validate_binding(binding: AclBinding) -> str | None:
    """Why Kafka (AclApis + AclAuthorizer) refuses to create this binding, or None. The enums already
    exclude UNKNOWN/ANY/MATCH; this is the rest: cluster name, empty or '/'-containing names, principals."""
    pattern, entry = binding.pattern, binding.entry
    if pattern.resource_type is ResourceType.CLUSTER and pattern.name != "kafka-cluster":
        return "The only valid name for the CLUSTER resource is kafka-cluster"
    if not pattern.name:
        return "Invalid empty resource name"
    if "/" in pattern.name:
        return f"Failed to create ACL: ACL binding contains invalid resource name: {pattern.name}"
    if ":" not in entry.principal:
        return f"expected a string in format principalType:principalName but got {entry.principal}"
    return None


# -- reading -------------------------------------------------------------------------------------------
def resource_path(pattern: ResourcePattern) -> str:
    return paths.acl(pattern.resource_type, pattern.name, pattern.pattern_type)


def _type_dirs(session: ZkSession, pattern_type: PatternType) -> dict[str, ResourceType]:
    store = paths.acl_store(pattern_type)
    out: dict[str, ResourceType] = {}
    for child in session.get_children(store) or []:
        try:
            out[f"{store}/{child}"] = ResourceType.parse(child)
        except ValueError:
            log.warning("skipping unknown ACL resource type directory %s/%s", store, child)
    return out


#: What an authorizer puts in place of a resource's unreadable ACL node: nobody but super users gets in.
#: Kafka refuses to start on such a node; skipping it instead could drop a DENY and open the resource.
FAIL_CLOSED: tuple[AclEntry, ...] = (
    AclEntry(principal="User:*", permission_type=PermissionType.DENY, host="*", operation=AclOperation.ALL),
)


def list_acls(
    session: ZkSession, *, timeout: float = 30.0, fail_closed: bool = False
) -> dict[ResourcePattern, tuple[AclEntry, ...]]:
    """Every ACL in ZooKeeper, by resource pattern (what AclAuthorizer.loadCache reads). Nodes that are
    unreadable or not in Kafka's format are logged and skipped, or with ``fail_closed`` (for authorizing)
    stand as :data:`FAIL_CLOSED`; empty nodes are left out."""
    dirs: dict[str, tuple[ResourceType, PatternType]] = {}
    for pattern_type in STORED_PATTERN_TYPES:
        for path, resource_type in _type_dirs(session, pattern_type).items():
            dirs[path] = (resource_type, pattern_type)
    children = session.read_children(list(dirs), timeout=timeout)
    nodes: dict[str, ResourcePattern] = {}
    for path, names in children.items():
        resource_type, pattern_type = dirs[path]
        for name in names or []:
            nodes[f"{path}/{name}"] = ResourcePattern(resource_type, name, pattern_type)
    data = session.read_data(list(nodes), timeout=timeout)
    out: dict[ResourcePattern, tuple[AclEntry, ...]] = {}
    for path, pattern in sorted(nodes.items()):
        result = data.get(path)
        if result is None:
            continue  # deleted between the listing and the read
        try:
            entries = tuple(AclNode.decode(path, result[0]).acls)
        except ZnodeFormatError as exc:
            if fail_closed:
                log.warning("ACL node %s is unreadable; denying everyone but super users on it: %s", path, exc)
                out[pattern] = FAIL_CLOSED
            else:
                log.warning("skipping unreadable ACL node %s: %s", path, exc)
            continue
        if entries:
            out[pattern] = entries
    return out


def read_resource(session: ZkSession, pattern: ResourcePattern) -> tuple[tuple[AclEntry, ...], int | None]:
    """The resource's ACLs and its node's version (None when the node does not exist)."""
    path = resource_path(pattern)
    got = session.get(path)
    if got is None:
        return (), None
    data, stat = got
    try:
        return tuple(AclNode.decode(path, data).acls), stat.version
    except ZnodeFormatError as exc:
        raise KafkaApiError(E.UNKNOWN_SERVER_ERROR, f"ACL node {path} is not in Kafka's format: {exc}") from None


# -- writing -------------------------------------------------------------------------------------------
def _create(session: ZkSession, path: str, data: bytes) -> bool:
    """createAclsForResourceIfNotExists: create (parents with null data) unless it exists."""
    try:
        return session.create_only(path, data, write="acl")
    except NoNodeError:
        session.ensure_persistent([path.rsplit("/", 1)[0]])
        return session.create_only(path, data, write="acl")


def _set(session: ZkSession, path: str, data: bytes, version: int) -> bool:
    try:
        session.set_if_version(path, data, version, write="acl")
        return True
    except NOT_AS_EXPECTED:  # changed or deleted since it was read: the caller reads again
        return False


def _delete(session: ZkSession, path: str, version: int) -> bool:
    """KafkaZkClient.conditionalDelete: gone already counts as done."""
    try:
        session.delete(path, version, write="acl")
        return True
    except NoNodeError:
        return True
    except BadVersionError:
        return False


def notify_change(session: ZkSession, pattern: ResourcePattern) -> str:
    """createAclChangeNotification: a persistent sequential node in the pattern type's change store."""
    if pattern.pattern_type is PatternType.LITERAL:
        data = encode_literal_acl_change(pattern)
    else:
        data = encode_extended_acl_change(pattern)
    parent = paths.acl_changes(pattern.pattern_type)
    prefix = f"{parent}/{paths.ACL_CHANGE_PREFIX}"

    try:
        return session.create_sequential(prefix, data, write="acl")
    except NoNodeError:
        session.ensure_persistent([parent])
        return session.create_sequential(prefix, data, write="acl")


def update_resource(
    session: ZkSession,
    pattern: ResourcePattern,
    change: Callable[[tuple[AclEntry, ...]], tuple[AclEntry, ...]],
    *,
    sleep: Callable[[float], None] = time.sleep,
) -> bool:
    """AclAuthorizer.updateResourceAcls: apply ``change`` to the resource's ACLs with a CAS on the node's
    version, retrying on a lost race. True (and a change notification written) if the ACL set changed.
    A change that leaves the set as it is writes nothing."""
    path = resource_path(pattern)

    def attempt() -> bool:
        current, version = read_resource(session, pattern)
        new = change(current)
        if set(new) == set(current):
            return False
        if new:
            data = AclNode(new).encode()
            done = _create(session, path, data) if version is None else _set(session, path, data, version)
        else:
            done = version is None or _delete(session, path, version)
        if not done:
            raise cas.Raced(f"ACLs of {path} changed underneath")
        log.info("updated ACLs for %s (%d -> %d entries)", path, len(current), len(new))
        try:
            notify_change(session, pattern)
        except AdminWriteFenced as exc:  # deposed between the two writes: the ACLs are in, their notice is not
            raise ZkUnavailable(
                f"the ACLs of {path} were written but their change notification was not: {exc}"
            ) from exc
        return True

    return cas.read_modify_write(
        path,
        attempt,
        max_attempts=MAX_UPDATE_RETRIES + 1,
        give_up=lambda: KafkaApiError(
            E.UNKNOWN_SERVER_ERROR,
            f"Failed to update ACLs for {pattern} after trying a maximum of {MAX_UPDATE_RETRIES} times",
        ),
        wait=wait_fixed(RETRY_BACKOFF_S) + wait_random(0, RETRY_JITTER_S),
        sleep=sleep,
        catch_up=lambda: session.sync(path),
    )


def _error_of(exc: Exception) -> tuple[KafkaError, str | None]:
    """A failed resource update as its bindings' result: a domain error as it is; ZooKeeper away or the session
    lost as the retriable REQUEST_TIMED_OUT (the update may still have been applied: the ledger of a client
    must treat it as in doubt); anything else UNKNOWN_SERVER_ERROR (:func:`controller.store.errors.zk_error`)."""
    if isinstance(exc, KafkaApiError):
        return exc.error, exc.message
    error = zk_error(exc)
    if error is E.REQUEST_TIMED_OUT:
        return error, f"ZooKeeper did not complete the ACL update ({type(exc).__name__}); it may still take effect"
    return error, None


def _update_failed(exc: Exception, what: str) -> tuple[KafkaError, str | None]:
    """:func:`_error_of` for a resource update that raised, logged unless it is a domain error (that one is the
    client's answer, not a fault of this node)."""
    if not isinstance(exc, KafkaApiError):
        log.warning("%s failed: %r", what, exc)
    return _error_of(exc)


def create_acls(session: ZkSession, bindings: Sequence[AclBinding]) -> list[tuple[KafkaError, str | None]]:
    """AclAuthorizer.createAcls for bindings that passed :func:`validate_binding`: one CAS update per
    resource; the result of each binding, in order (a failed resource fails all its bindings)."""
    by_resource: dict[ResourcePattern, list[int]] = {}
    for i, binding in enumerate(bindings):
        by_resource.setdefault(binding.pattern, []).append(i)
    results: list[tuple[KafkaError, str | None]] = [(E.NONE, None)] * len(bindings)
    for pattern, indexes in by_resource.items():
        added = tuple(dict.fromkeys(bindings[i].entry for i in indexes))

        def add(current: tuple[AclEntry, ...], added: tuple[AclEntry, ...] = added) -> tuple[AclEntry, ...]:
            return current + tuple(e for e in added if e not in current)

        try:
            update_resource(session, pattern, add)
        except Exception as exc:
            failure = _update_failed(exc, f"creating ACLs for {pattern}")
            for i in indexes:
                results[i] = failure
    return results


@dataclass(frozen=True)
class DeletedBinding:
    binding: AclBinding
    error: KafkaError
    message: str | None


#: A filter's own outcome: None when it ran, else the error that kept it from being applied in full.
FilterError = tuple[KafkaError, str | None] | None


def delete_acls(session: ZkSession, filters: Sequence[AclBindingFilter]) -> list[list[DeletedBinding]]:
    """AclAuthorizer.deleteAcls: per filter, the bindings it deleted (each binding is credited to the
    first filter that matches it), with the error of its resource's update if that failed."""
    return delete_acls_checked(session, filters)[0]


def delete_acls_checked(
    session: ZkSession, filters: Sequence[AclBindingFilter]
) -> tuple[list[list[DeletedBinding]], list[FilterError]]:
    """:func:`delete_acls`, plus each filter's own error: the error of a resource update that failed before
    it could tell which of the filter's bindings it held (ZooKeeper away while reading the node), so that a
    filter whose outcome is unknown is never reported as having matched nothing."""
    resources = _candidate_resources(list_acls(session), filters)
    deleted: dict[AclBinding, int] = {}
    failed: dict[AclBinding, tuple[KafkaError, str | None]] = {}
    filter_errors: list[FilterError] = [None] * len(filters)
    for pattern in resources:
        relevant = [(i, f) for i, f in enumerate(filters) if pattern_matches(f, pattern)]
        if not relevant:
            continue
        being_deleted: list[AclBinding] = []
        applied = [False]

        def remove(
            current: tuple[AclEntry, ...],
            pattern: ResourcePattern = pattern,
            relevant: list[tuple[int, AclBindingFilter]] = relevant,
            being_deleted: list[AclBinding] = being_deleted,
            applied: list[bool] = applied,
        ) -> tuple[AclEntry, ...]:
            applied[0] = True
            kept = []
            for entry in current:
                index = next((i for i, f in relevant if entry_matches(f, entry)), None)
                if index is None:
                    kept.append(entry)
                else:
                    binding = AclBinding(pattern, entry)
                    deleted.setdefault(binding, index)
                    being_deleted.append(binding)
            return tuple(kept)

        try:
            update_resource(session, pattern, remove)
        except Exception as exc:
            failure = _update_failed(exc, f"deleting ACLs of {pattern}")
            for binding in being_deleted:
                failed.setdefault(binding, failure)
            if not applied[0]:
                for i, _f in relevant:
                    if filter_errors[i] is None:
                        filter_errors[i] = failure
    out: list[list[DeletedBinding]] = [[] for _ in filters]
    for binding, index in deleted.items():
        error, message = failed.get(binding, (E.NONE, None))
        out[index].append(DeletedBinding(binding, error, message))
    return out, filter_errors


def _candidate_resources(
    acls: dict[ResourcePattern, tuple[AclEntry, ...]], filters: Iterable[AclBindingFilter]
) -> list[ResourcePattern]:
    """What we read, plus the exact resources a filter names (a node created since the read)."""
    out = dict.fromkeys(acls)
    for f in filters:
        if f.resource_type is None or f.name is None or f.pattern_type is FilterPattern.MATCH:
            continue
        if f.name in ("", ".", "..") or "/" in f.name:
            continue  # no such node can exist
        kinds = STORED_PATTERN_TYPES if f.pattern_type is FilterPattern.ANY else (f.pattern_type,)
        for kind in kinds:
            if isinstance(kind, PatternType):
                out.setdefault(ResourcePattern(f.resource_type, f.name, kind))
    return list(out)
