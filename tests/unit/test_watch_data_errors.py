"""ZkSession.watch_data names a dropped connection as the ZooKeeper outage it is (ZkUnavailable), never a raw
kazoo exception: a CI failover run met ConnectionLoss there and the controller logged BK-UNEXPECTED."""

from __future__ import annotations

from typing import Any

import pytest
from kazoo.exceptions import ConnectionLoss, SessionExpiredError

from controller.zk import setwatches
from controller.zk.errors import SessionLost, ZkUnavailable
from controller.zk.session import ZkSession


@pytest.mark.parametrize(
    ("raised", "expected"), [(ConnectionLoss(), ZkUnavailable), (SessionExpiredError(), SessionLost)]
)
def test_watch_data_maps_kazoo_errors(monkeypatch: Any, raised: Exception, expected: type[Exception]) -> None:
    def fail(*_args: Any, **_kwargs: Any) -> int:
        raise raised

    monkeypatch.setattr(setwatches, "set_data_watches", fail)
    session = ZkSession("127.0.0.1:1", session_timeout_ms=6000)
    with pytest.raises(expected):
        session.watch_data(["/a"], lambda _e: None, 0)
