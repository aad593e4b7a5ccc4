"""The snapshot commands' inputs and outputs as the exit-code contract wants them: an output no writer knows, a
missing or malformed input, refused with exit 2 before anything is read or connected to; ``snapshot check``'s
report as ``--format text|json``, on stdout or in ``-o FILE``; and ``up``/``rehearse --from-snapshot`` refusing
rows they cannot use before any ZooKeeper or node starts."""

from __future__ import annotations

import base64
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from controller.cli import main as bridgekeeper
from migrate.snapshot.files import Node
from migrate.snapshot.rows import RowsError, RowWriter, output_format, read_rows
from tests.netutil import closed_port

ROOT = Path(__file__).resolve().parents[2]
EXTENSION = "use .parquet or .jsonl, or give --format"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "controller.cli", *args], capture_output=True, text=True, timeout=60, cwd=ROOT
    )


def synth(out: Path, *args: str) -> Path:
    assert bridgekeeper(["pipeline", "synth", "-o", str(out), "--brokers", "3", "--topics", "12", *args]) == 0
    return out


def one_error(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    return lines[0].removeprefix("error: ")


# -- the rows' files ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "fmt", "expected"),
    [
        ("rows.parquet", None, "parquet"),
        ("rows.jsonl", None, "jsonl"),
        ("rows.json", None, "jsonl"),
        ("rows.csv", "jsonl", "jsonl"),
        ("rows", "parquet", "parquet"),
    ],
)
def test_the_format_follows_the_extension_unless_named(name: str, fmt: str | None, expected: str) -> None:
    assert output_format(name, fmt) == expected


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("rows.csv", f"unsupported output extension '.csv': {EXTENSION}"),
        ("rows.PARQUET", f"unsupported output extension '.PARQUET': {EXTENSION}"),
        ("rows", f"output rows has no extension: {EXTENSION}"),
    ],
)
def test_an_extension_no_format_has_is_refused(name: str, message: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError) as caught:
        RowWriter(tmp_path / name)
    assert str(caught.value) == message.replace("output rows", f"output {tmp_path / name}")
    assert list(tmp_path.iterdir()) == []  # not even the temporary file


def _node(path: str) -> Node:
    open_acl = [(31, "world", "anyone")]
    return Node(
        path,
        b"x",
        open_acl,
        czxid=1,
        mzxid=1,
        ctime=0,
        mtime=0,
        version=0,
        cversion=0,
        aversion=0,
        ephemeral_owner=0,
        pzxid=1,
    )


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("gone.parquet", None, "no such file or directory"),
        ("bad.jsonl", b'{"path": "/a", "data": null}\n{"path": 1\n', "line 2 is not a snapshot row"),
        ("list.jsonl", b"[1, 2]\n", "line 1 is not a snapshot row (no string 'path')"),
        ("nodata.jsonl", b'{"path": "/a"}\n', "line 1 is not a snapshot row (no 'data' field)"),
        ("base64.jsonl", b'{"path": "/a", "data": "not base64!"}\n', "line 1 is not a snapshot row"),
        ("junk.parquet", b"PAR1 not really", "not readable as snapshot rows"),
        ("other.parquet", "other", "not snapshot rows (no string 'path' column)"),
    ],
)
def test_rows_that_cannot_be_read_are_named(
    tmp_path: Path, name: str, content: bytes | str | None, message: str
) -> None:
    path = tmp_path / name
    if content == "other":
        pq.write_table(pa.table({"x": [1]}), str(path))
    elif isinstance(content, bytes):
        path.write_bytes(content)
    with pytest.raises(RowsError) as caught:
        read_rows(path)
    assert str(caught.value).startswith(f"{path}: {message}"), caught.value


def test_rows_read_back_as_written(tmp_path: Path) -> None:
    for name in ("r.parquet", "r.jsonl", "r.json"):
        with RowWriter(tmp_path / name) as out:
            out.write_all([_node("/"), _node("/a")])
        assert [(r["path"], r["data"]) for r in read_rows(tmp_path / name)] == [("/", b"x"), ("/a", b"x")]
    line = (tmp_path / "r.jsonl").read_bytes().splitlines()[1]
    assert orjson.loads(line)["data"] == base64.b64encode(b"x").decode()


