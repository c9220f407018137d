"""Issue 25 items 1-3 and issue 28 item 3 (runner part): a stored row is reused only while
everything that produced it is unchanged, and each change recomputes what it must.

Every case runs the same small grid twice (the ideal model, 3 samples of waiting_line/copy) and
changes one thing in between: the strategy's module, a `py:` factory's module, a model option,
the samples (same generator settings), the scorer version, the scoring mode. The unchanged
setup must still resume; `--force` recomputes; unknown options fail in one line before any work.
"""

from __future__ import annotations

import functools
import importlib
import json
import re
import sys
import textwrap
import types
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

import parallelbench.runner.spec as spec_module
import parallelbench.scoring as scoring
from parallelbench.cli import app
from parallelbench.runner.job import ModelLoadError, run_job
from parallelbench.runner.spec import RunSpec, SpecError
from parallelbench.runner.store import ResultsStore

QUIET = Console(file=open("/dev/null", "w"))
TASK = "waiting_line/copy"
N = 3

STRATEGY = '''
from dataclasses import dataclass
from parallelbench.decoding import Strategy, selection
from parallelbench.decoding.strategy import DecodeOptions


@dataclass
class MyOptions(DecodeOptions):
    k: int = 1


class MyStrategy(Strategy):
    """the k most confident{edit}"""

    Options = MyOptions
    kind = "topk"

    def select(self, view, scores):
        return selection.top_k(scores, view.candidates, self.options.k)
'''

FACTORY = '''
from parallelbench.models.ideal.bench import IdealBenchModel


def make(noise: float = 0.001, batch_size: int = 64):
    """{edit}"""
    return IdealBenchModel(noise_std=noise, batch_size=batch_size, name="mymodel")


def make_any(**options):
    return IdealBenchModel(name="anymodel")


def make_tiny():
    return IdealBenchModel(name="tiny")
'''


def _run(tmp_path: Path, **flags):
    args = {"model": "ideal", "tasks": TASK, "strategy": "confidence-topk", "params": {"k": "1"}, "limit": N,
            "db": str(tmp_path / "r.db"), **flags}
    return run_job(RunSpec().apply_flags(**args), QUIET, show_progress=False)


def _frame(tmp_path: Path, all_versions: bool = False):
    with ResultsStore(tmp_path / "r.db", create=False) as store:
        return store.frame(all_versions=all_versions)


@pytest.fixture
def user_dir(tmp_path: Path, monkeypatch):
    """A folder the user runs from, with their modules; forgotten again after the test."""
    monkeypatch.chdir(tmp_path)
    names: list[str] = []

    def write(name: str, text: str) -> None:
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(text))
        sys.modules.pop(name, None)  # a new process would import the edited file: so do we
        spec_module._PARAM_NAME_CACHE.clear()
        spec_module._DEFAULT_PARAMS.clear()
        importlib.invalidate_caches()
        names.append(name)
    yield write
    for name in names:
        sys.modules.pop(name, None)
    spec_module._PARAM_NAME_CACHE.clear()
    spec_module._DEFAULT_PARAMS.clear()


def test_an_unchanged_setup_resumes_and_force_recomputes(tmp_path: Path) -> None:
    assert _run(tmp_path).rows_added == N
    again = _run(tmp_path)
    assert (again.rows_added, again.rows_skipped, again.rows_rescored) == (0, N, 0)
    forced = _run(tmp_path, force=True)
    assert (forced.rows_added, forced.rows_skipped) == (N, 0)
    assert len(_frame(tmp_path)) == N and len(_frame(tmp_path, all_versions=True)) == 2 * N
    assert _run(tmp_path).rows_skipped == N  # the forced rows are the current version, reused from now on
    with ResultsStore(tmp_path / "r.db", create=False) as store:
        ids = [row_id for rows in store.finished("ideal").values() for row_id, _ in rows]
        current = {r["sample_id"]: r["created_at"] for r in store.iter_rows()}
    assert len(ids) == 2 * N and len(current) == N


