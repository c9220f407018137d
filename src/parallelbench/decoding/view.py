"""What a strategy sees at one step (`StepView`) and what it answers (`Decision`).

A view covers only the rows still decoding, restricted to the generation region.
Derived quantities (probabilities, sampled tokens, confidence, entropy...) are
computed on first use and cached, so a strategy pays only for what it reads; the
per-position ones only at the `focus` positions its strategy declares (for the
built-in presets, the positions a step can commit), so a step costs O(N x V) for
N committable positions rather than O(G x V) for the whole generation region.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from typing import Any

import torch

from parallelbench.decoding import sampling
from parallelbench.decoding.op_kinds import constant, filled, float32, minus, ramp


class cached_property:  # noqa: N801 - the name and behaviour of functools.cached_property
    """functools.cached_property without the lock Python 3.11 takes on every first read (a view
    is used by one thread; the lock cost several microseconds per property per step)."""

    def __init__(self, fn):
        self.fn, self.name, self.__doc__ = fn, fn.__name__, fn.__doc__

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        value = obj.__dict__[self.name] = self.fn(obj)
        return value


def rows_of(x: torch.Tensor, r: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    """x[r, p] for x [b, G, V] (or [b, G]: entries): one index_select over a [rows, V] (or [rows])
    view of x's storage when its last dimension is contiguous (x is usually a slice of the model's
    [b, L, V] output, or of the canvas), several times faster than advanced indexing on the CPU."""
    b, g, *rest = x.shape
    s0, s1, *inner = x.stride()
    v = rest[0] if rest else 1
    if b == 0 or g == 0 or inner not in ([], [1]) or s1 < v or s0 % s1 != 0:
        return x[r, p]
    per_row = s0 // s1
    lines = x.as_strided(((b - 1) * per_row + g, *rest), (s1, *inner))
    return lines.index_select(0, torch.add(p, r, alpha=per_row))  # line r * per_row + p


# Up to this many elements a plain max(dim) is cheaper than the chunked search: its extra ops cost
# more right after a model's forward (their code is no longer cached) than the chunks save on a
# handful of rows. From 8 rows of a 4,096 vocabulary on, the chunks win even then (max(dim) is not
# vectorised: 69 against 31 microseconds for 32 rows, warm; about 20 microseconds a step in a
# decode of the block-causal stand-in with blocks of 8).
PLAIN_UP_TO = 1 << 15


def width_for(v: int) -> int | None:
    """A chunk width for rows of v entries (a divisor of v, at least four chunks), or None."""
    for c in (128, 64, 32):
        if v % c == 0 and v >= 4 * c:
            return c
    return None


def chunk_width(x: torch.Tensor) -> int | None:
    """The chunk width of row_max's chunked search over [N, V], or None for a plain max(dim)."""
    n, v = x.shape
    if n * v <= PLAIN_UP_TO or not x.is_cpu:  # is_cpu: no torch.device object made
        return None
    return width_for(v)


def winning_chunk(blocks: torch.Tensor, block: torch.Tensor) -> torch.Tensor:
    """[N, chunk] the chunk `block[i]` of each row of blocks [N, chunks, chunk] (a copy, safe to write):
    one index_select over the chunks as rows, in fewer ops than a gather (and a kind the step runs)."""
    n, chunks, width = blocks.shape
    lines = blocks.view(n * chunks, width) if blocks.is_contiguous() else blocks.reshape(n * chunks, width)
    return lines.index_select(0, torch.add(block, ramp(0, n, torch.long, block.device), alpha=chunks))


