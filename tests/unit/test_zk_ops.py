"""build_transaction (controller/zk/ops.py) builds kazoo's request records itself: they must be exactly what
kazoo's own TransactionRequest methods build, under every chroot form a connect string can carry."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kazoo.client import KazooClient
from kazoo.security import OPEN_ACL_UNSAFE, make_digest_acl

from controller.zk.ops import Check, Create, Delete, Op, SetData, build_transaction, set_acl_policy

SEGMENT = st.text(alphabet="abcxyz-_.0123456789", min_size=1, max_size=8).filter(lambda s: s not in (".", ".."))
PATH = st.lists(SEGMENT, min_size=1, max_size=4).map(lambda parts: "/" + "/".join(parts))
CHROOT = st.sampled_from(["", "/bk", "/bk/", "/a/b/c", "/a/b/c/"])
VERSION = st.integers(min_value=-1, max_value=2**31 - 1)
DATA = st.binary(max_size=16)


def _op() -> st.SearchStrategy[Op]:
    return st.one_of(
        st.builds(SetData, PATH, DATA, VERSION),
        st.builds(Create, PATH, DATA, st.booleans(), st.booleans()),
        st.builds(Delete, PATH, VERSION),
        st.builds(Check, PATH, VERSION),
    )


def _kazoo_built(client: KazooClient, ops: list[Op]) -> list[object]:
    t = client.transaction()
    for op in ops:
        if isinstance(op, SetData):
            t.set_data(op.path, op.data, op.version)
        elif isinstance(op, Create):
            assert op.data is not None
            t.create(op.path, op.data, acl=OPEN_ACL_UNSAFE, ephemeral=op.ephemeral, sequence=op.sequential)
        elif isinstance(op, Delete):
            t.delete(op.path, op.version)
        else:
            t.check(op.path, op.version)
    return list(t.operations)


@given(chroot=CHROOT, ops=st.lists(_op(), max_size=6))
def test_records_are_kazoos_own(chroot: str, ops: list[Op]) -> None:
    client = KazooClient(hosts="127.0.0.1:1" + chroot)
    assert list(build_transaction(client, ops).operations) == _kazoo_built(client, ops)


@pytest.mark.parametrize("chroot", ["", "/bk"])
def test_root_and_null_data_and_the_sessions_acl_policy(chroot: str) -> None:
    client = KazooClient(hosts="127.0.0.1:1" + chroot)
    acl = [make_digest_acl("kafka", "secret", all=True)]
    set_acl_policy(client, lambda path: [(a.perms, a.id.scheme, a.id.id) for a in acl])  # as ZkSession registers it
    t = build_transaction(client, [Check("/", 3), Create("/brokers/topics/t/partitions", None)])
    check, create = t.operations
    assert check.path == (chroot or "/") and check.version == 3
    assert create.path == chroot + "/brokers/topics/t/partitions"
    assert create.data is None and create.acl == acl and create.flags == 0
