"""Invariant 1/2 in the code itself: only the fenced writer mutates controller-owned znodes.

Every call that can write ZooKeeper is found by walking the AST of every module we ship; each module may
only use the write primitives listed for it. A new write anywhere else fails this test.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: kazoo's write calls: counted when made on something that is a ZooKeeper client, session or transaction.
KAZOO_WRITES = {
    "create",
    "create_async",
    "set",
    "set_async",
    "set_data",
    "delete",
    "delete_async",
    "ensure_path",
    "ensure_path_async",
    "transaction",
    "commit",
    "commit_async",
    "set_acls",
    "set_acls_async",
}
ZK_RECEIVER = re.compile(r"(client|zk|session|^t$|txn|transaction|build_transaction)", re.IGNORECASE)
#: our own write primitives and what builds a raw multi: counted wherever they are called.
OUR_WRITES = {
    "build_transaction",
    "create_only",
    "set_if_version",
    "ensure_persistent",
    "FencedWriter",
    "atomic",
    "each",
    "bulk",
    "batched",
}
ALLOWED: dict[str, set[str]] = {
    # the single writer and the op-to-multi translation it uses
    "controller/zk/fenced_writer.py": {"build_transaction", "commit_async", "atomic", "each"},
    "controller/zk/ops.py": {"transaction", "create", "set_data", "delete"},
    # the session's compare-and-set primitives (node-owned paths only; callers are listed below)
    "controller/zk/session.py": {
        "create_async",
        "set_async",
        "create_only",
        "build_transaction",
        "commit_async",
        "delete_async",
    },
    # election: the one multi that creates /controller and bumps /controller_epoch (reference §2)
    "controller/active/election.py": {"build_transaction", "commit_async", "create_only", "delete_async"},
    # broker-owned, never controller-owned: registration, persistent paths, cluster id, /feature
    "controller/store/registration.py": {
        "build_transaction",
        "commit_async",
        "delete_async",
        "set_async",
        "create_only",
        "ensure_persistent",
        "set_if_version",
    },
    # Not epoch-fenced in Kafka either (reference §2): ACL nodes use their own CAS, entity configs a CAS
    # on /controller's version; brokers write them below the forwarding gate (KIP-590 moves them later).
    "controller/store/acls.py": {"create_async", "create_only", "delete_async", "ensure_persistent", "set_if_version"},
    "controller/wire/handlers/configs.py": {"build_transaction", "commit_async", "ensure_persistent"},
    "controller/wire/handlers/quotas.py": {"build_transaction", "commit_async", "ensure_persistent"},
    # below IBP 2.8-IV0 a partition leader writes its ISR and an /isr_change_notification itself, as Kafka's
    # pre-2.7-IV2 leaders do (ReplicationUtils.updateLeaderAndIsr, a CAS on the state's zkVersion)
    "controller/store/legacy_isr.py": {"set_if_version", "ensure_persistent", "create_async"},
    # SCRAM credentials share the users' entity-config znodes with quotas (AdminZkClient.changeUserOrUserClientIdConfig)
    "controller/wire/handlers/scram.py": {"build_transaction", "commit_async", "ensure_persistent"},
    # the node creates its chroot before it has a session, as Kafka does
    "controller/node.py": {"ensure_path"},
    # the controller: only through a FencedWriter bound to its epoch
    "controller/active/loop.py": {"FencedWriter", "atomic", "each", "bulk"},
    "controller/active/topics.py": {"atomic", "batched"},
    "controller/active/state_changes.py": {"each", "bulk"},
    "controller/active/reassignment.py": {"atomic", "bulk"},
    "controller/active/leadership.py": {"bulk"},
}


def write_calls(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id in OUR_WRITES:
            found.add(func.id)
        elif isinstance(func, ast.Attribute):
            ours = func.attr in OUR_WRITES
            if ours or (func.attr in KAZOO_WRITES and ZK_RECEIVER.search(ast.unparse(func.value))):
                found.add(func.attr)
    return found


def shipped_modules() -> list[Path]:
    return sorted(p for pkg in ("controller", "migrate", "zkmodel") for p in (ROOT / pkg).rglob("*.py"))


def test_only_listed_modules_write_zookeeper() -> None:
    offenders = {}
    for path in shipped_modules():
        rel = path.relative_to(ROOT).as_posix()
        extra = write_calls(path) - ALLOWED.get(rel, set())
        if rel == "controller/cli.py":  # `zk get` is read-only; it must stay that way
            extra = write_calls(path)
        if extra:
            offenders[rel] = sorted(extra)
    assert offenders == {}, f"ZooKeeper writes outside the single writer: {offenders}"


def test_zkmodel_has_no_io() -> None:
    for path in (ROOT / "zkmodel").rglob("*.py"):
        tree = ast.parse(path.read_text())
        imported = {
            alias.name.split(".")[0]
            for node in ast.walk(tree)
            if isinstance(node, ast.Import | ast.ImportFrom)
            for alias in (node.names if isinstance(node, ast.Import) else [ast.alias(node.module or "")])
        }
        assert not imported & {"kazoo", "socket", "subprocess", "controller"}, path


def test_the_scanner_sees_writes() -> None:
    """The check above is only as good as the scanner: it must notice each kind of write."""
    sample = ROOT / "controller" / "store" / "registration.py"
    assert {"build_transaction", "create_only", "set_if_version"} <= write_calls(sample)
    assert {"FencedWriter", "bulk"} <= write_calls(ROOT / "controller" / "active" / "loop.py")
