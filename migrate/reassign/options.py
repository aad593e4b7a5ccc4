"""The command line of ``kafka-reassign-partitions`` (Kafka 3.9's ReassignPartitionsCommandOptions on
jopt-simple 5, and ``validateAndParseArgs``), plus our ``--zookeeper``, ``--max-moves-per-broker`` and
``--output``.

Kafka's tool is exact about where each mistake is reported, and scripts depend on it:

* jopt-simple parse failures (an unknown option, an option without its argument) escape ``main`` in Kafka:
  the JVM prints ``Exception in thread "main" joptsimple...: <message>`` on stderr and exits 1 (we print
  that first line, never a stack trace);
* ``validateAndParseArgs`` failures print the message and the option table on stderr, exit 1; ``--help``
  and no arguments print the help text and the table the same way (exit 1 too), ``--version`` the version
  on stdout (exit 0);
* values converted later (a Long option, ``--broker-list``) fail inside ``main``'s try: "Error: ..." on
  stdout, exit 1.

Abbreviations are off (CommandDefaultOptions builds ``new OptionParser(false)``); a single leading dash works
for a whole option name (jopt reads ``-execute`` as ``--execute``); non-option words are ignored.
"""

from __future__ import annotations

import enum
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass

HELP_TEXT = "This tool helps to move topic partitions between replicas."
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1


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


class OptionsError(Exception):
    """What to print and how to exit: ``message`` (may be empty), ``usage`` (print the option table after it),
    ``stream`` ("stderr" or "stdout") and ``exit_code``."""

    def __init__(self, message: str, *, usage: bool = False, stream: str = "stderr", exit_code: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.usage = usage
        self.stream = stream
        self.exit_code = exit_code


@dataclass(frozen=True)
class _Spec:
    name: str
    help: str
    arg: str | None = None  # describedAs, when the option takes an argument
    kind: str = "String"  # jopt's ofType: String or Long (or Integer, ours)
    default: str | None = None
    ours: bool = False


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
        "The movement of partitions between brokers will be throttled to this value (bytes/sec). This option can "
        "be included with --execute when a reassignment is started, and it can be altered by resubmitting the "
        "current reassignment along with the --additional flag. The throttle rate should be at least 1 KB/s.",
        "throttle",
        "Long",
        "-1",
    ),
    _Spec(
        "replica-alter-log-dirs-throttle",
        "The movement of replicas between log directories on the same broker will be throttled to this value "
        "(bytes/sec). This option can be included with --execute when a reassignment is started, and it can be "
        "altered by resubmitting the current reassignment along with the --additional flag. The throttle rate "
        "should be at least 1 KB/s.",
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
        "DEPRECATED (bridgekeeper, as Kafka 2.6-2.8): the ZooKeeper connection string, for the legacy "
        "/admin/reassign_partitions path. Only with --generate, --execute and --verify; not with "
        "--bootstrap-server.",
        "urls",
        ours=True,
    ),
    _Spec(
        "max-moves-per-broker",
        "(bridgekeeper) With --execute: run the plan in waves so that no broker takes part in more than this many "
        "replica moves at once; each wave waits for the previous one. Rerun the same command to resume.",
        "n",
        "Integer",
        ours=True,
    ),
    _Spec(
        "output",
        "(bridgekeeper) text (Kafka's console text, the default) or json (one JSON document on stdout).",
        "text|json",
        default="text",
        ours=True,
    ),
)
_BY_NAME = {s.name: s for s in _SPECS}
_ACTIONS = ("generate", "execute", "verify", "cancel", "list")
_REQUIRED = {
    "verify": ("reassignment-json-file",),
    "generate": ("topics-to-move-json-file", "broker-list"),
    "execute": ("reassignment-json-file",),
    "cancel": ("reassignment-json-file",),
    "list": (),
}
#: Kafka's permittedArgs per action, plus our --output (everywhere), --zookeeper and --max-moves-per-broker.
_PERMITTED = {
    "verify": ("bootstrap-server", "command-config", "preserve-throttles", "zookeeper", "output"),
    "generate": ("bootstrap-server", "broker-list", "command-config", "disable-rack-aware", "zookeeper", "output"),
    "execute": (
        "additional",
        "bootstrap-server",
        "command-config",
        "throttle",
        "replica-alter-log-dirs-throttle",
        "timeout",
        "zookeeper",
        "max-moves-per-broker",
        "output",
    ),
    "cancel": ("bootstrap-server", "command-config", "preserve-throttles", "timeout", "output"),
    "list": ("bootstrap-server", "command-config", "output"),
}
#: What Kafka 2.6-2.8 refused with --zookeeper ("You must specify --bootstrap-server when using ...").
_NEEDS_BOOTSTRAP = ("cancel", "list", "additional", "command-config", "timeout", "replica-alter-log-dirs-throttle",
                    "max-moves-per-broker")  # fmt: skip


