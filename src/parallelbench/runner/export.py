"""Every row of a results database to CSV, JSON Lines or Parquet.

Each format adds `scorer_error` after `score`: the error of a scorer that failed on the row
(empty when none), which the database keeps inside `versions`.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from parallelbench.outputs import atomic_file, atomic_path
from parallelbench.runner.store import JSON_COLUMNS, ResultsStore
from parallelbench.scoring.errors import error_of_versions

FORMATS = ("csv", "jsonl", "parquet")


class ExportError(ValueError):
    pass


def export_rows(store: ResultsStore, fmt: str, out: str | Path) -> int:
    """Write all rows, with `scorer_error`; JSON Lines expands the JSON columns into nested values.
    Returns the row count."""
    if fmt not in FORMATS:
        raise ExportError(f"unknown format {fmt!r}; valid formats: {', '.join(FORMATS)}")
    if fmt == "parquet" and importlib.util.find_spec("pyarrow") is None:
        raise ExportError("parquet export needs pyarrow: pip install pyarrow (or use --format csv|jsonl)")
    what = f"the {fmt} export"
    if fmt == "jsonl":
        n = 0
        with atomic_file(out, what) as fh:
            for row in store.iter_rows():
                row = _with_scorer_error(row)
                for col in JSON_COLUMNS:
                    if isinstance(row.get(col), str):
                        row[col] = json.loads(row[col])
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
                n += 1
        return n
    frame = store.frame()
    errors = [error_of_versions(v) for v in frame["versions"]] if "versions" in frame else [None] * len(frame)
    frame.insert(frame.columns.get_loc("score") + 1 if "score" in frame else len(frame.columns), "scorer_error", errors)
    with atomic_path(out, what) as path:
        if fmt == "csv":
            frame.to_csv(path, index=False)
        else:
            frame.to_parquet(path, index=False)
    return len(frame)


def _with_scorer_error(row: dict) -> dict:
    """`row` with `scorer_error` placed right after `score`."""
    out: dict = {}
    for key, value in row.items():
        out[key] = value
        if key == "score":
            out["scorer_error"] = error_of_versions(row.get("versions"))
    out.setdefault("scorer_error", error_of_versions(row.get("versions")))
    return out
