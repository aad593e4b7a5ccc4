"""The README and docs/*.md against the repository: what they show must exist.

- nothing points outside the repository (``../shared/...``) and nothing cites an issue number;
- every relative link (and image) resolves to a file in the repository, and an ``#anchor`` to a heading;
- every ``bridgekeeper ...`` command line shown, in a fenced block or an inline code span, names commands and
  options the real parser has (``controller.cli.build_parser()``, walked through its subparsers), with values
  its choices accept; ``reassign`` parses its own arguments, so its lines are checked against
  ``migrate.reassign.options`` (the option table, and for complete lines the parser itself).

No network, no servers: the parsers are built, never run.
"""

from __future__ import annotations

import argparse
import re
import shlex
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOC_FILES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]

FENCE = re.compile(r"^\s*(```|~~~)")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")
LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
ISSUE_REFS = (re.compile(r"\bissues?\s+#?\d+\b", re.IGNORECASE), re.compile(r"(?<![\w&])#\d+\b"))
SHARED = re.compile(r"\.\./shared")
PARENT_PATH = re.compile(r"(?:\.\./)+[^\s)\]`'\"<>|,;]*")
COMMAND_START = re.compile(r"^(?:\$\s+)?(?:\S*/)?bridgekeeper(?:\s|$)")
NUMBER = re.compile(r"^-\d+(\.\d+)?$")
#: Shell words that end one command (a pipe, a list, a redirection).
SHELL_STOPS = {"|", "||", "&&", ";", "&", ">", ">>", "<", ">&", "&>"}


def rel(path: Path) -> str:
    return str(path.relative_to(REPO))


# ---------------------------------------------------------------------------------------------------------------
# Reading markdown


@dataclass(frozen=True)
class CommandLine:
    """A ``bridgekeeper`` command as the docs show it; ``inline`` for a code span in prose (which may name a
    command group alone, e.g. "run `bridgekeeper lockdown` after the rehearsal")."""

    where: str
    text: str
    inline: bool


def prose_lines(text: str) -> Iterator[tuple[int, str]]:
    """(line number, line) of every line outside fenced code blocks."""
    fence: str | None = None
    for n, line in enumerate(text.splitlines(), 1):
        m = FENCE.match(line)
        if m:
            if fence is None:
                fence = m.group(1)
            elif m.group(1) == fence:
                fence = None
            continue
        if fence is None:
            yield n, line


def fenced_commands(text: str, where: str) -> Iterator[CommandLine]:
    """Lines of fenced blocks that run bridgekeeper, ``\\`` continuations joined."""
    fence: str | None = None
    pending: tuple[int, str] | None = None
    for n, raw in enumerate(text.splitlines(), 1):
        m = FENCE.match(raw)
        if m:
            if fence is None:
                fence = m.group(1)
            elif m.group(1) == fence:
                fence = None
                if pending is not None:
                    yield CommandLine(f"{where}:{pending[0]}", pending[1], inline=False)
                    pending = None
            continue
        if fence is None:
            continue
        line = raw.strip()
        if pending is not None:
            start, so_far = pending
            joined = so_far + " " + line
            pending = (start, joined)
        elif COMMAND_START.match(line):
            pending = (n, line)
        else:
            continue
        if pending[1].endswith("\\"):
            pending = (pending[0], pending[1][:-1].rstrip())
            continue
        yield CommandLine(f"{where}:{pending[0]}", pending[1], inline=False)
        pending = None


def inline_commands(text: str, where: str) -> Iterator[CommandLine]:
    for n, line in prose_lines(text):
        for m in INLINE_CODE.finditer(line):
            code = m.group(2).strip()
            if COMMAND_START.match(code):
                yield CommandLine(f"{where}:{n}", code, inline=True)


def all_command_lines() -> list[CommandLine]:
    found: list[CommandLine] = []
    for path in DOC_FILES:
        text = path.read_text(encoding="utf-8")
        found.extend(fenced_commands(text, rel(path)))
        found.extend(inline_commands(text, rel(path)))
    return found


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: links reduced to their text, lower case, punctuation dropped (but
    ``-`` and ``_``), spaces to hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    seen: dict[str, int] = {}
    out: set[str] = set()
    for _, line in prose_lines(text):
        m = HEADING.match(line)
        if not m:
            continue
        slug = github_slug(m.group(2))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        out.add(slug if count == 0 else f"{slug}-{count}")
    return out