def test_editing_a_strategy_module_recomputes(tmp_path: Path, user_dir) -> None:
    user_dir("my_strategy_mod", STRATEGY.replace("{edit}", ""))
    first = _run(tmp_path, strategy="my_strategy_mod:MyStrategy")
    assert first.rows_added == N
    assert _run(tmp_path, strategy="my_strategy_mod:MyStrategy").rows_skipped == N
    user_dir("my_strategy_mod", STRATEGY.replace("{edit}", " (edited)"))
    edited = _run(tmp_path, strategy="my_strategy_mod:MyStrategy")
    assert (edited.rows_added, edited.rows_skipped) == (N, 0)
    rows = _frame(tmp_path, all_versions=True)
    codes = {json.loads(v)["code"]["strategy"] for v in rows["versions"]}
    assert len(rows) == 2 * N and len(codes) == 2


def test_a_built_in_strategy_carries_the_engine_code(tmp_path: Path) -> None:
    from parallelbench.runner.provenance import package_fingerprint

    _run(tmp_path)
    versions = json.loads(_frame(tmp_path)["versions"].iloc[0])
    assert versions["code"] == {"strategy": package_fingerprint("decoding")}
    assert versions["model_spec"] == "ideal" and versions["scoring"] == "default"
    assert versions["sample"] and versions["scorer_version"]


def test_editing_a_factory_or_its_options_recomputes_and_rows_carry_its_name(tmp_path: Path, user_dir) -> None:
    user_dir("my_factory_mod", FACTORY.replace("{edit}", "v1"))
    spec = "py:my_factory_mod:make"
    assert _run(tmp_path, model=spec).rows_added == N
    assert _run(tmp_path, model=spec).rows_skipped == N
    frame = _frame(tmp_path)
    assert set(frame["model"]) == {"mymodel"}  # the name the model reports (issue 28 item 3)
    assert {json.loads(v)["model_spec"] for v in frame["versions"]} == {spec}  # the spec stays beside it

    user_dir("my_factory_mod", FACTORY.replace("{edit}", "v2"))
    assert _run(tmp_path, model=spec).rows_added == N  # edited factory module
    assert _run(tmp_path, model=spec, model_options=["noise=0.002"]).rows_added == N  # a changed option
    assert _run(tmp_path, model=spec, model_options=["noise=0.002"]).rows_skipped == N
    # every option a factory declares counts (it cannot say which leave outputs alone)
    assert _run(tmp_path, model=spec, model_options=["noise=0.002", "batch_size=8"]).rows_added == N
    assert len(_frame(tmp_path, all_versions=True)) == 4 * N and len(_frame(tmp_path)) == N

    for shown in (spec, "mymodel"):  # results --model finds the rows by their spec or their name
        out = CliRunner().invoke(app, ["results", "--db", str(tmp_path / "r.db"), "--model", shown],
                                 env={"COLUMNS": "200"})
        assert out.exit_code == 0 and "mymodel" in out.output and "no rows match" not in out.output, out.output


def test_a_factory_name_that_is_another_model_spec_is_refused(tmp_path: Path, user_dir) -> None:
    user_dir("my_factory_mod", FACTORY.replace("{edit}", ""))
    with pytest.raises(ModelLoadError, match="reports the name 'tiny', which is another model spec"):
        _run(tmp_path, model="py:my_factory_mod:make_tiny")


def test_changed_samples_under_the_same_settings_recompute(tmp_path: Path, monkeypatch) -> None:
    from parallelbench.tasks.base import Task

    assert _run(tmp_path).rows_added == N
    real = Task.samples

    def fixed_generator(self, limit=None):  # a generator fix: same settings, other text
        out = real(self, limit)
        for s in out:
            s.prompt = s.prompt + " "
            s.messages = [{**m, "content": m["content"] + " "} for m in s.messages]
        return out
    monkeypatch.setattr(Task, "samples", fixed_generator)
    changed = _run(tmp_path)
    assert (changed.rows_added, changed.rows_skipped) == (N, 0)
    assert _run(tmp_path).rows_skipped == N


