"""The report, `results` and `leaderboard` survive any strategy, task or model name
(unicode, 10,000 characters, NUL, "..", HTML and "</script>") and any declared strategy
kind: names are escaped and cut for display, files stay inside --out, nothing crashes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from parallelbench.analysis.report import build_report, load_frame
from parallelbench.cli import app
from parallelbench.display import LIMIT, display_name
from parallelbench.runner.job import run_job
from parallelbench.runner.spec import RunSpec
from parallelbench.runner.store import ResultsStore, canonical_json
from test_runner_fakes import MY_STRATEGY, workdir  # noqa: F401  (fixture)
from test_runner_store import make_row

HOSTILE = [
    "..",
    ".",
    "</script><script>alert(1)</script>",
    '<img src=x onerror="alert(2)">',
    "名前🙂 ünïcode",
    "nul\x00byte",
    "x" * 10_000,
    "../../outside",
    "[bold red]markup[/]",
    "'\"&amp;",
    "\u202eevil\u200b",
    "$\\frac{a}{b}$",
    "a/b",
    "a_b",
]
KINDS = ["topk", "adaptive", "weird", "Kind.TOPK", "", "autoregressive", "5", "None"]
INJECTIONS = ("<script>alert", "<img src=x", "onerror=\"alert")
BAD_CHARS = ("\x00", "\u202e", "\u200b")


def hostile_db(path: Path, models: list[str]) -> Path:
    rows, i = [], 0
    for model in models:
        for si, strategy in enumerate(HOSTILE):
            task = "waiting_line/copy" if si % 2 else HOSTILE[(si + 3) % len(HOSTILE)]
            for k in (1, 2):
                row = make_row(i, model=model)
                row.update(
                    strategy=strategy, strategy_kind=KINDS[si % len(KINDS)], task=task,
                    category=HOSTILE[(si + 5) % len(HOSTILE)], params=canonical_json({"k": k, "tag": strategy[:50]}),
                    config=f"{strategy}[k={k}]", tokens_per_step=[k] * 8, nfe=16 // k, num_tokens=16, tps=float(k),
                    score=float((si + k) % 2),
                )
                rows.append(row)
                i += 1
    with ResultsStore(path) as store:
        assert store.write(rows) == len(rows)
    return path


def assert_clean_text(text: str) -> None:
    for bad in BAD_CHARS:
        assert bad not in text, repr(bad)
    assert "Traceback" not in text
    assert "x" * (LIMIT + 1) not in text  # 10,000 characters are cut for display


def test_display_name() -> None:
    assert display_name("x" * 10_000) == "x" * (LIMIT - 1) + "\u2026"
    assert display_name("nul\x00byte") == "nul\ufffdbyte"
    assert display_name("") == display_name("  ") == display_name(None) == "(unnamed)"
    assert display_name("..") == ".."
    assert display_name("a\nb") == "a b"
    assert display_name("\u202eevil") == "\ufffdevil"


def test_results_and_leaderboard_commands_with_hostile_names(tmp_path: Path) -> None:
    db = hostile_db(tmp_path / "h.db", ["..", "</script>", "m\x00" + "y" * 5000])
    runner = CliRunner()
    for args in (["results", "--db", str(db)], ["leaderboard", "--db", str(db)],
                 ["results", "--db", str(db), "--model", "nobody"]):
        result = runner.invoke(app, args, env={"COLUMNS": "120"})
        assert result.exception is None or isinstance(result.exception, SystemExit), (args, result.exception)
        assert result.exit_code == 0, (args, result.output[-2000:])
        assert_clean_text(result.output)
    listing = runner.invoke(app, ["results", "--db", str(db), "--model", "nobody"], env={"COLUMNS": "120"}).output
    assert "no rows match" in listing and "</script>" in listing
    export = runner.invoke(app, ["results", "export", "--db", str(db), "--format", "jsonl", "--out", str(tmp_path / "x.jsonl")])
    assert export.exit_code == 0, export.output
    assert "x" * 10_000 in (tmp_path / "x.jsonl").read_text(encoding="utf-8")  # stored names are never changed


def test_report_with_hostile_names_escapes_cuts_and_stays_inside_out(tmp_path: Path) -> None:
    models = ["..", "</script><script>alert(3)</script>", "a/b", "a_b"]
    db = hostile_db(tmp_path / "h.db", models)
    out = tmp_path / "deep" / "out"
    page = build_report(load_frame(db), out, source=f"results from {db}")
    text = page.read_text(encoding="utf-8")
    for bad in INJECTIONS:
        assert bad not in text, bad
    for bad in BAD_CHARS:
        assert bad not in text, repr(bad)
    # one script for Plotly itself and one per interactive figure: no name opened another
    plots = len(re.findall(r'<div class="plot">', text))
    assert text.count("<script") == 1 + plots
    assert "&lt;/script&gt;&lt;script&gt;alert(3)" in text  # shown, escaped
    html_only = re.sub(r"<script.*?</script>", "", text, flags=re.S)
    assert "x" * 401 not in html_only  # at most a 400-character hover title
    cells = re.findall(r'<td class="name"[^>]*>(.*?)</td>', html_only) + re.findall(r"<h3>(.*?)</h3>", html_only)
    assert cells and max(len(c.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"').replace("&#x27;", "'").replace("&amp;", "&")) for c in cells) <= LIMIT
    # every file inside --out, none with an over-long name, and no two models sharing files
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert {p for p in files if p.name != "h.db"} <= set(out.rglob("*"))
    assert all(len(p.name.encode()) <= 255 for p in files)
    figures = sorted(p.name for p in (out / "figures").glob("tradeoff_*.png"))
    assert len(figures) == len(models), figures
    assert len(list((out / "curves").iterdir())) == len(models)


def test_report_command_on_hostile_names(tmp_path: Path) -> None:
    db = hostile_db(tmp_path / "h.db", ["名前🙂"])
    result = CliRunner().invoke(app, ["report", "--db", str(db), "--out", str(tmp_path / "rep")])
    assert result.exit_code == 0, result.output
    assert "Glyph" not in result.output  # no warning per missing glyph
    assert (tmp_path / "rep" / "report.html").is_file()


@pytest.mark.parametrize("kind", ["'greedy'", "'Kind.TOPK'", "None", "42", "object()"])
def test_custom_strategy_of_an_unexpected_kind_runs_and_reports(workdir: Path, kind: str) -> None:  # noqa: F811
    source = MY_STRATEGY.replace('kind = "topk"', f"kind = {kind}")
    assert source != MY_STRATEGY
    (workdir / "odd_strategy.py").write_text(source)
    db = workdir / "odd.db"
    spec = RunSpec().apply_flags(model="py:fake_models:make", tasks="waiting_line/copy", strategy="odd_strategy:MyStrategy",
                                 params={"k": "1,2"}, baselines=True, limit=3, db=str(db))
    run_job(spec, Console(quiet=True), show_progress=False)
    page = build_report(load_frame(db), workdir / "out", static_figures=False)
    assert "odd_strategy:MyStrategy" in page.read_text(encoding="utf-8")
    result = CliRunner().invoke(app, ["leaderboard", "--db", str(db)])
    assert result.exit_code == 0, result.output

