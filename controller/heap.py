"""The node process's long-lived objects, kept out of Python's full garbage collections.

Why: a node at a million partitions holds several million objects that live as long as its metadata does (the
image, the controller's context, the watch table). CPython's cyclic collector scans every tracked object in a
full (generation 2) collection, and runs one whenever the objects that survived into that generation grew by a
quarter. A cold failover at a million partitions builds the image and then rewrites most partitions' states,
making millions of such objects: measured with ``gc.callbacks``, its node spent 14 s of a 46 s failover in full
collections that found nothing to free (every one of them collected 0 objects), each charged to whatever line
happened to allocate.

A phase that builds what lives on (a cache's full load, a failover) runs inside :func:`building`: the automatic
collector is off while any such phase runs, and when the last one ends everything alive is frozen
(``gc.freeze()``: moved to the permanent generation, which collections never scan; the pattern of CPython's
``gc`` documentation and of Instagram's pre-fork servers) and the collector is back on. A request that writes a
hundred thousand partitions is the same problem for its duration: it runs inside :func:`quiet` (no collection
while it runs). What such a request leaves alive is mostly the metadata it wrote, which lives on like a load's:
when the last quiet phase ends with at least :data:`KEPT_AFTER_QUIET` more objects alive than the collector last
saw, one full collection frees whatever garbage was made and everything alive is frozen, as after a build; a
smaller request is left to the collector as usual. Phases nest and overlap: the wire layer runs a bulk request
(its decoding, the controller's call, its answer) as one, so that this collection comes after the answer is sent.

Frozen objects are still freed by reference counting when the image lets go of them; only an object in a
reference cycle, alive when frozen and dropped later, is never freed. The phases make plain records (the
measurement above found no cycle among them), and the freezes that follow requests come with bulk writes only.

Only the node process does this (its entry point calls :func:`manage`): a test runner or a tool that embeds a
node must not have its collector switched off, or every object it made kept from it for the rest of the run.
"""

from __future__ import annotations

import gc
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["building", "manage", "managed", "quiet"]

log = logging.getLogger(__name__)

_managed = False
_lock = threading.Lock()
#: Phases under way (a cache's load, a failover, a request can overlap, on their own threads), and the last
#: :func:`building` phase that ended while others still ran: the last phase to end freezes what it built.
_phases = 0
_built: str | None = None

#: Net new tracked objects (the collector's young-generation count, which keeps counting while it is off) at
#: which a quiet phase is treated as a build. Left to itself the collector traverses each of them two or three
#: times (young, middle, then full collections that also rescan everything not frozen): a 100,000-partition
#: reassignment left ~2 s of a node's 8 s to it. One full collection and a freeze traverse them once.
KEPT_AFTER_QUIET = 100_000


def manage() -> None:
    """This process is a node: from now on :func:`building` keeps what it builds out of full collections."""
    global _managed
    _managed = True


def managed() -> bool:
    return _managed


@contextmanager
def building(what: str) -> Iterator[None]:
    """Run a phase that builds long-lived objects (``what`` names it in the debug log): no automatic
    collection while it runs, then every object alive when the last overlapping phase ends leaves the
    collector's scans. Nothing happens unless :func:`manage` was called."""
    with _phase(what, builds=True):
        yield


@contextmanager
def quiet(what: str) -> Iterator[None]:
    """Run a burst of work (``what``: a controller request) without automatic collection, instead of the
    collector rescanning the whole heap several times while a 100,000-partition request runs. What it made is
    left to the collector, or, past :data:`KEPT_AFTER_QUIET` objects, collected once and frozen. Nothing happens
    unless :func:`manage` was called."""
    with _phase(what, builds=False):
        yield


@contextmanager
def _phase(what: str, *, builds: bool) -> Iterator[None]:
    global _phases, _built
    if not _managed:
        yield
        return
    with _lock:
        _phases += 1
        if _phases == 1:
            gc.disable()
    try:
        yield
    finally:
        with _lock:
            _phases -= 1
            if builds:
                _built = what
            if _phases == 0:
                if _built is None and gc.get_count()[0] >= KEPT_AFTER_QUIET:
                    # requests only, which left many objects alive: the garbage they made (an exception's cycle)
                    # is freed, not frozen. After a build nothing is collected: its phases make plain records.
                    gc.collect()
                    _built = what
                if _built is not None:
                    gc.freeze()
                    log.debug("%s built: %d objects kept out of full collections", _built, gc.get_freeze_count())
                    _built = None
                gc.enable()
