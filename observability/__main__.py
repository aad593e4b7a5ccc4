"""``python -m observability write|check``: regenerate ``dashboards/`` or fail (exit 1) when it is stale."""

from __future__ import annotations

import sys

from observability.generate import OUT, stale, write


def main(argv: list[str]) -> int:
    if argv not in (["write"], ["check"]):
        print("usage: python -m observability write|check", file=sys.stderr)
        return 2
    if argv == ["write"]:
        for name in write():
            print(f"wrote {OUT / name}")
        return 0
    outdated = stale()
    for name in outdated:
        print(
            f"{OUT / name} differs from what observability/ generates: run python -m observability write",
            file=sys.stderr,
        )
    return 1 if outdated else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