def _count_decodes(monkeypatch) -> list[int]:
    from parallelbench.models.ideal.bench import IdealBenchModel

    calls: list[int] = []
    real = IdealBenchModel.generate

    def counted(self, samples, *a, **k):
        calls.append(len(samples))
        return real(self, samples, *a, **k)
    monkeypatch.setattr(IdealBenchModel, "generate", counted)
    return calls


def test_a_new_scorer_version_rescores_without_decoding(tmp_path: Path, monkeypatch) -> None:
    from parallelbench.scoring import base

    assert _run(tmp_path).rows_added == N
    task_scorer = __import__("parallelbench.tasks", fromlist=["get_task"]).get_task(TASK).samples(1)[0].scorer
    original = scoring.get_scorer(task_scorer)
    monkeypatch.setitem(base._SCORERS, task_scorer, original)
    monkeypatch.setattr(base, "_VERSIONS", dict(base._VERSIONS))
    monkeypatch.setattr(base, "_PAPER_SCORERS", dict(base._PAPER_SCORERS))  # re-registering drops the paper variant
    scoring.register_scorer(task_scorer, version="2")(original)  # the same rules under a new explicit version

    calls = _count_decodes(monkeypatch)
    rescored = _run(tmp_path)
    assert (rescored.rows_added, rescored.rows_rescored, rescored.rows_skipped) == (0, N, 0)
    assert calls == []  # scored again from the stored outputs: nothing decoded
    current = _frame(tmp_path)
    assert len(current) == N and all(json.loads(v)["scorer_version"].endswith("+v=2") for v in current["versions"])
    assert len(_frame(tmp_path, all_versions=True)) == 2 * N
    assert _run(tmp_path).rows_skipped == N and calls == []


def test_scoring_modes_rescore_once_and_switching_back_reuses(tmp_path: Path, monkeypatch) -> None:
    """`--scoring paper` scores stored outputs again; switching back to default decodes nothing and
    makes the default rows current again. A stand-in paper mode makes the rescored rows recognisable."""
    real_score = scoring.score

    def score_with_modes(sample, output, *, mode="default"):
        result = real_score(sample, output)
        if mode == "paper":
            result.score = 0.25  # recognisable
        return result
    monkeypatch.setattr(scoring, "score", score_with_modes)
    monkeypatch.setattr(scoring, "score_many", lambda samples, outputs, mode="default": [
        score_with_modes(s, o, mode=mode) for s, o in zip(samples, outputs)])

    assert _run(tmp_path).rows_added == N
    calls = _count_decodes(monkeypatch)
    paper = _run(tmp_path, scoring="paper")
    assert (paper.rows_added, paper.rows_rescored) == (0, N) and calls == []
    assert set(_frame(tmp_path)["score"]) == {0.25}
    back = _run(tmp_path)
    assert (back.rows_added, back.rows_rescored, back.rows_skipped) == (0, 0, N) and calls == []
    assert set(_frame(tmp_path)["score"]) == {1.0}  # the default rows are the current version again
    assert len(_frame(tmp_path, all_versions=True)) == 2 * N


def test_an_unknown_scoring_mode_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"unknown scoring mode 'exact'; valid modes: default, paper"):
        _run(tmp_path, scoring="exact")
    result = CliRunner().invoke(app, ["run", "-m", "ideal", "-t", TASK, "-s", "random", "--k", "1", "-n", "1",
                                      "--scoring", "exact", "--db", str(tmp_path / "x.db"), "--no-report"])
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert result.exit_code == 2 and len(lines) == 1 and "valid modes: default, paper" in lines[0]
    assert not (tmp_path / "x.db").exists()


def _refused_option(tmp_path: Path, user_dir, model: str, option: str) -> str:
    """`parallelbench run -m MODEL --model-opt OPTION`: the one line it exits 2 with, before any database."""
    user_dir("my_factory_mod", FACTORY.replace("{edit}", ""))
    result = CliRunner().invoke(app, ["run", "-m", model, "-t", TASK, "-s", "random", "--k", "1", "-n", "1",
                                      "--model-opt", option, "--db", str(tmp_path / "x.db"), "--no-report"],
                                env={"COLUMNS": "300"})
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert result.exit_code == 2 and len(lines) == 1, result.output
    assert not (tmp_path / "x.db").exists()
    return lines[0]


