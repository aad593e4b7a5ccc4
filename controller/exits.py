"""The exit-code contract every ``bridgekeeper`` command keeps, and how a failure is reported.

Scripts around the tools branch on the code alone, so each class means one thing everywhere:

- **0** done, or nothing found;
- **1** the command ran and found a problem, or refused on what it found (blockers, ACLs that differ, a failed
  rehearsal check, an unhealthy node, a non-empty restore target);
- **2** usage or input error (a bad flag or value, a missing, unreadable or malformed input file, an output
  extension no writer knows), decided before any connection is opened;
- **3** could not reach, authenticate to, or time out on ZooKeeper or Kafka;
- **130** interrupted (128 + SIGINT, as shells report it).

``reassign`` keeps kafka-reassign-partitions' own codes: parity with Kafka's tool is its point.

A command raises :class:`CommandError` (or returns a code); the root parser prints the one ``error:`` line on
stderr and, for a command run in a JSON mode, ``{"error": ..., "exit_code": N}`` on stdout, so a script reading
stdout never has to parse prose.
"""

from __future__ import annotations

import enum
import logging
import sys


class ExitCode(enum.IntEnum):
    OK = 0
    PROBLEM = 1
    USAGE = 2
    UNREACHABLE = 3
    INTERRUPTED = 130


class CommandError(Exception):
    """A failure the command reports as one line and an exit code (never a traceback)."""

    def __init__(self, message: str, code: ExitCode = ExitCode.PROBLEM) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


class UsageError(CommandError):
    """Exit 2: a flag, value or input file is wrong; raised before any connection is opened."""

    def __init__(self, message: str) -> None:
        super().__init__(message, ExitCode.USAGE)


class Unreachable(CommandError):
    """Exit 3: ZooKeeper or Kafka could not be reached, authenticated to, or answered too late."""

    def __init__(self, message: str) -> None:
        super().__init__(message, ExitCode.UNREACHABLE)


def report(message: str, code: int, *, json_mode: bool) -> int:
    """Print a failure the contract's way and hand back ``code`` (for ``return report(...)``)."""
    print(f"error: {message}", file=sys.stderr, flush=True)
    if json_mode:
        import orjson  # a C extension whose init crashes when interrupted: imported after the interrupt guard

        sys.stdout.write(orjson.dumps({"error": message, "exit_code": int(code)}).decode() + "\n")
        sys.stdout.flush()
    return int(code)


#: Libraries whose log records are chatter to an operator running a tool (kazoo's reconnect warnings,
#: kafka-python's bootstrap retries, Spark's py4j gateway): shown only with ``--verbose``.
LIBRARY_LOGGERS = ("kazoo", "kafka", "py4j", "urllib3")


def configure_tool_logging(verbose: bool) -> None:
    """A tool's logging: with ``verbose``, every record at INFO and above on stderr; without, the libraries'
    records go nowhere (Python's last-resort handler would otherwise print every kazoo WARNING while a
    connection is retried), and the tools' own warnings still reach stderr."""
    if verbose:
        logging.basicConfig(
            level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s %(levelname)s %(message)s"
        )
        return
    for name in LIBRARY_LOGGERS:
        logger = logging.getLogger(name)
        logger.addHandler(logging.NullHandler())
        logger.propagate = False
