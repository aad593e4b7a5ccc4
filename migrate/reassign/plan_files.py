"""The tool's JSON files, read and written as Kafka 3.9's ReassignPartitionsCommand does.

Operators keep their plan files and rollback files for years and move them between Kafka's tool and ours,
so both directions copy Kafka (``ReassignPartitionsCommand.java`` and ``server-common``'s ``Json`` /
``json/DecodeJson`` / ``json/JsonValue`` / ``json/JsonObject`` at 3.9.0-rc3):

* **Reading** (:func:`parse_reassignment` = ``parsePartitionReassignmentData``, used by execute, verify and
  cancel alike; :func:`parse_topics_to_move` = ``parseTopicsData``). ``version`` is optional (1; any other
  int is "Not supported version field value N"); ``partitions`` / ``topics`` are optional (absent = none);
  ``log_dirs`` is optional and must be as long as ``replicas``. Fields Kafka does not read are ignored;
  of duplicate keys the last wins (Jackson's default, and orjson's). Kafka does **not** check at parse time
  that partitions or broker ids are non-negative, nor that a log dir is "any" or absolute: those fail later
  against the cluster, so they are accepted here too.
* **Execute's extra checks** (:func:`check_execute` = the rest of ``parseExecuteAssignmentArgs``): an empty
  list, an empty replica list, a partition listed twice, a replica listed twice in one partition. Verify and
  cancel do not make them, so :func:`parse_reassignment` does not either.
* **Messages.** Where Kafka words a refusal itself we print its words: the version and size messages, and
  also the type errors, which come from Kafka's DecodeJson/JsonValue, not from Jackson ("Expected `Integer`
  value, received "a"", "No such field exists: `topic`"), with the received value shown as Jackson's
  ``JsonNode.toString`` would. Kafka's message does not say *where* the value is, so ours then adds it:
  ``... received "a" at partitions[2].replicas[1]``. Only JSON syntax errors are Jackson's own text,
  which we do not imitate: ours names line and column. Every message is printed by Kafka as "Error: " +
  message (none of them is a TerseException), so :class:`PlanFileError` has ``terse=False`` throughout.
* **Parsing** uses orjson, which differs from Jackson's ``readTree`` at the edges: Kafka ignores anything
  after the first JSON value (``{...} garbage`` is accepted), we refuse it, since a second document in a plan
  file is a mistake we would rather stop on; Jackson accepts a lone UTF-16 surrogate escape (``"\\ud800"``)
  and reads ``1e400`` as Infinity, orjson refuses both (a syntax error here). orjson reads integers beyond
  64 bits as floats, so such files are re-read with Python's json to quote the number exactly. NaN,
  comments, trailing commas and a byte-order mark are refused by both.
* **Writing** (:func:`format_assignment` = ``formatAsReassignmentJson``): compact JSON with Kafka's key
  order, partitions sorted as ``compareTopicPartitions`` sorts them.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Context, Decimal
from typing import Any

import orjson

from migrate.reassign.model import sorted_tps as _sorted_tps
from zkmodel.jvmorder import K, java_hashmap_order

ANY_LOG_DIR = "any"
INT_MIN, INT_MAX = -(2**31), 2**31 - 1


@dataclass(frozen=True)
class PlannedPartition:
    """One entry of a reassignment file. ``log_dirs`` has one entry per replica ("any" when the file has no
    ``log_dirs``)."""

    topic: str
    partition: int
    replicas: tuple[int, ...]
    log_dirs: tuple[str, ...]


class PlanFileError(Exception):
    """A file Kafka's tool would refuse. ``message`` is what to print; ``terse``: True when Kafka prints the
    message alone (a TerseException), False when it prints "Error: " + message (then a stack trace, which
    we never print). Every refusal of this module is of the second kind."""

    def __init__(self, message: str, *, terse: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.terse = terse


def tp(topic: str, partition: int) -> str:
    """``TopicPartition.toString()``: ``t-0``."""
    return f"{topic}-{partition}"


def tpr(topic: str, partition: int, broker: int) -> str:
    """``TopicPartitionReplica.toString()``: ``t-0-1``."""
    return f"{topic}-{partition}-{broker}"


def sorted_tps(tps: Iterable[tuple[str, int]]) -> list[tuple[str, int]]:
    """``compareTopicPartitions``: topic by ``String.compareTo`` (UTF-16 code units), then partition."""
    return _sorted_tps(tps)


def read_text(path: str) -> str:
    """``Utils.readFileAsString``: the file as UTF-8 (malformed bytes become U+FFFD, as Java's decoder makes
    them). Kafka's message is "Unable to read file PATH" with the reason only in the stack trace, so ours
    adds the reason after it."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
        reason = getattr(exc, "strerror", None) or str(exc)
        raise PlanFileError(f"Unable to read file {path} ({reason})") from None
    return data.decode("utf-8", errors="replace")


