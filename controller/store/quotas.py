"""Client quota configs in ZooKeeper, as Kafka 3.9's ZooKeeper-mode broker keeps them: ``/config/users/<u>``,
``/config/users/<u>/clients/<c>``, ``/config/clients/<c>`` and ``/config/ips/<ip>`` (names sanitized, the
default entity ``<default>``).

A write is one multi ``[check(/controller), setData|create, create config_change_ (seq)]``; an alteration
that leaves an entity without configs and children deletes its znode (and emptied parents), as
AdminZkClient.tryCleanQuotaNodes does, and still announces the change. The request's own checks (entity names,
operations) are the caller's, passed in as ``compute``; what AdminZkClient.changeConfigs checks before it
writes (DynamicConfig.{User,Client,Ip}.validate: known keys, values that parse) is here, with the key
tables of QuotaConfigs and the Java number text Kafka stores.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal

from controller.store.entity_configs import (
    change_notification,
    commit_entity_multi,
    config_write,
    controller_for_config_write,
    controller_wait,
    entity_props,
    read_entities,
    read_entity,
    retry_entity_write,
)
from controller.store.errors import ApiFailure
from controller.zk.ops import Check, Delete, Op
from controller.zk.session import ZkSession
from zkmodel import errorcodes as E
from zkmodel import paths
from zkmodel.configs import CLIENTS, DEFAULT_ENTITY, IPS, USERS
from zkmodel.errors import ZnodeFormatError
from zkmodel.java import java_parse_integer, java_trim

__all__ = [
    "CLIENT_KEYS",
    "DOUBLE",
    "INT",
    "INTEGRAL_RANGES",
    "IP_KEYS",
    "LONG",
    "STRING",
    "USER_KEYS",
    "alter_quota_entity",
    "java_double_to_string",
    "java_parse_double",
    "quota_path",
    "read_children",
    "read_entities",
    "validate_quota_config",
]

LONG, INT, DOUBLE, STRING = "LONG", "INT", "DOUBLE", "STRING"
#: QuotaConfigs.userAndClientQuotaConfigs (all without validators).
CLIENT_KEYS: dict[str, str] = {
    "producer_byte_rate": LONG,
    "consumer_byte_rate": LONG,
    "request_percentage": DOUBLE,
    "controller_mutation_rate": DOUBLE,
}
#: QuotaConfigs.scramMechanismsPlusUserAndClientQuotaConfigs: SCRAM credentials are STRING keys of users.
USER_KEYS: dict[str, str] = {"SCRAM-SHA-256": STRING, "SCRAM-SHA-512": STRING, **CLIENT_KEYS}
#: QuotaConfigs.ipConfigs (connection_creation_rate: INT, atLeast(0)).
IP_KEYS: dict[str, str] = {"connection_creation_rate": INT}

LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
INT_MIN, INT_MAX = -(2**31), 2**31 - 1
#: Java's range of each integral kind (what a narrowing cast saturates to).
INTEGRAL_RANGES: dict[str, tuple[int, int]] = {LONG: (LONG_MIN, LONG_MAX), INT: (INT_MIN, INT_MAX)}

_JAVA_DOUBLE = re.compile(r"[+-]?(NaN|Infinity|(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?[fFdD]?)")


# -- Java number text ---------------------------------------------------------------------------------------------
def java_double_to_string(value: float) -> str:
    """``Double.toString`` (JDK 19+ shortest digits): plain text in [1e-3, 1e7), else ``d.dddE<n>``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign = "-" if value < 0 else ""
    magnitude = abs(value)
    parts = Decimal(repr(magnitude)).as_tuple()
    digits = "".join(map(str, parts.digits))
    exponent = int(parts.exponent)
    stripped = digits.rstrip("0") or "0"
    exponent += len(digits) - len(stripped)
    digits = stripped.lstrip("0") or "0"
    sci = len(digits) - 1 + exponent  # magnitude = d.ddd x 10^sci
    if 1e-3 <= magnitude < 1e7:
        if sci >= 0:
            whole, frac = digits[: sci + 1].ljust(sci + 1, "0"), digits[sci + 1 :] or "0"
        else:
            whole, frac = "0", "0" * (-sci - 1) + digits
        return f"{sign}{whole}.{frac}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{sci}"


def java_parse_double(text: str) -> float:
    """``Double.parseDouble`` for decimal text (ValueError when Java would throw NumberFormatException)."""
    trimmed = java_trim(text)
    if not _JAVA_DOUBLE.fullmatch(trimmed):
        raise ValueError(text)
    if trimmed[-1] in "fFdD" and not trimmed.endswith(("NaN", "Infinity")):
        trimmed = trimmed[:-1]
    if trimmed.lstrip("+-") == "NaN":
        return math.nan
    return float(trimmed)


def _config_integer(text: str, bits: int) -> int:
    """ConfigDef's INT/LONG parsing: ``Integer.parseInt`` / ``Long.parseLong`` of ``value.trim()``, ValueError
    where Java throws NumberFormatException."""
    value = java_parse_integer(java_trim(text), bits)
    if value is None:
        raise ValueError(text)
    return value


