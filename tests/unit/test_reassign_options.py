"""``bridgekeeper reassign``'s command line against Kafka 3.9's ``kafka-reassign-partitions.sh``.

Every expected text here was taken from Kafka's sources at 3.9.0-rc3 (ReassignPartitionsCommand.java,
ReassignPartitionsCommandOptions.java, CommandLineUtils.java, CommandDefaultOptions.java) and jopt-simple
5.0.4; the option table and the jopt-simple messages were produced by running those classes (jopt-simple
5.0.4 built from source, JDK 17) with our three extra options declared after Kafka's.
"""

from __future__ import annotations

from importlib import metadata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from migrate.reassign.jopt import format_help as _format_help
from migrate.reassign.options import (
    _SPECS,
    HELP_TEXT,
    USAGE,
    Action,
    Options,
    OptionsError,
    json_requested,
    parse_options,
)
from zkmodel.java import java_parse_integer

BS = ["--bootstrap-server", "localhost:9092"]
#: The arguments each action cannot do without (Kafka's requiredArgs).
REQUIRED = {
    "generate": ["--topics-to-move-json-file", "topics.json", "--broker-list", "1,2"],
    "execute": ["--reassignment-json-file", "plan.json"],
    "verify": ["--reassignment-json-file", "plan.json"],
    "cancel": ["--reassignment-json-file", "plan.json"],
    "list": [],
}
#: Every option but the actions, --help and --version, with a valid argument where it takes one.
EXTRAS = {
    "command-config": ["admin.properties"],
    "reassignment-json-file": ["plan.json"],
    "topics-to-move-json-file": ["topics.json"],
    "broker-list": ["1,2"],
    "disable-rack-aware": [],
    "throttle": ["1000"],
    "replica-alter-log-dirs-throttle": ["2000"],
    "timeout": ["5000"],
    "additional": [],
    "preserve-throttles": [],
    "max-moves-per-broker": ["2"],
    "output": ["json"],
    "verbose": [],
}
#: Kafka's permittedArgs (tooling-facts section 2), plus ours: --output and --verbose everywhere,
#: --max-moves-per-broker with --execute.
PERMITTED = {
    "generate": {
        "broker-list",
        "command-config",
        "disable-rack-aware",
        "topics-to-move-json-file",
        "output",
        "verbose",
    },
    "execute": {
        "additional",
        "command-config",
        "throttle",
        "replica-alter-log-dirs-throttle",
        "timeout",
        "reassignment-json-file",
        "max-moves-per-broker",
        "output",
        "verbose",
    },
    "verify": {"command-config", "preserve-throttles", "reassignment-json-file", "output", "verbose"},
    "cancel": {"command-config", "preserve-throttles", "timeout", "reassignment-json-file", "output", "verbose"},
    "list": {"command-config", "output", "verbose"},
}


def refusal(argv: list[str]) -> OptionsError:
    with pytest.raises(OptionsError) as info:
        parse_options(argv)
    return info.value


def assert_usage_error(argv: list[str], message: str) -> None:
    """CommandLineUtils.printUsageAndExit: the message and the table on stderr, exit 1."""
    e = refusal(argv)
    assert (e.message, e.usage, e.stream, e.exit_code) == (message, True, "stderr", 1)
    assert e.detail == message  # what --output json reports


def assert_uncaught(argv: list[str], line: str) -> None:
    """A jopt-simple exception escaping main: the JVM's first line on stderr, exit 1, no table."""
    e = refusal(argv)
    assert (e.message, e.usage, e.stream, e.exit_code) == (
        f'Exception in thread "main" joptsimple.{line}',
        False,
        "stderr",
        1,
    )
    assert e.detail == line.split(": ", 1)[1]  # --output json reports the message without the JVM's framing


def assert_main_error(argv: list[str], message: str) -> None:
    """Caught by main's catch (Throwable): "Error: " + message on stdout, exit 1, no table."""
    e = refusal(argv)
    assert (e.message, e.usage, e.stream, e.exit_code) == (f"Error: {message}", False, "stdout", 1)
    assert e.detail == message


