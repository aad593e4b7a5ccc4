"""inter.broker.protocol.version as Kafka 3.9 defines it (``MetadataVersion``), plus the gates we key on it.

Most ZK-visible behaviour (which znodes brokers write, and in what shape) is gated on the IBP rather than the
code release, so writers here ask these predicates instead of comparing version strings.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from zkmodel.java import java_trim


@dataclass(frozen=True, order=False)
class MetadataVersion:
    """One entry of Kafka's ``MetadataVersion`` enum.

    Ordered by declaration position (``ordinal``), never by the text: Kafka treats a later enum constant
    as newer, and "3.10" < "3.9" lexicographically would break that.
    """

    release: str
    sub_version: str
    feature_level: int
    is_production: bool
    did_metadata_change: bool = field(repr=False)
    ordinal: int = field(repr=False)
    name: str = field(repr=False)

    @property
    def version(self) -> str:
        """Kafka's ``version()``: the exact string a broker config or a log line carries."""
        return f"{self.release}-{self.sub_version}" if self.sub_version else self.release

    @property
    def is_kraft_supported(self) -> bool:
        return self.feature_level > 0

    def __str__(self) -> str:
        return self.version

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, MetadataVersion):
            return NotImplemented
        return self.ordinal < other.ordinal

    def __le__(self, other: object) -> bool:
        if not isinstance(other, MetadataVersion):
            return NotImplemented
        return self.ordinal <= other.ordinal

    def __gt__(self, other: object) -> bool:
        if not isinstance(other, MetadataVersion):
            return NotImplemented
        return self.ordinal > other.ordinal

    def __ge__(self, other: object) -> bool:
        if not isinstance(other, MetadataVersion):
            return NotImplemented
        return self.ordinal >= other.ordinal


_declared: list[MetadataVersion] = []


def _declare(
    release: str,
    sub_version: str,
    feature_level: int = -1,
    *,
    did_metadata_change: bool = True,
    production: bool = True,
) -> MetadataVersion:
    name = "IBP_" + release.replace(".", "_") + (f"_{sub_version}" if sub_version else "")
    mv = MetadataVersion(
        release=release,
        sub_version=sub_version,
        feature_level=feature_level,
        is_production=production,
        did_metadata_change=did_metadata_change,
        ordinal=len(_declared),
        name=name,
    )
    _declared.append(mv)
    return mv


# Declaration order is Kafka's enum order at 3.9.0-rc3; it *is* the version order.
IBP_0_8_0 = _declare("0.8.0", "")
IBP_0_8_1 = _declare("0.8.1", "")
IBP_0_8_2 = _declare("0.8.2", "")
IBP_0_9_0 = _declare("0.9.0", "")
IBP_0_10_0_IV0 = _declare("0.10.0", "IV0")
IBP_0_10_0_IV1 = _declare("0.10.0", "IV1")
IBP_0_10_1_IV0 = _declare("0.10.1", "IV0")
IBP_0_10_1_IV1 = _declare("0.10.1", "IV1")
IBP_0_10_1_IV2 = _declare("0.10.1", "IV2")
IBP_0_10_2_IV0 = _declare("0.10.2", "IV0")
IBP_0_11_0_IV0 = _declare("0.11.0", "IV0")
IBP_0_11_0_IV1 = _declare("0.11.0", "IV1")
IBP_0_11_0_IV2 = _declare("0.11.0", "IV2")
IBP_1_0_IV0 = _declare("1.0", "IV0")
IBP_1_1_IV0 = _declare("1.1", "IV0")
IBP_2_0_IV0 = _declare("2.0", "IV0")
IBP_2_0_IV1 = _declare("2.0", "IV1")
IBP_2_1_IV0 = _declare("2.1", "IV0")
IBP_2_1_IV1 = _declare("2.1", "IV1")
IBP_2_1_IV2 = _declare("2.1", "IV2")
IBP_2_2_IV0 = _declare("2.2", "IV0")
IBP_2_2_IV1 = _declare("2.2", "IV1")
IBP_2_3_IV0 = _declare("2.3", "IV0")
IBP_2_3_IV1 = _declare("2.3", "IV1")
IBP_2_4_IV0 = _declare("2.4", "IV0")
IBP_2_4_IV1 = _declare("2.4", "IV1")
IBP_2_5_IV0 = _declare("2.5", "IV0")
IBP_2_6_IV0 = _declare("2.6", "IV0")
IBP_2_7_IV0 = _declare("2.7", "IV0")
IBP_2_7_IV1 = _declare("2.7", "IV1")
IBP_2_7_IV2 = _declare("2.7", "IV2")
IBP_2_8_IV0 = _declare("2.8", "IV0")
IBP_2_8_IV1 = _declare("2.8", "IV1")
IBP_3_0_IV0 = _declare("3.0", "IV0")
IBP_3_0_IV1 = _declare("3.0", "IV1", 1, did_metadata_change=True)
IBP_3_1_IV0 = _declare("3.1", "IV0", 2, did_metadata_change=False)
IBP_3_2_IV0 = _declare("3.2", "IV0", 3, did_metadata_change=True)
IBP_3_3_IV0 = _declare("3.3", "IV0", 4, did_metadata_change=False)
IBP_3_3_IV1 = _declare("3.3", "IV1", 5, did_metadata_change=True)
IBP_3_3_IV2 = _declare("3.3", "IV2", 6, did_metadata_change=True)
IBP_3_3_IV3 = _declare("3.3", "IV3", 7, did_metadata_change=True)
IBP_3_4_IV0 = _declare("3.4", "IV0", 8, did_metadata_change=True)
IBP_3_5_IV0 = _declare("3.5", "IV0", 9, did_metadata_change=False)
IBP_3_5_IV1 = _declare("3.5", "IV1", 10, did_metadata_change=False)
IBP_3_5_IV2 = _declare("3.5", "IV2", 11, did_metadata_change=True)
IBP_3_6_IV0 = _declare("3.6", "IV0", 12, did_metadata_change=False)
IBP_3_6_IV1 = _declare("3.6", "IV1", 13, did_metadata_change=True)
IBP_3_6_IV2 = _declare("3.6", "IV2", 14, did_metadata_change=True)
IBP_3_7_IV0 = _declare("3.7", "IV0", 15, did_metadata_change=True)
IBP_3_7_IV1 = _declare("3.7", "IV1", 16, did_metadata_change=False)
IBP_3_7_IV2 = _declare("3.7", "IV2", 17, did_metadata_change=True)
IBP_3_7_IV3 = _declare("3.7", "IV3", 18, did_metadata_change=False)
IBP_3_7_IV4 = _declare("3.7", "IV4", 19, did_metadata_change=False)
IBP_3_8_IV0 = _declare("3.8", "IV0", 20, did_metadata_change=False)
IBP_3_9_IV0 = _declare("3.9", "IV0", 21, did_metadata_change=False)
# Unstable in 3.9: an exact "4.0-IV0" string still parses (as in Kafka), but bare "4.0" does not.
IBP_4_0_IV0 = _declare("4.0", "IV0", 22, did_metadata_change=True, production=False)
IBP_4_0_IV1 = _declare("4.0", "IV1", 23, did_metadata_change=False, production=False)

