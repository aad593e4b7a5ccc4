"""The command line of ``bridgekeeper reassign``: Kafka 3.9's ``kafka-reassign-partitions.sh`` option for
option, plus our ``--zookeeper``, ``--max-moves-per-broker`` and ``--output``.

Scripts and runbooks written for Kafka's tool depend on more than the option names: on which mistakes print
the usage, on which stream, with which exit code. So this module holds Kafka's option table and copies three
layers of Kafka's behaviour (sources: ``ReassignPartitionsCommandOptions.java``, ``ReassignPartitionsCommand.java``
``main`` and ``validateAndParseArgs``, ``CommandLineUtils.java`` and ``CommandDefaultOptions.java`` at
3.9.0-rc3); jopt-simple's own rules, which Kafka's parse follows, are :mod:`migrate.reassign.jopt`'s:

1. **jopt-simple's parse** runs in the options' constructor, before anything else and outside ``main``'s
   ``try``: its exceptions escape, so the JVM prints ``Exception in thread "main" joptsimple.X: message``
   (and a stack trace, which we never print) on stderr and exits 1.
2. **validateAndParseArgs** refuses with ``printUsageAndExit``: the message, then the option table, both on
   stderr, exit 1. ``--help`` and an empty command line print HELP_TEXT the same way (exit 1 too);
   ``--version`` prints the version on stdout, exit 0.
3. **Values** are converted only when ``main`` asks for them (``OptionSet.valueOf``), inside its ``try``:
   a Long that does not parse, an option given twice, or a ``--broker-list`` entry that is not an int print
   ``Error: <message>`` on stdout, exit 1. Kafka does some file I/O between those reads (the
   ``--command-config`` file, the JSON file); we check all values here, so when both a value and a file are
   wrong we name the value where Kafka would name the file.

Ours: ``--zookeeper`` is Kafka 2.6-2.8's (generate, execute, verify), with deliberate changes: 2.8 silently
ignored it when ``--bootstrap-server`` was given too, we refuse the pair; 2.8 refused it with cancel and list
as a misplaced option, and its "You must specify --bootstrap-server when using ..." escaped ``main`` as a
RuntimeException, we print that message alone (stderr, exit 1) for cancel and list too.
``--max-moves-per-broker`` (execute only) and ``--output text|json`` (any action) are checked with the usage
errors; ``--verbose`` (any action) shows the client libraries' logs.

With ``--output json`` a refusal is also one JSON object on stdout (``command.main``); :func:`json_requested`
tells that from the raw words, since a command line that does not parse has no :class:`Options`.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from migrate.reassign import jopt
from migrate.reassign.jopt import INT_BITS, LONG_BITS, OptionSpec, format_help
from zkmodel.java import java_parse_integer

HELP_TEXT = "This tool helps to move topic partitions between replicas."


class Action(enum.Enum):
    GENERATE = "generate"
    EXECUTE = "execute"
    VERIFY = "verify"
    CANCEL = "cancel"
    LIST = "list"


@dataclass(frozen=True)
class Options:
    action: Action
    bootstrap_server: str | None
    zookeeper: str | None
    command_config: str | None
    reassignment_json_file: str | None
    topics_to_move_json_file: str | None
    broker_list: tuple[int, ...] | None
    disable_rack_aware: bool
    throttle: int
    replica_alter_log_dirs_throttle: int
    timeout_ms: int
    additional: bool
    preserve_throttles: bool
    max_moves_per_broker: int | None
    output: str
    verbose: bool = False


class OptionsError(Exception):
    """What to print and how to exit: ``message`` (may be empty), ``usage`` (print :data:`USAGE` after it),
    ``stream`` ("stderr" or "stdout") and ``exit_code``. ``detail`` is the refusal without Kafka's framing (no
    "Error: ", no JVM exception line): what ``--output json`` reports as its ``"error"``."""

    def __init__(
        self,
        message: str,
        *,
        usage: bool = False,
        stream: str = "stderr",
        exit_code: int = 1,
        detail: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.usage = usage
        self.stream = stream
        self.exit_code = exit_code
        self.detail = message if detail is None else detail


_THROTTLE_TAIL = (
    "This option can be included with --execute when a reassignment is started, and it can be altered by "
    "resubmitting the current reassignment along with the --additional flag. The throttle rate should be at "
    "least 1 KB/s."
)
#: Kafka's options in declaration order (CommandDefaultOptions first), then ours.
_SPECS: tuple[OptionSpec, ...] = (
    OptionSpec("help", "Print usage information."),
    OptionSpec("version", "Display Kafka version."),
    OptionSpec(
        "verify",
        "Verify if the reassignment completed as specified by the --reassignment-json-file option. If there is a "
        "throttle engaged for the replicas specified, and the rebalance has completed, the throttle will be removed",
    ),
    OptionSpec(
        "generate",
        "Generate a candidate partition reassignment configuration. Note that this only generates a candidate "
        "assignment, it does not execute it.",
    ),
    OptionSpec("execute", "Kick off the reassignment as specified by the --reassignment-json-file option."),
    OptionSpec("cancel", "Cancel an active reassignment."),
    OptionSpec("list", "List all active partition reassignments."),
    OptionSpec(
        "bootstrap-server", "REQUIRED: the server(s) to use for bootstrapping.", "Server(s) to use for bootstrapping"
    ),
    OptionSpec(
        "command-config", "Property file containing configs to be passed to Admin Client.", "Admin client property file"
    ),
    OptionSpec(
        "reassignment-json-file",
        "The JSON file with the partition reassignment configurationThe format to use is - \n"
        '{"partitions":\n\t[{"topic": "foo",\n\t  "partition": 1,\n\t  "replicas": [1,2,3],\n\t  "log_dirs": '
        '["dir1","dir2","dir3"] }],\n"version":1\n}\nNote that "log_dirs" is optional. When it is specified, its '
        'length must equal the length of the replicas list. The value in this list can be either "any" or the '
        "absolution path of the log directory on the broker. If absolute log directory path is specified, the "
        "replica will be moved to the specified log directory on the broker.",
        "manual assignment json file path",
    ),
    OptionSpec(
        "topics-to-move-json-file",
        "Generate a reassignment configuration to move the partitions of the specified topics to the list of "
        'brokers specified by the --broker-list option. The format to use is - \n{"topics":\n\t[{"topic": "foo"},'
        '{"topic": "foo1"}],\n"version":1\n}',
        "topics to reassign json file path",
    ),
    OptionSpec(
        "broker-list",
        'The list of brokers to which the partitions need to be reassigned in the form "0,1,2". This is required '
        "if --topics-to-move-json-file is used to generate reassignment configuration",
        "brokerlist",
    ),
    OptionSpec("disable-rack-aware", "Disable rack aware replica assignment"),
    OptionSpec(
        "throttle",
        "The movement of partitions between brokers will be throttled to this value (bytes/sec). " + _THROTTLE_TAIL,
        "throttle",
        "Long",
        "-1",
    ),
    OptionSpec(
        "replica-alter-log-dirs-throttle",
        "The movement of replicas between log directories on the same broker will be throttled to this value "
        "(bytes/sec). " + _THROTTLE_TAIL,
        "replicaAlterLogDirsThrottle",
        "Long",
        "-1",
    ),
    OptionSpec(
        "timeout",
        "The maximum time in ms to wait for log directory replica assignment to begin.",
        "timeout",
        "Long",
        "10000",
    ),
    OptionSpec(
        "additional",
        "Execute this reassignment in addition to any other ongoing ones. This option can also be used to change "
        "the throttle of an ongoing reassignment.",
    ),
    OptionSpec("preserve-throttles", "Do not modify broker or topic throttles."),
    OptionSpec(
        "zookeeper",
        "(bridgekeeper) DEPRECATED, as in Kafka 2.8: the ZooKeeper connection string (host:port) for the "
        "legacy path that writes ZooKeeper directly. Not with --bootstrap-server. Only with --generate, "
        "--execute or --verify.",
        "urls",
    ),
    OptionSpec(
        "max-moves-per-broker",
        "(bridgekeeper) With --execute: submit the plan in waves so that no broker takes part in more than this "
        "many replica moves at once. Each wave is waited for before the next one; rerun the same command to "
        "resume.",
        "n",
        "Integer",
    ),
    OptionSpec(
        "output",
        "(bridgekeeper) text prints the console output of Kafka's tool; json prints one JSON document on stdout "
        "instead.",
        "format",
        default="text",
    ),
    OptionSpec("verbose", "(bridgekeeper) Show the client libraries' logs (kafka-python, kazoo) on stderr."),
)
_BY_NAME = {s.name: s for s in _SPECS}
#: The order of Kafka's ``validActions`` (the "exactly one action" message lists them so).
_ACTIONS = ("generate", "execute", "verify", "cancel", "list")
_REQUIRED: dict[str, tuple[str, ...]] = {
    "verify": ("reassignment-json-file",),
    "generate": ("topics-to-move-json-file", "broker-list"),
    "execute": ("reassignment-json-file",),
    "cancel": ("reassignment-json-file",),
    "list": (),
}
#: Kafka's ``permittedArgs``, plus ours: ``--output`` and ``--verbose`` everywhere, ``--max-moves-per-broker``
#: with execute, and
#: ``--zookeeper`` everywhere here so that cancel and list get the "You must specify --bootstrap-server" text.
_PERMITTED: dict[str, tuple[str, ...]] = {
    "verify": ("bootstrap-server", "command-config", "preserve-throttles"),
    "generate": ("bootstrap-server", "broker-list", "command-config", "disable-rack-aware"),
    "execute": (
        "additional",
        "bootstrap-server",
        "command-config",
        "throttle",
        "replica-alter-log-dirs-throttle",
        "timeout",
        "max-moves-per-broker",
    ),
    "cancel": ("bootstrap-server", "command-config", "preserve-throttles", "timeout"),
    "list": ("bootstrap-server", "command-config"),
}
_PERMITTED_EVERYWHERE = ("zookeeper", "output", "verbose")
#: Kafka 2.8's ``bootstrapServerOnlyArgs``, in its (fixed) order, plus ours.
_NEEDS_BOOTSTRAP = (
    "additional",
    "cancel",
    "command-config",
    "replica-alter-log-dirs-throttle",
    "list",
    "timeout",
    "max-moves-per-broker",
)
#: The options each action reads with ``valueOf``, in the order ``main`` and ``handleAction`` read them.
_READS: dict[str, tuple[str, ...]] = {
    "verify": ("reassignment-json-file",),
    "generate": ("topics-to-move-json-file", "broker-list"),
    "execute": ("reassignment-json-file", "throttle", "replica-alter-log-dirs-throttle", "timeout"),
    "cancel": ("reassignment-json-file", "timeout"),
    "list": (),
}
_OUTPUTS = ("text", "json")


def _bracketed(name: str) -> str:
    """An OptionSpec's ``toString()`` (its option names as a Java list), as Kafka's messages show it."""
    return f"[{name}]"


def _uncaught(exc: jopt.OptionException) -> OptionsError:
    """A jopt-simple exception that escapes ``main``: the first line the JVM prints for it."""
    return OptionsError(f'Exception in thread "main" joptsimple.{exc.java_class}: {exc.message}', detail=exc.message)


def _error(message: str) -> OptionsError:
    """An exception caught by ``main``'s ``catch (Throwable e)``: "Error: " + message on stdout, exit 1."""
    return OptionsError(f"Error: {message}", stream="stdout", detail=message)


