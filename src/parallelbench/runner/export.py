"""Every row of a results database to CSV, JSON Lines or Parquet."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from parallelbench.outputs import atomic_file, atomic_path
from parallelbench.runner.store import JSON_COLUMNS, ResultsStore

FORMATS = ("csv", "jsonl", "parquet")


class ExportError(ValueError):
    pass


def export_rows(store: ResultsStore, fmt: str, out: str | Path) -> int:
    """Write all rows; JSON Lines expands the JSON columns into nested values. Returns the row count."""
    if fmt not in FORMATS:
        raise ExportError(f"unknown format {fmt!r}; valid formats: {', '.join(FORMATS)}")
    if fmt == "parquet" and importlib.util.find_spec("pyarrow") is None:
        raise ExportError("parquet export needs pyarrow: pip install pyarrow (or use --format csv|jsonl)")
    what = f"the {fmt} export"
    if fmt == "jsonl":
        n = 0
        with atomic_file(out, what) as fh:
            for row in store.iter_rows():
                for col in JSON_COLUMNS:
                    if isinstance(row.get(col), str):
                        row[col] = json.loads(row[col])
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
                n += 1
        return n
    frame = store.frame()
    with atomic_path(out, what) as path:
        if fmt == "csv":
            frame.to_csv(path, index=False)
        else:
            frame.to_parquet(path, index=False)
    return len(frame)