# ---- help, version ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv", [[], ["--help"], ["--list", "--help"], ["--help=yes"], ["-help"], ["--version", "--help"]]
)
def test_help_prints_the_help_text_and_the_table_on_stderr_and_exits_1(argv: list[str]) -> None:
    assert_usage_error(argv, "This tool helps to move topic partitions between replicas.")
    assert HELP_TEXT == "This tool helps to move topic partitions between replicas."


def test_a_parse_error_comes_before_help() -> None:
    assert_uncaught(["--help", "--nope"], "UnrecognizedOptionException: nope is not a recognized option")


def test_only_non_option_words_are_not_an_empty_command_line() -> None:
    # isPrintHelpNeeded looks at args.length, not at what was parsed.
    assert_usage_error(
        ["foo"], "Command must include exactly one action: --generate, --execute, --verify, --cancel, --list"
    )


def test_version_prints_the_package_version_on_stdout_and_exits_0() -> None:
    e = refusal(["--version", "--list"])
    assert (e.message, e.usage, e.stream, e.exit_code) == (metadata.version("bridgekeeper"), False, "stdout", 0)


def test_version_without_an_installed_package(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str) -> str:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", missing)
    assert refusal(["--version"]).message == "0+unknown"


# ---- jopt-simple's parse ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "name"),
    [
        (["--gen"], "gen"),  # Kafka's OptionParser(false): no abbreviations
        (["--exec", *BS], "exec"),
        (["--list", "--bootstrap", "b"], "bootstrap"),
        (["--list", "--boot=b"], "boot"),
        (["--ver"], "ver"),
        (["--Help"], "Help"),
        (["--list", "--zk", "z"], "zk"),
        (["--=x"], ""),
        (["--list", "--bootstrap-servers", "b"], "bootstrap-servers"),
    ],
)
def test_unrecognized_long_options(argv: list[str], name: str) -> None:
    assert_uncaught(argv, f"UnrecognizedOptionException: {name} is not a recognized option")


@pytest.mark.parametrize(("token", "letter"), [("-h", "h"), ("-xyz", "x"), ("-=x", "="), ("-l", "l"), ("-gen", "g")])
def test_a_single_dash_word_that_is_no_option_name_is_a_cluster_of_letters(token: str, letter: str) -> None:
    assert_uncaught([token], f"UnrecognizedOptionException: {letter} is not a recognized option")


@pytest.mark.parametrize("name", ["bootstrap-server", "throttle", "reassignment-json-file", "zookeeper", "output"])
def test_an_option_without_its_argument(name: str) -> None:
    assert_uncaught(
        ["--execute", f"--{name}"], f"OptionMissingRequiredArgumentException: Option {name} requires an argument"
    )


def test_a_single_dash_works_for_whole_option_names() -> None:
    opts = parse_options(["-list", "-bootstrap-server", "b1", "-output=json"])
    assert (opts.action, opts.bootstrap_server, opts.output) == (Action.LIST, "b1", "json")


def test_equals_form_and_the_empty_value() -> None:
    assert parse_options(["--list", "--bootstrap-server=a=b"]).bootstrap_server == "a=b"
    assert parse_options(["--list", "--bootstrap-server="]).bootstrap_server == ""


def test_a_value_after_an_option_without_argument_is_dropped() -> None:
    opts = parse_options(["--execute=no", *BS, "--reassignment-json-file", "p", "--additional=false"])
    assert (opts.action, opts.additional) == (Action.EXECUTE, True)


def test_the_word_after_an_option_is_its_argument_even_if_it_looks_like_an_option() -> None:
    assert_usage_error(
        ["--bootstrap-server", "--list"],
        "Command must include exactly one action: --generate, --execute, --verify, --cancel, --list",
    )
    assert parse_options(["--list", "--bootstrap-server", "--"]).bootstrap_server == "--"