def _usage_error(message: str) -> OptionsError:
    """``CommandLineUtils.printUsageAndExit``."""
    return OptionsError(message, usage=True)


def _broker_list(text: str) -> tuple[int, ...]:
    """``Arrays.stream(brokerList.split(",")).map(Integer::parseInt)``: Java's ``split`` drops trailing
    empty strings (so "1,2," is [1, 2] and "," is empty), and a bad entry is a NumberFormatException."""
    parts = text.split(",")
    if text:
        while parts and parts[-1] == "":
            parts.pop()
    brokers = []
    for part in parts:
        broker = java_parse_integer(part, INT_BITS)
        if broker is None:
            raise _error(f'For input string: "{part}"')
        brokers.append(broker)
    return tuple(brokers)


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("bridgekeeper")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def _check_ours(parsed: jopt.OptionSet) -> tuple[str, int | None]:
    """``--output`` and ``--max-moves-per-broker``: refused like Kafka's own usage mistakes."""
    for name in ("output", "max-moves-per-broker"):
        if len(parsed.values.get(name, ())) > 1:
            raise _usage_error(f'Option "{_bracketed(name)}" can be given only once')
    output = parsed.values.get("output", ["text"])[0]
    if output not in _OUTPUTS:
        raise _usage_error(f'Option "{_bracketed("output")}" must be text or json, not "{output}"')
    max_moves = None
    if parsed.has("max-moves-per-broker"):
        raw = parsed.values["max-moves-per-broker"][0]
        max_moves = java_parse_integer(raw, INT_BITS)
        if max_moves is None or max_moves < 1:
            raise _usage_error(f'Option "{_bracketed("max-moves-per-broker")}" must be a positive integer, not "{raw}"')
    return output, max_moves