# ---- reading ----------------------------------------------------------------------------------------------

_JSON_WHITESPACE = " \t\n\r"
#: An integer literal orjson would turn into a float (more than 19 digits).
_LONG_DIGITS = re.compile(r"\d{20,}")


class _NotJson(Exception):
    """A syntax error; ``detail`` says where and what: "line 3, column 7: unexpected character"."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


def _load(text: str) -> Any:
    """The document, or :class:`_NotJson` with where and why; a blank text is Jackson's MissingNode, which
    Kafka then reports as "Expected JSON object, received " (so it is returned as ``_MISSING``)."""
    if text.strip(_JSON_WHITESPACE) == "":
        return _MISSING
    try:
        doc = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise _NotJson(f"line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    except (TypeError, ValueError) as exc:  # the text itself is not Unicode (a lone surrogate)
        raise _NotJson(str(exc)) from None
    if _LONG_DIGITS.search(text):
        with contextlib.suppress(ValueError, RecursionError):  # then orjson's reading stands
            doc = json.loads(text)  # the same structure, integers kept exact
    return doc


class _Missing:
    """Jackson's MissingNode (what ``readTree`` gives for a blank text): prints as nothing."""


_MISSING = _Missing()


def _where(path: str) -> str:
    return f" at {path}" if path else ""


#: What ``DecodeJson.decodeList`` calls a value that is not an array.
_DECODE_LIST = "`JSON array` value"


def _expected(what: str, value: Any, path: str) -> PlanFileError:
    """DecodeJson's "Expected `X` value, received V" (``what`` already has its backticks and "value")."""
    return PlanFileError(f"Expected {what}, received {_node_text(value)}{_where(path)}")


def _object(value: Any, path: str) -> dict[str, Any]:
    """``JsonValue.asJsonObject``."""
    if not isinstance(value, dict):
        raise _expected("JSON object", value, path)
    return value


def _array(value: Any, path: str, what: str = "JSON array") -> list[Any]:
    """``JsonValue.asJsonArray``; ``DecodeJson.decodeList`` says "`JSON array` value" instead (``what``)."""
    if not isinstance(value, list):
        raise _expected(what, value, path)
    return value


def _int(value: Any, path: str) -> int:
    """``DecodeInteger``: only a JSON integer that fits a Java int (Jackson's IntNode)."""
    if isinstance(value, bool) or not isinstance(value, int) or not INT_MIN <= value <= INT_MAX:
        raise _expected("`Integer` value", value, path)
    return value


def _string(value: Any, path: str) -> str:
    """``DecodeString``."""
    if not isinstance(value, str):
        raise _expected("`String` value", value, path)
    return value


def _field(fields: Mapping[str, Any], name: str, path: str) -> Any:
    """``JsonObject.apply``: a field that must be there (JSON null counts as there)."""
    if name not in fields:
        raise PlanFileError(f"No such field exists: `{name}`{_where(path)}")
    return fields[name]


def _version(doc: Mapping[str, Any]) -> None:
    if "version" in doc:
        version = _int(doc["version"], "version")
        if version != 1:
            raise PlanFileError(f"Not supported version field value {version}")


def parse_reassignment(text: str) -> list[PlannedPartition]:
    """``parsePartitionReassignmentData``: the entries in file order, duplicates kept (only execute refuses
    them, in :func:`check_execute`). Its checks, in Kafka's order: the document, ``version``, then per entry
    ``topic``, ``partition``, ``replicas``, ``log_dirs``, and the two lists' sizes."""
    if text == "":
        raise PlanFileError("The input string shouldn't be empty")  # Json.tryParseFull
    try:
        doc = _object(_load(text), "")
    except _NotJson as exc:
        raise PlanFileError(f"The reassignment JSON is not valid JSON: {exc.detail}") from None
    _version(doc)
    planned: list[PlannedPartition] = []
    if "partitions" not in doc:
        return planned
    for i, entry in enumerate(_array(doc["partitions"], "partitions")):
        path = f"partitions[{i}]"
        fields = _object(entry, path)
        topic = _string(_field(fields, "topic", path), f"{path}.topic")
        partition = _int(_field(fields, "partition", path), f"{path}.partition")
        replicas = [
            _int(r, f"{path}.replicas[{j}]")
            for j, r in enumerate(_array(_field(fields, "replicas", path), f"{path}.replicas", _DECODE_LIST))
        ]
        if "log_dirs" in fields:
            dirs = [
                _string(d, f"{path}.log_dirs[{j}]")
                for j, d in enumerate(_array(fields["log_dirs"], f"{path}.log_dirs", _DECODE_LIST))
            ]
        else:
            dirs = [ANY_LOG_DIR] * len(replicas)
        if len(dirs) != len(replicas):
            raise PlanFileError(
                f"Size of replicas list {java_list(replicas)} is different from size of log dirs list "
                f"{java_list(dirs)} for partition {tp(topic, partition)}"
            )
        planned.append(PlannedPartition(topic, partition, tuple(replicas), tuple(dirs)))
    return planned


