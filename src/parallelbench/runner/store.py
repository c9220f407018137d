"""The results database: one SQLite file, one row per decoded sample (contract 5).

Why SQLite: it is in the standard library, a single file is easy to move around, and
its transactions give the guarantees a long grid needs. Every batch is written in one
transaction with ``INSERT OR IGNORE`` against a UNIQUE key, so a run killed at any
moment (SIGKILL included) loses at most the batch in flight and never leaves a partial
or duplicated row, and rerunning the same grid skips what is already there. WAL mode
plus a busy timeout and a retry loop let several processes write the same file.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Sequence

from parallelbench.scoring.order import ORDER_COLUMNS, order_metrics
from parallelbench.tps import ANSWER_COLUMNS, answer_columns

if TYPE_CHECKING:
    import pandas as pd

DEFAULT_DB = "parallelbench.db"
SCHEMA_VERSION = 2  # 2: status, error and provenance columns (a v1 file is migrated on open for writing)

# The columns of contract 5, in frame order.
COLUMNS: tuple[str, ...] = (
    "model",
    "model_kind",
    "strategy",
    "strategy_kind",
    "params",
    "config",
    "task",
    "category",
    "sample_id",
    "seed",
    "output",
    "score",
    "scores",
    "nfe",
    "num_tokens",
    "tps",
    "tokens_per_step",
    "order",
    "token_texts",
    "wall_time",
    "versions",
    "created_at",
    *ORDER_COLUMNS,  # decoding order vs left to right, from `order` (scoring/order.py); added to older files on open
    # repair (docs/report.md, "Does editing repair parallel decoding?"); added to older files on open
    "unmask_score",  # the score of the answer when its last original mask was filled (= score: no edit after it)
    "unmask_output",  # that answer's text when it differs from `output` (else NULL)
    "edits",  # token-to-token rewrites of written slots
    "inserts",  # insert operations
    "deletes",  # delete operations
    "changed_tokens",  # shown positions whose final token differs from the first one committed there
    *ANSWER_COLUMNS,  # tokens committed before the first stop token, and those / nfe (parallelbench/tps.py); likewise
)
# The repair columns; NULL unmask_score: not known (an editing strategy's row written without the record).
REPAIR_COLUMNS: tuple[str, ...] = ("unmask_score", "unmask_output", "edits", "inserts", "deletes", "changed_tokens")
# Columns holding JSON text (export can expand them).
JSON_COLUMNS: tuple[str, ...] = ("params", "scores", "tokens_per_step", "order", "token_texts", "versions")
# What makes a row unique; `model` is the spec string the run was given.
KEY_COLUMNS: tuple[str, ...] = ("model", "strategy", "params", "task", "sample_id", "seed")
# Outside contract 5 (not in the frame): whether the row is a result ('ok') or a sample whose
# decoding failed ('failed', with its one-line `error`, retried by a re-run), and the
# provenance of what produced it ("DECODING-SCORING", see `runner.provenance`): a row is
# reused only when both halves match, and rescored when only the scoring half differs.
STATUS_COLUMNS: tuple[str, ...] = ("status", "error", "provenance")
_UNIQUE: tuple[str, ...] = KEY_COLUMNS + ("provenance",)

_TYPES = {
    "seed": "INTEGER NOT NULL",
    "score": "REAL",
    "nfe": "INTEGER",
    "num_tokens": "INTEGER",
    "tps": "REAL",
    "wall_time": "REAL",
    **{c: "REAL" for c in ORDER_COLUMNS},
    "unmask_score": "REAL",
    **{c: "INTEGER" for c in ("edits", "inserts", "deletes", "changed_tokens")},
    "answer_tokens": "INTEGER",
    "answer_tps": "REAL",
}
_NOT_NULL = {"model", "strategy", "params", "task", "sample_id"}


def _q(name: str) -> str:
    return f'"{name}"'  # "order" is an SQL keyword


def _schema() -> str:
    cols = []
    for c in COLUMNS:
        typ = _TYPES.get(c, "TEXT NOT NULL" if c in _NOT_NULL else "TEXT")
        cols.append(f"{_q(c)} {typ}")
    cols += ["status TEXT NOT NULL DEFAULT 'ok'", "error TEXT", "provenance TEXT NOT NULL DEFAULT ''"]
    key = ", ".join(_q(c) for c in _UNIQUE)
    return (
        "CREATE TABLE IF NOT EXISTS results (\n  id INTEGER PRIMARY KEY AUTOINCREMENT,\n  "
        + ",\n  ".join(cols)
        + f",\n  UNIQUE({key})\n)"
    )


def provenance(model: str, model_versions: Any, data_version: str, strategy: str, params: str) -> str:
    """The provenance rows had before issue 25 (model spec and `versions()`, task data version,
    strategy and options), still what a migrated v1 row gets. Runs now key rows on
    `runner.provenance` (code, options, samples and scorer too), so such rows are kept but
    decoded again."""
    desc = canonical_json({"model": model, "versions": model_versions or {}, "data": data_version or "",
                           "strategy": strategy, "params": params})
    return hashlib.sha256(desc.encode()).hexdigest()[:16]


def row_provenance(row: dict[str, Any]) -> str:
    """The provenance of a stored row, from its `versions` column (how v1 rows are migrated)."""
    try:
        versions = json.loads(row.get("versions") or "{}")
    except (TypeError, ValueError):
        versions = {}
    if not isinstance(versions, dict):
        versions = {}
    return provenance(row["model"], versions.get("model"), str(versions.get("data") or ""), row["strategy"],
                      row["params"])


def canonical_json(value: Any) -> str:
    """The one text form of a JSON value, so equal params always give equal keys."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class StoreError(RuntimeError):
    """The database file cannot be used; the message is one line for the user."""


