"""``bridgekeeper zk scram``: SCRAM credentials written straight to ZooKeeper (kafka-configs --zookeeper), so a
cluster whose inter-broker listener uses SCRAM can be bootstrapped before any node runs."""

from __future__ import annotations

import subprocess
import sys

import orjson
import pytest
from kazoo.client import KazooClient

from controller.security.scram import ScramClient, ScramServer, credential_from_string
from controller.store.scram import ScramAdminError, alter_scram
from controller.zk.session import ZkSession
from zkmodel import paths

pytestmark = pytest.mark.integration


def config(zk: KazooClient, user: str) -> dict[str, str]:
    return dict(orjson.loads(zk.get(paths.entity_config("users", user))[0])["config"])


def logs_in(stored: str, mechanism: str, user: str, password: str) -> bool:
    server = ScramServer(mechanism, lambda name: credential_from_string(stored) if name == user else None)
    client = ScramClient(mechanism, user, password)
    try:
        server_final = server.evaluate(client.final(server.evaluate(client.first())))
        client.verify(server_final)
    except Exception:
        return False
    return server.complete


def test_cli_bootstraps_a_credential_that_authenticates(zk: KazooClient, zk_hosts: str) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "controller.cli",
            "zk",
            "scram",
            "--zookeeper",
            zk_hosts,
            "--user",
            "broker",
            "--password",
            "broker-secret",
            "--iterations",
            "8192",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "updated SCRAM-SHA-256 credential of user 'broker'" in done.stdout
    stored = config(zk, "broker")["SCRAM-SHA-256"]
    assert credential_from_string(stored).iterations == 8192
    assert logs_in(stored, "SCRAM-SHA-256", "broker", "broker-secret")
    assert not logs_in(stored, "SCRAM-SHA-256", "broker", "wrong")
    changes = [zk.get(f"{paths.CONFIG_CHANGES}/{c}")[0] for c in zk.get_children(paths.CONFIG_CHANGES)]
    assert [orjson.loads(c)["entity_path"] for c in changes] == ["users/broker"]


def test_quotas_survive_and_delete_removes_only_the_credential(zk: KazooClient, zk_hosts: str) -> None:
    zk.create(
        paths.entity_config("users", "alice"), b'{"version":1,"config":{"producer_byte_rate":"1024"}}', makepath=True
    )
    zk.create(paths.CONTROLLER, b'{"version":2,"brokerid":1,"timestamp":"1","kraftControllerEpoch":-1}')
    session = ZkSession(zk_hosts, name="scram-admin-test")
    session.start()
    try:
        alter_scram(session, "alice", "SCRAM-SHA-512", password="a-pw")
        assert set(config(zk, "alice")) == {"producer_byte_rate", "SCRAM-SHA-512"}
        assert alter_scram(session, "alice", "SCRAM-SHA-512", password=None).startswith("deleted")
        assert config(zk, "alice") == {"producer_byte_rate": "1024"}
        with pytest.raises(ScramAdminError, match="user 'alice' has no SCRAM-SHA-512 credential"):
            alter_scram(session, "alice", "SCRAM-SHA-512", password=None)
        with pytest.raises(ScramAdminError, match="unknown SCRAM mechanism 'SCRAM-SHA-1'"):
            alter_scram(session, "alice", "SCRAM-SHA-1", password="x")
        with pytest.raises(ScramAdminError, match="Too few iterations"):
            alter_scram(session, "alice", "SCRAM-SHA-256", password="x", iterations=100)
        # A user with nothing left loses its znode, as AdminZkClient.tryCleanQuotaNodes does.
        alter_scram(session, "bob", "SCRAM-SHA-256", password="b-pw")
        alter_scram(session, "bob", "SCRAM-SHA-256", password=None)
        assert zk.exists(paths.entity_config("users", "bob")) is None
    finally:
        session.close()


def test_cli_reports_bad_input_by_name(zk_hosts: str) -> None:
    """An unknown mechanism is a usage error (2), refused by the parser; a credential that is not there to
    delete is a problem found on the cluster (1)."""

    def scram(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "controller.cli", "zk", "scram", "--zookeeper", zk_hosts, "--user", "x", *argv],
            capture_output=True,
            text=True,
            timeout=60,
        )

    unknown = scram("--password", "p", "--mechanism", "PLAIN")
    assert unknown.returncode == 2 and "invalid choice: 'PLAIN'" in unknown.stderr
    absent = scram("--delete", "--mechanism", "SCRAM-SHA-512")
    assert absent.returncode == 1
    assert absent.stderr.strip() == "error: user 'x' has no SCRAM-SHA-512 credential"
