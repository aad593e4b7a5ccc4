"""Cluster-wide singletons: ``/feature``, ``/cluster/id``, ``/latest_producer_id_block``, ``/migration``."""

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from zkmodel.errors import ZnodeFormatError
from zkmodel.fields import (
    as_int,
    check_version,
    dumps,
    get_int,
    get_long_str,
    get_object,
    get_str,
    parse_object,
)
from zkmodel.jvmorder import scala_immutable_map_order, scala_mutable_hashmap_order
from zkmodel.uuid import is_valid_uuid

FEATURE_DISABLED, FEATURE_ENABLED = 0, 1
#: ProducerIdManager.PidBlockSize
PRODUCER_ID_BLOCK_SIZE = 1000


@dataclass(frozen=True)
class FeatureZnode:
    """KIP-584 finalized features. V1 stores min and max levels, V2 (IBP >= 3.3-IV0) only the max."""

    version: int = 2
    status: int = FEATURE_ENABLED
    features: Mapping[str, int] = field(default_factory=dict)

    def encode(self) -> bytes:
        names = scala_immutable_map_order(list(self.features))
        if self.version == 1:
            features: dict[str, Any] = {
                n: {"max_version_level": self.features[n], "min_version_level": self.features[n]} for n in names
            }
        else:
            features = {n: {"max_version_level": self.features[n]} for n in names}
        values = {"version": self.version, "status": self.status, "features": features}
        order = scala_mutable_hashmap_order(list(values), initial=list(values))
        return dumps({k: values[k] for k in order})

    @classmethod
    def decode(cls, path: str, data: bytes | None) -> "FeatureZnode":
        obj = parse_object(path, data)
        version = check_version(path, obj, (1, 2))
        status = get_int(path, obj, "status")
        if status not in (FEATURE_DISABLED, FEATURE_ENABLED):
            raise ZnodeFormatError(path, f"unknown feature status {status}")
        features = {}
        for name, levels in get_object(path, obj, "features", required=False).items():
            if not isinstance(levels, dict):
                raise ZnodeFormatError(path, f"feature {name!r} must be an object")
            features[name] = as_int(path, f"feature {name!r} max_version_level", levels.get("max_version_level"))
        return cls(version, status, features)


@dataclass(frozen=True)
class ClusterIdZnode:
    """Created once by the first broker; the id is a Kafka Uuid string."""

    id: str

    def encode(self) -> bytes:
        return dumps({"version": "1", "id": self.id})

    @classmethod
    def decode(cls, path: str, data: bytes | None) -> "ClusterIdZnode":
        obj = parse_object(path, data)
        version = obj.get("version")
        if version != "1":
            raise ZnodeFormatError(path, f'unsupported version {version!r} (supported: "1")')
        cluster_id = get_str(path, obj, "id")
        if not cluster_id:
            raise ZnodeFormatError(path, "'id' must not be empty")
        return cls(cluster_id)

    @property
    def is_uuid(self) -> bool:
        """Kafka generates Uuids, but an operator may have created the node with any string."""
        return is_valid_uuid(self.id)


@dataclass(frozen=True)
class ProducerIdBlock:
    broker: int
    block_start: int
    block_end: int

    def encode(self) -> bytes:
        return dumps(
            {
                "version": 1,
                "broker": self.broker,
                "block_start": str(self.block_start),
                "block_end": str(self.block_end),
            }
        )

    @classmethod
    def decode(cls, path: str, data: bytes | None) -> "ProducerIdBlock":
        obj = parse_object(path, data)
        check_version(path, obj, (1,))
        start = get_long_str(path, obj, "block_start", minimum=0)
        end = get_long_str(path, obj, "block_end", minimum=start)
        return cls(get_int(path, obj, "broker", minimum=0), start, end)

    def next(self, broker: int) -> "ProducerIdBlock":
        """The block after this one, as ZkProducerIdManager claims it."""
        return ProducerIdBlock(broker, self.block_end + 1, self.block_end + PRODUCER_ID_BLOCK_SIZE)


_MIGRATION_KEYS = (
    "version",
    "kraft_controller_id",
    "kraft_controller_epoch",
    "kraft_metadata_offset",
    "kraft_metadata_epoch",
)


@dataclass(frozen=True)
class MigrationZnode:
    """KIP-866 migration state (3.4+); read so that a cluster in migration is recognised, never written."""

    kraft_controller_id: int
    kraft_controller_epoch: int
    kraft_metadata_offset: int
    kraft_metadata_epoch: int

    def encode(self) -> bytes:
        values = {
            "version": 0,
            "kraft_controller_id": self.kraft_controller_id,
            "kraft_controller_epoch": self.kraft_controller_epoch,
            "kraft_metadata_offset": self.kraft_metadata_offset,
            "kraft_metadata_epoch": self.kraft_metadata_epoch,
        }
        return dumps({k: values[k] for k in scala_immutable_map_order(list(_MIGRATION_KEYS))})

    @classmethod
    def decode(cls, path: str, data: bytes | None) -> "MigrationZnode":
        obj = parse_object(path, data)
        check_version(path, obj, (0,))
        offset = obj.get("kraft_metadata_offset")
        if isinstance(offset, bool) or not isinstance(offset, int):
            raise ZnodeFormatError(path, "'kraft_metadata_offset' must be an integer")
        if not -(2**63) <= offset < 2**63:
            raise ZnodeFormatError(path, f"'kraft_metadata_offset' is out of the 64-bit integer range: {offset}")
        return cls(
            get_int(path, obj, "kraft_controller_id"),
            get_int(path, obj, "kraft_controller_epoch"),
            offset,
            get_int(path, obj, "kraft_metadata_epoch"),
        )
