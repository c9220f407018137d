"""Storage faults give one line each and leave nothing behind: a full disk, a read-only
folder, a path that is a folder, a foreign or corrupt SQLite file, a newer schema; and the
same for every command that writes (`run --db`, `report --out`, `results export --out`,
`tasks export --out`, `tasks import --out`)."""

from __future__ import annotations

import os
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from parallelbench.cli import app
from parallelbench.outputs import OutputError, atomic_file
from parallelbench.runner.job import run_job
from parallelbench.runner.spec import RunSpec
from parallelbench.runner.store import SCHEMA_VERSION, ResultsStore, StoreError
from test_runner_fakes import workdir  # noqa: F401  (fixture)
from test_runner_store import make_row

SRC = str(Path(__file__).resolve().parents[1] / "src")
RUN = ["run", "--model", "tiny", "--tasks", "waiting_line/copy", "--limit", "2", "--strategy", "confidence-topk",
       "--k", "1", "--no-progress", "--no-report"]


def invoke(args: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(app, args, env={"COLUMNS": "300"})
    text = result.output
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"{args} raised {result.exception!r}\n{text}")
    return result.exit_code, text


def assert_one_line_error(code: int, text: str, *needles: str) -> None:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    assert code != 0, text
    assert "Traceback" not in text and "│" not in text, text
    assert len(lines) == 1 and lines[0].startswith("error: "), text
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


def leftovers(folder: Path, name: str) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(name))


def good_db(path: Path) -> Path:
    with ResultsStore(path) as store:
        store.write([make_row(0), make_row(1)])
    return path


@contextmanager
def read_only(folder: Path):
    """A folder nobody may write to, root included (chattr +i), else chmod for other users."""
    if os.geteuid() == 0:
        if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode:
            pytest.skip("running as root without chattr: cannot make a read-only folder")
        undo = ["chattr", "-i", str(folder)]
    else:
        folder.chmod(0o555)
        undo = None
    try:
        yield folder
    finally:
        if undo:
            subprocess.run(undo, check=False)
        else:
            folder.chmod(0o755)


# ------------------------------------------------------------------ the results database


def test_db_path_is_a_folder(tmp_path: Path) -> None:
    (tmp_path / "adir").mkdir()
    assert_one_line_error(*invoke([*RUN, "--db", str(tmp_path / "adir")]), "it is a folder")
    assert_one_line_error(*invoke(["results", "--db", str(tmp_path / "adir")]), "it is a folder")


@pytest.mark.parametrize("content", [os.urandom(5000), b"SQLite format 3\x00" + b"\xff" * 4000, b"model,score\ntiny,1\n" * 50])
def test_corrupt_or_non_sqlite_file_is_refused_and_left_untouched(tmp_path: Path, content: bytes) -> None:
    db = tmp_path / "junk.db"
    db.write_bytes(content)
    for args in ([*RUN, "--db", str(db)], ["results", "--db", str(db)], ["report", "--db", str(db), "--out", str(tmp_path / "o")],
                 ["results", "export", "--db", str(db), "--format", "csv", "--out", str(tmp_path / "x.csv")]):
        assert_one_line_error(*invoke(args), str(db))
    assert db.read_bytes() == content
    assert leftovers(tmp_path, "junk.db") == ["junk.db"]


def test_foreign_sqlite_database_is_refused_and_not_altered(tmp_path: Path) -> None:
    db = tmp_path / "other.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE customers (name TEXT)")
    con.commit()
    con.close()
    before = db.read_bytes()
    assert_one_line_error(*invoke([*RUN, "--db", str(db)]), "another program", "customers")
    assert_one_line_error(*invoke(["results", "--db", str(db)]), "another program")
    assert db.read_bytes() == before
    with pytest.raises(StoreError, match="another program"):
        ResultsStore(db)


