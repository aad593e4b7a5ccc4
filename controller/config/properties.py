"""The ``.properties`` codec: ``java.util.Properties.load`` and ``store``, as Kafka reads and writes them.

Reading follows the JDK 11+ ``Properties.LineReader`` / ``loadConvert``; a file is read as ISO-8859-1 bytes
exactly like Kafka's ``Utils.loadProps`` (an ``InputStream``, so non-ASCII needs ``\\uXXXX`` escapes). Writing
follows ``Properties.saveConvert`` with ``escapeUnicode``, so what is written reads back identically, in Java too.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator, Mapping

from controller.config.errors import ConfigError

_PROPS_WHITESPACE = " \t\f"
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")
_UNESCAPE = {"t": "\t", "r": "\r", "n": "\n", "f": "\f"}


def _line_breaks(text: str) -> list[int]:
    """Offsets of every natural line break: ``\\n``, and ``\\r`` not followed by ``\\n``."""
    return [i for i, c in enumerate(text) if c == "\n" or (c == "\r" and text[i + 1 : i + 2] != "\n")]


def _logical_lines(text: str) -> Iterator[tuple[str, list[int]]]:
    """JDK 11+ ``Properties.LineReader``: yields each logical line and the text offset of each of its chars.

    Leading ``' '``, ``\\t``, ``\\f`` of every natural line are dropped, blank lines skipped, a line whose first
    char is ``#`` or ``!`` is a comment (even one ending in a backslash), and an odd number of trailing
    backslashes joins the next natural line. As in the JDK, a continuation that leaves the line empty so far
    lets the next line be a comment, and a dangling backslash at end of input is dropped.
    """
    n = len(text)
    off = 0
    buf: list[str] = []
    offsets: list[int] = []
    skip_ws = True
    appended = False
    backslash = False
    while True:
        if off >= n:
            if buf:
                if backslash:
                    buf.pop()
                    offsets.pop()
                yield "".join(buf), offsets
            return
        c = text[off]
        off += 1
        if skip_ws:
            if c in _PROPS_WHITESPACE:
                continue
            if not appended and c in "\r\n":
                continue
            skip_ws = False
            appended = False
        if not buf and c in "#!":
            while off < n and text[off] not in "\r\n":
                off += 1
            skip_ws = True
            continue
        if c not in "\r\n":
            buf.append(c)
            offsets.append(off - 1)
            backslash = not backslash if c == "\\" else False
            continue
        if not buf:
            skip_ws = True
            continue
        if off >= n:
            # JDK quirk: a terminator that is the input's last char ends the line even when dropping the
            # continuation backslash leaves it empty, so a file ending in "\\\n" (not "\\\r\n") has a "" key.
            if backslash:
                buf.pop()
                offsets.pop()
            yield "".join(buf), offsets
            return
        if backslash:
            buf.pop()
            offsets.pop()
            skip_ws = True
            appended = True
            backslash = False
            if c == "\r" and off < n and text[off] == "\n":
                off += 1
            continue
        yield "".join(buf), offsets
        buf = []
        offsets = []
        skip_ws = True


def _combine_surrogates(s: str) -> str:
    """Java strings are UTF-16: ``\\uD83D\\uDE00`` is one character. Lone surrogates are kept as they are."""
    if not any("\ud800" <= c <= "\udfff" for c in s):
        return s
    return s.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def _load_convert(segment: str, offsets: list[int], where: _Where) -> str:
    out: list[str] = []
    i = 0
    end = len(segment)
    while i < end:
        c = segment[i]
        i += 1
        if c != "\\":
            out.append(c)
            continue
        c = segment[i]  # never past the end: a segment cannot end in an unpaired backslash
        i += 1
        if c != "u":
            out.append(_UNESCAPE.get(c, c))
            continue
        digits = segment[i : i + 4]
        if len(digits) < 4 or any(d not in _HEX_DIGITS for d in digits):
            raise ConfigError(f"{where.source}:{where.line(offsets[i - 2])}: Malformed \\uxxxx encoding.")
        out.append(chr(int(digits, 16)))
        i += 4
    return _combine_surrogates("".join(out))


class _Where:
    def __init__(self, source: str, text: str) -> None:
        self.source = source
        self._breaks = _line_breaks(text)

    def line(self, offset: int) -> int:
        return bisect.bisect_left(self._breaks, offset) + 1


def parse_properties(text: str, source: str = "<string>") -> dict[str, str]:
    """``java.util.Properties.load`` over already-decoded text; later keys override earlier ones.

    A key ends at the first unescaped ``=``, ``:`` or whitespace; whitespace around the separator and at
    most one ``=``/``:`` after whitespace are skipped; the value runs to the end of the logical line (trailing
    whitespace kept). Escapes: ``\\t \\n \\r \\f \\uXXXX``, any other escaped char is itself. A malformed
    ``\\u`` escape raises :class:`ConfigError` naming ``source`` and the line.
    """
    where = _Where(source, text)
    result: dict[str, str] = {}
    for line, offsets in _logical_lines(text):
        limit = len(line)
        key_len = 0
        value_start = limit
        has_sep = False
        preceding_backslash = False
        while key_len < limit:
            c = line[key_len]
            if c in "=:" and not preceding_backslash:
                value_start = key_len + 1
                has_sep = True
                break
            if c in _PROPS_WHITESPACE and not preceding_backslash:
                value_start = key_len + 1
                break
            preceding_backslash = not preceding_backslash if c == "\\" else False
            key_len += 1
        while value_start < limit:
            c = line[value_start]
            if c not in _PROPS_WHITESPACE:
                if not has_sep and c in "=:":
                    has_sep = True
                else:
                    break
            value_start += 1
        key = _load_convert(line[:key_len], offsets[:key_len], where)
        value = _load_convert(line[value_start:], offsets[value_start:], where)
        result[key] = value
    return result


def _save_convert(text: str, *, is_key: bool) -> str:
    """``Properties.saveConvert`` with ``escapeUnicode``: the output is pure ASCII, so Kafka reads it too."""
    out: list[str] = []
    for index, c in enumerate(text):
        code = ord(c)
        if c == "\\":
            out.append("\\\\")
        elif c == " ":
            out.append("\\ " if index == 0 or is_key else " ")
        elif c == "\t":
            out.append("\\t")
        elif c == "\n":
            out.append("\\n")
        elif c == "\r":
            out.append("\\r")
        elif c == "\f":
            out.append("\\f")
        elif c in "=:#!":
            out.append("\\" + c)
        elif code < 0x20 or code > 0x7E:
            units = c.encode("utf-16-be", "surrogatepass")
            for k in range(0, len(units), 2):
                out.append(f"\\u{units[k]:02X}{units[k + 1]:02X}")
        else:
            out.append(c)
    return "".join(out)


def dump_properties(raw: Mapping[str, str], *, comment: str | None = None) -> str:
    """Render ``raw`` as a properties file that :func:`parse_properties` (and Java) read back identically.

    One ``key=value`` line per entry in mapping order, every special or non-ASCII character escaped; an
    optional ``comment`` becomes leading ``#`` lines.
    """
    lines: list[str] = []
    if comment is not None:
        for part in re.split(r"\r\n|\r|\n", comment):
            escaped = "".join(c if 0x20 <= ord(c) <= 0x7E else _save_convert(c, is_key=False) for c in part)
            lines.append(f"# {escaped}".rstrip())
    for key, value in raw.items():
        lines.append(f"{_save_convert(key, is_key=True)}={_save_convert(value, is_key=False)}")
    return "".join(line + "\n" for line in lines)


def read_properties(path: str) -> dict[str, str]:
    """A tool's properties file (``--command-config``, ``--zk-tls-config-file``) as Kafka's ``Utils.loadProps``
    reads it: ISO 8859-1, ``java.util.Properties`` syntax. Raises ValueError naming the file, in Java's words
    for a missing one."""
    try:
        with open(path, encoding="latin-1") as f:
            text = f.read()
    except FileNotFoundError:
        raise ValueError(f"{path} (No such file or directory)") from None
    except OSError as exc:
        raise ValueError(f"{path} ({exc.strerror or exc})") from None
    try:
        return parse_properties(text, source=path)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