def test_double_dash_ends_the_options() -> None:
    assert parse_options(["--list", *BS, "--", "--execute", "--nope"]).action is Action.LIST
    assert_usage_error(
        ["--", "--list"], "Command must include exactly one action: --generate, --execute, --verify, --cancel, --list"
    )


def test_non_option_words_are_ignored() -> None:
    opts = parse_options(
        ["stray", "--list", "-", "--bootstrap-server", "b", "more", "--[arguments]", "--[arguments]=x"]
    )
    assert (opts.action, opts.bootstrap_server) == (Action.LIST, "b")


# ---- validateAndParseArgs ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv", [["--bootstrap-server", "b"], ["--list", "--verify", *BS], ["--generate", "--execute", "--cancel"]]
)
def test_exactly_one_action(argv: list[str]) -> None:
    assert_usage_error(
        argv, "Command must include exactly one action: --generate, --execute, --verify, --cancel, --list"
    )


def test_a_repeated_action_is_still_one_action() -> None:
    assert parse_options(["--list", "--list", *BS]).action is Action.LIST


@pytest.mark.parametrize("action", list(REQUIRED))
def test_bootstrap_server_is_required(action: str) -> None:
    assert_usage_error([f"--{action}", *REQUIRED[action]], "Please specify --bootstrap-server")


@pytest.mark.parametrize(
    ("argv", "missing"),
    [
        (["--verify"], "reassignment-json-file"),
        (["--execute", "--throttle", "5"], "reassignment-json-file"),
        (["--cancel"], "reassignment-json-file"),
        (["--generate"], "topics-to-move-json-file"),
        (["--generate", "--broker-list", "1"], "topics-to-move-json-file"),
        (["--generate", "--topics-to-move-json-file", "t"], "broker-list"),
    ],
)
def test_missing_required_argument(argv: list[str], missing: str) -> None:
    assert_usage_error([*argv, *BS], f'Missing required argument "[{missing}]"')


def test_missing_required_comes_before_misplaced_options() -> None:
    assert_usage_error(["--verify", *BS, "--throttle", "5"], 'Missing required argument "[reassignment-json-file]"')


MATRIX = [(action, option) for action in REQUIRED for option in EXTRAS]


@pytest.mark.parametrize(("action", "option"), MATRIX, ids=[f"{a}-{o}" for a, o in MATRIX])
def test_permitted_matrix(action: str, option: str) -> None:
    given = [] if f"--{option}" in REQUIRED[action] else [f"--{option}", *EXTRAS[option]]
    argv = [f"--{action}", *BS, *REQUIRED[action], *given]
    if option in PERMITTED[action]:
        opts = parse_options(argv)
        assert opts.action is Action(action)
    else:
        assert_usage_error(argv, f'Option "[{option}]" can\'t be used with action "[{action}]"')


def test_actions_accept_their_permitted_options_together() -> None:
    opts = parse_options(
        [
            "--execute",
            *BS,
            "--reassignment-json-file",
            "p.json",
            "--additional",
            "--command-config",
            "c.properties",
            "--throttle",
            "1000",
            "--replica-alter-log-dirs-throttle",
            "2000",
            "--timeout",
            "3000",
            "--max-moves-per-broker",
            "4",
            "--output",
            "json",
        ]
    )
    assert opts == Options(
        action=Action.EXECUTE,
        bootstrap_server="localhost:9092",
        zookeeper=None,
        command_config="c.properties",
        reassignment_json_file="p.json",
        topics_to_move_json_file=None,
        broker_list=None,
        disable_rack_aware=False,
        throttle=1000,
        replica_alter_log_dirs_throttle=2000,
        timeout_ms=3000,
        additional=True,
        preserve_throttles=False,
        max_moves_per_broker=4,
        output="json",
    )


