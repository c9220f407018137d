"""The runner-level ideal model (spec "ideal"): benchmark samples in, exact-model decodes out.

For each sample it asks `parallelbench.tasks.valid_answers` for every correct
answer, tokenises them word by word (`tokenizer.py`), pads them with EOS to the
task's generation length (`max_new_tokens`, the canvas every other model decodes)
and decodes that canvas with the real engine and the given strategy. The model's
predictions are the data's exact conditionals, so any error is the strategy's own:
the floor of section 4 on real tasks.

Tokens per step means the same here as for every other model: positions committed on the
canvas per model call, so top-k at k gives exactly k whenever k divides the length (an
answer that is longer than the canvas in this model's word tokens gets a canvas as long as
the answer, rounded up to the semi-AR block length).
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import TYPE_CHECKING, Any, Sequence

from parallelbench.models.base import Generation

if TYPE_CHECKING:
    from parallelbench.decoding.strategy import Strategy
    from parallelbench.tasks.base import Sample

# A tiny zero-mean logit noise: under greedy decoding it breaks exact ties (all
# shuffle positions tie) at random, as the paper's unbiased model does.
DEFAULT_NOISE_STD = 1e-3


class NoAnswerSetError(ValueError):
    """A sample whose valid answers cannot be listed, so the ideal model cannot be built."""


def no_answer_set_reason(sample: "Sample") -> str:
    """One line for the user: which sample, and why the ideal model cannot decode it."""
    from parallelbench.tasks._answers import ENUMERATION_LIMIT, count_valid_answers

    count = count_valid_answers(sample)
    where = f"task {sample.task!r} (sample {sample.id})"
    if count is not None and count > ENUMERATION_LIMIT:
        return (
            f"{where} has {count:,} valid answers, more than the ideal model lists "
            f"({ENUMERATION_LIMIT:,}); use a smaller n (e.g. waiting_line/* with n 3-6) for the ideal model"
        )
    if sample.scorer == "cot_answer":  # tasks/cot.py: free reasoning precedes the answer
        return (
            f"{where} is a chain-of-thought task: any reasoning may precede its answer, so its outputs have no "
            "finite set and the ideal model cannot decode it; run the direct task instead"
        )
    from parallelbench.tasks import task_source

    if task_source(sample.task) is not None:  # a task of your own: it lists its answers or it cannot run here
        return (
            f"{where} has no finite set of valid answers: give the task valid_answers (a function "
            "sample -> list of answer texts) to run it under the ideal model"
        )
    return (
        f"{where} has no finite set of valid answers; the ideal model covers Waiting Line, "
        "Puzzles and synthetic list tasks, not Text Writing"
    )


class IdealBenchModel:
    """`BenchModel` over the ideal model; see the module docstring."""

    kind = "ideal"

    def __init__(self, *, noise_std: float = DEFAULT_NOISE_STD, batch_size: int = 256, name: str = "ideal"):
        if noise_std < 0:
            raise ValueError(f"noise_std must be >= 0, got {noise_std}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.name = name
        self.noise_std = float(noise_std)
        self.batch_size = int(batch_size)

    def versions(self) -> dict[str, str]:
        import torch

        from parallelbench import __version__

        return {"parallelbench": __version__, "torch": torch.__version__, "ideal_noise_std": str(self.noise_std),
                # thresholds decide on the noise-free confidence (issue 20): rows decoded before differ
                "ideal_thresholds": "noise-free",
                # the task's canvas, not the answer region (issue 25): tokens per step as for every model
                "ideal_canvas": "generation-length",
                # written slots answer editing steps (issue 32): editing strategies' rows decoded before differ
                "ideal_edits": "leave-one-out"}

    def _answers(self, sample: "Sample") -> list[str]:
        from parallelbench.tasks import valid_answers

        answers = valid_answers(sample)
        if not answers:
            raise NoAnswerSetError(no_answer_set_reason(sample))
        return answers

    def supports(self, sample: "Sample") -> bool:
        """Whether this sample's answers can be listed, so a runner can skip a task up front."""
        return self.unsupported_reason(sample) is None

    def unsupported_reason(self, sample: "Sample") -> str | None:
        """Why this sample cannot be decoded here (one line), or None when it can.

        Built-in answer sets are counted from the sample's data without listing them; a task
        of your own (`--tasks module:NAME`) lists its answers with its `valid_answers`."""
        from parallelbench.tasks import TaskSourceError, task_source, valid_answers
        from parallelbench.tasks._answers import ENUMERATION_LIMIT, count_valid_answers

        if task_source(sample.task) is not None:
            try:
                answers = valid_answers(sample)
            except TaskSourceError as exc:
                return str(exc)
            if answers and len(answers) <= ENUMERATION_LIMIT:
                return None
            if answers:
                return (f"task {sample.task!r} (sample {sample.id}) has {len(answers):,} valid answers, more than "
                        f"the ideal model lists ({ENUMERATION_LIMIT:,})")
            return no_answer_set_reason(sample)
        count = count_valid_answers(sample)
        return None if count is not None and 0 < count <= ENUMERATION_LIMIT else no_answer_set_reason(sample)

    def generate(
        self,
        samples: Sequence["Sample"],
        strategy: "Strategy | str | None",
        *,
        max_new_tokens: int = 0,
        seed: int = 0,
    ) -> list[Generation]:
        """Decode each sample on a canvas of `max_new_tokens` positions (the answer padded with EOS), as
        every other model does; 0 decodes just the answer region (the longest valid answer)."""
        import torch

        from parallelbench.decoding import decode
        from parallelbench.decoding.strategy import as_strategy
        from parallelbench.models.ideal.model import IdealModel
        from parallelbench.models.ideal.tokenizer import AnswerTokenizer, json_pieces
        from parallelbench.tasks._records import STRUCTURED_SCORERS

        if strategy is None:
            raise ValueError("the ideal model is a diffusion model: pass a decoding strategy")
        strategy = as_strategy(strategy)
        tok = AnswerTokenizer()
        encoded, templates = [], []
        for s in samples:
            answers = self._answers(s)
            pieces = [json_pieces(a) for a in answers] if s.scorer in STRUCTURED_SCORERS else [None]
            if all(p is not None for p in pieces):  # one token per field, the punctuation given
                encoded.append([tok.encode_pieces([text for text, _ in p]) for p in pieces])
                templates.append(_field_template(tok, pieces[0]))
            else:
                encoded.append([tok.encode(a) for a in answers])
                templates.append(_template(s, tok, encoded[-1]))
        block = strategy.options.block_length
        by_length: dict[int, list[int]] = defaultdict(list)
        for i, answers in enumerate(encoded):
            by_length[canvas_length(max(len(a) for a in answers), max_new_tokens, block)].append(i)
        out: list[Generation | None] = [None] * len(samples)
        offset = 0  # every row of this call gets its own random stream: seed + offset + row
        for length, indices in sorted(by_length.items()):
            strategy.validate(length)
            for start in range(0, len(indices), self.batch_size):
                chunk = indices[start : start + self.batch_size]
                began = time.perf_counter()
                model = IdealModel.from_answers(
                    [[a + [tok.eos_id] * (length - len(a)) for a in encoded[i]] for i in chunk],
                    len(tok),
                    mask_id=tok.mask_id,
                    eos_id=tok.eos_id,
                    noise_std=self.noise_std,
                    seed=seed + offset,
                    edits=bool(getattr(strategy, "rewrites", False)),  # editing steps get leave-one-out answers
                )
                prompts = torch.full((len(chunk), 1), tok.bos_id, dtype=torch.long)
                template = None
                if any(templates[i] is not None for i in chunk):
                    template = torch.full((len(chunk), length), tok.mask_id, dtype=torch.long)
                    for row, i in enumerate(chunk):
                        if templates[i] is not None:  # the layout, then EOS given (as the tiny model's template)
                            template[row, : len(templates[i])] = torch.tensor(templates[i])
                            template[row, len(templates[i]) :] = tok.eos_id
                results = decode(
                    model, prompts, gen_length=length, strategy=strategy, template=template, seed=seed + offset
                )
                offset += len(chunk)
                elapsed = time.perf_counter() - began
                total_nfe = sum(r.nfe for r in results) or 1
                for i, res in zip(chunk, results):
                    out[i] = _generation(res, tok, elapsed * res.nfe / total_nfe)
        return [g for g in out if g is not None]


