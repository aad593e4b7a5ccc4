"""jopt-simple 5.0.4 (the version Kafka 3.9 ships) as Kafka's command-line tools build it: the parse, the
conversions of ``OptionSet.valueOf`` and the option table of ``BuiltinHelpFormatter``.

Kafka's tools depend on jopt's exact rules, so scripts written for them do too (sources: jopt-simple 5.0.4's
``OptionParser``, ``OptionSet``, ``KeyValuePair``, ``BuiltinHelpFormatter``, ``Columns`` and ``Rows``, and
``CommandDefaultOptions.java`` at Kafka 3.9.0-rc3, which builds ``new OptionParser(false)``):

* abbreviations are *off* (``--gen`` is "gen is not a recognized option");
* ``-name`` works like ``--name`` when the whole name is an option; otherwise a single-dash word is a cluster
  of one-letter options, and jopt names its first letter;
* ``--opt=value`` and ``--opt value`` both work; the word after an option that takes an argument is always its
  argument (``--bootstrap-server --execute`` sets the server to ``--execute``); ``=value`` after an option
  without argument is silently dropped;
* ``--`` ends the options; words that are not options are collected (the tools ignore them).

Failures are :class:`OptionException` with jopt's class name and message. Where a tool catches them (or lets
them escape ``main``) decides what the user sees, so framing them is the tool's part
(:mod:`migrate.reassign.options`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from zkmodel.java import java_parse_integer, java_trim

INT_BITS, LONG_BITS = 32, 64
#: jopt's NonOptionArgumentSpec is registered under this name, so ``--[arguments]=x`` is a non-option "x".
_NON_OPTIONS = "[arguments]"


@dataclass(frozen=True)
class OptionSpec:
    """One ``parser.accepts(...)``: ``arg`` is the ``describedAs`` text of an option that takes an argument
    (None: no argument), ``kind`` its ``ofType`` as the help shows it, ``default`` its ``defaultsTo``."""

    name: str
    help: str
    arg: str | None = None
    kind: str = "String"
    default: str | None = None


class OptionException(Exception):
    """A ``joptsimple.OptionException``: ``java_class`` is its simple class name and ``message`` its
    ``getMessage()``, the two things a tool shows of it."""

    def __init__(self, java_class: str, message: str) -> None:
        super().__init__(f"{java_class}: {message}")
        self.java_class = java_class
        self.message = message


class OptionSet:
    """jopt-simple's OptionSet: every detected option in command-line order (repeats included, as
    ``specs()`` returns them) and each option's arguments."""

    def __init__(self, declared: Mapping[str, OptionSpec]) -> None:
        self._declared = declared
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

    def value_of(self, name: str) -> str | None:
        """``OptionSet.valueOf``: the default when absent; else every argument converted (the first that fails
        is reported), then "multiple arguments" when there is more than one. Conversion happens only here, so a
        tool reports a bad value only when (and in the order) it asks for it."""
        found = self.values.get(name)
        spec = self._declared[name]
        if not found:
            return spec.default
        if spec.kind == "Long":
            for argument in found:
                if java_parse_integer(argument, LONG_BITS) is None:
                    raise OptionException(
                        "OptionArgumentConversionException", f"Cannot parse argument '{argument}' of option {name}"
                    )
        if len(found) > 1:
            raise OptionException(
                "MultipleArgumentsForOptionException",
                f"Found multiple arguments for option {name}, but you asked for only one",
            )
        return found[0]


def parse(specs: Sequence[OptionSpec], argv: Sequence[str]) -> OptionSet:
    """``OptionParser.parse`` with abbreviations off, as Kafka's CommandDefaultOptions builds it."""
    declared = {s.name: s for s in specs}
    parsed = OptionSet(declared)
    i = 0
    while i < len(argv):
        token = argv[i]
        i += 1
        if token == "--":
            parsed.non_options.extend(argv[i:])
            break
        if token.startswith("--"):
            name, value = _key_value(token[2:])
            if name != _NON_OPTIONS and name not in declared:
                raise OptionException("UnrecognizedOptionException", f"{name} is not a recognized option")
        elif token.startswith("-") and token != "-":
            name, value = _key_value(token[1:])
            if name != _NON_OPTIONS and name not in declared:
                # Not an option name: jopt reads a cluster of one-letter options, and Kafka declares none.
                raise OptionException("UnrecognizedOptionException", f"{token[1]} is not a recognized option")
        else:
            parsed.non_options.append(token)
            continue
        if name == _NON_OPTIONS:
            if value is not None:
                parsed.non_options.append(value)
            continue
        if declared[name].arg is None:
            parsed.add(name, None)  # NoArgumentOptionSpec ignores an "=value"
            continue
        if value is None:
            if i >= len(argv):
                raise OptionException("OptionMissingRequiredArgumentException", f"Option {name} requires an argument")
            value = argv[i]
            i += 1
        parsed.add(name, value)
    return parsed


def _key_value(text: str) -> tuple[str, str | None]:
    """jopt's KeyValuePair: split at the first "="; no "=" means no value (``--x=`` is the empty value)."""
    key, eq, value = text.partition("=")
    return key, value if eq else None


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


def format_help(specs: Sequence[OptionSpec]) -> str:
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
