"""The node's log output, laid out as a Kafka broker's ``config/log4j.properties`` lays out its own.

Without ``bridgekeeper.log.dir`` every record goes to stderr (a container's or the journal's log). With it, as
Kafka writes into ``kafka.logs.dir``:

* ``server.log``: every record, as on stderr (log4j's ``kafkaAppender`` beside the ``stdout`` one);
* ``controller.log``: the controller's decisions, Kafka's ``kafka.controller`` logger, here ``controller.active``
  (elections, topic creation and deletion, reassignments, failover);
* ``state-change.log``: partition state changes, Kafka's ``state.change.logger``, here
  ``controller.active.state_changes`` (one line per partition whose leader or ISR the controller writes).

Kafka keeps those two out of ``server.log`` and stdout (``additivity=false``); here only their records below
WARNING are kept out, so that a controller's warnings and errors, and its ``BK-UNEXPECTED`` lines, still reach
stderr and ``server.log``, where an operator (and ``rehearse``'s ``node-logs-clean``) reads. Each file rolls
over by size (:mod:`logging.handlers.RotatingFileHandler`), not hourly without limit as Kafka's
``DailyRollingFileAppender`` does.

Levels come from the variables Kafka's image reads (``docker/examples/README.md``): ``KAFKA_LOG4J_ROOT_LOGLEVEL``
for the root logger and ``KAFKA_LOG4J_LOGGERS="kafka.controller=DEBUG,state.change.logger=INFO"`` per logger,
Kafka's logger names mapped to ours (:data:`KAFKA_LOGGERS`); our own names are taken as they are.
"""

from __future__ import annotations

import logging
import logging.handlers
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

ROOT_LEVEL_VARIABLE = "KAFKA_LOG4J_ROOT_LOGLEVEL"
LOGGERS_VARIABLE = "KAFKA_LOG4J_LOGGERS"
#: The controller's decisions (Kafka's ``kafka.controller``): every module of the active controller.
CONTROLLER_LOGGER = "controller.active"
#: Partition state changes (Kafka's ``state.change.logger``): the module that writes partition state znodes.
STATE_CHANGE_LOGGER = "controller.active.state_changes"
#: The files of a log directory, by what feeds them (None: the root logger).
SERVER_LOG = "server.log"
CONTROLLER_LOG = "controller.log"
STATE_CHANGE_LOG = "state-change.log"
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

#: Kafka's logger names (``config/log4j.properties``) -> the loggers that carry the same records here.
KAFKA_LOGGERS: Mapping[str, str] = MappingProxyType(
    {
        "kafka": "controller",
        "kafka.controller": CONTROLLER_LOGGER,
        "state.change.logger": STATE_CHANGE_LOGGER,
        "org.apache.zookeeper": "kazoo",
        "kafka.zookeeper": "controller.zk",
    }
)
#: Names of our own loggers (and their children) that ``KAFKA_LOG4J_LOGGERS`` may name directly.
OWN_LOGGER_ROOTS = ("controller", "bridgekeeper", "kazoo")
#: log4j 1's level names (``Level.toLevel``, case-insensitive) -> Python's. There is no TRACE here: our code logs
#: nothing finer than DEBUG. OFF is a level no record reaches.
LOG4J_LEVELS: Mapping[str, int] = MappingProxyType(
    {
        "OFF": logging.CRITICAL + 1,
        "FATAL": logging.CRITICAL,
        "ERROR": logging.ERROR,
        "WARN": logging.WARNING,
        "WARNING": logging.WARNING,
        "INFO": logging.INFO,
        "DEBUG": logging.DEBUG,
        "TRACE": logging.DEBUG,
        "ALL": logging.DEBUG,
    }
)


class LogSettingsError(ValueError):
    """A log level or logger list that cannot be read (a usage error: the node has not started)."""


@dataclass(frozen=True)
class LogLevels:
    """Levels asked for: the root's (None: INFO), and per logger of ours; ``warnings`` name what was ignored."""

    root: int | None = None
    loggers: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    warnings: tuple[str, ...] = ()


def parse_level(text: str, where: str) -> int:
    """A log4j level name (WARN, INFO, ...; any case) as Python's level; LogSettingsError naming ``where``."""
    level = LOG4J_LEVELS.get(text.strip().upper())
    if level is None:
        raise LogSettingsError(f"{where}: unknown log level {text.strip()!r} (one of {', '.join(LOG4J_LEVELS)})")
    return level


def _our_logger(name: str) -> str | None:
    if name in KAFKA_LOGGERS:
        return KAFKA_LOGGERS[name]
    if any(name == root or name.startswith(root + ".") for root in OWN_LOGGER_ROOTS):
        return name
    return None


