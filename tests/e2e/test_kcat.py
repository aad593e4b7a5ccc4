"""kcat -L (Debian's kcat, librdkafka 2.0.2, non-flexible Metadata v4) against the stack."""

from __future__ import annotations

import json
import shutil
import subprocess
import time

import pytest
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from tests.e2e.conftest import RunningStack

pytestmark = pytest.mark.e2e


def _listing(kcat: str, broker: str, *args: str, shows: str) -> str:
    """kcat -L's output once it shows ``shows``: a node learns of a topic another node's controller created a
    moment after the CreateTopics answer (as Kafka's brokers do, from the controller's UpdateMetadata)."""
    deadline = time.monotonic() + 30
    while True:
        out = subprocess.run([kcat, "-b", broker, "-L", *args], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        if shows in out.stdout or time.monotonic() > deadline:
            return out.stdout
        time.sleep(0.2)


def test_kcat_lists_brokers_and_topics(stack: RunningStack) -> None:
    kcat = shutil.which("kcat") or shutil.which("kafkacat")
    assert kcat, "kcat is installed by ./dev (apt-get install kcat)"
    admin = AdminClient({"bootstrap.servers": stack.bootstrap})  # keep a reference until the future resolves
    admin.create_topics([NewTopic("kcat-t", 3, 2)])["kcat-t"].result(30)
    listing = json.loads(_listing(kcat, stack.brokers[0], "-J", shows='"kcat-t"'))
    assert sorted(b["id"] for b in listing["brokers"]) == [1, 2, 3]
    topics = {t["topic"]: t for t in listing["topics"]}
    assert len(topics["kcat-t"]["partitions"]) == 3
    assert all(len(p["replicas"]) == 2 for p in topics["kcat-t"]["partitions"])
    text = _listing(kcat, stack.brokers[1], shows='topic "kcat-t"')
    assert "3 brokers:" in text and 'topic "kcat-t" with 3 partitions' in text
