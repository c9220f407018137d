"""Text Writing tasks built from the project's own data files."""

import json

import pytest

from parallelbench.tasks import get_task
from parallelbench.tasks._common import load_json, load_jsonl, with_params
from parallelbench.tasks.text_writing import join_words, w2s_reference


def test_summarization_samples_come_from_owned_dialogues():
    samples = get_task("text_writing/summarization").samples()
    rows = load_jsonl("dialogues.jsonl")
    assert len(samples) == 100 == len(rows)
    s = samples[0]
    assert s.prompt == f"Summarize the following conversation. Only output the final result.\n\n{rows[0]['dialogue']}\n\nSummary:"
    assert s.messages == [{"role": "user", "content": s.prompt}]
    assert s.scorer == "summarization" and s.data["reference"] == rows[0]["summary"] == s.answer
    assert s.data["source"] == rows[0]["dialogue"]


def test_paraphrase_samples_carry_all_references():
    s = get_task("text_writing/paraphrasing").samples(1)[0]
    row = load_jsonl("paraphrases.jsonl")[0]
    assert s.prompt == f"Paraphrase the following sentence. Only output the final result.\n\nSentence: {row['sentence']}\n\nParaphrase:"
    assert s.data["references"] == row["paraphrases"] and s.answer == row["paraphrases"][0]
    assert s.scorer == "paraphrase"


@pytest.mark.parametrize("level", ["easy", "medium", "hard"])
def test_w2s_uses_the_first_n_words_of_each_set(level):
    sets = load_json("w2s_words.json")[level]
    paper = get_task(f"text_writing/w2s_{level}").samples()
    assert len(paper) == 100 and [s.data["words"] for s in paper] == [ws[:4] for ws in sets]
    for k in range(1, 8):
        s = get_task(f"text_writing/w2s_{level}_n{k}").samples(1)[0]
        assert s.data["words"] == sets[0][:k] and s.data["n"] == k
    one = get_task(f"text_writing/w2s_{level}_n1").samples(1)[0]
    assert one.prompt == f"Construct a single, coherent sentence using the word {sets[0][0]}."


def test_w2s_prompt_wording_and_reference():
    s = get_task("text_writing/w2s_easy").samples(1)[0]
    w = s.data["words"]
    assert s.prompt == f"Construct a single, coherent sentence using the words {w[0]}, {w[1]}, {w[2]}, and {w[3]}."
    assert join_words(["a", "b"]) == "a and b" and join_words(["a"]) == "a"
    assert all(word in w2s_reference(w) for word in w)
    assert get_task("text_writing/w2s_easy_n7").max_new_tokens == 256


def test_fewer_samples_take_a_seeded_subset():
    t = with_params(get_task("text_writing/summarization"), num_samples=10)
    a, b = t.samples(), t.samples()
    assert len(a) == 10 and [x.to_dict() for x in a] == [x.to_dict() for x in b]
    other = with_params(get_task("text_writing/summarization"), num_samples=10, seed=99)
    assert [x.data["source_id"] for x in a] != [x.data["source_id"] for x in other.samples()]
    json.dumps([x.to_dict() for x in a])


def test_w2s_reference_answers_score_as_correct():
    """The shown 'correct answer' of a W2S sample really passes inclusion, grammar and the sentence rule."""
    scoring = pytest.importorskip("parallelbench.scoring")
    try:
        for level in ("easy", "hard"):
            for s in get_task(f"text_writing/w2s_{level}").samples(5):
                assert scoring.score(s, s.answer).score == 1.0, s.answer
    except (ImportError, RuntimeError) as exc:  # no grammar backend on this machine
        pytest.skip(f"grammar backend unavailable: {exc}")