def missing_database(path: str | Path) -> str:
    """The one line every command prints for a --db that does not exist: the path and how to make it."""
    import shlex

    make = "parallelbench run" + ("" if str(path) == DEFAULT_DB else f" --db {shlex.quote(str(path))}")
    return f"no results database at {path}; create it with `{make}`, or pass --db PATH of an existing one"


class MissingStoreError(StoreError, FileNotFoundError):
    """No database at the path (still a FileNotFoundError, as before)."""


_HINTS = (  # (words in the error, what to do), first match wins
    (("disk is full", "no space left", "file too large", "quota", "disk i/o error"),
     "the disk is full (or failing): free some space or pass --db on another disk"),
    (("read-only", "readonly", "permission denied", "operation not permitted", "not writable", "unable to open"),
     "the file or its folder is not writable: pass --db in a folder you can write to"),
    (("file exists", "not a directory"), "a part of the path is a file, not a folder: pass another --db path"),
    (("not a database", "malformed", "file is encrypted"),
     "it is not a SQLite database and so is not a results database (a corrupt file or another kind of file): "
     "pass a new path or a .db file written by parallelbench"),
)


def _unusable(path: Path, exc: BaseException) -> StoreError:
    reason = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, StoreError):
        return exc
    if isinstance(exc, IsADirectoryError) or path.is_dir():
        hint = "pass a file path such as --db results.db"
    else:
        low = reason.lower()
        hint = next((h for words, h in _HINTS if any(w in low for w in words)), "pass a writable file path with --db")
    return StoreError(f"cannot use results database {path}: {reason}; {hint}")


def _sidecars(path: Path) -> list[Path]:
    """The database file and the journal files SQLite keeps beside it."""
    return [path] + [path.with_name(path.name + suffix) for suffix in ("-wal", "-shm", "-journal")]


def _remove(path: Path) -> None:
    for p in _sidecars(path):
        try:
            p.unlink()
        except OSError:
            pass


def _check_folder_writable(path: Path, existing: bool = False) -> None:
    """Writing needs a folder SQLite can create files in (root's os.access says yes to anything)."""
    parent = path.parent if str(path.parent) else Path(".")
    try:
        with tempfile.TemporaryFile(dir=parent):
            pass
    except OSError as exc:
        if existing:
            raise StoreError(
                f"cannot write to results database {path}: its folder {parent} is not writable "
                f"({exc.strerror or exc}) and SQLite keeps its journal beside the database; pass --db in a folder "
                "you can write to (reading it with `parallelbench results` or `report` works)"
            ) from None
        raise StoreError(
            f"cannot create results database {path}: its folder {parent} is not writable ({exc.strerror or exc}); "
            "pass --db in a folder you can write to"
        ) from None


