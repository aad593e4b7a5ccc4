"""Writing the pipeline's files atomically: plan files in Kafka's reassignment JSON, and anything else.

Each file goes to a temporary name in its directory and is renamed into place, so an interrupted run never
leaves a half-written plan that ``reassign --execute`` would accept.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from migrate.reassign.plan_files import format_assignment

TP = tuple[str, int]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomic(path: str | Path, text: str | bytes) -> None:
    """Write ``path`` through a temporary file and a rename. The file gets the mode a plain ``open`` would
    (0666 less the umask), not mkstemp's 0600: reports and plans are meant to be shared."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as f:
            f.write(text.encode() if isinstance(text, str) else text)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_plan(
    path: str, changed: Mapping[TP, Sequence[int]], current: Mapping[TP, Sequence[int]], waves: Sequence[Sequence[TP]]
) -> list[str]:
    """``path``: the whole plan (what ``reassign --execute`` and Kafka's tool take); ``<stem>-rollback.json``: the
    current replicas of the same partitions (Kafka prints this as "Current partition replica assignment" to
    save for rollback); with waves, ``<stem>-wave-NNN.json`` each, to submit one after another."""
    stem = path[: -len(".json")] if path.endswith(".json") else path
    written = [path]
    write_atomic(path, format_assignment(changed) + "\n")
    for i, wave in enumerate(waves, start=1):
        name = f"{stem}-wave-{i:03d}.json"
        write_atomic(name, format_assignment({tp: changed[tp] for tp in wave}) + "\n")
        written.append(name)
    rollback = f"{stem}-rollback.json"
    write_atomic(rollback, format_assignment({tp: current[tp] for tp in changed}) + "\n")
    return [*written, rollback]
