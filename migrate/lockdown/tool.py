"""``bridgekeeper lockdown plan|apply|verify|revert``.

* ``plan`` prints every path whose ACL would change (current -> wanted) and changes nothing;
* ``apply`` first saves the current ACL of every path it will touch to ``--backup`` (written atomically, and
  merged into an existing backup rather than replacing it, so a rerun after an interruption keeps the
  original ACLs), then sets the wanted ones; rerunning it changes only what still differs;
* ``verify`` reports every path whose ACL differs from the plan, exit 1 if any;
* ``revert`` puts the saved ACLs back (paths gone since are skipped).

The backup is checked before any connection is opened (:func:`check_backup_target`, :func:`read_backup`): a
lockdown that cannot save the original ACLs, or a revert without them, must not get as far as the cluster.

The tool connects as the controller identity: setACL needs ADMIN, which lockdown leaves to that identity, and
ZooKeeper shows a digest ACL's hash only to readers with ADMIN.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from controller.exits import CommandError, UsageError
from controller.store.znode_acls import set_znode_acls
from controller.zk.errors import NoAuthError
from controller.zk.session import ZkSession
from migrate.atomic import write_atomic
from migrate.snapshot.export import walk
from zkmodel.paths import SECURE_ROOTS
from zkmodel.znode_acls import Acl, Identities, desired_acl, same_acl


def current_acls(session: ZkSession) -> Iterator[tuple[str, list[Acl]]]:
    """The chroot root and every znode under Kafka's secure roots, with its ACL."""
    root = session.read_acls(["/"])["/"]
    if root is not None:
        yield "/", list(root)
    for node in walk(session, SECURE_ROOTS):
        yield node.path, list(node.acl)


def diff(session: ZkSession, who: Identities) -> list[tuple[str, list[Acl], list[Acl]]]:
    """(path, current, wanted) for every path whose ACL is not what lockdown wants."""
    out = []
    for path, acl in current_acls(session):
        wanted = desired_acl(path, who)
        if not same_acl(acl, wanted):
            out.append((path, acl, wanted))
    return out


def show(acl: list[Acl]) -> str:
    return "[" + ", ".join(f"{scheme}:{_short(ident)}:{_perms(perms)}" for perms, scheme, ident in acl) + "]"


def _short(ident: str) -> str:
    user, _, rest = ident.partition(":")
    return f"{user}:…" if rest and len(rest) > 12 else ident


def _perms(perms: int) -> str:
    return "".join(c for c, bit in zip("rwcda", (1, 2, 4, 8, 16), strict=True) if perms & bit) or "-"


def plan(session: ZkSession, who: Identities) -> int:
    changes = diff(session, who)
    for path, acl, wanted in changes:
        print(f"{path}: {show(acl)} -> {show(wanted)}")
    if who.broker is None:
        print(
            "note: no broker identity (--broker-identity, its -file or $BRIDGEKEEPER_BROKER_IDENTITY): brokers' "
            "registrations and notifications stay writable by world:anyone",
            file=sys.stderr,
        )
    print(f"{len(changes)} znode(s) would change")
    return 0


BACKUP_VERSION = 1


def _saved_entry(entry: Any) -> bool:
    """One saved ACL entry: ``[perms, scheme, id]``."""
    return (
        isinstance(entry, list)
        and len(entry) == 3
        and isinstance(entry[0], int)
        and isinstance(entry[1], str)
        and isinstance(entry[2], str)
    )


def _well_formed(doc: Any) -> bool:
    """What :func:`apply` writes: ``{"version": 1, "acls": {path: [[perms, scheme, id], ...]}}``."""
    if not isinstance(doc, dict) or doc.get("version") != BACKUP_VERSION or not isinstance(doc.get("acls"), dict):
        return False
    return all(
        isinstance(path, str) and path.startswith("/") and isinstance(acl, list) and all(map(_saved_entry, acl))
        for path, acl in doc["acls"].items()
    )


def read_backup(path: Path) -> dict[str, Any]:
    """The backup ``apply`` wrote at ``path``. Raises :class:`UsageError` naming the file when it is missing,
    unreadable or not a lockdown backup: revert would otherwise put back ACLs nobody saved."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"--backup {path}: {exc.strerror or exc}") from None
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise UsageError(f"--backup {path}: not JSON ({exc})") from None
    if not _well_formed(doc):
        raise UsageError(f"--backup {path}: not a lockdown backup (version {BACKUP_VERSION}, as apply writes it)")
    result: dict[str, Any] = doc
    return result


def check_backup_target(path: Path) -> None:
    """Whether ``apply`` can save the ACLs at ``path``: its directory exists and is writable (the file is
    replaced atomically, through a temporary file beside it), and a backup already there is one it can merge
    into. Raises :class:`UsageError` naming the file otherwise."""
    directory = path.parent
    if not directory.is_dir():
        raise UsageError(f"--backup {path}: the directory {directory} does not exist")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise UsageError(f"--backup {path}: the directory {directory} is not writable")
    if path.is_dir():
        raise UsageError(f"--backup {path}: is a directory")
    if path.exists():
        read_backup(path)


def _load_backup(path: Path) -> dict[str, Any]:
    """The backup to merge into: what is at ``path``, or an empty one."""
    if not path.exists():
        return {"version": BACKUP_VERSION, "acls": {}}
    return read_backup(path)


def _save_backup(path: Path, doc: dict[str, Any]) -> None:
    # 0600 as before: the backup holds the cluster's ACLs, digest hashes included.
    write_atomic(path, orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS), mode=0o600)


def _set_acl(session: ZkSession, path: str, acl: list[Acl]) -> bool:
    """setACL on ``path`` (False: deleted meanwhile). Raises :class:`CommandError` naming the znode when
    ZooKeeper refuses it: setACL needs ADMIN, which a locked znode grants only to the controller identity."""
    try:
        return set_znode_acls(session, path, acl)
    except NoAuthError:
        raise CommandError(
            f"{path}: not authorised to set its ACL (setACL needs ADMIN on the znode for the identity this command "
            "connects as: after a lockdown, only the controller identity has it)"
        ) from None


def apply(session: ZkSession, who: Identities, backup: Path) -> int:
    changes = diff(session, who)
    doc = _load_backup(backup)
    for path, acl, _wanted in changes:
        doc["acls"].setdefault(path, [list(a) for a in acl])  # the first saved ACL is the original one
    _save_backup(backup, doc)
    gone = sum(not _set_acl(session, path, wanted) for path, _acl, wanted in changes)
    vanished = f" ({gone} deleted meanwhile)" if gone else ""
    print(f"{len(changes) - gone} znode(s) locked{vanished}; previous ACLs saved in {backup}")
    return 0


def verify(session: ZkSession, who: Identities) -> int:
    changes = diff(session, who)
    for path, acl, wanted in changes:
        print(f"{path}: is {show(acl)}, lockdown wants {show(wanted)}")
    print("lockdown verified: every znode has its ACL" if not changes else f"{len(changes)} znode(s) differ")
    return 1 if changes else 0


def revert(session: ZkSession, backup: Path) -> int:
    doc = read_backup(backup)
    restored = skipped = 0
    found = session.read_acls(sorted(doc["acls"]))
    for path, saved in sorted(doc["acls"].items()):
        if found.get(path) is None:
            skipped += 1
            continue
        if not _set_acl(session, path, [(int(p), str(s), str(i)) for p, s, i in saved]):
            skipped += 1
            continue
        restored += 1
    print(f"{restored} znode(s) restored from {backup}" + (f"; {skipped} no longer exist" if skipped else ""))
    return 0
