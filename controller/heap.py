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
when the last phase ends with at least :data:`KEPT_AFTER_QUIET` more objects alive than the collector last saw,
one full collection frees whatever garbage was made and everything alive is frozen, as after a build ("settling").
If a bulk frame (:func:`bulk_request`, one batch of a client's many) took part, the settling waits until the node
has run no bulk frame for :data:`SETTLE_S` (at once past :data:`SETTLE_AT_ONCE` objects): a client that sends its
batches one after another has them settled together after the last, not a collection in front of each next
batch. Other requests meanwhile neither restart the collector nor put the settling off; a request that leaves
fewer objects, outside such a wait, is left to the collector as usual. Phases nest
and overlap: the wire layer runs a bulk request (its decoding, the controller's call, its answer) as one, so that
nothing is collected before its answer is sent.

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

__all__ = ["building", "bulk_request", "manage", "managed", "quiet"]

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
#: How long the node runs no bulk frame before what bulk frames left alive is collected and frozen: a client that
#: sends its batches one after another (CreateTopics of 1,000 topics at a time) has its next batch on the wire
#: well within it, so the batches' objects are settled once, after the last one.
SETTLE_S = 0.2
#: Net new tracked objects at which a bulk request's end settles at once: a bound on the one collection's pause
#: (~0.3 s a million objects here) and on the cyclic garbage left unfreed while the collector waits.
SETTLE_AT_ONCE = 1_000_000
_settle_timer: threading.Timer | None = None
_settle_due = False
#: Whether a :func:`bulk_request` phase took part since the last time no phase ran.
_bulk_seen = False


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
def bulk_request(what: str) -> Iterator[None]:
    """:func:`quiet` for a request that came as a bulk frame (one batch of a client's many, likely): past
    :data:`KEPT_AFTER_QUIET` objects, what it left is settled once no bulk request has run for :data:`SETTLE_S`,
    so that the client's next batch does not wait for a collection."""
    with _phase(what, builds=False, bulk=True):
        yield


@contextmanager
def _phase(what: str, *, builds: bool, bulk: bool = False) -> Iterator[None]:
    global _phases, _built, _bulk_seen
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
            _bulk_seen = _bulk_seen or bulk
            if _phases == 0:
                _last_phase_ended(what)


def _last_phase_ended(what: str) -> None:
    """With ``_lock`` held, no phase running: freeze what a build made, settle a bulk request's objects now or
    after :data:`SETTLE_S`, or hand the collector back."""
    global _built, _settle_timer, _bulk_seen, _settle_due
    bulk, _bulk_seen = _bulk_seen, False
    if _built is not None:
        # After a build nothing is collected: its phases make plain records.
        _cancel_settling()
        _settle_due = False
        gc.freeze()
        log.debug("%s built: %d objects kept out of full collections", _built, gc.get_freeze_count())
        _built = None
        gc.enable()
        return
    young = gc.get_count()[0]
    if young >= SETTLE_AT_ONCE:
        _settle(what)
    elif bulk and young >= KEPT_AFTER_QUIET:
        # Bulk requests left many objects alive: the collector stays off until the node has run no bulk request
        # for SETTLE_S, so that a client's next batch, sent as soon as this one was answered, does not wait for
        # a collection (and the batches' objects are traversed once, together).
        _cancel_settling()
        _settle_timer = threading.Timer(SETTLE_S, _settle_when_idle, args=(what,))
        _settle_timer.daemon = True
        _settle_timer.start()
    elif _settle_due or (_settle_timer is None and young >= KEPT_AFTER_QUIET):
        _settle(what)  # the wait ran out during this request, or one request left that many
    elif _settle_timer is None:
        gc.enable()
    # else: other requests while bulk ones settle; they do not put the collection off


def _settle(what: str) -> None:
    """With ``_lock`` held: one full collection frees the garbage the requests made (an exception's cycle), then
    everything alive is frozen and the collector is back on."""
    global _settle_due
    _cancel_settling()
    _settle_due = False
    freed = gc.collect()
    gc.freeze()
    log.debug("after %s: %d objects freed, %d kept out of full collections", what, freed, gc.get_freeze_count())
    gc.enable()


def _settle_when_idle(what: str) -> None:
    global _settle_due, _settle_timer
    with _lock:
        if _settle_timer is None or threading.current_thread() is not _settle_timer:
            return  # cancelled, or replaced by a later request's timer
        _settle_timer = None
        if _phases == 0:
            _settle(what)
        else:
            _settle_due = True  # the running phases' end settles, unless a bulk request among them waits again


def _cancel_settling() -> None:
    global _settle_timer
    if _settle_timer is not None:
        _settle_timer.cancel()
        _settle_timer = None
