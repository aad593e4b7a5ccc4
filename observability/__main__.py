"""``python -m observability write|check``: regenerate ``dashboards/`` or fail (exit 1) when it is stale.

``python -m observability alerts --runbook-base URL`` prints the alert rules with absolute runbook links (the
committed file's links are relative to the repository's root), for a deployment to install instead.
"""

from __future__ import annotations

import sys

from observability import alerts
from observability.generate import OUT, stale, write

USAGE = "usage: python -m observability write|check|alerts --runbook-base URL"


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[:2] == ["alerts", "--runbook-base"] and argv[2].strip():
        sys.stdout.write(alerts.render(argv[2].strip()))
        return 0
    if argv not in (["write"], ["check"]):
        print(USAGE, file=sys.stderr)
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
