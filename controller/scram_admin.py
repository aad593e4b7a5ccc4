"""Bootstrap SCRAM credentials straight into ZooKeeper, as ``kafka-configs --zookeeper --alter --add-config
'SCRAM-SHA-256=[iterations=8192,password=…]' --entity-type users --entity-name <user>`` does.

Brokers whose inter-broker listener uses SCRAM need their own credential before any of them can start, so
this cannot go through AlterUserScramCredentials. With nodes running, the write still checks
``/controller``'s version like every entity-config write; with none, there is nothing to check.
"""

from __future__ import annotations

from kazoo.protocol.states import ZnodeStat

from controller.security.scram import MECHANISMS, credential_to_string, iterations_error, make_credential
from controller.wire.configs_api import ApiFailure, commit_entity_multi, controller_for_config_write
from controller.zkops import Check, Create, Delete, Op, SetData
from controller.zksession import ZkSession
from zkmodel import paths
from zkmodel.configs import ConfigChangeNotification, EntityConfig, sanitize

ATTEMPTS = 5


class ScramAdminError(ValueError):
    """What was wrong with the request (unknown mechanism, iterations, no such credential)."""


def _controller_check(session: ZkSession, what: str) -> list[Op]:
    if session.exists(paths.CONTROLLER) is None:
        return []  # bootstrapping: no node is running yet
    try:
        stat: ZnodeStat = controller_for_config_write(session, what)
    except ApiFailure as exc:
        raise ScramAdminError(exc.message or "no controller") from None
    return [Check(paths.CONTROLLER, stat.version)]


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
    path = paths.entity_config("users", sanitized)
    notification = Create(
        f"{paths.CONFIG_CHANGES}/{paths.CONFIG_CHANGE_PREFIX}",
        ConfigChangeNotification(f"users/{sanitized}").encode(),
        sequential=True,
    )
    session.ensure_persistent([paths.CONFIG_CHANGES, path.rsplit("/", 1)[0]])
    for _ in range(ATTEMPTS):
        found = session.get(path)
        config = dict(EntityConfig.decode(path, found[0]).config) if found is not None else {}
        if password is None:
            if mechanism not in config:
                raise ScramAdminError(f"user {user!r} has no {mechanism} credential")
            del config[mechanism]
        else:
            config[mechanism] = credential_to_string(make_credential(mechanism, password, iterations))
        ops = _controller_check(session, f"users {sanitized}")
        payload = EntityConfig(config).encode()
        if found is None:
            ops.append(Create(path, payload))
        elif not config and not (session.get_children(path) or []):
            ops.append(Delete(path, found[1].version))  # AdminZkClient.tryCleanQuotaNodes
        else:
            ops.append(SetData(path, payload, found[1].version))
        ops.append(notification)
        if commit_entity_multi(session, ops, what=f"alter SCRAM credentials of {user}", write="config"):
            return f"{'updated' if password is not None else 'deleted'} {mechanism} credential of user {user!r}"
    raise ScramAdminError(f"the config of user {user!r} kept changing underneath; try again")
