"""The CLI's one arrow back up, which import-linter cannot see: ``controller.cli`` names the tools' commands as
``"module:function"`` strings and imports them only when the command line is parsed. The contract in
pyproject.toml forbids every static ``controller -> migrate`` import; this test holds the names to the tools'
CLI modules, so the root parser mounts commands and reaches nothing else of ``migrate``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from controller.cli import COMMANDS, RAW_COMMANDS

#: A tool's CLI module: ``migrate.cli``, ``migrate.<package>.cli`` or ``migrate.<package>.<name>_cli``.
TOOL_CLI = re.compile(r"migrate(\.[a-z_]+)?\.([a-z_]+_)?cli")


def mounted_modules() -> Iterator[str]:
    for command in COMMANDS:
        for ref in command.configure:
            yield ref.partition(":")[0]
    for ref, _help in RAW_COMMANDS.values():
        yield ref.partition(":")[0]


def test_the_root_parser_names_only_its_own_package_and_the_tools_cli_modules() -> None:
    modules = set(mounted_modules())
    tools = {m for m in modules if m.split(".")[0] == "migrate"}
    assert tools, "the tools' commands are mounted by name"
    assert {m for m in modules - tools if m.split(".")[0] != "controller"} == set()
    assert sorted(m for m in tools if not TOOL_CLI.fullmatch(m)) == []


def test_the_pattern_tells_a_cli_module_from_the_rest() -> None:
    assert TOOL_CLI.fullmatch("migrate.cli")
    assert TOOL_CLI.fullmatch("migrate.snapshot.cli")
    assert TOOL_CLI.fullmatch("migrate.snapshot.restore_cli")
    assert not TOOL_CLI.fullmatch("migrate.snapshot.restore")
    assert not TOOL_CLI.fullmatch("migrate.rehearse.report.cli")
    assert not TOOL_CLI.fullmatch("migrate.connect")
