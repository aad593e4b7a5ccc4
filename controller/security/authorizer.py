"""Kafka's ZooKeeper-mode ACL authorization: the decision (:class:`AclAuthorizer`). The ACL cache that feeds
it is :class:`controller.security.acl_cache.AclCache`.

Why two parts: the decision is a pure function of an immutable ACL snapshot, so it can be tested
exhaustively without ZooKeeper and shared lock-free by every request thread; keeping the snapshot current is
the part that must survive connection loss, session expiry and znodes written by foreign tools.

Decision rules are Kafka 3.9's ``kafka.security.authorizer.AclAuthorizer`` (``authorizeAction``,
``matchingAcls``, ``matchingAclExists``, ``authorizeByResourceType``):

- a super user (``super.users``) may do anything;
- the ACLs that apply to a (literal) resource are those of the literal pattern with its exact name, of the
  literal wildcard ``*`` and of every prefixed pattern whose name is a prefix of it, all of its resource type;
- when none apply, the answer is ``allow.everyone.if.no.acl.found`` — whether *any* ACL applies to the
  resource, not whether one matches the caller;
- otherwise a matching DENY wins, else a matching ALLOW is needed. An ACL matches when its principal is the
  caller's or ``User:*``, its host the caller's or ``*``, and its operation the requested one or ALL. For
  ALLOW only, DESCRIBE is also granted by READ, WRITE, DELETE and ALTER, and DESCRIBE_CONFIGS by
  ALTER_CONFIGS (a DENY never implies anything beyond itself and ALL).

Principals are compared as text (``User:alice``): Kafka compares KafkaPrincipals by type and name, and a
principal's text is ``type:name`` split at the first colon, so both comparisons agree. Hosts are compared as
text as well; callers pass the client address as Java's ``InetAddress.getHostAddress`` writes it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from zkmodel.kafka_acls import (
    WILDCARD_HOST,
    WILDCARD_RESOURCE,
    AclEntry,
    AclOperation,
    PatternType,
    PermissionType,
    ResourcePattern,
    ResourceType,
)

__all__ = ["WILDCARD_PRINCIPAL", "AclAuthorizer", "AclSnapshot"]

#: AclEntry.WILDCARD_PRINCIPAL_STRING: only the ``User`` type has a wildcard.
WILDCARD_PRINCIPAL: Final = "User:*"

#: All ACLs by resource pattern. Treated as immutable: publish a new mapping, never mutate one in place.
AclSnapshot = Mapping[ResourcePattern, Sequence[AclEntry]]

_ALL = AclOperation.ALL
#: authorizeAction's allowOps: the operations whose ALLOW grants the requested one (besides ALL).
_ALLOWED_BY: Final[Mapping[AclOperation, frozenset[AclOperation]]] = MappingProxyType(
    {
        AclOperation.DESCRIBE: frozenset(
            {AclOperation.DESCRIBE, AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE, AclOperation.ALTER}
        ),
        AclOperation.DESCRIBE_CONFIGS: frozenset({AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS}),
    }
)


def allowed_by(operation: AclOperation) -> frozenset[AclOperation]:
    """The ALLOW operations that grant ``operation`` (ALL grants everything and is not listed)."""
    return _ALLOWED_BY.get(operation) or frozenset({operation})


# -- the index: one per snapshot, shared by all checks on it ------------------------------------------------


@dataclass(frozen=True)
class _Rules:
    """One pattern's ACLs split by permission, so a check scans only the side it needs."""

    deny: tuple[AclEntry, ...]
    allow: tuple[AclEntry, ...]


#: AclAuthorizer.ResourceTypeKey without the resource type: (permission, pattern type, principal, host, op).
_AceKey = tuple[PermissionType, PatternType, str, str, AclOperation]