@pytest.mark.parametrize("model,valid", [
    ("tiny", "batch_size, path, threads"),
    ("tiny-uniform", "batch_size, path"),
    ("ideal", "batch_size, noise_std"),
    ("hf:someone/some-model", "adapter, batch_size, cache"),
    ("api:some-model", "api_key, backoff, base_url"),
    ("py:my_factory_mod:make", "batch_size, noise"),
])
def test_unknown_model_options_fail_in_one_line_before_loading(tmp_path: Path, user_dir, model: str,
                                                                valid: str) -> None:
    line = _refused_option(tmp_path, user_dir, model, "temp=50.0")
    assert "unknown" in line and "temp" in line and f"valid: {valid}" in line


@pytest.mark.parametrize("model", ["tiny", "ideal", "api:some-model", "py:my_factory_mod:make"])
def test_compile_for_a_model_without_a_compile_path_names_those_that_have_one(tmp_path: Path, user_dir,
                                                                             model: str) -> None:
    # issue 33: compile=true where it cannot work is one line naming the families that have a compile path
    line = _refused_option(tmp_path, user_dir, model, "compile=true")
    assert "compile=true" in line and all(f in line for f in ("LLaDA", "Dream", "SDAR", "LLaDA 2.x"))
    assert repr(model) in line


def test_a_factory_with_kwargs_accepts_any_option(tmp_path: Path, user_dir) -> None:
    user_dir("my_factory_mod", FACTORY.replace("{edit}", ""))
    assert _run(tmp_path, model="py:my_factory_mod:make_any", model_options=["temp=50.0"]).rows_added == N
    assert _run(tmp_path, model="py:my_factory_mod:make_any", model_options=["temp=3.0"]).rows_added == N


def test_code_without_a_source_file_is_recomputed_with_a_note(tmp_path: Path, monkeypatch) -> None:
    """A strategy typed into an interactive session and a factory with no Python source: no fingerprint,
    so their rows are recomputed on every run (never silently reused), with one note line each."""
    from parallelbench.decoding import Strategy
    from parallelbench.models.ideal.bench import IdealBenchModel

    live = types.ModuleType("live_session_mod")  # like __main__ in a notebook: no __file__
    exec(textwrap.dedent('''
        from parallelbench.decoding import Strategy, selection
        class LiveStrategy(Strategy):
            kind = "topk"
            def select(self, view, scores):
                return selection.top_k(scores, view.candidates, 1)
    '''), live.__dict__)
    live.make = functools.partial(IdealBenchModel, name="livemodel")  # no source to read
    monkeypatch.setitem(sys.modules, "live_session_mod", live)
    assert issubclass(live.LiveStrategy, Strategy)

    for _ in range(2):
        res = _run(tmp_path, strategy="live_session_mod:LiveStrategy", params={})
        assert res.rows_added == N and res.rows_skipped == 0
        assert any("strategy 'live_session_mod:LiveStrategy' cannot be fingerprinted" in n for n in res.notes)
    for _ in range(2):
        res = _run(tmp_path, model="py:live_session_mod:make")
        assert res.rows_added == N and res.rows_skipped == 0
        assert any("factory 'py:live_session_mod:make' cannot be fingerprinted" in n for n in res.notes)


def test_fingerprints_hold_no_paths_and_are_cheap() -> None:
    import time

    from parallelbench.runner.provenance import Provenance, package_fingerprint, sample_fingerprint
    from parallelbench.tasks import get_task

    package_fingerprint.cache_clear()
    began = time.perf_counter()
    fp = package_fingerprint("decoding")
    assert len(fp) == 16 and int(fp, 16) >= 0
    assert time.perf_counter() - began < 5  # read once per process, not per row
    sample = get_task(TASK).samples(1)[0]
    assert sample_fingerprint(sample) == sample_fingerprint(get_task(TASK).samples(1)[0])
    prov = Provenance()
    version = prov.scorer_version(sample.scorer)
    assert "/" not in version and str(Path.cwd()) not in version


