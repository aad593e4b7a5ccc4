"""docs/layout.md names every Python package of the shipped tree.

The page's tree block is read by its indentation: a line indented 0, 2, 4 or 6 columns starts an entry one level
deeper per two columns, and a line further in continues the entry above it. A package is named when it has an
entry of its own (``  zk/``) or when its parent's entry mentions it as ``name/`` (``report/ (HTML + plots)``).
Packages only, not modules: a new module is the package's own doc to keep, a new package changes the layout.
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LAYOUT = REPO / "docs" / "layout.md"
ROOTS = ("controller", "migrate", "zkmodel", "observability", "testing")
#: Entries start within the first columns; descriptions and their continuations sit at column 14 or beyond.
ENTRY_INDENT = 6


def tree_block(text: str) -> list[str]:
    """The lines of the page's first fenced block."""
    blocks = re.findall(r"^```[^\n]*\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)
    assert blocks, "docs/layout.md has no fenced tree block"
    return str(blocks[0]).splitlines()


def named_packages(lines: list[str]) -> set[tuple[str, ...]]:
    """Every package path the tree names: its own entries, and ``name/`` in the text of a package's entry."""
    stack: list[str] = []
    owner: tuple[str, ...] = ()
    texts: dict[tuple[str, ...], list[str]] = {}
    named: set[tuple[str, ...]] = set()
    for line in lines:
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" "))
        if indent <= ENTRY_INDENT:
            depth = indent // 2
            first = line.split()[0]
            stack = stack[:depth]
            if first.endswith("/"):
                stack.append(first.rstrip("/"))
                named.add(tuple(stack))
                owner = tuple(stack)
                rest = line.split(None, 1)[1] if len(line.split(None, 1)) > 1 else ""
            else:
                owner = tuple(stack)
                rest = line
            texts.setdefault(owner, []).append(rest)
        else:
            texts.setdefault(owner, []).append(line)
    for parent, parts in texts.items():
        for name in re.findall(r"(?<![\w/.])([A-Za-z_]\w*)/", " ".join(parts)):
            named.add((*parent, name))
    return named


def packages() -> list[tuple[str, ...]]:
    found = []
    for root in ROOTS:
        for init in sorted((REPO / root).rglob("__init__.py")):
            found.append(init.parent.relative_to(REPO).parts)
    return found


def test_every_package_is_named_in_the_layout() -> None:
    named = named_packages(tree_block(LAYOUT.read_text(encoding="utf-8")))
    missing = ["/".join(p) + "/" for p in packages() if p not in named]
    assert missing == [], f"docs/layout.md does not name these packages: {missing}"


def test_the_reader_tells_a_named_package_from_a_missing_one() -> None:
    doc = [
        "top/          the top",
        "  a.py b.py",
        "  sub/                      a package; inner/ (its own package, named inline)",
        "    deep/                   one level further",
        "                            continued: other/ belongs to deep",
        "else/         elsewhere",
    ]
    named = named_packages(doc)
    assert {("top",), ("top", "sub"), ("top", "sub", "inner"), ("top", "sub", "deep")} <= named
    assert ("top", "sub", "deep", "other") in named
    assert ("top", "inner") not in named
    assert ("top", "missing") not in named
    assert ("else",) in named
    assert len(packages()) > 20
