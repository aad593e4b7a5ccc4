"""The reassign tool's command line: Kafka 3.9's validation order, texts, streams and exit codes
(ReassignPartitionsCommand.validateAndParseArgs, CommandLineUtils, jopt-simple 5), and our extras."""

from __future__ import annotations

import pytest

from migrate.reassign.options import USAGE, Action, OptionsError, parse_options

BS = ["--bootstrap-server", "localhost:9092"]


def refused(argv: list[str]) -> OptionsError:
    with pytest.raises(OptionsError) as info:
        parse_options(argv)
    return info.value


def test_no_arguments_and_help_print_the_help_text_and_usage_and_exit_1() -> None:
    for argv in ([], ["--help"], [*BS, "--list", "--help"]):
        e = refused(argv)
        assert (e.message, e.usage, e.stream, e.exit_code) == (
            "This tool helps to move topic partitions between replicas.", True, "stderr", 1,
        )  # fmt: skip


def test_version_prints_on_stdout_and_exits_0() -> None:
    e = refused(["--version"])
    assert (e.stream, e.exit_code, e.usage) == ("stdout", 0, False) and e.message


@pytest.mark.parametrize(
    "argv",
    [[*BS], [*BS, "--generate", "--execute"], [*BS, "--list", "--cancel", "--verify"]],
)
def test_exactly_one_action(argv: list[str]) -> None:
    e = refused(argv)
    assert e.message == "Command must include exactly one action: --generate, --execute, --verify, --cancel, --list"
    assert (e.usage, e.stream, e.exit_code) == (True, "stderr", 1)


def test_bootstrap_server_is_required() -> None:
    e = refused(["--list"])
    assert (e.message, e.usage) == ("Please specify --bootstrap-server", True)


@pytest.mark.parametrize(
    ("argv", "missing"),
    [
        (["--execute"], "reassignment-json-file"),
        (["--verify"], "reassignment-json-file"),
        (["--cancel"], "reassignment-json-file"),
        (["--generate", "--broker-list", "1"], "topics-to-move-json-file"),
        (["--generate"], "topics-to-move-json-file"),  # generate's first required argument is named first
        (["--generate", "--topics-to-move-json-file", "t.json"], "broker-list"),
    ],
)
def test_missing_required_arguments(argv: list[str], missing: str) -> None:
    e = refused([*BS, *argv])
    assert (e.message, e.usage) == (f'Missing required argument "[{missing}]"', True)


PERMITTED = {
    "generate": {"broker-list", "command-config", "disable-rack-aware", "topics-to-move-json-file"},
    "execute": {"additional", "command-config", "throttle", "replica-alter-log-dirs-throttle", "timeout",
                "reassignment-json-file", "max-moves-per-broker"},
    "verify": {"command-config", "preserve-throttles", "reassignment-json-file"},
    "cancel": {"command-config", "preserve-throttles", "timeout", "reassignment-json-file"},
    "list": {"command-config"},
}  # fmt: skip
REQUIRED = {
    "generate": ["--topics-to-move-json-file", "t.json", "--broker-list", "1,2"],
    "execute": ["--reassignment-json-file", "p.json"],
    "verify": ["--reassignment-json-file", "p.json"],
    "cancel": ["--reassignment-json-file", "p.json"],
    "list": [],
}
EXTRAS = {
    "broker-list": ["--broker-list", "1"],
    "command-config": ["--command-config", "c.properties"],
    "disable-rack-aware": ["--disable-rack-aware"],
    "topics-to-move-json-file": ["--topics-to-move-json-file", "t.json"],
    "additional": ["--additional"],
    "throttle": ["--throttle", "1000"],
    "replica-alter-log-dirs-throttle": ["--replica-alter-log-dirs-throttle", "1000"],
    "timeout": ["--timeout", "5"],
    "reassignment-json-file": ["--reassignment-json-file", "p.json"],
    "preserve-throttles": ["--preserve-throttles"],
    "max-moves-per-broker": ["--max-moves-per-broker", "2"],
}


@pytest.mark.parametrize("action", sorted(PERMITTED))
@pytest.mark.parametrize("option", sorted(EXTRAS))
def test_the_permitted_matrix(action: str, option: str) -> None:
    argv = [*BS, f"--{action}", *REQUIRED[action]]
    if option not in " ".join(argv):
        argv += EXTRAS[option]
    if option in PERMITTED[action]:
        assert parse_options(argv).action is Action(action)
    else:
        e = refused(argv)
        assert (e.message, e.usage, e.exit_code) == (
            f'Option "[{option}]" can\'t be used with action "[{action}]"', True, 1,
        )  # fmt: skip


def test_the_first_offending_option_on_the_command_line_is_named() -> None:
    e = refused([*BS, "--list", "--timeout", "5", "--throttle", "9"])
    assert e.message == 'Option "[timeout]" can\'t be used with action "[list]"'


