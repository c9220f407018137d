"""Text Writing: summarization, paraphrasing and words-to-sentence (W2S), all zero-shot.

Items come from the project's own data (`tasks/data/`): dialogues with reference
summaries, sentences with reference paraphrases, and W2S word sets of seven words per
level, of which the n-word variant uses the first n (the paper's tasks use 4).
"""

from __future__ import annotations

from functools import partial
from typing import Any, Callable

from parallelbench.tasks._common import DEFAULT_SEED, load_json, load_jsonl, sample_rng, zero_shot
from parallelbench.tasks.base import GeneratorParams, Sample, Task

SUMMARY_PROMPT = "Summarize the following conversation. Only output the final result.\n\n{text}\n\nSummary:"
PARAPHRASE_PROMPT = "Paraphrase the following sentence. Only output the final result.\n\nSentence: {text}\n\nParaphrase:"
W2S_PROMPT = "Construct a single, coherent sentence using the words {words}."
W2S_PROMPT_ONE = "Construct a single, coherent sentence using the word {words}."
LEVELS = ("easy", "medium", "hard")
PAPER_WORDS = 4
MAX_WORDS = 7


def join_words(words: list[str]) -> str:
    """`dog, park, ball, and throw` (serial comma), `dog and park`, `dog`."""
    if len(words) <= 2:
        return " and ".join(words)
    return ", ".join(words[:-1]) + ", and " + words[-1]


ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth")


def w2s_reference(words: list[str]) -> str:
    """A plain sentence that contains every word: shows what a passing answer looks like.

    The owned word sets carry no human reference sentence; this one is grammatical,
    includes each word and is a sentence rather than the words listed (the rule of
    `scoring/sentence.py`: no three requested words in a row).
    """
    taken = {w.lower() for w in words}
    noun = next(n for n in ("word", "term", "entry") if n not in taken)  # never repeat a requested word
    if len(words) == 1:
        return f'This sentence uses the {noun} "{words[0]}" once.'
    places = [ORDINALS[i] if i < len(ORDINALS) else f"number {i + 1}" for i in range(len(words) - 1)] + ["last"]
    return "This sentence puts " + join_words([f'the {noun} "{w}" {p}' for w, p in zip(words, places)]) + "."


def _pick(task: Task, rows: tuple[dict[str, Any], ...], limit: int | None) -> list[tuple[int, dict[str, Any]]]:
    """All rows in file order, or a seeded subset when fewer samples are asked for."""
    indexed = list(enumerate(rows))
    if task.params.num_samples < len(indexed):
        chosen = sample_rng(task).sample(range(len(indexed)), task.params.num_samples)
        indexed = [indexed[j] for j in sorted(chosen)]
    return indexed if limit is None else indexed[: max(limit, 0)]


def _samples(task: Task, limit, rows, build: Callable[[dict[str, Any]], tuple[str, str, str, dict]]):
    out = []
    for i, (_, row) in enumerate(_pick(task, rows, limit)):
        prompt, answer, scorer, data = build(row)
        out.append(
            Sample(
                id=f"{task.id}/{i}",
                task=task.id,
                prompt=prompt,
                messages=zero_shot(prompt),
                answer=answer,
                scorer=scorer,
                data=data,
            )
        )
    return out


def _generate_summary(task: Task, limit: int | None) -> list[Sample]:
    def build(row):
        data = {"source": row["dialogue"], "reference": row["summary"], "source_id": row.get("id")}
        return task.prompt_template.format(text=row["dialogue"]), row["summary"], "summarization", data

    return _samples(task, limit, load_jsonl("dialogues.jsonl"), build)


def _generate_paraphrase(task: Task, limit: int | None) -> list[Sample]:
    def build(row):
        refs = list(row["paraphrases"])
        data = {"source": row["sentence"], "references": refs, "source_id": row.get("id")}
        return task.prompt_template.format(text=row["sentence"]), refs[0], "paraphrase", data

    return _samples(task, limit, load_jsonl("paraphrases.jsonl"), build)


def w2s_prompt(words: list[str]) -> str:
    return (W2S_PROMPT_ONE if len(words) == 1 else W2S_PROMPT).format(words=join_words(words))


def _generate_w2s(task: Task, limit: int | None, *, level: str) -> list[Sample]:
    k = task.params.n_min
    rows = tuple({"words": list(ws)} for ws in load_json("w2s_words.json")[level])

    def build(row):
        words = row["words"][:k]
        return w2s_prompt(words), w2s_reference(words), "w2s", {"n": k, "words": words, "level": level}

    return _samples(task, limit, rows, build)


def _text_task(task_id: str, template: str, scorer: str, generate, description: str, *, n: int = 1,
               in_paper: bool = False, max_new_tokens: int = 64, extra: dict | None = None) -> Task:
    return Task(
        id=task_id,
        category="text_writing",
        prompt_template=template,
        shots=0,
        max_new_tokens=max_new_tokens,
        scorer=scorer,
        params=GeneratorParams(n, n, 100, 100, DEFAULT_SEED, extra or {}),
        generate=generate,
        description=description,
        valid_answers=None,
        in_paper=in_paper,
    )


def _all_tasks() -> tuple[Task, ...]:
    out = []
    out.append(_text_task("text_writing/summarization", SUMMARY_PROMPT, "summarization", _generate_summary,
                          "Summarize a short dialogue; grammar and ROUGE-L.", in_paper=True))
    out.append(_text_task("text_writing/paraphrasing", PARAPHRASE_PROMPT, "paraphrase", _generate_paraphrase,
                          "Paraphrase a sentence; grammar, BERTScore and 1 - BLEU.", in_paper=True))
    for level in LEVELS:
        gen = partial(_generate_w2s, level=level)
        out.append(_text_task(f"text_writing/w2s_{level}", W2S_PROMPT, "w2s", gen,
                              f"Words-to-sentence ({level}, {PAPER_WORDS} words); inclusion x grammar x sentence.",
                              n=PAPER_WORDS, in_paper=True, extra={"level": level}))
        for k in range(1, MAX_WORDS + 1):
            # The paper's longer-output study pairs 7 words with a 256-token budget.
            out.append(_text_task(f"text_writing/w2s_{level}_n{k}", W2S_PROMPT_ONE if k == 1 else W2S_PROMPT,
                                  "w2s", gen, f"Words-to-sentence ({level}, {k} word{'s' if k > 1 else ''}).",
                                  n=k, max_new_tokens=256 if k == MAX_WORDS else 64, extra={"level": level}))
    return tuple(out)


TASKS = _all_tasks()  # registered by `tasks/builtin.py`
