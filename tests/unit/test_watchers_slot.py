"""watches.Watchers stands in for kazoo's per-path ``set`` of callbacks: it must behave as one for every use
kazoo makes of it (add, iterate, len, discard, membership), with set semantics for a callback added twice."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from controller.zk.watch_table import Watchers


def _callbacks() -> list[Any]:
    return [lambda _e, i=i: i for i in range(4)]


CALLBACKS = _callbacks()
OPS = st.lists(st.tuples(st.sampled_from(["add", "discard"]), st.integers(0, 3)), max_size=20)


@given(st.integers(0, 3), OPS)
def test_behaves_as_a_set(first: int, ops: list[tuple[str, int]]) -> None:
    slot, model = Watchers(CALLBACKS[first]), {CALLBACKS[first]}
    for op, i in ops:
        getattr(slot, op)(CALLBACKS[i])
        getattr(model, op)(CALLBACKS[i])
        assert sorted(map(id, slot)) == sorted(map(id, model))
        assert len(slot) == len(model) and len(list(slot)) == len(model)
        assert all((c in slot) == (c in model) for c in CALLBACKS)


def test_bound_methods_compare_equal() -> None:
    """kazoo's users pass bound methods, a fresh object each time: equal ones are one watcher."""

    class Handler:
        def on(self, _event: Any) -> None:
            return None

    h = Handler()
    slot = Watchers(h.on)
    slot.add(h.on)
    assert len(slot) == 1
    slot.discard(h.on)
    assert len(slot) == 0 and list(slot) == []
