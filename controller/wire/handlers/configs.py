"""DescribeConfigs (32), AlterConfigs (33) and IncrementalAlterConfigs (44) for topics and brokers.

Modelled on Kafka 3.9's ZooKeeper-mode broker: ConfigHelper.describeConfigs, ConfigAdminManager.preprocess
and ZkAdminManager.alterConfigs/incrementalAlterConfigs, writing through AdminZkClient.changeEntityConfig.
Any node serves these (in ZK mode every broker writes entity configs itself); the write is one ZooKeeper
multi ``[check(/controller, zkVersion), setData|create /config/<type>/<name>, create config_change_ (seq)]``.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from controller.store.entity_configs import alter_entity, read_entity
from controller.store.errors import STORE_ERRORS, ApiFailure, store_failure
from controller.wire.codec import Request, build, entity
from controller.wire.handlers.base import StoreApis, code, repeated
from controller.wire.server import Connection
from zkmodel import errorcodes as E
from zkmodel import paths, topic_names
from zkmodel.configs import BROKERS, DEFAULT_ENTITY, TOPICS
from zkmodel.errorcodes import KafkaError
from zkmodel.errors import ZnodeFormatError
from zkmodel.kafka_acls import AclOperation
from zkmodel.topic_configs import (
    BROKER_CONFIGS,
    TOPIC_CONFIG_DEFS,
    TOPIC_CONFIGS,
    ConfigDef,
    ConfigSource,
    ConfigType,
    ConfigValueError,
    InvalidConfigurationError,
    TopicConfigError,
    validate_broker_configs,
    validate_topic_configs,
)

ZERO = datetime.timedelta(0)
log = logging.getLogger(__name__)
TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8
#: ConfigResource.Type in Kafka 3.9 (for messages).
RESOURCE_TYPE_NAMES = {0: "UNKNOWN", 2: "TOPIC", 4: "BROKER", 8: "BROKER_LOGGER", 16: "CLIENT_METRICS"}
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3

Outcome = tuple[KafkaError, str | None]
OK: Outcome = (E.NONE, None)
Synonym = tuple[str, str | None, int]
#: (name, value, source, read_only, config type, synonyms)
Entry = tuple[str, str | None, int, bool, int, list[Synonym]]


def _type_name(resource_type: int) -> str:
    return RESOURCE_TYPE_NAMES.get(resource_type, "UNKNOWN")


def _resource_text(resource_type: int, name: str) -> str:
    """Java's ConfigResource.toString."""
    return f"ConfigResource(type={_type_name(resource_type)}, name='{name}')"


def _unreadable(exc: ZnodeFormatError) -> Outcome:
    """A config znode another tool wrote wrong (a non-string value, bad JSON): that resource's answer is
    Kafka's for an exception (UNKNOWN_SERVER_ERROR and its message, which names the znode), logged with the
    path; the request and the connection go on."""
    log.warning("unreadable config znode %s", exc)
    return (E.UNKNOWN_SERVER_ERROR, str(exc))


def _java_split(text: str) -> list[str]:
    """Java's ``String.split(",")``: trailing empty strings are dropped (but "" stays [""])."""
    parts = text.split(",")
    while len(parts) > 1 and parts[-1] == "":
        parts.pop()
    if parts and all(p == "" for p in parts) and text:
        return []
    return parts