def validate_quota_config(root: str, name: str, props: Mapping[str, str]) -> None:
    """AdminZkClient.changeConfigs' DynamicConfig.{Client,User,Ip}.validate for the config about to be written
    to ``/config/<root>/<name>``. Its failures are not ApiExceptions, so a client hears UNKNOWN_SERVER_ERROR
    without a message."""
    if root == IPS:
        keys = IP_KEYS
    elif root == USERS and name != DEFAULT_ENTITY and "/clients" not in name:
        keys = USER_KEYS
    else:
        keys = CLIENT_KEYS
    for key, value in props.items():
        kind = keys.get(key)
        try:
            if kind == LONG:
                _config_integer(value, 64)
            elif kind == INT and _config_integer(value, 32) < 0:
                raise ValueError(value)  # connection_creation_rate: Range.atLeast(0)
            elif kind == DOUBLE:
                java_parse_double(value)
            elif kind is None:
                raise ValueError(key)  # "requirement failed: Unknown Dynamic Configuration"
        except ValueError:
            raise ApiFailure(E.UNKNOWN_SERVER_ERROR, None) from None


def quota_path(root: str, name: str) -> str:
    """``/config/<root>/<name>``; ``name`` is sanitized (``<user>/clients/<client>`` for a user's client)."""
    return f"{paths.CONFIG}/{root}/{name}"


def read_children(session: ZkSession, parents: Sequence[str]) -> dict[str, list[str]]:
    """The sorted children of each parent ([] for a missing node), in pipelined multiRead batches."""
    if not parents:
        return {}
    found = session.read_children(list(parents), timeout=30.0)
    return {p: sorted(c or []) for p, c in found.items()}


def alter_quota_entity(
    session: ZkSession,
    root: str,
    name: str,
    compute: Callable[[dict[str, str]], dict[str, str]],
    *,
    user_client: bool,
    validate_only: bool = False,
    controller_wait_s: float = 0.0,
) -> None:
    """Read the entity's quota config, ``compute`` the new one (raising to refuse it), check it as
    AdminZkClient.changeConfigs does (:func:`validate_quota_config`) and write it at the version read,
    re-reading on a lost race (at most WRITE_ATTEMPTS times). With ``validate_only`` nothing is checked
    beyond ``compute`` nor written (ZkAdminManager returns before changeConfigs). A config not in Kafka's
    format answers UNKNOWN_SERVER_ERROR without a message, as Kafka's IllegalStateException would.
    ``session`` is the admin writes' (the controller identity's, when it has one); reads go through it too,
    and a lost race syncs before it re-reads (see controller.store.entity_configs)."""
    path = quota_path(root, name)
    wait_left = controller_wait(controller_wait_s)

    def attempt() -> None:
        try:
            props, version = read_entity(session, path)
        except ZnodeFormatError:
            raise ApiFailure(E.UNKNOWN_SERVER_ERROR, None) from None
        props = compute(props)
        if validate_only:
            return
        validate_quota_config(root, name, props)
        _commit(session, root, name, props, version, user_client, wait_left())

    retry_entity_write(session, path, attempt, what=f"{root} {name}")


def _deletions(session: ZkSession, root: str, name: str, version: int | None, user_client: bool) -> list[Op] | None:
    """AdminZkClient.tryCleanQuotaNodes: the nodes to delete (leaf first), or None when the node has children."""
    path = quota_path(root, name)
    if session.get_children(path):
        return None
    ops: list[Op] = [] if version is None else [Delete(path, version)]
    if user_client and version is not None:
        user, client = name.split("/", 1)[0], name.rsplit("/", 1)[1]
        user_path = f"{paths.CONFIG}/{USERS}/{user}"
        if session.get_children(f"{user_path}/clients") == [client]:
            ops.append(Delete(f"{user_path}/clients"))
            found = session.get(user_path)
            user_props = entity_props(user_path, found[0]) if found is not None else {}
            if found is not None and not user_props and session.get_children(user_path) == [CLIENTS]:
                ops.append(Delete(user_path, found[1].version))
    return ops


def _commit(
    session: ZkSession,
    root: str,
    name: str,
    props: Mapping[str, str],
    version: int | None,
    user_client: bool,
    controller_wait_s: float,
) -> None:
    """One multi; raises Raced when something moved underneath (the caller re-reads and retries)."""
    path = quota_path(root, name)
    ops: list[Op] | None = _deletions(session, root, name, version, user_client) if not props else None
    if ops is None:
        controller_stat = controller_for_config_write(session, f"{root} {name}", controller_wait_s)
        ops = [Check(paths.CONTROLLER, controller_stat.version), config_write(session, path, props, version)]
    session.ensure_persistent([paths.CONFIG_CHANGES])
    ops.append(change_notification(f"{root}/{name}"))
    commit_entity_multi(session, ops, what=f"alter quotas of {root} {name}", write="quota")
