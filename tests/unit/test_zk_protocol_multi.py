"""The create2 write multi's codec (controller/zk/protocol/multi.py), against hand-built bytes: no server."""

from __future__ import annotations

import struct

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError, RolledBackError, RuntimeInconsistency
from kazoo.protocol.serialization import Create, Transaction
from kazoo.protocol.states import ZnodeStat
from kazoo.security import OPEN_ACL_UNSAFE

from controller.zk.ops import Check, Delete, Op, SetData, build_multi, build_transaction, set_acl_policy
from controller.zk.ops import Create as CreateOp
from controller.zk.protocol.multi import (
    CHECKED,
    DELETED,
    Created,
    MultiRequest,
    SetDone,
    parse_multi_response,
)

HEADER = struct.Struct("!iBi")
STAT = struct.Struct("!qqqqiiiqiiq")
DONE = HEADER.pack(-1, True, -1)


def _string(s: str) -> bytes:
    return struct.pack("!i", len(s.encode())) + s.encode()


def _stat(zxid: int, version: int) -> ZnodeStat:
    return ZnodeStat(zxid, zxid, 1000, 1000, version, 0, 0, 0, 3, 0, zxid)


def test_success_results_round_trip() -> None:
    created, changed = _stat(0x10, 0), _stat(0x10, 4)
    body = (
        HEADER.pack(13, False, 0)
        + HEADER.pack(15, False, 0)
        + _string("/bk/a/b")
        + STAT.pack(*created)
        + HEADER.pack(15, False, 0)
        + _string("/bk")
        + STAT.pack(*created)
        + HEADER.pack(5, False, 0)
        + STAT.pack(*changed)
        + HEADER.pack(2, False, 0)
        + DONE
    )
    prefix = b"\x00" * 7  # the reply header before the body
    results = parse_multi_response(prefix + body, len(prefix), chroot="/bk")
    assert results == [CHECKED, Created("/a/b", created), Created("/", created), SetDone(changed), DELETED]
    first = results[1]
    assert isinstance(first, Created) and isinstance(first.stat, ZnodeStat) and first.stat.version == 0
    assert all(results)  # every answer is truthy, as kazoo's True/path/ZnodeStat results were


def test_failure_results_are_kazoos_exceptions() -> None:
    body = b"".join(HEADER.pack(-1, False, code) + struct.pack("!i", code) for code in (0, -103, -2, -2)) + DONE
    results = parse_multi_response(body, 0)
    assert [type(r) for r in results] == [RolledBackError, BadVersionError, RuntimeInconsistency, RuntimeInconsistency]
    assert [type(r) for r in Transaction.deserialize(body, 0)] == [type(r) for r in results]
    exists = HEADER.pack(-1, False, -110) + struct.pack("!i", -110) + DONE
    assert isinstance(parse_multi_response(exists, 0)[0], NodeExistsError)


def test_a_plain_create_result_has_no_stat() -> None:
    """ZooKeeper before 3.7.2 / 3.8.2 / 3.9.0 answers a create2 in a multi as a create (path only)."""
    body = HEADER.pack(1, False, 0) + _string("/bk/a") + HEADER.pack(2, False, 0) + DONE
    assert parse_multi_response(body, 0, chroot="/bk") == [Created("/a", None), DELETED]


def test_a_read_result_is_refused() -> None:
    with pytest.raises(ValueError, match="unexpected result type 4"):
        parse_multi_response(HEADER.pack(4, False, 0) + _string("/a") + DONE, 0)


@pytest.mark.parametrize("chroot", ["", "/bk"])
def test_request_bytes_are_kazoos_with_create2(chroot: str) -> None:
    """The same bytes kazoo's Transaction sends, but for each create's opcode (15, not 1)."""
    client = KazooClient(hosts="127.0.0.1:1" + chroot)
    ops: list[Op] = [
        Check("/controller_epoch", 7),
        CreateOp("/brokers/topics/t", b"{}"),
        CreateOp("/brokers/topics/t/partitions", None, sequential=True),
        SetData("/brokers/topics/u", b"x", 3),
        Delete("/admin/delete_topics/t", -1),
    ]
    ours = build_multi(client, ops)
    assert isinstance(ours, MultiRequest) and ours.type == 14 and ours.ops == 5 and ours.chroot == chroot
    kazoos = bytearray(Transaction(build_transaction(client, ops).operations).serialize())
    create_header = HEADER.pack(Create.type, False, -1)
    assert kazoos.count(create_header) == 2
    assert ours.serialize() == bytes(kazoos).replace(create_header, HEADER.pack(15, False, -1))


def test_acl_is_the_sessions() -> None:
    client = KazooClient(hosts="127.0.0.1:1")
    set_acl_policy(client, lambda path: [(a.perms, a.id.scheme, a.id.id) for a in OPEN_ACL_UNSAFE])  # as ZkSession does
    request = build_multi(client, [CreateOp("/a", b"1")])
    assert (
        request.serialize()
        == HEADER.pack(15, False, -1) + bytes(Create("/a", b"1", OPEN_ACL_UNSAFE, 0).serialize()) + DONE
    )
