"""controller.zk.protocol holds records and codecs: of kazoo it may use records and errors, never a client, a
handler or a connection (sending is controller.zk.send's). import-linter sees kazoo as one module, so the
contract in pyproject.toml covers our own packages and this test covers kazoo's."""

from __future__ import annotations

import ast
from pathlib import Path

PROTOCOL = Path(__file__).resolve().parents[2] / "controller" / "zk" / "protocol"
#: kazoo's record and error modules: ZnodeStat, path prefixing, the exception per error code, ACL values.
ALLOWED = ("kazoo.protocol", "kazoo.exceptions", "kazoo.security")


def _kazoo_imports(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
        elif isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
    return [n for n in names if n == "kazoo" or n.startswith("kazoo.")]


def test_protocol_uses_only_kazoos_records_and_errors() -> None:
    modules = sorted(PROTOCOL.glob("*.py"))
    assert modules
    wrong = {
        f"{path.name}: {name}"
        for path in modules
        for name in _kazoo_imports(path)
        if not any(name == allowed or name.startswith(f"{allowed}.") for allowed in ALLOWED)
    }
    assert not wrong
