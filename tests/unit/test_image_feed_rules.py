"""The pure rules of the node image's committed-write feed: which znodes it holds, and where watches re-arm."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from controller.broker.image_model import rearm_points, znode_kind


def test_the_image_holds_topic_and_state_znodes_only() -> None:
    assert znode_kind("/brokers/topics/orders") == ("orders", None)
    assert znode_kind("/brokers/topics/orders/partitions/12/state") == ("orders", 12)
    for other in (
        "/brokers/topics",
        "/brokers/topics/orders/partitions",
        "/brokers/topics/orders/partitions/12",
        "/brokers/topics/orders/partitions/x/state",
        "/config/topics/orders",
        "/admin/delete_topics/orders",
        "/brokers/ids/1",
    ):
        assert znode_kind(other) is None, other


def test_watches_re_arm_at_the_end_of_each_run_of_consecutive_zxids() -> None:
    assert rearm_points([]) == {}
    assert rearm_points([7, 5, 6, 9, 10, 20]) == {5: 7, 6: 7, 7: 7, 9: 10, 10: 10, 20: 20}
    epoch = 3 << 32  # a new epoch's first transaction is not the previous epoch's last + 1
    assert rearm_points([epoch - 1, epoch + 1]) == {epoch - 1: epoch - 1, epoch + 1: epoch + 1}


@given(st.sets(st.integers(min_value=1, max_value=200), max_size=60))
def test_no_other_transaction_lies_between_a_write_and_its_re_arm_point(zxids: set[int]) -> None:
    points = rearm_points(zxids)
    assert points.keys() == zxids
    for zxid, point in points.items():
        assert point >= zxid
        # every zxid from the write to the point is one of these writes: nobody else's change can be skipped
        assert set(range(zxid, point + 1)) <= zxids
        # and the point is as late as that allows
        assert point + 1 not in zxids