@dataclass(frozen=True)
class _TypeIndex:
    literal: Mapping[str, _Rules]
    prefixed: Mapping[str, _Rules]
    #: Distinct lengths of the prefixed names, ascending: a name's candidate prefixes are looked up by length.
    prefix_lengths: tuple[int, ...]
    #: AclAuthorizer.resourceCache: the resource names holding each ACL, for authorizeByResourceType.
    by_ace: Mapping[_AceKey, frozenset[str]]


def _build_index(acls: AclSnapshot) -> dict[ResourceType, _TypeIndex]:
    literal: dict[ResourceType, dict[str, _Rules]] = {}
    prefixed: dict[ResourceType, dict[str, _Rules]] = {}
    by_ace: dict[ResourceType, dict[_AceKey, set[str]]] = {}
    for pattern, entries in acls.items():
        if not entries:
            continue  # Kafka's cache drops a resource whose last ACL went: no ACLs, not an empty rule
        if pattern.pattern_type is PatternType.LITERAL:
            table = literal.setdefault(pattern.resource_type, {})
        elif pattern.pattern_type is PatternType.PREFIXED:
            table = prefixed.setdefault(pattern.resource_type, {})
        else:  # pragma: no cover - PatternType has no other stored member
            continue
        unique = tuple(dict.fromkeys(entries))
        table[pattern.name] = _Rules(
            deny=tuple(e for e in unique if e.permission_type is PermissionType.DENY),
            allow=tuple(e for e in unique if e.permission_type is PermissionType.ALLOW),
        )
        keys = by_ace.setdefault(pattern.resource_type, {})
        for e in unique:
            key = (e.permission_type, pattern.pattern_type, e.principal, e.host, e.operation)
            keys.setdefault(key, set()).add(pattern.name)
    out: dict[ResourceType, _TypeIndex] = {}
    for resource_type in literal.keys() | prefixed.keys():
        pre = prefixed.get(resource_type, {})
        out[resource_type] = _TypeIndex(
            literal=literal.get(resource_type, {}),
            prefixed=pre,
            prefix_lengths=tuple(sorted({len(name) for name in pre})),
            by_ace={k: frozenset(v) for k, v in by_ace[resource_type].items()},
        )
    return out


def _matches(entry: AclEntry, principal: str, host: str) -> bool:
    return (entry.principal == principal or entry.principal == WILDCARD_PRINCIPAL) and (
        entry.host == host or entry.host == WILDCARD_HOST
    )


def _dominated(name: str, deny_prefixes: list[frozenset[str]]) -> bool:
    """AclAuthorizer.hasDominantPrefixedDeny: a DENY prefix covers ``name`` (a prefix of it, itself included)."""
    return any(name[:i] in names for i in range(1, len(name) + 1) for names in deny_prefixes)