def check_store_path(path: str | Path) -> None:
    """What opening `path` for writing would raise, without creating anything (for --dry-run)."""
    p = Path(path)
    if p.is_dir():
        raise _unusable(p, IsADirectoryError("it is a folder"))
    if p.exists():
        with ResultsStore(p, create=False) as store:
            store.count()
        if not os.access(p, os.W_OK):
            raise _unusable(p, PermissionError("the file is not writable"))
        _check_folder_writable(p, existing=True)
        return
    parent = p.parent if str(p.parent) else Path(".")
    probe = parent
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        raise _unusable(p, NotADirectoryError(f"{probe} is not a folder"))
    try:  # os.access says yes to root even on /proc; a real (deleted at once) file tells the truth
        with tempfile.TemporaryFile(dir=probe):
            pass
    except OSError as exc:
        raise _unusable(p, exc) from None


class ResultsStore:
    """A results database at `path`. ``create=False`` refuses to make a new file."""

    def __init__(self, path: str | Path = DEFAULT_DB, *, create: bool = True, timeout: float = 60.0):
        self.path = Path(path)
        if not create and not self.path.exists():
            raise MissingStoreError(missing_database(self.path))
        self.timeout = timeout
        self._conn = None
        self.created = False  # this store made the file (so it may remove it again if left empty)
        try:
            if self.path.is_dir():
                raise IsADirectoryError("it is a folder")
            if create and not self.path.exists():
                if self.path.parent != Path(""):
                    self.path.parent.mkdir(parents=True, exist_ok=True)
                _check_folder_writable(self.path)
                self.created = True
            elif create:  # SQLite writes its journal beside the database
                _check_folder_writable(self.path, existing=True)
            self._conn = self._connect(create)
            self._validate()  # a file that is not ours fails here, not mid-read
            if create:
                self._retry(self._init_schema)
        except (sqlite3.DatabaseError, OSError, StoreError) as exc:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
            if self.created:
                _remove(self.path)
            raise _unusable(self.path, exc) from None

    # -- setup -------------------------------------------------------------------------
    def _connect(self, create: bool) -> sqlite3.Connection:
        """A connection; for reading only, a database in a read-only folder (where SQLite cannot
        create its WAL index) is opened as an immutable file instead."""
        conn = sqlite3.connect(str(self.path), timeout=self.timeout, isolation_level=None)
        conn.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
        if create:
            return conn
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            return conn
        except sqlite3.OperationalError as exc:
            text = str(exc).lower()
            if "unable to open" not in text and "readonly" not in text and "read-only" not in text:
                conn.close()
                raise
            conn.close()
        uri = self.path.absolute().as_uri() + "?mode=ro&immutable=1"
        return sqlite3.connect(uri, uri=True, timeout=self.timeout, isolation_level=None)

    def _validate(self) -> None:
        """Refuse a SQLite file of another program, or one written by a newer parallelbench."""
        tables = {r[0] for r in self._conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        ours = {"results", "meta", "sqlite_sequence"}
        if tables and "results" not in tables and not tables <= ours:
            shown = ", ".join(sorted(tables - ours)[:5])
            raise StoreError(
                f"cannot use results database {self.path}: it is a SQLite database of another program, not a results "
                f"database (tables: {shown}); pass a new path or a .db file written by parallelbench"
            )
        if "meta" in tables:
            row = self._conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            try:
                version = int(row[0]) if row else 0
            except (TypeError, ValueError):
                version = SCHEMA_VERSION + 1  # unreadable: not something this version wrote
            if version > SCHEMA_VERSION:
                raise StoreError(
                    f"cannot use results database {self.path}: it was written by a newer parallelbench "
                    f"(schema {row[0] if row else '?'}; this version reads up to {SCHEMA_VERSION}); "
                    "upgrade parallelbench (pip install -U parallelbench) or pass another --db"
                )

    def _init_schema(self) -> None:
        self._conn.execute("PRAGMA journal_mode = WAL")
        self._conn.execute("PRAGMA synchronous = NORMAL")
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            if self._has_table() and not self._has_status():
                self._migrate_v1()
            self._conn.execute(_schema())
            self._add_order_columns()
            self._add_repair_columns()
            self._add_answer_columns()
            self._conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
            self._conn.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
            )
            self._conn.execute("COMMIT")
        except BaseException:
            self._rollback()
            self._status_known = None  # a rolled-back migration left the v1 table
            raise

    def _has_status(self) -> bool:
        """Whether the results table has the v2 columns (a v1 file read without writing has not)."""
        if getattr(self, "_status_known", None) is None:
            names = {r[1] for r in self._conn.execute("PRAGMA table_info(results)")}
            self._status_known = "provenance" in names
        return self._status_known

    def _migrate_v1(self) -> None:
        """v1 -> v2 inside the open transaction: rebuild the table with the new key, every old
        row kept as 'ok' with the provenance its recorded versions give (so an unchanged
        setup keeps reusing it)."""
        old = {r[1] for r in self._conn.execute("PRAGMA table_info(results)")}
        present = [c for c in COLUMNS if c in old]
        cols = ", ".join(_q(c) for c in present)
        self._conn.execute("ALTER TABLE results RENAME TO results_v1")
        self._conn.execute(_schema())
        rows = self._conn.execute(f"SELECT id, {cols} FROM results_v1 ORDER BY id").fetchall()
        self._conn.executemany(
            f"INSERT INTO results (id, {cols}, status, error, provenance) "
            f"VALUES (?, {', '.join('?' for _ in present)}, 'ok', NULL, ?)",
            [(r[0], *r[1:], row_provenance(dict(zip(present, r[1:])))) for r in rows],
        )
        self._conn.execute("DROP TABLE results_v1")
        self._status_known = True

    def _add_columns(self, columns: Sequence[str], fields: Sequence[str], values_of) -> None:
        """Inside the open transaction: add the `columns` a file written before them lacks, each
        row's values from `values_of(row)` (a dict of its `fields`; None leaves a NULL)."""
        names = {r[1] for r in self._conn.execute("PRAGMA table_info(results)")}
        missing = [c for c in columns if c not in names]
        for c in missing:
            self._conn.execute(f"ALTER TABLE results ADD COLUMN {_q(c)} {_TYPES.get(c, 'TEXT')}")
        if missing:
            rows = self._conn.execute(f"SELECT id, {', '.join(_q(f) for f in fields)} FROM results").fetchall()
            updates = []
            for r in rows:
                values = values_of(dict(zip(fields, r[1:])))
                if any(values[c] is not None for c in missing):
                    updates.append((*(values[c] for c in missing), r[0]))
            sets = ", ".join(f"{_q(c)} = ?" for c in missing)
            self._conn.executemany(f"UPDATE results SET {sets} WHERE id = ?", updates)
        self._columns = None

    def _add_order_columns(self) -> None:
        """The order-metric columns, computed for older rows from their stored `order`."""
        self._add_columns(ORDER_COLUMNS, ("order",), _order_metrics_of)

    def _add_repair_columns(self) -> None:
        """The repair columns. Rows of strategies that never change a written token get their exact
        values (unmask_score = score, zero counts); rows of editing strategies stay NULL (not
        measured: `run --force` decodes them again with the record); no row is decoded again."""
        self._add_columns(REPAIR_COLUMNS, ("strategy", "model_kind", "score", "status"), repair_defaults)

    def _add_answer_columns(self) -> None:
        """The answer-token columns, computed for older rows from their stored `order` (`parallelbench.tps`)."""
        self._add_columns(ANSWER_COLUMNS, ("order", "model_kind", "num_tokens", "nfe"), answer_columns)

    def _rollback(self) -> None:
        """Roll back if a transaction is still open; a failed rollback must not hide the first error."""
        try:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
        except sqlite3.Error:
            pass

    def _retry(self, fn, *args, attempts: int = 20):
        """Run `fn` again when another process holds the write lock past the busy timeout."""
        for attempt in range(attempts):
            try:
                return fn(*args)
            except sqlite3.OperationalError as exc:
                msg = str(exc).lower()
                if ("locked" not in msg and "busy" not in msg) or attempt == attempts - 1:
                    raise
                time.sleep(min(2.0, 0.05 * 2**attempt) * (0.5 + random.random()))
        raise AssertionError("unreachable")

    def close(self, *, discard_empty: bool = False) -> None:
        """Close; with `discard_empty`, a database this store created and never wrote a row
        to is removed, so a run that saved nothing leaves no empty file behind."""
        if self._conn is None:
            return
        empty = False
        if discard_empty and self.created:
            try:
                empty = self.count() == 0
            except sqlite3.Error:
                empty = False
        self._conn.close()
        self._conn = None
        if empty:
            _remove(self.path)

    def __enter__(self) -> "ResultsStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _has_table(self) -> bool:
        row = self._conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name='results'"
        ).fetchone()
        return row is not None

    # -- writing -----------------------------------------------------------------------
    def write(self, rows: Sequence[dict[str, Any]], *, supersede: bool = False) -> int:
        """Insert a batch in one transaction; rows whose key exists are skipped, except that a failed
        row is replaced by a new attempt. Returns rows added or replaced.

        With `supersede` (`run --force`), a finished row with the same key and provenance is kept
        but marked superseded (its provenance gets `~<id>` appended, so it is never reused again)
        and the new row becomes the current one."""
        if not rows:
            return 0
        for r in rows:
            missing = [c for c in KEY_COLUMNS if r.get(c) is None]
            if missing:
                raise StoreError(f"a result row lacks its key column(s) {missing}; nothing of this batch was written")
        cols = COLUMNS + STATUS_COLUMNS
        defaults = {"status": "ok", "provenance": ""}
        rows = [r if all(c in r for c in ORDER_COLUMNS) else {**_order_metrics_of(r), **r} for r in rows]
        rows = [r if all(c in r for c in ANSWER_COLUMNS) else {**answer_columns(r), **r} for r in rows]
        rows = [r if "unmask_score" in r else {**repair_defaults(r), **r} for r in rows]
        values = [tuple(_to_sql({**defaults, **{k: v for k, v in r.items() if v is not None}}, c) for c in cols)
                  for r in rows]
        updates = ", ".join(f"{_q(c)} = excluded.{_q(c)}" for c in cols if c not in _UNIQUE)
        sql = (  # a new row, or a new attempt at a failed one; a finished row is never overwritten
            f"INSERT INTO results ({', '.join(_q(c) for c in cols)}) VALUES ({', '.join('?' for _ in cols)}) "
            f"ON CONFLICT({', '.join(_q(c) for c in _UNIQUE)}) DO UPDATE SET {updates} "
            "WHERE results.status = 'failed'"
        )

        key_match = " AND ".join(f"{_q(c)} = ?" for c in _UNIQUE)
        mark = (f"UPDATE results SET provenance = provenance || '~' || id WHERE {key_match} AND status = 'ok'"
                if supersede else None)
        marks = [tuple(_to_sql({**defaults, **r}, c) for c in _UNIQUE) for r in rows] if supersede else []

        def txn() -> int:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                if mark is not None:
                    self._conn.executemany(mark, marks)
                before = self._conn.total_changes
                self._conn.executemany(sql, values)
                added = self._conn.total_changes - before
                self._conn.execute("COMMIT")
                return added
            except BaseException:
                self._rollback()
                raise

        try:
            return self._retry(txn)
        except (sqlite3.ProgrammingError, sqlite3.InterfaceError, sqlite3.IntegrityError):
            raise  # a bad row, not a bad file
        except (sqlite3.DatabaseError, OSError) as exc:
            raise _unusable(self.path, exc) from None

    # -- reading -----------------------------------------------------------------------
    def done_keys(self, model: str | None = None) -> set[tuple[str, str, str, str, int]]:
        """(strategy, params, task, sample_id, seed) of every finished row (of one model)."""
        if not self._has_table():
            return set()
        sql = "SELECT strategy, params, task, sample_id, seed FROM results"
        if self._has_status():
            sql += " WHERE status = 'ok'"
        args: tuple = ()
        if model is not None:
            sql += (" AND" if " WHERE " in sql else " WHERE") + " model = ?"
            args = (model,)
        return {tuple(r) for r in self._conn.execute(sql, args)}  # type: ignore[misc]

    def reusable_keys(self, model: str) -> set[tuple]:
        """(strategy, params, task, sample_id, seed, provenance) of the finished ('ok') rows of one model."""
        if not self._has_table():
            return set()
        if not self._has_status():
            return set()  # a v1 file is migrated when opened for writing; read-only it has nothing to reuse
        sql = "SELECT strategy, params, task, sample_id, seed, provenance FROM results WHERE model = ? AND status = 'ok'"
        return {tuple(r) for r in self._conn.execute(sql, (model,))}

    def finished(self, model: str) -> dict[tuple, list[tuple[int, str]]]:
        """(strategy, params, task, sample_id, seed) -> [(id, provenance), ...] of one model's finished
        rows, oldest first (the last is the current version of that key)."""
        if not self._has_table() or not self._has_status():
            return {}
        out: dict[tuple, list[tuple[int, str]]] = {}
        sql = ("SELECT strategy, params, task, sample_id, seed, id, provenance FROM results "
               "WHERE model = ? AND status = 'ok' ORDER BY id")
        for strategy, params, task, sample_id, seed, row_id, prov in self._conn.execute(sql, (model,)):
            out.setdefault((strategy, params, task, sample_id, seed), []).append((row_id, prov))
        return out

    def rows_by_id(self, ids: Sequence[int]) -> dict[int, dict[str, Any]]:
        """Stored rows (every column but `id`) by id, e.g. to score a stored output again."""
        out: dict[int, dict[str, Any]] = {}
        cols = COLUMNS + STATUS_COLUMNS
        wanted = list(ids)
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            cur = self._conn.execute(
                f"SELECT id, {', '.join(_q(c) for c in cols)} FROM results WHERE id IN ({', '.join('?' for _ in chunk)})",
                chunk,
            )
            for r in cur:
                out[int(r[0])] = dict(zip(cols, r[1:]))
        return out

    def promote(self, ids: Sequence[int]) -> int:
        """Make stored rows the current version of their key again (a run that reused an older
        version of a row, e.g. after switching back to an earlier scoring mode): each gets a new,
        highest id; nothing else changes. Returns the rows moved."""
        wanted = sorted(set(int(i) for i in ids))
        if not wanted:
            return 0

        def txn() -> int:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                top = self._conn.execute(
                    "SELECT MAX(m) FROM (SELECT MAX(id) AS m FROM results UNION ALL "
                    "SELECT seq FROM sqlite_sequence WHERE name = 'results')"
                ).fetchone()[0] or 0
                for offset, row_id in enumerate(wanted, start=1):
                    self._conn.execute("UPDATE results SET id = ? WHERE id = ?", (top + offset, row_id))
                self._conn.execute("UPDATE sqlite_sequence SET seq = ? WHERE name = 'results'", (top + len(wanted),))
                self._conn.execute("COMMIT")
                return len(wanted)
            except BaseException:
                self._rollback()
                raise

        try:
            return self._retry(txn)
        except (sqlite3.DatabaseError, OSError) as exc:
            raise _unusable(self.path, exc) from None

    def failures(self, model: str | None = None) -> list[tuple[str, str, str, str]]:
        """(model, task, sample_id, error) of the failed rows a re-run would retry."""
        if not self._has_table() or not self._has_status():
            return []
        sql = "SELECT model, task, sample_id, error FROM results WHERE status = 'failed'"
        args: tuple = ()
        if model is not None:
            sql += " AND model = ?"
            args = (model,)
        return [tuple(r) for r in self._conn.execute(sql + " ORDER BY id", args)]  # type: ignore[misc]

    def count(self) -> int:
        if not self._has_table():
            return 0
        return int(self._conn.execute("SELECT COUNT(*) FROM results").fetchone()[0])

    def state(self) -> list[int]:
        """[rows, highest id, finished rows]: changes whenever what `frame()` shows can change (rows are
        only added, superseded, promoted to a new id, or turned from failed to finished)."""
        if not self._has_table():
            return [0, 0, 0]
        ok = " WHERE status = 'ok'" if self._has_status() else ""
        rows, top = self._conn.execute("SELECT COUNT(*), COALESCE(MAX(id), 0) FROM results").fetchone()
        finished = self._conn.execute(f"SELECT COUNT(*) FROM results{ok}").fetchone()[0]
        return [int(rows), int(top), int(finished)]

    def _where(self, all_versions: bool) -> str:
        """Finished rows only; unless `all_versions`, only the newest row of each key (rows of
        an older model, data or strategy version stay stored but are not what results show)."""
        if not self._has_status():
            return ""
        if all_versions:
            return " WHERE status = 'ok'"
        key = ", ".join(_q(c) for c in KEY_COLUMNS)
        return f" WHERE id IN (SELECT MAX(id) FROM results WHERE status = 'ok' GROUP BY {key})"

    def iter_rows(self, *, all_versions: bool = False) -> Iterator[dict[str, Any]]:
        """The finished rows as dicts of the contract-5 columns, in insertion order (see `_where`)."""
        if not self._has_table():
            return
        if getattr(self, "_columns", None) is None:
            self._columns = {r[1] for r in self._conn.execute("PRAGMA table_info(results)")}
        present = [c for c in COLUMNS if c in self._columns]  # a file opened read-only may predate some
        cur = self._conn.execute(
            f"SELECT {', '.join(_q(c) for c in present)} FROM results{self._where(all_versions)} ORDER BY id"
        )
        for r in cur:
            row = dict(zip(present, r))
            if len(present) < len(COLUMNS):
                row = {c: row.get(c) for c in COLUMNS} | {k: v for k, v in _order_metrics_of(row).items() if k not in present}
                if "unmask_score" not in present:
                    row.update(repair_defaults(row))
                if "answer_tokens" not in present:
                    row.update(answer_columns(row))
            yield row

    def frame(self, *, all_versions: bool = False) -> "pd.DataFrame":
        """The pandas DataFrame of contract 5: what analysis reads (failed rows are never in it)."""
        import pandas as pd

        try:
            rows = list(self.iter_rows(all_versions=all_versions))
        except (sqlite3.DatabaseError, OSError) as exc:
            raise _unusable(self.path, exc) from None
        return pd.DataFrame(rows, columns=list(COLUMNS))


