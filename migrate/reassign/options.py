"""The command line of ``bridgekeeper reassign``: Kafka 3.9's ``kafka-reassign-partitions.sh`` option for
option, plus our ``--zookeeper``, ``--max-moves-per-broker`` and ``--output``.

Scripts and runbooks written for Kafka's tool depend on more than the option names: on which mistakes print
the usage, on which stream, with which exit code. So this module copies three layers of Kafka's behaviour
(sources: ``ReassignPartitionsCommandOptions.java``, ``ReassignPartitionsCommand.java`` ``main`` and
``validateAndParseArgs``, ``CommandLineUtils.java`` and ``CommandDefaultOptions.java`` at 3.9.0-rc3, and
jopt-simple 5.0.4, the version Kafka 3.9 ships):

1. **jopt-simple's parse** runs in the options' constructor, before anything else and outside ``main``'s
   ``try``: its exceptions escape, so the JVM prints ``Exception in thread "main" joptsimple.X: message``
   (and a stack trace, which we never print) on stderr and exits 1. Kafka builds ``new
   OptionParser(false)``: abbreviations are *off* (``--gen`` is "gen is not a recognized option"). ``-name``
   works like ``--name`` when the whole name is an option; otherwise a single-dash word is a cluster of
   one-letter options, and jopt names its first letter. ``--opt=value`` and ``--opt value`` both work; the
   word after an option that takes an argument is always its argument (``--bootstrap-server --execute``
   sets the server to ``--execute``); ``=value`` after an option without argument is silently dropped;
   ``--`` ends the options; words that are not options are collected and ignored by the tool.
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
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from zkmodel.java import java_trim

HELP_TEXT = "This tool helps to move topic partitions between replicas."
INT_BITS, LONG_BITS = 32, 64


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


@dataclass(frozen=True)
class _Spec:
    """One ``parser.accepts(...)``: ``arg`` is the ``describedAs`` text of an option that takes an argument
    (None: no argument), ``kind`` its ``ofType`` as the help shows it, ``default`` its ``defaultsTo``."""

    name: str
    help: str
    arg: str | None = None
    kind: str = "String"
    default: str | None = None


_THROTTLE_TAIL = (
    "This option can be included with --execute when a reassignment is started, and it can be altered by "
    "resubmitting the current reassignment along with the --additional flag. The throttle rate should be at "
    "least 1 KB/s."
)
#: Kafka's options in declaration order (CommandDefaultOptions first), then ours.
_SPECS: tuple[_Spec, ...] = (
    _Spec("help", "Print usage information."),
    _Spec("version", "Display Kafka version."),
    _Spec(
        "verify",
        "Verify if the reassignment completed as specified by the --reassignment-json-file option. If there is a "
        "throttle engaged for the replicas specified, and the rebalance has completed, the throttle will be removed",
    ),
    _Spec(
        "generate",
        "Generate a candidate partition reassignment configuration. Note that this only generates a candidate "
        "assignment, it does not execute it.",
    ),
    _Spec("execute", "Kick off the reassignment as specified by the --reassignment-json-file option."),
    _Spec("cancel", "Cancel an active reassignment."),
    _Spec("list", "List all active partition reassignments."),
    _Spec(
        "bootstrap-server", "REQUIRED: the server(s) to use for bootstrapping.", "Server(s) to use for bootstrapping"
    ),
    _Spec(
        "command-config", "Property file containing configs to be passed to Admin Client.", "Admin client property file"
    ),
    _Spec(
        "reassignment-json-file",
        "The JSON file with the partition reassignment configurationThe format to use is - \n"
        '{"partitions":\n\t[{"topic": "foo",\n\t  "partition": 1,\n\t  "replicas": [1,2,3],\n\t  "log_dirs": '
        '["dir1","dir2","dir3"] }],\n"version":1\n}\nNote that "log_dirs" is optional. When it is specified, its '
        'length must equal the length of the replicas list. The value in this list can be either "any" or the '
        "absolution path of the log directory on the broker. If absolute log directory path is specified, the "
        "replica will be moved to the specified log directory on the broker.",
        "manual assignment json file path",
    ),
    _Spec(
        "topics-to-move-json-file",
        "Generate a reassignment configuration to move the partitions of the specified topics to the list of "
        'brokers specified by the --broker-list option. The format to use is - \n{"topics":\n\t[{"topic": "foo"},'
        '{"topic": "foo1"}],\n"version":1\n}',
        "topics to reassign json file path",
    ),
    _Spec(
        "broker-list",
        'The list of brokers to which the partitions need to be reassigned in the form "0,1,2". This is required '
        "if --topics-to-move-json-file is used to generate reassignment configuration",
        "brokerlist",
    ),
    _Spec("disable-rack-aware", "Disable rack aware replica assignment"),
    _Spec(
        "throttle",
        "The movement of partitions between brokers will be throttled to this value (bytes/sec). " + _THROTTLE_TAIL,
        "throttle",
        "Long",
        "-1",
    ),
    _Spec(
        "replica-alter-log-dirs-throttle",
        "The movement of replicas between log directories on the same broker will be throttled to this value "
        "(bytes/sec). " + _THROTTLE_TAIL,
        "replicaAlterLogDirsThrottle",
        "Long",
        "-1",
    ),
    _Spec(
        "timeout",
        "The maximum time in ms to wait for log directory replica assignment to begin.",
        "timeout",
        "Long",
        "10000",
    ),
    _Spec(
        "additional",
        "Execute this reassignment in addition to any other ongoing ones. This option can also be used to change "
        "the throttle of an ongoing reassignment.",
    ),
    _Spec("preserve-throttles", "Do not modify broker or topic throttles."),
    _Spec(
        "zookeeper",
        "(bridgekeeper) DEPRECATED, as in Kafka 2.8: the ZooKeeper connection string (host:port) for the "
        "legacy path that writes ZooKeeper directly. Not with --bootstrap-server. Only with --generate, "
        "--execute or --verify.",
        "urls",
    ),
    _Spec(
        "max-moves-per-broker",
        "(bridgekeeper) With --execute: submit the plan in waves so that no broker takes part in more than this "
        "many replica moves at once. Each wave is waited for before the next one; rerun the same command to "
        "resume.",
        "n",
        "Integer",
    ),
    _Spec(
        "output",
        "(bridgekeeper) text prints the console output of Kafka's tool; json prints one JSON document on stdout "
        "instead.",
        "format",
        default="text",
    ),
    _Spec("verbose", "(bridgekeeper) Show the client libraries' logs (kafka-python, kazoo) on stderr."),
)
_BY_NAME = {s.name: s for s in _SPECS}
#: jopt's NonOptionArgumentSpec is registered under this name, so ``--[arguments]=x`` is a non-option "x".
_NON_OPTIONS = "[arguments]"
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


def _uncaught(exception: str, message: str) -> OptionsError:
    """A jopt-simple exception that escapes ``main``: the first line the JVM prints for it."""
    return OptionsError(f'Exception in thread "main" joptsimple.{exception}: {message}', detail=message)


def _error(message: str) -> OptionsError:
    """An exception caught by ``main``'s ``catch (Throwable e)``: "Error: " + message on stdout, exit 1."""
    return OptionsError(f"Error: {message}", stream="stdout", detail=message)


