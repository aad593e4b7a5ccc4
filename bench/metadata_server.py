"""The processes :mod:`bench.metadata_scale` serves Metadata from. ``--serve`` loads the node's real broker
metadata cache from ZooKeeper and answers on two wire servers with the node's :class:`Apis`, one with
``cache_metadata=True`` (the encoded all-topics body kept per snapshot, what the node does) and one with
``cache_metadata=False`` (every answer built and encoded again): the node has no setting to switch its cache off.
The third variant is a real broker-only node process. Each runs in a process of its own, so that the clients do
not share its GIL, and is stopped by pid."""

from __future__ import annotations

import contextlib
import json
import logging
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench import nodescale
from bench.metadata_wire import metadata_frame
from controller.broker.metadata_cache import MetadataCache
from controller.store.registration import get_or_create_cluster_id
from controller.wire.apikeys import SUPPORTED
from controller.wire.codec import encode_body, parse_request
from controller.wire.handlers.apis import Apis, NodeView
from controller.wire.runtime import WireRuntime
from controller.wire.server import DEFAULT_MAX_FRAME, Connection
from controller.zk.session import ZkSession
from zkmodel.brokers import EndPoint

NODE_ID = 7  # the broker-only node: hosts nothing, so it has no replica work of its own


def serve(connect_string: str) -> int:
    """``--serve``: load the node's MetadataCache from ZooKeeper, serve it on two wire servers (cached and
    uncached Metadata), print one READY line (JSON) and serve until stdin closes (the bench is done or gone)."""
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("kazoo").setLevel(logging.WARNING)
    session = ZkSession(connect_string, session_timeout_ms=30_000)
    runtimes: list[WireRuntime] = []
    cache: MetadataCache | None = None
    try:
        session.start()
        cache = MetadataCache(session)
        started = time.perf_counter()
        snapshot = cache.start()
        load_s = time.perf_counter() - started
        view = NodeView(NODE_ID, get_or_create_cluster_id(session), cache, None, 1, 1)
        info: dict[str, Any] = {
            "load_s": load_s,
            "topics": len(snapshot.topics),
            "partitions": sum(len(t.partitions) for t in snapshot.topics.values()),
        }
        apis: dict[str, Apis] = {}
        for name, cached in (("cached", True), ("uncached", False)):
            apis[name] = Apis(view, cache_metadata=cached)
            runtime = WireRuntime(
                apis[name].handlers(), SUPPORTED, max_frame=DEFAULT_MAX_FRAME, raw_handlers=apis[name].raw_handlers()
            )
            runtimes.append(runtime)
            info[name] = runtime.start([EndPoint("PLAINTEXT", "127.0.0.1", 0, "PLAINTEXT")])[0].port
        info["build_s"], info["encode_s"] = build_and_encode(apis["uncached"], cache)
        print("READY " + json.dumps(info), flush=True)
        sys.stdin.read()
        return 0
    finally:
        for runtime in runtimes:
            runtime.stop()
        if cache is not None:
            cache.stop()
        session.close()


def build_and_encode(apis: Apis, cache: MetadataCache, n: int = 3) -> tuple[float, float]:
    """What one uncached all-topics answer costs the server, median of ``n``: building the response objects,
    then kio's encoding of them."""
    request = parse_request(metadata_frame(None)[4:], SUPPORTED)
    conn = Connection("PLAINTEXT", "127.0.0.1", 0)
    builds, encodes = [], []
    for _ in range(n):
        t0 = time.perf_counter()
        response = apis._metadata_response(request, conn, cache.snapshot(), None)
        t1 = time.perf_counter()
        encode_body(request, response)
        builds.append(t1 - t0)
        encodes.append(time.perf_counter() - t1)
    return sorted(builds)[n // 2], sorted(encodes)[n // 2]


class Child:
    """A child process that prints one ready line on stdout, with its stderr in a log file; :meth:`stop` ends
    it by pid: stdin closed first when it stops on that (``--serve``), then SIGTERM, then SIGKILL."""

    def __init__(self, argv: list[str], log_path: Path, ready: str, what: str, *, stops_on_eof: bool) -> None:
        self.log = log_path
        self.what = what
        self.stops_on_eof = stops_on_eof
        with log_path.open("w") as log_file:
            self.process = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log_file,
                text=True,
                start_new_session=True,  # the terminal's Ctrl-C is the bench's to handle; it stops us in order
            )
        try:
            assert self.process.stdout is not None
            self.line = self.process.stdout.readline()
            if not self.line.startswith(ready):
                raise RuntimeError(f"{what} did not start; its log ends:\n{self.log_tail()}")
        except BaseException:
            self.stop()
            raise

    @property
    def pid(self) -> int:
        return self.process.pid

    def log_tail(self, chars: int = 3000) -> str:
        return self.log.read_text(errors="replace")[-chars:]

    def stop(self) -> None:
        if self.process.stdin is not None and not self.process.stdin.closed:
            with contextlib.suppress(OSError):
                self.process.stdin.close()
            if self.stops_on_eof:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.process.wait(10)
        nodescale.terminate(self.process)


def start_server(connect_string: str, work: Path) -> tuple[Child, dict[str, Any]]:
    argv = [sys.executable, "-m", "bench.metadata_scale", "--serve", connect_string]
    server = Child(argv, work / "server.log", "READY ", "the cached/uncached Metadata server", stops_on_eof=True)
    return server, json.loads(server.line[len("READY ") :])


def start_node(connect_string: str, work: Path) -> tuple[Child, int]:
    """A broker-only node (as :class:`bench.nodescale.Node`, with no controlled shutdown: there is no
    controller to ask); returns it and its Kafka port."""
    config = work / f"node-{NODE_ID}.properties"
    config.write_text(
        f"broker.id={NODE_ID}\nzookeeper.connect={connect_string}\nlisteners=PLAINTEXT://127.0.0.1:0\n"
        "bridgekeeper.metrics.host=127.0.0.1\nbridgekeeper.metrics.port=0\nprocess.roles=broker\n"
        "zookeeper.session.timeout.ms=30000\ncontrolled.shutdown.enable=false\n"
        # Brokers 1-6 are fakes without a bridgekeeper marker (register_fake_brokers).
        "bridgekeeper.unsafe.join.chroot.with.kafka.brokers=true\n"
    )
    argv = [sys.executable, "-m", "controller.cli", "node", "--config", str(config)]
    node = Child(argv, work / f"node-{NODE_ID}.log", "NODE-READY", f"node {NODE_ID}", stops_on_eof=False)
    endpoints = node.line.split("endpoints=", 1)[1].split()[0]
    return node, int(endpoints.split(",")[0].rsplit(":", 1)[1])
