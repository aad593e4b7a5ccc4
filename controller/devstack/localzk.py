"""A real ZooKeeper server or ensemble on loopback, started from the Debian ``zookeeper`` package.

The local stack and the test harness both need a ZooKeeper they own end to end: free ports, a
throw-away data dir, a ready check that means "serving" (``srvr`` shows a Mode; ``ruok`` answers
earlier), logs to hand a failing test, and a stop that cannot leave a JVM behind.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from tenacity import Retrying, retry_if_exception_type, stop_after_attempt

JAVA_DIR = Path("/usr/share/java")
_LOG_JARS = ("slf4j-log4j12.jar", "log4j-1.2.jar")
#: Netty modules the jar's manifest leaves out but the Netty connection factory (TLS) needs; Debian's
#: libnetty-java, a dependency of the zookeeper package, ships them.
_NETTY_JARS = ("netty-codec.jar", "netty-resolver.jar")
_LOG4J = """\
log4j.rootLogger=INFO, FILE
log4j.appender.FILE=org.apache.log4j.FileAppender
log4j.appender.FILE.File={log}
log4j.appender.FILE.layout=org.apache.log4j.PatternLayout
log4j.appender.FILE.layout.ConversionPattern=%d{{ISO8601}} %-5p [%t:%C{{1}}@%L] - %m%n
"""


class ZooKeeperError(RuntimeError):
    """The server could not be found, started or reached."""


class _PortClash(ZooKeeperError):
    """Another process took a port we picked: pick again (a port is free only until someone binds it)."""


def classpath() -> str:
    """The Debian package's jar (its manifest pulls netty/jackson) plus a log4j binding for real logs."""
    main = JAVA_DIR / "zookeeper.jar"
    if not main.exists():
        raise ZooKeeperError(f"{main} not found: install the Debian package first (apt-get install -y zookeeper)")
    extra = [str(JAVA_DIR / j) for j in (*_LOG_JARS, *_NETTY_JARS) if (JAVA_DIR / j).exists()]
    return ":".join([str(main), *extra])


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def four_letter_word(host: str, port: int, word: str, timeout: float = 1.0) -> str:
    """Send a ZooKeeper four-letter command; empty string if the server does not answer."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.sendall(word.encode())
            chunks = []
            while chunk := s.recv(4096):
                chunks.append(chunk)
            return b"".join(chunks).decode(errors="replace")
    except OSError:
        return ""


def server_mode(host: str, port: int) -> str | None:
    """``standalone``, ``leader`` or ``follower`` once the server serves requests, else None."""
    for line in four_letter_word(host, port, "srvr").splitlines():
        if line.startswith("Mode:"):
            return line.split(":", 1)[1].strip()
    return None


def _die_with_parent() -> None:
    """Runs in the child: ask Linux to SIGTERM it if the Python process that started it dies."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    os.setsid()  # keep the terminal's Ctrl-C for the parent, which stops us in order


@dataclass
class Member:
    """One server of the ensemble and the process that runs it."""

    myid: int
    client_port: int
    peer_port: int
    election_port: int
    data_dir: Path
    log_path: Path
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    #: The TLS-only client port (``secureClientPort``) when the ensemble serves TLS, else 0.
    secure_port: int = 0

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None


@dataclass(frozen=True)
class ServerTls:
    """TLS for ZooKeeper's clients: a PEM keystore (key, then certificate chain) and a PEM truststore, read by
    ZooKeeper 3.8's PEM loader; ``client_auth`` is ZooKeeper's ``ssl.clientAuth`` (need, want or none)."""

    keystore: Path
    truststore: Path
    client_auth: str = "want"