def _jopt(name: str) -> str:
    """An OptionSpec's toString: its names in brackets."""
    return f"[{name}]"


def _parse(argv: Sequence[str]) -> tuple[list[str], dict[str, list[str]]]:
    """jopt-simple's OptionParser.parse: the options in the order first seen, and their arguments."""
    seen: list[str] = []
    values: dict[str, list[str]] = {}
    i = 0
    while i < len(argv):
        token = argv[i]
        i += 1
        if token == "--":
            break  # the rest are non-option arguments
        if token.startswith("--") and len(token) > 2:
            name, eq, inline = token[2:].partition("=")
        elif token.startswith("-") and len(token) > 1 and token != "-":
            name, eq, inline = token[1:].partition("=")
            if name not in _BY_NAME:  # a cluster of short options: jopt names the first unknown character
                raise OptionsError(
                    f'Exception in thread "main" joptsimple.UnrecognizedOptionException: {name[0]} is not a '
                    "recognized option"
                )
        else:
            continue  # a non-option argument: jopt keeps it, the tool never looks at it
        spec = _BY_NAME.get(name)
        if spec is None:
            raise OptionsError(
                f'Exception in thread "main" joptsimple.UnrecognizedOptionException: {name} is not a recognized option'
            )
        if name not in values:
            seen.append(name)
            values[name] = []
        if spec.arg is None:
            if eq:
                raise OptionsError(
                    'Exception in thread "main" joptsimple.OptionArgumentConversionException: Option '
                    f"{_jopt(name)} does not accept an argument"
                )
            continue
        if eq:
            values[name].append(inline)
        elif i < len(argv):
            values[name].append(argv[i])  # jopt takes the next word even when it looks like an option
            i += 1
        else:
            raise OptionsError(
                'Exception in thread "main" joptsimple.OptionMissingRequiredArgumentException: Option '
                f"{_jopt(name)} requires an argument"
            )
    return seen, values


def _one(values: dict[str, list[str]], name: str) -> str | None:
    found = values.get(name)
    if not found:
        return _BY_NAME[name].default
    if len(found) > 1:
        raise OptionsError(
            f"Error: Found multiple arguments for option {_jopt(name)}, but you asked for only one", stream="stdout"
        )
    return found[0]


def _long(values: dict[str, list[str]], name: str) -> int:
    """A Long option's value (jopt converts with Long.valueOf when the tool asks for it)."""
    text = _one(values, name)
    assert text is not None
    body = text[1:] if text[:1] in "+-" else text
    if not body or not body.isascii() or not body.isdigit() or not LONG_MIN <= int(text) <= LONG_MAX:
        raise OptionsError(f"Error: Cannot parse argument '{text}' of option {name}", stream="stdout")
    return int(text)


def _broker_list(text: str) -> tuple[int, ...]:
    """``Arrays.stream(brokerList.split(",")).map(Integer::parseInt)``: Java's split drops trailing empty
    strings; Integer.parseInt refuses anything but an optionally signed run of ASCII digits in int range."""
    parts = text.split(",")
    while parts and parts[-1] == "" and len(parts) > 1:
        parts.pop()
    out = []
    for part in parts:
        body = part[1:] if part[:1] in "+-" else part
        if not body or not body.isascii() or not body.isdigit() or not -(2**31) <= int(part) < 2**31:
            raise OptionsError(f'Error: For input string: "{part}"', stream="stdout")
        out.append(int(part))
    return tuple(out)


