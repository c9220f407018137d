"""Per-row random streams, so a row decodes the same whatever batch it sits in.

Randomness is counter-based: every uniform is a hash of (the row's key, the step,
the draw within the step, the element index), with the row's key derived from
`seed + row`. Tokens are drawn by inverse CDF: one uniform per position, not one per
vocabulary entry (`inverse_cdf`); `gumbel` / `sample_tokens` remain for callers that mix
two distributions with the same noise (APD). That makes a row's draws independent of which other rows share its
batch and when rows are dropped, and it is fully vectorised (no per-row Python
loop, so a batch of ten thousand ideal-model rows costs a few tensor ops).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Callable

import torch

from parallelbench.decoding.op_kinds import constant

_MASK64 = (1 << 64) - 1


def _signed(x: int) -> int:
    x &= _MASK64
    return x - (1 << 64) if x >= 1 << 63 else x


_GOLDEN = _signed(0x9E3779B97F4A7C15)
_MUL1 = _signed(0xBF58476D1CE4E5B9)
_MUL2 = _signed(0x94D049BB133111EB)
_CHUNK = 1 << 22  # elements hashed at once, bounding temporary memory


def _shr(x: torch.Tensor, s: int) -> torch.Tensor:
    """Logical right shift of int64 (torch's >> is arithmetic)."""
    return (x >> s) & constant((1 << (64 - s)) - 1, x)


def mix(x: torch.Tensor) -> torch.Tensor:
    """SplitMix64 finaliser on int64 tensors (wrapping arithmetic). The xors go in place into the
    fresh temporaries, and the masks are cached tensors: op kinds a decoding step runs anyway
    (decoding/op_kinds.py)."""
    x = x + _GOLDEN
    x = x.bitwise_xor_(_shr(x, 30)) * _MUL1
    x = x.bitwise_xor_(_shr(x, 27)) * _MUL2
    return x.bitwise_xor_(_shr(x, 31))


def _to_unit(h: torch.Tensor) -> torch.Tensor:
    """float32 uniforms in (0, 1) from hashes: 24 random bits, never 0 or 1."""
    return (_shr(h, 40).to(torch.float32) + 0.5) * (1.0 / (1 << 24))


def row_keys(rows: torch.Tensor, seed: int) -> torch.Tensor:
    """[b] int64 key of each row: a hash of seed + row."""
    return mix(rows.to(torch.long) + int(seed))


def uniform(keys: torch.Tensor, step: int, draw: int, shape: tuple[int, ...]) -> torch.Tensor:
    """[b, *shape] float32 uniforms in (0, 1) for draw `draw` of step `step`."""
    b = keys.shape[0]
    n = 1
    for s in shape:
        n *= int(s)
    base = mix(mix(keys + _signed(step * 0x632BE59BD9B4E019)) + _signed(draw * 0x85EBCA77C2B2AE63))
    rows_per_chunk = max(1, _CHUNK // max(n, 1))
    idx = _element_offsets(n, keys.device)
    if b <= rows_per_chunk:  # one chunk: no output buffer to copy into
        return _to_unit(mix(base.unsqueeze(1) + idx)).view(b, *shape)
    out = torch.empty((b, n), dtype=torch.float32, device=keys.device)
    for start in range(0, b, rows_per_chunk):
        chunk = base[start : start + rows_per_chunk].unsqueeze(1)
        out[start : start + rows_per_chunk] = _to_unit(mix(chunk + idx))
    return out.view(b, *shape)


@lru_cache(maxsize=32)
def _element_offsets(n: int, device: torch.device) -> torch.Tensor:
    """[1, n] element index * golden ratio, the per-element part of every draw's counter: the same
    for every step, so made once per length and device (read only)."""
    return torch.arange(n, device=device, dtype=torch.long).unsqueeze(0) * _GOLDEN


def keys_at_step(keys: torch.Tensor, own_steps: torch.Tensor, step: int) -> torch.Tensor:
    """Keys whose draws at step `step` are those of `keys` at each row's own step `own_steps` [b]:
    for loops where rows sit some steps out (block-causal decoding), so a row's randomness still
    depends only on its key and its own step count, not on the rows beside it."""
    return keys + (own_steps.to(torch.long) - int(step)) * _signed(0x632BE59BD9B4E019)


def uniform_at(keys: torch.Tensor, step: int, draw: int, index: torch.Tensor) -> torch.Tensor:
    """[N, K] uniforms equal to uniform(...)[row, element] at the flat element indices `index`
    ([N, K] int64) of the rows whose keys are `keys` ([N]): the same stream, hashed only
    where it is needed."""
    base = mix(mix(keys + _signed(step * 0x632BE59BD9B4E019)) + _signed(draw * 0x85EBCA77C2B2AE63))
    return _to_unit(mix(base.unsqueeze(1) + index.to(torch.long) * _GOLDEN))


def gumbel(keys: torch.Tensor, step: int, draw: int, shape: tuple[int, ...]) -> torch.Tensor:
    return -torch.log(-torch.log(uniform(keys, step, draw, shape)))


def inverse_cdf(probs: torch.Tensor, u: torch.Tensor, fallback: "Callable[[], torch.Tensor] | None" = None) -> torch.Tensor:
    """One draw per row of `probs` ([..., V], not necessarily normalised; zero entries are
    never drawn) from the uniforms `u` ([...]): the first token whose cumulative probability
    exceeds u times the total. One uniform per position instead of V Gumbel variables.
    A row with no probability left (all mass on a banned token, underflow) takes `fallback()`'s
    token, by default its arg-max."""
    cdf = probs.cumsum(dim=-1)
    total = cdf[..., -1:]
    # strictly below the total, so the token found always has probability > 0
    target = torch.minimum(u.unsqueeze(-1).to(cdf.dtype) * total, torch.nextafter(total, torch.zeros_like(total)))
    tokens = torch.searchsorted(cdf, target, right=True).squeeze(-1)
    last = probs.shape[-1] - 1
    if last >= 0:
        tokens = tokens.clamp(max=last)
    degenerate = total.squeeze(-1) <= 0  # nothing to draw from (all mass on a banned token)
    # decided on the device (no host read), so the fallback is computed for every row
    return torch.where(degenerate, fallback() if fallback is not None else probs.argmax(dim=-1), tokens)


def sample_tokens(
    logits: torch.Tensor, temperature: float, noise: torch.Tensor | None, banned: int | None = None
) -> torch.Tensor:
    """Greedy argmax at temperature 0, else a Gumbel-max draw from softmax(logits / T);
    token `banned` (the mask) is never drawn."""
    if temperature <= 0 or noise is None:
        z = logits.float().clone() if banned is not None else logits
    else:
        z = logits.float() / temperature + noise
    if banned is not None:
        z[..., banned] = float("-inf")
    return z.argmax(dim=-1)