class LocalZooKeeper:
    """A standalone server (``servers=1``) or a quorum ensemble on 127.0.0.1.

    Use as a context manager; ``stop()`` is idempotent and also runs if the owner forgets, because the
    children die with their parent.
    """

    def __init__(
        self,
        servers: int = 1,
        *,
        base_dir: Path | None = None,
        host: str = "127.0.0.1",
        client_port: int | None = None,
        tick_ms: int = 500,
        max_session_timeout_ms: int = 60_000,
        force_sync: bool = False,
        heap_mb: int = 256,
        java: str = "java",
        system_properties: Mapping[str, str] | None = None,
        tls: ServerTls | None = None,
    ) -> None:
        if servers < 1:
            raise ValueError("servers must be at least 1")
        if client_port is not None and servers != 1:
            raise ValueError("a fixed client port is only supported for a standalone server")
        self.servers = servers
        self.host = host
        self.tick_ms = tick_ms
        self.max_session_timeout_ms = max_session_timeout_ms
        self.force_sync = force_sync
        self.heap_mb = heap_mb
        #: Extra ``-D`` settings for the JVM (``zookeeper.snapCount``, ``zookeeper.snapshot.compression.method``).
        self.system_properties = dict(system_properties or {})
        self.java = shutil.which(java) or java
        self._owns_dir = base_dir is None
        self.base_dir = Path(tempfile.mkdtemp(prefix="bk-zk-")) if base_dir is None else base_dir
        self._fixed_port = client_port
        #: With TLS each member also serves a TLS-only ``secureClientPort`` (Netty); the plain client port stays
        #: for the four-letter words this harness checks readiness with.
        self.tls = tls
        self.members: list[Member] = []

    # -- lifecycle ---------------------------------------------------------------------------
    @property
    def connect_string(self) -> str:
        return ",".join(f"{self.host}:{m.client_port}" for m in self.members)

    @property
    def secure_connect_string(self) -> str:
        """The TLS-only client ports (``secureClientPort``); empty without ``tls``."""
        return ",".join(f"{self.host}:{m.secure_port}" for m in self.members if m.secure_port)

    @property
    def min_session_timeout_ms(self) -> int:
        return 2 * self.tick_ms

    def start(self, timeout: float = 30.0) -> LocalZooKeeper:
        """Start every member and wait until all of them serve. Retries once on a port clash."""
        cp = classpath()

        def attempt() -> LocalZooKeeper:
            self._layout()
            for m in self.members:
                self._launch(m, cp)
            try:
                self.wait_serving(timeout=timeout)
                return self
            except ZooKeeperError as exc:
                clash = any("Address already in use" in self._read_log(m) for m in self.members)
                self.stop(keep_dir=True)
                if clash and self._fixed_port is None:
                    raise _PortClash(str(exc)) from exc
                raise

        retrying = Retrying(retry=retry_if_exception_type(_PortClash), stop=stop_after_attempt(3), reraise=True)

        try:
            return retrying(attempt)
        except _PortClash as exc:
            raise ZooKeeperError(str(exc)) from None

    def wait_serving(self, timeout: float = 30.0, members: list[Member] | None = None) -> None:
        wanted = members if members is not None else [m for m in self.members if m.running]
        deadline = time.monotonic() + timeout
        pending = list(wanted)
        while pending:
            for m in list(pending):
                if m.process is not None and m.process.poll() is not None:
                    raise ZooKeeperError(
                        f"ZooKeeper server {m.myid} exited with code {m.process.returncode}; "
                        f"log {m.log_path}:\n{self.log_tail(m)}"
                    )
                if server_mode(self.host, m.client_port) is not None:
                    pending.remove(m)
            if not pending:
                return
            if time.monotonic() > deadline:
                ids = ", ".join(str(m.myid) for m in pending)
                raise ZooKeeperError(f"ZooKeeper server(s) {ids} not serving after {timeout:.0f}s")
            time.sleep(0.05)

    def stop(self, *, keep_dir: bool = False) -> None:
        for m in self.members:
            self._terminate(m)
        if self._owns_dir and not keep_dir:
            shutil.rmtree(self.base_dir, ignore_errors=True)

    def __enter__(self) -> LocalZooKeeper:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # -- fault injection for reliability tests ------------------------------------------------
    def kill(self, myid: int, sig: int = signal.SIGKILL) -> None:
        """Kill one member hard (default) or with another signal; waits for it to exit."""
        m = self.member(myid)
        if m.process is not None and m.process.poll() is None:
            m.process.send_signal(sig)
            m.process.wait(timeout=30)

    def restart(self, myid: int, timeout: float = 30.0) -> None:
        m = self.member(myid)
        self._terminate(m)
        self._launch(m, classpath())
        self.wait_serving(timeout, members=[m])

    def pause(self, myid: int) -> None:
        """Freeze a member (SIGSTOP): it keeps its sockets but answers nothing, like a GC pause."""
        self._signal(myid, signal.SIGSTOP)

    def resume(self, myid: int) -> None:
        self._signal(myid, signal.SIGCONT)

    def member(self, myid: int) -> Member:
        for m in self.members:
            if m.myid == myid:
                return m
        raise KeyError(f"no ZooKeeper member {myid}")

    def mode(self, myid: int) -> str | None:
        return server_mode(self.host, self.member(myid).client_port)

    def leader(self) -> Member | None:
        return next((m for m in self.members if m.running and self.mode(m.myid) == "leader"), None)

    def log_tail(self, member: Member | None = None, lines: int = 60) -> str:
        targets = [member] if member else self.members
        out = []
        for m in targets:
            tail = self._read_log(m).splitlines()[-lines:]
            out.append(f"--- ZooKeeper {m.myid} ({m.log_path}) ---\n" + "\n".join(tail))
        return "\n".join(out)

    # -- internals ---------------------------------------------------------------------------
    def _signal(self, myid: int, sig: int) -> None:
        m = self.member(myid)
        if m.process is not None and m.process.poll() is None:
            m.process.send_signal(sig)

    def _layout(self) -> None:
        self.members = []
        for i in range(1, self.servers + 1):
            port = self._fixed_port if self._fixed_port is not None else free_port(self.host)
            m = Member(
                myid=i,
                client_port=port,
                peer_port=free_port(self.host) if self.servers > 1 else 0,
                election_port=free_port(self.host) if self.servers > 1 else 0,
                data_dir=self.base_dir / f"zk{i}",
                log_path=self.base_dir / f"zk{i}" / "zookeeper.log",
                secure_port=free_port(self.host) if self.tls is not None else 0,
            )
            self.members.append(m)
        for m in self.members:
            m.data_dir.mkdir(parents=True, exist_ok=True)
            (m.data_dir / "zoo.cfg").write_text(self._config(m))
            (m.data_dir / "log4j.properties").write_text(_LOG4J.format(log=m.log_path))
            if self.servers > 1:
                (m.data_dir / "myid").write_text(f"{m.myid}\n")

    def _config(self, m: Member) -> str:
        lines = [
            f"tickTime={self.tick_ms}",
            "initLimit=20",
            "syncLimit=10",
            f"dataDir={m.data_dir / 'data'}",
            f"clientPort={m.client_port}",
            f"clientPortAddress={self.host}",
            "maxClientCnxns=0",
            f"minSessionTimeout={self.min_session_timeout_ms}",
            f"maxSessionTimeout={self.max_session_timeout_ms}",
            "admin.enableServer=false",
            "4lw.commands.whitelist=*",
            f"forceSync={'yes' if self.force_sync else 'no'}",
            "autopurge.purgeInterval=0",
        ]
        if self.servers > 1:
            lines += [f"server.{o.myid}={self.host}:{o.peer_port}:{o.election_port}" for o in self.members]
        if self.tls is not None:
            lines += [
                f"secureClientPort={m.secure_port}",
                f"secureClientPortAddress={self.host}",
                "serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory",
                f"ssl.keyStore.location={self.tls.keystore}",
                "ssl.keyStore.type=PEM",
                f"ssl.trustStore.location={self.tls.truststore}",
                "ssl.trustStore.type=PEM",
                f"ssl.clientAuth={self.tls.client_auth}",
            ]
        return "\n".join(lines) + "\n"

    def _launch(self, m: Member, cp: str) -> None:
        main = (
            "org.apache.zookeeper.server.quorum.QuorumPeerMain"
            if self.servers > 1
            else "org.apache.zookeeper.server.ZooKeeperServerMain"
        )
        cmd = [
            self.java,
            f"-Xmx{self.heap_mb}m",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            f"-Dlog4j.configuration=file:{m.data_dir / 'log4j.properties'}",
            "-Dzookeeper.jmx.log4j.disable=true",
            *(f"-D{k}={v}" for k, v in self.system_properties.items()),
            "-cp",
            cp,
            main,
            str(m.data_dir / "zoo.cfg"),
        ]
        (m.data_dir / "data").mkdir(exist_ok=True)
        if self.servers > 1:
            (m.data_dir / "data" / "myid").write_text(f"{m.myid}\n")
        out = m.log_path.with_suffix(".out").open("ab")
        m.process = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, preexec_fn=_die_with_parent
        )
        out.close()

    def _terminate(self, m: Member) -> None:
        p = m.process
        if p is None or p.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            p.send_signal(signal.SIGCONT)  # a paused JVM cannot handle SIGTERM
            p.terminate()
        try:
            p.wait(timeout=10)  # wait on the handle: PID 1 here reaps late, so kill -0 polling is slow
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=10)

    def _read_log(self, m: Member) -> str:
        text = []
        for path in (m.log_path, m.log_path.with_suffix(".out")):
            with contextlib.suppress(OSError):
                text.append(path.read_text(errors="replace"))
        return "\n".join(text)


@contextlib.contextmanager
def running(servers: int = 1, **kwargs: object) -> Iterator[LocalZooKeeper]:
    zk = LocalZooKeeper(servers, **kwargs)  # type: ignore[arg-type]
    zk.start()
    try:
        yield zk
    finally:
        zk.stop()
