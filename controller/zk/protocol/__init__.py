"""ZooKeeper wire records that kazoo lacks, sent through kazoo's own connection.

kazoo's connection sends any object with ``type``, ``serialize()`` and ``deserialize(buffer, offset)``
(``kazoo.protocol.connection.ConnectionHandler._submit`` / ``_read_response``); the records here are such
objects (:class:`Record`), built from ZooKeeper's jute definitions
(``zookeeper-jute/src/main/resources/zookeeper.jute``).

One module per request family: :mod:`.multi` (the write multi, opcode 14, creates as create2),
:mod:`.multi_read` (multiRead, opcode 22), :mod:`.watches` (SetWatches, opcode 101, and removeWatches, opcode 18,
with the watcher slot kazoo's table holds); what they share is in :mod:`.jute` (opcodes, structs, encoders) and
:mod:`.paths` (chroots). Records and codecs only: sending them, batching and retrying live in ``controller.zk``
(:mod:`controller.zk.send` and its callers), so nothing here holds a client, a connection or state between calls.
"""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["Record"]


class Record(Protocol):
    """What kazoo's connection sends: ``type`` goes into the request header, ``serialize()`` is the body, and
    the reply's body (from ``offset``) becomes the async result's value through ``deserialize``."""

    @property
    def type(self) -> int: ...

    def serialize(self) -> bytes: ...

    def deserialize(self, buffer: bytes, offset: int) -> Any: ...
