"""Lockdown's and Kafka's ZooKeeper ACL rules (zkmodel.znode_acls), path by path."""

from __future__ import annotations

import pytest

from zkmodel.znode_acls import (
    ALL,
    CREATE,
    DELETE,
    READ,
    Identities,
    IdentityError,
    desired_acl,
    digest_identity,
    in_scope,
    kafka_default_acl,
    same_acl,
)

C = digest_identity("digest:ctl:secret", "--controller-identity")
B = digest_identity("digest:brk:secret", "--broker-identity")
WHO = Identities(C, B)


def test_digest_identity_is_zookeepers_stored_form() -> None:
    # ZooKeeper's DigestAuthenticationProvider.generateDigest("ctl:secret")
    assert (
        "digest",
        "ctl:" + __import__("base64").b64encode(__import__("hashlib").sha1(b"ctl:secret").digest()).decode(),
    ) == C
    for bad in ("ctl:secret", "digest:ctl", "digest::x", "sasl:ctl:x"):
        with pytest.raises(IdentityError, match="must be digest:user:password"):
            digest_identity(bad, "--controller-identity")


@pytest.mark.parametrize(
    ("path", "acl"),
    [
        ("/", [(ALL, *C), (READ, "world", "anyone")]),
        ("/brokers/topics/t", [(ALL, *C), (READ, "world", "anyone")]),
        ("/brokers/topics/t/partitions/0/state", [(ALL, *C), (READ, "world", "anyone")]),
        # credentials: no world READ, but brokers read their dynamic configs and SCRAM credentials
        ("/config/users/alice", [(ALL, *C), (READ, *B)]),
        ("/config/brokers", [(ALL, *C), (READ, *B)]),
        ("/brokers/ids", [(ALL, *C), (CREATE | DELETE | READ, *B), (READ, "world", "anyone")]),
        ("/brokers/ids/3", [(ALL, *C), (ALL, *B), (READ, "world", "anyone")]),
        ("/brokers/seqid", [(ALL, *C), (ALL, *B), (READ, "world", "anyone")]),
        ("/isr_change_notification/isr_change_0000000001", [(ALL, *C), (ALL, *B), (READ, "world", "anyone")]),
    ],
)
def test_lockdown_acl_per_path(path: str, acl: list[tuple[int, str, str]]) -> None:
    assert same_acl(desired_acl(path, WHO), acl)


def test_without_a_broker_identity_what_brokers_write_is_open_to_everyone() -> None:
    assert same_acl(
        desired_acl("/brokers/ids", Identities(C)), [(ALL, *C), (CREATE | DELETE | READ, "world", "anyone")]
    )


def test_credentials_stay_closed_to_everyone_without_a_broker_identity() -> None:
    assert desired_acl("/config/users/alice", Identities(C)) == [(ALL, *C)]


def test_scope_is_kafkas_secure_roots() -> None:
    assert in_scope("/") and in_scope("/kafka-acl/Topic/t") and in_scope("/feature")
    assert not in_scope("/consumers") and not in_scope("/zookeeper") and not in_scope("/brokersX")


def test_kafka_default_acls() -> None:
    assert kafka_default_acl("/brokers/topics/t", True) == [(ALL, "auth", ""), (READ, "world", "anyone")]
    assert kafka_default_acl("/config/users/u", True) == [(ALL, "auth", "")]
    assert kafka_default_acl("/consumers", True) == [(ALL, "world", "anyone")]
    assert kafka_default_acl("/brokers/topics/t", False) == [(ALL, "world", "anyone")]


def test_a_redacted_digest_matches_its_user_only() -> None:
    wanted = [(ALL, *C), (READ, "world", "anyone")]
    assert same_acl([(ALL, "digest", "ctl:x"), (READ, "world", "anyone")], wanted)
    assert not same_acl([(ALL, "digest", "other:x"), (READ, "world", "anyone")], wanted)
    assert not same_acl([(ALL, "digest", "ctl:x")], wanted)
    assert same_acl([(READ, "world", "anyone"), (ALL, *C)], wanted)  # order does not matter