def parse_options(argv: Sequence[str]) -> Options:
    """The options of one run, or an :class:`OptionsError` saying what to print and how to exit (also for
    ``--help``, ``--version`` and an empty command line)."""
    try:
        parsed = jopt.parse(_SPECS, argv)
    except jopt.OptionException as exc:
        raise _uncaught(exc) from None
    # CommandLineUtils.maybePrintHelpOrVersion
    if not argv or parsed.has("help"):
        raise _usage_error(HELP_TEXT)
    if parsed.has("version"):
        raise OptionsError(_version(), stream="stdout", exit_code=0)
    actions = [a for a in _ACTIONS if parsed.has(a)]
    if len(actions) != 1:
        raise _usage_error("Command must include exactly one action: " + ", ".join(f"--{a}" for a in _ACTIONS))
    action = actions[0]
    zookeeper = parsed.has("zookeeper")
    if zookeeper and parsed.has("bootstrap-server"):
        raise _usage_error("Only one of --bootstrap-server or --zookeeper can be specified.")
    if not zookeeper and not parsed.has("bootstrap-server"):
        raise _usage_error("Please specify --bootstrap-server")
    for name in _REQUIRED[action]:
        if not parsed.has(name):
            raise _usage_error(f'Missing required argument "{_bracketed(name)}"')
    allowed = {action, *_REQUIRED[action], *_PERMITTED[action], *_PERMITTED_EVERYWHERE}
    for name in parsed.specs:  # command-line order: the first misplaced option is the one named
        if name not in allowed:
            raise _usage_error(f'Option "{_bracketed(name)}" can\'t be used with action "{_bracketed(action)}"')
    if zookeeper:
        for name in _NEEDS_BOOTSTRAP:
            if parsed.has(name):
                raise OptionsError(f'You must specify --bootstrap-server when using "{_bracketed(name)}"')
    output, max_moves = _check_ours(parsed)
    # main, then handleAction: the values in the order Kafka reads them.
    names = ("command-config", "zookeeper" if zookeeper else "bootstrap-server", *_READS[action])
    try:
        got = {name: parsed.value_of(name) for name in names}
    except jopt.OptionException as exc:  # caught by main's catch (Throwable)
        raise _error(exc.message) from None
    broker_list = _broker_list(got["broker-list"] or "") if action == "generate" else None
    return Options(
        action=Action(action),
        bootstrap_server=got.get("bootstrap-server"),
        zookeeper=got.get("zookeeper"),
        command_config=got.get("command-config"),
        reassignment_json_file=got.get("reassignment-json-file"),
        topics_to_move_json_file=got.get("topics-to-move-json-file"),
        broker_list=broker_list,
        disable_rack_aware=parsed.has("disable-rack-aware"),
        throttle=_long(got, "throttle"),
        replica_alter_log_dirs_throttle=_long(got, "replica-alter-log-dirs-throttle"),
        timeout_ms=_long(got, "timeout"),
        additional=parsed.has("additional"),
        preserve_throttles=parsed.has("preserve-throttles"),
        max_moves_per_broker=max_moves,
        output=output,
        verbose=parsed.has("verbose"),
    )


def json_requested(argv: Sequence[str]) -> bool:
    """Whether the words ask for ``--output json`` (or ``-output``, or the ``=json`` form) before a ``--``: how a
    refusal is reported when the command line does not parse. A parsed command line answers with
    :attr:`Options.output` instead (the two differ only where ``--output`` is itself another option's argument)."""
    for i, word in enumerate(argv):
        if word == "--":
            return False
        if word in ("--output=json", "-output=json"):
            return True
        if word in ("--output", "-output") and i + 1 < len(argv) and argv[i + 1] == "json":
            return True
    return False


def _long(got: dict[str, str | None], name: str) -> int:
    """A Long option's value: as read (already converted once by :meth:`jopt.OptionSet.value_of`), else its default
    (an action that does not read the option cannot have been given it)."""
    text = got.get(name, _BY_NAME[name].default)
    value = java_parse_integer(text or "", LONG_BITS)
    assert value is not None, name
    return value


#: The option table Kafka prints after a usage message (to stderr), with our options in their sorted places.
USAGE = format_help(_SPECS)