# ---------------------------------------------------------------------------------------------------------------
# Checks on text: links, paths, issue numbers


def link_problems(path: Path, text: str) -> list[str]:
    problems: list[str] = []
    for n, line in prose_lines(text):
        line = INLINE_CODE.sub("", line)
        for m in LINK.finditer(line):
            target = m.group(1)
            if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):  # http:, https:, mailto:
                continue
            file_part, _, fragment = target.partition("#")
            dest = (path.parent / file_part).resolve() if file_part else path
            if not dest.is_relative_to(REPO):
                problems.append(f"{rel(path)}:{n}: link {target!r} leaves the repository")
                continue
            if not dest.exists():
                problems.append(f"{rel(path)}:{n}: link {target!r}: no such file {dest.relative_to(REPO)}")
                continue
            if fragment and dest.suffix == ".md" and fragment not in anchors(dest.read_text(encoding="utf-8")):
                problems.append(f"{rel(path)}:{n}: link {target!r}: no heading #{fragment} in {rel(dest)}")
    return problems


def path_problems(path: Path, text: str) -> list[str]:
    problems: list[str] = []
    for n, line in enumerate(text.splitlines(), 1):
        if SHARED.search(line):
            problems.append(f"{rel(path)}:{n}: points at ../shared, outside the repository: {line.strip()}")
            continue
        for m in PARENT_PATH.finditer(line):
            if not (path.parent / m.group(0)).resolve().is_relative_to(REPO):
                problems.append(f"{rel(path)}:{n}: {m.group(0)!r} leaves the repository")
    return problems


def issue_problems(path: Path, text: str) -> list[str]:
    problems: list[str] = []
    for n, line in enumerate(text.splitlines(), 1):
        for pattern in ISSUE_REFS:
            for m in pattern.finditer(line):
                problems.append(f"{rel(path)}:{n}: issue reference {m.group(0)!r}: {line.strip()}")
    return problems


# ---------------------------------------------------------------------------------------------------------------
# Checks on command lines


def words(text: str) -> list[str]:
    """The shell words of the first command on the line (comments dropped, up to a pipe or a redirection)."""
    lexer = shlex.shlex(text, posix=True, punctuation_chars="|&;<>")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    out: list[str] = []
    for word in lexer:
        if word in SHELL_STOPS:
            break
        out.append(word)
    if out and out[0] == "$":
        out = out[1:]
    return out


def option_like(word: str) -> bool:
    return word.startswith("-") and word != "-" and not NUMBER.match(word)


def placeholder(value: str) -> bool:
    """A value the docs leave for the reader: ``N``, ``FILE``, ``HOST:PORT``, ``<port>``, ``...``."""
    return value == "..." or "<" in value or bool(re.fullmatch(r"[A-Z][A-Z0-9_:.=,/-]*", value))


def subcommands(parser: argparse.ArgumentParser) -> argparse._SubParsersAction[argparse.ArgumentParser] | None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    return None


def positional_actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if not a.option_strings and not isinstance(a, argparse._SubParsersAction)]


def value_problem(action: argparse.Action, value: str) -> str | None:
    """Why ``value`` would be refused by ``action`` (its type and choices), None when it would not be."""
    if placeholder(value) or isinstance(action.type, argparse.FileType):
        return None
    converted: object = value
    if callable(action.type):
        try:
            converted = action.type(value)
        except (argparse.ArgumentTypeError, ValueError, TypeError) as exc:
            return f"value {value!r} refused: {exc}"
    if action.choices is not None and converted not in action.choices:
        return f"value {value!r} is not one of {sorted(map(str, action.choices))}"
    return None


def take_values(action: argparse.Action, rest: Sequence[str]) -> int:
    """How many of the following words argparse gives ``action`` (which has none after ``=``)."""
    nargs = action.nargs
    if nargs == argparse.REMAINDER:
        return len(rest)
    if nargs is None:
        return 1 if rest else 0
    if isinstance(nargs, int):
        return min(nargs, len(rest))
    count = 0
    while count < len(rest) and not option_like(rest[count]):
        count += 1
        if nargs == argparse.OPTIONAL:
            break
    return count


