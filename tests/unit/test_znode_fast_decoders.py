"""The fast paths of the two decoders a failover runs a million times (``PartitionState.decode`` and
``TopicAssignment.decode``) must agree with the strict readers on every input: decode to the same value, or
step aside (None) so the strict reader raises its error naming what is wrong. Hypothesis feeds both the
shapes Kafka writes and near misses (booleans and floats that compare equal to ints, leading zeros, huge ids,
duplicates, extra keys)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zkmodel import fields
from zkmodel.errors import ZnodeFormatError
from zkmodel.topics import PartitionState, TopicAssignment, _state_fast, _topic_fast

PATH = "/brokers/topics/t/partitions/0/state"
# near-integers: what hashes and compares equal to an int but is not one in Kafka's reader
num = st.one_of(st.integers(-3, 6), st.integers(2**31 - 2, 2**31 + 1), st.booleans(), st.sampled_from([1.0, 2.0, -1.0]))
ids = st.lists(num, max_size=4)
uuid = st.sampled_from(["A8-DhJ4mSkSm6zqSS9BkUw", "not-a-uuid", "", "AAAAAAAAAAAAAAAAAAAAAA"])


state_obj: st.SearchStrategy[dict[str, Any]] = st.fixed_dictionaries(
    {},
    optional={
        "version": st.one_of(num, st.just("1")),
        "leader": num,
        "leader_epoch": num,
        "controller_epoch": num,
        "isr": st.one_of(ids, st.just("1,2")),
        "leader_recovery_state": num,
        "extra": st.integers(-5, 5),
    },
)


@settings(max_examples=600, deadline=None, derandomize=True)
@given(state_obj)
def test_state_fast_path_agrees_with_the_strict_reader(obj: dict[str, Any]) -> None:
    data = orjson.dumps(obj)
    fast = _state_fast(data)
    expected = _strict_state_value(data)
    if fast is None:
        return  # stepped aside: the strict reader decides (and decode() falls through to it)
    assert fast == expected and type(fast) is PartitionState
    assert PartitionState.decode(PATH, data) == expected


def _strict_state_value(data: bytes) -> Any:
    from zkmodel.fields import as_broker_ids, check_version, get_int, get_list, parse_object

    try:
        obj = parse_object(PATH, data)
        check_version(PATH, obj, (1,))
        recovery = get_int(PATH, obj, "leader_recovery_state", default=0)
        if recovery not in (0, 1):
            return ZnodeFormatError
        return PartitionState(
            get_int(PATH, obj, "leader", minimum=-2),
            get_int(PATH, obj, "leader_epoch", minimum=0),
            get_int(PATH, obj, "controller_epoch", minimum=0),
            as_broker_ids(PATH, "'isr'", get_list(PATH, obj, "isr")),
            recovery,
        )
    except ZnodeFormatError:
        return ZnodeFormatError


partitions = st.dictionaries(st.sampled_from(["0", "1", "2", "01", "x", "999999999", "1000000000"]), ids, max_size=3)
topic_obj: st.SearchStrategy[dict[str, Any]] = st.fixed_dictionaries(
    {"partitions": st.one_of(partitions, st.just([]))},
    optional={
        "version": st.one_of(st.integers(0, 4), st.booleans(), st.just(3.0)),
        "adding_replicas": st.one_of(st.just({}), partitions, st.just([])),
        "removing_replicas": st.one_of(st.just({}), partitions),
        "topic_id": st.one_of(uuid, st.none(), st.integers(-5, 5)),
    },
)


@settings(max_examples=600, deadline=None, derandomize=True)
@given(topic_obj)
def test_topic_fast_path_agrees_with_the_strict_reader(obj: dict[str, Any]) -> None:
    data = orjson.dumps(obj)
    fast = _topic_fast(data)
    if fast is None:
        return
    fields._BROKER_IDS.clear()
    expected = _strict_topic_value(data)
    assert fast == expected


def _strict_topic_value(data: bytes) -> Any:
    """TopicAssignment.decode with the fast path switched off."""
    import zkmodel.topics as T

    saved = T._topic_fast
    T._topic_fast = lambda _data: None  # type: ignore[assignment]
    try:
        return TopicAssignment.decode("/brokers/topics/t", data)
    except ZnodeFormatError:
        return ZnodeFormatError
    finally:
        T._topic_fast = saved


@pytest.mark.parametrize(
    "data",
    [
        b'{"controller_epoch":7,"leader":1,"version":1,"leader_epoch":3,"isr":[true,2]}',
        b'{"controller_epoch":7,"leader":1,"version":1,"leader_epoch":3,"isr":[1.0,2]}',
        b'{"controller_epoch":7,"leader":true,"version":1,"leader_epoch":3,"isr":[1,2]}',
        b'{"controller_epoch":7,"leader":1,"version":true,"leader_epoch":3,"isr":[1,2]}',
        b'{"controller_epoch":7,"leader":1,"version":1,"leader_epoch":3,"isr":[1,1]}',
    ],
)
def test_near_integers_are_refused_even_after_the_equal_list_was_cached(data: bytes) -> None:
    """[true, 2] hashes like (1, 2): a cache of validated lists must not let it through."""
    good = PartitionState.decode(PATH, b'{"controller_epoch":7,"leader":1,"version":1,"leader_epoch":3,"isr":[1,2]}')
    assert good.isr == (1, 2)
    with pytest.raises(ZnodeFormatError):
        PartitionState.decode(PATH, data)


def test_equal_replica_lists_are_shared() -> None:
    a = TopicAssignment.decode("/brokers/topics/a", b'{"version":3,"partitions":{"0":[1,2,3]},"topic_id":null}')
    b = TopicAssignment.decode("/brokers/topics/b", b'{"version":2,"partitions":{"4":[1,2,3]}}')
    s = PartitionState.decode(PATH, b'{"controller_epoch":7,"leader":1,"version":1,"leader_epoch":3,"isr":[1,2,3]}')
    assert a.partitions[0] is b.partitions[4] is s.isr


@st.composite
def topic_with_moves(draw: st.DrawFn) -> dict[str, Any]:
    """A topic znode with moves in flight: adding/removing drawn from each partition's replicas (valid), with
    now and then a partition the replicas lack, a replica outside them or one both adding and removing."""
    count = draw(st.integers(1, 4))
    replicas = {str(p): draw(st.lists(st.integers(0, 6), min_size=1, max_size=4, unique=True)) for p in range(count)}
    adding: dict[str, list[int]] = {}
    removing: dict[str, list[int]] = {}
    for p, reps in replicas.items():
        if draw(st.booleans()):
            adding[p] = draw(st.lists(st.sampled_from(reps), unique=True))
            rest = [r for r in reps if r not in adding[p]]
            if len(rest) > 0 and draw(st.booleans()):
                removing[p] = draw(st.lists(st.sampled_from(rest), min_size=1, unique=True))
    flaw = draw(st.sampled_from([None, None, None, "partition", "outside", "both"]))
    if flaw == "partition":
        adding["7"] = [0]
    elif flaw == "outside":
        removing["0"] = [99]
    elif flaw == "both":
        adding["0"] = removing["0"] = replicas["0"][:1]
    return {
        "version": draw(st.sampled_from([2, 3])),
        "partitions": replicas,
        "adding_replicas": adding,
        "removing_replicas": removing,
    }


@settings(max_examples=400, deadline=None, derandomize=True)
@given(topic_with_moves())
def test_topic_fast_path_takes_moves_in_flight_as_the_strict_reader_does(obj: dict[str, Any]) -> None:
    data = orjson.dumps(obj)
    fields._BROKER_IDS.clear()
    expected = _strict_topic_value(data)
    fast = _topic_fast(data)
    if expected is ZnodeFormatError:
        assert fast is None  # left to the strict reader, which names what is wrong
    else:
        assert fast == expected  # a valid move in flight is decoded by the fast path itself
