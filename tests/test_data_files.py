"""The owned data files under parallelbench/tasks/data keep the formats the generators rely on."""

from __future__ import annotations

import json
import re
from importlib import resources

import pytest

DATA = resources.files("parallelbench.tasks").joinpath("data")

NAME = re.compile(r"[A-Z][a-z]+")
WORD = re.compile(r"[a-z]+")
SPEAKER_TURN = re.compile(r"([A-Z][a-z]+): (\S.*)")
# Words that would make a summary first or second person instead of third person.
NON_THIRD_PERSON = {"i", "me", "my", "mine", "we", "us", "our", "ours", "you", "your", "yours"}
ABBREVIATIONS = ("Dr.", "Mr.", "Mrs.", "Ms.")


def _json(name: str):
    return json.loads(DATA.joinpath(name).read_text(encoding="utf-8"))


def _jsonl(name: str) -> list[dict]:
    lines = DATA.joinpath(name).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def _sentence_count(text: str) -> int:
    """Sentences end with . ! or ?; titles such as "Dr." do not end one."""
    for abbreviation in ABBREVIATIONS:
        text = text.replace(abbreviation, abbreviation[:-1])
    return len(re.findall(r"[.!?](?:\s|$)", text))


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z']+", text.lower())


# ---------------------------------------------------------------- names.json


def test_names_have_enough_distinct_capitalised_single_words():
    names = _json("names.json")
    assert set(names) == {"first", "last"}
    first, last = names["first"], names["last"]
    assert len(first) >= 100 and len(last) >= 200
    assert len(set(first)) == len(first), "duplicate first name"
    assert len(set(last)) == len(last), "duplicate last name"
    bad = [n for n in first + last if not NAME.fullmatch(n)]
    assert not bad, f"names must be one capitalised word of letters: {bad}"


def test_first_and_last_names_do_not_overlap_so_sorting_by_last_name_is_unambiguous():
    names = _json("names.json")
    assert not set(names["first"]) & set(names["last"])
    assert all(len(f"{f} {names['last'][0]}".split()) == 2 for f in names["first"])


# ------------------------------------------------------------ w2s_words.json


def test_w2s_levels_hold_100_sets_of_7_distinct_lowercase_words():
    levels = _json("w2s_words.json")
    assert list(levels) == ["easy", "medium", "hard"]
    for level, sets in levels.items():
        assert len(sets) == 100, level
        for words in sets:
            assert len(words) == 7, (level, words)
            assert len(set(words)) == 7, (level, words)
            assert all(WORD.fullmatch(w) for w in words), (level, words)


def test_the_two_w2s_sets_taken_from_the_paper_stay_first():
    """docs/data.md: easy[0] and hard[0] start with the appendix's W2S (easy) and W2S (hard)
    examples; the paper's medium example is not in the file."""
    levels = _json("w2s_words.json")
    assert levels["easy"][0][:4] == ["dog", "park", "ball", "throw"]
    assert levels["hard"][0][:4] == ["algorithm", "river", "symphony", "moss"]
    paper_medium = {"apple", "river", "table", "happy"}
    assert not any(paper_medium <= set(words) for sets in levels.values() for words in sets)


def test_no_w2s_set_repeats_within_or_across_levels():
    levels = _json("w2s_words.json")
    full = [frozenset(words) for sets in levels.values() for words in sets]
    assert len(set(full)) == len(full) == 300
    # The default task uses the first four words: those must not repeat either.
    first_four = [frozenset(words[:4]) for sets in levels.values() for words in sets]
    assert len(set(first_four)) == len(first_four)


def test_w2s_levels_differ_in_vocabulary():
    """Easy sets are everyday scenes, hard sets abstract or technical: few shared words."""
    levels = _json("w2s_words.json")
    vocab = {level: {w for words in sets for w in words} for level, sets in levels.items()}
    assert len(vocab["easy"] & vocab["hard"]) < 10
    # Hard sets draw on a wide vocabulary rather than repeating a few words.
    assert len(vocab["hard"]) > 600


