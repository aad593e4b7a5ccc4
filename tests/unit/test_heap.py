"""Only a node process keeps what it builds out of the collector's full scans (controller.heap)."""

from __future__ import annotations

import gc
import subprocess
import sys

from controller import heap


def test_outside_a_node_process_the_collector_is_left_alone() -> None:
    assert not heap.managed()
    before = gc.get_freeze_count()
    with heap.building("a test's load"):
        assert gc.isenabled()
    assert gc.get_freeze_count() == before


NODE = """
import gc, threading
from controller import heap
heap.manage()
first = threading.Event()
second_done = threading.Event()
def other_phase():
    with heap.building("a failover"):
        first.set()
        second_done.wait()
t = threading.Thread(target=other_phase)
with heap.building("a full load"):
    loaded = [[i] for i in range(10_000)]
    print(gc.isenabled())
    t.start(); first.wait()
print(gc.isenabled(), gc.get_freeze_count())  # the failover still runs
second_done.set(); t.join()
print(gc.isenabled(), gc.get_freeze_count())
gc.collect()
print(sum(1 for o in gc.get_objects() if o is loaded))
"""


def test_a_node_process_collects_nothing_while_building_then_freezes_what_was_built() -> None:
    out = subprocess.run([sys.executable, "-c", NODE], capture_output=True, text=True, check=True).stdout.split()
    during, after_one, frozen_after_one, after_both, frozen, still_scanned = out
    assert during == "False"
    assert (after_one, frozen_after_one) == ("False", "0")  # overlapping phases: the last one's end counts
    assert after_both == "True"
    assert int(frozen) >= 10_000  # the loaded lists and everything else alive
    assert still_scanned == "0"  # frozen objects are in none of the collector's generations


QUIET = """
import gc, threading
from controller import heap
heap.manage()
with heap.quiet("a request"):
    print(gc.isenabled())
print(gc.isenabled(), gc.get_freeze_count())  # a request freezes nothing
built = threading.Event()
with heap.quiet("a request"):
    def load():
        with heap.building("a full load"):
            pass
        built.set()
    threading.Thread(target=load).start()
    built.wait()
    print(gc.isenabled(), gc.get_freeze_count())  # the load ended first: still off, not frozen yet
print(gc.isenabled(), gc.get_freeze_count() > 0)  # the request ends last, and freezes what the load built
"""


def test_a_request_runs_without_collection_and_freezes_only_what_an_overlapping_load_built() -> None:
    out = subprocess.run([sys.executable, "-c", QUIET], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "True", "0", "False", "0", "True", "True"]


#: Waits (up to 30 s) until the collector is back on, i.e. a bulk request's objects have settled.
#: Waits (up to 30 s) until the collector is back on, i.e. bulk requests' objects have settled.
SETTLED = """
import time
def settled():
    deadline = time.monotonic() + 30
    while not gc.isenabled() and time.monotonic() < deadline:
        time.sleep(0.01)
    return gc.isenabled()
"""

HEAVY = """
import gc, weakref
from controller import heap
heap.manage()
class Node:
    pass
with heap.quiet("a small request"):
    small = [[i] for i in range(1_000)]
print(gc.isenabled(), gc.get_freeze_count())  # left to the collector
with heap.quiet("a request"):
    written = [[i] for i in range(heap.KEPT_AFTER_QUIET + 1_000)]
    cycle = Node(); cycle.me = cycle  # garbage the request made: freed, not frozen
    gone = weakref.ref(cycle)
    del cycle
print(gc.isenabled(), gone() is None, gc.get_freeze_count() >= heap.KEPT_AFTER_QUIET)
gc.collect()
print(sum(1 for o in gc.get_objects() if o is written))
"""


def test_a_request_that_leaves_many_objects_alive_frees_its_garbage_then_freezes_them() -> None:
    out = subprocess.run([sys.executable, "-c", HEAVY], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["True", "0", "True", "True", "True", "0"]


BULK = (
    """
import gc, weakref
from controller import heap
heap.manage()
heap.SETTLE_S = 1.0  # the print right after the bulk request comes well within it
class Node:
    pass
with heap.bulk_request("a bulk frame"):
    written = [[i] for i in range(heap.KEPT_AFTER_QUIET + 1_000)]
    cycle = Node(); cycle.me = cycle
    gone = weakref.ref(cycle)
    del cycle
print(gc.isenabled(), gc.get_freeze_count())  # settling: the collector waits for the node to be idle
"""
    + SETTLED
    + """
print(settled(), gone() is None, gc.get_freeze_count() >= heap.KEPT_AFTER_QUIET)
"""
)


def test_a_bulk_request_is_settled_once_the_node_is_idle() -> None:
    out = subprocess.run([sys.executable, "-c", BULK], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "0", "True", "True", "True"]


BATCHES = (
    """
import gc, time
from controller import heap
heap.manage()
heap.SETTLE_S = 2.0  # far longer than this script takes between its batches
written = []
for batch in range(3):
    with heap.bulk_request("a bulk frame"):
        written.append([[i] for i in range(heap.KEPT_AFTER_QUIET + 1_000)])
    print(gc.isenabled(), gc.get_freeze_count())  # nothing settled between batches
start = time.monotonic()
"""
    + SETTLED
    + """
print(settled(), time.monotonic() - start >= 1.0, gc.get_freeze_count() >= 3 * heap.KEPT_AFTER_QUIET)
"""
)


def test_batches_sent_one_after_another_are_settled_once_after_the_last() -> None:
    out = subprocess.run([sys.executable, "-c", BATCHES], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "0"] * 3 + ["True", "True", "True"]


SMALL_TRAFFIC = """
import gc, time
from controller import heap
heap.manage()
heap.SETTLE_S = 0.3
with heap.bulk_request("a bulk frame"):
    written = [[i] for i in range(heap.KEPT_AFTER_QUIET + 1_000)]
start = time.monotonic()
while not gc.isenabled() and time.monotonic() - start < 30:
    with heap.quiet("a small request"):  # one at least every 50 ms, each ending with the collector off
        small = [[i] for i in range(100)]
    time.sleep(0.05)
print(gc.isenabled(), time.monotonic() - start < 10, gc.get_freeze_count() >= heap.KEPT_AFTER_QUIET)
"""


def test_small_requests_do_not_put_a_bulk_requests_settling_off() -> None:
    out = subprocess.run(
        [sys.executable, "-c", SMALL_TRAFFIC], capture_output=True, text=True, check=True
    ).stdout.split()
    assert out == ["True", "True", "True"]


NESTED = """
import gc
from controller import heap
heap.manage()
with heap.quiet("a request on the wire"):
    with heap.quiet("the controller's call"):
        written = [[i] for i in range(heap.KEPT_AFTER_QUIET + 1_000)]
    print(gc.isenabled(), gc.get_freeze_count())  # the answer is still to be written: nothing collected yet
print(gc.isenabled(), gc.get_freeze_count() >= heap.KEPT_AFTER_QUIET)
"""


def test_a_request_is_collected_and_frozen_when_its_outermost_phase_ends() -> None:
    out = subprocess.run([sys.executable, "-c", NESTED], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "0", "True", "True"]
