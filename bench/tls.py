"""TLS vs. plaintext on the same node in the same run: how many new connections a listener takes per
second (connect, handshake, one ApiVersions answered), and the latency of one admin request on an open
connection (IncrementalAlterConfigs on a topic: a ZooKeeper multi on the controller).

One node (broker and controller) with two listeners, PLAIN (PLAINTEXT) and SECURE (SSL, certificates from the
throw-away CA of ``bridgekeeper up --tls``; ``--mtls`` makes the client present one too). The two paths alternate
request by request and connection by connection, so drift hits both alike. Printed: connections/s and
p50/p99/mean of each path, and the ratios TLS/plaintext.

    .venv/bin/python -m bench.tls [--connections 300] [--requests 400] [--warmup 50] [--mtls]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from kio.schema.api_versions.v3.request import ApiVersionsRequest

from bench.stackbench import create_topics, percentile, timed_alter
from controller.devstack import certs
from controller.devstack.stack import Stack
from controller.security.tls import TlsSettings, pem_truststore
from controller.wire.client import KafkaClient
from testing.stack import listener_ports

TOPIC = "bench-tls"
VERSIONS = ApiVersionsRequest(client_software_name="bench", client_software_version="1")


def alter(client: KafkaClient, value: int) -> float:
    return timed_alter(client, TOPIC, value)


def connect_once(port: int, tls: object) -> float:
    started = time.perf_counter()
    client = KafkaClient("127.0.0.1", port, client_id="bench-connect", timeout=30, tls=tls)  # type: ignore[arg-type]
    try:
        if int(client.request(18, 3, VERSIONS).error_code) != 0:
            raise SystemExit("ApiVersions failed")
    finally:
        client.close()
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--connections", type=int, default=300, help="new connections per path (default 300)")
    parser.add_argument("--requests", type=int, default=400, help="admin requests per path (default 400)")
    parser.add_argument("--warmup", type=int, default=50, help="unmeasured requests and connections per path first")
    parser.add_argument("--mtls", action="store_true", help="the client presents a certificate (ssl.client.auth)")
    args = parser.parse_args(argv)
    data = Path(tempfile.mkdtemp(prefix="bk-bench-tls-"))
    ca = certs.make_ca()
    node = certs.write_pem(data / "pki", "node", certs.issue(ca, "CN=node"), ca)
    client_files = certs.write_pem(data / "pki", "client", certs.issue(ca, "CN=client"), ca)
    overrides = {
        "listeners": "PLAIN://127.0.0.1:0,SECURE://127.0.0.1:0",
        "listener.security.protocol.map": "PLAIN:PLAINTEXT,SECURE:SSL",
        "inter.broker.listener.name": "PLAIN",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(node.keystore),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(node.ca),
        "ssl.client.auth": "required" if args.mtls else "none",
    }
    stack = Stack(nodes=1, data_dir=data / "stack", overrides=overrides)
    print("starting one node with a PLAINTEXT and an SSL listener ...", file=sys.stderr)
    stack.start()
    try:
        ports = listener_ports(stack.nodes[0].ready)
        keystore = None
        if args.mtls:
            from controller.security.tls import pem_keystore

            pem = client_files.keystore.read_bytes()
            keystore = pem_keystore(pem, pem, None, chain_key="client", key_key="client", password_key="client")
        settings = TlsSettings(keystore, pem_truststore(node.ca.read_bytes(), key="ca"), hostname_verification=True)
        context = settings.client_context()
        plain = KafkaClient("127.0.0.1", ports["PLAIN"], client_id="bench-plain", timeout=30)
        secure = KafkaClient("127.0.0.1", ports["SECURE"], client_id="bench-tls", timeout=30, tls=context)
        create_topics(plain, [TOPIC], timeout_s=30)
        for i in range(args.warmup):
            alter(plain, i)
            alter(secure, i)
            connect_once(ports["PLAIN"], None)
            connect_once(ports["SECURE"], context)
        connects: dict[str, list[float]] = {"plaintext": [], "tls": []}
        for i in range(args.connections):
            connects["plaintext"].append(connect_once(ports["PLAIN"], None))
            connects["tls"].append(connect_once(ports["SECURE"], context))
            if i % 100 == 99:
                print(f"  connections {i + 1}/{args.connections} per path", file=sys.stderr)
        times: dict[str, list[float]] = {"plaintext": [], "tls": []}
        for i in range(args.requests):
            times["plaintext"].append(alter(plain, 10_000 + i))
            times["tls"].append(alter(secure, 20_000 + i))
            if i % 100 == 99:
                print(f"  requests {i + 1}/{args.requests} per path", file=sys.stderr)
        plain.close()
        secure.close()
        mode = "mutual TLS" if args.mtls else "server-authenticated TLS"
        print(f"one node, {mode} ({context.minimum_version.name}-{context.maximum_version.name}), paths alternating")
        print(f"{'path':<11}{'conn/s':>9}{'conn p50 ms':>13}{'req p50 ms':>12}{'req p99 ms':>12}{'req mean ms':>13}")
        for path in ("plaintext", "tls"):
            c, r = connects[path], times[path]
            print(
                f"{path:<11}{len(c) / sum(c):>9.0f}{percentile(c, 0.5) * 1000:>13.2f}"
                f"{percentile(r, 0.5) * 1000:>12.2f}{percentile(r, 0.99) * 1000:>12.2f}"
                f"{statistics.fmean(r) * 1000:>13.2f}"
            )
        rate = (len(connects["tls"]) / sum(connects["tls"])) / (len(connects["plaintext"]) / sum(connects["plaintext"]))
        p50 = percentile(times["tls"], 0.5) / percentile(times["plaintext"], 0.5)
        p99 = percentile(times["tls"], 0.99) / percentile(times["plaintext"], 0.99)
        print(f"ratio tls/plaintext: connection rate {rate:.2f}, request p50 {p50:.2f}, p99 {p99:.2f}")
    finally:
        stack.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
