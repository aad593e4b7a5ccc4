"""ZooKeeper's value types that callers of the session see: a znode's Stat, session states and watch
events. Re-exported from kazoo so that only ``controller.zk`` imports it (the import-linter contract)."""

from __future__ import annotations

from kazoo.interfaces import IAsyncResult
from kazoo.protocol.states import EventType, KazooState, WatchedEvent, ZnodeStat

__all__ = ["EventType", "IAsyncResult", "KazooState", "WatchedEvent", "ZnodeStat"]
