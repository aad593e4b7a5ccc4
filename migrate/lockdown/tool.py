"""``bridgekeeper lockdown plan|apply|verify|revert``.

* ``plan`` prints every path whose ACL would change (current -> wanted) and changes nothing;
* ``apply`` first saves the current ACL of every path it will touch to ``--backup`` (written atomically, and
  merged into an existing backup rather than replacing it, so a rerun after an interruption keeps the
  original ACLs), then sets the wanted ones; rerunning it changes only what still differs;
* ``verify`` reports every path whose ACL differs from the plan, exit 1 if any;
* ``revert`` puts the saved ACLs back (paths gone since are skipped).

The tool connects as the controller identity: setACL needs ADMIN, which lockdown leaves to that identity, and
ZooKeeper shows a digest ACL's hash only to readers with ADMIN.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from controller.store.zk_acls import set_znode_acls
from controller.zk.session import ZkSession
from migrate.atomic import write_atomic
from migrate.snapshot.export import walk
from zkmodel.zk_acls import CONTROLLER_ROOTS, Acl, Identities, desired_acl, same_acl


def current_acls(session: ZkSession) -> Iterator[tuple[str, list[Acl]]]:
    """The chroot root and every znode under Kafka's secure roots, with its ACL."""
    root = session.read_acls(["/"])["/"]
    if root is not None:
        yield "/", list(root)
    for node in walk(session, CONTROLLER_ROOTS):
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
        print("note: no --broker-identity: brokers' registrations and notifications stay writable by world:anyone",
              file=sys.stderr)  # fmt: skip
    print(f"{len(changes)} znode(s) would change")
    return 0


def _load_backup(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {"version": 1, "acls": {}}
    try:
        doc = orjson.loads(path.read_bytes())
        if not isinstance(doc, dict) or doc.get("version") != 1 or not isinstance(doc.get("acls"), dict):
            raise ValueError("not a lockdown backup (version 1)")
        return doc
    except (orjson.JSONDecodeError, ValueError) as exc:
        raise SystemExit(f"error: {path}: {exc}") from None


def _save_backup(path: Path, doc: dict[str, Any]) -> None:
    # 0600 as before: the backup holds the cluster's ACLs, digest hashes included.
    write_atomic(path, orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS), mode=0o600)


def apply(session: ZkSession, who: Identities, backup: Path) -> int:
    changes = diff(session, who)
    doc = _load_backup(backup)
    for path, acl, _wanted in changes:
        doc["acls"].setdefault(path, [list(a) for a in acl])  # the first saved ACL is the original one
    _save_backup(backup, doc)
    gone = sum(not set_znode_acls(session, path, wanted) for path, _acl, wanted in changes)
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
    if not backup.exists():
        print(f"error: {backup}: no such backup", file=sys.stderr)
        return 1
    doc = _load_backup(backup)
    restored = skipped = 0
    found = session.read_acls(sorted(doc["acls"]))
    for path, saved in sorted(doc["acls"].items()):
        if found.get(path) is None:
            skipped += 1
            continue
        if not set_znode_acls(session, path, [(int(p), str(s), str(i)) for p, s, i in saved]):
            skipped += 1
            continue
        restored += 1
    print(f"{restored} znode(s) restored from {backup}" + (f"; {skipped} no longer exist" if skipped else ""))
    return 0