def _usage_error(message: str) -> OptionsError:
    """``CommandLineUtils.printUsageAndExit``."""
    return OptionsError(message, usage=True)


class _Parsed:
    """jopt-simple's OptionSet: every detected option in command-line order (repeats included, as
    ``specs()`` returns them) and each option's arguments."""

    def __init__(self) -> None:
        self.specs: list[str] = []
        self.values: dict[str, list[str]] = {}
        self.non_options: list[str] = []

    def add(self, name: str, argument: str | None) -> None:
        self.specs.append(name)
        arguments = self.values.setdefault(name, [])
        if argument is not None:
            arguments.append(argument)

    def has(self, name: str) -> bool:
        return name in self.values


def _parse(argv: Sequence[str]) -> _Parsed:
    """``OptionParser.parse`` with abbreviations off, as Kafka's CommandDefaultOptions builds it."""
    parsed = _Parsed()
    i = 0
    while i < len(argv):
        token = argv[i]
        i += 1
        if token == "--":
            parsed.non_options.extend(argv[i:])
            break
        if token.startswith("--"):
            name, value = _key_value(token[2:])
            if name != _NON_OPTIONS and name not in _BY_NAME:
                raise _uncaught("UnrecognizedOptionException", f"{name} is not a recognized option")
        elif token.startswith("-") and token != "-":
            name, value = _key_value(token[1:])
            if name != _NON_OPTIONS and name not in _BY_NAME:
                # Not an option name: jopt reads a cluster of one-letter options, and Kafka declares none.
                raise _uncaught("UnrecognizedOptionException", f"{token[1]} is not a recognized option")
        else:
            parsed.non_options.append(token)
            continue
        if name == _NON_OPTIONS:
            if value is not None:
                parsed.non_options.append(value)
            continue
        if _BY_NAME[name].arg is None:
            parsed.add(name, None)  # NoArgumentOptionSpec ignores an "=value"
            continue
        if value is None:
            if i >= len(argv):
                raise _uncaught("OptionMissingRequiredArgumentException", f"Option {name} requires an argument")
            value = argv[i]
            i += 1
        parsed.add(name, value)
    return parsed


def _key_value(text: str) -> tuple[str, str | None]:
    """jopt's KeyValuePair: split at the first "="; no "=" means no value (``--x=`` is the empty value)."""
    key, eq, value = text.partition("=")
    return key, value if eq else None


def java_parse_integer(text: str, bits: int) -> int | None:
    """``Integer.parseInt`` / ``Long.parseLong`` (radix 10): an optional sign, then one or more decimal
    digits (any Unicode decimal digit, as ``Character.digit`` takes them), in range; else None. Python's
    ``int()`` is looser (spaces, underscores), so it is not used on the raw text."""
    body = text[1:] if text[:1] in ("+", "-") else text
    if not body:
        return None
    value = 0
    for ch in body:
        digit = unicodedata.decimal(ch, None)
        if digit is None:
            return None
        value = value * 10 + digit
    if text[:1] == "-":
        value = -value
    if not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
        return None
    return value