def canvas_length(answer_length: int, max_new_tokens: int, block: int | None) -> int:
    """The canvas the ideal model decodes: the task's generation length, or the answer's length when
    that is longer (or no length is given), rounded up so semi-AR blocks tile it."""
    length = max(int(max_new_tokens or 0), answer_length)
    return length if not block else -(-length // block) * block


def _template(sample: "Sample", tok: Any, answers: list[list[int]]) -> list[int] | None:
    """Infilling layout of a sample (`output_format`, "[MASK]" per item token) as ids, or None.

    Used only when every valid answer has exactly that layout: one token per "[MASK]" and the
    same formatting tokens elsewhere; otherwise the whole answer is generated.
    """
    if not sample.output_format or "[MASK]" not in sample.output_format:
        return None
    segments = sample.output_format.split("[MASK]")
    layout: list[int] = []
    for j, segment in enumerate(segments):
        layout += tok.encode(segment) if segment else []
        if j < len(segments) - 1:
            layout.append(tok.mask_id)
    for answer in answers:
        if len(answer) != len(layout):
            return None
        if any(t != tok.mask_id and t != a for t, a in zip(layout, answer)):
            return None
    return layout


def _field_template(tok: Any, pieces: list[tuple[str, bool]]) -> list[int]:
    """A structured answer's layout: its punctuation pieces given, one mask per field."""
    return [tok.mask_id if is_field else tok.encode_pieces([text])[0] for text, is_field in pieces]


def _generation(res: Any, tok: Any, wall_time: float) -> Generation:
    from parallelbench.models.diffusion import repair_text

    tokens = list(res.tokens)
    end = tokens.index(tok.eos_id) if tok.eos_id in tokens else len(tokens)
    return Generation(
        text=tok.decode(tokens),
        nfe=int(res.nfe),
        tokens_per_step=list(res.tokens_per_step),
        order=list(res.order[:end]),
        token_texts=tok.token_texts(tokens[:end]),
        num_tokens=int(res.num_committed),
        wall_time=wall_time,
        # pad_order: for the whole-generation order metrics; the repair record of editing strategies
        extra={"pad_order": list(res.order[end:]), **res.extra, **repair_text(res.extra, tokens, end, tok.eos_id, tok.decode)},
    )


def load(arg: str = "", **options: Any) -> IdealBenchModel:
    """Spec "ideal": options noise_std (default 1e-3) and batch_size (default 256)."""
    if arg:
        raise ValueError(f"the ideal model takes no argument (got 'ideal:{arg}'); use the spec 'ideal'")
    known = {"noise_std", "batch_size"}
    unknown = sorted(set(options) - known)
    if unknown:
        raise ValueError(f"unknown ideal model option(s) {', '.join(unknown)} for model 'ideal'; valid: {', '.join(sorted(known))}")
    return IdealBenchModel(**options)