def test_defaults() -> None:
    opts = parse_options(["--verify", *BS, "--reassignment-json-file", "p", "--preserve-throttles"])
    assert (opts.throttle, opts.replica_alter_log_dirs_throttle, opts.timeout_ms) == (-1, -1, 10000)
    assert (opts.additional, opts.preserve_throttles, opts.disable_rack_aware) == (False, True, False)
    assert (opts.max_moves_per_broker, opts.output, opts.zookeeper, opts.broker_list) == (None, "text", None, None)
    gen = parse_options(["--generate", *BS, *REQUIRED["generate"], "--disable-rack-aware"])
    assert (gen.broker_list, gen.disable_rack_aware, gen.topics_to_move_json_file) == ((1, 2), True, "topics.json")


def test_the_first_misplaced_option_in_command_line_order_is_named() -> None:
    # opts.options.specs() lists the options as they were detected.
    base = ["--verify", *BS, "--reassignment-json-file", "p"]
    assert_usage_error(
        [*base, "--timeout", "1", "--throttle", "2"], 'Option "[timeout]" can\'t be used with action "[verify]"'
    )
    assert_usage_error(
        [*base, "--throttle", "2", "--timeout", "1"], 'Option "[throttle]" can\'t be used with action "[verify]"'
    )
    assert_usage_error(
        ["--additional", "--list", *BS, "--preserve-throttles"],
        'Option "[additional]" can\'t be used with action "[list]"',
    )


# ---- values: read by main inside its try ------------------------------------------------------------------


@pytest.mark.parametrize(
    "value", ["x", "", "1.5", " 1", "1_000", "0x10", "9223372036854775808", "-9223372036854775809", "+", "-"]
)
def test_a_long_that_does_not_parse(value: str) -> None:
    assert_main_error(
        ["--execute", *BS, "--reassignment-json-file", "p", f"--throttle={value}"],
        f"Cannot parse argument '{value}' of option throttle",
    )


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("+5", 5),
        ("-1", -1),
        ("0", 0),
        ("9223372036854775807", 2**63 - 1),
        ("-9223372036854775808", -(2**63)),
        ("\u0663\u0664", 34),
        ("\uff11\uff12", 12),
        ("007", 7),
    ],
)
def test_longs_parse_as_javas_long_valueof(value: str, expected: int) -> None:
    opts = parse_options(
        ["--execute", *BS, "--reassignment-json-file", "p", "--replica-alter-log-dirs-throttle", value]
    )
    assert opts.replica_alter_log_dirs_throttle == expected


def test_long_values_are_read_in_kafkas_order() -> None:
    base = ["--execute", *BS, "--reassignment-json-file", "p"]
    assert_main_error([*base, "--timeout", "t", "--throttle", "x"], "Cannot parse argument 'x' of option throttle")
    assert_main_error(
        [*base, "--timeout", "t", "--replica-alter-log-dirs-throttle", "r"],
        "Cannot parse argument 'r' of option replica-alter-log-dirs-throttle",
    )
    assert_main_error(
        ["--cancel", *BS, "--reassignment-json-file", "p", "--timeout", "t"],
        "Cannot parse argument 't' of option timeout",
    )


def test_an_option_given_twice() -> None:
    base = ["--execute", *BS, "--reassignment-json-file", "p"]
    # valuesOf converts every argument first, then valueOf refuses more than one.
    assert_main_error([*base, "--throttle", "5", "--throttle", "x"], "Cannot parse argument 'x' of option throttle")
    assert_main_error(
        [*base, "--throttle", "5", "--throttle", "6"],
        "Found multiple arguments for option throttle, but you asked for only one",
    )
    assert_main_error(
        ["--list", *BS, *BS], "Found multiple arguments for option bootstrap-server, but you asked for only one"
    )
    # main reads --command-config before --bootstrap-server, then the action's file.
    assert_main_error(
        [
            "--verify",
            *BS,
            *BS,
            "--command-config",
            "a",
            "--command-config",
            "b",
            "--reassignment-json-file",
            "p",
            "--reassignment-json-file",
            "q",
        ],
        "Found multiple arguments for option command-config, but you asked for only one",
    )
    assert_main_error(
        ["--verify", *BS, "--reassignment-json-file", "p", "--reassignment-json-file", "q"],
        "Found multiple arguments for option reassignment-json-file, but you asked for only one",
    )
    assert parse_options(
        ["--verify", *BS, "--reassignment-json-file", "p", "--preserve-throttles", "--preserve-throttles"]
    )


