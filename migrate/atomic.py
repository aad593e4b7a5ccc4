"""Writing an operator's file all or nothing: a temporary file in the same directory, flushed to disk, renamed.

Shared by every tool that leaves a file someone will act on (lockdown's ACL backup, the pipeline's plans and
reports): an interrupted run must never leave half a backup that ``revert`` would trust or half a plan that
``reassign --execute`` would accept.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomic(path: str | Path, data: str | bytes, mode: int | None = None, parents: bool = False) -> None:
    """Replace ``path`` with ``data`` atomically. ``mode`` None gives what a plain ``open`` would (0666 less the
    umask) rather than mkstemp's 0600; pass 0o600 for files that hold secrets. ``parents`` creates the directory.
    On any failure the temporary file is removed and ``path`` is left as it was."""
    target = Path(path)
    if parents:
        target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        os.fchmod(fd, 0o666 & ~_umask() if mode is None else mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