def parse_topics_to_move(text: str) -> list[str]:
    """``parseTopicsData``: the topic names in file order. Duplicates are kept: Kafka refuses them ("List of
    topics to reassign contains duplicate entries") in ``parseGenerateAssignmentArgs``, after its check of
    the broker list, so that check belongs to the generate action. Kafka's parse error is "The input string
    is not a valid JSON" (``Json.parseFull`` drops Jackson's reason, also for an empty file); ours adds
    where."""
    try:
        doc = _object(_load(text), "") if text != "" else None
    except _NotJson as exc:
        raise PlanFileError(f"The input string is not a valid JSON ({exc.detail})") from None
    if doc is None:
        raise PlanFileError("The input string is not a valid JSON")
    _version(doc)
    if "topics" not in doc:
        return []
    topics = []
    for i, entry in enumerate(_array(doc["topics"], "topics")):
        path = f"topics[{i}]"
        topics.append(_string(_field(_object(entry, path), "topic", path), f"{path}.topic"))
    return topics


def targets_and_log_dirs(
    planned: Sequence[PlannedPartition],
) -> tuple[list[tuple[tuple[str, int], list[int]]], dict[tuple[str, int, int], str]]:
    """What ``parsePartitionReassignmentData`` returns: each entry's (partition, replicas) in file order, and
    the log dir of every replica whose dir is not "any", keyed (topic, partition, broker); a replica named
    twice keeps its last dir, as Kafka's HashMap does."""
    targets = [((p.topic, p.partition), list(p.replicas)) for p in planned]
    log_dirs = {
        (p.topic, p.partition, replica): log_dir
        for p in planned
        for replica, log_dir in zip(p.replicas, p.log_dirs, strict=True)
        if log_dir != ANY_LOG_DIR
    }
    return targets, log_dirs


def check_execute(planned: Sequence[PlannedPartition]) -> None:
    """The checks ``parseExecuteAssignmentArgs`` adds for ``--execute``, in its order and words (all
    AdminCommandFailedException: "Error: " + message). Duplicates are listed in Java ``HashSet`` order,
    partitions joined by ",", per-partition replica reports by ". "."""
    if not planned:
        raise PlanFileError("Partition reassignment list cannot be empty")
    if any(not p.replicas for p in planned):
        raise PlanFileError("Partition replica list cannot be empty")
    duplicate_tps = duplicates([(p.topic, p.partition) for p in planned])
    if duplicate_tps:
        raise PlanFileError(
            "Partition reassignment contains duplicate topic partitions: "
            + ",".join(tp(t, p) for t, p in java_hashmap_order(duplicate_tps))
        )
    reports = []
    for p in planned:
        duplicate_replicas = duplicates(list(p.replicas))
        if duplicate_replicas:
            brokers = ",".join(str(b) for b in java_hashmap_order(duplicate_replicas))
            reports.append(f"{tp(p.topic, p.partition)} contains multiple entries for {brokers}")
    if reports:
        raise PlanFileError("Partition replica lists may not contain duplicate entries: " + ". ".join(reports))


def duplicates(items: list[K]) -> list[K]:
    """``ToolsUtils.duplicates``: each element that occurs more than once, once (order left to the caller)."""
    seen: set[K] = set()
    repeated: dict[K, None] = {}
    for item in items:
        if item in seen:
            repeated[item] = None
        seen.add(item)
    return list(repeated)


def java_list(items: Sequence[object]) -> str:
    """``List.toString()`` (and ``Set.toString()`` of an ordered set): ``[1, 2]``, strings unquoted."""
    return "[" + ", ".join(str(i) for i in items) + "]"


