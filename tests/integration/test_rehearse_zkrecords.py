"""Who wrote what, read from a real ZooKeeper's transaction log: the rehearsal's proof that after the bump only
the active controller's session wrote metadata. Two clients play a controller and a broker under a chroot; a
third writes outside it (another tenant, not ours to judge)."""

from __future__ import annotations

import contextlib
from pathlib import Path

from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError

from controller.devstack.localzk import LocalZooKeeper
from migrate.rehearse import zkrecords as Z


def client(hosts: str) -> KazooClient:
    zk = KazooClient(hosts=hosts, timeout=10)
    zk.start(timeout=20)
    return zk


def test_the_log_names_each_writer(tmp_path: Path) -> None:
    with LocalZooKeeper(1, base_dir=tmp_path / "zk") as server:
        server.start()
        root = client(server.connect_string)
        root.ensure_path("/kafka/config/topics")
        root.create("/other/config", b"x", makepath=True)  # outside the chroot
        controller = client(server.connect_string + "/kafka")
        broker = client(server.connect_string + "/kafka")
        controller.create("/controller", b'{"brokerid":1}', ephemeral=True)
        broker.ensure_path("/brokers/ids")
        broker.create("/brokers/ids/2", b"{}", ephemeral=True)
        controller.create("/config/topics/a", b"1")
        bump = broker.exists("/brokers/ids/2").czxid
        tx = controller.transaction()  # a multi, as the fenced writer makes
        tx.set_data("/config/topics/a", b"2")
        tx.create("/config/topics/b", b"1")
        tx.commit()
        broker.set("/config/topics/a", b"3")  # the broker writing metadata itself
        root.set("/other/config", b"y")
        with contextlib.suppress(NodeExistsError):
            controller.create("/config/topics/b", b"again")  # fails, logged as an error txn
        audit = Z.read_audit([m.data_dir / "data" for m in server.members], "/kafka")
        live = [
            (p, controller.exists(p).czxid, controller.exists(p).mzxid)
            for p in ("/config/topics/a", "/config/topics/b")
        ]
        controller_sid, broker_sid = controller.client_id[0], broker.client_id[0]
        for zk in (root, controller, broker):
            zk.stop()

    assert audit.controller_sessions == {controller_sid}
    assert audit.broker_sessions == {broker_sid: 2}
    assert all(w.path.startswith("/") and not w.path.startswith("/kafka") for w in audit.writes)
    assert "/other/config" not in {w.path for w in audit.writes}
    v = Z.check_writes(audit, bump, live)
    assert not v.ok
    assert v.summary == "2 write(s) to controller-owned znodes not by the controller"
    culprit = f"session 0x{broker_sid:x} (broker 2's session)"
    assert any(line.endswith(f"setData /config/topics/a by {culprit}") for line in v.evidence), v.evidence
    assert any(line.startswith("/config/topics/a: last written at zxid") and culprit in line for line in v.evidence)
    assert "after zxid" in v.evidence[1] and "4 writes to controller-owned paths" in v.evidence[1], v.evidence
    # Before the broker's write, every change was the controller's: the same log passes.
    kept = [w for w in audit.writes if w.session != broker_sid or w.path.startswith("/brokers/ids")]
    clean = Z.Audit(audit.log_dir, audit.last_zxid, audit.controller_sessions, audit.broker_sessions, kept)
    ok = Z.check_writes(clean, bump, [(p, c, m) for p, c, m in live if p.endswith("/b")])
    assert ok.ok, ok.evidence
    assert ok.summary == "3 metadata writes since the bump, all by the active controller's session"
