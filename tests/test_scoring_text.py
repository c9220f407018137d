"""Text Writing scorers: W2S inclusion, ROUGE-L, BLEU, BERTScore (the bundled MiniLM), products."""

from __future__ import annotations

import pytest

from parallelbench.scoring import score, score_many, similarity
from parallelbench.scoring.text import includes_word
from parallelbench.tasks.base import Sample

SOURCE = "Any idea of what sweater this is?"
REFS = ["Can you identify this sweater?", "What is the name of this sweater?"]
SUMMARY = "Steve and Rob will talk about new Dream Theater album, after they finish listening."


def w2s(words) -> Sample:
    return Sample("w/0", "text_writing/w2s_easy", "", [], "", "w2s", {"words": words})


def para(refs=REFS) -> Sample:
    return Sample("p/0", "text_writing/paraphrase", "", [], "", "paraphrase", {"source": SOURCE, "references": refs})


def summ() -> Sample:
    return Sample("s/0", "text_writing/summarization", "", [], "", "summarization", {"source": "...", "reference": SUMMARY})


# ------------------------------------------------------------------ W2S


@pytest.mark.parametrize(
    ("text", "word", "whole"),
    [
        ("I throw the ball.", "throw", True),
        ("THROW it!", "throw", True),
        ("I was throwing the ball.", "throw", False),
        ("A dog-park visit.", "park", True),
        ("Parking is hard.", "park", False),
        ("We like ice cream.", "ice cream", True),
        ("A c++ book.", "c++", True),
        ("Naïve café owners.", "café", True),
    ],
)
def test_whole_word_inclusion(text, word, whole):
    assert includes_word(text, word) is whole


def test_w2s_components_and_product():
    words = ["dog", "park", "ball", "throw"]
    good = score(w2s(words), "I love to throw the ball for my dog at the park.")
    assert good.score == 1.0
    assert good.components == {"grammar": 1.0, "inclusion": 1.0, "sentence": 1.0, "inclusion_word": 1.0}
    assert good.meta["sentence_rule"] == "ok"
    assert good.meta["grammar_backend"] == "harper"

    # inclusion is the paper metric's case-sensitive substring test; inclusion_word ignores case.
    capital = score(w2s(words), "Dog owners throw a ball in the park.")
    assert (capital.components["inclusion"], capital.components["inclusion_word"]) == (0.0, 1.0)
    assert capital.score == 0.0

    # A longer word passes the substring test only; the headline follows inclusion.
    inflected = score(w2s(words), "My dog was throwing a ball in the park.")
    assert (inflected.components["inclusion"], inflected.components["inclusion_word"]) == (1.0, 0.0)
    assert inflected.score == inflected.components["grammar"] * inflected.components["sentence"]

    ungrammatical = score(w2s(words), "The the dog throw ball park.")
    assert ungrammatical.components["inclusion"] == 1.0
    assert ungrammatical.components["grammar"] == 0.0
    assert ungrammatical.score == 0.0


# ------------------------------------------------------------------ summarization


def test_summarization_rouge_and_grammar():
    exact = score(summ(), SUMMARY)
    assert exact.components["rouge_l"] == pytest.approx(1.0)
    assert exact.score == pytest.approx(exact.components["grammar"] * exact.components["rouge_l"])
    partial = score(summ(), "Steve and Rob will discuss the album later.")
    assert 0.2 < partial.components["rouge_l"] < 0.8
    assert partial.components["grammar"] == 1.0
    assert partial.score == pytest.approx(partial.components["rouge_l"])
    # Stemming: "listens" matches "listening" (both stem to "listen").
    assert similarity.rouge_l("listens", "listening") == pytest.approx(1.0)
    assert score(summ(), "").components == {"grammar": 0.0, "rouge_l": 0.0}
    assert exact.meta["rouge"].startswith("rouge-score ")


# ------------------------------------------------------------------ BLEU


def test_bleu_matches_the_release_settings():
    assert similarity.bleu(SOURCE, SOURCE) == pytest.approx(1.0)
    assert similarity.bleu("Can you identify this sweater?", SOURCE) == 0.0  # no shared 4-gram
    assert 0.0 < similarity.bleu("Any idea of what sweater", SOURCE) < 1.0
    assert similarity.bleu("", SOURCE) == 0.0


# ------------------------------------------------------------------ paraphrase and BERTScore (real MiniLM)


def test_paraphrase_components_with_the_bundled_minilm():
    copy = score(para(), SOURCE)
    assert copy.components["bertscore"] == pytest.approx(1.0, abs=1e-4)
    assert copy.components["inv_bleu"] == pytest.approx(0.0, abs=1e-9)
    assert copy.score == pytest.approx(0.0, abs=1e-6)

    good = score(para(), "Can you identify this sweater?")
    c = good.components
    assert c.keys() == {"grammar", "bertscore", "inv_bleu"}
    assert c["grammar"] == 1.0 and c["inv_bleu"] == 1.0
    assert 0.5 < c["bertscore"] < 1.0
    assert good.score == pytest.approx(c["bertscore"] * c["inv_bleu"] * c["grammar"])
    assert "all-MiniLM-L6-v2" in good.meta["bertscore"]
    assert good.meta["bleu"].startswith("sacrebleu ")

    unrelated = score(para(), "The stock market fell sharply on Monday.")
    assert unrelated.components["bertscore"] < c["bertscore"]

    empty = score(para(), "")
    assert empty.score == 0.0 and empty.components["bertscore"] == 0.0 and empty.components["inv_bleu"] == 0.0


def test_batched_scores_equal_one_by_one():
    outputs = ["Can you identify this sweater?", "What sweater is this?", "Do you know this sweater?", SOURCE]
    samples = [para() for _ in outputs]
    similarity._BERT_CACHE.clear()
    batched = score_many(samples, outputs)
    similarity._BERT_CACHE.clear()
    single = [score(s, o) for s, o in zip(samples, outputs)]
    for b, s in zip(batched, single):
        assert b.components.keys() == s.components.keys()
        for key in b.components:
            assert b.components[key] == pytest.approx(s.components[key], abs=1e-4)


def test_score_many_rejects_mismatched_lengths():
    with pytest.raises(ValueError, match="one output per sample"):
        score_many([para()], [])


def test_unavailable_bertscore_model_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(similarity, "_hub_cached", lambda name: False)
    with pytest.raises(similarity.MetricUnavailable, match="not on disk"):
        similarity.bertscore("a b", "c d", model="roberta-large")


def test_summary_may_use_the_names_of_the_dialogue():
    s = Sample("s/1", "text_writing/summarization", "", [], "", "summarization",
               {"source": "Kaylee: hi Zac, pizza tonight?\nZac: sure!", "reference": "Kaylee and Zac will have pizza tonight."})
    assert score(s, "Kaylee and Zac will have pizza tonight.").components["grammar"] == 1.0
    assert score(s, "Kaylee and Zac will will have pizza tonight.").components["grammar"] == 0.0
    # A name that is not in the dialogue is still a spelling error.
    assert score(s, "Kaylee and Zaccary will have pizza tonight.").components["grammar"] == 0.0
