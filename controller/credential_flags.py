"""Credentials for the tools, kept off the command line.

A flag's value is visible to every user of the host (``ps``, ``/proc/PID/cmdline``) and stays in shell
history, so every credential flag has a file form and an environment form, and the flag's help says so.
Identities are written one way everywhere, ``digest:USER:PASSWORD`` (the scheme first, as ZooKeeper's
``addauth`` and Kafka's ``zookeeper.set.acl`` tooling name them).

Precedence: the flag, else its ``-file`` form, else the environment variable. A secret file readable by group
or others is used with a warning (ZooKeeper's and Kafka's own JAAS files get the same advice).
"""

from __future__ import annotations

import argparse
import os
import stat
import sys

from controller.exits import UsageError

IDENTITY_FORM = "digest:USER:PASSWORD"
VISIBLE = "visible to other users in ps and shell history"


def env_name(role: str) -> str:
    """``BRIDGEKEEPER_CONTROLLER_IDENTITY`` for role ``controller``."""
    return f"BRIDGEKEEPER_{role.upper()}_IDENTITY"


def add_identity_flags(parser: argparse.ArgumentParser, role: str, what: str) -> None:
    """``--ROLE-identity`` and ``--ROLE-identity-file`` (one or the other), read with :func:`identity`."""
    flag = f"--{role}-identity"
    either = parser.add_mutually_exclusive_group()
    either.add_argument(
        flag,
        metavar=IDENTITY_FORM,
        default=None,
        help=f"{what}; {VISIBLE}: prefer {flag}-file or ${env_name(role)}",
    )
    either.add_argument(
        f"{flag}-file", metavar="FILE", default=None, help=f"a file holding {flag}'s value ({IDENTITY_FORM})"
    )


def identity(args: argparse.Namespace, role: str, *, required: bool) -> str | None:
    """The ``digest:USER:PASSWORD`` the flag, its file or ``BRIDGEKEEPER_<ROLE>_IDENTITY`` gives, checked;
    None when none is given and it is optional. Raises :class:`UsageError` naming the source otherwise."""
    flag = f"--{role}-identity"
    attr = role.replace("-", "_") + "_identity"
    text: str | None = getattr(args, attr, None)
    source = flag
    path = getattr(args, attr + "_file", None)
    if text is None and path is not None:
        text, source = read_secret_file(path, f"{flag}-file"), f"{flag}-file {path}"
    if text is None and os.environ.get(env_name(role)):
        text, source = os.environ[env_name(role)], env_name(role)
    if text is None:
        if required:
            raise UsageError(f"{flag}, {flag}-file or ${env_name(role)} is required")
        return None
    check_identity(text, source)
    return text


def check_identity(text: str, source: str) -> tuple[str, str]:
    """(user, password) of a ``digest:USER:PASSWORD``; the error names where it came from, never the secret."""
    scheme, _, rest = text.partition(":")
    user, _, password = rest.partition(":")
    if scheme != "digest" or not user or not password:
        raise UsageError(f"{source} must be {IDENTITY_FORM}")
    return user, password


def read_secret_file(path: str, flag: str) -> str:
    """The file's text without its trailing newline. Raises :class:`UsageError` for a missing, unreadable or
    empty file; warns on stderr when group or others may read it."""
    try:
        mode = os.stat(path).st_mode
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as exc:
        raise UsageError(f"{flag} {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{flag} {path}: not UTF-8 text") from None
    if mode & (stat.S_IRGRP | stat.S_IROTH):
        print(
            f"warning: {path} is readable by group or others (mode {stat.filemode(mode)}); chmod 600 it",
            file=sys.stderr,
        )
    text = text.rstrip("\r\n")
    if not text:
        raise UsageError(f"{flag} {path}: the file is empty")
    return text
