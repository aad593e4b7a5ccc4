"""WatchTable stands in for kazoo's ``defaultdict(set)`` of data watchers: every use kazoo and setwatches make of
it must answer as the defaultdict would, paths spelled back byte for byte, whichever side (compact or not) holds
a path."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from controller.zk import watch_table
from controller.zk.watch_table import WatchTable


def _callbacks() -> list[Any]:
    return [lambda _e, i=i: i for i in range(4)]


CALLBACKS = _callbacks()
PATHS = [
    "/brokers/topics/a/partitions/0/state",
    "/brokers/topics/a/partitions/7/state",
    "/bk/brokers/topics/a/partitions/0/state",  # another head: a chroot
    "/brokers/topics/b.c_d/partitions/12/state",
    "/brokers/topics/a/partitions/07/state",  # not canonical: held as any other path
    "/brokers/topics/a/partitions/-1/state",
    "/brokers/topics/a/partitions/99999/state",  # beyond the compact bound
    "/partitions/3/state",  # no head
    "/brokers/topics/a/partitions/٣/state",  # a non-ASCII digit
    "/brokers/topics/a",
    "/brokers/ids/1",
]
OPS = st.lists(
    st.tuples(
        st.sampled_from(["getitem_add", "add", "add_all", "pop", "discard", "get", "contains"]),
        st.sampled_from(PATHS),
        st.integers(0, 3),
    ),
    max_size=40,
)


def _as_model(table: WatchTable) -> dict[str, set[int]]:
    return {path: {CALLBACKS.index(c) for c in callbacks} for path, callbacks in table.items() if len(callbacks)}


def _model_view(model: defaultdict[str, set[Any]]) -> dict[str, set[int]]:
    return {path: {CALLBACKS.index(c) for c in callbacks} for path, callbacks in model.items() if callbacks}


@settings(max_examples=300)
@given(OPS)
def test_answers_as_kazoos_defaultdict(ops: list[tuple[str, str, int]]) -> None:
    table, model = WatchTable(), defaultdict(set)
    for op, path, i in ops:
        watch = CALLBACKS[i]
        if op == "getitem_add":
            table[path].add(watch)
            model[path].add(watch)
        elif op == "add":
            table.add(path, watch)
            model[path].add(watch)
        elif op == "add_all":
            table.add_all([path, PATHS[0]], watch)
            model[path].add(watch)
            model[PATHS[0]].add(watch)
        elif op == "pop":
            assert sorted(map(id, table.pop(path, []))) == sorted(map(id, model.pop(path, [])))
        elif op == "discard":
            slot = table.get(path)
            if slot is not None:
                slot.discard(watch)
            if path in model:
                model[path].discard(watch)
        elif op == "get":
            slot = table.get(path)
            expected = model.get(path)
            if expected:  # an emptied slot may read as absent or empty: kazoo never asks
                assert slot is not None and {CALLBACKS.index(c) for c in slot} == {CALLBACKS.index(c) for c in expected}
                assert all((c in slot) == (c in expected) for c in CALLBACKS) and len(slot) == len(expected)
        else:
            assert (path in table) == bool(model.get(path)) or (path in table and path in model)
        assert _as_model(table) == _model_view(model)
        assert len([1 for v in table.values() if len(v)]) == len(_model_view(model))


def test_a_state_watch_is_held_in_a_byte() -> None:
    """A million state watches calling one callback hold a head's bytes, not a path string and a set each."""
    table = WatchTable()
    paths = [f"/bk/brokers/topics/t{t}/partitions/{p}/state" for t in range(100) for p in range(10)]
    table.add_all(paths, CALLBACKS[0])
    table.add_all(paths[:5], CALLBACKS[1])
    assert len(table) == 1000 and not table._paths and len(table._heads) == 100
    assert sorted(table) == sorted(paths)
    assert set(table.pop(paths[0], [])) == {CALLBACKS[0], CALLBACKS[1]}
    assert paths[0] not in table and paths[1] in table and len(table) == 999
    for path in paths[1:10]:
        table.pop(path)
    assert "/bk/brokers/topics/t0" not in table._heads  # a head with no watch left is dropped


def test_a_256th_set_of_callbacks_leaves_the_compact_side(monkeypatch: Any) -> None:
    monkeypatch.setattr(watch_table, "_MAX_SETS", 2)
    table = WatchTable()
    path = "/brokers/topics/a/partitions/0/state"
    table.add(path, CALLBACKS[0])
    table.add(path, CALLBACKS[1])
    table.add(path, CALLBACKS[2])  # {0}, {0,1} interned; {0,1,2} is the third set
    assert path in table._paths and set(table[path]) == set(CALLBACKS[:3])
    assert set(table.pop(path, [])) == set(CALLBACKS[:3]) and path not in table


def test_a_persistent_watch_covers_its_subtree_and_stays() -> None:
    table = WatchTable()
    state = "/bk/brokers/topics/t/partitions/0/state"
    table.add_persistent("/bk/brokers/topics", CALLBACKS[0])
    table.add_persistent("/bk/brokers/topics", CALLBACKS[0])  # once
    table.add(state, CALLBACKS[1])
    assert table.pop(state, []) == [CALLBACKS[1], CALLBACKS[0]]  # the one-shot one is taken off
    assert table.pop(state, []) == [CALLBACKS[0]]  # the persistent one stays
    assert table.pop("/bk/brokers/topics", []) == [CALLBACKS[0]]
    assert table.pop("/bk/brokers/topicsx/a", []) == []  # a sibling with the prefix's spelling is not below it
    assert table.pop("/bk/brokers/ids/1", None) is None
    table.add("/bk/brokers/topics/t", CALLBACKS[0])  # the same callback one-shot too: it runs once
    assert table.pop("/bk/brokers/topics/t", []) == [CALLBACKS[0]]
    assert [callbacks for path, callbacks in table.items() if path == "/bk/brokers/topics"] == [(CALLBACKS[0],)]
