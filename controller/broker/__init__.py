"""The broker side of a node: the metadata cache built from ZooKeeper watches, the replica model (catch-up,
throttles, ISR growth by AlterPartition or the legacy znode write), the KIP-590 forwarding channel to the
active controller, and controlled shutdown (:mod:`.controlled_shutdown`, asking the controller afresh each
attempt).

Imports ``controller.zk``, ``controller.store``, ``controller.security``, the wire layer's codecs and
client connection, and ``zkmodel``; never ``controller.active``.
"""