# ---- Jackson's text for a value ---------------------------------------------------------------------------


def _java_double(x: float) -> str:
    """``Double.toString`` as JDK 19+ prints it (Kafka's container image runs JDK 21): the shortest digits
    that read back, but at least two (then the two-digit decimal nearest the exact value: 4.9E-324);
    plain between 10^-3 and 10^7, else ``d.dddE±n``; always a fractional digit. JDK 17 printed a few values
    with more digits (1.0E23 as 9.999999999999999E22); those we do not imitate."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    sign = "-" if x < 0 else ""
    shortest = Decimal(repr(abs(x)))
    if len(shortest.as_tuple().digits) == 1:
        shortest = Context(prec=2, rounding=ROUND_HALF_EVEN).plus(Decimal(abs(x)))
    _, digit_tuple, exponent = shortest.as_tuple()
    assert isinstance(exponent, int)
    exponent += len(digit_tuple) - 1  # the power of ten of the first digit
    digits = "".join(map(str, digit_tuple)).rstrip("0") or "0"
    if 1e-3 <= abs(x) < 1e7:
        if exponent >= 0:
            whole, fraction = digits[: exponent + 1].ljust(exponent + 1, "0"), digits[exponent + 1 :]
        else:
            whole, fraction = "0", "0" * (-exponent - 1) + digits
        return f"{sign}{whole}.{fraction or '0'}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exponent}"


_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|.)")


def _upper_hex(match: re.Match[str]) -> str:
    escape = match.group(1)
    return "\\u" + escape[1:].upper() if len(escape) == 5 else match.group(0)


def _jackson_json(encoded: bytes) -> str:
    """orjson's output as Jackson writes the same value: identical but for the ``\\u00XX`` escapes of control
    characters, which Jackson writes in upper-case hex. (Escapes are matched left to right, so an escaped
    backslash followed by "u" is left alone.)"""
    return _ESCAPE.sub(_upper_hex, encoded.decode())


def _jackson_string(text: str) -> str:
    return _jackson_json(orjson.dumps(text))


class _Token(str):
    """A piece of output text, as opposed to a value still to be written."""


def _node_text(value: Any) -> str:
    """``JsonNode.toString()`` (compact JSON; doubles as ``Double.toString``). Iterative, so a deeply nested
    value in a bad file cannot exhaust the stack."""
    if isinstance(value, _Missing):
        return ""
    out: list[str] = []
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, _Token):
            out.append(item)
        elif item is None:
            out.append("null")
        elif isinstance(item, bool):
            out.append("true" if item else "false")
        elif isinstance(item, int):
            out.append(str(item))
        elif isinstance(item, float):
            out.append(_java_double(item))
        elif isinstance(item, str):
            out.append(_jackson_string(item))
        elif isinstance(item, list):
            pending: list[Any] = [_Token("[")]
            for k, element in enumerate(item):
                pending.extend(([_Token(",")] if k else []) + [element])
            pending.append(_Token("]"))
            stack.extend(reversed(pending))
        elif isinstance(item, dict):
            pending = [_Token("{")]
            for k, (key, element) in enumerate(item.items()):
                pending.extend(([_Token(",")] if k else []) + [_Token(_jackson_string(str(key)) + ":"), element])
            pending.append(_Token("}"))
            stack.extend(reversed(pending))
        else:  # not produced by a JSON parser
            out.append(str(item))
    return "".join(out)


# ---- writing ----------------------------------------------------------------------------------------------


def format_assignment(
    assignment: Mapping[tuple[str, int], Sequence[int]],
    log_dirs: Mapping[tuple[str, int, int], str] | None = None,
) -> str:
    """``formatAsReassignmentJson``: ``{"version":1,"partitions":[{"topic","partition","replicas",
    "log_dirs"}...]}``, compact, in that key order, partitions in ``compareTopicPartitions`` order. Like
    Kafka's, ``log_dirs`` is keyed by replica, (topic, partition, broker), as :func:`targets_and_log_dirs`
    returns it; a replica without an entry gets "any" (Kafka's every call passes an empty map)."""
    dirs = log_dirs or {}
    partitions = []
    for topic, partition in sorted_tps(assignment):
        replicas = list(assignment[(topic, partition)])
        replica_dirs = [dirs.get((topic, partition, r), ANY_LOG_DIR) for r in replicas]
        partitions.append({"topic": topic, "partition": partition, "replicas": replicas, "log_dirs": replica_dirs})
    return _jackson_json(orjson.dumps({"version": 1, "partitions": partitions}))