class AclAuthorizer:
    """Kafka's AclAuthorizer decisions over the ACL snapshot ``acls()`` returns at each call.

    ``acls`` is typically :meth:`controller.security.acl_cache.AclCache.snapshot`. Each distinct snapshot
    object is indexed once (by resource type, pattern type and permission) and the index is reused while
    ``acls()`` returns that same object, so a check costs a few dictionary lookups plus a scan of the ACLs
    that apply to the resource. Snapshots must therefore be replaced, never mutated in place.
    """

    def __init__(
        self,
        acls: Callable[[], AclSnapshot],
        super_users: Iterable[str] = (),
        allow_everyone_if_no_acl_found: bool = False,
    ) -> None:
        users = frozenset(u.strip() for u in super_users)
        bad = sorted(u for u in users if ":" not in u)
        if bad:
            # SecurityUtils.parseKafkaPrincipal refuses these, and so the broker refuses the config.
            raise ValueError(f"expected super users in format principalType:principalName but got {bad}")
        self._acls = acls
        self.super_users = users
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found
        self._indexed: tuple[AclSnapshot, dict[ResourceType, _TypeIndex]] | None = None

    def _index(self) -> dict[ResourceType, _TypeIndex]:
        snapshot = self._acls()
        indexed = self._indexed  # one read: another thread may replace it meanwhile
        if indexed is not None and indexed[0] is snapshot:
            return indexed[1]
        index = _build_index(snapshot)
        self._indexed = (snapshot, index)  # holds the snapshot, so its id cannot be reused while cached
        return index

    def _applicable(self, resource_type: ResourceType, name: str) -> list[_Rules]:
        """AclAuthorizer.matchingAcls: the ACLs of the patterns that apply to the literal resource."""
        index = self._index().get(resource_type)
        if index is None:
            return []
        out: list[_Rules] = []
        for length in index.prefix_lengths:
            if length > len(name):
                break
            rules = index.prefixed.get(name[:length])
            if rules is not None:
                out.append(rules)
        for literal in (WILDCARD_RESOURCE, name) if name != WILDCARD_RESOURCE else (name,):
            rules = index.literal.get(literal)
            if rules is not None:
                out.append(rules)
        return out

    def authorize(
        self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType, name: str
    ) -> bool:
        """AclAuthorizer.authorizeAction for ``operation`` on the literal resource ``resource_type:name``."""
        if principal in self.super_users:
            return True
        rules = self._applicable(resource_type, name)
        if not rules:
            return self.allow_everyone_if_no_acl_found
        for r in rules:
            for e in r.deny:
                if (e.operation is operation or e.operation is _ALL) and _matches(e, principal, host):
                    return False
        granting = allowed_by(operation)
        for r in rules:
            for e in r.allow:
                if (e.operation in granting or e.operation is _ALL) and _matches(e, principal, host):
                    return True
        return False

    def authorize_any(self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType) -> bool:
        """AclAuthorizer.authorizeByResourceType: may the caller do ``operation`` on at least one resource of
        this type (e.g. "CREATE on some topic")? Kafka's rules, quirks included:

        - a matching DENY on the literal wildcard denies, even to allow.everyone.if.no.acl.found;
        - otherwise allow.everyone.if.no.acl.found allows, whatever ACLs exist;
        - otherwise some matching ALLOW must not be covered by a matching DENY: an ALLOW prefix is covered by
          a DENY prefix that is a prefix of it, an ALLOW literal by the same DENY literal or a DENY prefix of
          it; an ALLOW on the literal wildcard is never covered.

        Operations are matched exactly (or ALL): unlike :meth:`authorize`, READ does not grant DESCRIBE here.
        """
        if principal in self.super_users:
            return True
        index = self._index().get(resource_type)
        by_ace: Mapping[_AceKey, frozenset[str]] = index.by_ace if index is not None else {}

        def matching(permission: PermissionType, pattern_type: PatternType) -> list[frozenset[str]]:
            """AclAuthorizer.matchingResources: names per matching (principal, host, operation) key."""
            out = []
            for p in {principal, WILDCARD_PRINCIPAL}:
                for h in {host, WILDCARD_HOST}:
                    for o in {operation, _ALL}:
                        names = by_ace.get((permission, pattern_type, p, h, o))
                        if names:
                            out.append(names)
            return out

        deny_literals = matching(PermissionType.DENY, PatternType.LITERAL)
        if any(WILDCARD_RESOURCE in names for names in deny_literals):
            return False
        if self.allow_everyone_if_no_acl_found:
            return True
        deny_prefixes = matching(PermissionType.DENY, PatternType.PREFIXED)
        allow_literals = matching(PermissionType.ALLOW, PatternType.LITERAL)
        allow_prefixes = matching(PermissionType.ALLOW, PatternType.PREFIXED)
        if not deny_literals and not deny_prefixes:
            return bool(allow_prefixes or allow_literals)
        for names in allow_prefixes:
            if any(not _dominated(prefix, deny_prefixes) for prefix in names):
                return True
        for names in allow_literals:
            for literal in names:
                if literal == WILDCARD_RESOURCE:
                    return True
                if not any(literal in d for d in deny_literals) and not _dominated(literal, deny_prefixes):
                    return True
        return False
