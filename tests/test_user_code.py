"""Code runs only on request: a stray module in the working directory is never imported for
built-in models, and an explicit `py:`/`module:Class` spec imports from it for that import only."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from test_runner_fakes import FAKE_MODELS, MY_STRATEGY

SRC = str(Path(__file__).resolve().parents[1] / "src")
PLANTED = ("numpy", "html", "json", "random", "sqlite3", "typer", "rich", "torch", "yaml")


def plant(directory: Path) -> None:
    """Modules named like the ones the run imports, each leaving a marker file when imported."""
    for name in PLANTED:
        (directory / f"{name}.py").write_text(
            f"open({str(directory / ('IMPORTED_' + name))!r}, 'w').write('x')\n"
            "raise SystemExit('planted module executed')\n"
        )


def launch(args: list[str], cwd: Path, launcher_dir: Path) -> subprocess.CompletedProcess:
    """`parallelbench ...` as the installed console script runs it: the script's folder, not the
    current directory, is first on sys.path."""
    launcher = launcher_dir / "parallelbench_script.py"
    launcher.write_text("import sys\nfrom parallelbench.cli import main\nsys.exit(main())\n")
    env = {**os.environ, "PYTHONPATH": SRC, "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, str(launcher), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def test_builtin_model_run_and_report_never_import_planted_modules(tmp_path: Path) -> None:
    work, bin_dir = tmp_path / "work", tmp_path / "bin"
    work.mkdir()
    bin_dir.mkdir()
    plant(work)
    proc = launch(
        ["run", "--model", "tiny", "--tasks", "waiting_line/copy", "--limit", "2", "--strategy", "confidence-topk",
         "--k", "1", "--no-progress", "--db", "r.db", "--out", "out"],
        work, bin_dir,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (work / "out" / "report.html").is_file()  # the report (which imports html) was written
    proc = launch(["results", "--db", "r.db"], work, bin_dir)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert sorted(p.name for p in work.glob("IMPORTED_*")) == []


def test_python_m_entry_drops_the_implicit_cwd_for_later_imports(tmp_path: Path) -> None:
    """`python -m parallelbench.cli` puts the cwd first; modules imported after start-up
    (html for the report) must still come from the install."""
    (tmp_path / "html.py").write_text(f"open({str(tmp_path / 'IMPORTED_html')!r}, 'w').write('x')\n")
    env = {**os.environ, "PYTHONPATH": SRC, "COLUMNS": "200"}
    proc = subprocess.run(
        [sys.executable, "-m", "parallelbench.cli", "run", "--model", "tiny", "--tasks", "waiting_line/copy",
         "--limit", "1", "--strategy", "confidence-topk", "--k", "1", "--no-progress", "--db", "r.db", "--out", "out"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert not (tmp_path / "IMPORTED_html").exists()


def test_explicit_specs_import_from_cwd_with_planted_neighbours(tmp_path: Path) -> None:
    """py:<module>:<function> and module:Class load from the cwd, and nothing else there runs."""
    work, bin_dir = tmp_path / "work", tmp_path / "bin"
    work.mkdir()
    bin_dir.mkdir()
    plant(work)
    (work / "fake_models.py").write_text(FAKE_MODELS)
    (work / "my_module.py").write_text(MY_STRATEGY)
    proc = launch(
        ["run", "--model", "py:fake_models:make", "--tasks", "waiting_line/copy", "--limit", "2",
         "--strategy", "my_module:MyStrategy", "--k", "1", "--no-progress", "--no-report", "--db", "r.db"],
        work, bin_dir,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "2 rows added" in proc.stdout
    assert sorted(p.name for p in work.glob("IMPORTED_*")) == []


def test_user_import_is_scoped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from parallelbench.userimport import import_user_module, load_user_attr

    name = "pb_scoped_user_mod"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent("VALUE = 41 + 1\n"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, name, raising=False)
    before = list(sys.path)
    assert load_user_attr(f"{name}:VALUE") == 42
    assert sys.path == before  # the cwd was on the path for that import only
    assert import_user_module(name).VALUE == 42
    with pytest.raises(ImportError):
        load_user_attr("no_such_module_here_xyz:f")
    assert sys.path == before