@pytest.mark.parametrize(
    ("value", "brokers"),
    [
        ("1,2,3", (1, 2, 3)),
        ("1,2,", (1, 2)),
        ("1,2,,", (1, 2)),
        (",", ()),
        (",,", ()),
        ("+3,-1", (3, -1)),
        ("2147483647", (2**31 - 1,)),
        ("1,1", (1, 1)),
        ("\u0661", (1,)),
    ],
)
def test_broker_list_is_split_as_java_splits(value: str, brokers: tuple[int, ...]) -> None:
    opts = parse_options(["--generate", *BS, "--topics-to-move-json-file", "t", "--broker-list", value])
    assert opts.broker_list == brokers  # duplicates are the generate action's to refuse, with Kafka's words


@pytest.mark.parametrize(
    ("value", "bad"),
    [
        ("1,x", "x"),
        ("1,,2", ""),
        ("", ""),
        (",1", ""),
        ("1, 2", " 2"),
        ("2147483648", "2147483648"),
        ("1;2", "1;2"),
        ("-", "-"),
    ],
)
def test_a_broker_list_entry_that_is_not_an_int(value: str, bad: str) -> None:
    assert_main_error(
        ["--generate", *BS, "--topics-to-move-json-file", "t", "--broker-list", value], f'For input string: "{bad}"'
    )


def test_the_topics_file_option_is_read_before_the_broker_list() -> None:
    assert_main_error(
        ["--generate", *BS, "--topics-to-move-json-file", "t", "--topics-to-move-json-file", "u", "--broker-list", "x"],
        "Found multiple arguments for option topics-to-move-json-file, but you asked for only one",
    )


# ---- ours: --zookeeper ------------------------------------------------------------------------------------

ZK = ["--zookeeper", "zk1:2181/kafka"]


@pytest.mark.parametrize("action", ["generate", "execute", "verify"])
def test_zookeeper_instead_of_bootstrap_server(action: str) -> None:
    opts = parse_options([f"--{action}", *ZK, *REQUIRED[action]])
    assert (opts.action, opts.zookeeper, opts.bootstrap_server) == (Action(action), "zk1:2181/kafka", None)


@pytest.mark.parametrize("action", list(REQUIRED))
def test_zookeeper_and_bootstrap_server_together_are_refused(action: str) -> None:
    assert_usage_error([f"--{action}", *ZK, *BS], "Only one of --bootstrap-server or --zookeeper can be specified.")


def _needs_bootstrap(argv: list[str], name: str) -> None:
    e = refusal(argv)
    assert (e.message, e.usage, e.stream, e.exit_code) == (
        f'You must specify --bootstrap-server when using "[{name}]"',
        False,
        "stderr",
        1,
    )


@pytest.mark.parametrize("action", ["cancel", "list"])
def test_zookeeper_with_cancel_or_list(action: str) -> None:
    _needs_bootstrap([f"--{action}", *ZK, *REQUIRED[action]], action)


@pytest.mark.parametrize(
    "extra",
    [
        ["--additional"],
        ["--command-config", "c"],
        ["--timeout", "1"],
        ["--replica-alter-log-dirs-throttle", "1"],
        ["--max-moves-per-broker", "2"],
    ],
)
def test_zookeeper_with_an_admin_only_option(extra: list[str]) -> None:
    _needs_bootstrap(["--execute", *ZK, "--reassignment-json-file", "p", *extra], extra[0][2:])


