"""Fuzzing every znode decoder of ``zkmodel`` with what other tools leave in ZooKeeper: several JSON-shaped
mutations at once (wrong types, unknown versions, negative and out-of-range ids, duplicated replicas,
removed and duplicated keys), payloads of about a megabyte (huge arrays, maps, strings, nesting) and a
megabyte of raw garbage.

The promise under test (zkmodel.errors): a decoder returns a value or raises ``ZnodeFormatError`` naming the
path, nothing else, and quickly. Since the node logs that error as one line naming the bad znode, the reason
must also be a line an operator can read: a single line of bounded length, however big the znode.

``tests/unit/test_znode_properties.py`` holds the codecs to round trips, key order, single mutations and
named bad data; its value strategies are reused here.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.fuzz.budget import budget, no_hang
from tests.unit.test_znode_properties import CODECS, JSON_CODECS, REALISTIC_PATHS, Codec, _dump, _locations
from zkmodel.errors import ZnodeFormatError
from zkmodel.registry import decode_znode, decoder_for

pytestmark = pytest.mark.fuzz

MEGABYTE = 1_000_000  # what a foreign tool can still write under ZooKeeper's default jute.maxbuffer (1 MiB)
#: The longest reason a log line should carry (the bad znode's path comes before it).
MAX_REASON = 1000
HANG_S = 20.0


def decode_or_reject(path: str, data: bytes | None) -> Any:
    """The decoded value, or None after checking the ZnodeFormatError: this path, a one-line bounded reason."""
    with no_hang(HANG_S, f"decoding {path}"):
        try:
            return decode_znode(path, data)
        except ZnodeFormatError as exc:
            assert exc.path == path
            assert str(exc) == f"{path}: {exc.reason}"
            assert exc.reason.strip(), "an empty reason"
            assert "\n" not in exc.reason and "\r" not in exc.reason, f"a multi-line reason: {exc.reason[:200]!r}"
            assert len(exc.reason) <= MAX_REASON, f"a {len(exc.reason)}-character reason: {exc.reason[:200]!r}..."
            return None


# --- several JSON-shaped mutations at once ------------------------------------------------------------------------

WRONG_VERSIONS = [0, -1, 4, 99, 2**31, 2**63, "1", "2", 1.0, True, None, [], {}]
OTHER_TYPES = [None, True, False, 0, 1.5, "", "x", "1", [], [1], {}, {"0": [1]}]
OUT_OF_RANGE = [-1, -2, -3, -(2**31), -(2**31) - 1, 2**31 - 1, 2**31, 2**63 - 1, 2**63, 2**64 - 1, -(2**63) - 1]
_REMOVE = object()


def _get(doc: Any, location: tuple[Any, ...]) -> Any:
    for step in location:
        doc = doc[step]
    return doc


def _set(doc: Any, location: tuple[Any, ...], new: Any) -> Any:
    """A copy of ``doc`` with the member at ``location`` replaced (or removed: ``_REMOVE``)."""
    if not location:
        return new
    head, *rest = location
    copy: Any = dict(doc) if isinstance(doc, dict) else list(doc)
    if rest:
        copy[head] = _set(doc[head], tuple(rest), new)
    elif new is _REMOVE:
        del copy[head]
    else:
        copy[head] = new
    return copy


@st.composite
def broken(draw: st.DrawFn, value: Any) -> Any:
    """What a careless tool would write instead of ``value``: the same kind, wrong (negative, out of range,
    duplicated, emptied), or another kind."""
    choices: list[st.SearchStrategy[Any]] = [st.sampled_from(OTHER_TYPES), st.just(_REMOVE)]
    if isinstance(value, int) and not isinstance(value, bool):
        choices += [st.sampled_from(OUT_OF_RANGE), st.just(-value - 1), st.just(float(value)), st.just(str(value))]
    if isinstance(value, list) and value:
        choices += [
            st.just([*value, value[0]]),  # a duplicate (replicas, ISR, endpoints, partitions)
            st.just([value[0], *value]),
            st.just([-1 if isinstance(v, int) else v for v in value]),
            st.just(value * 50),
        ]
    if isinstance(value, dict) and value:
        key = draw(st.sampled_from(sorted(value)), label="key")
        choices += [st.just({**value, "-1": value[key]}), st.just({**value, f"0{key}": value[key]})]
    if isinstance(value, str):
        choices += [st.just(value + "\x00"), st.just(value * 30), st.just(value.upper()), st.just(f" {value}")]
    return draw(st.one_of(choices), label="broken")


@st.composite
def mutated_documents(draw: st.DrawFn, codec: Codec) -> tuple[str, bytes]:
    """(path, bytes): an encoding of ``codec`` with one to four members broken, sometimes a wrong version and
    sometimes a key written twice (JSON allows it; orjson, like Jackson, keeps the last)."""
    value = draw(codec.values, label="value")
    path = draw(codec.paths, label="path")
    doc = orjson.loads(codec.encode(value))
    for _ in range(draw(st.integers(1, 4), label="mutations")):
        locations = list(_locations(doc)) if isinstance(doc, dict | list) else []
        if not locations:
            break
        location = draw(st.sampled_from(locations), label="location")
        doc = _set(doc, location, draw(broken(_get(doc, location)), label="new"))
    if isinstance(doc, dict) and draw(st.booleans(), label="wrong version"):
        doc = {**doc, "version": draw(st.sampled_from(WRONG_VERSIONS), label="version")}
    text = _dump(doc)
    if text.startswith(b"{") and len(text) > 2 and draw(st.booleans(), label="duplicate key"):
        repeat = _dump(draw(st.sampled_from(WRONG_VERSIONS + OTHER_TYPES), label="repeated value"))
        key = draw(st.sampled_from(["version", "partitions", "isr", "leader", "brokerid", "config", "acls"]))
        pair = b'"' + key.encode() + b'":' + repeat
        text = b"{" + pair + b"," + text[1:] if draw(st.booleans(), label="first") else text[:-1] + b"," + pair + b"}"
    return path, text


@pytest.mark.parametrize("codec", JSON_CODECS, ids=[c.name for c in JSON_CODECS])
@budget(60)
@given(data=st.data())
def test_several_mutations_at_once(codec: Codec, data: st.DataObject) -> None:
    path, text = data.draw(mutated_documents(codec), label="znode")
    decode_or_reject(path, text)


# --- about a megabyte ---------------------------------------------------------------------------------------------


def _inflated(value: Any, filler: Any) -> Any:
    """``value`` grown to about a megabyte once written: an array repeats its first element (or a 0), an object
    gets numbered members like its first (or 0), a string is repeated, anything else becomes ``filler``."""
    if isinstance(value, list):
        element = value[0] if value else 0
        return [element] * max(MEGABYTE // (len(_dump(element)) + 1), 1)
    if isinstance(value, dict):
        element = next(iter(value.values())) if value else 0
        count = max(MEGABYTE // (len(_dump(element)) + 12), 1)
        return {**value, **{str(i): element for i in range(count)}}
    if isinstance(value, str):
        return (value or "x") * (MEGABYTE // max(len(value), 1))
    return filler


@st.composite
def megabyte_documents(draw: st.DrawFn) -> tuple[str, bytes]:
    """(path, about 1 MB): a valid encoding with one member inflated, a padding member added, or the whole
    document nested deep."""
    codec = draw(st.sampled_from(JSON_CODECS), label="codec")
    path = draw(codec.paths, label="path")
    doc = orjson.loads(codec.encode(draw(codec.values, label="value")))
    how = draw(st.sampled_from(["inflate", "pad", "nest"]), label="how")
    if how == "inflate" and (locations := list(_locations(doc))):
        location = draw(st.sampled_from(locations), label="location")
        filler = draw(st.sampled_from(["x" * MEGABYTE, [1] * (MEGABYTE // 2), [0, 0] * (MEGABYTE // 4)]))
        doc = _set(doc, location, _inflated(_get(doc, location), filler))
    elif how == "nest":
        depth = draw(st.sampled_from([MEGABYTE // 4, MEGABYTE // 2]), label="depth")
        return path, b"[" * depth + _dump(doc) + b"]" * depth
    else:
        doc = {**doc, "padding": "p" * MEGABYTE}
    return path, _dump(doc)


@budget(80)
@given(znode=megabyte_documents())
def test_megabyte_documents(znode: tuple[str, bytes]) -> None:
    path, data = znode
    assert len(data) >= MEGABYTE // 2
    decode_or_reject(path, data)


GARBAGE = {
    "zeros": b"\x00" * MEGABYTE,
    "open-braces": b"{" * MEGABYTE,
    "open-brackets": b"[" * MEGABYTE,
    "unterminated-string": b'{"version":"' + b"a" * MEGABYTE,
    "digits": b"9" * MEGABYTE,
    "minus-digits": b'{"version":1,"partitions":{"0":[-' + b"9" * MEGABYTE + b"]}}",
    "long-key": b'{"' + b"k" * MEGABYTE + b'":1}',
    "not-utf8": b'{"version":1,"x":"' + b"\xff" * MEGABYTE + b'"}',
    "duplicate-replicas": b'{"version":3,"partitions":{"0":[' + b"1," * (MEGABYTE // 2) + b"1]}}",
}


@pytest.mark.parametrize("path", REALISTIC_PATHS)
def test_a_megabyte_of_garbage(path: str) -> None:
    for name, data in GARBAGE.items():
        assert decode_or_reject(path, data) is None, f"{name} was read as a {path} znode"


# --- regressions: what these properties found ----------------------------------------------------------------------


def test_a_megabyte_of_duplicate_replicas_gives_a_bounded_reason() -> None:
    # Was a 1.5 MB reason (every id quoted), so a 1.5 MB log line per reload of the topic.
    with pytest.raises(ZnodeFormatError) as info:
        decode_znode("/brokers/topics/t", GARBAGE["duplicate-replicas"])
    reason = info.value.reason
    assert len(reason) <= MAX_REASON and "characters elided" in reason
    assert reason.startswith("partitions[0] has duplicate broker ids: [1, 1, 1")


@pytest.mark.parametrize("topic", ["a\nb", "a\rb", "a\u2028b", "a\x00b"])
def test_a_quoted_topic_name_cannot_break_the_log_line(topic: str) -> None:
    # A reassignment request naming topic "a\nb" gave a two-line reason ("partition a\nb-0 ...").
    data = orjson.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": [-1]}]})
    with pytest.raises(ZnodeFormatError) as info:
        decode_znode("/admin/reassign_partitions", data)
    assert len(str(info.value).splitlines()) == 1
    assert "replicas of a" in info.value.reason and "must be >= 0" in info.value.reason


def test_an_acl_entry_missing_its_permission_names_the_path_once() -> None:
    # Was "/kafka-acl/Topic/t: 'acls'[0]: /kafka-acl/Topic/t: missing key 'permissionType'".
    data = b'{"version":1,"acls":[{"principal":"User:a","operation":"Read","host":"*"}]}'
    with pytest.raises(ZnodeFormatError) as info:
        decode_znode("/kafka-acl/Topic/t", data)
    assert str(info.value) == "/kafka-acl/Topic/t: missing key 'permissionType'"


def test_the_registry_has_a_decoder_for_every_realistic_path() -> None:
    """The fuzzed paths reach every decoder the registry knows (so a new znode kind is fuzzed too)."""
    reached = {decoder_for(p) for p in REALISTIC_PATHS}
    assert {c.decode for c in CODECS} <= reached
