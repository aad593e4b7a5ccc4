"""The tool's JSON files as Kafka 3.9 reads and writes them (ReassignPartitionsCommand's
parsePartitionReassignmentData, parseTopicsData and formatAsReassignmentJson).

Reading follows Kafka's rules: ``version`` optional (1; any other is "Not supported version field value N"),
``partitions`` / ``topics`` optional, ``log_dirs`` optional and as long as ``replicas`` (Kafka's "Size of
replicas list [1, 2] is different from size of log dirs list [any] for partition t-0"), unknown fields
ignored, the last of duplicate keys wins (Jackson's and orjson's default). Where Kafka reports a Jackson
message (a syntax error, a field of the wrong type or missing) we cannot match Jackson's words, so the
message names the entry and the field instead: ``partitions[2].replicas[1]: expected an int, got "a"``.
Values Kafka accepts here and refuses later against the cluster (a negative partition, an unknown broker)
are left to those later checks, which name them in Kafka's words.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from migrate.reassign.model import TP, sorted_tps

ANY_LOG_DIR = "any"
INT_MIN, INT_MAX = -(2**31), 2**31 - 1


@dataclass(frozen=True)
class PlannedPartition:
    topic: str
    partition: int
    replicas: tuple[int, ...]
    log_dirs: tuple[str, ...]


class PlanFileError(Exception):
    """``terse``: Kafka prints the message alone; otherwise "Error: " and the message."""

    def __init__(self, message: str, *, terse: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.terse = terse


def read_text(path: str) -> str:
    """Utils.readFileAsString (UTF-8); a missing or unreadable file names itself."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise PlanFileError(f"{path} (No such file or directory)") from None
    except IsADirectoryError:
        raise PlanFileError(f"{path} (Is a directory)") from None
    except OSError as exc:
        raise PlanFileError(f"{path} ({exc.strerror or exc})") from None
    return data.decode("utf-8", errors="replace")


def _load(text: str, what: str) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise PlanFileError(f"The {what} is not valid JSON: {exc}") from None


def _describe(value: Any) -> str:
    return orjson.dumps(value).decode() if value is not None else "null"


def _int(value: Any, where: str) -> int:
    """DecodeJson.DecodeInteger: a JSON integer in Java's int range."""
    if isinstance(value, bool) or not isinstance(value, int) or not INT_MIN <= value <= INT_MAX:
        raise PlanFileError(f"{where}: expected an int, got {_describe(value)}")
    return value


def _str(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise PlanFileError(f"{where}: expected a string, got {_describe(value)}")
    return value


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise PlanFileError(f"{where}: expected an array, got {_describe(value)}")
    return value


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise PlanFileError(f"{where}: expected an object, got {_describe(value)}")
    return value


def _field(obj: Mapping[str, Any], name: str, where: str) -> Any:
    if name not in obj:
        raise PlanFileError(f"{where}: No such field exists: `{name}`")
    return obj[name]


def _version(obj: Mapping[str, Any], what: str) -> None:
    if "version" in obj:
        version = _int(obj["version"], f"{what}: version")
        if version != 1:
            raise PlanFileError(f"Not supported version field value {version}")


def parse_reassignment(text: str) -> list[PlannedPartition]:
    """parsePartitionReassignmentData: the entries in file order (duplicates kept: ``--execute`` refuses
    them with Kafka's message, ``--verify`` and ``--cancel`` do not look)."""
    doc = _object(_load(text, "reassignment JSON"), "reassignment JSON")
    _version(doc, "reassignment JSON")
    out: list[PlannedPartition] = []
    if "partitions" not in doc:
        return out
    for i, entry in enumerate(_list(doc["partitions"], "partitions")):
        where = f"partitions[{i}]"
        fields = _object(entry, where)
        topic = _str(_field(fields, "topic", where), f"{where}.topic")
        partition = _int(_field(fields, "partition", where), f"{where}.partition")
        replicas = [
            _int(r, f"{where}.replicas[{j}]")
            for j, r in enumerate(_list(_field(fields, "replicas", where), f"{where}.replicas"))
        ]
        if "log_dirs" in fields:
            dirs = [
                _str(d, f"{where}.log_dirs[{j}]") for j, d in enumerate(_list(fields["log_dirs"], f"{where}.log_dirs"))
            ]
        else:
            dirs = [ANY_LOG_DIR] * len(replicas)
        if len(dirs) != len(replicas):
            raise PlanFileError(
                f"Size of replicas list {_java_list(replicas)} is different from size of log dirs list "
                f"{_java_list(dirs)} for partition {topic}-{partition}"
            )
        out.append(PlannedPartition(topic, partition, tuple(replicas), tuple(dirs)))
    return out


def parse_topics_to_move(text: str) -> list[str]:
    """parseTopicsData: the topic names in file order."""
    try:
        doc = orjson.loads(text)
    except orjson.JSONDecodeError:
        raise PlanFileError("The input string is not a valid JSON") from None
    doc = _object(doc, "topics JSON")
    _version(doc, "topics JSON")
    if "topics" not in doc:
        return []
    return [
        _str(_field(_object(e, f"topics[{i}]"), "topic", f"topics[{i}]"), f"topics[{i}].topic")
        for i, e in enumerate(_list(doc["topics"], "topics"))
    ]


def _java_list(items: Sequence[object]) -> str:
    """``List.toString()``: ``[1, 2]``."""
    return "[" + ", ".join(str(i) for i in items) + "]"


def format_assignment(
    assignment: Mapping[TP, Sequence[int]], log_dirs: Mapping[tuple[str, int, int], str] | None = None
) -> str:
    """formatAsReassignmentJson: compact, keys in Kafka's order, partitions sorted by topic then partition."""
    dirs = log_dirs or {}
    partitions = [
        {
            "topic": t,
            "partition": p,
            "replicas": list(assignment[(t, p)]),
            "log_dirs": [dirs.get((t, p, r), ANY_LOG_DIR) for r in assignment[(t, p)]],
        }
        for t, p in sorted_tps(assignment)
    ]
    return orjson.dumps({"version": 1, "partitions": partitions}).decode()
