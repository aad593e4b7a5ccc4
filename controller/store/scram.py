"""SCRAM credentials in ZooKeeper: the ``SCRAM-SHA-256`` / ``SCRAM-SHA-512`` keys of
``/config/users/<sanitized user>`` in ScramCredentialUtils' string form. That znode also holds the user's
client quotas, which every write keeps.

A write is AdminZkClient.changeUserOrUserClientIdConfig: one multi ``[check(/controller), setData|create,
create config_change_ (seq)]`` at the version read (re-read and retried on a lost race, in this process's
per-user order), or, when no config is left and the node has no children, the node's deletion
(tryCleanQuotaNodes, no controller check) plus the notification.

Two callers: the AlterUserScramCredentials handler, and :func:`alter_scram` — the bootstrap that
``kafka-configs --zookeeper --alter --add-config 'SCRAM-SHA-256=[iterations=8192,password=…]'`` does.
Brokers whose inter-broker listener uses SCRAM need their own credential before any of them can start, so
that one cannot go through the API: with nodes running its write still checks ``/controller``'s version like
every entity-config write; with none, there is nothing to check.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from controller.security.scram import (
    MECHANISMS,
    ScramCredential,
    credential_from_string,
    credential_to_string,
    iterations_error,
    make_credential,
)
from controller.store.entity_configs import (
    change_notification,
    commit_entity_multi,
    config_write,
    controller_for_config_write,
    controller_wait,
    read_entities,
    read_entity,
    retry_entity_write,
)
from controller.store.errors import ApiFailure
from controller.store.quotas import DOUBLE, LONG, USER_KEYS, java_parse_double
from controller.zk.ops import Check, Delete, Op
from controller.zk.session import ZkSession
from zkmodel import paths
from zkmodel.configs import USERS, sanitize
from zkmodel.java import java_parse_integer, java_trim


class ScramAdminError(ValueError):
    """What was wrong with the request (unknown mechanism, iterations, no such credential)."""


def _java_parse_long(text: str) -> int:
    """ConfigDef's LONG parsing: ``Long.parseLong(value.trim())``."""
    trimmed = java_trim(text)
    value = java_parse_integer(trimmed, 64) if trimmed.isascii() else None
    if value is None:
        raise ValueError(text)
    return value


def validate_user_config(props: Mapping[str, str]) -> None:
    """DynamicConfig.User.validate: only SCRAM and quota keys, quota values that parse; else ValueError."""
    for key, value in props.items():
        kind = USER_KEYS.get(key)
        if kind is None:
            raise ValueError(f"requirement failed: Unknown Dynamic Configuration: {key}")
        if kind == LONG:
            _java_parse_long(value)
        elif kind == DOUBLE:
            java_parse_double(value)


def user_path(sanitized: str) -> str:
    return f"{paths.CONFIG}/{USERS}/{sanitized}"


def read_user(session: ZkSession, user: str) -> tuple[dict[str, str], int | None]:
    """AdminZkClient.fetchEntityConfig(USER, sanitize(user)) and the znode's version (None: no znode)."""
    return read_entity(session, user_path(sanitize(user)))


def read_credential(session: ZkSession, user: str, mechanism: str) -> ScramCredential | None:
    """The user's credential for ``mechanism`` (None: none stored). A config or credential not in Kafka's
    format raises ZnodeFormatError or ValueError."""
    text = read_user(session, user)[0].get(mechanism)
    return credential_from_string(text) if text else None


def read_all_users(session: ZkSession) -> list[tuple[str, dict[str, str]]]:
    """AdminZkClient.fetchAllEntityConfigs(USER): (sanitized name, config) of every user znode, by name."""
    root = f"{paths.CONFIG}/{USERS}"
    names = sorted(session.get_children(root) or [])
    configs = read_entities(session, [f"{root}/{n}" for n in names])
    return [(name, configs.get(f"{root}/{name}", {})) for name in names]


def commit_user_config(
    session: ZkSession,
    sanitized: str,
    props: Mapping[str, str],
    version: int | None,
    *,
    controller_wait_s: float = 0.0,
    controller_optional: bool = False,
) -> None:
    """AdminZkClient.changeUserOrUserClientIdConfig as one multi at the version read: the user's config (or,
    with nothing left and no children, its removal: tryCleanQuotaNodes) plus the change notification. Raises
    Raced when something moved underneath (re-read and retry). ``controller_optional``: without a controller
    (a bootstrap before any node runs) write without the ``/controller`` check."""
    path = user_path(sanitized)
    ops: list[Op]
    if not props and not session.get_children(path):
        # tryCleanQuotaNodes: no configs and no children left, so the node goes (deletePath: gone is fine).
        ops = [] if version is None else [Delete(path, version)]
    else:
        ops = []
        if not (controller_optional and session.exists(paths.CONTROLLER) is None):
            controller_stat = controller_for_config_write(session, f"{USERS} {sanitized}", controller_wait_s)
            ops.append(Check(paths.CONTROLLER, controller_stat.version))
        ops.append(config_write(session, path, props, version))
    session.ensure_persistent([paths.CONFIG_CHANGES])
    ops.append(change_notification(f"{USERS}/{sanitized}"))
    commit_entity_multi(session, ops, what=f"alter SCRAM credentials of {USERS} {sanitized}", write="config")


def alter_user(
    session: ZkSession,
    user: str,
    compute: Callable[[dict[str, str]], dict[str, str]],
    *,
    controller_wait_s: float = 0.0,
) -> None:
    """Read the user's config, ``compute`` the new one (raising to refuse it), check it as AdminZkClient.
    changeConfigs does (:func:`validate_user_config`, ValueError) and write it at the version read; re-read
    on a lost race (after a sync), at most WRITE_ATTEMPTS times (then STALE_CONTROLLER_EPOCH, as a config
    write). ``session`` is the admin writes' (the controller identity's, when it has one); the read goes through
    it too, so that it sees the previous writer's write (see controller.store.entity_configs)."""
    sanitized = sanitize(user)
    path = user_path(sanitized)
    wait_left = controller_wait(controller_wait_s)

    def attempt() -> None:
        props, version = read_entity(session, path)
        new = compute(props)
        validate_user_config(new)
        commit_user_config(session, sanitized, new, version, controller_wait_s=wait_left())

    retry_entity_write(session, path, attempt, what=f"{USERS} {sanitized}")


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

    def attempt() -> None:
        config, version = read_entity(session, user_path(sanitized))
        if password is None:
            if mechanism not in config:
                raise ScramAdminError(f"user {user!r} has no {mechanism} credential")
            del config[mechanism]
        else:
            config[mechanism] = credential_to_string(make_credential(mechanism, password, iterations))
        try:
            commit_user_config(session, sanitized, config, version, controller_optional=True)
        except ApiFailure as exc:
            raise ScramAdminError(exc.message or "no controller") from None

    retry_entity_write(
        session,
        user_path(sanitized),
        attempt,
        give_up=lambda: ScramAdminError(f"the config of user {user!r} kept changing underneath; try again"),
    )
    return f"{'updated' if password is not None else 'deleted'} {mechanism} credential of user {user!r}"
