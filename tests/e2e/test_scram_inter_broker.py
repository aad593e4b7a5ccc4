"""Brokers that talk to each other over SASL/SCRAM: until the brokers' own credential exists they cannot
forward (the client gets UNKNOWN_SERVER_ERROR, as for any failed authentication to the controller); once
``bridgekeeper zk scram`` has written it, forwarded writes go through."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient
from kazoo.client import KazooClient

from controller.devstack.stack import Stack
from controller.logtags import UNEXPECTED
from testing.stack import controller_id, listener_ports, metric_sum, metrics_url
from tests.integration.cluster import wait_for

pytestmark = pytest.mark.e2e

JAAS = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="b-secret";'
OVERRIDES = {
    "listeners": "INTERNAL://127.0.0.1:0,EXTERNAL://127.0.0.1:0",
    "listener.security.protocol.map": "INTERNAL:SASL_PLAINTEXT,EXTERNAL:PLAINTEXT",
    "inter.broker.listener.name": "INTERNAL",
    "sasl.enabled.mechanisms": "SCRAM-SHA-256",
    "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-256",
    "listener.name.internal.scram-sha-256.sasl.jaas.config": JAAS,
    "inter.broker.protocol.version": "3.4-IV0",
}


def alter(port: int, broker_id: int, value: str) -> str:
    admin = KafkaAdminClient(bootstrap_servers=f"127.0.0.1:{port}", request_timeout_ms=30000)
    try:
        result: Any = admin.alter_configs(
            [
                ConfigResource(
                    ConfigResourceType.BROKER, str(broker_id), configs={"leader.replication.throttled.rate": value}
                )
            ],
            raise_on_unknown=False,
        )
        return str(result["broker"][str(broker_id)])
    finally:
        admin.close()


def test_forwarding_over_scram_after_bootstrapping_the_broker_credential(tmp_path: Path) -> None:
    stack = Stack(nodes=2, data_dir=tmp_path / "s", overrides=OVERRIDES)
    stack.start()
    zk = KazooClient(hosts=stack.zookeeper)
    try:
        zk.start(timeout=20)
        wait_for(lambda: controller_id(zk) is not None, 60, "a controller")
        cid = controller_id(zk)
        broker = next(n for n in stack.nodes if n.broker_id != cid)
        port = listener_ports(broker.ready)["EXTERNAL"]
        url = metrics_url(broker.ready)

        # No credential for User:broker yet: the forwarding broker cannot log in to the controller.
        assert alter(port, broker.broker_id, "1000").startswith("[Error -1]")
        assert zk.exists(f"/config/brokers/{broker.broker_id}") is None

        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "controller.cli",
                "zk",
                "scram",
                "--zookeeper",
                stack.zookeeper,
                "--user",
                "broker",
                "--password",
                "b-secret",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        before = metric_sum(url, "bridgekeeper_forwarding_client_requests_total")
        assert alter(port, broker.broker_id, "2000") == "OK"
        assert metric_sum(url, "bridgekeeper_forwarding_client_requests_total") == before + 1
        assert b'"leader.replication.throttled.rate":"2000"' in zk.get(f"/config/brokers/{broker.broker_id}")[0]
    finally:
        with contextlib.suppress(Exception):
            zk.stop()
            zk.close()
        stack.stop()
        for node in stack.nodes:
            assert UNEXPECTED not in node.log_path.read_text(errors="replace"), node.log_tail()
