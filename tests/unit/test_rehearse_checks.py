"""The rehearsal's decisions that need no cluster: Strimzi's canRoll rule, ISR rejoin, offline partitions, who
wrote ZooKeeper after the bump, and the per-step checks' verdicts."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from migrate.rehearse import state as S
from migrate.rehearse import zkrecords as Z
from migrate.rehearse.checks import Checker
from migrate.rehearse.model import CHECK_IDS, OpRecord
from zkmodel.topics import PartitionState, TopicAssignment


def snap(isr: dict[int, list[int]], replicas: list[int] | None = None, min_isr: int | None = 2) -> S.Snapshot:
    s = S.Snapshot(cluster_id="x" * 22, controller=1, epoch=3)
    s.brokers = {b: S.Broker(b, 100 + b, 0x10 + b, 5) for b in (1, 2, 3)}
    s.topics["t"] = TopicAssignment({p: tuple(replicas or [1, 2, 3]) for p in isr}, topic_id="id-t")
    s.states = {("t", p): PartitionState(i[0] if i else -1, 0, 1, tuple(i)) for p, i in isr.items()}
    if min_isr is not None:
        s.min_isr["t"] = min_isr
    return s


def test_can_roll_follows_strimzi() -> None:
    assert S.would_drop_below_min_isr(snap({0: [1, 2, 3]}), 2, 1) == []
    assert S.would_drop_below_min_isr(snap({0: [1, 2]}), 2, 1) == [
        "t-0: ISR [1, 2] is at min.insync.replicas=2 and holds 2"
    ]
    assert S.would_drop_below_min_isr(snap({0: [1, 2]}), 3, 1) == []  # 3 is not in the ISR: nothing to lose
    assert S.would_drop_below_min_isr(snap({0: [1]}), 3, 1) == ["t-0: ISR [1] already below min.insync.replicas=2"]
    # replicas no more than min.insync.replicas: can never satisfy it with one down, so it does not block
    assert S.would_drop_below_min_isr(snap({0: [1, 2]}, replicas=[1, 2]), 1, 1) == []
    # the broker default applies to topics without an override
    assert S.would_drop_below_min_isr(snap({0: [1, 2]}, min_isr=None), 1, 2) != []
    assert S.would_drop_below_min_isr(snap({0: [1, 2]}, min_isr=None), 1, 1) == []


def test_rejoin_and_offline() -> None:
    s = snap({0: [1, 2], 1: [1, 2, 3]})
    assert S.missing_from_isr(s, 3) == ["t-0: ISR [1, 2]"]
    assert S.missing_from_isr(s, 1) == []
    s.topics["t"] = TopicAssignment(s.topics["t"].partitions, adding_replicas={0: (3,)}, topic_id="id-t")
    assert S.missing_from_isr(s, 3) == []  # still being added by a reassignment: not expected yet
    assert s.reassigning() == [("t", 0)]
    assert S.offline(s) == []
    s.states[("t", 1)] = PartitionState(4, 0, 1, (4,))  # leader not a live broker
    s.states[("t", 0)] = PartitionState(-1, 0, 1, ())
    assert S.offline(s) == ["t-0: leader -1, ISR []", "t-1: leader 4, ISR [4]"]
    s.deleting.add("t")
    assert S.offline(s) == []


def audit(*writes: tuple[int, int, str, str], ephemeral: dict[int, str] | None = None) -> Z.Audit:
    a = Z.Audit(log_dir=Path("/zk"), last_zxid=max(w[0] for w in writes))
    a.controller_sessions = {0xC}
    a.broker_sessions = {0xB: 2}
    a.writes = [Z.Write(*w, by_active=w[1] == 0xC) for w in writes]
    return a


def test_writes_after_the_bump_must_be_the_controllers() -> None:
    a = audit(
        (5, 0xB, "setData", "/config/topics/x"),
        (10, 0xC, "setData", "/config/topics/x"),
        (11, 0xB, "create", "/brokers/ids/2"),
        (12, 0xC, "create", "/brokers/topics/y"),
    )
    v = Z.check_writes(a, 8, [("/config/topics/x", 3, 10), ("/brokers/topics/y", 12, 12), ("/brokers/ids/2", 11, 11)])
    assert v.ok, v.evidence  # the broker's write at 5 is before the bump; its own registration is not metadata
    assert "2 writes to controller-owned paths" in v.evidence[1]
    late = audit((10, 0xC, "setData", "/config/topics/x"), (13, 0xB, "setData", "/config/topics/x"))
    v = Z.check_writes(late, 8, [("/config/topics/x", 3, 13)])
    assert not v.ok
    assert "zxid 0xd: setData /config/topics/x by session 0xb (broker 2's session)" in v.evidence
    assert any("last written at zxid 0xd by session 0xb" in line for line in v.evidence)


def test_a_znode_changed_outside_the_log_is_not_trusted() -> None:
    a = audit((10, 0xC, "setData", "/config/topics/x"))
    v = Z.check_writes(a, 8, [("/config/topics/x", 3, 9)])
    assert not v.ok and "zxid 0x9 is not in ZooKeeper's transaction log" in v.evidence[-1]
    assert Z.check_writes(a, 8, [("/config/topics/x", 3, 11)]).ok  # newer than the log we read: next check
    assert not Z.check_writes(Z.Audit(), 8, []).ok  # no log at all: cannot tell, so not a pass


def test_a_deposed_controller_session_is_not_the_controller() -> None:
    a = audit((10, 0xC, "setData", "/config/topics/x"))
    a.writes.append(Z.Write(11, 0xD, "setData", "/config/topics/x", by_active=False))
    a.controller_sessions.add(0xD)
    a.last_zxid = 11
    v = Z.check_writes(a, 8, [])
    assert not v.ok
    assert v.evidence[-1] == (
        "zxid 0xb: setData /config/topics/x by session 0xd (a controller session, not the active one then)"
    )


def test_operator_acl_changes_are_apart() -> None:
    a = audit((10, 0xA, "setACL", "/config"), (11, 0xA, "setData", "/config/topics/x"))
    v = Z.check_writes(a, 8, [], {0xA: "this rehearsal's lockdown"})
    assert not v.ok  # its setACL is the operator's; a data write by the same session is not
    assert (
        v.evidence[-1]
        == "zxid 0xb: setData /config/topics/x by session 0xa (a session of neither a controller nor a broker)"
    )


def op(
    ok: bool,
    error: str | None = None,
    retriable: bool | None = None,
    entity: str = "topic:rh-w1-t1",
    kind: str = "create_topic",
    started: float = 1.0,
) -> OpRecord:
    return {
        "worker": "w1",
        "client": "kafka-python",
        "seq": 0,
        "op": kind,
        "entity": entity,
        "args": {},
        "started": started,
        "ended": started + 1.0,
        "ok": ok,
        "error": error,
        "retriable": retriable,
        "forwardable": True,
    }


def test_client_errors_threshold_and_retriable() -> None:
    c = Checker("3.4-IV0", 0.05)
    assert c.client_errors(0, [op(True)] * 40 + [op(False, "REQUEST_TIMED_OUT", True)])["verdict"] == "pass"
    over = c.client_errors(0, [op(True)] * 10 + [op(False, "REQUEST_TIMED_OUT", True)] * 2)
    assert over["verdict"] == "fail" and over["summary"] == "2 of 12 operations failed (16.7% > 5%)"
    fatal = c.client_errors(0, [op(True)] * 100 + [op(False, "STALE_CONTROLLER_EPOCH", False)])
    assert fatal["verdict"] == "fail" and fatal["summary"] == "1 non-retriable error(s): STALE_CONTROLLER_EPOCH"
    assert c.client_errors(0, [])["verdict"] == "pass"
    # a drill: failures while the fault lasted are reported, the rate is judged on what came after
    during = [op(False, "NOT_CONTROLLER", True)] * 8
    after = [op(True, started=10.0)] * 20
    drill = c.client_errors(0, during + after, recovered_since=5.0)
    assert drill["verdict"] == "pass" and drill["summary"] == "0 of 20 operations failed after the fault, all retriable"
    assert "during the fault: 8 operations, 8 failed; after it: 20, 0 failed (0.0%)" in drill["evidence"]
    late = after + [op(False, "NOT_CONTROLLER", True, started=11.0)] * 3
    assert c.client_errors(0, during + late, recovered_since=5.0)["verdict"] == "fail"


def test_epoch_increments_need_a_reason() -> None:
    c = Checker("3.4-IV0", 0.05, epoch=3)
    assert c.epoch_explained(0, snap({0: [1]}), [])["verdict"] == "pass"  # 3 -> 3
    s = snap({0: [1]})
    s.epoch = 4
    bad = c.epoch_explained(1, s, [])
    assert bad["verdict"] == "fail" and "1 increment(s) but only 0 restart(s)" in bad["summary"]
    s.epoch = 5
    assert c.epoch_explained(2, s, ["restart of node 1, the active controller"])["verdict"] == "pass"


def test_ids_unchanged_spares_topics_the_load_recreated() -> None:
    c = Checker("3.4-IV0", 0.05)
    first = snap({0: [1]})
    first.topics["rh-w1-t1"] = TopicAssignment({0: (1,)}, topic_id="old")
    assert c.ids_unchanged(0, first, [])["verdict"] == "pass"
    second = snap({0: [1]})
    second.topics["rh-w1-t1"] = TopicAssignment({0: (1,)}, topic_id="new")
    assert c.ids_unchanged(1, second, [op(True, entity="topic:rh-w1-t1")])["verdict"] == "pass"
    third = snap({0: [1]})
    third.topics["t"] = TopicAssignment({0: (1,)}, topic_id="changed")
    failed = c.ids_unchanged(2, third, [])
    assert failed["verdict"] == "fail" and "topic t: id id-t became changed" in failed["evidence"]
    third.cluster_id = "y" * 22
    assert "/cluster/id was" in c.ids_unchanged(3, third, [])["summary"]


def test_every_check_has_a_title() -> None:
    assert len(set(CHECK_IDS)) == len(CHECK_IDS) == 13


def test_reassignment_onto_a_node_the_step_took_down_is_explained() -> None:
    c = Checker("3.4-IV0", 0.05)
    refused = op(False, "INVALID_REPLICATION_ASSIGNMENT", False)
    refused["op"], refused["args"] = "reassign", {"partition": 0, "replicas": [1, 2, 3], "from": [1, 2, 4]}
    ok = [op(True)] * 40
    # node 3 restarted in this step: the refusal is the restart's doing, counted but not fatal
    raced = c.client_errors(0, [*ok, refused], away={3})
    assert raced["verdict"] == "pass", raced
    assert any(e.startswith("raced the restart: ") and "node(s) [3]" in e for e in raced["evidence"])
    # the same refusal when the step took down a node the move does not add stays a non-retriable error
    other = c.client_errors(0, [*ok, refused], away={4})
    assert other["verdict"] == "fail" and other["summary"] == "1 non-retriable error(s): INVALID_REPLICATION_ASSIGNMENT"
    assert c.client_errors(0, [*ok, refused])["verdict"] == "fail"


def test_the_load_does_not_reassign_a_partition_whose_move_is_under_way() -> None:
    """Kafka's Metadata lists a moving partition's adding replicas too: a target built from that list would
    raise the topic's RF, which the journal holds it to (a CI run found [3, 2, 1] for an RF 2 topic)."""
    from migrate.rehearse.clients import WorkerSpec
    from migrate.rehearse.load_worker import _Topic, _Worker

    class Client:
        ops = frozenset({"reassign"})
        replicas_now: ClassVar[dict[int, list[int]]] = {0: [1, 2, 3]}  # RF 2, 3 being added

        def brokers(self) -> list[int]:
            return [1, 2, 3, 4]

        def replicas(self, _topic: str) -> dict[int, list[int]]:
            return self.replicas_now

    spec = WorkerSpec("w1", "kafka-python", 0, ("x:1",), "/tmp", 1.0, 0.0, 7, "t", 1000, 2)
    worker = _Worker(spec, Client(), [1, 2, 3, 4], acls=False)  # type: ignore[arg-type]
    worker.topics["rh-w1-t-t1"] = _Topic("rh-w1-t-t1", 1, 2)
    assert worker._reassign() is None
    Client.replicas_now = {0: [1, 2]}  # the move is done: a same-size target is planned
    plan = worker._reassign()
    assert plan is not None and len(plan.args["replicas"]) == 2