def test_database_of_a_newer_schema_is_refused(tmp_path: Path) -> None:
    db = good_db(tmp_path / "new.db")
    con = sqlite3.connect(db)
    con.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION + 1),))
    con.commit()
    con.close()
    for args in ([*RUN, "--db", str(db)], ["results", "--db", str(db)], ["report", "--db", str(db), "--out", str(tmp_path / "o")],
                 ["results", "export", "--db", str(db), "--format", "jsonl", "--out", str(tmp_path / "x.jsonl")]):
        assert_one_line_error(*invoke(args), "newer parallelbench", f"schema {SCHEMA_VERSION + 1}", "upgrade")
    assert not (tmp_path / "x.jsonl").exists()


def test_read_only_folder_for_a_new_database(tmp_path: Path) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    with read_only(ro):
        assert_one_line_error(*invoke([*RUN, "--db", str(ro / "r.db")]), "not writable")
        assert list(ro.iterdir()) == []


def test_database_in_a_read_only_folder_is_readable_not_writable(tmp_path: Path) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    db = good_db(folder / "r.db")
    with read_only(folder):
        code, text = invoke(["results", "--db", str(db)])
        assert code == 0 and "confidence-topk" in text, text
        code, text = invoke(["results", "export", "--db", str(db), "--format", "jsonl", "--out", str(tmp_path / "x.jsonl")])
        assert code == 0, text
        assert len((tmp_path / "x.jsonl").read_text().splitlines()) == 2
        assert_one_line_error(*invoke([*RUN, "--db", str(db)]), "not writable", "journal")
        code, text = invoke([*RUN, "--db", str(db), "--dry-run"])  # the plan, then the one line
        assert code != 0 and "Traceback" not in text
        assert text.strip().splitlines()[-1].startswith("error: ") and "not writable" in text.strip().splitlines()[-1]
        assert sorted(p.name for p in folder.iterdir()) == ["r.db"]


def test_disk_full_mid_write_is_one_line(tmp_path: Path) -> None:
    """SQLite's own disk-full error, raised from the write layer of a real store."""
    store = ResultsStore(tmp_path / "r.db")

    class FullDisk:
        def __init__(self, conn):
            self._conn = conn

        def __getattr__(self, name):
            return getattr(self._conn, name)

        def executemany(self, *args):
            raise sqlite3.OperationalError("database or disk is full")

    store._conn = FullDisk(store._conn)
    with pytest.raises(StoreError) as err:
        store.write([make_row(0)])
    message = str(err.value)
    assert "\n" not in message and "disk is full" in message and "another disk" in message
    store._conn = store._conn._conn
    store.close(discard_empty=True)
    assert leftovers(tmp_path, "r.db") == []  # created here, never written: removed


