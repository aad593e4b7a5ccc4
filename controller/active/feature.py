"""The ``/feature`` znode, which the active controller (re)writes on failover as Kafka's controller does.

Not fenced by the controller epoch (Kafka writes it outside the epoch multi too), hence this module sits
beside the election as the only other place in ``controller.active`` that writes through the session.
"""

from __future__ import annotations

from controller.zk.session import ZkSession
from zkmodel import ibp, paths
from zkmodel.cluster import FEATURE_DISABLED, FEATURE_ENABLED, FeatureZnode


def ensure_feature_znode(session: ZkSession, version: ibp.MetadataVersion) -> FeatureZnode:
    """KafkaController.enableFeatureVersioning / disableFeatureVersioning on failover (not fenced).

    IBP >= 2.7-IV0: absent -> create Enabled; Disabled -> rewrite Enabled with no features; Enabled -> leave.
    Below: write Disabled with empty features (create, or rewrite if it differs).
    """
    enabled = ibp.feature_versioning_enabled(version)
    znode_version = ibp.feature_znode_version(version)
    found = session.get(paths.FEATURE)
    if found is None:
        wanted = FeatureZnode(znode_version, FEATURE_ENABLED if enabled else FEATURE_DISABLED, {})
        if session.create_only(paths.FEATURE, wanted.encode()):
            return wanted
        found = session.get(paths.FEATURE)
        assert found is not None
    current = FeatureZnode.decode(paths.FEATURE, found[0])
    if enabled and current.status == FEATURE_ENABLED:
        return current
    wanted = FeatureZnode(znode_version, FEATURE_ENABLED if enabled else FEATURE_DISABLED, {})
    if current != wanted:
        session.set_if_version(paths.FEATURE, wanted.encode(), found[1].version)
    return wanted