ALL_VERSIONS: tuple[MetadataVersion, ...] = tuple(_declared)
PRODUCTION_VERSIONS: tuple[MetadataVersion, ...] = tuple(v for v in ALL_VERSIONS if v.is_production)
LATEST_PRODUCTION = IBP_3_9_IV0
"""Kafka 3.9's default inter.broker.protocol.version."""


def _build_lookup() -> dict[str, MetadataVersion]:
    # Exact strings for every version first, then each release's newest *production* IV wins its bare key,
    # so a release with only unstable IVs has no bare key at all.
    lookup = {v.version: v for v in ALL_VERSIONS}
    lookup.update({v.release: v for v in PRODUCTION_VERSIONS})
    return lookup


_LOOKUP = _build_lookup()


def _java_split_on_dot(text: str) -> list[str]:
    """Java's ``String.split``: unlike str.split it drops trailing empty pieces ("2.7." has 2 pieces)."""
    if not text:
        return [text]
    pieces = text.split(".")
    while pieces and not pieces[-1]:
        pieces.pop()
    return pieces


def parse_ibp(text: str) -> MetadataVersion:
    """Kafka's ``MetadataVersion.fromVersionString``, byte for byte.

    Pre-1.0 strings keep three dotted pieces and later ones two, so "0.10.0.1" and "2.7.1" both mean their
    release's newest production IV, and junk after the kept pieces is ignored ("1.0.0-IV0" is 1.0-IV0).
    No trimming happens here; see :func:`parse_ibp_config` for the config-file path.
    """
    pieces = _java_split_on_dot(text)
    keep = 3 if text.startswith("0.") else 2
    key = text if keep >= len(pieces) else ".".join(pieces[:keep])
    try:
        return _LOOKUP[key]
    except KeyError:
        raise ValueError(f"Version {text} is not a valid version") from None


def parse_ibp_config(value: str) -> MetadataVersion:
    """Parse the value as a broker's properties file delivers it: ConfigDef trims STRING configs first."""
    return parse_ibp(java_trim(value))


# --- gates ------------------------------------------------------------------------------------------------


def broker_znode_version(ibp: MetadataVersion) -> int:
    """JSON version of /brokers/ids/<id> (ZkData ``BrokerInfo.apply``).

    v2 below 0.10.0-IV1 because 0.9.0.0 brokers and old clients break on anything newer (KAFKA-3100).
    """
    if ibp >= IBP_2_7_IV0:
        return 5
    if ibp >= IBP_0_10_0_IV1:
        return 4
    return 2


def feature_versioning_enabled(ibp: MetadataVersion) -> bool:
    """KIP-584 (``isFeatureVersioningSupported``): the controller writes /feature Enabled, else Disabled."""
    return ibp >= IBP_2_7_IV0


def feature_znode_version(ibp: MetadataVersion) -> int:
    """/feature JSON version: v2 dropped ``min_version_level`` (KIP-778; ZkData ``FeatureZNode.apply``)."""
    return 2 if ibp >= IBP_3_3_IV0 else 1


def uses_topic_ids(ibp: MetadataVersion) -> bool:
    """``isTopicIdsSupported`` (KafkaConfig.usesTopicId in ZK mode): topic znodes carry ``topic_id`` and the
    controller backfills missing ones."""
    return ibp >= IBP_2_8_IV0


def controller_znode_version(ibp: MetadataVersion) -> int:
    """JSON version this project writes to /controller.

    Kafka ties this to the code release, not the IBP: 3.3 writes v1 and every 3.4+ build (3.9 included)
    writes v2 with ``kraftControllerEpoch`` at any IBP (ZkData ``ControllerZNode.encode``). We can only be
    one build, so we key it on IBP 3.4-IV0: a cluster still pinned below 3.4 gets the shape its own
    controllers wrote. Every reader needs only ``brokerid``, so both shapes are safe either way.
    """
    return 2 if ibp >= IBP_3_4_IV0 else 1


def zk_migration_supported(ibp: MetadataVersion) -> bool:
    """``isMigrationSupported``: KafkaConfig refuses zookeeper.metadata.migration.enable below 3.4-IV0."""
    return ibp >= IBP_3_4_IV0
