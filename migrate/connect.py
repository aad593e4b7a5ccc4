"""Opening a ZooKeeper session for an operator command, with the one error line every command prints.

``--zk-tls-config-file`` is Kafka's flag for its ZooKeeper tools (ZkSecurityMigrator, kafka-configs,
zookeeper-shell): a properties file with the ``zookeeper.ssl.*`` keys a broker takes (``zookeeper.ssl.client.enable``,
keystore, truststore, ``zookeeper.ssl.endpoint.identification.algorithm``), read by the node's own reader. As in
Kafka, TLS is used only when the file sets ``zookeeper.ssl.client.enable=true``.
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from controller.zk.session import ZkSession
    from controller.zk.tls import ZkTls

TLS_FLAG = "--zk-tls-config-file"
_KEPT: list[object] = []  # TLS files of the sessions this process opened


def add_tls_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        TLS_FLAG,
        dest="zk_tls_config_file",
        metavar="FILE",
        default=None,
        help="properties with the zookeeper.ssl.* keys (zookeeper.ssl.client.enable=true, keystore, truststore), "
        "for a ZooKeeper reached over TLS",
    )


class _TlsFiles:
    """The checked TLS material written where kazoo can read it (it reads the files at every connection
    attempt), kept for the process's life and removed at exit: the tools are short-lived commands."""

    def __init__(self, config_file: str) -> None:
        from controller.config.properties import read_properties
        from controller.config.tls import TlsConfigError, zookeeper_tls_settings
        from controller.zk.tls import ZkTls

        props = read_properties(config_file)  # ValueError naming the file
        try:
            settings = zookeeper_tls_settings(props)
        except TlsConfigError as exc:
            raise ValueError(f"{config_file}: {exc}") from None
        self.tls: ZkTls | None = None
        if settings is None:  # zookeeper.ssl.client.enable is not true: plaintext, as Kafka's tools do
            return
        self._dir = tempfile.TemporaryDirectory(prefix="bk-zk-tls-")
        ca, cert, key, password = settings.write_client_files(self._dir.name)
        self.tls = ZkTls(ca, cert, key, password, check_hostname=settings.hostname_verification)


def zk_tls(config_file: str | None) -> ZkTls | None:
    """The TLS a ``--zk-tls-config-file`` asks for (None without a file, or when it does not enable TLS).
    Raises ValueError naming the flag, the file and the key when the file cannot be used."""
    if config_file is None:
        return None
    try:
        files = _TlsFiles(config_file)
    except ValueError as exc:
        raise ValueError(f"{TLS_FLAG} {exc}") from None
    _KEPT.append(files)
    return files.tls


def connect(
    zookeeper: str,
    *,
    name: str,
    timeout: float,
    auth: Sequence[tuple[str, str]] = (),
    read_only: bool = False,
    session_timeout_ms: int | None = None,
    tls_config_file: str | None = None,
) -> ZkSession:
    """A started session. Raises :class:`~controller.exits.UsageError` for a ``tls_config_file`` that cannot be
    used (read before any connection is opened) and :class:`~controller.exits.Unreachable` naming the address
    and the timeout when ZooKeeper does not answer."""
    from controller.exits import Unreachable, UsageError
    from controller.zk.errors import ZkUnavailable
    from controller.zk.session import ZkSession

    try:
        tls = zk_tls(tls_config_file)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    session = ZkSession(
        zookeeper,
        auth=auth,
        read_only=read_only,
        name=name,
        session_timeout_ms=18_000 if session_timeout_ms is None else session_timeout_ms,
        tls=tls,
    )
    try:
        session.start(timeout=timeout)
    except ZkUnavailable:  # start() has stopped the client
        raise Unreachable(f"cannot connect to ZooKeeper at {zookeeper} within {timeout:g} s") from None
    return session
