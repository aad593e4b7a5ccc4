"""Where an action's results go: Kafka's console text on stdout, or (``--output json``) one JSON document.

Text is printed as the action goes, as Kafka's tool prints it, so a failure half-way leaves what was already
done on screen (the rollback JSON above all). In JSON mode nothing is printed on stdout until the end, and then
exactly one document, so scripts read one thing. A failed run's document has ``"error"`` and ``"exit_code"``
(the status the process exits with); a run that failed half-way keeps the members it had put (an execute that
failed after reading the current assignment still hands back the rollback JSON). The line Kafka's tool would
print then goes to stderr, for whoever watches the terminal.
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

    def fail(self, error: ToolError, code: int) -> int:
        """End a failed run: Kafka's line on stdout (where its ``main`` prints it), or in JSON mode that line on
        stderr and the document, with ``"error"`` and ``"exit_code"``, on stdout. Returns ``code``."""
        line = error.message if error.terse else f"Error: {error.message}"
        if not self.json_mode:
            self.text(line)
            return code
        print(line, file=sys.stderr, flush=True)
        self.doc["error"] = error.message
        self.doc["exit_code"] = code
        self.finish()
        return code

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
