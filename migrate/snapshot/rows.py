"""One row per znode, written to Parquet (pyarrow; the Spark pipeline's input) or JSON lines.

Rows are written to a temporary file beside the target and renamed into place only when the whole input
was read without error, so a damaged snapshot never leaves half a file behind.
"""

from __future__ import annotations

import base64
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import Any

import orjson

from migrate.snapshot.files import Node

FIELDS = ("path", "data", "czxid", "mzxid", "pzxid", "ctime", "mtime", "version", "cversion", "aversion",
          "ephemeral_owner", "data_length", "num_children", "acl")  # fmt: skip


def row(node: Node) -> dict[str, Any]:
    """A znode as a client sees it (cversion and ephemeralOwner as in its Stat)."""
    cversion, owner = node.client_stat()
    return {
        "path": node.path, "data": node.data, "czxid": node.czxid, "mzxid": node.mzxid, "pzxid": node.pzxid,
        "ctime": node.ctime, "mtime": node.mtime, "version": node.version, "cversion": cversion,
        "aversion": node.aversion, "ephemeral_owner": owner, "data_length": node.data_length,
        "num_children": node.num_children,
        "acl": [{"perms": p, "scheme": s, "id": i} for p, s, i in node.acl],
    }  # fmt: skip


def _schema() -> Any:
    import pyarrow as pa

    acl = pa.struct([("perms", pa.int32()), ("scheme", pa.string()), ("id", pa.string())])
    return pa.schema(
        [("path", pa.string()), ("data", pa.binary()), ("czxid", pa.int64()), ("mzxid", pa.int64()),
         ("pzxid", pa.int64()), ("ctime", pa.int64()), ("mtime", pa.int64()), ("version", pa.int32()),
         ("cversion", pa.int32()), ("aversion", pa.int32()), ("ephemeral_owner", pa.int64()),
         ("data_length", pa.int32()), ("num_children", pa.int32()), ("acl", pa.list_(acl))]
    )  # fmt: skip


class RowWriter:
    """Collects rows in batches and writes them to ``path`` (``.parquet`` or ``.jsonl``) atomically."""

    BATCH = 10_000

    def __init__(self, path: str | Path, fmt: str | None = None) -> None:
        self.path = Path(path)
        self.fmt = fmt or ("jsonl" if self.path.suffix in (".jsonl", ".json") else "parquet")
        if self.fmt not in ("parquet", "jsonl"):
            raise ValueError(f"unknown output format {self.fmt!r} (parquet or jsonl)")
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=self.path.parent or ".")
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

    def _flush(self) -> None:
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
        self._flush()
        if self._jsonl is not None:
            self._jsonl.close()
        elif self._parquet is None:
            import pyarrow as pa
            import pyarrow.parquet as pq

            pq.write_table(pa.Table.from_pylist([], schema=_schema()), str(self.tmp))
        else:
            self._parquet.close()
        os.replace(self.tmp, self.path)

    def abort(self) -> None:
        if self._jsonl is not None:
            self._jsonl.close()
        if self._parquet is not None:
            self._parquet.close()
        self.tmp.unlink(missing_ok=True)


def read_rows(path: str | Path) -> list[dict[str, Any]]:
    """Rows back from a Parquet or JSON-lines file (data as bytes)."""
    p = Path(path)
    if p.suffix in (".jsonl", ".json"):
        out = []
        for line in p.read_bytes().splitlines():
            r = orjson.loads(line)
            r["data"] = None if r["data"] is None else base64.b64decode(r["data"])
            out.append(r)
        return out
    import pyarrow.parquet as pq

    rows: list[dict[str, Any]] = pq.read_table(str(p)).to_pylist()
    return rows
