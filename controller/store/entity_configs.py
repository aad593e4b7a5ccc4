"""Entity configs (``/config/<type>/<name>``) and their change notifications, written as Kafka 3.9's
ZooKeeper-mode brokers write them (AdminZkClient.changeEntityConfig → KafkaZkClient.setOrCreateEntityConfigs):
one multi ``[check(/controller, zkVersion), setData|create /config/<type>/<name>, create config_change_ (seq)]``.

The ``/controller`` check is Kafka's: an entity config may only change while the controller that will
propagate it is the one read. The read-compute-write runs on :func:`controller.zk.cas.read_modify_write`, so writers
of one entity inside this node take turns and only other processes can make a write lose its race. It reads
through the session it writes with: a node's two sessions (the broker's and the controller identity's) may be
connected to different servers of an ensemble, and a read on the other one could trail the write the previous
writer of the entity just made (ZooKeeper orders reads after writes per session only: its Programmer's Guide,
"Consistency Guarantees"), and the write would then lose its version check to a change it never read.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence

import orjson
from tenacity import Retrying, retry_if_result, stop_after_delay, wait_fixed

from controller.store.errors import ApiFailure
from controller.zk import cas
from controller.zk.errors import NOT_AS_EXPECTED, RolledBackError
from controller.zk.ops import Check, Create, Op, SetData
from controller.zk.session import ZkSession
from controller.zk.types import ZnodeStat
from zkmodel import errorcodes as E
from zkmodel import paths
from zkmodel.configs import ConfigChangeNotification, EntityConfig, entity_path
from zkmodel.election import ControllerZnode
from zkmodel.errors import ZnodeFormatError

#: How often a read-modify-write is tried when the config znode or /controller changed underneath it.
WRITE_ATTEMPTS = 5
#: How often a write waiting for a controller looks at /controller again.
CONTROLLER_POLL_S = 0.05


def entity_props(path: str, data: bytes | None) -> dict[str, str]:
    """ConfigEntityZNode.decode: null or empty data (a parent made by createRecursive) is an empty config."""
    if not data:
        return {}
    return dict(EntityConfig.decode(path, data).config)


def read_entity(session: ZkSession, path: str) -> tuple[dict[str, str], int | None]:
    """An entity config and its znode's version (None when there is no znode)."""
    found = session.get(path)
    if found is None:
        return {}, None
    return entity_props(path, found[0]), found[1].version


def read_entities(session: ZkSession, znode_paths: Sequence[str]) -> dict[str, dict[str, str]]:
    """The configs of many entities ({} for a missing node), read in pipelined multiRead batches. A
    config not in Kafka's format raises ZnodeFormatError."""
    if not znode_paths:
        return {}
    found = session.read_data(list(znode_paths), timeout=30.0)
    return {p: entity_props(p, r[0]) if r is not None else {} for p, r in found.items()}


def read_entities_leniently(
    session: ZkSession, entities: Sequence[tuple[str, str]], *, timeout: float
) -> dict[tuple[str, str], dict[str, str]]:
    """The configs of ``(entity type, name)`` pairs in one pipelined read, {} for a missing or unreadable
    one: for readers that must go on with what they can read (the replica model's throttles)."""
    by_path = {paths.entity_config(t, n): (t, n) for t, n in entities}
    found = session.read_data(list(by_path), timeout=timeout)
    out: dict[tuple[str, str], dict[str, str]] = {}
    for path, entity in by_path.items():
        result = found.get(path)
        try:
            out[entity] = entity_props(path, result[0]) if result is not None else {}
        except ZnodeFormatError:
            out[entity] = {}
    return out


def change_notification(entity: str) -> Create:
    """The sequential ``/config/changes/config_change_`` node that tells every broker ``entity`` changed
    (``<type>/<name>``, version 2 of the notification)."""
    return Create(
        f"{paths.CONFIG_CHANGES}/{paths.CONFIG_CHANGE_PREFIX}",
        ConfigChangeNotification(entity).encode(),
        sequential=True,
    )


def commit_entity_multi(session: ZkSession, ops: Sequence[Op], *, what: str, write: str) -> None:
    """Run one entity-config multi whose last op is its change notification (AdminZkClient writes a config
    and its notification together). Raises :class:`controller.zk.cas.Raced` when a compare-and-set lost a
    race, /controller changed or someone else wrote first (re-read and retry); any other failure is raised, and
    a multi refused after its connection dropped is :class:`~controller.zk.errors.WriteInDoubt` (our own first
    attempt may have made it: re-reading and writing again would turn an in-doubt write into a definite answer)."""
    results = session.multi(ops, what=what, write=write, refusal_in_doubt=True)
    failures = [r for r in results if isinstance(r, Exception) and not isinstance(r, RolledBackError)]
    if not failures:
        return
    failure = failures[0]
    if isinstance(failure, NOT_AS_EXPECTED) and results[-1] is not failure:
        raise cas.Raced(f"{what}: {type(failure).__name__}")
    raise failure


def _kraft_epoch_of_malformed(data: bytes | None) -> int:
    """The integer ``kraftControllerEpoch`` of a ``/controller`` JSON object that failed ControllerZnode's
    checks, or -1."""
    try:
        obj = orjson.loads(data or b"")
    except orjson.JSONDecodeError:
        return -1
    epoch = obj.get("kraftControllerEpoch") if isinstance(obj, dict) else None
    return epoch if isinstance(epoch, int) and not isinstance(epoch, bool) else -1