def test_zookeeper_admin_only_options_are_named_in_kafka_28s_fixed_order() -> None:
    argv = [
        "--execute",
        *ZK,
        "--reassignment-json-file",
        "p",
        "--timeout",
        "1",
        "--command-config",
        "c",
        "--additional",
    ]
    _needs_bootstrap(argv, "additional")
    _needs_bootstrap(["--generate", *ZK, *REQUIRED["generate"], "--command-config", "c"], "command-config")


def test_zookeeper_checks_come_after_kafkas() -> None:
    assert_usage_error(["--cancel", *ZK], 'Missing required argument "[reassignment-json-file]"')
    assert_usage_error(
        ["--verify", *ZK, "--reassignment-json-file", "p", "--throttle", "1"],
        'Option "[throttle]" can\'t be used with action "[verify]"',
    )
    assert parse_options(["--execute", *ZK, "--reassignment-json-file", "p", "--throttle", "7"]).throttle == 7


def test_zookeeper_given_twice() -> None:
    assert_main_error(
        ["--verify", *ZK, *ZK, "--reassignment-json-file", "p"],
        "Found multiple arguments for option zookeeper, but you asked for only one",
    )


# ---- ours: --max-moves-per-broker, --output ---------------------------------------------------------------


@pytest.mark.parametrize("value", ["1", "+3", "2147483647"])
def test_max_moves_per_broker(value: str) -> None:
    opts = parse_options(["--execute", *BS, "--reassignment-json-file", "p", "--max-moves-per-broker", value])
    assert opts.max_moves_per_broker == int(value)


@pytest.mark.parametrize("value", ["0", "-1", "x", "", "1.5", "2147483648"])
def test_max_moves_per_broker_must_be_a_positive_int(value: str) -> None:
    assert_usage_error(
        ["--execute", *BS, "--reassignment-json-file", "p", f"--max-moves-per-broker={value}"],
        f'Option "[max-moves-per-broker]" must be a positive integer, not "{value}"',
    )


@pytest.mark.parametrize("action", list(REQUIRED))
def test_output_json_with_every_action(action: str) -> None:
    assert parse_options([f"--{action}", *BS, *REQUIRED[action], "--output", "json"]).output == "json"
    assert parse_options([f"--{action}", *BS, *REQUIRED[action], "--output", "text"]).output == "text"


@pytest.mark.parametrize("value", ["xml", "JSON", "", "text "])
def test_output_must_be_text_or_json(value: str) -> None:
    assert_usage_error(["--list", *BS, "--output", value], f'Option "[output]" must be text or json, not "{value}"')


@pytest.mark.parametrize("name", ["output", "max-moves-per-broker"])
def test_our_options_once(name: str) -> None:
    value = "json" if name == "output" else "2"
    argv = ["--execute", *BS, "--reassignment-json-file", "p", f"--{name}", value, f"--{name}", value]
    assert_usage_error(argv, f'Option "[{name}]" can be given only once')


def test_verbose_with_every_action_and_either_connection() -> None:
    for action in REQUIRED:
        assert parse_options([f"--{action}", *BS, *REQUIRED[action], "--verbose"]).verbose is True
        assert parse_options([f"--{action}", *BS, *REQUIRED[action]]).verbose is False
    assert parse_options(["-verify", *ZK, "--reassignment-json-file", "p", "-verbose", "--verbose"]).verbose is True


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--output", "json", "--no-such-flag"], True),
        (["--nope", "--output=json"], True),
        (["-output", "json"], True),
        (["-output=json", "--list"], True),
        (["--output", "text", "--nope"], False),
        (["--output", "JSON"], False),
        (["--output"], False),
        (["--list", "--", "--output", "json"], False),  # after "--" it is no option
        (["json", "--output"], False),
    ],
)
def test_json_requested_reads_the_raw_words(argv: list[str], expected: bool) -> None:
    assert json_requested(argv) is expected


def test_our_value_checks_come_after_kafkas_usage_checks() -> None:
    assert_usage_error(
        ["--list", *BS, "--output", "xml", "--throttle", "1"], 'Option "[throttle]" can\'t be used with action "[list]"'
    )


