"""`py:` factories and `module:Class` strategies from the user's own files (issue 35 item 9):
factory options are parsed by the factory's type hints, and a missing module and a missing
name are different one-line messages."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from parallelbench.cli import app

runner = CliRunner()

FACTORY = '''
from typing import Literal, Optional

SEEN = []


def make(dim: int = 8, scale: float = 1.0, greedy: bool = False, kind: Literal["a", "b"] = "a",
         name: str = "x", width: Optional[int] = None, loose=None):
    SEEN.append(dict(dim=dim, scale=scale, greedy=greedy, kind=kind, name=name, width=width, loose=loose))
    from parallelbench.models.ideal.bench import IdealBenchModel

    return IdealBenchModel(name="pbf_ideal")


def helper():
    return None
'''

STRATEGY = '''
from parallelbench.decoding.presets import ConfidenceTopK


class Mine(ConfidenceTopK):
    pass
'''


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pbf_models.py").write_text(textwrap.dedent(FACTORY))
    (tmp_path / "pbf_strat.py").write_text(textwrap.dedent(STRATEGY))
    yield tmp_path
    for name in ("pbf_models", "pbf_strat"):
        sys.modules.pop(name, None)


def _dry(*args: str):
    return runner.invoke(app, ["run", "--tasks", "waiting_line/copy", "--limit", "2", "--db", "x.db", "--dry-run", *args])


def _line(result) -> str:
    text = result.output.strip()
    assert result.exit_code == 2, text
    assert len(text.splitlines()) == 1 and "Traceback" not in text, text
    return text


@pytest.mark.parametrize("option, expected", [
    ("dim=abc", "option dim='abc' does not fit make(dim: int); give an integer"),
    ("dim=2.5", "option dim=2.5 does not fit make(dim: int); give an integer"),
    ("scale=fast", "option scale='fast' does not fit make(scale: float); give a number"),
    ("greedy=maybe", "option greedy='maybe' does not fit make(greedy: bool); give true or false"),
    ("kind=c", "option kind='c' does not fit make(kind: Literal['a', 'b']); give one of 'a', 'b'"),
    ("width=wide", "give an integer or none"),
])
def test_factory_options_that_do_not_fit_the_type_hints_are_one_line(workdir, option, expected):
    text = _line(_dry("--model", "py:pbf_models:make", "--model-opt", option))
    assert "model 'py:pbf_models:make'" in text and expected in text, text
    assert not (workdir / "x.db").exists()


def test_factory_options_reach_the_factory_as_its_type_hints_say(workdir):
    from parallelbench.models.registry import load_model

    load_model("py:pbf_models:make", dim="4", scale=2, greedy="true", kind="b", name=5, width="none", loose="7")
    seen = sys.modules["pbf_models"].SEEN[-1]
    assert seen == dict(dim=4, scale=2.0, greedy=True, kind="b", name="5", width=None, loose="7")
    assert type(seen["scale"]) is float
    res = runner.invoke(app, ["run", "--model", "py:pbf_models:make", "--model-opt", "dim=3", "--model-opt", "name=7",
                              "--tasks", "waiting_line/copy", "--strategy", "confidence-topk", "--k", "1", "--limit", "1",
                              "--db", "r.db", "--no-report", "--no-progress"])
    assert res.exit_code == 0, res.output
    assert sys.modules["pbf_models"].SEEN[-1]["name"] == "7" and sys.modules["pbf_models"].SEEN[-1]["dim"] == 3


def test_missing_function_and_missing_module_are_different_lines(workdir):
    missing_name = _line(_dry("--model", "py:pbf_models:nope"))
    assert "module pbf_models" in missing_name and "has no 'nope'; its functions: helper, make" in missing_name
    assert "no module named" not in missing_name
    missing_module = _line(_dry("--model", "py:pbf_nomod:make"))
    assert "no module named 'pbf_nomod'" in missing_module and "has no" not in missing_module


def test_missing_class_and_missing_module_are_different_lines(workdir):
    missing_class = _line(_dry("--strategy", "pbf_strat:NoSuchClass"))
    assert missing_class == (f"error: cannot load strategy 'pbf_strat:NoSuchClass': module pbf_strat "
                             f"({workdir / 'pbf_strat.py'}) has no 'NoSuchClass'; its Strategy classes: Mine")
    missing_module = _line(_dry("--strategy", "pbf_nostrat:Mine"))
    assert "no module named 'pbf_nostrat'" in missing_module and "[]" not in missing_module
    assert "has no" not in missing_module
    not_a_strategy = _line(_dry("--strategy", "pbf_models:make"))
    assert "'pbf_models:make' is a function, not a subclass of parallelbench.decoding.Strategy" in not_a_strategy


def test_a_module_failing_on_import_says_so(workdir):
    (workdir / "pbf_broken.py").write_text("import pbf_not_installed_dependency\n")
    text = _line(_dry("--strategy", "pbf_broken:Mine"))
    assert "importing pbf_broken failed (ModuleNotFoundError: No module named 'pbf_not_installed_dependency')" in text
    sys.modules.pop("pbf_broken", None)