def levels_from_env(environ: Mapping[str, str]) -> LogLevels:
    """``KAFKA_LOG4J_ROOT_LOGLEVEL`` and ``KAFKA_LOG4J_LOGGERS`` (``name=LEVEL,...``) of ``environ``. A logger
    name that is neither Kafka's (mapped) nor ours yields one warning and is ignored: Kafka's image would add it
    to log4j.properties, where a name no code logs under changes nothing either. A bad level or entry raises."""
    root_text = environ.get(ROOT_LEVEL_VARIABLE, "").strip()
    root = parse_level(root_text, ROOT_LEVEL_VARIABLE) if root_text else None
    loggers: dict[str, int] = {}
    warnings: list[str] = []
    for entry in environ.get(LOGGERS_VARIABLE, "").split(","):
        if not entry.strip():
            continue
        name, sep, level_text = entry.partition("=")
        name = name.strip()
        if not sep or not name:
            raise LogSettingsError(f"{LOGGERS_VARIABLE}: expected logger=LEVEL entries, got {entry.strip()!r}")
        level = parse_level(level_text, f"{LOGGERS_VARIABLE} ({name})")
        ours = _our_logger(name)
        if ours is None:
            unknown = f"{LOGGERS_VARIABLE}: no logger {name!r} here (Kafka's: {', '.join(KAFKA_LOGGERS)}); ignored"
            if unknown not in warnings:
                warnings.append(unknown)
            continue
        loggers[ours] = level
    return LogLevels(root, MappingProxyType(loggers), tuple(warnings))


@dataclass(frozen=True)
class LogFiles:
    """``bridgekeeper.log.dir`` and its rotation."""

    directory: Path
    max_bytes: int
    backup_count: int


class _Without(logging.Filter):
    """Drops the records of a logger and its children below ``below``: they are written to a file of their own."""

    def __init__(self, name: str, below: int) -> None:
        super().__init__()
        self.exact, self.child, self.below = name, name + ".", below

    def filter(self, record: logging.LogRecord) -> bool:
        name = record.name
        return record.levelno >= self.below or not (name == self.exact or name.startswith(self.child))


def _file_handler(files: LogFiles, name: str) -> logging.Handler:
    handler = logging.handlers.RotatingFileHandler(
        files.directory / name, maxBytes=files.max_bytes, backupCount=files.backup_count, encoding="utf-8"
    )
    handler.setFormatter(logging.Formatter(FORMAT))
    return handler


def configure_logging(
    level: str | None = None, *, files: LogFiles | None = None, levels: LogLevels | None = None
) -> None:
    """Set up the node's logging. ``level`` is ``--log-level`` and wins over the environment's root level.

    Opening the files raises OSError (the caller reports it before the node starts). Every handler this process
    had is replaced, so that a second call (tests) does not log twice.
    """
    levels = levels or LogLevels()
    root_level = logging.getLevelName(level) if level is not None else levels.root
    if root_level is None:
        root_level = logging.INFO
    root = logging.getLogger()
    handlers: list[logging.Handler] = []
    routed: list[tuple[str, logging.Handler]] = []
    stderr = logging.StreamHandler(sys.stderr)
    stderr.setFormatter(logging.Formatter(FORMAT))
    handlers.append(stderr)
    if files is not None:
        files.directory.mkdir(parents=True, exist_ok=True)
        handlers.append(_file_handler(files, SERVER_LOG))
        controller = _file_handler(files, CONTROLLER_LOG)
        controller.addFilter(_Without(STATE_CHANGE_LOGGER, below=logging.CRITICAL + 1))  # none of its records
        state_change = _file_handler(files, STATE_CHANGE_LOG)
        routed = [(CONTROLLER_LOGGER, controller), (STATE_CHANGE_LOGGER, state_change)]
        for handler in handlers:
            handler.addFilter(_Without(CONTROLLER_LOGGER, below=logging.WARNING))  # the state changes' too
    for old in list(root.handlers):
        root.removeHandler(old)
        old.close()
    for name in (CONTROLLER_LOGGER, STATE_CHANGE_LOGGER):
        for old in list(logging.getLogger(name).handlers):
            logging.getLogger(name).removeHandler(old)
            old.close()
    for handler in handlers:
        root.addHandler(handler)
    root.setLevel(root_level)
    # kazoo logs every step of every connection at INFO; the node logs its own session's state changes.
    logging.getLogger("kazoo").setLevel(max(root_level, logging.WARNING))
    if files is not None:
        # As Kafka's log4j.properties gives both loggers a level of their own, their files keep the controller's
        # decisions even when the root is quieter (KAFKA_LOG4J_ROOT_LOGLEVEL=WARN).
        own = min(root_level, logging.INFO)
        for name, handler in routed:
            logging.getLogger(name).addHandler(handler)
            logging.getLogger(name).setLevel(own)
    else:
        # On stderr alone a line per partition state change would flood a container's log: Kafka writes them
        # only to state-change.log. KAFKA_LOG4J_LOGGERS=state.change.logger=INFO brings them to stderr.
        logging.getLogger(CONTROLLER_LOGGER).setLevel(logging.NOTSET)
        logging.getLogger(STATE_CHANGE_LOGGER).setLevel(max(root_level, logging.WARNING))
    for name, value in levels.loggers.items():
        logging.getLogger(name).setLevel(value)
    for warning in levels.warnings:
        logging.getLogger(__name__).warning("%s", warning)