def parse_options(argv: Sequence[str]) -> Options:
    seen, values = _parse(argv)
    if not argv or "help" in values:
        raise OptionsError(HELP_TEXT, usage=True)
    if "version" in values:
        from importlib import metadata

        try:
            version = metadata.version("bridgekeeper")
        except metadata.PackageNotFoundError:
            version = "0+unknown"
        raise OptionsError(version, stream="stdout", exit_code=0)
    actions = [a for a in _ACTIONS if a in values]
    if len(actions) != 1:
        raise OptionsError(
            "Command must include exactly one action: " + ", ".join(f"--{a}" for a in _ACTIONS), usage=True
        )
    action = actions[0]
    zookeeper = "zookeeper" in values
    if "bootstrap-server" in values and zookeeper:
        raise OptionsError("Only one of --bootstrap-server or --zookeeper can be specified.", usage=True)
    if "bootstrap-server" not in values and not zookeeper:
        raise OptionsError("Please specify --bootstrap-server", usage=True)
    if zookeeper:
        for name in (action, *seen):
            if name in _NEEDS_BOOTSTRAP:
                raise OptionsError(f'You must specify --bootstrap-server when using "{_jopt(name)}"')
    for name in _REQUIRED[action]:
        if name not in values:
            raise OptionsError(f'Missing required argument "{_jopt(name)}"', usage=True)
    for name in seen:
        if name != action and name not in _REQUIRED[action] and name not in _PERMITTED[action]:
            raise OptionsError(f'Option "{_jopt(name)}" can\'t be used with action "{_jopt(action)}"', usage=True)
    output = _one(values, "output") or "text"
    if output not in ("text", "json"):
        raise OptionsError(f"--output must be text or json, not {output!r}", usage=True)
    max_moves = None
    if "max-moves-per-broker" in values:
        raw = _one(values, "max-moves-per-broker") or ""
        if not (raw.isascii() and raw.isdigit()) or int(raw) < 1 or int(raw) >= 2**31:
            raise OptionsError(f"--max-moves-per-broker must be a positive integer, not {raw!r}", usage=True)
        max_moves = int(raw)
    broker_list = None
    if action == "generate":
        broker_list = _broker_list(_one(values, "broker-list") or "")
    return Options(
        action=Action(action),
        bootstrap_server=_one(values, "bootstrap-server"),
        zookeeper=_one(values, "zookeeper"),
        command_config=_one(values, "command-config"),
        reassignment_json_file=_one(values, "reassignment-json-file"),
        topics_to_move_json_file=_one(values, "topics-to-move-json-file"),
        broker_list=broker_list,
        disable_rack_aware="disable-rack-aware" in values,
        throttle=_long(values, "throttle"),
        replica_alter_log_dirs_throttle=_long(values, "replica-alter-log-dirs-throttle"),
        timeout_ms=_long(values, "timeout"),
        additional="additional" in values,
        preserve_throttles="preserve-throttles" in values,
        max_moves_per_broker=max_moves,
        output=output,
    )


def _usage() -> str:
    """The option table in the layout of jopt-simple's BuiltinHelpFormatter (80 columns, options sorted)."""
    rows = [("Option", "Description"), ("------", "-----------")]
    for spec in sorted(_SPECS, key=lambda s: s.name):
        left = f"--{spec.name}"
        if spec.arg is not None:
            left += f" <{spec.kind}: {spec.arg}>" if spec.kind != "String" else f" <String: {spec.arg}>"
        text = spec.help + (f" (default: {spec.default})" if spec.default is not None else "")
        rows.append((left, text))
    lines = []
    for left, text in rows:
        left_lines = textwrap.wrap(left, 38, subsequent_indent="  ") or [""]
        right_lines: list[str] = []
        for para in text.split("\n"):
            right_lines.extend(textwrap.wrap(para.replace("\t", "  "), 38) or [""])
        for k in range(max(len(left_lines), len(right_lines))):
            lhs = left_lines[k] if k < len(left_lines) else ""
            rhs = right_lines[k] if k < len(right_lines) else ""
            lines.append(f"{lhs:<40}{('  ' if k and rhs else '')}{rhs}".rstrip())
    return "\n".join(lines) + "\n"


USAGE = _usage()
