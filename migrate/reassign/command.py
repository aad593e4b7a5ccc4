"""``bridgekeeper reassign``: one entry point for every action, with Kafka's exit codes (0 done, 1 failed)
and Kafka's split of where text goes (usage errors on stderr, everything else on stdout)."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from migrate.reassign.options import Action, Options, OptionsError, parse_options
from migrate.reassign.output import Output, ToolError

#: What an interrupted run exits with (128 + SIGINT), as shells report it.
INTERRUPTED = 130


def main(argv: Sequence[str]) -> int:
    try:
        opts = parse_options(argv)
    except OptionsError as exc:
        stream = sys.stdout if exc.stream == "stdout" else sys.stderr
        if exc.message:
            stream.write(exc.message + "\n")
        if exc.usage:
            from migrate.reassign.options import USAGE

            stream.write(USAGE if USAGE.endswith("\n") else USAGE + "\n")
        stream.flush()
        return exc.exit_code
    out = Output(json_mode=opts.output == "json")
    try:
        _run(opts, out)
    except ToolError as exc:
        out.fail(exc)
        out.finish()
        return 1
    except KeyboardInterrupt:
        out.fail(ToolError("Interrupted"))
        out.finish()
        return INTERRUPTED
    except Exception as exc:  # Kafka's main: "Error: " + getMessage() for any Throwable; never a traceback here
        out.fail(ToolError(f"{type(exc).__name__}: {exc}"))
        out.finish()
        return 1
    out.finish()
    return 0


def _run(opts: Options, out: Output) -> None:
    """Connect as the options say and run the action, turning every failure into a ToolError."""
    from migrate.reassign.admin import AdminError
    from migrate.reassign.client_config import ClientConfigError
    from migrate.reassign.plan_files import PlanFileError

    try:
        if opts.zookeeper is not None:
            _run_zookeeper(opts, out)
        else:
            _run_admin(opts, out)
    except AdminError as exc:
        raise ToolError(exc.message) from None
    except ClientConfigError as exc:
        raise ToolError(str(exc)) from None
    except PlanFileError as exc:
        raise ToolError(exc.message, terse=exc.terse) from None


def _run_admin(opts: Options, out: Output) -> None:
    from migrate.reassign import cancel, execute, generate, listing, verify
    from migrate.reassign.admin import ReassignAdmin
    from migrate.reassign.client_config import admin_settings, read_client_config

    assert opts.bootstrap_server is not None
    props = read_client_config(opts.command_config) if opts.command_config else {}
    actions = {
        Action.GENERATE: generate.run,
        Action.EXECUTE: execute.run,
        Action.VERIFY: verify.run,
        Action.CANCEL: cancel.run,
        Action.LIST: listing.run,
    }
    with ReassignAdmin(admin_settings(opts.bootstrap_server, props)) as admin:
        actions[opts.action](admin, opts, out)


def _run_zookeeper(opts: Options, out: Output) -> None:
    from controller.store.errors import STORE_ERRORS, ApiFailure
    from controller.zk.session import ZkSession, ZkUnavailable
    from migrate.reassign import legacy

    assert opts.zookeeper is not None
    session = ZkSession(opts.zookeeper, session_timeout_ms=30_000, name="reassign")
    try:
        session.start(timeout=30.0)
    except ZkUnavailable as exc:
        raise ToolError(f"cannot connect to ZooKeeper at {opts.zookeeper}: {exc}") from None
    try:
        legacy.run(session, opts, out)
    except (*STORE_ERRORS, ApiFailure) as exc:
        message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
        raise ToolError(message) from None
    finally:
        session.close()
