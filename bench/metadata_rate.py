"""Metadata requests/s for a 1,000-partition cluster from concurrent clients, and where the time goes.

Two servers run side by side in one process: one re-encodes every response, one serves the encoded
all-topics body cached per metadata snapshot. Rounds alternate between them; the median of each is
printed with the ratio. Also printed: the share of one uncached response's time spent in kio's encoder.

    .venv/bin/python -m bench.metadata_rate [--clients 4] [--seconds 3] [--rounds 3]
"""

from __future__ import annotations

import argparse
import io
import socket
import statistics
import struct
import threading
import time
from types import SimpleNamespace
from typing import Any

from kio.index import load_request_schema
from kio.serial import entity_writer
from kio.static.primitive import i16, i32

from controller.wire.apikeys import SUPPORTED
from controller.wire.codec import encode_body, parse_request
from controller.wire.handlers.apis import Apis, NodeView
from controller.wire.runtime import WireRuntime
from controller.wire.server import Connection
from zkmodel.brokers import BrokerRegistration, EndPoint


def snapshot(topics: int = 10, partitions: int = 100, brokers: int = 3) -> Any:
    regs = {
        b: SimpleNamespace(
            broker_id=b,
            registration=BrokerRegistration((EndPoint("PLAINTEXT", "127.0.0.1", 9000 + b, "PLAINTEXT"),), 1),
        )
        for b in range(1, brokers + 1)
    }
    tops = {}
    for t in range(topics):
        parts = {}
        for p in range(partitions):
            replicas = tuple(1 + (p + i) % brokers for i in range(3))
            parts[p] = SimpleNamespace(partition=p, replicas=replicas, isr=replicas, leader=replicas[0], leader_epoch=1)
        tops[f"topic-{t}"] = SimpleNamespace(name=f"topic-{t}", topic_id=None, is_internal=False, partitions=parts)
    return SimpleNamespace(brokers=regs, topics=tops, controller_id=1, version=1)


class Static:
    def __init__(self, snap: Any) -> None:
        self.snap = snap

    def snapshot(self) -> Any:
        return self.snap

    def wait_for(self, predicate: Any, timeout: float) -> Any:
        return self.snap


def metadata_request(version: int = 12) -> bytes:
    cls = load_request_schema(3, version)
    buf = io.BytesIO()
    header = cls.__header_schema__
    entity_writer(header)(
        buf, header(request_api_key=i16(3), request_api_version=i16(version), correlation_id=i32(1), client_id="bench")
    )
    body: Any = cls(topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False)  # type: ignore[call-arg]
    entity_writer(cls)(buf, body)
    payload = buf.getvalue()
    return struct.pack(">i", len(payload)) + payload


def client(port: int, frame: bytes, stop: threading.Event, counts: list[int], window: int = 8) -> None:
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(frame * window)
        done = 0
        pending = window
        buf = b""
        while pending:
            buf += s.recv(1 << 20)
            while len(buf) >= 4 and len(buf) >= 4 + struct.unpack(">i", buf[:4])[0]:
                buf = buf[4 + struct.unpack(">i", buf[:4])[0] :]
                done += 1
                pending -= 1
                if not stop.is_set():
                    s.sendall(frame)
                    pending += 1
        counts.append(done)


def measure(port: int, clients: int, seconds: float, frame: bytes) -> float:
    stop = threading.Event()
    counts: list[int] = []
    threads = [threading.Thread(target=client, args=(port, frame, stop, counts)) for _ in range(clients)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join()
    return sum(counts) / (time.perf_counter() - started)


def encode_share(apis: Apis, frame: bytes, n: int = 50) -> tuple[float, float]:
    request = parse_request(frame[4:], SUPPORTED)
    conn = Connection("PLAINTEXT", "127.0.0.1", 0)
    snap = apis.node.cache.snapshot()
    build = encode = 0.0
    for _ in range(n):
        t0 = time.perf_counter()
        response = apis._metadata_response(request, conn, snap, None)
        t1 = time.perf_counter()
        encode_body(request, response)
        t2 = time.perf_counter()
        build += t1 - t0
        encode += t2 - t1
    return build / n, encode / n


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    snap = snapshot()
    partitions = sum(len(t.partitions) for t in snap.topics.values())
    view = NodeView(1, "bench", Static(snap), None, 1, 1)
    plain, cached = Apis(view, cache_metadata=False), Apis(view, cache_metadata=True)
    runtimes = {}
    ports = {}
    for name, apis in (("uncached", plain), ("cached", cached)):
        runtimes[name] = WireRuntime(apis.handlers(), SUPPORTED, max_frame=1 << 24)
        ports[name] = runtimes[name].start([EndPoint("PLAINTEXT", "127.0.0.1", 0, "PLAINTEXT")])[0].port
    frame = metadata_request()
    rates: dict[str, list[float]] = {"uncached": [], "cached": []}
    try:
        for rnd in range(1, args.rounds + 1):
            order = ["uncached", "cached"] if rnd % 2 else ["cached", "uncached"]
            for name in order:
                rate = measure(ports[name], args.clients, args.seconds, frame)
                rates[name].append(rate)
                print(f"round {rnd}/{args.rounds} {name:>8}: {rate:8.1f} Metadata v12 req/s", flush=True)
    finally:
        for runtime in runtimes.values():
            runtime.stop()
    build, encode = encode_share(plain, frame)
    med = {k: statistics.median(v) for k, v in rates.items()}
    print()
    print(
        f"cluster: {len(snap.brokers)} brokers, {len(snap.topics)} topics, {partitions} partitions (RF 3); "
        f"{args.clients} clients, 8 requests in flight each"
    )
    print(
        f"uncached {med['uncached']:.1f} req/s, cached {med['cached']:.1f} req/s "
        f"-> cached/uncached {med['cached'] / med['uncached']:.1f}x"
    )
    print(
        f"one uncached response: build {build * 1000:.2f} ms + kio encode {encode * 1000:.2f} ms "
        f"-> encoding is {encode / (build + encode):.0%} of the work"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
