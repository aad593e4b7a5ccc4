"""The local development stack: a ZooKeeper from the Debian package (standalone or an ensemble) and
``bridgekeeper up`` (ZooKeeper plus N node processes on loopback ports). Used by ``./dev up`` and by the
test harness; nothing in the node imports it.
"""
