"""The two model interfaces of ParallelBench.

1. `MaskedDiffusionModel` is what the decoding engine drives: a forward call from
   a batch of token canvases (some positions hold `mask_id`) to logits at every
   position. An adapter for a new dLLM is these few attributes and one method.
2. `BenchModel` is what the runner drives: samples in, text plus decoding
   statistics out. Diffusion models get it for free from
   `parallelbench.models.diffusion.DiffusionTextModel`; autoregressive and API
   models implement it directly.

The engine-side protocols (`MaskedDiffusionModel`, `CausalModel`) live in
`protocols.py`, which imports nothing of the project, so the decoding package can
name them without importing this module (and this module names `Strategy`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, Sequence, runtime_checkable

from parallelbench.models.protocols import CausalModel, MaskedDiffusionModel, ModelInputError  # noqa: F401  (re-exported)

if TYPE_CHECKING:
    from parallelbench.decoding.strategy import Strategy
    from parallelbench.tasks.base import Message, Sample


@runtime_checkable
class TextTokenizer(Protocol):
    """What the text layer needs of a tokenizer (an HF tokenizer fits through a thin adapter)."""

    def encode_chat(self, messages: "Sequence[Message]") -> list[int]: ...

    def decode(self, ids: Sequence[int]) -> str: ...

    def token_texts(self, ids: Sequence[int]) -> list[str]: ...


@dataclass
class Generation:
    """One sample's output and how it was decoded."""

    text: str  # the answer text (cut at the first EOS)
    nfe: int  # model forward calls spent on this sample
    tokens_per_step: list[int]  # tokens committed at each step (sums to num_tokens)
    order: list[int]  # per generated token: the step at which it was committed (0-based)
    token_texts: list[str]  # per generated token: its text, aligned with `order`
    num_tokens: int  # tokens committed (the numerator of tokens per step)
    wall_time: float = 0.0  # seconds, this sample's share of its batch
    extra: dict[str, Any] = field(default_factory=dict)
    # set when the sample could not be decoded (e.g. an API request that failed for good):
    # the one-line reason; the runner stores a failed row, not a wrong answer, and retries it on a re-run
    error: str | None = None

    @property
    def tokens_per_nfe(self) -> float:
        return self.num_tokens / self.nfe if self.nfe else 0.0


ModelKind = Literal["diffusion", "autoregressive", "api", "ideal", "medusa"]


class BenchModel(Protocol):
    name: str  # the spec it was loaded from, e.g. "tiny" or "hf:GSAI-ML/LLaDA-8B-Instruct"
    kind: ModelKind

    def generate(
        self,
        samples: "Sequence[Sample]",
        strategy: "Strategy | None",  # None for autoregressive and API models
        *,
        max_new_tokens: int,
        seed: int = 0,
    ) -> list[Generation]: ...

    def versions(self) -> dict[str, str]:
        """Whatever identifies the weights and code (recorded with every result row)."""
        ...
