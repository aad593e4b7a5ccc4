"""Kafka's AclBindingFilter semantics (ResourcePatternFilter / AccessControlEntryFilter .matches)."""

from __future__ import annotations

import pytest

from controller.store.kafka_acls import (
    ANY_FILTER,
    AclBinding,
    AclBindingFilter,
    FilterPattern,
    entry_matches,
    filter_acls,
    matches,
    pattern_matches,
    validate_binding,
)
from zkmodel.kafka_acls import AclEntry, AclOperation, PatternType, PermissionType, ResourcePattern, ResourceType

T, G = ResourceType.TOPIC, ResourceType.GROUP
LIT, PRE = PatternType.LITERAL, PatternType.PREFIXED
ALICE_READ = AclEntry("User:alice", PermissionType.ALLOW, "*", AclOperation.READ)
BOB_DENY = AclEntry("User:bob", PermissionType.DENY, "10.0.0.1", AclOperation.WRITE)


def topic(name: str, kind: PatternType = LIT) -> ResourcePattern:
    return ResourcePattern(T, name, kind)


def test_any_filter_matches_everything() -> None:
    for pattern in (topic("foo"), topic("f", PRE), topic("*"), ResourcePattern(G, "g", PRE)):
        for entry in (ALICE_READ, BOB_DENY):
            assert matches(ANY_FILTER, pattern, entry)


def test_pattern_type_any_with_name_is_exact_on_every_type() -> None:
    f = AclBindingFilter(T, "foo", FilterPattern.ANY)
    assert pattern_matches(f, topic("foo")) and pattern_matches(f, topic("foo", PRE))
    assert not pattern_matches(f, topic("fo", PRE))  # ANY is not MATCH: no prefix matching
    assert not pattern_matches(f, topic("*"))  # nor wildcard
    assert not pattern_matches(f, ResourcePattern(G, "foo"))


def test_literal_filter_is_exact() -> None:
    f = AclBindingFilter(T, "foo", LIT)
    assert pattern_matches(f, topic("foo"))
    assert not pattern_matches(f, topic("foo", PRE))
    assert not pattern_matches(f, topic("*"))
    assert not pattern_matches(f, topic("foobar"))
    wildcard = AclBindingFilter(T, "*", LIT)
    assert pattern_matches(wildcard, topic("*")) and not pattern_matches(wildcard, topic("foo"))


def test_prefixed_filter_is_exact_on_the_prefix() -> None:
    f = AclBindingFilter(T, "foo", PRE)
    assert pattern_matches(f, topic("foo", PRE))
    assert not pattern_matches(f, topic("fo", PRE))  # only MATCH treats the filter name as a resource name
    assert not pattern_matches(f, topic("foo"))


def test_match_filter() -> None:
    f = AclBindingFilter(T, "foobar", FilterPattern.MATCH)
    assert pattern_matches(f, topic("foobar"))  # literal exact
    assert pattern_matches(f, topic("*"))  # literal wildcard
    assert pattern_matches(f, topic("foo", PRE)) and pattern_matches(f, topic("foobar", PRE))  # prefixes
    assert not pattern_matches(f, topic("foobarbaz", PRE))
    assert not pattern_matches(f, topic("bar", PRE))
    assert not pattern_matches(f, topic("foo"))  # a literal that is only a prefix
    assert not pattern_matches(f, topic("*", PRE))  # '*' is not special for prefixed patterns
    assert not pattern_matches(f, ResourcePattern(G, "foobar"))
    # MATCH without a name matches every pattern of the type.
    assert pattern_matches(AclBindingFilter(T, None, FilterPattern.MATCH), topic("x", PRE))


def test_null_name_matches_any_name_of_the_pattern_type() -> None:
    f = AclBindingFilter(T, None, PRE)
    assert pattern_matches(f, topic("a", PRE)) and not pattern_matches(f, topic("a"))
    assert pattern_matches(AclBindingFilter(None, None, LIT), ResourcePattern(G, "g"))


def test_resource_type_any() -> None:
    f = AclBindingFilter(None, "foo", LIT)
    assert pattern_matches(f, topic("foo")) and pattern_matches(f, ResourcePattern(G, "foo"))


@pytest.mark.parametrize(
    ("f", "alice", "bob"),
    [
        (AclBindingFilter(principal="User:alice"), True, False),
        (AclBindingFilter(host="10.0.0.1"), False, True),
        (AclBindingFilter(host="*"), True, False),  # '*' in a filter is literal, not a wildcard
        (AclBindingFilter(operation=AclOperation.READ), True, False),
        (AclBindingFilter(operation=AclOperation.ALL), False, False),  # ALL is an ACL value, not ANY
        (AclBindingFilter(permission_type=PermissionType.DENY), False, True),
        (AclBindingFilter(principal="User:*"), False, False),
        (AclBindingFilter(), True, True),
    ],
)
def test_entry_filters(f: AclBindingFilter, alice: bool, bob: bool) -> None:
    assert entry_matches(f, ALICE_READ) is alice
    assert entry_matches(f, BOB_DENY) is bob


def test_both_halves_must_match() -> None:
    f = AclBindingFilter(T, "foo", LIT, principal="User:bob")
    assert not matches(f, topic("foo"), ALICE_READ)
    assert matches(f, topic("foo"), BOB_DENY)
    assert not matches(f, topic("bar"), BOB_DENY)


def test_filter_acls_groups_and_drops_empty() -> None:
    acls = {topic("foo"): (ALICE_READ, BOB_DENY), topic("f", PRE): (BOB_DENY,), topic("bar"): (ALICE_READ,)}
    got = filter_acls(acls, AclBindingFilter(T, "foo", FilterPattern.MATCH, principal="User:alice"))
    assert got == {topic("foo"): (ALICE_READ,)}


@pytest.mark.parametrize(
    ("pattern", "principal", "error"),
    [
        (topic("ok"), "User:alice", None),
        (topic("a/b"), "User:alice", "invalid resource name"),
        (topic(""), "User:alice", "Invalid empty resource name"),
        (ResourcePattern(ResourceType.CLUSTER, "x"), "User:alice", "only valid name for the CLUSTER"),
        (ResourcePattern(ResourceType.CLUSTER, "kafka-cluster"), "User:alice", None),
        (topic("ok"), "alice", "principalType:principalName"),
    ],
)
def test_validate_binding(pattern: ResourcePattern, principal: str, error: str | None) -> None:
    entry = AclEntry(principal, PermissionType.ALLOW, "*", AclOperation.READ)
    got = validate_binding(AclBinding(pattern, entry))
    assert (got is None) if error is None else (got is not None and error in got)