def argparse_problems(args: Sequence[str], *, inline: bool) -> list[str]:
    from controller.cli import build_parser

    parser = build_parser()
    path = ["bridgekeeper"]
    positionals: list[str] = []
    problems: list[str] = []
    ends_early = False  # --help, --version
    elided = False  # "..." stands for flags shown on an earlier line
    i = 0
    while i < len(args):
        word = args[i]
        i += 1
        if word == "...":
            elided = True
            continue
        if option_like(word):
            name, eq, value = word.partition("=")
            action = parser._option_string_actions.get(name)
            if action is None:
                problems.append(f"'{' '.join(path)}' has no option {name}")
                if not eq and i < len(args) and not option_like(args[i]):
                    i += 1  # its value, most likely: not a stray positional on top
                continue
            if isinstance(action, argparse._HelpAction | argparse._VersionAction):
                ends_early = True
            if eq:
                values = [value]
            else:
                n = take_values(action, args[i:])
                values = list(args[i : i + n])
                i += n
                if action.nargs is None and not values:
                    problems.append(f"'{' '.join(path)}': {name} needs a value")
            for v in values:
                why = value_problem(action, v)
                if why is not None:
                    problems.append(f"'{' '.join(path)}' {name}: {why}")
            continue
        sub = subcommands(parser)
        if sub is not None and not positionals:
            if word in sub.choices:
                parser = sub.choices[word]
                path.append(word)
                continue
            problems.append(f"'{' '.join(path)}' has no command {word!r} (it has {', '.join(sub.choices)})")
            return problems
        positionals.append(word)
    sub = subcommands(parser)
    if sub is not None and not inline and not ends_early:
        problems.append(f"'{' '.join(path)}' is not a whole command (it has {', '.join(sub.choices)})")
    expected = positional_actions(parser)
    lowest = sum(
        1 if a.nargs in (None, argparse.ONE_OR_MORE) else a.nargs if isinstance(a.nargs, int) else 0 for a in expected
    )
    unbounded = any(a.nargs in (argparse.ZERO_OR_MORE, argparse.ONE_OR_MORE, argparse.REMAINDER) for a in expected)
    highest = sum(
        1 if a.nargs in (None, argparse.OPTIONAL) else a.nargs if isinstance(a.nargs, int) else 0 for a in expected
    )
    if not unbounded and len(positionals) > highest:
        extra = positionals[highest:]
        problems.append(f"'{' '.join(path)}' takes {highest} positional argument(s), not also {extra}")
    if not inline and not ends_early and not elided and len(positionals) < lowest:
        names = [a.dest for a in expected]
        problems.append(f"'{' '.join(path)}' needs positional argument(s) {names}, got {positionals}")
    # Positionals whose place is fixed (every one before it takes exactly one word): check their choices.
    for index, action in enumerate(expected):
        if index >= len(positionals) or any(a.nargs is not None for a in expected[:index]):
            break
        if action.nargs is None:
            why = value_problem(action, positionals[index])
            if why is not None:
                problems.append(f"'{' '.join(path)}' {action.dest}: {why}")
    return problems


def reassign_problems(args: Sequence[str], *, inline: bool) -> list[str]:
    """``reassign`` keeps kafka-reassign-partitions' own parser (jopt-simple's rules): every option must be in its
    table, and a line shown whole must be a command line that parser accepts."""
    from migrate.reassign import options

    known = {spec.name for spec in options._SPECS}
    problems = []
    for word in args:
        if option_like(word) and word != "--":
            name = word.lstrip("-").partition("=")[0]
            if name not in known:
                problems.append(f"'bridgekeeper reassign' has no option --{name}")
    if problems or inline or "..." in args:
        return problems
    try:
        options.parse_options(list(args))
    except options.OptionsError as exc:
        if exc.exit_code != 0:
            problems.append(f"'bridgekeeper reassign' refuses this line: {exc.message.splitlines()[0]}")
    return problems


def command_problems(text: str, *, inline: bool = False) -> list[str]:
    argv = words(text)
    if not argv or not argv[0].endswith("bridgekeeper"):
        return [f"not a bridgekeeper command line: {text!r}"]
    args = argv[1:]
    if args and args[0] == "reassign":
        return reassign_problems(args[1:], inline=inline)
    return argparse_problems(args, inline=inline)


