"""``bridgekeeper reassign`` fed malformed plan files and flags, end to end through ``main``: every refusal is
one ``Error:`` line (or, for a usage error, its message before Kafka's option table) and a non-zero exit
status, never a traceback; with ``--output json`` it is one JSON object on stdout carrying that status.

The plan-file parser itself is fuzzed in tests/unit/test_reassign_plan_files.py and the option parser in
tests/unit/test_reassign_options.py, and the e2e suite runs named bad plans against a live cluster; what
these add is the whole command on arbitrary plan files, with a real ZooKeeper behind ``--zookeeper``.
"""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.cli import main as bridgekeeper
from migrate.reassign.legacy import DEPRECATED
from tests.fuzz.budget import budget
from tests.unit.test_reassign_plan_files import _mutated_plan, json_values

pytestmark = [pytest.mark.fuzz, pytest.mark.integration]

PLAN_ENTRY = {"topic": "t", "partition": 0, "replicas": [1, 2]}
PLAN = {"version": 1, "partitions": [PLAN_ENTRY]}
NAMED = [
    "",
    "{not json",
    json.dumps({**PLAN, "version": 2}),
    json.dumps({"version": 1, "partitions": [PLAN_ENTRY, PLAN_ENTRY]}),  # a partition twice
    json.dumps({"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [-1, -2]}]}),
    json.dumps({"version": 1, "partitions": [{"topic": "t", "partition": -1, "replicas": [1]}]}),
    json.dumps({"version": 1, "partitions": [{"partition": 0, "replicas": [1]}]}),  # no topic
    json.dumps({"version": 1, "partitions": [{"topic": "t", "partition": 0}]}),  # no replicas
    "[" * 100_000,
    "\ufeff" + json.dumps(PLAN),
]
PLAN_TEXTS = st.one_of(
    st.sampled_from(NAMED),
    _mutated_plan().map(json.dumps),
    json_values.map(json.dumps),
    st.text(max_size=40),
)


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    code = bridgekeeper(["reassign", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@budget(30)
@given(text=PLAN_TEXTS)
def test_a_malformed_plan_is_one_error_line(
    zk_hosts: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    # The chroot holds no topics, so even a well-formed plan is refused (its topics do not exist).
    plan = tmp_path / "plan.json"
    plan.write_text(text, encoding="utf-8", errors="surrogatepass")
    code, out, err = run(["--zookeeper", zk_hosts, "--execute", "--reassignment-json-file", str(plan)], capsys)
    assert code == 1
    assert "Traceback" not in out + err
    warning, error, *rest = out.split("\n")
    assert warning == DEPRECATED and error.startswith("Error: ") and rest == [""], out


@budget(30)
@given(text=PLAN_TEXTS)
def test_a_malformed_plan_in_json_mode_is_one_object_on_stdout(
    zk_hosts: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text(text, encoding="utf-8", errors="surrogatepass")
    argv = ["--zookeeper", zk_hosts, "--execute", "--reassignment-json-file", str(plan), "--output", "json"]
    code, out, err = run(argv, capsys)
    assert code == 1
    doc = orjson.loads(out)  # exactly one document: anything after it is refused
    assert doc == {"error": doc["error"], "exit_code": 1} and doc["error"], out
    assert err.split("\n")[:2] == [DEPRECATED, f"Error: {doc['error']}"], err


BS = ["--bootstrap-server", "h:9092"]
PLAN_FILE = ["--reassignment-json-file", "p"]
BAD_FLAGS: list[tuple[list[str], str]] = [
    (["--execute", *BS, "--reassignment-json-file"], "Option reassignment-json-file requires an argument"),
    (["--execute", "--verify", *BS], "Command must include exactly one action"),
    (["--no-such-flag"], "no-such-flag is not a recognized option"),
    (["--execute", *BS, *PLAN_FILE, "--throttle", "fast"], "Error: Cannot parse argument 'fast' of option throttle"),
    (["--execute", *BS, "--zookeeper", "z:2181", *PLAN_FILE], "Only one of --bootstrap-server or --zookeeper"),
    (["--generate", *BS, "--topics-to-move-json-file", "t", "--broker-list", "1,x"], 'For input string: "x"'),
    (["--execute", *BS, *PLAN_FILE, "--max-moves-per-broker", "0"], 'must be a positive integer, not "0"'),
    (["--list", *BS, "--output", "xml"], 'Option "[output]" must be text or json, not "xml"'),
]


@pytest.mark.parametrize(("argv", "needle"), BAD_FLAGS, ids=[" ".join(a) for a, _n in BAD_FLAGS])
def test_bad_flags_are_refused_before_anything_connects(
    argv: list[str], needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(argv, capsys)
    assert code != 0
    assert "Traceback" not in out + err
    first = (out + err).lstrip("\n").split("\n", 1)[0]
    assert needle in first, out + err


@pytest.mark.parametrize(("argv", "needle"), BAD_FLAGS, ids=[" ".join(a) for a, _n in BAD_FLAGS])
def test_bad_flags_in_json_mode_are_one_object_on_stdout(
    argv: list[str], needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(["--output", "json", *argv], capsys)
    doc = orjson.loads(out)
    assert code != 0 and doc["exit_code"] == code and set(doc) == {"error", "exit_code"}, out
    if "--output" not in argv:  # else the refusal is that --output was given twice
        assert needle.removeprefix("Error: ") in doc["error"], doc
    assert "Traceback" not in out + err and doc["error"] in err