class ConfigApis(StoreApis):
    # -- ZooKeeper access (blocking; called through asyncio.to_thread) ----------------------------------------
    def _read(self, entity_type: str, name: str) -> tuple[dict[str, str], int | None]:
        """The entity's overrides and the znode's version (None when there is no znode)."""
        return read_entity(self.session, paths.entity_config(entity_type, name))

    def _alter(
        self,
        entity_type: str,
        name: str,
        compute: Callable[[dict[str, str]], dict[str, str]],
        validate_only: bool,
        *,
        incremental: bool,
    ) -> None:
        alter_entity(
            self.node.writes(self.session),
            entity_type,
            name,
            compute,
            validate_only=validate_only,
            controller_wait_s=self.node.controller_wait_s,
            replaces=not incremental,
        )

    # -- DescribeConfigs ------------------------------------------------------------------------------------------
    def _denied(self, conn: Connection, rtype: int, rname: str, operation: AclOperation) -> Outcome | None:
        """Kafka's per-resource check: broker configs need the operation on CLUSTER, topic configs on the topic."""
        if rtype == TOPIC and not self.node.authz.topic(conn, operation, rname):
            return (E.TOPIC_AUTHORIZATION_FAILED, None)
        if rtype in (BROKER, BROKER_LOGGER) and not self.node.authz.cluster(conn, operation):
            return (E.CLUSTER_AUTHORIZATION_FAILED, None)
        return None

    async def describe_configs(self, req: Request, conn: Connection) -> Any:
        body = req.body
        include_synonyms = bool(getattr(body, "include_synonyms", False))
        result_cls = entity(req, "DescribeConfigsResult")
        results = []
        for resource in body.resources:
            rtype, rname = int(resource.resource_type), resource.resource_name
            keys = resource.configuration_keys
            denied = self._denied(conn, rtype, rname, AclOperation.DESCRIBE_CONFIGS)
            try:
                if denied is not None:
                    raise ApiFailure(*denied)
                entries = await asyncio.to_thread(self._describe, rtype, rname)
                wanted = [e for e in entries if not keys or e[0] in keys]
                configs = tuple(self._entry(req, e, include_synonyms) for e in wanted)
                error: Outcome = OK
            except ApiFailure as exc:
                configs, error = (), (exc.error, exc.message)
            except ZnodeFormatError as exc:
                configs, error = (), _unreadable(exc)
            results.append(
                build(
                    result_cls,
                    error_code=code(error[0]),
                    error_message=error[1],
                    resource_type=rtype,
                    resource_name=rname,
                    configs=configs,
                )
            )
        return build(req.schema.DescribeConfigsResponse, throttle_time=ZERO, results=tuple(results))

    def _entry(self, req: Request, e: Entry, include_synonyms: bool) -> Any:
        name, value, source, read_only, kind, synonyms = e
        syn_cls, entry_cls = entity(req, "DescribeConfigsSynonym"), entity(req, "DescribeConfigsResourceResult")
        return build(
            entry_cls,
            name=name,
            value=value,
            read_only=read_only,
            config_source=source,
            is_sensitive=False,
            synonyms=tuple(build(syn_cls, name=n, value=v, source=s) for n, v, s in synonyms)
            if include_synonyms
            else (),
            config_type=kind,
            documentation=None,
        )

    def _describe(self, rtype: int, rname: str) -> list[Entry]:
        if rtype == TOPIC:
            try:
                topic_names.validate(rname)
            except topic_names.InvalidTopicName as exc:
                raise ApiFailure(E.INVALID_TOPIC_EXCEPTION, exc.message) from None
            if rname not in self.node.cache.snapshot().topics:
                raise ApiFailure(E.UNKNOWN_TOPIC_OR_PARTITION, None)
            overrides, _v = self._read(TOPICS, rname)
            return [self._topic_entry(d, overrides) for d in TOPIC_CONFIG_DEFS]
        if rtype == BROKER:
            if not rname:
                defaults, _v = self._read(BROKERS, DEFAULT_ENTITY)
                src = ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
                return [self._broker_entry(n, v, [(n, v, src)]) for n, v in sorted(defaults.items())]
            self._check_broker_id(rname, describe=True)
            per_broker, _v = self._read(BROKERS, rname)
            defaults, _v = self._read(BROKERS, DEFAULT_ENTITY)
            out = []
            for n in sorted({*BROKER_CONFIGS, *per_broker, *defaults}):
                synonyms: list[Synonym] = []
                if n in per_broker:
                    synonyms.append((n, per_broker[n], ConfigSource.DYNAMIC_BROKER_CONFIG))
                if n in defaults:
                    synonyms.append((n, defaults[n], ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG))
                if n in BROKER_CONFIGS:
                    synonyms.append((n, BROKER_CONFIGS[n].default, ConfigSource.DEFAULT_CONFIG))
                out.append(self._broker_entry(n, synonyms[0][1], synonyms))
            return out
        raise ApiFailure(E.INVALID_REQUEST, f"Unsupported resource type: {_type_name(rtype)}")

    @staticmethod
    def _topic_entry(d: ConfigDef, overrides: Mapping[str, str]) -> Entry:
        synonyms: list[Synonym] = []
        if d.name in overrides:
            try:
                value = d.normalize(overrides[d.name])
            except TopicConfigError:
                value = overrides[d.name]
            synonyms.append((d.name, value, ConfigSource.TOPIC_CONFIG))
        if d.default_synonym is not None:
            synonyms.append((*d.default_synonym, ConfigSource.DEFAULT_CONFIG))
        # Without a synonym the value is LogConfig's own default (source DEFAULT_CONFIG as well).
        reported = synonyms[0][1] if synonyms and synonyms[0][2] == ConfigSource.TOPIC_CONFIG else d.default
        source = synonyms[0][2] if synonyms else ConfigSource.DEFAULT_CONFIG
        return (d.name, reported, int(source), False, int(d.type), synonyms)

    @staticmethod
    def _broker_entry(name: str, value: str | None, synonyms: list[Synonym]) -> Entry:
        known = BROKER_CONFIGS.get(name)
        kind = int(known.type) if known else int(ConfigType.UNKNOWN)
        return (name, value, int(synonyms[0][2]), known is None, kind, synonyms)

    def _check_broker_id(self, name: str, *, describe: bool = False, any_id: bool = False) -> None:
        try:
            broker_id = int(name)
        except ValueError:
            prefix = "Broker" if describe else "Node"
            raise ApiFailure(E.INVALID_REQUEST, f"{prefix} id must be an integer, but it is: {name}") from None
        if broker_id != self.node.broker_id and not any_id:
            expected = f"{self.node.broker_id} or empty string" if describe else f"{self.node.broker_id}"
            raise ApiFailure(E.INVALID_REQUEST, f"Unexpected broker id, expected {expected}, but received {name}")

    # -- AlterConfigs / IncrementalAlterConfigs ---------------------------------------------------------------
    async def alter_configs(self, req: Request, conn: Connection) -> Any:
        return await self._alter_request(req, conn, incremental=False)

    async def incremental_alter_configs(self, req: Request, conn: Connection) -> Any:
        return await self._alter_request(req, conn, incremental=True)

    async def _alter_request(self, req: Request, conn: Connection, *, incremental: bool) -> Any:
        body = req.body
        validate_only = bool(body.validate_only)
        resources = list(body.resources)
        ids = [(int(r.resource_type), r.resource_name) for r in resources]
        repeated_ids = repeated(ids)
        out = []
        for resource, rid in zip(resources, ids, strict=True):
            denied = self._denied(conn, rid[0], rid[1], AclOperation.ALTER_CONFIGS)
            if rid in repeated_ids:
                outcome: Outcome = (E.INVALID_REQUEST, "Each resource must appear at most once.")
            elif denied is not None:
                outcome = denied
            else:
                ops = [
                    (c.name, int(getattr(c, "config_operation", SET)), c.value) for c in resource.configs
                ]  # (name, op, value)
                try:
                    await asyncio.to_thread(
                        self._alter_resource, rid[0], rid[1], ops, incremental, validate_only, conn.from_envelope
                    )
                    outcome = OK
                except ApiFailure as exc:
                    outcome = (exc.error, exc.message)
                except ZnodeFormatError as exc:
                    outcome = _unreadable(exc)
                except STORE_ERRORS as exc:
                    failure = store_failure(exc, f"the configs of {_resource_text(rid[0], rid[1])}")
                    outcome = (failure.error, failure.message)
            out.append(
                build(
                    entity(req, "AlterConfigsResourceResponse"),
                    error_code=code(outcome[0]),
                    error_message=outcome[1],
                    resource_type=rid[0],
                    resource_name=rid[1],
                )
            )
        schema_name = "IncrementalAlterConfigsResponse" if incremental else "AlterConfigsResponse"
        return build(getattr(req.schema, schema_name), throttle_time=ZERO, responses=tuple(out))

    def _alter_resource(
        self,
        rtype: int,
        rname: str,
        ops: Sequence[tuple[str, int, str | None]],
        incremental: bool,
        validate_only: bool,
        forwarded: bool = False,
    ) -> None:
        # ConfigAdminManager.preprocess
        names = [n for n, _o, _v in ops]
        if len(set(names)) != len(names):
            raise ApiFailure(E.INVALID_REQUEST, "Error due to duplicate config keys")
        nulls = [n for n, o, v in ops if v is None and not (incremental and o == DELETE)]
        if nulls:
            raise ApiFailure(E.INVALID_REQUEST, "Null value not supported for : " + ", ".join(nulls))
        for _n, o, _v in ops:
            if o not in (SET, DELETE, APPEND, SUBTRACT):
                raise ApiFailure(E.INVALID_REQUEST, f"Unknown operations type {o}")
        if rtype == BROKER:
            if rname:
                # A forwarded request was addressed to the broker that forwarded it, not to the controller.
                self._check_broker_id(rname, any_id=forwarded)
            self._alter_broker(rname, ops, incremental, validate_only)
        elif rtype == TOPIC:
            self._alter_topic(rname, ops, incremental, validate_only)
        else:
            raise ApiFailure(E.INVALID_REQUEST, f"Unknown resource type {rtype}")

    def _alter_topic(
        self, name: str, ops: Sequence[tuple[str, int, str | None]], incremental: bool, validate_only: bool
    ) -> None:
        if not name:
            raise ApiFailure(E.INVALID_REQUEST, "Default topic resources are not allowed.")
        resource = _resource_text(TOPIC, name)

        def compute(current: dict[str, str]) -> dict[str, str]:
            new = _apply(current, ops, TOPIC_CONFIGS, "topic config") if incremental else _replace(ops)
            if name not in self.node.cache.snapshot().topics:
                raise ApiFailure(E.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.")
            try:
                # ZkAdminManager passes an empty map as the existing configs.
                validate_topic_configs(new)
            except ConfigValueError as exc:
                raise ApiFailure(
                    E.INVALID_CONFIG, f"Invalid config value for resource {resource}: {exc.message}"
                ) from None
            except InvalidConfigurationError as exc:
                raise ApiFailure(E.INVALID_CONFIG, exc.message) from None
            return new

        self._alter(TOPICS, name, compute, validate_only, incremental=incremental)

    def _alter_broker(
        self, name: str, ops: Sequence[tuple[str, int, str | None]], incremental: bool, validate_only: bool
    ) -> None:
        def compute(current: dict[str, str]) -> dict[str, str]:
            # DynamicBrokerConfig.fromPersistentProps drops what cannot be dynamic before applying the ops.
            known = {k: v for k, v in current.items() if k in BROKER_CONFIGS}
            new = _apply(known, ops, BROKER_CONFIGS, "config") if incremental else _replace(ops)
            try:
                validate_broker_configs(new)
            except TopicConfigError as exc:
                # ConfigAdminManager.validateBrokerConfigChange: INVALID_REQUEST with the bare message (KAFKA-13609).
                raise ApiFailure(E.INVALID_REQUEST, exc.message) from None
            return new

        self._alter(BROKERS, name or DEFAULT_ENTITY, compute, validate_only, incremental=incremental)


def _replace(ops: Sequence[tuple[str, int, str | None]]) -> dict[str, str]:
    """AlterConfigs: the request's configs become the whole override set."""
    return {n: v for n, _o, v in ops if v is not None}


def _apply(
    current: Mapping[str, str], ops: Sequence[tuple[str, int, str | None]], defs: Mapping[str, ConfigDef], kind: str
) -> dict[str, str]:
    """ConfigAdminManager.prepareIncrementalConfigs."""
    props = dict(current)
    for name, op, value in ops:
        if op == SET:
            props[name] = value or ""
        elif op == DELETE:
            props.pop(name, None)
        else:
            verb = "append" if op == APPEND else "subtract"
            definition = defs.get(name)
            if definition is None:
                # Kafka's Map.apply throws NoSuchElementException (UNKNOWN_SERVER_ERROR) here; its intended
                # check says the name is unknown, which is what we answer.
                raise ApiFailure(E.INVALID_CONFIG, f"Unknown {kind} name: {name}")
            if definition.type is not ConfigType.LIST:
                raise ApiFailure(E.INVALID_CONFIG, f"Config value {verb} is not allowed for config key: {name}")
            old_text = props.get(name, definition.default)
            given = _java_split(value or "")
            if op == APPEND:
                old = _java_split(old_text) if old_text else []
                props[name] = ",".join(old + [s for s in given if s not in old])
            else:
                remaining = _java_split(old_text)
                for s in given:  # Scala's List.diff: one occurrence per subtracted item
                    if s in remaining:
                        remaining.remove(s)
                props[name] = ",".join(remaining)
    return props