def _run_with_file_size_limit(limit: int, cwd: Path, args: list[str]) -> subprocess.CompletedProcess:
    """`parallelbench ...` where no file may grow past `limit` bytes: writes fail as on a full disk."""

    def limit_files():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    launcher = cwd / "pb_launcher.py"
    launcher.write_text("import sys\nfrom parallelbench.cli import main\nsys.exit(main())\n")
    env = {**os.environ, "PYTHONPATH": SRC, "COLUMNS": "300", "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([sys.executable, str(launcher), *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120, preexec_fn=limit_files)


@pytest.mark.parametrize("limit", [12_000, 40_000])
def test_full_disk_run_is_one_line_and_leaves_no_empty_database(tmp_path: Path, limit: int) -> None:
    proc = _run_with_file_size_limit(
        limit, tmp_path,
        ["run", "--model", "tiny", "--tasks", "waiting_line/copy,waiting_line/reverse", "--limit", "16",
         "--strategy", "confidence-topk", "--k", "1,2,4", "--no-progress", "--no-report", "--db", "full.db"],
    )
    assert proc.returncode != 0
    assert_one_line_error(proc.returncode, proc.stderr, "full.db", "disk is full")
    assert leftovers(tmp_path, "full.db") == []


def test_a_run_that_writes_nothing_leaves_no_database(workdir: Path) -> None:  # noqa: F811
    (workdir / "broken_models.py").write_text(
        "class Broken:\n"
        "    name = 'broken'\n    kind = 'diffusion'\n"
        "    def versions(self):\n        return {}\n"
        "    def generate(self, samples, strategy, *, max_new_tokens, seed=0):\n"
        "        raise KeyboardInterrupt\n\n"
        "def make():\n    return Broken()\n"
    )
    db = workdir / "never.db"
    spec = RunSpec().apply_flags(model="py:broken_models:make", tasks="waiting_line/copy", strategy="confidence-topk",
                                 params={"k": "1"}, limit=2, db=str(db))
    with pytest.raises(KeyboardInterrupt):
        run_job(spec, Console(quiet=True), show_progress=False)
    assert leftovers(workdir, "never.db") == []
    # an existing database is never removed, even when the run added nothing to it
    good_db(db)
    with pytest.raises(KeyboardInterrupt):
        run_job(spec, Console(quiet=True), show_progress=False)
    assert ResultsStore(db, create=False).count() == 2


# ------------------------------------------------------------------ commands that write files


def test_out_paths_that_are_files_or_folders(tmp_path: Path) -> None:
    db = good_db(tmp_path / "r.db")
    afile = tmp_path / "afile"
    afile.write_text("keep me")
    (tmp_path / "adir").mkdir()
    assert_one_line_error(*invoke(["report", "--db", str(db), "--out", str(afile)]), "is a file, not a folder")
    assert_one_line_error(*invoke(["tasks", "export", "--out", str(afile), "--tasks", "waiting_line/copy", "--limit", "2"]),
                          "is a file, not a folder")
    assert_one_line_error(*invoke(["results", "export", "--db", str(db), "--format", "csv", "--out", str(afile / "x.csv")]),
                          "is a file, not a folder")
    assert_one_line_error(*invoke(["results", "export", "--db", str(db), "--format", "csv", "--out", str(tmp_path / "adir")]),
                          "it is a folder")
    assert_one_line_error(*invoke(["tasks", "import", "../shared/official-parallelbench", "--out", str(tmp_path / "adir")]),
                          "it is a folder")
    assert_one_line_error(*invoke(["score", "--tasks", str(tmp_path / "none"), "--outputs", str(afile),
                                   "--per-sample", str(tmp_path / "adir")]), "it is a folder")
    assert_one_line_error(*invoke([*RUN, "--report", "--db", str(tmp_path / "n.db"), "--out", str(afile)]),
                          "is a file, not a folder", "--no-report")
    assert afile.read_text() == "keep me"
    assert not (tmp_path / "n.db").exists()  # refused before anything was decoded or written


def test_out_in_a_read_only_folder(tmp_path: Path) -> None:
    db = good_db(tmp_path / "r.db")
    ro = tmp_path / "ro"
    ro.mkdir()
    with read_only(ro):
        assert_one_line_error(*invoke(["report", "--db", str(db), "--out", str(ro / "rep")]), "not writable")
        assert_one_line_error(*invoke(["results", "export", "--db", str(db), "--format", "csv", "--out", str(ro / "x.csv")]),
                              "not writable")
        assert_one_line_error(*invoke(["tasks", "export", "--out", str(ro / "t"), "--tasks", "waiting_line/copy"]),
                              "not writable")
        assert_one_line_error(*invoke(["tasks", "export", "--out", str(ro), "--tasks", "waiting_line/copy"]), "not writable")
        assert list(ro.iterdir()) == []


def test_existing_export_is_replaced_whole_or_kept(tmp_path: Path) -> None:
    db = good_db(tmp_path / "r.db")
    out = tmp_path / "x.jsonl"
    out.write_text("old\n")
    code, text = invoke(["results", "export", "--db", str(db), "--format", "jsonl", "--out", str(out)])
    assert code == 0, text
    assert len(out.read_text().splitlines()) == 2 and oct(out.stat().st_mode & 0o777) != oct(0o600)
    # a write that fails part-way (full disk) keeps the previous file and leaves no temporary behind
    out.write_text("old\n")
    with pytest.raises(OutputError, match="disk is full"):
        with atomic_file(out, "the jsonl export") as fh:
            fh.write("partial")
            raise OSError(28, "No space left on device")
    assert out.read_text() == "old\n"
    assert leftovers(tmp_path, ".x.jsonl") == []
