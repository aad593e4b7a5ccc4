"""AclAuthorizer decisions, ported from Kafka 3.9's AuthorizerTest / BaseAuthorizerTest (ZK quorum), plus
properties: deny and allow are monotonic, the index agrees with a naive scan, and authorizeByResourceType
over-approximates authorize."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from types import MappingProxyType

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from controller.security.authorizer import AclAuthorizer, allowed_by
from zkmodel.kafka_acls import AclEntry, AclOperation, PatternType, PermissionType, ResourcePattern, ResourceType

Op, Perm = AclOperation, PermissionType
ALLOW, DENY = Perm.ALLOW, Perm.DENY
LIT, PRE = PatternType.LITERAL, PatternType.PREFIXED
TOPIC, GROUP, CLUSTER, TXN = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER, ResourceType.TRANSACTIONAL_ID
ANYONE, ANYWHERE = "User:*", "*"
ALICE = "User:alice"
ALICE_HOST = "192.168.0.1"
SUPER_USERS = ["User:superuser1", " User:superuser2"]  # super.users split at ";" (entries are trimmed)

ALLOW_READ = AclEntry(ANYONE, ALLOW, ANYWHERE, Op.READ)
ALLOW_WRITE = AclEntry(ANYONE, ALLOW, ANYWHERE, Op.WRITE)
DENY_READ = AclEntry(ANYONE, DENY, ANYWHERE, Op.READ)
WILDCARD_TOPICS = ResourcePattern(TOPIC, "*", LIT)
PREFIXED_FOO = ResourcePattern(TOPIC, "foo", PRE)
CLUSTER_RESOURCE = ResourcePattern(CLUSTER, "kafka-cluster", LIT)


def ace(principal: str, host: str, op: AclOperation, perm: PermissionType) -> AclEntry:
    return AclEntry(principal, perm, host, op)


class Acls:
    """A stand-in for AclCache: add/remove publish a new immutable snapshot, as the cache does."""

    def __init__(self) -> None:
        self.snap: Mapping[ResourcePattern, tuple[AclEntry, ...]] = MappingProxyType({})
        self.calls = 0

    def __call__(self) -> Mapping[ResourcePattern, tuple[AclEntry, ...]]:
        self.calls += 1
        return self.snap

    def add(self, pattern: ResourcePattern, *entries: AclEntry) -> None:
        d = dict(self.snap)
        d[pattern] = tuple(dict.fromkeys((*d.get(pattern, ()), *entries)))
        self.snap = MappingProxyType(d)

    def remove(self, pattern: ResourcePattern, *entries: AclEntry) -> None:
        d = dict(self.snap)
        kept = tuple(e for e in d.get(pattern, ()) if entries and e not in entries)
        if kept:
            d[pattern] = kept
        else:
            d.pop(pattern, None)
        self.snap = MappingProxyType(d)


@pytest.fixture
def acls() -> Acls:
    return Acls()


@pytest.fixture
def authz(acls: Acls) -> AclAuthorizer:
    return AclAuthorizer(acls, super_users=SUPER_USERS)


@pytest.fixture
def resource() -> ResourcePattern:
    return ResourcePattern(TOPIC, f"foo-{uuid.uuid4()}", LIT)


def can(authz: AclAuthorizer, principal: str, host: str, op: AclOperation, resource: ResourcePattern) -> bool:
    assert resource.pattern_type is LIT
    return authz.authorize(principal, host, op, resource.resource_type, resource.name)


# -- AuthorizerTest ------------------------------------------------------------------------------------------


def test_topic_acl(acls: Acls, authz: AclAuthorizer, resource: ResourcePattern) -> None:
    user1, user2, user3 = ALICE, "User:rob", "User:batman"
    host1, host2 = "192.168.1.1", "192.168.1.2"
    acls.add(
        resource,
        ace(user1, host1, Op.READ, ALLOW),
        ace(user1, host2, Op.READ, ALLOW),
        ace(user1, host1, Op.READ, DENY),
        ace(user1, host1, Op.WRITE, ALLOW),
        ace(user1, ANYWHERE, Op.DESCRIBE, ALLOW),
        ace(user2, ANYWHERE, Op.READ, ALLOW),
        ace(user3, ANYWHERE, Op.WRITE, ALLOW),
    )
    assert can(authz, user1, host2, Op.READ, resource)
    assert not can(authz, user1, host1, Op.READ, resource), "deny ACL on host1"
    assert can(authz, user1, host1, Op.WRITE, resource)
    assert not can(authz, user1, host2, Op.WRITE, resource), "no allow ACL for host2"
    assert can(authz, user1, host1, Op.DESCRIBE, resource)
    assert can(authz, user1, host2, Op.DESCRIBE, resource)
    assert not can(authz, user1, host1, Op.ALTER, resource)
    assert not can(authz, user1, host2, Op.ALTER, resource)
    # READ or WRITE imply DESCRIBE
    assert can(authz, user2, host1, Op.DESCRIBE, resource)
    assert can(authz, user3, host1, Op.DESCRIBE, resource)
    assert can(authz, user2, host1, Op.READ, resource)
    assert can(authz, user3, host1, Op.WRITE, resource)


def test_deny_takes_precedence(acls: Acls, authz: AclAuthorizer, resource: ResourcePattern) -> None:
    host = "192.168.2.1"
    acls.add(resource, ace(ANYONE, ANYWHERE, Op.ALL, ALLOW), ace(ALICE, host, Op.ALL, DENY))
    assert not can(authz, ALICE, host, Op.READ, resource)
    assert can(authz, ALICE, "192.168.2.2", Op.READ, resource), "the deny is for one host only"


def test_allow_all_access(acls: Acls, authz: AclAuthorizer, resource: ResourcePattern) -> None:
    acls.add(resource, ace(ANYONE, ANYWHERE, Op.ALL, ALLOW))
    assert can(authz, "User:random", "192.0.4.4", Op.READ, resource)


def test_super_user_has_access(acls: Acls, authz: AclAuthorizer, resource: ResourcePattern) -> None:
    acls.add(resource, ace(ANYONE, ANYWHERE, Op.ALL, DENY))
    assert can(authz, "User:superuser1", "192.0.4.4", Op.READ, resource)
    assert can(authz, "User:superuser2", "192.0.4.4", Op.READ, resource)
    assert not can(authz, "User:superuser3", "192.0.4.4", Op.READ, resource)
    assert not can(authz, "Group:superuser1", "192.0.4.4", Op.READ, resource), "same name, other principal type"


def test_super_users_must_be_principals() -> None:
    with pytest.raises(ValueError, match="principalType:principalName"):
        AclAuthorizer(dict, super_users=["User:ok", "admin"])


def test_wildcard_acls(acls: Acls, authz: AclAuthorizer, resource: ResourcePattern) -> None:
    assert not can(authz, ALICE, ALICE_HOST, Op.READ, resource), "no ACLs: fail closed"
    host1 = "192.168.3.1"
    acls.add(WILDCARD_TOPICS, ace(ALICE, host1, Op.READ, ALLOW))
    assert can(authz, ALICE, host1, Op.READ, resource)
    acls.add(resource, ace(ALICE, host1, Op.WRITE, ALLOW))
    acls.add(WILDCARD_TOPICS, ace(ALICE, host1, Op.WRITE, DENY))
    assert not can(authz, ALICE, host1, Op.WRITE, resource), "a DENY on * beats the ALLOW on the topic"


def test_no_acl_found(authz: AclAuthorizer, resource: ResourcePattern) -> None:
    assert not can(authz, ALICE, ALICE_HOST, Op.READ, resource)


def test_no_acl_found_override(acls: Acls, resource: ResourcePattern) -> None:
    authz = AclAuthorizer(acls, SUPER_USERS, allow_everyone_if_no_acl_found=True)
    assert can(authz, ALICE, ALICE_HOST, Op.READ, resource)


def test_no_acl_found_means_no_acl_on_the_resource_not_no_matching_acl(acls: Acls, resource: ResourcePattern) -> None:
    authz = AclAuthorizer(acls, allow_everyone_if_no_acl_found=True)
    acls.add(resource, ace("User:bob", ANYWHERE, Op.READ, ALLOW))
    assert not can(authz, ALICE, ALICE_HOST, Op.READ, resource), "the resource has ACLs, none for alice"
    assert can(authz, ALICE, ALICE_HOST, Op.READ, ResourcePattern(TOPIC, "other")), "no ACL applies here"
    acls.add(ResourcePattern(TOPIC, "oth", PRE), ace("User:bob", ANYWHERE, Op.READ, ALLOW))
    assert not can(authz, ALICE, ALICE_HOST, Op.READ, ResourcePattern(TOPIC, "other")), "a prefixed ACL applies"
    assert can(authz, ALICE, ALICE_HOST, Op.READ, ResourcePattern(GROUP, "other")), "other resource types don't"


ALL_OPS = set(AclOperation)


@pytest.mark.parametrize(
    ("parent", "implied"),
    [
        (Op.ALL, ALL_OPS - {Op.ALL}),
        (Op.READ, {Op.DESCRIBE}),
        (Op.WRITE, {Op.DESCRIBE}),
        (Op.DELETE, {Op.DESCRIBE}),
        (Op.ALTER, {Op.DESCRIBE}),
        (Op.ALTER_CONFIGS, {Op.DESCRIBE_CONFIGS}),
        (Op.DESCRIBE, set()),
        (Op.DESCRIBE_CONFIGS, set()),
        (Op.CREATE, set()),
        (Op.CLUSTER_ACTION, set()),
        (Op.IDEMPOTENT_WRITE, set()),
    ],
)
def test_implications_of_allow(
    acls: Acls, authz: AclAuthorizer, parent: AclOperation, implied: set[AclOperation]
) -> None:
    """testAclInheritance / testImplicationsOfAllow."""
    acls.add(CLUSTER_RESOURCE, ace(ALICE, ANYWHERE, parent, ALLOW))
    for op in AclOperation:
        expected = op is parent or op in implied
        assert can(authz, ALICE, "192.168.3.1", op, CLUSTER_RESOURCE) is expected, f"ALLOW {parent} -> {op}"


@pytest.mark.parametrize(
    ("parent", "implied"),
    [(Op.ALL, ALL_OPS - {Op.ALL}), (Op.DESCRIBE, set()), (Op.DESCRIBE_CONFIGS, set()), (Op.READ, set())],
)
def test_implications_of_deny(
    acls: Acls, authz: AclAuthorizer, parent: AclOperation, implied: set[AclOperation]
) -> None:
    """testAclInheritance / testImplicationsOfDeny: a DENY implies nothing beyond itself (ALL is all)."""
    acls.add(CLUSTER_RESOURCE, ace(ALICE, ANYWHERE, parent, DENY), ace(ALICE, ANYWHERE, Op.ALL, ALLOW))
    for op in AclOperation:
        denied = op is parent or op in implied
        assert can(authz, ALICE, "192.168.3.1", op, CLUSTER_RESOURCE) is not denied, f"DENY {parent} -> {op}"


def test_allowed_by_matches_kafka_allow_ops() -> None:
    assert allowed_by(Op.DESCRIBE) == {Op.DESCRIBE, Op.READ, Op.WRITE, Op.DELETE, Op.ALTER}
    assert allowed_by(Op.DESCRIBE_CONFIGS) == {Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS}
    assert allowed_by(Op.READ) == {Op.READ}


def test_access_allowed_if_allow_acl_exists_on_wildcard_resource(
    acls: Acls, authz: AclAuthorizer, resource: ResourcePattern
) -> None:
    acls.add(WILDCARD_TOPICS, ALLOW_READ)
    assert can(authz, ALICE, ALICE_HOST, Op.READ, resource)


def test_access_allowed_if_allow_acl_exists_on_prefixed_resource(
    acls: Acls, authz: AclAuthorizer, resource: ResourcePattern
) -> None:
    acls.add(PREFIXED_FOO, ALLOW_READ)
    assert can(authz, ALICE, ALICE_HOST, Op.READ, resource)


def test_authorize_with_prefixed_resource(acls: Acls, authz: AclAuthorizer, resource: ResourcePattern) -> None:
    for name, kind in [
        ("a_other", LIT),
        ("a_other", PRE),
        (f"foo-{uuid.uuid4()}", PRE),
        (f"foo-{uuid.uuid4()}", PRE),
        (f"foo-{uuid.uuid4()}-zzz", PRE),
        (f"fooo-{uuid.uuid4()}", PRE),
        (f"fo-{uuid.uuid4()}", PRE),
        (f"fop-{uuid.uuid4()}", PRE),
        (f"fon-{uuid.uuid4()}", PRE),
        ("fon-", PRE),
        ("z_other", PRE),
        ("z_other", LIT),
    ]:
        acls.add(ResourcePattern(TOPIC, name, kind), DENY_READ)
    acls.add(PREFIXED_FOO, ALLOW_READ)
    assert can(authz, ALICE, ALICE_HOST, Op.READ, resource)


def test_single_character_resource_acls(acls: Acls, authz: AclAuthorizer) -> None:
    acls.add(ResourcePattern(TOPIC, "f", LIT), ALLOW_READ)
    assert can(authz, ALICE, ALICE_HOST, Op.READ, ResourcePattern(TOPIC, "f"))
    assert not can(authz, ALICE, ALICE_HOST, Op.READ, ResourcePattern(TOPIC, "foo"))
    acls.add(ResourcePattern(TOPIC, "_", PRE), ALLOW_READ)
    assert can(authz, ALICE, ALICE_HOST, Op.READ, ResourcePattern(TOPIC, "_foo"))
    assert can(authz, ALICE, ALICE_HOST, Op.READ, ResourcePattern(TOPIC, "_"))
    assert not can(authz, ALICE, ALICE_HOST, Op.READ, ResourcePattern(TOPIC, "foo_"))


def test_authorize_with_empty_resource_name(acls: Acls, authz: AclAuthorizer) -> None:
    """Empty names cannot be stored (no znode), but the decision itself is defined: only * applies."""
    group = ResourcePattern(GROUP, "")
    assert not can(authz, ALICE, ALICE_HOST, Op.READ, group)
    acls.add(ResourcePattern(GROUP, "*"), ALLOW_READ)
    assert can(authz, ALICE, ALICE_HOST, Op.READ, group)


# -- matching details ----------------------------------------------------------------------------------------


def test_host_mismatch(acls: Acls, authz: AclAuthorizer, resource: ResourcePattern) -> None:
    acls.add(resource, ace(ALICE, "10.0.0.1", Op.READ, ALLOW))
    assert can(authz, ALICE, "10.0.0.1", Op.READ, resource)
    assert not can(authz, ALICE, "10.0.0.2", Op.READ, resource)
    assert not can(authz, ALICE, "10.0.0.10", Op.READ, resource), "hosts are exact, not prefixes"


def test_principal_type_mismatch(acls: Acls, authz: AclAuthorizer, resource: ResourcePattern) -> None:
    acls.add(resource, ace(ALICE, ANYWHERE, Op.READ, ALLOW))
    assert can(authz, ALICE, ALICE_HOST, Op.READ, resource)
    assert not can(authz, "Group:alice", ALICE_HOST, Op.READ, resource)
    assert not can(authz, "User:alicex", ALICE_HOST, Op.READ, resource)


def test_only_user_type_has_a_wildcard_principal(acls: Acls, authz: AclAuthorizer, resource: ResourcePattern) -> None:
    acls.add(resource, ace("Group:*", ANYWHERE, Op.READ, ALLOW))
    assert not can(authz, "Group:admins", ALICE_HOST, Op.READ, resource)
    acls.add(resource, ace(ANYONE, ANYWHERE, Op.READ, ALLOW))
    assert can(authz, "Group:admins", ALICE_HOST, Op.READ, resource), "User:* matches every principal type"


def test_all_operation_and_wildcards(acls: Acls, authz: AclAuthorizer, resource: ResourcePattern) -> None:
    acls.add(resource, ace(ANYONE, ANYWHERE, Op.ALL, ALLOW))
    for op in AclOperation:
        assert can(authz, "User:anyone", "10.1.1.1", op, resource)


def test_patterns_apply_only_to_their_type_and_names(acls: Acls, authz: AclAuthorizer) -> None:
    acls.add(ResourcePattern(GROUP, "foo"), ALLOW_READ)
    acls.add(ResourcePattern(GROUP, "*", PRE), ALLOW_READ)  # a prefix "*", not the wildcard
    acls.add(ResourcePattern(TOPIC, "foobar", PRE), ALLOW_READ)
    acls.add(ResourcePattern(TOPIC, "fo"), ALLOW_READ)  # literal: not a prefix
    assert not can(authz, ALICE, ALICE_HOST, Op.READ, ResourcePattern(TOPIC, "foo"))
    assert can(authz, ALICE, ALICE_HOST, Op.READ, ResourcePattern(TOPIC, "foobar")), "a prefix of itself"
    assert can(authz, ALICE, ALICE_HOST, Op.READ, ResourcePattern(GROUP, "foo"))
    assert not can(authz, ALICE, ALICE_HOST, Op.READ, ResourcePattern(GROUP, "bar"))
    assert can(authz, ALICE, ALICE_HOST, Op.READ, ResourcePattern(GROUP, "*x"))


def test_index_is_built_once_per_snapshot(acls: Acls, authz: AclAuthorizer, resource: ResourcePattern) -> None:
    acls.add(resource, ALLOW_READ)
    assert can(authz, ALICE, ALICE_HOST, Op.READ, resource)
    first = authz._indexed
    assert can(authz, "User:bob", ALICE_HOST, Op.READ, resource)
    assert authz._indexed is first, "same snapshot: same index"
    acls.remove(resource)
    assert not can(authz, ALICE, ALICE_HOST, Op.READ, resource), "a new snapshot is seen at once"
    assert authz._indexed is not first


def test_empty_entry_lists_count_as_no_acls(acls: Acls, resource: ResourcePattern) -> None:
    acls.snap = MappingProxyType({resource: ()})
    assert AclAuthorizer(acls, allow_everyone_if_no_acl_found=True).authorize(
        ALICE, ALICE_HOST, Op.READ, TOPIC, resource.name
    )


# -- BaseAuthorizerTest: authorizeByResourceType -------------------------------------------------------------

U1, U2 = "User:user1", "User:user2"
H1, H2 = "192.168.1.1", "192.168.1.2"


def any_of(authz: AclAuthorizer, principal: str, host: str, op: AclOperation, rtype: ResourceType) -> bool:
    return authz.authorize_any(principal, host, op, rtype)


def test_by_type_multiple_add_and_remove(acls: Acls, authz: AclAuthorizer) -> None:
    resource1 = ResourcePattern(TOPIC, f"sb1{uuid.uuid4()}")
    deny_read, allow_read = ace(U1, H1, Op.READ, DENY), ace(U1, H1, Op.READ, ALLOW)
    for _ in range(3):
        assert not any_of(authz, U1, H1, Op.READ, TOPIC)
        acls.add(resource1, allow_read)
        assert any_of(authz, U1, H1, Op.READ, TOPIC)
        for _ in range(3):
            acls.add(resource1, deny_read)
            assert not any_of(authz, U1, H1, Op.READ, TOPIC)
            acls.remove(resource1, deny_read)
            acls.add(resource1, allow_read)
            assert any_of(authz, U1, H1, Op.READ, TOPIC)
        acls.remove(resource1, allow_read)
        assert not any_of(authz, U1, H1, Op.READ, TOPIC)


def test_by_type_isolation_unrelated_deny_wont_dominate_allow(acls: Acls, authz: AclAuthorizer) -> None:
    resource1 = ResourcePattern(TOPIC, f"sb1{uuid.uuid4()}")
    resource2 = ResourcePattern(TOPIC, f"sb2{uuid.uuid4()}")
    resource3 = ResourcePattern(GROUP, "s", PRE)
    acls.add(
        resource1,
        ace(U1, H1, Op.READ, DENY),
        ace(U2, H1, Op.READ, DENY),
        ace(U1, H2, Op.WRITE, DENY),
        ace(U2, H2, Op.READ, DENY),
        ace(U1, H2, Op.READ, ALLOW),
    )
    acls.add(resource2, ace(U1, H2, Op.READ, DENY))
    acls.add(resource3, ace(U1, H2, Op.READ, DENY))
    assert not any_of(authz, U1, H1, Op.READ, TOPIC)
    assert not any_of(authz, U1, H1, Op.READ, GROUP)
    assert not any_of(authz, U1, H1, Op.READ, TXN)
    assert not any_of(authz, U1, H1, Op.READ, CLUSTER)
    assert any_of(authz, U1, H2, Op.READ, TOPIC)


def test_by_type_deny_takes_precedence(acls: Acls, authz: AclAuthorizer) -> None:
    resource1 = ResourcePattern(TOPIC, f"sb1{uuid.uuid4()}")
    acls.add(resource1, ace(U1, H1, Op.WRITE, ALLOW))
    assert any_of(authz, U1, H1, Op.WRITE, TOPIC)
    acls.add(resource1, ace(U1, H1, Op.WRITE, DENY))
    assert not any_of(authz, U1, H1, Op.WRITE, TOPIC)


def test_by_type_prefixed_resource_deny_dominate(acls: Acls, authz: AclAuthorizer) -> None:
    allow, deny = ace(U1, H1, Op.READ, ALLOW), ace(U1, H1, Op.READ, DENY)
    acls.add(ResourcePattern(GROUP, "abcde", PRE), allow)
    assert any_of(authz, U1, H1, Op.READ, GROUP)
    acls.add(ResourcePattern(GROUP, "abcd", PRE), deny)
    assert not any_of(authz, U1, H1, Op.READ, GROUP)
    acls.add(ResourcePattern(GROUP, "abc", PRE), allow)
    assert any_of(authz, U1, H1, Op.READ, GROUP)
    acls.add(ResourcePattern(GROUP, "a", PRE), deny)
    assert not any_of(authz, U1, H1, Op.READ, GROUP)
    acls.add(ResourcePattern(GROUP, "ab", PRE), allow)
    assert not any_of(authz, U1, H1, Op.READ, GROUP)


def test_by_type_wildcard_resource_deny_dominate(acls: Acls, authz: AclAuthorizer) -> None:
    allow, deny = ace(U1, H1, Op.WRITE, ALLOW), ace(U1, H1, Op.WRITE, DENY)
    acls.add(ResourcePattern(GROUP, "hello", PRE), allow)
    assert any_of(authz, U1, H1, Op.WRITE, GROUP)
    acls.add(ResourcePattern(GROUP, "*"), deny)
    assert not any_of(authz, U1, H1, Op.WRITE, GROUP)
    acls.add(ResourcePattern(GROUP, "*"), allow)
    assert not any_of(authz, U1, H1, Op.WRITE, GROUP)
    acls.add(ResourcePattern(GROUP, "aloha"), allow)
    assert not any_of(authz, U1, H1, Op.WRITE, GROUP)


def test_by_type_with_all_operation_ace(acls: Acls, authz: AclAuthorizer) -> None:
    resource1 = ResourcePattern(TOPIC, f"sb1{uuid.uuid4()}")
    assert not any_of(authz, U1, H1, Op.READ, TOPIC)
    acls.add(resource1, ace(U1, H1, Op.WRITE, DENY), ace(U1, H1, Op.ALL, ALLOW))
    assert any_of(authz, U1, H1, Op.READ, TOPIC)
    acls.add(resource1, ace(U1, H1, Op.ALL, DENY))
    assert not any_of(authz, U1, H1, Op.READ, TOPIC)


def test_by_type_with_all_host_ace(acls: Acls, authz: AclAuthorizer) -> None:
    resource1 = ResourcePattern(TOPIC, f"sb1{uuid.uuid4()}")
    resource2 = ResourcePattern(TOPIC, f"sb2{uuid.uuid4()}")
    assert not any_of(authz, U1, H1, Op.READ, TOPIC)
    acls.add(resource1, ace(U1, H1, Op.READ, ALLOW))
    assert any_of(authz, U1, H1, Op.READ, TOPIC)
    acls.add(resource1, ace(U1, ANYWHERE, Op.READ, DENY))
    assert not any_of(authz, U1, H1, Op.READ, TOPIC)
    acls.add(resource2, ace(U1, H1, Op.READ, DENY))
    assert not any_of(authz, U1, H1, Op.READ, TOPIC)
    assert not any_of(authz, U1, H2, Op.READ, TOPIC)
    acls.add(resource2, ace(U1, ANYWHERE, Op.READ, ALLOW))
    assert any_of(authz, U1, H2, Op.READ, TOPIC)
    acls.add(resource2, ace(U1, ANYWHERE, Op.READ, DENY))
    assert not any_of(authz, U1, H2, Op.READ, TOPIC)


def test_by_type_with_all_principal_ace(acls: Acls, authz: AclAuthorizer) -> None:
    resource1 = ResourcePattern(TOPIC, f"sb1{uuid.uuid4()}")
    resource2 = ResourcePattern(TOPIC, f"sb2{uuid.uuid4()}")
    assert not any_of(authz, U1, H1, Op.READ, TOPIC)
    acls.add(resource1, ace(U1, H1, Op.READ, ALLOW))
    assert any_of(authz, U1, H1, Op.READ, TOPIC)
    acls.add(resource1, ace(ANYONE, H1, Op.READ, DENY))
    assert not any_of(authz, U1, H1, Op.READ, TOPIC)
    acls.add(resource2, ace(U1, H1, Op.READ, DENY))
    assert not any_of(authz, U1, H1, Op.READ, TOPIC)
    assert not any_of(authz, U2, H1, Op.READ, TOPIC)
    acls.add(resource2, ace(ANYONE, H1, Op.READ, ALLOW))
    assert any_of(authz, U2, H1, Op.READ, TOPIC)
    acls.add(resource2, ace(ANYONE, H1, Op.READ, DENY))
    assert not any_of(authz, U2, H1, Op.READ, TOPIC)


def test_by_type_super_user_has_access(acls: Acls, authz: AclAuthorizer) -> None:
    deny_all = ace(ANYONE, ANYWHERE, Op.ALL, DENY)
    for rtype in (TOPIC, CLUSTER, GROUP, TXN):
        acls.add(ResourcePattern(rtype, "*"), deny_all)
    for rtype in (TOPIC, CLUSTER, GROUP, TXN):
        assert any_of(authz, "User:superuser1", "192.0.4.4", Op.READ, rtype)
        assert not any_of(authz, ALICE, "192.0.4.4", Op.READ, rtype)


def test_by_type_no_acl_found_override(acls: Acls) -> None:
    authz = AclAuthorizer(acls, SUPER_USERS, allow_everyone_if_no_acl_found=True)
    assert any_of(authz, ALICE, ALICE_HOST, Op.READ, TOPIC)
    assert any_of(authz, ALICE, ALICE_HOST, Op.WRITE, TOPIC)


def test_by_type_allow_everyone_ignores_acls_except_a_wildcard_deny(acls: Acls) -> None:
    """AclAuthorizer's quirk: with allow.everyone.if.no.acl.found only a DENY on * can say no, even where
    every resource of the type has ACLs that deny this caller."""
    authz = AclAuthorizer(acls, allow_everyone_if_no_acl_found=True)
    acls.add(ResourcePattern(TOPIC, "t"), ace("User:bob", ANYWHERE, Op.READ, ALLOW))
    acls.add(ResourcePattern(TOPIC, "t", PRE), ace(ALICE, ANYWHERE, Op.READ, DENY))
    assert any_of(authz, ALICE, ALICE_HOST, Op.READ, TOPIC)
    acls.add(WILDCARD_TOPICS, ace(ALICE, ANYWHERE, Op.READ, DENY))
    assert not any_of(authz, ALICE, ALICE_HOST, Op.READ, TOPIC)


def test_by_type_has_no_implied_operations(acls: Acls, authz: AclAuthorizer) -> None:
    acls.add(ResourcePattern(TOPIC, "t"), ace(ALICE, ANYWHERE, Op.READ, ALLOW))
    assert can(authz, ALICE, ALICE_HOST, Op.DESCRIBE, ResourcePattern(TOPIC, "t"))
    assert not any_of(authz, ALICE, ALICE_HOST, Op.DESCRIBE, TOPIC)


def test_by_type_literal_allow_dominated_by_deny_prefix(acls: Acls, authz: AclAuthorizer) -> None:
    acls.add(ResourcePattern(TOPIC, "abc"), ace(U1, H1, Op.READ, ALLOW))
    acls.add(ResourcePattern(TOPIC, "ab", PRE), ace(U1, H1, Op.READ, DENY))
    assert not any_of(authz, U1, H1, Op.READ, TOPIC)
    acls.add(ResourcePattern(TOPIC, "*"), ace(U1, H1, Op.READ, ALLOW))
    assert any_of(authz, U1, H1, Op.READ, TOPIC), "an ALLOW on * is never dominated by a prefix"


# -- properties ----------------------------------------------------------------------------------------------

PRINCIPALS = ["User:alice", "User:bob", "Group:alice", "User:*", "Group:*"]
CALLERS = ["User:alice", "User:bob", "Group:alice"]
HOSTS = ["10.0.0.1", "10.0.0.2", "*"]
TYPES = [TOPIC, GROUP]
#: Few operations, so that generated ACLs often match a request (including by ALL and by implication).
OPS = [Op.ALL, Op.READ, Op.WRITE, Op.DESCRIBE, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS, Op.CREATE]
names = st.text(alphabet="ab", min_size=1, max_size=3)
entries = st.builds(
    AclEntry,
    principal=st.sampled_from(PRINCIPALS),
    permission_type=st.sampled_from(PermissionType),
    host=st.sampled_from(HOSTS),
    operation=st.sampled_from(OPS),
)
patterns = st.builds(
    ResourcePattern,
    resource_type=st.sampled_from(TYPES),
    name=st.one_of(names, st.just("*")),
    pattern_type=st.sampled_from(PatternType),
)
snapshots = st.dictionaries(patterns, st.lists(entries, min_size=1, max_size=4).map(tuple), max_size=8)


Snap = Mapping[ResourcePattern, tuple[AclEntry, ...]]
Request = tuple[str, str, AclOperation, ResourceType, str]


@st.composite
def requests(draw: st.DrawFn) -> Request:
    return (
        draw(st.sampled_from(CALLERS)),
        draw(st.sampled_from(HOSTS[:2])),
        draw(st.sampled_from(OPS[1:])),
        draw(st.sampled_from(TYPES)),
        draw(names),
    )


def applies(pattern: ResourcePattern, rtype: ResourceType, name: str) -> bool:
    if pattern.resource_type is not rtype:
        return False
    if pattern.pattern_type is LIT:
        return pattern.name in (name, "*")
    return name.startswith(pattern.name)


def reference(acls: Snap, request: Request, allow_everyone: bool) -> bool:
    """A naive scan over every ACL, written straight from AclAuthorizer.authorizeAction."""
    principal, host, op, rtype, name = request
    found = [e for p, es in acls.items() if applies(p, rtype, name) for e in es]
    if not found:
        return allow_everyone

    def match(e: AclEntry, ops: set[AclOperation]) -> bool:
        return (
            e.principal in (principal, "User:*")
            and e.host in (host, "*")
            and (e.operation in ops or e.operation is Op.ALL)
        )

    if any(e.permission_type is DENY and match(e, {op}) for e in found):
        return False
    granting = {op}
    if op is Op.DESCRIBE:
        granting |= {Op.READ, Op.WRITE, Op.DELETE, Op.ALTER}
    if op is Op.DESCRIBE_CONFIGS:
        granting |= {Op.ALTER_CONFIGS}
    return any(e.permission_type is ALLOW and match(e, granting) for e in found)


def authorizer_over(acls: Snap, allow_everyone: bool) -> AclAuthorizer:
    snap = MappingProxyType(dict(acls))
    return AclAuthorizer(lambda: snap, allow_everyone_if_no_acl_found=allow_everyone)


def decide(acls: Snap, request: Request, allow_everyone: bool) -> bool:
    return authorizer_over(acls, allow_everyone).authorize(*request)


def with_entry(acls: Snap, pattern: ResourcePattern, entry: AclEntry) -> Snap:
    out = dict(acls)
    out[pattern] = (*out.get(pattern, ()), entry)
    return out


@settings(max_examples=250)
@given(snapshots, requests(), st.booleans())
def test_index_agrees_with_a_naive_scan(acls: Snap, request: Request, everyone: bool) -> None:
    assert decide(acls, request, everyone) is reference(acls, request, everyone)


@settings(max_examples=200)
@given(snapshots, requests(), patterns, entries, st.booleans())
def test_adding_a_deny_never_allows(
    acls: Snap, request: Request, pattern: ResourcePattern, entry: AclEntry, everyone: bool
) -> None:
    deny = AclEntry(entry.principal, DENY, entry.host, entry.operation)
    if not decide(acls, request, everyone):
        assert not decide(with_entry(acls, pattern, deny), request, everyone)


@settings(max_examples=200)
@given(snapshots, requests(), st.booleans(), st.booleans(), st.booleans(), st.booleans())
def test_adding_a_matching_deny_always_denies(
    acls: Snap, request: Request, any_principal: bool, any_host: bool, as_all: bool, everyone: bool
) -> None:
    principal, host, op, rtype, name = request
    deny = AclEntry(ANYONE if any_principal else principal, DENY, "*" if any_host else host, Op.ALL if as_all else op)
    for pattern in (ResourcePattern(rtype, name), ResourcePattern(rtype, "*"), ResourcePattern(rtype, name[:1], PRE)):
        assert not decide(with_entry(acls, pattern, deny), request, everyone)


@settings(max_examples=200)
@given(snapshots, requests(), patterns, entries, st.booleans())
def test_adding_an_allow_never_denies(
    acls: Snap, request: Request, pattern: ResourcePattern, entry: AclEntry, everyone: bool
) -> None:
    allow = AclEntry(entry.principal, ALLOW, entry.host, entry.operation)
    _, _, _, rtype, name = request
    # With allow.everyone.if.no.acl.found, the first ACL on a resource does take access away from everyone it
    # does not match (Kafka's rule, see test_no_acl_found_means_no_acl_on_the_resource_not_no_matching_acl).
    assume(not everyone or any(applies(p, rtype, name) for p in acls))
    if decide(acls, request, everyone):
        assert decide(with_entry(acls, pattern, allow), request, everyone)


@settings(max_examples=250)
@given(snapshots, requests(), st.booleans())
def test_authorize_any_over_approximates_authorize(acls: Snap, request: Request, everyone: bool) -> None:
    """If some resource allows the operation, authorizeByResourceType says so. Operations granted only by
    implication are left out: authorizeByResourceType matches operations exactly (or ALL)."""
    principal, host, op, rtype, _ = request
    assume(op not in (Op.DESCRIBE, Op.DESCRIBE_CONFIGS))
    authz = authorizer_over(acls, everyone)
    if authz.authorize(*request):
        assert authz.authorize_any(principal, host, op, rtype)


def test_an_unreadable_acl_node_fails_closed() -> None:
    """acl_store.FAIL_CLOSED (what the cache puts in place of an unreadable ACL znode) denies every operation to
    everyone, even with allow.everyone.if.no.acl.found, and still admits super users."""
    from controller.store.kafka_acls import FAIL_CLOSED

    pattern = ResourcePattern(ResourceType.TOPIC, "corrupt", PatternType.LITERAL)
    authz = AclAuthorizer(
        lambda: {pattern: FAIL_CLOSED}, super_users=["User:admin"], allow_everyone_if_no_acl_found=True
    )
    for operation in (AclOperation.READ, AclOperation.DESCRIBE, AclOperation.ALTER_CONFIGS):
        assert not authz.authorize("User:alice", "10.0.0.1", operation, ResourceType.TOPIC, "corrupt")
    assert authz.authorize("User:admin", "10.0.0.1", AclOperation.DELETE, ResourceType.TOPIC, "corrupt")
    assert authz.authorize("User:alice", "10.0.0.1", AclOperation.READ, ResourceType.TOPIC, "other")