# ---------------------------------------------------------------------------------------------------------------
# The tests

COMMAND_LINES = all_command_lines()


def test_the_docs_are_found() -> None:
    assert (REPO / "README.md").is_file()
    names = {p.name for p in DOC_FILES}
    assert "README.md" in names and len(DOC_FILES) > 1, names
    assert len([c for c in COMMAND_LINES if not c.inline]) > 20, "expected the docs to show command lines"


@pytest.mark.parametrize("path", DOC_FILES, ids=rel)
def test_no_path_outside_the_repository(path: Path) -> None:
    problems = path_problems(path, path.read_text(encoding="utf-8"))
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("path", DOC_FILES, ids=rel)
def test_no_issue_numbers(path: Path) -> None:
    problems = issue_problems(path, path.read_text(encoding="utf-8"))
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("path", DOC_FILES, ids=rel)
def test_relative_links_resolve(path: Path) -> None:
    problems = link_problems(path, path.read_text(encoding="utf-8"))
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("command", COMMAND_LINES, ids=lambda c: c.where)
def test_command_line_matches_the_parser(command: CommandLine) -> None:
    problems = command_problems(command.text, inline=command.inline)
    assert not problems, f"{command.where}: {command.text}\n" + "\n".join(problems)


# The checks themselves must be able to fail.


@pytest.mark.parametrize(
    "line",
    [
        "bridgekeeper snapshot export --zookeeper zk:2181 -o t.parquet --no-such-flag",
        "bridgekeeper snapshot exprot --zookeeper zk:2181 -o t.parquet",
        "bridgekeeper lockdown",
        "bridgekeeper up --zk-servers 2",
        "bridgekeeper pipeline plan teleport rows.parquet -o plans",
        "bridgekeeper zk get",
        "bridgekeeper health extra-word",
        "bridgekeeper reassign --bootstrap-server b:9092 --gen --topics-to-move-json-file t.json --broker-list 1",
        "bridgekeeper reassign --bootstrap-server b:9092 --verify --reassignment-json-file p.json --throttle 5",
        "$ .venv/bin/bridgekeeper rehearse --from-ibp 3.3-IV3 --to-ibp 3.4-IV0 --drill unplug-the-datacenter",
    ],
)
def test_a_wrong_command_line_fails(line: str) -> None:
    assert command_problems(line), line


def test_a_right_command_line_passes() -> None:
    assert command_problems("bridgekeeper zk get /controller --zookeeper zk1:2181/kafka --timeout 4 | jq .") == []
    assert command_problems("bridgekeeper reassign --bootstrap-server B --list --output json") == []
    assert command_problems("bridgekeeper lockdown", inline=True) == []


def test_continuations_are_joined_and_named_by_their_first_line() -> None:
    text = "```sh\nx\nbridgekeeper zk get /a \\\n    --zookeeper z:1 \\\n    --nope\n```\n"
    (line,) = fenced_commands(text, "T.md")
    assert line.where == "T.md:3"
    assert "--nope" in line.text
    assert any("--nope" in p for p in command_problems(line.text))


def test_text_checks_fail_on_bad_text() -> None:
    doc = REPO / "docs" / "example.md"  # never written: the checks only read the text given
    assert path_problems(REPO / "README.md", "see ../shared/DESIGN.md")
    assert path_problems(doc, "[x](../../elsewhere/file.md)")
    assert not path_problems(doc, "[bench](../bench/README.md)")
    assert issue_problems(doc, "fixed in issue 12")
    assert issue_problems(doc, "as issues 4 and 5 said (#15)")
    assert not issue_problems(doc, "p99 of 12 issues here, [a](#section)")
    assert link_problems(doc, "[gone](no-such-file.md)")
    assert link_problems(REPO / "README.md", "[anchor](#no-such-heading)")
    assert not link_problems(REPO / "README.md", "[web](https://example.com/x) [self](README.md)")


def test_github_slugs() -> None:
    assert github_slug("Moving partitions: `reassign`") == "moving-partitions-reassign"
    assert github_slug("Is it safe to run against my cluster?") == "is-it-safe-to-run-against-my-cluster"
    assert "a-b" in anchors("# a b\n```\n# not a heading\n```\n")
    assert "not-a-heading" not in anchors("# a b\n```\n# not a heading\n```\n")