NON_EDITING_KINDS = ("autoregressive", "api")  # model kinds that decode without a diffusion strategy


def repair_defaults(row: dict[str, Any]) -> dict[str, Any]:
    """The repair columns of a row written without them: exact for a strategy that never changes a
    written token (unmask_score = score, zero counts), else unknown (all NULL)."""
    unknown = dict.fromkeys(REPAIR_COLUMNS)
    if row.get("status", "ok") != "ok" or row.get("score") is None:
        return unknown
    strategy, kind = str(row.get("strategy") or ""), str(row.get("model_kind") or "")
    if kind not in NON_EDITING_KINDS and strategy != "autoregressive":
        from parallelbench.decoding.repair import strategy_rewrites

        if strategy_rewrites(strategy) is not False:
            return unknown
    return {**unknown, "unmask_score": row["score"], "edits": 0, "inserts": 0, "deletes": 0, "changed_tokens": 0}


def _order_metrics_of(row: dict[str, Any]) -> dict[str, float | None]:
    """The order-metric columns of a row from its `order` (JSON text or list) and, when the
    runner passes it, `pad_order` (the steps of the positions after the first EOS)."""
    def steps(value: Any) -> Any:
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                return None
        return value if isinstance(value, list) else None

    return order_metrics(steps(row.get("order")), steps(row.get("pad_order")))


def _to_sql(row: dict[str, Any], col: str) -> Any:
    value = row.get(col)
    if col in JSON_COLUMNS and value is not None and not isinstance(value, str):
        return canonical_json(value)
    return value

