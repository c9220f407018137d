"""Scorers of the Text Writing tasks: summarization, paraphrasing, words-to-sentence.

Each reports the grammar score and its task metrics as components; the headline
is their product, as in the original release (the paper's main-body figures plot
the ``grammar`` component alone):

- summarization: ``rouge_l × grammar`` (ROUGE-L against the reference summary);
- paraphrase: ``bertscore × inv_bleu × grammar``, BERTScore F1 and 1 − BLEU both
  against the source sentence (semantic closeness, lexical distance), as in the
  original release; the reference paraphrases are not scored against;
- w2s: ``inclusion × grammar × sentence``, inclusion = every requested word occurs in the
  raw output as a case-sensitive substring (the paper metric's definition); ``sentence`` =
  the answer is a real sentence, not the words listed (`scoring/sentence.py`);
  ``inclusion_word`` (every word present as a whole word, any case) is reported beside
  them. In paper mode the headline is the original release's ``inclusion × grammar``.

Grammar ignores spelling flags on words the answer may legitimately copy: the
capitalised words (names) of the dialogue or source sentence, and the requested W2S
words. The grammar backend and version and the metric versions go into ``meta``.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING

from parallelbench.scoring import similarity
from parallelbench.scoring.base import Scores, register_scorer
from parallelbench.scoring.grammar import grammar_check
from parallelbench.scoring.sentence import check_sentence

if TYPE_CHECKING:
    from parallelbench.tasks.base import Sample


def _text(value) -> str:
    return value if isinstance(value, str) else ""


def _grammar(output: str, known_words=()) -> tuple[float, dict[str, str]]:
    result = grammar_check(output, known_words=known_words)
    return result.score, {"grammar_backend": result.backend, "grammar_version": result.version}


def capitalised_words(source: str) -> set[str]:
    """Capitalised words of a source text (names, places, brands), which a summary or
    paraphrase may copy even when the spelling dictionary lacks them."""
    return {w for w in re.findall(r"[^\W\d_]+", source[:20_000]) if w[0].isupper()}


@register_scorer("summarization")
def score_summarization(sample: "Sample", output: str) -> Scores:
    """Grammar and ROUGE-L against ``data["reference"]``; headline ``rouge_l × grammar``."""
    output = _text(output)
    reference = _text((sample.data or {}).get("reference")) or _text(sample.answer)
    grammar, meta = _grammar(output, capitalised_words(_text((sample.data or {}).get("source"))))
    rouge = similarity.rouge_l(output, reference)
    meta["rouge"] = similarity.ROUGE_VERSION
    return Scores(rouge * grammar, {"grammar": grammar, "rouge_l": rouge}, meta)


def paraphrase_pairs(sample: "Sample", output: str) -> list[tuple[str, str]]:
    """The (candidate, reference) pairs the paraphrase scorer sends to BERTScore."""
    return [(_text(output), _text((sample.data or {}).get("source")))]


@register_scorer("paraphrase")
def score_paraphrase(sample: "Sample", output: str) -> Scores:
    """Grammar, BERTScore and 1 − BLEU against ``data["source"]``; headline their product."""
    output = _text(output)
    source = _text((sample.data or {}).get("source"))
    grammar, meta = _grammar(output, capitalised_words(source))
    empty = not output.strip()
    bert = similarity.bertscore(output, source)
    inv_bleu = 0.0 if empty else 1.0 - similarity.bleu(output, source)
    components = {"grammar": grammar, "bertscore": bert, "inv_bleu": inv_bleu}
    meta["bertscore"] = similarity.bertscore_label()
    meta["bleu"] = similarity.BLEU_VERSION
    return Scores(bert * inv_bleu * grammar, components, meta)


@functools.lru_cache(maxsize=4096)
def _word_pattern(word: str) -> re.Pattern[str]:
    return re.compile(r"(?<!\w)" + re.escape(word) + r"(?!\w)", re.IGNORECASE)


def includes_word(text: str, word: str) -> bool:
    """`word` occurs in `text` as a whole word (not inside a longer word), ignoring case."""
    word = word.strip()
    return bool(word) and _word_pattern(word).search(text) is not None


def _w2s(sample: "Sample", output: str, mode: str) -> Scores:
    output = _text(output)
    words = [str(w) for w in (sample.data or {}).get("words") or []]
    grammar, meta = _grammar(output, words)
    inclusion = float(all(w in output for w in words))  # the paper metric's: case-sensitive substring
    inclusion_word = float(all(includes_word(output, w) for w in words))
    broken = check_sentence(output, words)
    sentence = float(not broken)
    meta["sentence_rule"] = broken or "ok"
    headline = inclusion * grammar * (sentence if mode == "default" else 1.0)
    return Scores(
        headline,
        {"grammar": grammar, "inclusion": inclusion, "sentence": sentence, "inclusion_word": inclusion_word},
        meta,
    )


@register_scorer("w2s")
def score_w2s(sample: "Sample", output: str) -> Scores:
    """Every word of ``data["words"]`` used, in a real grammatical sentence; headline
    ``inclusion × grammar × sentence``."""
    return _w2s(sample, output, "default")


@register_scorer("w2s", mode="paper")
def score_w2s_paper(sample: "Sample", output: str) -> Scores:
    """The original release's headline ``inclusion × grammar`` (no sentence rule)."""
    return _w2s(sample, output, "paper")