# ----------------------------------------------------------- dialogues.jsonl


def test_dialogues_have_100_numbered_records():
    rows = _jsonl("dialogues.jsonl")
    assert len(rows) == 100
    assert [r["id"] for r in rows] == [f"d{i:03d}" for i in range(1, 101)]
    assert all(set(r) == {"id", "dialogue", "summary"} for r in rows)
    assert len({r["dialogue"] for r in rows}) == 100
    assert len({r["summary"] for r in rows}) == 100


def test_dialogues_are_short_chats_between_two_or_three_speakers():
    all_speakers = set()
    for row in _jsonl("dialogues.jsonl"):
        turns = row["dialogue"].split("\n")
        assert 3 <= len(turns) <= 8, row["id"]
        matches = [SPEAKER_TURN.fullmatch(turn) for turn in turns]
        assert all(matches), (row["id"], turns)
        speakers = {m.group(1) for m in matches}
        assert 2 <= len(speakers) <= 3, (row["id"], speakers)
        all_speakers |= speakers
    assert len(all_speakers) >= 100, "speaker names should vary across dialogues"


def test_summaries_are_one_or_two_third_person_sentences():
    for row in _jsonl("dialogues.jsonl"):
        summary = row["summary"]
        assert summary[0].isupper() and summary.endswith("."), row["id"]
        assert 1 <= _sentence_count(summary) <= 2, (row["id"], summary)
        assert not NON_THIRD_PERSON & set(_words(summary)), (row["id"], summary)
        assert len(summary) < len(row["dialogue"]), row["id"]


# --------------------------------------------------------- paraphrases.jsonl


def test_paraphrases_have_100_records_with_three_distinct_references():
    rows = _jsonl("paraphrases.jsonl")
    assert len(rows) == 100
    assert [r["id"] for r in rows] == [f"p{i:03d}" for i in range(1, 101)]
    assert all(set(r) == {"id", "sentence", "paraphrases"} for r in rows)
    assert len({r["sentence"] for r in rows}) == 100
    for row in rows:
        refs = row["paraphrases"]
        assert len(refs) == 3 and all(isinstance(p, str) and p for p in refs), row["id"]
        assert len(set(refs) | {row["sentence"]}) == 4, row["id"]


def test_paraphrase_sources_are_short_complete_sentences():
    for row in _jsonl("paraphrases.jsonl"):
        for text in [row["sentence"], *row["paraphrases"]]:
            assert text[0].isupper() and text[-1] in ".?!", (row["id"], text)
            assert _sentence_count(text) == 1, (row["id"], text)
        assert 5 <= len(row["sentence"].split()) <= 20, row["id"]


# ------------------------------------------------------------------ grammar


@pytest.fixture(scope="module")
def harper_linter():
    harper = pytest.importorskip("harper")
    return harper.Linter()


def _lint(linter, texts: list[tuple[str, str]]) -> list[str]:
    return [
        f"{key}: {text!r}: {[lint.message for lint in lints]}"
        for key, text in texts
        if (lints := linter.lint(text))
    ]


def test_dialogues_and_summaries_pass_harper(harper_linter):
    texts = []
    for row in _jsonl("dialogues.jsonl"):
        texts += [(row["id"], row["dialogue"]), (row["id"], row["summary"])]
    assert not _lint(harper_linter, texts)


def test_paraphrase_sentences_and_references_pass_harper(harper_linter):
    texts = []
    for row in _jsonl("paraphrases.jsonl"):
        texts += [(row["id"], t) for t in [row["sentence"], *row["paraphrases"]]]
    assert not _lint(harper_linter, texts)


def test_w2s_words_are_known_to_harper(harper_linter):
    """A correct sentence using the words must not fail the grammar check on spelling."""
    levels = _json("w2s_words.json")
    vocab = sorted({w for sets in levels.values() for words in sets for w in words})
    assert not _lint(harper_linter, [(w, w) for w in vocab])