# -- snapshot check ----------------------------------------------------------------------------------------------


def test_check_of_a_missing_file_is_2_with_the_error_object_in_json_mode(tmp_path: Path) -> None:
    missing = tmp_path / "missing" / "rows.parquet"
    done = cli("snapshot", "check", str(missing), "--format", "json")
    assert done.returncode == 2, done.stderr
    message = f"cannot read rows: {missing}: no such file or directory"
    assert one_error(done.stderr) == message
    assert orjson.loads(done.stdout) == {"error": message, "exit_code": 2}
    assert done.stdout.count("\n") == 1  # one document, nothing else


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_check_of_malformed_rows_is_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_bytes(b'{"path": "/brokers", "data": null}\nnot json\n')
    assert bridgekeeper(["snapshot", "check", str(rows), "--format", fmt]) == 2
    out, err = capsys.readouterr()
    assert one_error(err).startswith(f"cannot read rows: {rows}: line 2 is not a snapshot row")
    if fmt == "json":
        assert orjson.loads(out)["exit_code"] == 2
    else:
        assert out == ""


@pytest.mark.parametrize("word", ["json", "text"])
def test_the_old_output_format_values_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, word: str
) -> None:
    rows = synth(tmp_path / "rows.parquet")
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert bridgekeeper(["snapshot", "check", str(rows), "--output", word]) == 2
    assert one_error(capsys.readouterr().err) == "--output takes a file; for JSON use --format json"
    assert not (tmp_path / word).exists()


def test_check_in_json_mode_prints_one_document_and_exits_1_on_blockers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = synth(tmp_path / "rows.parquet", "--defect", "topic_v1", "--defect", "unregistered_broker_replica")
    capsys.readouterr()
    assert bridgekeeper(["snapshot", "check", str(rows), "--format", "json"]) == 1
    out, err = capsys.readouterr()
    doc = orjson.loads(out)
    assert doc["blocking"] >= 1 and {f["kind"] for f in doc["findings"]} >= {"topic_znode_v1", "unregistered_broker"}
    assert err == ""


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_check_writes_its_report_to_the_output_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    rows = synth(tmp_path / "rows.parquet", "--defect", "topic_v1")
    report = tmp_path / f"report.{fmt}"
    capsys.readouterr()
    assert bridgekeeper(["snapshot", "check", str(rows), "--format", fmt, "-o", str(report)]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err == f"report written to {report}\n"
    text = report.read_text()
    if fmt == "json":
        assert "topic_znode_v1" in {f["kind"] for f in orjson.loads(text)["findings"]}
    else:
        assert "blocking)" in text and "topic_znode_v1" in text and "\x1b[" not in text  # no terminal codes


def test_check_refuses_a_report_file_it_could_not_write_before_reading(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing.parquet"  # not read: the output is checked first
    assert bridgekeeper(["snapshot", "check", str(missing), "-o", str(tmp_path / "no" / "report.txt")]) == 2
    assert one_error(capsys.readouterr().err) == f"output directory {tmp_path / 'no'} does not exist"


# -- snapshot parse ----------------------------------------------------------------------------------------------


def test_parse_of_a_missing_directory_is_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "rows.parquet"
    assert bridgekeeper(["snapshot", "parse", str(tmp_path / "no-data-dir"), "-o", str(out)]) == 2
    assert one_error(capsys.readouterr().err) == f"{tmp_path / 'no-data-dir'}: no such file or directory"
    assert not out.exists()


def test_parse_checks_the_output_before_reading(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert bridgekeeper(["snapshot", "parse", str(tmp_path / "no-data-dir"), "-o", str(tmp_path / "rows.csv")]) == 2
    assert one_error(capsys.readouterr().err) == f"unsupported output extension '.csv': {EXTENSION}"


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("snapshot.10", b"\x00" * 64, "snapshot.10: offset 0: not a ZooKeeper snapshot"),
        ("snapshot.zz", b"", "snapshot.zz: offset 0: the file name does not carry a zxid"),
    ],
)
def test_parse_of_a_file_that_is_not_a_snapshot_is_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, content: bytes, message: str
) -> None:
    (tmp_path / name).write_bytes(content)
    out = tmp_path / "rows.jsonl"
    assert bridgekeeper(["snapshot", "parse", str(tmp_path / name), "-o", str(out)]) == 2
    assert one_error(capsys.readouterr().err).startswith(message)
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]  # no output, no temporary file


