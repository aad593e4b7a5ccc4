"""Client quota configs in ZooKeeper, as Kafka 3.9's ZooKeeper-mode broker keeps them: ``/config/users/<u>``,
``/config/users/<u>/clients/<c>``, ``/config/clients/<c>`` and ``/config/ips/<ip>`` (names sanitized, the
default entity ``<default>``).

A write is one multi ``[check(/controller), setData|create, create config_change_ (seq)]``; an alteration
that leaves an entity without configs and children deletes its znode (and emptied parents), as
AdminZkClient.tryCleanQuotaNodes does, and still announces the change. Validation of names and values is
the caller's (the wire handler's), passed in as ``compute``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from controller.store.entity_configs import (
    WRITE_ATTEMPTS,
    change_notification,
    commit_entity_multi,
    concurrent_updates,
    controller_for_config_write,
    entity_props,
    read_entities,
)
from controller.store.errors import ApiFailure
from controller.zk import cas
from controller.zk.ops import Check, Create, Delete, Op, SetData
from controller.zk.session import ZkSession
from zkmodel import errorcodes as E
from zkmodel import paths
from zkmodel.configs import CLIENTS, USERS, EntityConfig
from zkmodel.errors import ZnodeFormatError

__all__ = ["alter_quota_entity", "quota_path", "read_children", "read_entities"]


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
    reads: ZkSession,
    writes: ZkSession,
    root: str,
    name: str,
    compute: Callable[[dict[str, str]], dict[str, str]],
    *,
    user_client: bool,
    validate_only: bool = False,
    controller_wait_s: float = 0.0,
) -> None:
    """Read the entity's quota config, ``compute`` the new one (raising to refuse it) and write it at the
    version read, re-reading on a lost race (at most WRITE_ATTEMPTS times). A config not in Kafka's format
    answers UNKNOWN_SERVER_ERROR without a message, as Kafka's IllegalStateException would."""
    path = quota_path(root, name)

    def attempt() -> None:
        found = reads.get(path)
        try:
            props = entity_props(path, found[0]) if found is not None else {}
        except ZnodeFormatError:
            raise ApiFailure(E.UNKNOWN_SERVER_ERROR, None) from None
        props = compute(props)
        if validate_only:
            return
        version = found[1].version if found is not None else None
        _commit(reads, writes, root, name, props, version, user_client, controller_wait_s)

    cas.read_modify_write(
        path, attempt, max_attempts=WRITE_ATTEMPTS, give_up=lambda: concurrent_updates(f"{root} {name}")
    )


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
    reads: ZkSession,
    writes: ZkSession,
    root: str,
    name: str,
    props: Mapping[str, str],
    version: int | None,
    user_client: bool,
    controller_wait_s: float,
) -> None:
    """One multi; raises Raced when something moved underneath (the caller re-reads and retries)."""
    path = quota_path(root, name)
    ops: list[Op] | None = _deletions(reads, root, name, version, user_client) if not props else None
    if ops is None:
        controller_stat = controller_for_config_write(writes, f"{root} {name}", controller_wait_s)
        payload = EntityConfig(dict(props)).encode()
        if version is None:
            writes.ensure_persistent([path.rsplit("/", 1)[0]])
        ops = [
            Check(paths.CONTROLLER, controller_stat.version),
            Create(path, payload) if version is None else SetData(path, payload, version),
        ]
    writes.ensure_persistent([paths.CONFIG_CHANGES])
    ops.append(change_notification(f"{root}/{name}"))
    commit_entity_multi(writes, ops, what=f"alter quotas of {root} {name}", write="quota")
