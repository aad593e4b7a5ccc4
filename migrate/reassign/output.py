"""Where an action's results go: Kafka's console text on stdout, or (``--output json``) one JSON document.

Text is printed as the action goes, as Kafka's tool prints it, so a failure half-way leaves what was already
done on screen (the rollback JSON above all). In JSON mode nothing is printed until the end, and then
exactly one document, with an ``"error"`` member when the action failed, so scripts read one thing.
"""

from __future__ import annotations

import sys
from typing import IO, Any

import orjson


class ToolError(Exception):
    """An action failed. ``terse``: Kafka prints the message alone (TerseException); otherwise it prints
    ``Error: `` and the message (and a stack trace, which we never print)."""

    def __init__(self, message: str, *, terse: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.terse = terse


class Output:
    def __init__(self, json_mode: bool, stream: IO[str] | None = None) -> None:
        self.json_mode = json_mode
        self.stream = stream if stream is not None else sys.stdout
        self.doc: dict[str, Any] = {}

    def text(self, line: str = "", end: str = "\n") -> None:
        """Print one piece of Kafka's console text (nothing in JSON mode)."""
        if not self.json_mode:
            self.stream.write(line + end)
            self.stream.flush()

    def put(self, key: str, value: Any) -> None:
        """Record a member of the JSON document (ignored in text mode)."""
        self.doc[key] = value

    def fail(self, error: ToolError) -> None:
        if self.json_mode:
            self.doc["error"] = error.message
        else:
            self.text(error.message if error.terse else f"Error: {error.message}")

    def finish(self) -> None:
        if self.json_mode:
            self.stream.write(orjson.dumps(self.doc).decode() + "\n")
            self.stream.flush()


def assignment_doc(assignment: dict[tuple[str, int], list[int]] | Any) -> dict[str, Any]:
    """An assignment as the reassignment-JSON object (what ``format_assignment`` prints, as data)."""
    doc: dict[str, Any] = orjson.loads(_format(assignment))
    return doc


def _format(assignment: Any) -> str:
    from migrate.reassign.plan_files import format_assignment

    return format_assignment(assignment)
