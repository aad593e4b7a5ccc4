"""``bridgekeeper rehearse --attach``: the rehearsal drives a cluster it did not start, through the shell commands
of an inventory file (here a small script per node with a pid file, as systemd or ssh would be), and reads
ZooKeeper's transaction log from the data directory the inventory names."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from controller.config.properties import dump_properties
from controller.devstack.localzk import LocalZooKeeper, free_port

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]
SCRIPT = """#!/bin/sh
# {broker_id}: start | restart | kill | freeze | thaw | stop, one node process tracked by a pid file
DIR={dir}
start() {{ cd {root} && setsid {python} -m controller.cli node --config "$DIR/server.properties" \\
           >>"$DIR/stdout.log" 2>>"$DIR/node.log" </dev/null & echo $! >"$DIR/pid"; }}
stop() {{ P=$(cat "$DIR/pid"); kill -CONT "$P" 2>/dev/null; kill -TERM "$P" 2>/dev/null
          while kill -0 "$P" 2>/dev/null; do sleep 0.1; done; }}
case "$1" in
  start) start ;;
  restart) stop; start ;;
  stop) stop ;;
  kill) kill -KILL "$(cat "$DIR/pid")" ;;
  freeze) kill -STOP "$(cat "$DIR/pid")" ;;
  thaw) kill -CONT "$(cat "$DIR/pid")" ;;
esac
"""


@contextlib.contextmanager
def operator_cluster(tmp: Path) -> Iterator[Path]:
    """A ZooKeeper and three nodes started the way an operator's tooling would, and their inventory."""
    zk = LocalZooKeeper(1, base_dir=tmp / "zk")
    zk.start()
    nodes: list[dict[str, object]] = []
    dirs: list[Path] = []
    try:
        for b in (1, 2, 3):
            d = tmp / f"node-{b}"
            d.mkdir()
            port, metrics = free_port(), free_port()
            (d / "server.properties").write_text(
                dump_properties(
                    {
                        "broker.id": str(b),
                        "zookeeper.connect": zk.connect_string + "/kafka",
                        "listeners": f"PLAINTEXT://127.0.0.1:{port}",
                        "inter.broker.protocol.version": "3.3-IV3",
                        "zookeeper.session.timeout.ms": "6000",
                        "bridgekeeper.metrics.host": "127.0.0.1",
                        "bridgekeeper.metrics.port": str(metrics),
                    }
                )
            )
            script = d / "node.sh"
            script.write_text(SCRIPT.format(broker_id=b, dir=d, root=ROOT, python=sys.executable))
            subprocess.run(["sh", str(script), "start"], check=True, timeout=30)
            dirs.append(d)
            nodes.append(
                {
                    "broker_id": b,
                    "bootstrap": f"127.0.0.1:{port}",
                    "metrics": f"http://127.0.0.1:{metrics}/metrics",
                    "log": str(d / "node.log"),
                    "config": str(d / "server.properties"),
                    "restart": f"sh {script} restart",
                    "kill": f"sh {script} kill",
                    "start": f"sh {script} start",
                }
            )
        inventory = tmp / "inventory.json"
        inventory.write_bytes(
            orjson.dumps(
                {
                    "zookeeper": zk.connect_string + "/kafka",
                    "zookeeper_data_dirs": [str(m.data_dir / "data") for m in zk.members],
                    "nodes": nodes,
                }
            )
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not all("NODE-READY" in (d / "stdout.log").read_text() for d in dirs):
            time.sleep(0.2)
        yield inventory
    finally:
        for d in dirs:
            with contextlib.suppress(OSError, ValueError):
                pid = int((d / "pid").read_text())
                os.kill(pid, signal.SIGCONT)
                os.kill(pid, signal.SIGKILL)
        zk.stop()


def test_attach_rehearses_a_cluster_it_did_not_start(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with operator_cluster(tmp_path) as inventory:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "controller.cli",
                "rehearse",
                "--attach",
                str(inventory),
                "--from-ibp",
                "3.3-IV3",
                "--to-ibp",
                "3.4-IV0",
                "--rate",
                "8",
                "--drill",
                "kill-controller",
                "-o",
                str(out),
            ],
            capture_output=True,
            text=True,
            timeout=900,
            cwd=ROOT,
            check=False,
        )
        doc = orjson.loads((out / "rehearsal.json").read_bytes())
        configs = [(tmp_path / f"node-{b}" / "server.properties").read_text() for b in (1, 2, 3)]
    bad = [f"{c['name']}: {c['summary']} {c['evidence'][:5]}" for c in doc["checks"] if c["verdict"] == "fail"]
    assert proc.returncode == 0, "\n".join(bad) + proc.stderr[-3000:]
    assert doc["mode"] == "attached" and doc["nodes"] == [1, 2, 3]
    assert all("inter.broker.protocol.version=3.4-IV0" in c for c in configs)  # roll 2 rewrote each config
    writes = [c for c in doc["checks"] if c["name"] == "no-broker-zk-writes"]
    assert writes and "all by the active controller's session" in writes[-1]["summary"], writes
    assert len(doc["ops"]) >= 100