def test_run_force_on_the_command_line(tmp_path: Path) -> None:
    args = ["run", "-m", "ideal", "-t", TASK, "-s", "confidence-topk", "--k", "1", "-n", str(N), "--no-report",
            "--no-progress", "--db", str(tmp_path / "r.db")]
    env = {"COLUMNS": "200"}
    assert "--force" in CliRunner().invoke(app, ["run", "--help"], env=env).output
    assert f"({N} rows added, 0 already there" in CliRunner().invoke(app, args, env=env).output
    assert f"(0 rows added, {N} already there" in CliRunner().invoke(app, args, env=env).output
    forced = CliRunner().invoke(app, [*args, "--force"], env=env)
    assert forced.exit_code == 0 and f"({N} rows added, 0 already there" in forced.output
    shown = CliRunner().invoke(app, ["results", "--db", str(tmp_path / "r.db"), "--all-versions"], env=env)
    assert shown.exit_code == 0 and re.search(r"^ideal v:[0-9a-f]{8}: ", shown.output, re.M)  # by decoding version
    assert len(_frame(tmp_path)) == N and len(_frame(tmp_path, all_versions=True)) == 2 * N


def test_options_that_change_outputs_recompute_and_neutral_ones_do_not(tmp_path: Path) -> None:
    assert _run(tmp_path).rows_added == N
    assert _run(tmp_path, model_options=["batch_size=2"]).rows_skipped == N  # batching leaves rows alone
    assert _run(tmp_path, model_options=["noise_std=0.01"]).rows_added == N  # the model's noise does not
    assert _run(tmp_path, model_options=["noise_std=0.01", "batch_size=4"]).rows_skipped == N
    versions = json.loads(_frame(tmp_path)["versions"].iloc[0])
    assert versions["model_options"] == {"noise_std": 0.01}


def test_the_documented_yaml_spec_plans(tmp_path: Path, user_dir) -> None:
    """docs/runner.md's grid.yaml passes the option checks (every model of it takes its options)."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "runner.md").read_text()
    block = text.split("# grid.yaml", 1)[1].split("```", 1)[0]
    user_dir("my_module", STRATEGY.replace("{edit}", ""))  # the spec names my_module:MyStrategy
    (tmp_path / "grid.yaml").write_text("# grid.yaml" + block)
    spec = RunSpec.from_yaml(tmp_path / "grid.yaml")
    assert spec.model_options and spec.scoring == "default"
    plan = spec.plan()
    assert plan.models == ["tiny", "ideal"]


def test_store_supersede_and_promote_keep_every_row(tmp_path: Path) -> None:
    base = {"model": "m", "strategy": "s", "params": "{}", "task": "t", "seed": 0, "output": "x", "score": 1.0}
    with ResultsStore(tmp_path / "s.db") as store:
        store.write([{**base, "sample_id": str(i), "provenance": "a-1"} for i in range(3)])
        assert store.write([{**base, "sample_id": "0", "provenance": "a-1", "output": "y"}]) == 0  # a duplicate
        assert store.write([{**base, "sample_id": "0", "provenance": "a-1", "output": "y"}], supersede=True) == 1
        versions = store.finished("m")[("s", "{}", "t", "0", 0)]
        assert [prov for _, prov in versions] == [f"a-1~{versions[0][0]}", "a-1"]  # the old one kept, marked
        store.write([{**base, "sample_id": "1", "provenance": "a-2", "output": "z"}])
        assert store.promote([2]) == 1  # the first version of sample 1 is current again
        store.write([{**base, "sample_id": "9", "provenance": "a-1"}])  # new ids still come after
        current = {r["sample_id"]: r["output"] for r in store.iter_rows()}
        assert current == {"0": "y", "1": "x", "2": "x", "9": "x"}
        assert store.count() == 6 and len(store.frame(all_versions=True)) == 6
        last = store._conn.execute("SELECT sample_id FROM results ORDER BY id DESC LIMIT 1").fetchone()[0]
        assert last == "9"