# ---- Java's integer parsing -------------------------------------------------------------------------------


def test_java_parse_integer() -> None:
    assert java_parse_integer("2147483647", 32) == 2**31 - 1
    assert java_parse_integer("2147483648", 32) is None
    assert java_parse_integer("-2147483648", 32) == -(2**31)
    assert java_parse_integer("\u00b2", 32) is None  # a superscript is a digit to Python's isdigit, not to Java
    assert java_parse_integer("1 ", 64) is None
    assert java_parse_integer("--1", 64) is None


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.sampled_from(
                [
                    "--list",
                    "--execute",
                    "--generate",
                    "--verify",
                    "--cancel",
                    "--zookeeper",
                    "--bootstrap-server",
                    "--throttle",
                    "--output",
                    "--",
                    "-",
                    "--help",
                    "--max-moves-per-broker",
                    "--broker-list",
                    "--reassignment-json-file",
                    "--topics-to-move-json-file",
                    "--timeout",
                    "json",
                    "1,2",
                    "x",
                ]
            ),
            st.text(max_size=8),
        ),
        max_size=10,
    )
)
def test_any_command_line_gives_options_or_an_options_error(argv: list[str]) -> None:
    try:
        opts = parse_options(argv)
    except OptionsError as e:
        assert e.stream in ("stdout", "stderr") and e.exit_code in (0, 1)
    else:
        assert isinstance(opts.action, Action)
        assert (opts.bootstrap_server is None) != (opts.zookeeper is None)


# ---- the option table -------------------------------------------------------------------------------------

#: jopt-simple 5.0.4's BuiltinHelpFormatter output for Kafka's options plus ours (trailing spaces removed:
#: every line is padded to 78 columns, checked separately).
GOLDEN_USAGE = """\
Option                                  Description
------                                  -----------
--additional                            Execute this reassignment in addition
                                          to any other ongoing ones. This
                                          option can also be used to change
                                          the throttle of an ongoing
                                          reassignment.
--bootstrap-server <String: Server(s)   REQUIRED: the server(s) to use for
  to use for bootstrapping>               bootstrapping.
--broker-list <String: brokerlist>      The list of brokers to which the
                                          partitions need to be reassigned in
                                          the form "0,1,2". This is required
                                          if --topics-to-move-json-file is
                                          used to generate reassignment
                                          configuration
--cancel                                Cancel an active reassignment.
--command-config <String: Admin client  Property file containing configs to be
  property file>                          passed to Admin Client.
--disable-rack-aware                    Disable rack aware replica assignment
--execute                               Kick off the reassignment as specified
                                          by the --reassignment-json-file
                                          option.
--generate                              Generate a candidate partition
                                          reassignment configuration. Note
                                          that this only generates a candidate
                                          assignment, it does not execute it.
--help                                  Print usage information.
--list                                  List all active partition
                                          reassignments.
--max-moves-per-broker <Integer: n>     (bridgekeeper) With --execute: submit
                                          the plan in waves so that no broker
                                          takes part in more than this many
                                          replica moves at once. Each wave is
                                          waited for before the next one;
                                          rerun the same command to resume.
--output <String: format>               (bridgekeeper) text prints the console
                                          output of Kafka's tool; json prints
                                          one JSON document on stdout instead.
                                          (default: text)
--preserve-throttles                    Do not modify broker or topic
                                          throttles.
--reassignment-json-file <String:       The JSON file with the partition
  manual assignment json file path>       reassignment configurationThe format
                                          to use is -
                                        {"partitions":
                                        \t[{"topic": "foo",
                                        \t  "partition": 1,
                                        \t  "replicas": [1,2,3],
                                        \t  "log_dirs": ["dir1","dir2","dir3"]
                                          }],
                                        "version":1
                                        }
                                        Note that "log_dirs" is optional. When
                                          it is specified, its length must
                                          equal the length of the replicas
                                          list. The value in this list can be
                                          either "any" or the absolution path
                                          of the log directory on the broker.
                                          If absolute log directory path is
                                          specified, the replica will be moved
                                          to the specified log directory on
                                          the broker.
--replica-alter-log-dirs-throttle       The movement of replicas between log
  <Long: replicaAlterLogDirsThrottle>     directories on the same broker will
                                          be throttled to this value
                                          (bytes/sec). This option can be
                                          included with --execute when a
                                          reassignment is started, and it can
                                          be altered by resubmitting the
                                          current reassignment along with the
                                          --additional flag. The throttle rate
                                          should be at least 1 KB/s. (default:
                                          -1)
--throttle <Long: throttle>             The movement of partitions between
                                          brokers will be throttled to this
                                          value (bytes/sec). This option can
                                          be included with --execute when a
                                          reassignment is started, and it can
                                          be altered by resubmitting the
                                          current reassignment along with the
                                          --additional flag. The throttle rate
                                          should be at least 1 KB/s. (default:
                                          -1)
--timeout <Long: timeout>               The maximum time in ms to wait for log
                                          directory replica assignment to
                                          begin. (default: 10000)
--topics-to-move-json-file <String:     Generate a reassignment configuration
  topics to reassign json file path>      to move the partitions of the
                                          specified topics to the list of
                                          brokers specified by the --broker-
                                          list option. The format to use is -
                                        {"topics":
                                        \t[{"topic": "foo"},{"topic": "foo1"}],
                                        "version":1
                                        }
--verbose                               (bridgekeeper) Show the client
                                          libraries' logs (kafka-python,
                                          kazoo) on stderr.
--verify                                Verify if the reassignment completed
                                          as specified by the --reassignment-
                                          json-file option. If there is a
                                          throttle engaged for the replicas
                                          specified, and the rebalance has
                                          completed, the throttle will be
                                          removed
--version                               Display Kafka version.
--zookeeper <String: urls>              (bridgekeeper) DEPRECATED, as in Kafka
                                          2.8: the ZooKeeper connection string
                                          (host:port) for the legacy path that
                                          writes ZooKeeper directly. Not with
                                          --bootstrap-server. Only with --
                                          generate, --execute or --verify.
"""
OURS = ("--max-moves-per-broker", "--output", "--verbose", "--zookeeper")