class _Values:
    """``OptionSet.valueOf`` for the options ``main`` reads: defaults when absent, every argument converted
    (the first that fails is reported), then "multiple arguments" when there is more than one."""

    def __init__(self, parsed: _Parsed) -> None:
        self.parsed = parsed

    def one(self, name: str) -> str | None:
        found = self.parsed.values.get(name)
        if not found:
            return _BY_NAME[name].default
        spec = _BY_NAME[name]
        if spec.kind == "Long":
            for argument in found:
                if java_parse_integer(argument, LONG_BITS) is None:
                    raise _error(f"Cannot parse argument '{argument}' of option {name}")
        if len(found) > 1:
            raise _error(f"Found multiple arguments for option {name}, but you asked for only one")
        return found[0]


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


def _check_ours(parsed: _Parsed) -> tuple[str, int | None]:
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
    parsed = _parse(argv)
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
    values = _Values(parsed)
    names = ("command-config", "zookeeper" if zookeeper else "bootstrap-server", *_READS[action])
    got = {name: values.one(name) for name in names}
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
    """A Long option's value: as read (already converted once by :meth:`_Values.one`), else its default
    (an action that does not read the option cannot have been given it)."""
    text = got.get(name, _BY_NAME[name].default)
    value = java_parse_integer(text or "", LONG_BITS)
    assert value is not None, name
    return value


# ---- the option table -------------------------------------------------------------------------------------

_WIDTH, _GAP, _INDENT = 80, 2, 2


def _words(line: str) -> list[str]:
    """The pieces between line-break opportunities of ``java.text.BreakIterator.getLineInstance()``, for
    the characters these help texts use: after spaces and tabs; after a hyphen before a letter, or before a
    digit when the hyphen follows a letter or digit (``--broker-`` / ``list``, but not ``-1``); after
    ``.,;:`` before a letter. Checked against jopt-simple 5.0.4 on JDK 17 by the golden test of USAGE."""
    words: list[str] = []
    start = 0
    for i in range(1, len(line)):
        prev, cur = line[i - 1], line[i]
        breaks = (
            (prev in " \t" and cur not in " \t")
            or (prev == "-" and cur.isalpha())
            or (prev == "-" and cur.isdigit() and i >= 2 and line[i - 2].isalnum())
            or (prev in ".,;:" and cur.isalpha())
        )
        if breaks:
            words.append(line[start:i])
            start = i
    if start < len(line):
        words.append(line[start:])
    return words


def _pieces(raw: str, width: int) -> list[str]:
    """jopt's ``Columns.piecesOf``: each embedded line filled word by word; a piece that would overflow is
    flushed (trailing whitespace dropped) and the next one starts indented by two spaces."""
    pieces: list[str] = []
    lines = java_trim(raw).split("\n")
    while len(lines) > 1 and lines[-1] == "":  # Java's split drops trailing empty strings
        lines.pop()
    for line in lines:
        piece = ""
        for word in _words(line):
            if len(piece) + len(word) > width:
                pieces.append(re.sub(r"[ \t\n\x0b\f\r]+$", "", piece))
                piece = " " * _INDENT + word
            else:
                piece += word
        if piece:
            pieces.append(piece)
    return pieces


def _column_widths(rows: Sequence[tuple[str, str]]) -> tuple[int, int]:
    """``Rows.optionWidth`` / ``descriptionWidth``: the widest entry, within half and the rest of 80."""
    option = min((_WIDTH - _GAP) // 2, max(len(o) for o, _ in rows))
    return option, min(_WIDTH - option - _GAP, max(len(d) for _, d in rows))


def _format_help(specs: Sequence[_Spec]) -> str:
    """jopt-simple's BuiltinHelpFormatter (80 columns, a 2-space gap), options sorted by name."""
    rows = [("Option", "Description"), ("------", "-----------")]
    for spec in sorted(specs, key=lambda s: s.name):
        left = ("--" if len(spec.name) > 1 else "-") + spec.name
        if spec.arg is not None:
            left += f" <{spec.kind}: {spec.arg}>"
        right = spec.help
        if spec.default is not None:
            right = java_trim(f"{right} (default: {spec.default})")
        rows.append((left, right))
    option_width, description_width = _column_widths(rows)
    fitted: list[tuple[str, str]] = []
    for left, right in rows:
        lefts, rights = _pieces(left, option_width), _pieces(right, description_width)
        for k in range(max(len(lefts), len(rights))):
            fitted.append((lefts[k] if k < len(lefts) else "", rights[k] if k < len(rights) else ""))
    option_width, description_width = _column_widths(fitted)
    return "".join(
        f"{left.ljust(option_width)}{' ' * _GAP}{right.ljust(description_width)}\n" for left, right in fitted
    )


#: The option table Kafka prints after a usage message (to stderr), with our options in their sorted places.
USAGE = _format_help(_SPECS)
