"""One row per znode, written to Parquet (pyarrow; the Spark pipeline's input) or JSON lines.

Rows are written to a temporary file beside the target and renamed into place only when the whole input
was read without error, so a damaged snapshot never leaves half a file behind.

The format follows the file name (``.parquet``; ``.jsonl``, or ``.json`` as :func:`read_rows` reads it back) unless
named: an ``out.csv`` written as Parquet would be a file no reader of rows recognises.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import Any

import orjson

from migrate.snapshot.files import Node

FIELDS = (
    "path",
    "data",
    "czxid",
    "mzxid",
    "pzxid",
    "ctime",
    "mtime",
    "version",
    "cversion",
    "aversion",
    "ephemeral_owner",
    "data_length",
    "num_children",
    "acl",
)


FORMATS = ("parquet", "jsonl")
#: The output file names each format is chosen by (what :func:`read_rows` and ``snapshot restore`` read back).
SUFFIX_FORMATS = {".parquet": "parquet", ".jsonl": "jsonl", ".json": "jsonl"}


class RowsError(ValueError):
    """Rows that cannot be read: the message names the file (and, for JSON lines, the line)."""


class RowsOutputError(OSError):
    """The rows could not be written (a full disk, a directory that went away): the target is left as it was."""


def output_format(path: str | Path, fmt: str | None = None) -> str:
    """The format rows are written to ``path`` in: ``fmt`` when given, else the one its extension names.
    Raises ValueError (naming the extension) when neither says."""
    if fmt is not None:
        if fmt not in FORMATS:
            raise ValueError(f"unknown output format {fmt!r} (parquet or jsonl)")
        return fmt
    suffix = Path(path).suffix
    if suffix not in SUFFIX_FORMATS:
        what = f"unsupported output extension {suffix!r}" if suffix else f"output {path} has no extension"
        raise ValueError(f"{what}: use .parquet or .jsonl, or give --format")
    return SUFFIX_FORMATS[suffix]


def check_output(path: str | Path, fmt: str | None = None) -> str:
    """A command's rows output checked before it reads or connects to anything: an extension (or ``fmt``) that
    names a format, and a directory that exists and may be written. Returns the format; raises
    :class:`~controller.exits.UsageError` otherwise."""
    from controller.exits import UsageError

    try:
        chosen = output_format(path, fmt)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    check_output_dir(path)
    return chosen


def check_output_dir(path: str | Path) -> None:
    """Raises :class:`~controller.exits.UsageError` unless ``path`` can be created or replaced: not a directory,
    in a directory that exists and this process may write (the temporary file goes beside it)."""
    from controller.exits import UsageError

    target = Path(path)
    parent = target.parent
    if target.is_dir():
        raise UsageError(f"output {target} is a directory: name a file")
    if not parent.is_dir():
        raise UsageError(f"output directory {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"output directory {parent} is not writable")


def row(node: Node) -> dict[str, Any]:
    """A znode as a client sees it (cversion and ephemeralOwner as in its Stat)."""
    cversion, owner = node.client_stat()
    return {
        "path": node.path,
        "data": node.data,
        "czxid": node.czxid,
        "mzxid": node.mzxid,
        "pzxid": node.pzxid,
        "ctime": node.ctime,
        "mtime": node.mtime,
        "version": node.version,
        "cversion": cversion,
        "aversion": node.aversion,
        "ephemeral_owner": owner,
        "data_length": node.data_length,
        "num_children": node.num_children,
        "acl": [{"perms": p, "scheme": s, "id": i} for p, s, i in node.acl],
    }


def _schema() -> Any:
    import pyarrow as pa

    acl = pa.struct([("perms", pa.int32()), ("scheme", pa.string()), ("id", pa.string())])
    return pa.schema(
        [
            ("path", pa.string()),
            ("data", pa.binary()),
            ("czxid", pa.int64()),
            ("mzxid", pa.int64()),
            ("pzxid", pa.int64()),
            ("ctime", pa.int64()),
            ("mtime", pa.int64()),
            ("version", pa.int32()),
            ("cversion", pa.int32()),
            ("aversion", pa.int32()),
            ("ephemeral_owner", pa.int64()),
            ("data_length", pa.int32()),
            ("num_children", pa.int32()),
            ("acl", pa.list_(acl)),
        ]
    )


class RowWriter:
    """Collects rows in batches and writes them to ``path`` (``.parquet`` or ``.jsonl``) atomically."""

    BATCH = 10_000

    def __init__(self, path: str | Path, fmt: str | None = None) -> None:
        self.path = Path(path)
        self.fmt = output_format(self.path, fmt)
        try:
            fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=self.path.parent or ".")
        except OSError as exc:
            raise self._failed(exc) from None
        os.close(fd)
        self.tmp = Path(tmp)
        self.count = 0
        self._batch: list[dict[str, Any]] = []
        self._columns: dict[str, list[Any]] = {f: [] for f in FIELDS}
        self._acl_rows: dict[int, tuple[Any, list[dict[str, Any]]]] = {}  # ACL lists are shared by many nodes
        self._parquet: Any = None
        self._jsonl = open(self.tmp, "wb") if self.fmt == "jsonl" else None  # noqa: SIM115

    def __enter__(self) -> RowWriter:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()

    def write(self, node: Node) -> None:
        self.count += 1
        if self._jsonl is not None:
            self._batch.append(row(node))
            if len(self._batch) >= self.BATCH:
                self._flush()
            return
        # Parquet: straight into columns (a dict per row and pyarrow's from_pylist cost more than the parse)
        cversion, owner = node.client_stat()
        c = self._columns
        c["path"].append(node.path)
        c["data"].append(node.data)
        c["czxid"].append(node.czxid)
        c["mzxid"].append(node.mzxid)
        c["pzxid"].append(node.pzxid)
        c["ctime"].append(node.ctime)
        c["mtime"].append(node.mtime)
        c["version"].append(node.version)
        c["cversion"].append(cversion)
        c["aversion"].append(node.aversion)
        c["ephemeral_owner"].append(owner)
        c["data_length"].append(node.data_length)
        c["num_children"].append(node.num_children)
        key = id(node.acl)
        acl = self._acl_rows.get(key)
        if acl is None or acl[0] is not node.acl:
            acl = (node.acl, [{"perms": p, "scheme": s, "id": i} for p, s, i in node.acl])
            self._acl_rows[key] = acl
        c["acl"].append(acl[1])
        if len(c["path"]) >= self.BATCH:
            self._flush()

    def write_all(self, nodes: Iterable[Node]) -> None:
        for node in nodes:
            self.write(node)

    def _failed(self, exc: OSError) -> RowsOutputError:
        """The writer's own OSErrors, told apart from a reader's: a caller reading input files while it writes
        rows must not take a full disk for an unreadable input."""
        failed = RowsOutputError(f"{self.path}: cannot write the rows ({exc.strerror or exc})")
        failed.errno = exc.errno
        return failed

    def _flush(self) -> None:
        try:
            self._write_batch()
        except OSError as exc:  # pyarrow's write errors are OSErrors too
            raise self._failed(exc) from None

    def _write_batch(self) -> None:
        if self._jsonl is None:
            if not self._columns["path"]:
                return
            import pyarrow as pa
            import pyarrow.parquet as pq

            table = pa.Table.from_pydict(self._columns, schema=_schema())
            if self._parquet is None:
                self._parquet = pq.ParquetWriter(str(self.tmp), _schema(), compression="zstd")
            self._parquet.write_table(table)
            self._columns = {f: [] for f in FIELDS}
            return
        for r in self._batch:
            out = dict(r)
            out["data"] = None if r["data"] is None else base64.b64encode(r["data"]).decode()
            self._jsonl.write(orjson.dumps(out) + b"\n")
        self._batch = []

    def close(self) -> None:
        try:
            self._finish()
        except BaseException:
            self.abort()
            raise

    def _finish(self) -> None:
        self._flush()
        try:
            if self._jsonl is not None:
                self._jsonl.close()
            elif self._parquet is None:
                import pyarrow as pa
                import pyarrow.parquet as pq

                pq.write_table(pa.Table.from_pylist([], schema=_schema()), str(self.tmp))
            else:
                self._parquet.close()
            os.replace(self.tmp, self.path)
        except OSError as exc:
            raise self._failed(exc) from None

    def abort(self) -> None:
        # Closing may fail again on the disk that failed the write; the temporary file goes regardless.
        for handle in (self._jsonl, self._parquet):
            if handle is not None:
                with contextlib.suppress(OSError):
                    handle.close()
        self.tmp.unlink(missing_ok=True)


def read_rows(path: str | Path) -> list[dict[str, Any]]:
    """Rows back from a Parquet or JSON-lines file (data as bytes). Raises :class:`RowsError` naming the file
    for one that is missing, unreadable or not rows (each row has a string ``path`` and bytes or null ``data``)."""
    p = Path(path)
    if not p.exists():  # pyarrow's FileNotFoundError carries no reason to show
        raise RowsError(f"{p}: no such file or directory")
    try:
        return _read_jsonl(p) if SUFFIX_FORMATS.get(p.suffix) == "jsonl" else _read_parquet(p)
    except OSError as exc:
        raise RowsError(f"{p}: {exc.strerror or exc}") from None


def _read_jsonl(p: Path) -> list[dict[str, Any]]:
    out = []
    for number, line in enumerate(p.read_bytes().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            r = orjson.loads(line)
            if not isinstance(r, dict) or not isinstance(r["path"], str):
                raise ValueError("no string 'path'")
            data = r["data"]
            r["data"] = None if data is None else base64.b64decode(data, validate=True)
        except KeyError as exc:
            raise RowsError(f"{p}: line {number} is not a snapshot row (no {exc} field)") from None
        except (orjson.JSONDecodeError, TypeError, ValueError, binascii.Error) as exc:
            raise RowsError(f"{p}: line {number} is not a snapshot row ({exc})") from None
        out.append(r)
    return out


def _read_parquet(p: Path) -> list[dict[str, Any]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(str(p))
    except pa.ArrowException as exc:  # ArrowInvalid: not Parquet (pyarrow's I/O errors are plain OSErrors)
        raise RowsError(f"{p}: not readable as snapshot rows ({exc})") from None
    types = {f.name: f.type for f in table.schema}
    path, data = types.get("path", pa.null()), types.get("data", pa.int8())
    if not (pa.types.is_string(path) or pa.types.is_large_string(path)):
        raise RowsError(f"{p}: not snapshot rows (no string 'path' column)")
    if not (pa.types.is_binary(data) or pa.types.is_large_binary(data) or pa.types.is_null(data)):
        raise RowsError(f"{p}: not snapshot rows (no binary 'data' column)")
    rows: list[dict[str, Any]] = table.to_pylist()
    return rows
