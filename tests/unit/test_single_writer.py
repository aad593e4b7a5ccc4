"""Invariants 1 and 2 in the code itself: who may write ZooKeeper, and how, by package.

The AST of every shipped module is walked for three kinds of write:

- ``kazoo:<call>`` — a raw kazoo write (create, set, delete, transaction, ...) on a client/transaction;
- ``session:<method>`` — one of ZkSession's unfenced write primitives (create_only, set_if_version, multi, ...);
- ``fenced:<call>`` — the controller's epoch-fenced writer (FencedWriter and its atomic/each/bulk/batched).

Writes made *through helpers* count too: every function or method defined in ``controller/store`` or
``controller/zk`` that writes (directly or through another such helper) is a ``helper:<module>.<name>``, and a
module that imports it and calls it writes through it. Each package may use only the kinds listed for it in
:data:`ALLOWED`; a new write anywhere else fails :func:`test_only_allowed_packages_write_zookeeper`.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ("controller", "migrate", "zkmodel")

#: kazoo's write calls: counted when made on something that is a ZooKeeper client or transaction.
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
    "_add",
}
KAZOO_RECEIVER = re.compile(r"(client|^zk$|^root$|^t$|txn|transaction)", re.IGNORECASE)  # incl. build_transaction
#: ZkSession's write primitives (node-owned paths; unfenced), counted on a session-like receiver.
SESSION_WRITES = {
    "create_only",
    "set_if_version",
    "ensure_persistent",
    "multi",
    "delete",
    "create_sequential",
    "set_unconditionally",
    "create_tree",
    "set_acls_pipelined",
}
SESSION_RECEIVER = re.compile(r"(session|^s$)", re.IGNORECASE)
#: what builds a raw multi, wherever it is called
RAW_MULTI = {"build_transaction", "build_multi", "multi_async"}
#: the single writer
FENCED_CLASS = "FencedWriter"
FENCED_WRITES = {"atomic", "each", "bulk", "batched"}
FENCED_RECEIVER = re.compile(r"writer", re.IGNORECASE)

STORE_HELPERS = "helper:controller.store."
#: What each package (or module) may use; the longest matching prefix of the module's path decides, and a
#: module no entry matches may not write at all. Entries are prefixes of the kinds above.
ALLOWED: dict[str, tuple[str, ...]] = {
    # ZooKeeper access itself: the session, the op-to-multi translation, the fenced writer
    "controller/zk/": ("kazoo:", "session:", "fenced:", "raw:", "helper:controller.zk."),
    # Stores of node-owned and shared paths: never fenced by the controller epoch in Kafka either
    # (reference §2) — registrations are checked ephemerals, ACL nodes use their own CAS, entity configs a
    # CAS on /controller's version; below the forwarding gate brokers write them, as Kafka's do.
    "controller/store/": ("session:", "helper:controller.store.", "helper:controller.zk."),
    # The controller: only through a FencedWriter bound to its epoch ...
    "controller/active/": ("fenced:",),
    # ... but the election is what creates the fence (one multi: create /controller, bump the epoch) and
    # releases its own ephemeral; /feature is written unfenced at failover, as KafkaController does.
    "controller/active/controller_election.py": ("session:",),
    "controller/active/feature.py": ("session:",),
    # Everyone else writes only through a store: handlers (configs, quotas, SCRAM, ACLs below the gate),
    # the broker (its registration, the pre-2.7 ISR write), the node, the operator tools.
    "controller/wire/": (STORE_HELPERS,),
    "controller/broker/": (STORE_HELPERS,),
    "controller/node.py": (STORE_HELPERS, "helper:controller.zk.session.ensure_chroot"),
    "migrate/": (STORE_HELPERS,),
}


@dataclass
class Module:
    path: Path
    name: str
    tree: ast.Module
    #: local name -> (module, attribute) for ``from controller.x import attr [as local]``
    from_imports: dict[str, tuple[str, str]] = field(default_factory=dict)
    #: local name -> module for ``import controller.x as local`` / ``from controller import x``
    module_aliases: dict[str, str] = field(default_factory=dict)


def shipped_modules() -> list[Module]:
    out = []
    for pkg in SHIPPED:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            rel = path.relative_to(ROOT).with_suffix("")
            parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
            module = Module(path, ".".join(parts), ast.parse(path.read_text(), str(path)))
            for node in ast.walk(module.tree):
                if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    for alias in node.names:
                        local = alias.asname or alias.name
                        module.from_imports[local] = (node.module, alias.name)
                        module.module_aliases[local] = f"{node.module}.{alias.name}"
                elif isinstance(node, ast.Import):
                    for alias in node.names:
                        if alias.asname:
                            module.module_aliases[alias.asname] = alias.name
            out.append(module)
    return out


def _receiver(expr: ast.expr) -> str:
    """The name a call is made on: ``x`` in ``x.f()``, ``client`` in ``self.session.client.f()``,
    ``build_transaction`` in ``build_transaction(...).f()``."""
    if isinstance(expr, ast.Call):
        return _receiver(expr.func)
    if isinstance(expr, ast.Attribute):
        return expr.attr
    if isinstance(expr, ast.Subscript):
        return _receiver(expr.value)
    return expr.id if isinstance(expr, ast.Name) else ""


def direct_writes(node: ast.AST) -> set[str]:
    """The kazoo, session, raw-multi and fenced writes made directly inside ``node``."""
    found = set()
    for call in ast.walk(node):
        if not isinstance(call, ast.Call):
            continue
        func = call.func
        if isinstance(func, ast.Name):
            if func.id in RAW_MULTI:
                found.add(f"raw:{func.id}")
            elif func.id == FENCED_CLASS:
                found.add(f"fenced:{func.id}")
        elif isinstance(func, ast.Attribute):
            receiver = _receiver(func.value)
            if func.attr in RAW_MULTI:
                found.add(f"raw:{func.attr}")
            elif func.attr == FENCED_CLASS or (func.attr in FENCED_WRITES and FENCED_RECEIVER.search(receiver)):
                found.add(f"fenced:{func.attr}")
            elif func.attr in SESSION_WRITES and SESSION_RECEIVER.search(receiver):
                found.add(f"session:{func.attr}")
            elif func.attr in KAZOO_WRITES and KAZOO_RECEIVER.search(receiver):
                found.add(f"kazoo:{func.attr}")
    return found


def _definitions(module: Module) -> Iterator[tuple[str, str | None, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """(name, enclosing class or None, node) of every top-level function and method."""
    for node in module.tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node.name, None, node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    yield item.name, node.name, item


def _called_names(node: ast.AST) -> set[str]:
    names = set()
    for call in ast.walk(node):
        if isinstance(call, ast.Call):
            if isinstance(call.func, ast.Name):
                names.add(call.func.id)
            elif isinstance(call.func, ast.Attribute):
                names.add(call.func.attr)
    return names


@dataclass(frozen=True)
class Helper:
    module: str
    cls: str | None
    name: str

    @property
    def kind(self) -> str:
        """The zk package's own primitives keep their kind (a call to FencedWriter.bulk is a fenced write,
        ZkSession.multi a session write); any other helper is named by where it is defined."""
        if self.module == "controller.zk.fenced_writer":
            return f"fenced:{self.cls or self.name}" if self.name == "__init__" else f"fenced:{self.name}"
        if self.module == "controller.zk.session" and self.cls == "ZkSession":
            return f"session:{self.name}"
        if self.module == "controller.zk.ops":
            return f"raw:{self.name}"
        return f"helper:{self.module}.{self.cls + '.' if self.cls else ''}{self.name}"


def write_helpers(modules: list[Module]) -> set[Helper]:
    """Functions and methods of controller.store and controller.zk that write ZooKeeper, directly or through
    one another (a fixpoint over the names they call inside those two packages)."""
    defs = [
        (Helper(m.name, cls, name), node)
        for m in modules
        if m.name.startswith(("controller.store", "controller.zk"))
        for name, cls, node in _definitions(m)
    ]
    writing = {h for h, node in defs if direct_writes(node)}
    while True:
        names = {h.name for h in writing} | {h.cls for h in writing if h.cls}
        more = {h for h, node in defs if h not in writing and _called_names(node) & names}
        if not more:
            return writing
        writing |= more


def helper_calls(module: Module, helpers: set[Helper]) -> set[str]:
    """Writes ``module`` makes through helpers defined elsewhere: a helper function it imports and calls (or
    calls on an imported module), or a writing method called on a class it imports."""
    by_function = {(h.module, h.name): h for h in helpers if h.cls is None}
    by_class: dict[tuple[str, str], set[Helper]] = {}
    for h in helpers:
        if h.cls is not None:
            by_class.setdefault((h.module, h.cls), set()).add(h)
    imported_methods: dict[str, set[Helper]] = {}
    for origin in module.from_imports.values():
        for h in by_class.get(origin, set()):
            imported_methods.setdefault(h.name, set()).add(h)
    found = set()
    calls = {node.func for node in ast.walk(module.tree) if isinstance(node, ast.Call)}
    # References, not only calls: ``asyncio.to_thread(acl_store.create_acls, ...)`` writes too.
    for func in ast.walk(module.tree):
        if isinstance(func, ast.Name) and func.id in module.from_imports:
            named = by_function.get(module.from_imports[func.id])
            if named is not None and named.module != module.name:
                found.add(named.kind)
        elif isinstance(func, ast.Attribute):
            if isinstance(func.value, ast.Name) and func.value.id in module.module_aliases:
                aliased = by_function.get((module.module_aliases[func.value.id], func.attr))
                if aliased is not None:
                    found.add(aliased.kind)
                    continue
            if func in calls:  # a method is named by its call (an attribute ``args.delete`` is no write)
                found |= {h.kind for h in imported_methods.get(func.attr, set()) if h.module != module.name}
    return found


def allowed_for(rel: str) -> tuple[str, ...]:
    matches = [prefix for prefix in ALLOWED if rel == prefix or (prefix.endswith("/") and rel.startswith(prefix))]
    return ALLOWED[max(matches, key=len)] if matches else ()


def writes_by_module() -> dict[str, set[str]]:
    modules = shipped_modules()
    helpers = write_helpers(modules)
    return {m.path.relative_to(ROOT).as_posix(): direct_writes(m.tree) | helper_calls(m, helpers) for m in modules}


def test_only_allowed_packages_write_zookeeper() -> None:
    offenders = {}
    for rel, kinds in writes_by_module().items():
        allowed = allowed_for(rel)
        extra = sorted(k for k in kinds if not k.startswith(allowed) or not allowed)
        if extra:
            offenders[rel] = extra
    assert offenders == {}, f"ZooKeeper writes outside what their package may do: {offenders}"


def test_the_scanner_sees_each_kind_of_write() -> None:
    """The check above is only as good as the scanner: it must notice direct writes and writes through
    store helpers, else it would pass on anything."""
    writes = writes_by_module()
    assert any(k.startswith("fenced:") for k in writes["controller/active/watch_handlers.py"])
    assert any(k.startswith("session:") for k in writes["controller/active/controller_election.py"])
    assert any(k.startswith("raw:") for k in writes["controller/zk/fenced_writer.py"])
    wire = set().union(*(k for rel, k in writes.items() if rel.startswith("controller/wire/")))
    assert any(k.startswith(STORE_HELPERS + "kafka_acls.") for k in wire), wire
    assert any(k.startswith(STORE_HELPERS) and "scram" in k for k in wire), wire
    assert any(k.startswith(STORE_HELPERS + "registration.") for k in writes["controller/node.py"])


def test_a_write_through_a_helper_outside_the_allowed_packages_is_caught(tmp_path: Path) -> None:
    """A module that is not a store, calling a store's writing helper, is seen as writing."""
    modules = shipped_modules()
    helpers = write_helpers(modules)
    acls = next(h for h in helpers if h.module == "controller.store.kafka_acls" and h.cls is None)
    source = f"from controller.store.kafka_acls import {acls.name}\n\ndef f(s):\n    {acls.name}(s, [])\n"
    rogue = Module(tmp_path / "rogue.py", "controller.security.rogue", ast.parse(source))
    rogue.from_imports[acls.name] = ("controller.store.kafka_acls", acls.name)
    assert helper_calls(rogue, helpers) == {acls.kind}
    assert allowed_for("controller/security/rogue.py") == ()


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