def test_usage_is_jopts_table_line_for_line() -> None:
    lines = USAGE.split("\n")
    assert lines[-1] == ""  # every row ends with a line separator
    assert [line.rstrip(" ") for line in lines[:-1]] == GOLDEN_USAGE.split("\n")[:-1]
    assert {len(line) for line in lines[:-1]} == {78}  # both columns padded: 38 + 2 + 38


def _without_ours(table: str) -> str:
    kept, skipping = [], False
    for line in table.splitlines(keepends=True):
        if line.startswith("--"):
            skipping = line.startswith(OURS)
        if not skipping:
            kept.append(line)
    return "".join(kept)


def test_kafkas_own_table_is_unchanged_by_our_options() -> None:
    kafka_only = _format_help([s for s in _SPECS if f"--{s.name}" not in OURS])
    assert kafka_only == _without_ours(USAGE)
    assert "--zookeeper" not in kafka_only and kafka_only.count("\n") == 93


def test_the_table_puts_a_word_wider_than_the_column_on_its_own_indented_line() -> None:
    # Exactly what jopt-simple 5.0.4 prints for these two options (a one-letter option gets one dash).
    from migrate.reassign.jopt import OptionSpec as _Spec

    table = _format_help([_Spec("a", "x" * 80), _Spec("bb", "short words then a longword" + "y" * 75 + " end")])
    assert table.split("\n") == [
        "Option  Description" + " " * 61,
        "------  -----------" + " " * 61,
        "-a" + " " * 78,
        " " * 10 + "x" * 80,
        "--bb    short words then a" + " " * 54,
        " " * 10 + "longword" + "y" * 75,
        " " * 10 + "end" + " " * 67,
        "",
    ]