def test_parse_of_a_directory_without_snapshots_is_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "data").mkdir()
    assert bridgekeeper(["snapshot", "parse", str(tmp_path / "data"), "-o", str(tmp_path / "rows.parquet")]) == 2
    assert "no snapshot.<zxid> file here" in one_error(capsys.readouterr().err)


# -- snapshot export and restore: refused before connecting ----------------------------------------------------


@pytest.mark.timing  # asserts a wall-clock bound of a few seconds: run alone (docs/testing.md)
def test_export_to_an_unknown_extension_is_2_before_connecting(tmp_path: Path) -> None:
    started = time.monotonic()
    done = cli("snapshot", "export", "--zookeeper", f"127.0.0.1:{closed_port()}", "-o", str(tmp_path / "out.csv"))
    assert time.monotonic() - started < 2.0, "a connection was tried (it lasts --timeout, 10 s)"
    assert done.returncode == 2, done.stderr
    assert one_error(done.stderr) == f"unsupported output extension '.csv': {EXTENSION}"
    assert list(tmp_path.iterdir()) == []


def test_export_offers_the_identity_flags_and_hides_the_old_spelling() -> None:
    shown = cli("snapshot", "export", "--help").stdout
    assert "--zk-identity digest:USER:PASSWORD" in shown and "--zk-identity-file FILE" in shown
    assert "BRIDGEKEEPER_ZK_IDENTITY" in shown
    assert "--zk-digest" not in shown  # still accepted (tests/integration/test_snapshot_export.py), not offered


def test_restore_of_malformed_rows_is_2_before_connecting(tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_bytes(b'{"path": "/brokers"}\n')
    started = time.monotonic()
    done = cli("snapshot", "restore", str(rows), "--zookeeper", f"127.0.0.1:{closed_port()}/twin")
    assert time.monotonic() - started < 2.0
    assert done.returncode == 2, done.stderr
    assert one_error(done.stderr) == f"{rows}: line 1 is not a snapshot row (no 'data' field)"


# -- pipeline synth ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["fleet.csv", "fleet"])
def test_synth_refuses_an_output_no_format_has(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str) -> None:
    assert bridgekeeper(["pipeline", "synth", "-o", str(tmp_path / name)]) == 2
    assert EXTENSION in one_error(capsys.readouterr().err)
    assert list(tmp_path.iterdir()) == []


def test_synth_takes_any_name_with_a_format_and_a_directory_for_clusters(tmp_path: Path) -> None:
    named = tmp_path / "fleet.csv"
    assert bridgekeeper(["pipeline", "synth", "-o", str(named), "--format", "jsonl", "--topics", "3"]) == 0
    assert read_rows(named.rename(tmp_path / "fleet.jsonl"))
    assert bridgekeeper(["pipeline", "synth", "-o", str(tmp_path / "dir"), "--clusters", "2", "--topics", "3"]) == 0
    assert sorted(p.name for p in (tmp_path / "dir").iterdir()) == ["cluster-00.parquet", "cluster-01.parquet"]


# -- up and rehearse --from-snapshot -----------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["up", "rehearse"])
@pytest.mark.parametrize("rows", ["missing", "malformed"])
def test_from_snapshot_refuses_unusable_rows_before_starting_anything(tmp_path: Path, command: str, rows: str) -> None:
    path = tmp_path / "rows.jsonl"
    if rows == "malformed":
        path.write_bytes(b"{not json\n")
    ibps = ["--from-ibp", "3.3-IV3", "--to-ibp", "3.4-IV0"] if command == "rehearse" else []
    started = time.monotonic()
    done = cli(command, "--from-snapshot", str(path), *ibps)
    assert time.monotonic() - started < 5.0, "something was started"
    assert done.returncode == 2, done.stdout + done.stderr
    expected = "no such file or directory" if rows == "missing" else "line 1 is not a snapshot row"
    assert one_error(done.stderr).startswith(f"{path}: {expected}")
    assert done.stdout == ""
