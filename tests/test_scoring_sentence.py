"""Words-to-sentence without loopholes: listing the words is not a sentence, junk has no grammar.

The table holds adversarial answers (word lists, repeated words, punctuation only, NUL
bytes, 1 MB strings) and real sentences, each with the main-metric score it must get.
"""

from __future__ import annotations

import time

import pytest

from parallelbench.scoring import score
from parallelbench.scoring.grammar import grammar_check
from parallelbench.scoring.sentence import MAX_CHARS, check_sentence
from parallelbench.tasks import get_task, registry
from parallelbench.tasks.base import Sample

WORDS = ["dog", "park", "ball", "throw"]
MB = 1_000_000

# (answer, main-metric score, broken rule or "ok")
TABLE = [
    # word lists: the loophole of the release (98-100% there)
    ("dog park ball throw", 0.0, "no capital start"),
    ("dog, park, ball, throw.", 0.0, "no capital start"),
    ("Dog, park, ball, throw.", 0.0, "too few words"),
    ("Dog, park, ball, and throw.", 0.0, "too few words"),
    ("The dog, the park, the ball, throw.", 0.0, "repeated word"),
    ("Words: dog, park, ball, and throw.", 0.0, "word list"),
    ("Here are the words: dog, park, ball, throw.", 0.0, "word list"),
    ("This sentence uses the words dog, park, ball, and throw.", 0.0, "word list"),
    ("- dog\n- park\n- ball\n- throw", 0.0, "no capital start"),
    ("Dog.\nPark.\nBall.\nThrow.", 0.0, "too few words"),
    ("I have a dog / park / ball / throw here.", 0.0, "word list"),
    # repeated words and sentences
    ("Dog dog dog dog park ball throw.", 0.0, "no function word"),
    ("My dog likes it when I throw the the ball at the park.", 0.0, "repeated word"),
    ("The dog the park the ball the throw.", 0.0, "repeated word"),
    ("I throw the ball for my dog at the park. " * 20, 0.0, "repeated sentence"),
    # punctuation, digits, control characters, size
    ("!!!", 0.0, "no capital start"),
    ("[]", 0.0, "no capital start"),
    ("123.", 0.0, "no capital start"),
    ("\x00", 0.0, "control characters"),
    ("I throw the ball\x00 for my dog at the park.", 0.0, "control characters"),
    ("", 0.0, "empty"),
    ("I throw the ball for my dog at the park " + "a" * MB + ".", 0.0, "too long"),
    ("x" * MB, 0.0, "too long"),
    ("I throw the ball for my dog at the park. " + "Then we rest in the shade. " * 40000, 0.0, "too long"),
    # unfinished or lowercase sentences
    ("I love to throw the ball for my dog at the park", 0.0, "no end punctuation"),
    ("i love to throw the ball for my dog at the park.", 0.0, "no capital start"),
    # real sentences
    ("I love to throw the ball for my dog at the park.", 1.0, "ok"),
    ("In the park, I throw the ball and my dog runs after it!", 1.0, "ok"),
    ('"Throw the ball to my dog," she said at the park.', 0.0, "ok"),  # "Throw": inclusion is case-sensitive
    ('"Let us throw the ball to my dog," she said at the park.', 1.0, "ok"),
    ("Did you throw the ball for the dog at the park?", 1.0, "ok"),
    ("After school, we throw a ball to my dog in the park.", 1.0, "ok"),
]


def w2s(words: list[str]) -> Sample:
    return Sample("w2s/0", "text_writing/w2s_easy", "", [], "", "w2s", {"words": words})


@pytest.mark.parametrize("answer,expected,rule", TABLE, ids=[f"{i}:{t[0][:30]!r}" for i, t in enumerate(TABLE)])
def test_adversarial_table(answer: str, expected: float, rule: str) -> None:
    start = time.perf_counter()
    result = score(w2s(WORDS), answer)
    assert time.perf_counter() - start < 5.0  # a 1 MB answer is rejected, not parsed for long
    assert result.score == expected, result
    assert result.meta["sentence_rule"] == rule
    assert set(result.components) == {"grammar", "inclusion", "sentence", "inclusion_word"}
    if expected:
        assert result.components["grammar"] == result.components["inclusion"] == result.components["sentence"] == 1.0


def test_word_lists_keep_full_inclusion_and_fail_only_the_sentence_rule() -> None:
    """The loophole answers include every word (both inclusion tests): only the sentence rule fails them."""
    for answer in ("dog park ball throw", "dog, park, ball, throw."):
        result = score(w2s(WORDS), answer)
        assert result.components["inclusion_word"] == 1.0 and result.components["inclusion"] == 1.0
        assert result.score == 0.0


@pytest.mark.parametrize("junk", ["\x00", "[]", "123", "!!!", "\x00\x00 \x01", "{}", "42.0", "...", "\U0001f642", "\x7f"])
def test_grammar_of_text_with_no_real_words_is_zero(junk: str) -> None:
    assert grammar_check(junk).score == 0.0


def test_grammar_of_real_text_is_unchanged() -> None:
    assert grammar_check("The dog sleeps in the sun.").score == 1.0
    assert grammar_check("I.").score in (0.0, 1.0)  # a letter is a word; the backend decides


def test_sentence_rule_limits() -> None:
    assert check_sentence("A" + " a" * (MAX_CHARS // 2) + ".") == "too long"
    assert check_sentence("The cat sleeps.", ["cat"]) == ""
    assert check_sentence("Cats sleep soundly.", ["cat"]) == "no function word"
    assert check_sentence("The cat.", ["cat"]) == "too few words"
    assert check_sentence("I fed the dog, the cat, and the bird.", ["dog", "cat", "bird"]) == ""
    assert check_sentence("I fed dog, cat, bird.", ["dog", "cat", "bird"]) == "word list"
    assert check_sentence("I fed dogs, cats and birds.", ["dog", "cat", "bird"]) == "word list"  # inflections count
    assert check_sentence(123) == "not text"  # type: ignore[arg-type]


def test_every_builtin_w2s_reference_scores_100_percent() -> None:
    """Reference answers of every W2S variant are real sentences under the rule (2,400 samples)."""
    ids = [t for t in registry() if t.startswith("text_writing/w2s")]
    assert len(ids) == 24
    failed = [
        (s.id, s.answer) for t in ids for s in get_task(t).samples(None) if score(s, s.answer).score != 1.0
    ]
    assert failed == []


def test_word_list_answers_score_zero_on_every_paper_w2s_sample() -> None:
    """The loophole measured on the three paper tasks (300 samples): 0.98-1.00 before the rule."""
    for level in ("easy", "medium", "hard"):
        for s in get_task(f"text_writing/w2s_{level}").samples(None):
            words = s.data["words"]
            for answer in (" ".join(words), ", ".join(words) + ".", ", ".join(w.capitalize() for w in words) + "."):
                result = score(s, answer)
                assert result.score == 0.0, (s.id, answer, result.meta["sentence_rule"])
