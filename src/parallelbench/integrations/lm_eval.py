"""Our decoding engine as an lm-evaluation-harness model, registered as ``parallelbench``.

Importing this module registers the model with lm-eval, so

    parallelbench lm-eval --model parallelbench \
        --model_args model=tiny,strategy=confidence-topk,k=2 --tasks <task> --limit 20

decodes any lm-eval generation task with any of our models and strategies. Model arguments:
``model`` (a model spec: tiny, hf:<path>, py:<module>:<fn>, ...), ``strategy`` (a strategy
name or module:Class) and that strategy's options (``threshold``, ``k``, ``block_length``,
``temperature``...), ``gen_length`` (tokens to decode when a request gives no
``max_gen_toks``; default 256), ``seed``, ``batch_size``, ``mc_samples`` (Monte-Carlo
samples per loglikelihood request) and ``stats_path`` (a JSONL file for per-request
statistics); any other argument is passed to the model loader (e.g. ``threads=2``).

Each request's NFE and tokens per step are written into its generation kwargs under the
key ``parallelbench`` (so lm-eval's ``--log_samples`` output shows them in ``arguments``),
appended to ``stats_path`` when given, and summed up in one summary line on stderr. For a
task exported by ``parallelbench tasks export --format lm-eval`` the request's decoding
metadata (NFE, tokens per step, input and output length, decoding-order correlations) is
also handed to the task's metrics (`lm_eval_metrics.py`), as the rewrite's dllm wrappers do,
with the request's edits and, for a strategy that can change a written token, the answer at
unmasking (cut at the same `until` strings), which the task scores as ``unmask_score``.

``loglikelihood`` on a diffusion model uses the Monte-Carlo masked estimate of LLaDA
(Nie et al. 2025, eq. 6 / appendix B.6): draw l uniformly from 1..L, mask l of the L
continuation tokens at random, and average (L / l) * sum of log p(true token | canvas)
over the masked positions; ``mc_samples`` draws per request (default 32). It is an
unbiased estimate of a lower bound, not the exact log-likelihood. ``loglikelihood_rolling``
is not supported.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import lm_eval.models  # noqa: F401  (fills lm-eval's registry first: it only lazy-loads an empty one)
from lm_eval.api.model import LM
from lm_eval.api.registry import register_model

from parallelbench.integrations.lm_eval_metrics import decoding_metadata, forget_pending, record
from parallelbench.models.base import Generation
from parallelbench.tasks.base import Sample

CHAT_MARK = "\x00parallelbench-chat\x00"  # apply_chat_template's output: the messages as JSON
LM_ARGS = ("model", "strategy", "gen_length", "seed", "batch_size", "mc_samples", "stats_path")


class ParallelBenchLMError(ValueError):
    """A configuration problem, said in one line."""


def _cut_at_stops(text: str, until: list[str]) -> str:
    """Text before the earliest stop string (lm-eval's `until`)."""
    cut = len(text)
    for stop in until:
        if stop:
            at = text.find(stop)
            if at != -1:
                cut = min(cut, at)
    return text[:cut]


def _round_up(n: int, block: int | None) -> int:
    return n if not block else -(-n // block) * block


@register_model("parallelbench")
class ParallelBenchLM(LM):
    """lm-eval model: samples decoded by a ParallelBench model under a ParallelBench strategy."""

    def __init__(
        self,
        model: str = "tiny",
        strategy: str = "confidence-threshold",
        gen_length: int = 256,
        seed: int = 0,
        batch_size: int | str = 16,
        mc_samples: int = 32,
        stats_path: str | None = None,
        device: str | None = None,
        max_batch_size: int | None = None,
        **options: Any,
    ) -> None:
        super().__init__()
        from parallelbench.decoding.strategy import build_strategy, strategy_class
        from parallelbench.models.registry import load_model

        try:
            batch = int(batch_size) if str(batch_size) != "auto" else 16
        except ValueError:
            raise ParallelBenchLMError(f"batch_size={batch_size!r} is invalid: use an integer >= 1") from None
        if batch < 1 or int(gen_length) < 1 or int(mc_samples) < 1:
            raise ParallelBenchLMError("batch_size, gen_length and mc_samples must be integers >= 1")
        self.model_spec = str(model)
        self.model = load_model(self.model_spec, **self._model_options(strategy, options, strategy_class))
        self.is_diffusion = str(getattr(self.model, "kind", "diffusion")) in ("diffusion", "ideal")
        self.strategy_name = str(strategy)
        self.strategy_params = {k: v for k, v in options.items() if k in self._strategy_fields(strategy, strategy_class)}
        self.strategy = build_strategy(self.strategy_name, **self.strategy_params) if self.is_diffusion else None
        self.gen_length = int(gen_length)
        self.seed = int(seed)
        self.batch = batch
        self.mc_samples = int(mc_samples)
        self.stats_path = stats_path
        self.stats: list[dict[str, Any]] = []
        self.dropped_words = 0  # words a closed-vocabulary model could not encode (left out)
        self.trimmed_requests = 0

    @classmethod
    def create_from_arg_string(cls, arg_string: str, additional_config: dict | None = None) -> "ParallelBenchLM":
        """lm-eval's --batch_size/--device fill in only what --model_args left out (they would clash)."""
        from lm_eval import utils

        return cls.create_from_arg_obj(utils.simple_parse_args_string(arg_string or ""), additional_config)

    @classmethod
    def create_from_arg_obj(cls, arg_dict: dict, additional_config: dict | None = None) -> "ParallelBenchLM":
        args = dict(arg_dict or {})
        extra = {k: v for k, v in (additional_config or {}).items() if v is not None and k not in args}
        return cls(**args, **extra)

    # ------------------------------------------------------------------ configuration
    @staticmethod
    def _strategy_fields(strategy: str, strategy_class) -> set[str]:
        import dataclasses

        return {f.name for f in dataclasses.fields(strategy_class(str(strategy)).Options)}

    @classmethod
    def _model_options(cls, strategy: str, options: dict[str, Any], strategy_class) -> dict[str, Any]:
        fields = cls._strategy_fields(strategy, strategy_class)
        return {k: v for k, v in options.items() if k not in fields}

    @property
    def tokenizer_name(self) -> str:
        return self.model_spec.replace("/", "__")

    def chat_template(self, chat_template: bool | str = False) -> str:
        return "parallelbench"

    def apply_chat_template(self, chat_history: list[dict[str, str]], add_generation_prompt: bool = True) -> str:
        """Keep the turns: they reach our model's own chat template in `generate_until`."""
        return CHAT_MARK + json.dumps([{"role": m["role"], "content": m["content"]} for m in chat_history])

    # ------------------------------------------------------------------ requests -> samples
    @staticmethod
    def _sample(context: str, doc: Any, index: int) -> Sample:
        """The request as one of our samples: an exported ParallelBench doc keeps its own chat
        turns (when lm-eval added nothing to its prompt); anything else is one user turn."""
        if isinstance(doc, dict) and doc.get("parallelbench_sample") and context == doc.get("text"):
            return Sample.from_dict(json.loads(doc["parallelbench_sample"]))
        if context.startswith(CHAT_MARK):
            messages = json.loads(context[len(CHAT_MARK):])
        else:
            messages = [{"role": "user", "content": context}]
        return Sample(id=f"lm-eval/{index}", task="lm-eval", prompt=context, messages=messages, answer="", scorer="exact")

    def _settings(self, gen_kwargs: dict[str, Any]) -> tuple[int, float | None, list[str]]:
        kwargs = dict(gen_kwargs or {})
        until = kwargs.get("until") or []
        until = [until] if isinstance(until, str) else list(until)
        length = int(kwargs.get("max_gen_toks") or self.gen_length)
        temperature = None
        if "temperature" in kwargs or "do_sample" in kwargs:
            temperature = float(kwargs.get("temperature") or 0.0) if kwargs.get("do_sample", True) else 0.0
        return length, temperature, until

    def _strategy_for(self, length: int, temperature: float | None):
        from parallelbench.decoding.strategy import build_strategy

        if self.strategy is None:
            return None, length
        params = dict(self.strategy_params)
        if temperature is not None:
            params["temperature"] = temperature
        strategy = build_strategy(self.strategy_name, **params) if params != self.strategy_params else self.strategy
        return strategy, _round_up(length, strategy.options.block_length)

    # ------------------------------------------------------------------ generate_until
    def generate_until(self, requests, disable_tqdm: bool = False) -> list[str]:
        """Decode every request (batched by shared settings); cut at its `until` strings."""
        forget_pending()  # lm-eval generates every request, then scores: older records are stale
        out: list[str | None] = [None] * len(requests)
        groups: dict[tuple, list[int]] = {}
        prepared = []
        for i, req in enumerate(requests):
            context, gen_kwargs = req.args[0], req.args[1] if len(req.args) > 1 else {}
            length, temperature, until = self._settings(gen_kwargs)
            prepared.append((self._sample(context, getattr(req, "doc", None), i), until, length))
            groups.setdefault((length, temperature), []).append(i)
        self._check_supported(requests, [p[0] for p in prepared])
        for (length, temperature), members in groups.items():
            strategy, canvas = self._strategy_for(length, temperature)
            for start in range(0, len(members), self.batch):
                chunk = members[start : start + self.batch]
                samples = self._fit_vocabulary([prepared[i][0] for i in chunk])
                tasks = dict.fromkeys(str(getattr(requests[i], "task_name", None) or s.task) for i, s in zip(chunk, samples))
                gens = self._generate(samples, strategy, canvas, self.seed + chunk[0], ", ".join(tasks))
                for i, sample, gen in zip(chunk, samples, gens):
                    out[i] = _cut_at_stops(gen.text, prepared[i][1])
                    unmask = (gen.extra or {}).get("unmask_text")
                    unmask = None if unmask is None else _cut_at_stops(str(unmask), prepared[i][1])
                    self._record(requests[i], gen, canvas, self._input_length(sample), unmask)
        self._summary()
        return [o or "" for o in out]

    def _check_supported(self, requests, samples: list[Sample]) -> None:
        """Before any decoding: the ideal model, which needs every valid answer of a sample, says in
        one line which lm-eval task it cannot decode and why. (A closed-vocabulary model such as
        tiny runs anyway: `_fit_vocabulary` leaves out what it cannot encode.)"""
        reason_of = getattr(self.model, "unsupported_reason", None)
        if str(getattr(self.model, "kind", "")) != "ideal" or not callable(reason_of):
            return
        seen: set[str] = set()
        for req, sample in zip(requests, samples):
            task = str(getattr(req, "task_name", None) or sample.task)
            if task in seen:
                continue
            seen.add(task)
            if sample.task == "lm-eval":  # not one of ours: nothing lists its answers
                raise ParallelBenchLMError(
                    f"model={self.model_spec} cannot decode lm-eval task {task!r}: the ideal model needs every valid "
                    "answer of a sample, which only ParallelBench tasks give (exported with `parallelbench tasks export "
                    "--format lm-eval`: Waiting Line, Puzzles, synthetic, and tasks of your own with valid_answers)"
                )
            reason = reason_of(sample)
            if reason:
                raise ParallelBenchLMError(f"model={self.model_spec} cannot decode lm-eval task {task!r}: {reason}")

    def _fit_vocabulary(self, samples: list[Sample]) -> list[Sample]:
        """A closed-vocabulary model (tiny) meets any lm-eval task's text: words it cannot encode
        are left out of the prompt and counted (said in the summary line), instead of stopping
        the evaluation."""
        import dataclasses

        clean = getattr(getattr(self.model, "tokenizer", None), "without_unknown", None)
        if not callable(clean):
            return samples
        out = []
        for sample in samples:
            messages, dropped = [], 0
            for m in sample.messages:
                text, n = clean(str(m.get("content", "")))
                dropped += n
                messages.append({**m, "content": text})
            if dropped:
                self.dropped_words += dropped
                self.trimmed_requests += 1
                sample = dataclasses.replace(sample, messages=messages)
            out.append(sample)
        return out

    def _input_length(self, sample: Sample) -> int:
        """Prompt tokens as the model sees them (0 when its tokenizer cannot say)."""
        encode = getattr(getattr(self.model, "tokenizer", None), "encode_chat", None)
        try:
            return len(encode(sample.messages)) if callable(encode) else 0
        except Exception:  # noqa: BLE001  (a statistic, never a reason to stop the evaluation)
            return 0

    def _generate(self, samples: list[Sample], strategy, gen_length: int, seed: int, task: str) -> list[Generation]:
        try:
            return list(self.model.generate(samples, strategy, max_new_tokens=gen_length, seed=seed))
        except ValueError as exc:  # an input the model cannot take: too long, a block length that does not fit ...
            raise ParallelBenchLMError(
                f"model={self.model_spec} cannot decode lm-eval task {task!r}: {' '.join(str(exc).split())}"
            ) from None

    def _record(self, req, gen: Generation, gen_length: int, input_length: int, unmask_text: str | None = None) -> None:
        edits = int((gen.extra or {}).get("edits") or 0)
        stats = {
            "nfe": int(gen.nfe),
            "num_tokens": int(gen.num_tokens),
            "tokens_per_step": (gen_length / gen.nfe) if gen.nfe else 0.0,  # the rewrite's: length / NFE
            "edits": edits,
            "steps": [int(x) for x in gen.tokens_per_step],
        }
        kwargs = req.args[1] if len(req.args) > 1 and isinstance(req.args[1], dict) else None
        if kwargs is not None:  # lm-eval deep-copies kwargs per request: this is this request's log entry
            kwargs["parallelbench"] = {k: v for k, v in stats.items() if k != "steps"}
        doc = getattr(req, "doc", None)
        if isinstance(doc, dict) and doc.get("parallelbench_sample") and doc.get("id") is not None:
            record(doc["id"], decoding_metadata(
                gen.order, (gen.extra or {}).get("pad_order"), nfe=int(gen.nfe), gen_length=gen_length,
                input_length=input_length, output_length=max(len(gen.order), len(gen.token_texts)),
                edits=edits, unmask_text=unmask_text,
            ))
        row = {"task": getattr(req, "task_name", None), "doc_id": getattr(req, "doc_id", None), **stats}
        self.stats.append(row)
        if self.stats_path:
            with open(self.stats_path, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(row) + "\n")

    def summary(self) -> str:
        n = len(self.stats)
        nfe = sum(s["nfe"] for s in self.stats)
        tokens = sum(s["num_tokens"] for s in self.stats)
        tps = tokens / nfe if nfe else 0.0
        line = (f"parallelbench: {n} requests, {nfe} model calls (mean NFE {nfe / n if n else 0:.1f}), "
                f"{tokens} tokens, {tps:.2f} tokens per step ({self.model_spec}, {self.strategy_name})")
        if self.dropped_words:
            line += (f"; {self.dropped_words} words outside {self.model_spec}'s vocabulary left out of "
                     f"{self.trimmed_requests} prompts")
        return line

    def _summary(self) -> None:
        print(self.summary(), file=sys.stderr, flush=True)

    # ------------------------------------------------------------------ likelihoods
    def loglikelihood(self, requests, disable_tqdm: bool = False) -> list[tuple[float, bool]]:
        """Monte-Carlo masked estimate (LLaDA): see the module docstring."""
        net = getattr(self.model, "net", None)
        tok = getattr(self.model, "tokenizer", None)
        if not self.is_diffusion or net is None or tok is None:
            raise NotImplementedError(
                f"loglikelihood is supported for diffusion models only, not {self.model_spec!r}; use generation tasks"
            )
        return [self._mc_loglikelihood(net, tok, *req.args[:2], index=i) for i, req in enumerate(requests)]

    def _encode(self, tok, text: str) -> list[int]:
        inner = getattr(tok, "tokenizer", None)
        if inner is not None and hasattr(inner, "encode"):
            return list(inner.encode(text, add_special_tokens=False))
        try:
            return list(tok.encode(text))
        except ValueError as exc:
            raise ParallelBenchLMError(" ".join(str(exc).split())) from None

    def _mc_loglikelihood(self, net, tok, context: str, continuation: str, index: int) -> tuple[float, bool]:
        import torch

        from parallelbench.decoding.engine import model_device

        ctx, cont = self._encode(tok, context), self._encode(tok, continuation)
        if not cont:
            return 0.0, True
        device = model_device(net)
        n, length = self.mc_samples, len(cont)
        gen = torch.Generator().manual_seed(self.seed * 1_000_003 + index)
        seq = torch.tensor(ctx + cont, dtype=torch.long)
        canvas = seq.repeat(n + 1, 1)
        counts = torch.randint(1, length + 1, (n,), generator=gen)
        masked = torch.zeros(n + 1, length, dtype=torch.bool)
        for row in range(n):
            masked[row, torch.randperm(length, generator=gen)[: int(counts[row])]] = True
        masked[n] = True  # the last row: everything masked, for the greedy check
        canvas[:, len(ctx):][masked] = int(net.mask_id)
        canvas = canvas.to(device)
        with torch.no_grad():
            logits = net.forward(canvas, attention_mask=torch.ones_like(canvas, dtype=torch.bool))
        logp = torch.log_softmax(logits[:, len(ctx):].float(), dim=-1).cpu()
        target = torch.tensor(cont, dtype=torch.long)
        true_logp = logp.gather(-1, target.expand(n + 1, length).unsqueeze(-1)).squeeze(-1)
        per_row = (true_logp[:n] * masked[:n]).sum(dim=1) * (length / counts.float())
        greedy = bool((logp[n].argmax(dim=-1) == target).all())
        return float(per_row.mean()), greedy

    def loglikelihood_rolling(self, requests, disable_tqdm: bool = False) -> list[float]:
        raise NotImplementedError(
            "loglikelihood_rolling (perplexity tasks) is not supported by the parallelbench model; use generation tasks"
        )
