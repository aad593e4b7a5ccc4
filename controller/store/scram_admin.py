"""Bootstrap SCRAM credentials straight into ZooKeeper, as ``kafka-configs --zookeeper --alter --add-config
'SCRAM-SHA-256=[iterations=8192,password=…]' --entity-type users --entity-name <user>`` does.

Brokers whose inter-broker listener uses SCRAM need their own credential before any of them can start, so
this cannot go through AlterUserScramCredentials. With nodes running, the write still checks
``/controller``'s version like every entity-config write; with none, there is nothing to check.
"""

from __future__ import annotations

from controller.security.scram import MECHANISMS, credential_to_string, iterations_error, make_credential
from controller.wire.handlers.configs import ApiFailure, read_entity
from controller.wire.handlers.scram import commit_user_config
from controller.zk.session import ZkSession
from zkmodel import paths
from zkmodel.configs import sanitize

ATTEMPTS = 5


class ScramAdminError(ValueError):
    """What was wrong with the request (unknown mechanism, iterations, no such credential)."""


def alter_scram(
    session: ZkSession,
    user: str,
    mechanism: str,
    *,
    password: str | None,
    iterations: int = 4096,
) -> str:
    """Set (``password`` given) or delete (``password`` None) one credential; returns what was done."""
    if mechanism not in MECHANISMS:
        raise ScramAdminError(f"unknown SCRAM mechanism {mechanism!r} (known: {', '.join(sorted(MECHANISMS))})")
    if not user:
        raise ScramAdminError("the user name must not be empty")
    if password is not None:
        problem = iterations_error(mechanism, iterations)
        if problem is not None:
            raise ScramAdminError(f"{problem} ({iterations} for {mechanism})")
        if not password:
            raise ScramAdminError("the password must not be empty")
    sanitized = sanitize(user)
    for _ in range(ATTEMPTS):
        config, version = read_entity(session, paths.entity_config("users", sanitized))
        if password is None:
            if mechanism not in config:
                raise ScramAdminError(f"user {user!r} has no {mechanism} credential")
            del config[mechanism]
        else:
            config[mechanism] = credential_to_string(make_credential(mechanism, password, iterations))
        try:
            written = commit_user_config(session, sanitized, config, version, controller_optional=True)
        except ApiFailure as exc:
            raise ScramAdminError(exc.message or "no controller") from None
        if written:
            return f"{'updated' if password is not None else 'deleted'} {mechanism} credential of user {user!r}"
    raise ScramAdminError(f"the config of user {user!r} kept changing underneath; try again")
