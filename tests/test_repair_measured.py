"""Issue 32 item 4: repair measured, from the engine's record to the database, `results --repair`,
the report, the CSV export and lm-eval's metrics."""

from __future__ import annotations

import json
import sqlite3
from collections import defaultdict, deque
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from parallelbench.cli import app
from parallelbench.runner.store import COLUMNS, REPAIR_COLUMNS, ResultsStore

runner = CliRunner()
EDIT = "edit-threshold[edit_threshold=0.1,post_steps=2,threshold=0.3]"
TOPK = "confidence-topk[k=2]"
TASKS = "waiting_line/shuffle,waiting_line/copy"


@pytest.fixture(scope="module")
def tiny_db(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("repair") / "r.db"
    for strategy, extra in (("edit-threshold", ["--threshold", "0.3", "--param", "edit_threshold=0.1",
                                                "--param", "post_steps=2"]),
                            ("confidence-topk", ["--k", "2"])):
        res = runner.invoke(app, ["run", "--model", "tiny", "--tasks", TASKS, "--strategy", strategy, *extra,
                                  "--limit", "8", "--db", str(db), "--no-report", "--no-progress"])
        assert res.exit_code == 0, res.output
    return db


def frame_of(db: Path) -> pd.DataFrame:
    with ResultsStore(db, create=False) as store:
        return store.frame()


def test_strategies_that_never_edit_store_unmask_score_equal_to_score_and_zero_counts(tiny_db):
    frame = frame_of(tiny_db)
    topk = frame[frame["config"] == TOPK]
    assert len(topk) == 16
    assert (topk["unmask_score"] == topk["score"]).all() and topk["unmask_output"].isna().all()
    assert (topk[["edits", "inserts", "deletes", "changed_tokens"]] == 0).all().all()


def _history_view(history: list[list[int]], mask: int) -> dict:
    """edits, first tokens, the answer at unmasking and the last step each slot changed, read
    from the snapshots of an edit-threshold decode (commits fill masks, edits rewrite tokens)."""
    g = len(history[0])
    prev = [mask] * g
    first: list[int | None] = [None] * g
    changed_at = [-1] * g
    edits, unmask = 0, None
    for t, snap in enumerate(history):
        for j in range(g):
            if snap[j] != prev[j]:
                changed_at[j] = t
                if prev[j] != mask:
                    edits += 1
                elif first[j] is None:
                    first[j] = snap[j]
        if unmask is None and mask not in snap:  # this step's edits are not part of the answer at unmasking
            unmask = [prev[j] if prev[j] != mask else snap[j] for j in range(g)]
        prev = snap
    return {"edits": edits, "first": first, "unmask": unmask, "changed_at": changed_at, "final": prev}


def test_editing_rows_agree_with_the_decode_history_and_the_stored_order(tiny_db):
    """Each stored edit-threshold row against the same sample decoded alone with its history
    (greedy: no randomness): edits, changed tokens, the answer at unmasking and its score,
    and the stored order (the last step each shown slot changed)."""
    from parallelbench.decoding import build_strategy, decode
    from parallelbench.models import load_model
    from parallelbench.models.diffusion import cut_at_eos
    from parallelbench.scoring import score
    from parallelbench.tasks import get_task

    model = load_model("tiny")
    frame = frame_of(tiny_db)
    rows = frame[frame["config"] == EDIT]
    assert len(rows) == 16 and rows["unmask_score"].notna().all()
    strategy = build_strategy("edit-threshold", threshold=0.3, edit_threshold=0.1, post_steps=2)
    repaired_something = 0
    for task_id, group in rows.groupby("task"):
        task = get_task(task_id)
        samples = {s.id: s for s in task.samples(8)}
        for r in group.itertuples():
            sample = samples[r.sample_id]
            prompt = model.tokenizer.encode_chat(sample.messages)
            res = decode(model.net, [prompt], gen_length=task.max_new_tokens, strategy=strategy, return_history=True)[0]
            view = _history_view(res.history, int(model.net.mask_id))
            cut = cut_at_eos(view["final"], int(model.net.eos_id))
            assert model.tokenizer.decode(view["final"][:cut]) == r.output
            assert r.edits == view["edits"] == res.extra["edits"]
            changed = sum(1 for j in range(cut) if view["final"][j] != view["first"][j])
            assert r.changed_tokens == changed
            unmask_text = model.tokenizer.decode(view["unmask"][: cut_at_eos(view["unmask"], int(model.net.eos_id))])
            assert (r.unmask_output if isinstance(r.unmask_output, str) else r.output) == unmask_text
            assert r.unmask_score == score(sample, unmask_text).score
            assert json.loads(r.order) == view["changed_at"][:cut]
            repaired_something += r.edits
    assert repaired_something > 0, "no edit happened: the test proves nothing"


def test_results_repair_prints_the_table(tiny_db):
    res = runner.invoke(app, ["results", "--db", str(tiny_db), "--repair"], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    out = res.output
    assert "does editing repair parallel decoding?" in out
    assert EDIT in out and TOPK not in out.split("not shown")[0]  # the non-editing config is left out, and said so
    assert "not shown: 1 strategy config that never changes a written token" in out
    frame = frame_of(tiny_db)
    shuffle = frame[(frame["config"] == EDIT) & (frame["task"] == "waiting_line/shuffle")]
    line = next(l for l in out.splitlines() if "waiting_line/shuffle" in l)
    assert f"{shuffle['unmask_score'].mean():.2f} ±" in line and f"{shuffle['score'].mean():.2f} ±" in line
    assert f"{shuffle['edits'].mean():.2f}" in line
    narrow = runner.invoke(app, ["results", "--db", str(tiny_db), "--repair"], env={"COLUMNS": "80"})
    assert narrow.exit_code == 0 and f"C1 = {EDIT}" in narrow.output and "T1 = waiting_line/copy" in narrow.output
    assert all(len(l) <= 80 for l in narrow.output.splitlines() if l.startswith(("┃", "│", "┏", "└")))


def test_results_repair_without_an_editing_strategy_says_what_to_run(tmp_path):
    db = tmp_path / "plain.db"
    res = runner.invoke(app, ["run", "--model", "tiny", "--tasks", "waiting_line/copy", "--strategy", "random",
                              "--k", "2", "--limit", "2", "--db", str(db), "--no-report", "--no-progress"])
    assert res.exit_code == 0, res.output
    out = runner.invoke(app, ["results", "--db", str(db), "--repair"]).output
    assert "no strategy here can change a written token" in out and "--strategy edit-threshold" in out


def test_the_report_has_the_repair_section_figure_and_csv(tiny_db, tmp_path):
    from parallelbench.analysis.report import REPAIR_TITLE, build_report

    frame = frame_of(tiny_db)
    page = build_report(frame, tmp_path / "out").read_text()
    assert f'<section id="repair"><h2>{REPAIR_TITLE}</h2>' in page and REPAIR_TITLE == "Does editing repair parallel decoding?"
    assert 'id="repair-tiny"' in page  # the interactive figure
    assert (tmp_path / "out" / "figures" / "repair_tiny.png").exists()
    assert (tmp_path / "out" / "figures" / "repair_tiny.svg").exists()
    table = pd.read_csv(tmp_path / "out" / "repair.csv")
    assert set(table["config"]) == {EDIT} and set(table["task"]) == {"waiting_line/shuffle", "waiting_line/copy"}
    rows = frame[frame["config"] == EDIT]
    for r in table.itertuples():
        mine = rows[rows["task"] == r.task]
        assert r.unmask == pytest.approx(mine["unmask_score"].mean()) and r.final == pytest.approx(mine["score"].mean())
        right = (mine["unmask_score"] >= 1) & (mine["score"] >= 1)
        assert r.repaired == pytest.approx(((mine["unmask_score"] < 1) & (mine["score"] >= 1)).mean())
        assert r.broken == pytest.approx(((mine["unmask_score"] >= 1) & (mine["score"] < 1)).mean())
        assert r.unmask_low <= r.unmask <= r.unmask_high and right.sum() <= len(mine)
    empty = build_report(frame[frame["config"] == TOPK], tmp_path / "plain").read_text()
    assert REPAIR_TITLE in empty and "Needs runs of a strategy that can change a written token" in empty


def test_csv_export_carries_the_repair_columns(tiny_db, tmp_path):
    out = tmp_path / "rows.csv"
    res = runner.invoke(app, ["results", "export", "--db", str(tiny_db), "--format", "csv", "--out", str(out)])
    assert res.exit_code == 0, res.output
    table = pd.read_csv(out)
    expected = list(COLUMNS)
    expected.insert(expected.index("score") + 1, "scorer_error")  # the export's own column
    assert set(REPAIR_COLUMNS) <= set(table.columns) and list(table.columns) == expected
    assert table.loc[table["config"] == TOPK, "unmask_score"].equals(table.loc[table["config"] == TOPK, "score"])


def _old_database(path: Path) -> None:
    """A results file as written before the repair columns: one non-editing and one editing row."""
    with ResultsStore(path) as store:
        base = dict(model="tiny", model_kind="diffusion", strategy_kind="topk", task="waiting_line/copy",
                    category="waiting_line", seed=0, output="x", scores="{}", nfe=1, num_tokens=1, tps=1.0,
                    tokens_per_step="[1]", order="[0]", token_texts="[]", versions="{}", provenance="p")
        store.write([dict(base, strategy="random", params='{"k":2}', config="random[k=2]", sample_id="a", score=1.0),
                     dict(base, strategy="edit-threshold", params="{}", config="edit-threshold", sample_id="a",
                          score=0.0, strategy_kind="adaptive")])
    conn = sqlite3.connect(path)
    for column in REPAIR_COLUMNS:
        conn.execute(f'ALTER TABLE results DROP COLUMN "{column}"')
    conn.commit()
    conn.close()


def test_old_databases_get_the_columns_without_decoding_again(tmp_path):
    """Old rows of strategies that never edit get their exact values; editing rows stay unknown
    (not guessed) and are counted as unmeasured; read-only opens give the same frame."""
    db = tmp_path / "old.db"
    _old_database(db)
    with ResultsStore(db, create=False) as store:  # read only: nothing is migrated on disk
        read_only = store.frame()
    names = {r[1] for r in sqlite3.connect(db).execute("PRAGMA table_info(results)")}
    assert not set(REPAIR_COLUMNS) & names
    with ResultsStore(db) as store:  # opened for writing: migrated
        migrated = store.frame()
    names = {r[1] for r in sqlite3.connect(db).execute("PRAGMA table_info(results)")}
    assert set(REPAIR_COLUMNS) <= names
    for frame in (read_only, migrated):
        plain = frame[frame["strategy"] == "random"].iloc[0]
        assert plain["unmask_score"] == 1.0 and plain["edits"] == 0 and plain["changed_tokens"] == 0
        editing = frame[frame["strategy"] == "edit-threshold"].iloc[0]
        assert pd.isna(editing["unmask_score"]) and pd.isna(editing["edits"])
    from parallelbench.analysis.repair import repair_table

    table = repair_table(migrated)
    assert list(table["config"]) == ["edit-threshold"] and int(table["unmeasured"].iloc[0]) == 1
    assert int(table["rows"].iloc[0]) == 0


def test_rescoring_scores_the_answer_at_unmasking_again(tiny_db, tmp_path):
    """A run under the other scoring mode rescores stored rows: unmask_score follows its own
    stored answer, not a copy of the new score."""
    import shutil

    db = tmp_path / "copy.db"
    shutil.copy(tiny_db, db)
    res = runner.invoke(app, ["run", "--model", "tiny", "--tasks", TASKS, "--strategy", "edit-threshold",
                              "--threshold", "0.3", "--param", "edit_threshold=0.1", "--param", "post_steps=2",
                              "--limit", "8", "--db", str(db), "--no-report", "--no-progress", "--scoring", "paper"])
    assert res.exit_code == 0, res.output
    from parallelbench.scoring import score
    from parallelbench.tasks import get_task

    frame = frame_of(db)
    rows = frame[frame["config"] == EDIT]
    assert rows["versions"].map(lambda v: json.loads(v).get("scoring")).eq("paper").all()
    samples = {s.id: s for t in TASKS.split(",") for s in get_task(t).samples(8)}
    for r in rows.itertuples():
        answer = r.unmask_output if isinstance(r.unmask_output, str) else r.output
        assert r.unmask_score == score(samples[r.sample_id], answer, mode="paper").score


def test_lm_eval_metrics_score_the_answer_at_unmasking(monkeypatch):
    from parallelbench.integrations import lm_eval_metrics as m
    from parallelbench.integrations.lm_eval_tasks import doc_of
    from parallelbench.tasks import get_task

    # an empty queue: tests that call generate_until without scoring leave records of these same samples
    monkeypatch.setattr(m, "_PENDING", defaultdict(deque))
    sample = get_task("waiting_line/copy").samples(1)[0]
    doc = doc_of(sample)
    wrong = sample.answer.replace('"', "'", 2)
    m.record(sample.id, m.decoding_metadata([0, 1], None, nfe=2, gen_length=4, input_length=3, output_length=2,
                                            edits=3, unmask_text=wrong))
    got = m.sample_metrics(doc, sample.answer)
    assert (got["score"], got["unmask_score"], got["edits"]) == (1.0, 0.0, 3.0)
    m.record(sample.id, m.decoding_metadata([0, 1], None, nfe=2, gen_length=4, input_length=3, output_length=2))
    got = m.sample_metrics(doc, sample.answer)  # no record: a strategy that never edits
    assert (got["unmask_score"], got["edits"]) == (1.0, 0.0)


def test_a_new_generation_pass_forgets_records_an_older_one_left_unscored():
    pytest.importorskip("lm_eval")
    from lm_eval.api.instance import Instance

    from parallelbench.integrations import lm_eval_metrics as m
    from parallelbench.integrations.lm_eval import ParallelBenchLM
    from parallelbench.integrations.lm_eval_tasks import doc_of
    from parallelbench.tasks import get_task

    sample = get_task("waiting_line/copy").samples(1)[0]
    doc = doc_of(sample)
    # a pass that stopped before scoring (or generated without scoring) leaves a record of this sample
    m.record(sample.id, m.decoding_metadata([0], None, nfe=9, gen_length=9, input_length=1, output_length=1, edits=7))
    lm = ParallelBenchLM(model="ideal", strategy="confidence-topk", k=1)
    req = Instance(request_type="generate_until", doc=doc, arguments=(doc["text"], {"until": [], "max_gen_toks": 32}),
                   idx=0)
    assert lm.generate_until([req]) == [sample.answer]
    got = m.sample_metrics(doc, sample.answer)
    assert (got["edits"], got["nfe"]) == (0.0, float(lm.stats[0]["nfe"]))  # this pass's decode, not the stale one


IDEAL_EDIT = ["--strategy", "edit-threshold", "--threshold", "1", "--param", "min_k=2", "--param", "edit_threshold=0.1"]


def test_ideal_generations_agree_with_their_decode_history(monkeypatch):
    """The ideal model under edit-threshold (top-2 drafts, edits of slots the others make impossible):
    each Generation's edits, changed tokens and answer at unmasking against its own decode history."""
    import parallelbench.decoding as decoding
    import parallelbench.models.ideal.tokenizer as ideal_tokenizer
    from parallelbench.decoding import build_strategy
    from parallelbench.models import load_model
    from parallelbench.tasks import get_task

    seen, tokenizers = [], []
    real, real_tokenizer = decoding.decode, ideal_tokenizer.AnswerTokenizer

    def recording(*args, **kwargs):
        out = real(*args, **{**kwargs, "return_history": True})
        seen.extend(out)
        return out

    def keep_tokenizer():
        tokenizers.append(real_tokenizer())
        return tokenizers[-1]

    monkeypatch.setattr(decoding, "decode", recording)
    monkeypatch.setattr(ideal_tokenizer, "AnswerTokenizer", keep_tokenizer)
    task = get_task("waiting_line/shuffle")
    samples = task.samples(24)
    gens = load_model("ideal").generate(samples, build_strategy("edit-threshold", threshold=1.0, min_k=2,
                                                                edit_threshold=0.1),
                                        max_new_tokens=task.max_new_tokens, seed=3)
    tok = tokenizers[-1]  # the one that encoded the answers
    assert len(seen) == len(gens) == 24
    edited = 0
    for gen, res in zip(gens, seen):
        view = _history_view(res.history, tok.mask_id)
        cut = view["final"].index(tok.eos_id) if tok.eos_id in view["final"] else len(view["final"])
        assert gen.text == tok.decode(view["final"])
        assert gen.extra["edits"] == view["edits"]
        assert gen.extra["changed_tokens"] == sum(1 for j in range(cut) if view["final"][j] != view["first"][j])
        assert gen.extra["unmask_text"] == tok.decode(view["unmask"])
        edited += gen.extra["edits"]
    assert edited > 0, "the ideal model edited nothing: the test proves nothing"


def test_ideal_runs_store_repair_columns_that_repair_and_never_break(tmp_path):
    """Under the exact model an edit only replaces a token the other slots make impossible: rows
    are repaired, never broken; strategies that never edit store unmask_score = score."""
    from parallelbench.scoring import score
    from parallelbench.tasks import get_task

    db = tmp_path / "ideal.db"
    for extra in (IDEAL_EDIT, ["--strategy", "confidence-topk", "--k", "2"]):
        res = runner.invoke(app, ["run", "--model", "ideal", "--tasks", "waiting_line/shuffle,waiting_line/copy",
                                  *extra, "--limit", "24", "--db", str(db), "--no-report", "--no-progress"])
        assert res.exit_code == 0, res.output
    frame = frame_of(db)
    edit = frame[frame["strategy"] == "edit-threshold"]
    topk = frame[frame["strategy"] == "confidence-topk"]
    assert (topk["unmask_score"] == topk["score"]).all() and (topk["edits"] == 0).all()
    assert edit["unmask_score"].notna().all()
    assert not ((edit["unmask_score"] == 1) & (edit["score"] < 1)).any()  # never broken
    copy = edit[edit["task"] == "waiting_line/copy"]
    assert (copy["score"] == 1).all() and (copy["edits"] == 0).all()  # nothing to repair
    samples = {s.id: s for t in ("waiting_line/shuffle", "waiting_line/copy") for s in get_task(t).samples(24)}
    for r in edit.itertuples():
        answer = r.unmask_output if isinstance(r.unmask_output, str) else r.output
        assert r.unmask_score == score(samples[r.sample_id], answer).score
        assert r.changed_tokens <= r.edits and (r.edits > 0 or pd.isna(r.unmask_output))
    assert edit["edits"].sum() > 0