def row_max(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(values, indices) of each row's maximum of [N, V], the first index on a tie, exactly like
    x.max(dim=-1). On many rows, reduces chunks of the row with the vectorised amax first and looks
    for the index only inside the winning chunk: about 5x faster than max(dim) on the CPU."""
    n, v = x.shape
    chunk = chunk_width(x)
    if chunk is None:
        values, indices = x.max(dim=-1)
        return values, indices
    blocks = x.view(n, v // chunk, chunk) if x.is_contiguous() else x.reshape(n, v // chunk, chunk)
    values, block = blocks.amax(dim=-1).max(dim=-1)  # the first chunk holding the maximum
    inner = winning_chunk(blocks, block).argmax(dim=-1)
    return values, torch.add(inner, block, alpha=chunk)  # block * chunk + inner in one op


def row_max_chunks(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """row_max's (values, indices), plus the maxima of the row's chunks ([N, chunks], None when
    row_max does not use chunks): one element per chunk, so the winner's chunk aside they are
    distinct entries other than the maximum (for lower bounds on the rest of a softmax)."""
    n, v = x.shape
    chunk = chunk_width(x)
    if chunk is None:
        values, indices = row_max(x)
        return values, indices, None
    blocks = x.view(n, v // chunk, chunk) if x.is_contiguous() else x.reshape(n, v // chunk, chunk)
    chunk_max = blocks.amax(dim=-1)
    values, block = chunk_max.max(dim=-1)
    inner = winning_chunk(blocks, block).argmax(dim=-1)
    return values, torch.add(inner, block, alpha=chunk), chunk_max


def row_top2(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None:
    """(values, indices, second values) of each row of [N, V]: row_max's maximum and index, and
    the largest entry once that index is set aside (equal to the maximum on a tie). One pass
    over x (the chunk maxima), without the copy `clone + scatter + amax` needs; None where
    row_max would not use chunks (then do it the plain way)."""
    n, v = x.shape
    chunk = chunk_width(x)
    if chunk is None:
        return None
    blocks = x.view(n, v // chunk, chunk) if x.is_contiguous() else x.reshape(n, v // chunk, chunk)
    chunk_max = blocks.amax(dim=-1)
    values, block = chunk_max.max(dim=-1)
    winner = winning_chunk(blocks, block)  # [N, chunk], a copy
    inner = winner.argmax(dim=-1)
    # the winner's maximum set aside, then its chunk's maximum replaced by the rest of it: index_put_
    # with cached row numbers and -inf (kinds the step runs anyway, where scatter_ is not)
    rows, never = ramp(0, n, torch.long, x.device), constant(float("-inf"), x)
    chunk_max.index_put_((rows, block), winner.index_put_((rows, inner), never).amax(dim=-1))
    return values, torch.add(inner, block, alpha=chunk), chunk_max.amax(dim=-1)


def entropy_of(logits: torch.Tensor, probs: torch.Tensor, top: torch.Tensor, top_logit: torch.Tensor | None = None) -> torch.Tensor:
    """[N] -sum_i p_i ln p_i for probs = softmax(logits) with some entries zeroed (the mask token);
    `top` [N] is the largest entry of the softmax before zeroing, i.e. 1 / S with
    S = sum_i exp(z_i - m) and m the largest logit (`top_logit` [N] or [N, 1], when the caller has it).

    ln p_i = (z_i - m) - ln S, so the entropy is sum_i p_i (m - z_i) + ln S * sum_i p_i: terms
    that are never negative (no cancellation), computed with vectorised max / multiply / sum
    instead of the element-wise `entr` (several times slower on the CPU); equal to float rounding.
    Where a logit is -inf its probability is 0 and the term p (m - z) is 0 * inf = NaN: nansum
    drops it (the same sum as with the term at 0).

    `logits` is overwritten (pass a copy of your own): the terms are computed in its storage, as a new
    [N, V] temporary costs more than its arithmetic on the CPU right after the model's forward."""
    if top_logit is None:
        m = logits.amax(dim=-1, keepdim=True)
    else:  # [N] or [N, 1]
        m = top_logit if top_logit.dim() == 2 else top_logit.unsqueeze(-1)
    weighted = torch.add(m, logits, alpha=-1, out=logits)  # m - z (minus's arithmetic) in logits' storage
    return minus(weighted.mul_(probs).nansum(dim=-1), top.log() * probs.sum(dim=-1))


@dataclass(frozen=True)
class Shift:
    """Insert / delete edits of the active block (`indel-threshold`), applied after the step's other
    writes: slot j of the block then holds what slot `source[j]` held (its token, mask, commit step
    and edit history), or a new mask where `source[j]` is -1. Slots that are not editable keep their
    place (source[j] = j). Block-causal loop only: the block keeps its length. Frozen: `new` and
    `origin` are derived from `source` when it is made, and the loop reads them, not `source`."""

    source: torch.Tensor  # [b, G] long: the slot each slot's content comes from, -1 = a new mask
    inserts: torch.Tensor  # [b] long: insert operations applied (repair record)
    deletes: torch.Tensor  # [b] long: delete operations applied (repair record)
    # source < 0, and source with -1 read as 0 (an index to gather with): derived here unless the
    # strategy has them at hand (None), so the loop and the repair record compute them once between them
    new: torch.Tensor = None  # type: ignore[assignment]
    origin: torch.Tensor = None  # type: ignore[assignment]

    def __post_init__(self):
        if self.new is None:
            object.__setattr__(self, "new", self.source < 0)
        if self.origin is None:
            object.__setattr__(self, "origin", self.source.clamp(min=0))


@dataclass
class Decision:
    """Positions to commit (with their tokens) and positions to mask again."""

    commit: torch.Tensor  # [b, G] bool, a subset of the masked positions
    tokens: torch.Tensor | None = None  # [b, G] ids used where commit is True (default: view.x0)
    remask: torch.Tensor | None = None  # [b, G] bool, a subset of the committed positions
    edit: torch.Tensor | None = None  # [b, G] bool: committed positions rewritten in place to `tokens`
    confidence: torch.Tensor | None = None  # [b, G] recorded for committed positions (default: view.confidence)
    hold: torch.Tensor | None = None  # [b] bool: the row's active block stays active next step, even with no mask left
    shift: Shift | None = None  # insert / delete shifts of the active block, after the writes above (block-causal)


@dataclass(eq=False)
class StepView:
    logits: torch.Tensor  # [b, G, V] raw logits of the generation region (probs / log_probs / x0 exclude the mask token)
    canvas: torch.Tensor  # [b, G] current ids (mask_id where masked)
    masked: torch.Tensor  # [b, G] still to generate
    editable: torch.Tensor  # [b, G] False at template-fixed positions
    block_of: torch.Tensor  # [G] block index of each position
    block: torch.Tensor  # [b] active block of each row
    block_step: torch.Tensor  # [b] steps already spent in the active block
    step: torch.Tensor  # [b] 0-based index of this step for each row
    rows: torch.Tensor  # [b] index of each row in the decode call
    rng_keys: torch.Tensor  # [b] int64 random-stream key of each row (from seed + row)
    temperature: float
    mask_id: int
    eos_id: int
    num_blocks: int
    block_length: int
    commit_conf: torch.Tensor  # [b, G] confidence each committed position had when committed
    t: int = 0  # index of this step (the same for every row still decoding)
    state: dict[str, Any] = field(default_factory=dict)  # the strategy's per-row tensors
    aux: dict[str, Any] = field(default_factory=dict)  # what the strategy's forward returned besides logits
    focus: torch.Tensor | None = None  # [b, G] where x0 / confidence / margin / entropy are computed (None = all)
    focus_masked: bool = False  # every focus position is masked (the engine's "candidates" / "masked" focus)
    block_round: int | None = None  # block_step on the host, where every row shares it (the block-causal loop)

    @property
    def batch_size(self) -> int:
        return self.canvas.shape[0]

    @property
    def gen_length(self) -> int:
        return self.canvas.shape[1]

    @property
    def device(self) -> torch.device:
        return self.canvas.device

    @cached_property
    def in_block(self) -> torch.Tensor:
        """[b, G] positions inside each row's active block."""
        return self.block_of.unsqueeze(0) == self.block.unsqueeze(1)

    def in_active_block(self, x: torch.Tensor) -> torch.Tensor:
        """x & in_block; x itself when the view is the active block alone (the loops then hand
        `masked` itself over as the candidates), which saves an op per use."""
        return x if self.__dict__.get("candidates") is self.masked else x & self.in_block

    @cached_property
    def candidates(self) -> torch.Tensor:
        """[b, G] masked positions a step may commit (the active block only)."""
        return self.masked & self.in_block

    @cached_property
    def committed(self) -> torch.Tensor:
        """[b, G] positions generated so far (template positions excluded)."""
        return ~self.masked & self.editable

    @cached_property
    def _bans_mask(self) -> bool:
        return 0 <= self.mask_id < self.logits.shape[-1]

    # ------------------------------------------------------------ whole-region tensors
    @cached_property
    def probs(self) -> torch.Tensor:
        """softmax(logits) with the mask token's probability set to 0 (it is never proposed).
        [b, G, V] over every position: costly; the per-position quantities below use `focus`."""
        p = torch.softmax(self.logits.float(), dim=-1)
        if self._bans_mask:
            p[..., self.mask_id] = 0.0
        return p

    @cached_property
    def log_probs(self) -> torch.Tensor:
        """log_softmax(logits) with the mask token at -inf."""
        lp = torch.log_softmax(self.logits.float(), dim=-1)
        if self._bans_mask:
            lp[..., self.mask_id] = float("-inf")
        return lp

    def token_prob(self, tokens: torch.Tensor) -> torch.Tensor:
        """[b, G] model probability of `tokens` at each position."""
        return self.probs.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)

    # ------------------------------------------------------------ focus positions
    # x0, confidence, margin and entropy are computed only at `focus` positions (the
    # strategy's `focus`: by default every position). The logits of those positions are
    # gathered into one [N, V] block, so a step pays for what it can commit, not for the
    # whole generation region.
    def count_focus(self, focus: torch.Tensor, count: int, at: tuple[array, array] | None = None) -> None:
        """Set `focus` with `count` positions in it, known to the loop, so finding them reads nothing
        on the host: the exact number when the loops set the focus before the step (`positions`
        relies on it), an upper bound after it (padding after the True positions repeats position
        (0, 0)). A strategy that sets another focus itself gets `nonzero`'s exact positions.
        `at`: the positions themselves (rows, positions; int64 arrays, row-major), where the loop
        found them on the host (a CPU focus): made tensors only if the step reads them, with no op."""
        self.focus = focus
        self.__dict__["_counted"] = (focus, int(count), at)
        self.__dict__.pop("_where", None)

    @cached_property
    def _where(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(row, position) index of every focus position, row-major."""
        counted = self.__dict__.get("_counted")
        if counted is not None and counted[0] is self.focus:
            at = counted[2]
            if at is not None and len(at[0]):  # frombuffer: tensors over the loop's arrays, no aten op
                return torch.frombuffer(at[0], dtype=torch.long), torch.frombuffer(at[1], dtype=torch.long)
            r, p = torch.nonzero_static(self.focus, size=counted[1], fill_value=0).unbind(1)
            return r, p
        return self.focus.nonzero(as_tuple=True)

    def positions(self, where: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(row, position) of every True of `where` [b, G], row-major; for the focus the loop
        counted (its candidates or masks, set before the step), the focus's own index: no host read."""
        if where is self.focus and self.__dict__.get("_counted", (None,))[0] is where:
            return self._where
        r, p = where.nonzero(as_tuple=True)
        return r, p

    def logits_at(self, where: torch.Tensor, r: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
        """[N, V] float32 logits at `where`'s positions (r, p), which the caller found (`positions`,
        or a nonzero of its own: no second search), the caller's own copy, safe to edit. For the
        focus it is the view's copy, handed over (the view makes another if it needs them again):
        no second gather of the vocabulary rows in the step."""
        if where is self.focus and "_flat_logits" in self.__dict__:
            logits = self._flat_logits
            del self.__dict__["_flat_logits"]
            return logits
        return float32(rows_of(self.logits, r, p))

    @cached_property
    def _flat_logits(self) -> torch.Tensor:
        r, p = self._where
        return float32(rows_of(self.logits, r, p))  # (no to() call on float32: one op kind less)

    @cached_property
    def _flat_softmax(self) -> tuple[torch.Tensor, torch.Tensor | None]:
        """softmax of the focus logits with the mask token zeroed, and the mask token's own
        probability before zeroing (None when the mask id is outside the vocabulary)."""
        p = torch.softmax(self._flat_logits, dim=-1)
        mask_p = None
        if self._bans_mask:
            column = p.select(1, self.mask_id)
            mask_p = column.clone()
            column.fill_(0.0)
        return p, mask_p

    @cached_property
    def _flat_probs(self) -> torch.Tensor:
        return self._flat_softmax[0]

    @cached_property
    def _flat_top1(self) -> tuple[torch.Tensor, torch.Tensor]:
        return row_max(self._flat_probs)

    @cached_property
    def _flat_masked(self) -> torch.Tensor:
        r, p = self._where
        return self.masked[r, p]

    @cached_property
    def _flat_top2(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(top-1 value, its index, top-2 value) of the focus probabilities."""
        found = row_top2(self._flat_probs)
        if found is None:
            value, index = self._flat_top1
            rest = self._flat_probs.clone()
            rest.scatter_(1, index.unsqueeze(1), float("-inf"))
            return value, index, rest.amax(dim=-1)
        self.__dict__.setdefault("_flat_top1", found[:2])
        return found

    @cached_property
    def _flat_canvas(self) -> torch.Tensor:
        r, p = self._where
        return self.canvas[r, p]

    def _spread(self, flat: torch.Tensor, fill: float | int = 0) -> torch.Tensor:
        """[N] values at the focus positions -> [b, G], `fill` elsewhere."""
        out = filled(fill, self.canvas.shape, flat)
        out[self._where] = flat
        return out

    @cached_property
    def _flat_drawn(self) -> torch.Tensor:
        """[N] token proposed at each focus position: argmax, or an inverse-CDF draw at T > 0."""
        if self.temperature <= 0:
            return self._flat_top1[1]
        if self.temperature == 1.0:
            p = self._flat_probs
        else:
            p = torch.softmax(self._flat_logits / self.temperature, dim=-1)
            if self._bans_mask:
                p[:, self.mask_id] = 0.0
        u = self.uniform((self.gen_length,))[self._where]  # one uniform per position, row-keyed
        return sampling.inverse_cdf(p, u, lambda: self._best_allowed(self._flat_logits))

    @cached_property
    def _flat_x0(self) -> torch.Tensor:
        if self.focus_masked:
            return self._flat_drawn
        return torch.where(self._flat_masked, self._flat_drawn, self._flat_canvas)

    def _flat_token_prob(self, tokens: torch.Tensor) -> torch.Tensor:
        return self._flat_probs.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)

    # ------------------------------------------------------------ per-position quantities
    @cached_property
    def x0(self) -> torch.Tensor:
        """Proposed token at every masked focus position (argmax, or a draw from softmax(logits / T)
        at temperature > 0); the current token elsewhere."""
        if self.focus is None:
            if self.temperature <= 0:
                drawn = self._top1[1]
            else:
                u = self.uniform((self.gen_length,))
                drawn = sampling.inverse_cdf(self._probs_at(self.temperature), u, lambda: self._best_allowed(self.logits))
            return torch.where(self.masked, drawn, self.canvas)
        out = self.canvas.clone()
        out[self._where] = self._flat_x0
        return out

    def _best_allowed(self, logits: torch.Tensor) -> torch.Tensor:
        """Arg-max of the logits with the mask token excluded."""
        z = logits.float().clone()
        if self._bans_mask:
            z[..., self.mask_id] = float("-inf")
        return z.argmax(dim=-1)

    def _probs_at(self, temperature: float) -> torch.Tensor:
        if temperature == 1.0:
            return self.probs
        p = torch.softmax(self.logits.float() / temperature, dim=-1)
        if self._bans_mask:
            p[..., self.mask_id] = 0.0
        return p

    @cached_property
    def _top1(self) -> tuple[torch.Tensor, torch.Tensor]:
        values, indices = self.probs.max(dim=-1)
        return values, indices

    @cached_property
    def confidence(self) -> torch.Tensor:
        """[b, G] probability of x0 (of the current token at settled positions); 0 off focus."""
        if self.focus is None:
            if self.temperature <= 0:
                return torch.where(self.masked, self._top1[0], self.token_prob(self.canvas))
            return self.token_prob(self.x0)
        if self.temperature <= 0:
            flat = self._flat_top1[0]
            if not self.focus_masked:
                flat = torch.where(self._flat_masked, flat, self._flat_token_prob(self._flat_canvas))
        else:
            flat = self._flat_token_prob(self._flat_x0)
        return self._spread(flat, 0.0)

    @cached_property
    def decision_confidence(self) -> torch.Tensor:
        """[b, G] the confidence threshold rules compare: the model's noise-free confidence when it
        supplies one under greedy decoding (the ideal model, whose noise only orders tied
        positions), else `confidence`."""
        clean = self.aux.get("noise_free_confidence")
        if clean is None or self.temperature > 0:
            return self.confidence
        return torch.where(self.masked, clean.to(self.device), self.confidence.double())

    @cached_property
    def margin(self) -> torch.Tensor:
        """[b, G] top-1 minus top-2 probability; 0 off focus."""
        if self.focus is None:
            top2 = self.probs.topk(2, dim=-1).values
            return top2[..., 0] - top2[..., 1]
        # the top-1 entry set aside, the largest left is the second (equal to it on a tie)
        value, _, second = self._flat_top2
        return self._spread(value - second, 0.0)

    @cached_property
    def entropy(self) -> torch.Tensor:
        """[b, G] entropy of the predictive distribution in nats; 0 off focus."""
        if self.focus is None:
            return torch.special.entr(self.probs).sum(dim=-1)  # -sum p ln p, with 0 ln 0 = 0
        return self.entropy_at_focus(0.0)

    def prob_at_focus(self, tokens: torch.Tensor) -> torch.Tensor:
        """[b, G] the probability of `tokens` ([b, G] ids, each valid) at the focus positions, from the
        softmax the confidence comes from (the mask token's at 0); 0 elsewhere (without a focus, every
        position's): a rule that scores a token other than x0 reads it without a pass of its own."""
        if self.focus is None:
            return self.token_prob(tokens)
        r, p = self._where
        return self._spread(self._flat_token_prob(rows_of(tokens, r, p)), 0.0)

    def entropy_at_focus(self, fill: float) -> torch.Tensor:
        """[b, G] the entropy at the focus positions, `fill` elsewhere (a view with a focus only): a rule
        that ranks the focus positions fills the others with what ranks them last, with no op of its own."""
        return self._spread(self._flat_entropy, fill)

    @cached_property
    def _flat_entropy(self) -> torch.Tensor:
        """[N] the entropy at the focus positions."""
        probs, mask_p = self._flat_softmax
        value, index = self._flat_top1  # the largest entry besides the mask token, and where it is
        logits = self.logits_at(self.focus, *self._where)  # the view's copy, handed over: entropy_of overwrites it
        # [N, 1], as entropy_of uses it: the entries as lines of one column (index_select, a kind the
        # step runs; a gather would be one more)
        n, v = logits.shape
        at = torch.add(index, ramp(0, n, torch.long, index.device), alpha=v)  # row * v + index
        top_logit = logits.view(n * v, 1).index_select(0, at)
        if mask_p is None:
            top = value
        else:  # the mask token may hold the largest logit
            top = torch.maximum(value, mask_p)  # (one new kind costs less than a stack and an amax twice)
            top_logit = torch.maximum(top_logit, logits[:, self.mask_id : self.mask_id + 1])
        return entropy_of(logits, probs, top, top_logit)

    def uniform(self, shape: tuple[int, ...]) -> torch.Tensor:
        """[b, *shape] uniforms in (0, 1) from each row's own stream (a fresh draw per call)."""
        draw = self.__dict__.get("_draws", 0)
        self.__dict__["_draws"] = draw + 1
        return sampling.uniform(self.rng_keys, self.t, draw, shape)

    def uniform_at(self, rows: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        """[N, K] entries of the next `uniform(shape)` draw, only at rows `rows` ([N], rows of
        this view) and flat element indices `index` ([N, K]); uses up that draw."""
        draw = self.__dict__.get("_draws", 0)
        self.__dict__["_draws"] = draw + 1
        return sampling.uniform_at(self.rng_keys[rows], self.t, draw, index)

    def gumbel(self, shape: tuple[int, ...]) -> torch.Tensor:
        """[b, *shape] standard Gumbel noise from each row's own stream."""
        return -torch.log(-torch.log(self.uniform(shape)))

    def tokens_to_finish_block(self) -> torch.Tensor:
        """[b] masked positions left in each row's active block."""
        return self.candidates.sum(dim=1)
