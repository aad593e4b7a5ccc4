"""``--zk-tls-config-file`` (migrate/connect.py), Kafka's flag for its ZooKeeper tools: what the file turns into
before any connection (the connections themselves: tests/e2e/test_tls_stack.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.devstack import certs
from migrate.connect import zk_tls


def test_no_file_and_a_file_without_client_enable_mean_plaintext(tmp_path: Path) -> None:
    assert zk_tls(None) is None
    props = tmp_path / "zk.properties"
    props.write_text("zookeeper.ssl.truststore.location=/nowhere.pem\n")  # not enabled: not even read, as Kafka
    assert zk_tls(str(props)) is None


def test_an_enabled_file_gives_kazoo_files_that_exist(tmp_path: Path) -> None:
    ca = certs.make_ca()
    files = certs.write_pem(tmp_path, "tool", certs.issue(ca, "CN=tool"), ca)
    props = tmp_path / "zk.properties"
    props.write_text(
        "zookeeper.ssl.client.enable=true\n"
        f"zookeeper.ssl.keystore.type=PEM\nzookeeper.ssl.keystore.location={files.keystore}\n"
        f"zookeeper.ssl.truststore.type=PEM\nzookeeper.ssl.truststore.location={files.ca}\n"
        "zookeeper.ssl.endpoint.identification.algorithm=\n"
    )
    tls = zk_tls(str(props))
    assert tls is not None and not tls.check_hostname
    assert tls.ca and tls.certfile and tls.keyfile and tls.keyfile_password
    assert all(Path(p).is_file() for p in (tls.ca, tls.certfile, tls.keyfile))


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (None, "No such file or directory"),
        (
            "zookeeper.ssl.client.enable=true\nzookeeper.ssl.truststore.type=PEM\n"
            "zookeeper.ssl.truststore.location=/nowhere.pem\n",
            "zookeeper.ssl.truststore.location",
        ),
        (
            "zookeeper.ssl.client.enable=true\nzookeeper.ssl.truststore.type=JKS\n"
            "zookeeper.ssl.truststore.location=/x.jks\n",
            "zookeeper.ssl.truststore",
        ),
    ],
)
def test_a_file_it_cannot_use_is_named(tmp_path: Path, text: str | None, words: str) -> None:
    props = tmp_path / "zk.properties"
    if text is not None:
        props.write_text(text)
    with pytest.raises(ValueError) as caught:
        zk_tls(str(props))
    message = str(caught.value)
    assert message.startswith(f"--zk-tls-config-file {props}") and words in message, message