def controller_for_config_write(session: ZkSession, what: str, wait_s: float = 0.0) -> ZnodeStat:
    """The ``/controller`` stat an entity-config multi must check (KafkaZkClient.setOrCreateEntityConfigs).

    Kafka throws ControllerMovedException without a ZooKeeper-mode controller, and ApiError.fromThrowable
    maps that to STALE_CONTROLLER_EPOCH (11), not NOT_CONTROLLER. That error is not retriable, so a write
    that lands in the moment between two controllers (a rolling restart) would fail for good; we first wait
    up to ``wait_s`` for the next controller, as a forwarding broker would. A ``/controller`` payload we
    cannot read is still a ZooKeeper-mode controller: only a KRaft controller epoch refuses the write, and
    one we can find in an otherwise malformed payload (another version, a bad ``brokerid``) counts, since
    writing under a KRaft controller would be lost to it.
    """
    found = Retrying(
        retry=retry_if_result(lambda found: found is None),
        stop=stop_after_delay(wait_s),
        wait=wait_fixed(CONTROLLER_POLL_S),
        retry_error_callback=lambda _state: None,
    )(session.get, paths.CONTROLLER)
    if found is None:
        raise ApiFailure(E.STALE_CONTROLLER_EPOCH, f"Cannot set entity configs for {what} when there is no controller.")
    data, controller_stat = found
    try:
        kraft_epoch = ControllerZnode.decode(paths.CONTROLLER, data).kraft_controller_epoch
    except ZnodeFormatError:
        kraft_epoch = _kraft_epoch_of_malformed(data)
    if kraft_epoch > 0:
        raise ApiFailure(
            E.STALE_CONTROLLER_EPOCH, f"Cannot set entity configs for {what} directly when there is a KRaft controller."
        )
    return controller_stat


def controller_wait(wait_s: float) -> Callable[[], float]:
    """How long a write may still wait for a controller: ``wait_s`` from now, for all attempts of one request.
    Time queued behind the entity's other writers (in-process ordering) counts, so that writers of one entity
    with no controller in sight give up together after ``wait_s``, as they did before they were ordered,
    rather than one after another."""
    deadline = time.monotonic() + wait_s
    return lambda: max(0.0, deadline - time.monotonic())


def concurrent_updates(what: str) -> ApiFailure:
    """What a client hears when an entity kept changing underneath every attempt. Kafka 3.9 would answer
    UNKNOWN_SERVER_ERROR for a failed /controller check; we retry a few times (a changed controller is
    harmless here) and then report it like a missing controller."""
    return ApiFailure(E.STALE_CONTROLLER_EPOCH, f"Cannot set entity configs for {what}: concurrent updates.")


def config_write(session: ZkSession, path: str, config: Mapping[str, str], version: int | None) -> Op:
    """KafkaZkClient.setOrCreateEntityConfigs' op for a config znode: setData at ``version`` (the one read),
    or, with no znode read (None), its creation, the parent made first as createRecursive would."""
    payload = EntityConfig(dict(config)).encode()
    if version is None:
        session.ensure_persistent([path.rsplit("/", 1)[0]])
        return Create(path, payload)
    return SetData(path, payload, version)


def retry_entity_write(
    session: ZkSession,
    path: str,
    attempt: Callable[[], None],
    *,
    what: str = "",
    give_up: Callable[[], Exception] | None = None,
) -> None:
    """Run ``attempt`` (read ``path``, compute, commit at the version read) on
    :func:`controller.zk.cas.read_modify_write`: after a lost race sync (see the module's docstring), re-read
    and recompute, at most :data:`WRITE_ATTEMPTS` times, then raise ``give_up()``; without one, what a client
    hears (:func:`concurrent_updates` for ``what``)."""
    cas.read_modify_write(
        path,
        attempt,
        max_attempts=WRITE_ATTEMPTS,
        give_up=give_up or (lambda: concurrent_updates(what)),
        catch_up=lambda: session.sync(path),
    )


def write_entity(
    session: ZkSession, entity_type: str, name: str, config: Mapping[str, str], version: int | None, wait_s: float
) -> None:
    """One config multi at ``version`` (None: create); raises Raced when something moved underneath."""
    what = f"{entity_type} {name}"
    controller_stat = controller_for_config_write(session, what, wait_s)
    path = paths.entity_config(entity_type, name)
    ops: list[Op] = [
        Check(paths.CONTROLLER, controller_stat.version),
        config_write(session, path, config, version),
        change_notification(entity_path(entity_type, name)),
    ]
    commit_entity_multi(session, ops, what=f"alter configs of {what}", write="config")


def alter_entity(
    session: ZkSession,
    entity_type: str,
    name: str,
    compute: Callable[[dict[str, str]], dict[str, str]],
    *,
    validate_only: bool = False,
    controller_wait_s: float = 0.0,
    replaces: bool = False,
) -> None:
    """Read the entity's config, ``compute`` the new one (which raises to refuse it), and write it at the
    version read; after a lost race sync, re-read and recompute, at most :data:`WRITE_ATTEMPTS` times. With
    ``validate_only`` nothing is written. ``session``: the one the node's admin writes use (the controller
    identity's, when it has one); the read goes through it too.

    ``replaces``: the new config does not depend on the old one (AlterConfigs, not incremental), so only the
    znode's version is read and ``compute`` gets {}: a config znode another tool wrote wrong is overwritten, as
    Kafka's AdminZkClient does, instead of refusing every write until someone repairs it by hand."""
    path = paths.entity_config(entity_type, name)
    wait_left = controller_wait(controller_wait_s)

    def attempt() -> None:
        if replaces:
            stat = session.exists(path)
            current: dict[str, str] = {}
            version = None if stat is None else stat.version
        else:
            current, version = read_entity(session, path)
        new = compute(current)
        if not validate_only:
            write_entity(session, entity_type, name, new, version, wait_left())

    retry_entity_write(session, path, attempt, what=f"{entity_type} {name}")
