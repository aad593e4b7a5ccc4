"""Which snapshot-row files belong to which cluster, and reading them into one Spark DataFrame.

An input is ``NAME=PATH`` (the cluster's name given), a file (named by its stem, as ``snapshot export -o
prod-east.parquet`` or ``pipeline synth`` name them) or a directory (every ``.parquet``/``.jsonl`` file in it,
one cluster each). Everything is checked before Spark starts, so a typo is a one-line error, not a JVM stack.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SUFFIXES = {".parquet": "parquet", ".jsonl": "jsonl", ".json": "jsonl"}
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


class InputError(ValueError):
    """An input that cannot be read as snapshot rows; the message names it."""


@dataclass(frozen=True)
class ClusterInput:
    cluster: str
    path: Path
    fmt: str  # parquet | jsonl


def _one(cluster: str | None, path: Path) -> ClusterInput:
    fmt = SUFFIXES.get(path.suffix)
    if fmt is None:
        raise InputError(f"{path}: not a snapshot-rows file (expected .parquet or .jsonl)")
    name = cluster if cluster is not None else path.name[: -len(path.suffix)]
    if not _NAME.match(name):
        raise InputError(f"{path}: cluster name {name!r} must be letters, digits, '.', '_' or '-'")
    item = ClusterInput(name, path, fmt)
    _check(item)
    return item


def _check(item: ClusterInput) -> None:
    """The file's header (Parquet schema, or the first JSON line) has the rows' ``path`` and ``data``."""
    if item.fmt == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            schema = pq.read_schema(str(item.path))
        except (OSError, pa.ArrowException) as exc:
            raise InputError(f"{item.path}: not a readable Parquet file ({exc})") from None
        fields = {f.name: f.type for f in schema}
        if fields.get("path") != pa.string() or fields.get("data") not in (pa.binary(), pa.large_binary()):
            raise InputError(f"{item.path}: not snapshot rows (needs a string 'path' and a binary 'data' column)")
        return
    import orjson

    try:
        with item.path.open("rb") as f:
            first = f.readline()
    except OSError as exc:
        raise InputError(f"{item.path}: cannot read it ({exc.strerror})") from None
    if not first.strip():
        return  # an empty cluster
    try:
        row = orjson.loads(first)
    except orjson.JSONDecodeError as exc:
        raise InputError(f"{item.path}: line 1 is not JSON ({exc})") from None
    if not isinstance(row, dict) or not isinstance(row.get("path"), str) or "data" not in row:
        raise InputError(f"{item.path}: line 1 is not a snapshot row (needs 'path' and 'data')")


def resolve(specs: list[str]) -> list[ClusterInput]:
    """The inputs as (cluster, file) pairs; InputError for a missing path, an empty directory, a file of an
    unknown kind or two inputs with one cluster name."""
    out: list[ClusterInput] = []
    for spec in specs:
        name, sep, rest = spec.partition("=")
        cluster, raw = (name, rest) if sep and not Path(spec).exists() else (None, spec)
        path = Path(raw)
        if not path.exists():
            raise InputError(f"{raw}: no such file or directory")
        if path.is_dir():
            if cluster is not None:
                raise InputError(f"{spec}: NAME=PATH takes a file; a directory holds one cluster per file")
            try:
                found = sorted(p for p in path.iterdir() if p.is_file() and p.suffix in SUFFIXES)
            except OSError as exc:
                raise InputError(f"{raw}: cannot list the directory ({exc.strerror})") from None
            if not found:
                raise InputError(f"{raw}: no .parquet or .jsonl files in this directory")
            out.extend(_one(None, p) for p in found)
        else:
            out.append(_one(cluster, path))
    if not out:
        raise InputError("no inputs given")
    seen: dict[str, Path] = {}
    for item in out:
        if item.cluster in seen:
            raise InputError(f"cluster {item.cluster!r} is given twice ({seen[item.cluster]} and {item.path})")
        seen[item.cluster] = item.path
    return out


#: The row columns the pipeline reads (``snapshot`` writes more: stats and ACLs of the znodes themselves), and
#: Spark's column for JSON lines that do not parse (kept and reported, never dropped silently).
JSONL_SCHEMA = "path string, data string, _corrupt_record string"


def read(spark: Any, inputs: list[ClusterInput]) -> Any:
    """One DataFrame (cluster, path, data, bad) over every input, read by Spark (in parallel, never collected).
    ``bad`` is null, or why the row itself could not be read (a JSON line that is not a row, data that is not
    base64): such rows become ``malformed`` records downstream instead of failing the job."""
    from pyspark.sql import functions as F

    frames = []
    for item in inputs:
        if item.fmt == "parquet":
            df = spark.read.parquet(str(item.path)).select("path", "data", F.lit(None).cast("string").alias("bad"))
        else:
            raw = spark.read.schema(JSONL_SCHEMA).option("mode", "PERMISSIVE").json(str(item.path))
            data = F.try_to_binary(F.col("data"), F.lit("base64"))
            corrupt = F.col("_corrupt_record").isNotNull() | F.col("path").isNull()
            bad = F.when(
                corrupt,
                F.concat(F.lit("not a snapshot row: "), F.substring(F.coalesce("_corrupt_record", F.lit("")), 1, 80)),
            ).when(F.col("data").isNotNull() & data.isNull(), F.lit("data is not base64"))
            path = F.when(corrupt, F.lit(f"{item.path.name}: unreadable line")).otherwise(F.col("path"))
            df = raw.select(path.alias("path"), data.alias("data"), bad.alias("bad"))
        frames.append(df.select(F.lit(item.cluster).alias("cluster"), "path", "data", "bad"))
    out = frames[0]
    for df in frames[1:]:
        out = out.unionByName(df)
    return out
