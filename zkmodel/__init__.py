"""Kafka's ZooKeeper metadata layout as pure data: znode payloads, paths, naming, placement and versions.

No I/O lives here and nothing imports kazoo, so every rule can be unit-tested and reused by the
controller, the operator tooling and the Spark pipeline alike.
"""

from zkmodel.errors import ZnodeFormatError

__all__ = ["ZnodeFormatError"]
