"""ZooKeeper wire records that kazoo lacks, sent through kazoo's own connection.

kazoo's connection sends any object with ``type``, ``serialize()`` and ``deserialize(buffer, offset)``
(``kazoo.protocol.connection.ConnectionHandler._submit`` / ``_read_response``); the records here are such
objects, built from ZooKeeper's jute definitions (``zookeeper-jute/src/main/resources/zookeeper.jute``).
"""
