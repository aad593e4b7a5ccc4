"""``bridgekeeper reassign``: one entry point for every action, with Kafka's exit codes (0 done, 1 failed, and
130 when interrupted) and Kafka's split of where text goes (usage errors on stderr, everything else on stdout).

With ``--output json`` every failure, a usage error included, is one JSON document on stdout with ``"error"``
and ``"exit_code"`` (the status the process exits with), and Kafka's text goes to stderr: a script reads
stdout without ever parsing prose.

A run reads and checks its files and values (:mod:`migrate.reassign.inputs`) before it opens any connection,
so a missing or malformed file is reported at once rather than after a bootstrap timeout.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Sequence

import orjson

from controller.exits import configure_tool_logging
from migrate.reassign.inputs import Inputs, read_inputs
from migrate.reassign.options import USAGE, Action, Options, OptionsError, json_requested, parse_options
from migrate.reassign.output import Output, ToolError

#: What a failed run exits with: Kafka's tool exits 1 for every failure, usage errors included.
FAILED = 1
#: What an interrupted run exits with (128 + SIGINT), as shells report it.
INTERRUPTED = 130
#: How long the admin path waits to reach the cluster (kafka-python's bootstrap) and the legacy path waits for
#: its ZooKeeper session.
CONNECT_TIMEOUT_S = 30.0


def main(argv: Sequence[str]) -> int:
    try:
        opts = parse_options(argv)
    except OptionsError as exc:
        return _refuse(exc, json_mode=json_requested(argv))
    configure_tool_logging(opts.verbose)
    out = Output(json_mode=opts.output == "json")
    try:
        _run(opts, out)
    except ToolError as exc:
        return out.fail(exc, FAILED)
    except KeyboardInterrupt:
        return out.fail(ToolError("Interrupted"), INTERRUPTED)
    except Exception as exc:  # Kafka's main: "Error: " + getMessage() for any Throwable; a trace only on request
        if opts.verbose:
            traceback.print_exc()
        return out.fail(ToolError(f"{type(exc).__name__}: {exc}"), FAILED)
    out.finish()
    return 0


def _refuse(exc: OptionsError, *, json_mode: bool) -> int:
    """Print a refusal of the command line where Kafka prints it; in JSON mode all of that goes to stderr and
    stdout gets the one error document (``--version`` is no failure: it prints the version either way)."""
    as_json = json_mode and exc.exit_code != 0
    stream = sys.stderr if as_json or exc.stream == "stderr" else sys.stdout
    if exc.message:
        stream.write(exc.message + "\n")
    if exc.usage:
        stream.write(USAGE if USAGE.endswith("\n") else USAGE + "\n")
    stream.flush()
    if as_json:
        sys.stdout.write(orjson.dumps({"error": exc.detail, "exit_code": exc.exit_code}).decode() + "\n")
        sys.stdout.flush()
    return exc.exit_code


def _run(opts: Options, out: Output) -> None:
    """Read the inputs, then connect as the options say and run the action, turning every failure into a
    ToolError."""
    from migrate.reassign.admin import AdminError
    from migrate.reassign.client_config import ClientConfigError
    from migrate.reassign.plan_files import PlanFileError

    try:
        if opts.zookeeper is not None:
            from migrate.reassign import legacy

            legacy.warn_deprecated(opts, out)
            inputs = read_inputs(opts)
            legacy.check_inputs(opts, inputs)
            _run_zookeeper(opts, out, inputs)
        else:
            _run_admin(opts, out, read_inputs(opts))
    except AdminError as exc:
        raise ToolError(exc.message) from None
    except ClientConfigError as exc:
        raise ToolError(str(exc)) from None
    except PlanFileError as exc:
        raise ToolError(exc.message, terse=exc.terse) from None


def _run_admin(opts: Options, out: Output, inputs: Inputs) -> None:
    from migrate.reassign import cancel, execute, generate, listing, verify
    from migrate.reassign.admin import ReassignAdmin

    assert inputs.settings is not None
    actions = {
        Action.GENERATE: generate.run,
        Action.EXECUTE: execute.run,
        Action.VERIFY: verify.run,
        Action.CANCEL: cancel.run,
        Action.LIST: listing.run,
    }
    settings = {"bootstrap_timeout_ms": int(CONNECT_TIMEOUT_S * 1000), **inputs.settings}
    with ReassignAdmin(settings) as admin:
        actions[opts.action](admin, opts, out, inputs)


def _run_zookeeper(opts: Options, out: Output, inputs: Inputs) -> None:
    from controller.store.errors import STORE_ERRORS, ApiFailure
    from controller.zk.errors import ZkUnavailable
    from controller.zk.session import ZkSession
    from migrate.reassign import legacy

    assert opts.zookeeper is not None
    ends: tuple[type[BaseException], ...] = (*STORE_ERRORS, ApiFailure)  # reported as the tool's one error line
    session = ZkSession(opts.zookeeper, session_timeout_ms=30_000, name="reassign")
    try:
        session.start(timeout=CONNECT_TIMEOUT_S)
    except ZkUnavailable as exc:  # its message names the address and the timeout
        raise ToolError(str(exc)) from None
    try:
        legacy.run(session, opts, out, inputs)
    except ends as exc:
        message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
        raise ToolError(message) from None
    finally:
        session.close()
