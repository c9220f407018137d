"""lm-evaluation-harness both ways, run for real (offline): our engine as an lm-eval model,
our tasks as an lm-eval task folder, and the same numbers through both doors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

lm_eval = pytest.importorskip("lm_eval")

from parallelbench.cli import app  # noqa: E402
from parallelbench.integrations.lm_eval_tasks import doc_of, export_lm_eval, lm_eval_task_name  # noqa: E402
from parallelbench.tasks import registry  # noqa: E402
from parallelbench.tasks import get_task  # noqa: E402

runner = CliRunner()


def _instance(context: str, kwargs: dict, doc: dict | None = None, idx: int = 0):
    from lm_eval.api.instance import Instance

    return Instance(request_type="generate_until", doc=doc or {}, arguments=(context, kwargs), idx=idx)


def test_importing_the_module_registers_the_model() -> None:
    from lm_eval.api.registry import get_model

    from parallelbench.integrations.lm_eval import ParallelBenchLM

    assert get_model("parallelbench") is ParallelBenchLM


def test_generate_until_cuts_at_stops_honours_per_request_length_and_records_nfe() -> None:
    from parallelbench.integrations.lm_eval import ParallelBenchLM

    lm = ParallelBenchLM(model="tiny", strategy="confidence-topk", k=2, gen_length=32, batch_size=2)
    samples = get_task("waiting_line/copy").samples(3)
    docs = [doc_of(s) for s in samples]
    reqs = [
        _instance(docs[0]["text"], {"until": [], "max_gen_toks": 32}, docs[0], 0),
        _instance(docs[1]["text"], {"until": [","], "max_gen_toks": 32}, docs[1], 1),
        _instance(docs[2]["text"], {"until": [], "max_gen_toks": 16}, docs[2], 2),
    ]
    out = lm.generate_until(reqs)
    assert len(out) == 3
    assert "," not in out[1]  # cut at the stop string
    full = lm.generate_until([_instance(docs[1]["text"], {"until": [], "max_gen_toks": 32}, docs[1], 0)])[0]
    assert full.startswith(out[1]) and len(full) > len(out[1])
    first = lm.stats[0]
    assert first["nfe"] == 16 and first["num_tokens"] == 32 and first["tokens_per_step"] == pytest.approx(2.0)
    assert lm.stats[2]["nfe"] == 8  # its own max_gen_toks: 16 tokens at 2 per step
    assert reqs[0].args[1]["parallelbench"]["nfe"] == 16  # lands in lm-eval's per-sample log
    assert "tokens per step" in lm.summary()


def test_bad_model_arguments_are_one_line() -> None:
    from parallelbench.integrations.lm_eval import ParallelBenchLM, ParallelBenchLMError

    with pytest.raises(ParallelBenchLMError, match="batch_size"):
        ParallelBenchLM(model="tiny", strategy="confidence-topk", k=2, batch_size="many")


def _run_db_scores(tmp_path: Path, task: str, limit: int) -> dict[str, float]:
    db = tmp_path / "run.db"
    res = runner.invoke(app, ["run", "--model", "tiny", "--tasks", task, "--strategy", "confidence-topk", "--k", "2",
                              "--limit", str(limit), "--db", str(db), "--no-report"])
    assert res.exit_code == 0, res.output
    from parallelbench.runner.store import ResultsStore

    with ResultsStore(db, create=False) as store:
        frame = store.frame()
    return {str(r.sample_id): float(r.score) for r in frame.itertuples()}


def _run_frame(tmp_path: Path):
    from parallelbench.runner.store import ResultsStore

    with ResultsStore(tmp_path / "run.db", create=False) as store:
        return store.frame()


def lm_eval_samples(tmp_path: Path, task: str, limit: int, model_args: str) -> tuple[str, list[dict]]:
    """Export `task`, evaluate it with `parallelbench lm-eval` and our model, return (task name, logged rows)."""
    res = runner.invoke(app, ["tasks", "export", "--format", "lm-eval", "--tasks", task, "--limit", str(limit),
                              "--out", "pb_tasks"])
    assert res.exit_code == 0, res.output
    name = lm_eval_task_name(task)
    res = runner.invoke(app, ["lm-eval", "--model", "parallelbench", "--model_args", model_args,
                              "--include_path", "pb_tasks", "--tasks", name, "--limit", str(limit),
                              "--log_samples", "--output_path", "lm_out"])
    assert res.exit_code == 0, res.output
    logged = list((tmp_path / "lm_out").rglob(f"samples_{name}_*.jsonl"))
    assert logged, "lm-eval wrote no per-sample log"
    return name, [json.loads(line) for line in logged[0].read_text().splitlines() if line.strip()]


def test_parallelbench_run_and_parallelbench_lm_eval_agree(tmp_path: Path, monkeypatch) -> None:
    task, limit = "waiting_line/insert_random", 6
    monkeypatch.chdir(tmp_path)
    name, rows = lm_eval_samples(tmp_path, task, limit, "model=tiny,strategy=confidence-topk,k=2,batch_size=8")
    assert len(rows) == limit
    via_lm_eval = {json.loads(r["doc"]["parallelbench_sample"])["id"]: float(r["score"]) for r in rows}
    assert all(r["arguments"]["gen_args_0"]["arg_1"]["parallelbench"]["tokens_per_step"] == pytest.approx(2.0)
               for r in rows)  # NFE and tokens per step read back from lm-eval's own log
    # the per-sample decoding metadata reached the task's metrics: 32 tokens at 2 per step
    assert all(r["nfe"] == 16 and r["tokens_per_step"] == 2.0 and r["input_length"] > 0 for r in rows)
    assert all(-1.0 <= r["dec_order_kendall_ignore_pad"] <= 1.0 for r in rows)
    via_run = _run_db_scores(tmp_path, task, limit)
    assert via_lm_eval == via_run
    assert 0.0 < sum(via_run.values()) < limit  # insert random at k=2 is neither all right nor all wrong here (4 of 6 with the shipped weights)
    results = json.loads(next((tmp_path / "lm_out").rglob("results_*.json")).read_text())["results"][name]
    assert results["score,none"] == pytest.approx(100 * sum(via_run.values()) / limit)  # 0..100
    assert results["nfe,none"] == 16 and results["tokens_per_step,none"] == 2.0
    frame = _run_frame(tmp_path)
    for key in ("dec_order_kendall", "dec_order_spearman", "dec_order_kendall_ignore_pad", "dec_order_spearman_ignore_pad"):
        mean = sum(r[key] for r in rows) / limit
        assert results[f"{key},none"] == pytest.approx(mean)
        assert mean == pytest.approx(frame[key].mean())  # the same decoding, the same order metrics


def _tiny_causal_lm(folder: Path) -> Path:
    """A random-weight Llama with a byte-level BPE tokenizer, written the way the hub stores one."""
    from tokenizers import ByteLevelBPETokenizer
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    bpe = ByteLevelBPETokenizer()
    text = [s.prompt + " " + s.answer for s in get_task("waiting_line/copy").samples(40)]
    bpe.train_from_iterator(text, vocab_size=400, min_frequency=1, special_tokens=["<|endoftext|>"])
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe._tokenizer, eos_token="<|endoftext|>",
                                  pad_token="<|endoftext|>", bos_token="<|endoftext|>")
    tok.save_pretrained(folder)
    import torch

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=4096,
                      eos_token_id=tok.eos_token_id, bos_token_id=tok.bos_token_id, pad_token_id=tok.pad_token_id)
    LlamaForCausalLM(cfg).save_pretrained(folder)
    return folder


def test_lm_eval_command_line_scores_an_autoregressive_model_on_the_exported_tasks(tmp_path: Path) -> None:
    tasks = [get_task("waiting_line/copy"), get_task("puzzle/sudoku")]
    export_lm_eval(tasks, tmp_path / "pb_tasks", limit=2)
    model = _tiny_causal_lm(tmp_path / "tiny-llama")
    cmd = [sys.executable, "-m", "lm_eval", "--model", "hf", "--model_args", f"pretrained={model}",
           "--include_path", str(tmp_path / "pb_tasks"), "--tasks", "parallelbench_all", "--limit", "2",
           "--device", "cpu", "--gen_kwargs", "max_gen_toks=8", "--output_path", str(tmp_path / "out")]
    env = {**__import__("os").environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = list((tmp_path / "out").rglob("results_*.json"))
    assert results, proc.stdout[-2000:]
    data = json.loads(results[0].read_text())["results"]
    for name in ("parallelbench_waiting_line_copy", "parallelbench_puzzles_sudoku_n4"):
        for metric in ("score", "score_strict"):
            assert 0.0 <= data[name][f"{metric},none"] <= 100.0  # scored by our scorers through lm-eval's pipeline
        assert data[name]["nfe,none"] == 0.0  # lm-eval's hf model records no decoding metadata: zeros, as upstream
    for group in ("parallelbench_all", "parallelbench_waiting_line", "parallelbench_puzzles"):
        assert "score,none" in data[group], group


def test_an_lm_eval_task_of_its_own_runs_with_the_closed_vocabulary_tiny_model(tmp_path: Path, monkeypatch) -> None:
    """A task defined from local files (not ours): words tiny never saw are left out and counted."""
    rows = [{"question": "Repeat these names: Susan Fox, Philip Gray. Answer:", "answer": "Susan Fox, Philip Gray"},
            {"question": "What is the capital of France? Answer:", "answer": "Paris"}]
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "echo.yaml").write_text(
        "task: pb_test_echo\ndataset_path: json\ndataset_kwargs:\n  data_files:\n"
        f"    test: {json.dumps(str(data))}\ntest_split: test\noutput_type: generate_until\n"
        "doc_to_text: \"{{question}}\"\ndoc_to_target: \"{{answer}}\"\n"
        "generation_kwargs:\n  until: [\"\\n\"]\n  max_gen_toks: 16\n"
        "metric_list:\n  - metric: exact_match\n    aggregation: mean\n    higher_is_better: true\n"
        "metadata:\n  version: 1.0\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    res = runner.invoke(app, ["lm-eval", "--model", "parallelbench",
                              "--model_args", "model=tiny,strategy=confidence-topk,k=2",
                              "--include_path", "tasks", "--tasks", "pb_test_echo", "--limit", "2",
                              "--output_path", "out"])
    assert res.exit_code == 0, res.output
    assert list((tmp_path / "out").rglob("results_*.json"))


def test_without_unknown_leaves_out_only_what_tiny_cannot_encode() -> None:
    from parallelbench.models.registry import load_model

    tok = load_model("tiny").tokenizer
    text, dropped = tok.without_unknown("Susan Fox quantum Philip Gray")
    assert dropped >= 1 and "quantum" not in text and text.startswith("Susan Fox")
    tok.encode(text)  # encodes now
    assert tok.without_unknown(text) == (text, 0)


# ---- the rewrite's layout --------------------------------------------------------------------------

REWRITE_NAMES = {
    "puzzle/sudoku": "parallelbench_puzzles_sudoku_n4",
    "puzzle/latin_square": "parallelbench_puzzles_latin_square_n4",
    "text_writing/paraphrasing": "parallelbench_text_writing_paraphrasing",
    "text_writing/summarization": "parallelbench_text_writing_summarization",
    "text_writing/w2s_easy": "parallelbench_text_writing_words_to_sentence_easy",
    "text_writing/w2s_medium": "parallelbench_text_writing_words_to_sentence_medium",
    "text_writing/w2s_hard": "parallelbench_text_writing_words_to_sentence_hard",
    **{f"waiting_line/{op}": f"parallelbench_waiting_line_{op}" for op in (
        "copy", "sort", "reverse", "shuffle", "insert_index", "insert_random", "remove_index", "remove_random",
        "replace_index", "replace_random")},
}


def test_task_names_are_the_rewrites():
    assert {t: lm_eval_task_name(t) for t in REWRITE_NAMES} == REWRITE_NAMES


def test_export_writes_the_rewrites_groups_stops_and_metrics(tmp_path: Path):
    import yaml

    paper = [t for t in registry().values() if t.in_paper]
    assert {t.id for t in paper} == set(REWRITE_NAMES)
    rows = export_lm_eval(paper, tmp_path, limit=1)
    assert {name for name, _, _ in rows} == set(REWRITE_NAMES.values())

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_constructor("!function", lambda loader, node: f"!function {loader.construct_scalar(node)}")
    top = yaml.load((tmp_path / "_parallelbench.yaml").read_text(), Loader=Loader)
    assert top["group"] == "parallelbench_all"
    assert top["task"] == ["parallelbench_waiting_line", "parallelbench_text_writing", "parallelbench_puzzles"]
    members = {}
    for folder in ("waiting_line", "text_writing", "puzzles"):
        group = yaml.load((tmp_path / folder / "_default.yaml").read_text(), Loader=Loader)
        assert group["group"] == f"parallelbench_{folder}"
        members[folder] = set(group["task"])
    assert members["puzzles"] == {"parallelbench_puzzles_sudoku_n4", "parallelbench_puzzles_latin_square_n4"}
    assert len(members["waiting_line"]) == 10 and len(members["text_writing"]) == 5
    decoding = ["nfe", "tokens_per_step", "input_length", "output_length", "dec_order_kendall",
                "dec_order_spearman", "dec_order_kendall_ignore_pad", "dec_order_spearman_ignore_pad"]
    for name, path, count in rows:
        cfg = yaml.load(path.read_text(), Loader=Loader)
        assert cfg["task"] == name and count == 1
        until = cfg["generation_kwargs"]["until"]
        assert until == (["\n\n\n"] if "puzzles" in name else ["\n\n"])
        metrics = [m["metric"] for m in cfg["metric_list"]]
        assert metrics[0] == "score" and metrics[-8:] == decoding
        assert metrics[-10:-8] == ["unmask_score", "edits"]  # repair by editing (issue 32 item 4)
        if "text_writing" not in name:
            assert metrics[:2] == ["score", "score_strict"]
        scored = [m for m in cfg["metric_list"] if m["metric"] not in decoding + ["edits"]]
        assert all(m["aggregation"] == "!function utils.percent_mean" for m in scored)  # 0..100
        assert (path.parent / "utils.py").exists() and (path.parent / cfg["dataset_kwargs"]["data_file"]).exists()


def test_sample_metrics_of_an_exported_doc_use_the_recorded_metadata(monkeypatch):
    from parallelbench.integrations import lm_eval_metrics as m

    sample = get_task("puzzle/sudoku").samples(1)[0]
    doc = doc_of(sample)
    assert m.sample_metrics(doc, sample.answer) == {"score": 1.0, "score_strict": 1.0, "unmask_score": 1.0, "edits": 0.0,
                                                    **dict.fromkeys(m.DECODING_METRICS, 0.0)}
    m.record(sample.id, m.decoding_metadata([0, 1, 2], [3], nfe=4, gen_length=64, input_length=10, output_length=3))
    got = m.sample_metrics(doc, sample.answer)
    assert (got["nfe"], got["tokens_per_step"], got["input_length"], got["output_length"]) == (4.0, 16.0, 10.0, 3.0)
    assert got["dec_order_kendall"] == got["dec_order_kendall_ignore_pad"] == 1.0
    monkeypatch.setenv("PARALLELBENCH_SCORING", "paper")
    assert m.sample_metrics(doc, sample.answer)["score"] == 1.0  # grids one row per line: right in both modes
    latin = get_task("puzzle/latin_square").samples(1)[0]
    first, _, rest = latin.answer.partition("\n")
    extra_cell = f"{first},{first[0]}\n{rest}"  # a fifth, repeated cell: only the paper's metric accepts it
    assert m.sample_metrics(doc_of(latin), extra_cell)["score"] == 1.0
    monkeypatch.setenv("PARALLELBENCH_SCORING", "default")
    assert m.sample_metrics(doc_of(latin), extra_cell)["score"] == 0.0
    monkeypatch.setenv("PARALLELBENCH_SCORING", "strict")
    with pytest.raises(ValueError, match="valid: default, paper"):
        m.sample_metrics(doc, sample.answer)


def test_structured_family_is_a_group_of_its_own_outside_parallelbench_all(tmp_path: Path, monkeypatch) -> None:
    """Issue 34: `parallelbench_structured` is a top-level group of ours; `parallelbench_all` (the
    authors' aggregate) keeps its three subgroups. lm-eval runs the group and aggregates it."""
    import yaml

    monkeypatch.chdir(tmp_path)
    res = runner.invoke(app, ["tasks", "export", "--format", "lm-eval", "--tasks", "paper,structured", "--limit", "2",
                              "--out", "pb_tasks"])
    assert res.exit_code == 0, res.output

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_constructor("!function", lambda loader, node: f"!function {loader.construct_scalar(node)}")
    top = yaml.load((tmp_path / "pb_tasks" / "_parallelbench.yaml").read_text(), Loader=Loader)
    assert top["task"] == ["parallelbench_waiting_line", "parallelbench_text_writing", "parallelbench_puzzles"]
    group = yaml.load((tmp_path / "pb_tasks" / "structured" / "_default.yaml").read_text(), Loader=Loader)
    names = ["parallelbench_structured_json_fields", "parallelbench_structured_json_any_order",
             "parallelbench_structured_tool_call"]
    assert group["group"] == "parallelbench_structured" and group["task"] == names
    task_cfg = yaml.load((tmp_path / "pb_tasks" / "structured" / f"{names[0]}.yaml").read_text(), Loader=Loader)
    assert [m["metric"] for m in task_cfg["metric_list"]][:2] == ["score", "score_strict"]
    assert task_cfg["generation_kwargs"]["max_gen_toks"] == 96
    res = runner.invoke(app, ["lm-eval", "--model", "parallelbench", "--model_args",
                              "model=ideal,strategy=confidence-topk,k=1", "--include_path", "pb_tasks",
                              "--tasks", "parallelbench_structured", "--output_path", "lm_out"])
    assert res.exit_code == 0, res.output
    out = json.loads(next((tmp_path / "lm_out").rglob("results_*.json")).read_text())
    assert "parallelbench_structured" in out["results"] and "parallelbench_all" not in out["results"]
    for name in names:  # the exact model at one token per step gets every record right
        assert out["results"][name]["score,none"] == 100.0 and out["results"][name]["score_strict,none"] == 100.0


# ---- tasks of your own: a group per module, and the printed command runs as printed (issue 35 item 2) ----

def test_user_tasks_export_a_group_and_the_printed_command_runs_through_lm_eval(tmp_path: Path, monkeypatch) -> None:
    import os
    import shlex
    import uuid

    from doc_blocks import block

    module = f"pbu_{uuid.uuid4().hex[:10]}"
    (tmp_path / f"{module}.py").write_text(block("runner.md", "# my_tasks.py"), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    try:
        res = runner.invoke(app, ["tasks", "export", "--format", "lm-eval", "--out", "my_lmeval",
                                  "--tasks", f"{module}:make_tasks", "--limit", "3"])
    finally:
        sys.modules.pop(module, None)
    assert res.exit_code == 0, res.output
    group = f"{module}_all"
    assert f"group: {group}" in (tmp_path / "my_lmeval" / f"_{group}.yaml").read_text()
    (printed,) = [line for line in res.output.splitlines() if line.startswith("run: ")]
    command = shlex.split(printed[len("run: "):])
    assert command[:2] == ["parallelbench", "lm-eval"] and command[-2:] == ["--tasks", group], printed
    launcher = [sys.executable, "-c", "import sys; from parallelbench.cli import main; sys.argv[0] = 'parallelbench'; main()"]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src"), "HF_DATASETS_OFFLINE": "1",
           "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    proc = subprocess.run([*launcher, *command[1:], "--output_path", "out"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(next((tmp_path / "out").rglob("results_*.json")).read_text())["results"]
    assert "score,none" in results[group] and results["parallelbench_mine_any_order"]["nfe,none"] > 0


def test_run_targets_name_what_was_exported() -> None:
    from parallelbench.integrations.lm_eval_command import printed_commands, run_targets

    tasks = [get_task("waiting_line/copy"), get_task("puzzle/sudoku"), get_task("waiting_line_n15/copy")]
    assert run_targets(tasks, ["my_tasks_all"]) == ["parallelbench_all", "my_tasks_all", "parallelbench_waiting_line_n15_copy"]
    run, other = printed_commands("my dir", ["parallelbench_all"])
    assert run == ("run: parallelbench lm-eval --model parallelbench --model_args model=tiny "
                   "--include_path 'my dir' --tasks parallelbench_all")
    assert other.startswith("or any lm-eval model: lm_eval --model hf")


@pytest.mark.parametrize("include, expected", [
    ("nowhere", "error: --include_path nowhere: no such folder; give the folder written by "
                "`parallelbench tasks export --format lm-eval --out DIR`"),
    (None, "error: lm-eval has no task parallelbench_all; tasks written by `parallelbench tasks export --format "
           "lm-eval --out DIR` need --include_path DIR (lm-eval's own tasks: lm_eval ls tasks)"),
    ("pb_tasks", "error: lm-eval has no task parallelbench_al, neither its own nor in --include_path pb_tasks: it holds "
                 "parallelbench_all, parallelbench_waiting_line, parallelbench_waiting_line_copy"),
])
def test_a_missing_or_wrong_include_path_is_one_line(tmp_path: Path, monkeypatch, include, expected) -> None:
    monkeypatch.chdir(tmp_path)
    export_lm_eval([get_task("waiting_line/copy")], tmp_path / "pb_tasks", limit=2)
    task = "parallelbench_al" if include == "pb_tasks" else "parallelbench_all"
    args = ["lm-eval", "--model", "parallelbench", "--model_args", "model=tiny", "--tasks", task]
    res = runner.invoke(app, args + (["--include_path", include] if include else []))
    assert res.exit_code == 2
    assert res.output.strip() == expected, res.output


# ---- model=ideal on any task that gives valid answers, user tasks included (issue 35 item 8) ----

def test_the_ideal_model_decodes_an_exported_user_task_in_a_fresh_process(tmp_path: Path) -> None:
    import os
    import uuid

    from doc_blocks import block

    module = f"pbu_{uuid.uuid4().hex[:10]}"
    (tmp_path / f"{module}.py").write_text(block("runner.md", "# my_tasks.py"), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src"), "HF_DATASETS_OFFLINE": "1",
           "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    launcher = [sys.executable, "-c", "import sys; from parallelbench.cli import main; sys.argv[0] = 'parallelbench'; main()"]
    export = subprocess.run([*launcher, "tasks", "export", "--format", "lm-eval", "--out", "lm", "--tasks",
                             f"{module}:make_tasks", "--limit", "4"], cwd=tmp_path, env=env, capture_output=True,
                            text=True, timeout=300)
    assert export.returncode == 0, export.stderr
    elsewhere = tmp_path / "elsewhere"  # lm-eval runs from another folder: the module is found where it was
    elsewhere.mkdir()
    proc = subprocess.run([*launcher, "lm-eval", "--model", "parallelbench", "--model_args",
                           "model=ideal,strategy=confidence-topk,k=1", "--include_path", str(tmp_path / "lm"),
                           "--tasks", f"{module}_all", "--output_path", "out"], cwd=elsewhere, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(next((elsewhere / "out").rglob("results_*.json")).read_text())["results"]
    assert results["parallelbench_mine_any_order"]["score,none"] == 100.0  # one token per step is always right


def test_the_ideal_model_names_the_task_and_the_reason_where_it_cannot_decode() -> None:
    from parallelbench.integrations.lm_eval import ParallelBenchLM, ParallelBenchLMError

    lm = ParallelBenchLM(model="ideal", strategy="confidence-topk", k=1)
    sample = get_task("text_writing/paraphrasing").samples(1)[0]
    doc = doc_of(sample)
    req = _instance(doc["text"], {"until": [], "max_gen_toks": 8}, doc)
    req.task_name = "parallelbench_text_writing_paraphrasing"
    with pytest.raises(ParallelBenchLMError) as err:
        lm.generate_until([req])
    text = str(err.value)
    assert "lm-eval task 'parallelbench_text_writing_paraphrasing'" in text and "no finite set of valid answers" in text
    foreign = _instance("What is the capital of France? Answer:", {"until": ["\n"], "max_gen_toks": 8}, {"q": 1})
    foreign.task_name = "pb_test_echo"
    with pytest.raises(ParallelBenchLMError, match="cannot decode lm-eval task 'pb_test_echo': the ideal model needs "
                                                   "every valid answer"):
        lm.generate_until([foreign])
    copy = get_task("waiting_line/copy").samples(1)[0]
    ok = _instance(doc_of(copy)["text"], {"until": [], "max_gen_toks": 32}, doc_of(copy))
    assert lm.generate_until([ok]) == [copy.answer]  # a task it can list decodes as before


def test_lm_eval_reports_edits_and_unmask_score_as_run_stores_them(tmp_path: Path, monkeypatch) -> None:
    """The same editing decode through `parallelbench lm-eval` and `parallelbench run`: lm-eval's
    per-sample unmask_score and edits equal the run's columns, and its results aggregate them."""
    task, limit = "waiting_line/shuffle", 6
    monkeypatch.chdir(tmp_path)
    name, rows = lm_eval_samples(tmp_path, task, limit, "model=tiny,strategy=edit-threshold,threshold=0.3,"
                                                        "edit_threshold=0.1,post_steps=2,batch_size=8")
    via_lm_eval = {json.loads(r["doc"]["parallelbench_sample"])["id"]: (r["unmask_score"], r["edits"]) for r in rows}
    db = tmp_path / "run.db"
    res = runner.invoke(app, ["run", "--model", "tiny", "--tasks", task, "--strategy", "edit-threshold", "--threshold",
                              "0.3", "--param", "edit_threshold=0.1", "--param", "post_steps=2", "--limit", str(limit),
                              "--db", str(db), "--no-report", "--no-progress"])
    assert res.exit_code == 0, res.output
    via_run = {str(r.sample_id): (float(r.unmask_score), float(r.edits)) for r in _run_frame(tmp_path).itertuples()}
    assert via_lm_eval == via_run
    assert sum(e for _, e in via_run.values()) > 0  # something was edited
    results = json.loads(next((tmp_path / "lm_out").rglob("results_*.json")).read_text())["results"][name]
    assert results["unmask_score,none"] == pytest.approx(100 * sum(u for u, _ in via_run.values()) / limit)
    assert results["edits,none"] == pytest.approx(sum(e for _, e in via_run.values()) / limit)