def test_jopt_parse_failures_escape_main_as_kafka_does() -> None:
    e = refused([*BS, "--list", "--frobnicate"])
    assert (
        e.message
        == 'Exception in thread "main" joptsimple.UnrecognizedOptionException: frobnicate is not a recognized option'
    )
    assert (e.usage, e.stream, e.exit_code) == (False, "stderr", 1)
    e = refused([*BS, "--execute", "--reassignment-json-file"])
    assert e.message.endswith(
        "OptionMissingRequiredArgumentException: Option [reassignment-json-file] requires an argument"
    )
    assert refused(["--gen"]).message.endswith("gen is not a recognized option")  # no abbreviations


def test_values_are_taken_as_jopt_takes_them() -> None:
    opts = parse_options(
        [*BS, "--execute", "--reassignment-json-file=p.json", "--throttle", "-5", "words", "-additional"]
    )
    assert (opts.reassignment_json_file, opts.throttle, opts.additional) == ("p.json", -5, True)
    assert (opts.replica_alter_log_dirs_throttle, opts.timeout_ms, opts.output) == (-1, 10000, "text")
    # jopt takes the next word as the argument even when it looks like an option
    assert parse_options([*BS, "--execute", "--reassignment-json-file", "--list"]).reassignment_json_file == "--list"


@pytest.mark.parametrize("value", ["abc", "1.5", "", "99999999999999999999"])
def test_a_long_option_that_does_not_parse_fails_in_main(value: str) -> None:
    e = refused([*BS, "--execute", "--reassignment-json-file", "p.json", "--throttle", value])
    assert (e.message, e.stream, e.exit_code, e.usage) == (
        f"Error: Cannot parse argument '{value}' of option throttle", "stdout", 1, False,
    )  # fmt: skip


@pytest.mark.parametrize(("text", "ids"), [("1,2,3", (1, 2, 3)), ("+1,-2", (1, -2)), ("4,", (4,))])
def test_broker_list(text: str, ids: tuple[int, ...]) -> None:
    argv = [*BS, "--generate", "--topics-to-move-json-file", "t.json", "--broker-list", text]
    assert parse_options(argv).broker_list == ids


@pytest.mark.parametrize(("text", "bad"), [("1,x", "x"), ("1,,2", ""), (" 1", " 1"), ("9999999999", "9999999999")])
def test_a_broker_list_that_does_not_parse(text: str, bad: str) -> None:
    e = refused([*BS, "--generate", "--topics-to-move-json-file", "t.json", "--broker-list", text])
    assert (e.message, e.stream, e.exit_code) == (f'Error: For input string: "{bad}"', "stdout", 1)


def test_zookeeper_is_the_legacy_path_and_refuses_bootstrap_server_too() -> None:
    opts = parse_options(
        ["--zookeeper", "zk:2181", "--execute", "--reassignment-json-file", "p.json", "--throttle", "5"]
    )
    assert (opts.zookeeper, opts.bootstrap_server, opts.throttle) == ("zk:2181", None, 5)
    e = refused([*BS, "--zookeeper", "zk:2181", "--list"])
    assert "--bootstrap-server" in e.message and "--zookeeper" in e.message and e.exit_code == 1


@pytest.mark.parametrize(
    ("extra", "named"),
    [(["--list"], "list"), (["--cancel", "--reassignment-json-file", "p"], "cancel"),
     (["--execute", "--reassignment-json-file", "p", "--additional"], "additional"),
     (["--execute", "--reassignment-json-file", "p", "--max-moves-per-broker", "1"], "max-moves-per-broker")],
)  # fmt: skip
def test_what_needed_bootstrap_server_in_kafka_2_8(extra: list[str], named: str) -> None:
    e = refused(["--zookeeper", "zk:2181", *extra])
    assert (e.message, e.exit_code) == (f'You must specify --bootstrap-server when using "[{named}]"', 1)


@pytest.mark.parametrize("value", ["0", "-1", "x", "1.5"])
def test_max_moves_per_broker_must_be_positive(value: str) -> None:
    e = refused([*BS, "--execute", "--reassignment-json-file", "p", "--max-moves-per-broker", value])
    assert "--max-moves-per-broker" in e.message and repr(value) in e.message and e.exit_code == 1


def test_output() -> None:
    assert parse_options([*BS, "--list", "--output", "json"]).output == "json"
    e = refused([*BS, "--list", "--output", "yaml"])
    assert "--output" in e.message and "'yaml'" in e.message


def test_usage_lists_every_option() -> None:
    for name in ("--additional", "--bootstrap-server <String: Server(s)", "--throttle <Long: throttle>",
                 "(default: -1)", "--zookeeper", "--max-moves-per-broker", "--output"):  # fmt: skip
        assert name in USAGE
