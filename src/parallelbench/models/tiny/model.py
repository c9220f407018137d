"""The tiny denoiser: a small bidirectional pre-LN transformer over prompt + answer canvas.

It answers the engine's `MaskedDiffusionModel` interface (`mask_id`, `eos_id`,
`vocab_size`, `forward(canvas, attention_mask=, rows=) -> logits`) and, because the
returned logits tensor also has a `.logits` attribute, `model(input_ids).logits` works
as with a Hugging Face model.

Positions are counted from the first non-padding token (cumulative sum of the attention
mask), so the engine's left padding does not shift what the model sees.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn

from parallelbench.models.protocols import ModelInputError


@dataclass
class TinyConfig:
    vocab_size: int
    mask_id: int
    eos_id: int
    pad_id: int = 0
    sep_id: int | None = None  # end of prompt; uniform noise never draws it
    d_model: int = 192
    n_layers: int = 4
    n_heads: int = 6
    d_ff: int = 768
    max_len: int = 192
    dropout: float = 0.0
    rope: bool = False  # rotary position embedding in attention instead of a learned position table
    tie: bool = False  # output head shares the token embedding (copying a prompt token is then easy)
    # List-position embedding: each token also gets its distance from the latest list opener
    # (`["` in the prompt; the answer's start after [SEP]), so the j-th item of the answer and
    # the j-th item of the prompt's list share an embedding. 0 turns it off.
    list_pos: int = 0
    list_open_id: int | None = None
    # Segment embedding: prompt (up to and including [SEP]) vs answer, so "the prompt's j-th
    # item" and "the answer's j-th slot" are told apart without counting positions.
    segments: bool = False
    # Pointer-generator output (See et al., 2017): the next-token distribution mixes the
    # vocabulary softmax with attention over the prompt's tokens, so copying a name from
    # the prompt is one attention step instead of a learned lookup through the head.
    pointer: bool = False
    # Coverage embedding (after the coverage vector of See et al., 2017): every position also
    # sees how often its token already stands, unmasked, elsewhere in the answer (0..3+), so a
    # prompt name that is already placed, or a Latin-square symbol used three times, is
    # marked without having to be found by attention first.
    coverage: bool = False
    # Neighbour embeddings: each position also sees the ids of the tokens just before and
    # after it (a width-3 token convolution). A masked last-name slot then knows the first
    # name committed before it, and the prompt's last name knows its own first name, so the
    # pointer can keep a person's two names together without an induction circuit.
    neighbours: bool = False
    # Field-key embedding: every token inside a `key: value` field (from the separator after
    # the key, `field_sep_ids`, to the field's end, `field_end_ids`: a comma piece, a closing
    # brace, a line break) also gets an embedding of its field's key, the token before that
    # separator. A value in the answer and the same key's value in the prompt then share a
    # feature, so the pointer finds a value by its key in one step instead of through a
    # two-hop induction (key -> separator -> value). Off when `field_sep_ids` is empty.
    field_key: bool = False
    field_sep_ids: list[int] | None = None
    field_end_ids: list[int] | None = None
    # Field-count embedding (needs `field_sep_ids`): a prompt token gets how many key separators
    # stand up to it in the prompt (its field's line number), an answer token how many the whole
    # prompt holds. The record's length follows from its field count, so "is slot j past the last
    # field?" is read off directly instead of counting prompt lines through attention (without it
    # the tiny model wrote a record's last field twice). Starts at zero.
    field_count: bool = False
    # Grid embedding (row and column, as in TAPAS's table embeddings): after the latest
    # line break (`grid_line_ids`), the answer's start or a list opener, a token's row is
    # the number of row breaks (`grid_row_ids`) before it and its column the number of
    # cells (tokens other than row breaks and `grid_skip_ids`, i.e. commas) since the row
    # began. A token in both lists (the newline of grids written one row per line) is a row
    # break right after a cell (`grid_cell_ids` or [MASK]) and a line break anywhere else,
    # so `Input:\n0042\n2031\n...` starts its grid after `Input:\n`, as the answer's grid
    # starts after [SEP]. A Sudoku or Latin-square cell then shares its row / column code
    # with the cells it must differ from, in the answer and in the prompt's grid alike.
    # 0 turns it off.
    grid: int = 0
    grid_line_ids: list[int] | None = None
    grid_row_ids: list[int] | None = None
    grid_skip_ids: list[int] | None = None
    # Grid attention bias (TableFormer's structure-aware biases, Yang et al. 2022): each head
    # of each layer learns one score added between two grid cells of the same row and one
    # for the same column, so "look at the rest of this row" is there from the first step
    # instead of having to be found through the embeddings. Needs `grid`.
    grid_bias: bool = False
    # Tokens the biases link (single letters and digits; [MASK] is always one): names and
    # formatting tokens are outside every grid. None: every token inside the grid codes.
    grid_cell_ids: list[int] | None = None
    # Grid exclusion (the candidate elimination of a constraint solver, made a learned
    # feature): at an answer cell, the output logit of every token already standing,
    # unmasked, in the same row of the answer's grid drops by one learned amount, and by a
    # second for the same column. "This symbol is used up here" is then read off directly
    # instead of through four attention layers; the amounts start at 0. Needs `grid_bias`.
    grid_exclude: bool = False
    # Alphabetical rank of every token's word (0..1 over the vocabulary, one float per id),
    # fed in as a few Fourier features through a learned projection: sorting by last name
    # then compares one learned direction instead of learning each rare name's place in
    # the alphabet from the few batches it turns up in. None turns it off.
    token_rank: list[float] | None = None

    def to_dict(self) -> dict:
        return asdict(self)


class Logits(torch.Tensor):
    """A plain logits tensor that also answers `.logits` (Hugging Face style output)."""

    __torch_function__ = torch._C._disabled_torch_function_impl  # ops return plain tensors

    @property
    def logits(self) -> torch.Tensor:
        return self.as_subclass(torch.Tensor)


class _Block(nn.Module):
    def __init__(self, cfg: TinyConfig):
        super().__init__()
        self.n_heads = cfg.n_heads
        self.ln1 = nn.LayerNorm(cfg.d_model)
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)
        self.ln2 = nn.LayerNorm(cfg.d_model)
        self.ff = nn.Sequential(
            nn.Linear(cfg.d_model, cfg.d_ff), nn.GELU(), nn.Linear(cfg.d_ff, cfg.d_model)
        )
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor, attn_mask: torch.Tensor | None, rot=None) -> torch.Tensor:
        b, l, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, l, 3, self.n_heads, d // self.n_heads).unbind(2)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        if rot is not None:
            q, k = _rotate(q, *rot), _rotate(k, *rot)
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)
        x = x + self.drop(self.proj(a.transpose(1, 2).reshape(b, l, d)))
        return x + self.drop(self.ff(self.ln2(x)))


class TinyDenoiser(nn.Module):
    """Predicts the clean token at every position of a (partly masked) canvas."""

    def __init__(self, cfg: TinyConfig):
        super().__init__()
        if cfg.d_model % cfg.n_heads:
            raise ValueError("d_model must be divisible by n_heads")
        self.cfg = cfg
        self.mask_id, self.eos_id, self.vocab_size = cfg.mask_id, cfg.eos_id, cfg.vocab_size
        self.pad_id = cfg.pad_id  # the engine left-pads prompts with it
        self.sep_id = cfg.sep_id if cfg.sep_id is not None else cfg.pad_id
        self.tok = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos = None if cfg.rope else nn.Embedding(cfg.max_len, cfg.d_model)
        self.list_pos = nn.Embedding(cfg.list_pos + 1, cfg.d_model) if cfg.list_pos else None
        self.segment = nn.Embedding(2, cfg.d_model) if cfg.segments else None
        self.coverage = nn.Embedding(COVERAGE_MAX + 1, cfg.d_model) if cfg.coverage else None
        if cfg.neighbours:
            self.prev_tok = nn.Embedding(cfg.vocab_size, cfg.d_model)
            self.next_tok = nn.Embedding(cfg.vocab_size, cfg.d_model)
        if cfg.field_key:
            self.field_key = nn.Embedding(cfg.vocab_size, cfg.d_model)  # the pad id stands for "no field"
        self.field_count = nn.Embedding(2 * FIELD_COUNT_MAX, cfg.d_model) if cfg.field_count else None
        if cfg.grid:
            self.grid_row = nn.Embedding(cfg.grid, cfg.d_model)
            self.grid_col = nn.Embedding(cfg.grid, cfg.d_model)
        self.grid_bias = None
        if cfg.grid_bias:
            if not cfg.grid:
                raise ValueError("grid_bias needs the grid embedding: set grid > 0")
            # Head 0 of every layer starts out looking along its row, head 1 along its column
            # (a bias of 4 outweighs the ~100 other tokens); learned from there.
            init = torch.zeros(cfg.n_layers, 2, cfg.n_heads)
            init[:, 0, 0] = GRID_BIAS_INIT
            init[:, 1, min(1, cfg.n_heads - 1)] = GRID_BIAS_INIT
            self.grid_bias = nn.Parameter(init)
        self.grid_exclude = None
        if cfg.grid_exclude:
            if not cfg.grid_bias:
                raise ValueError("grid_exclude needs the grid relations: set grid_bias")
            self.grid_exclude = nn.Parameter(torch.zeros(2))  # same row, same column
        self.rank_proj = None
        if cfg.token_rank is not None:
            if len(cfg.token_rank) != cfg.vocab_size:
                raise ValueError(f"token_rank has {len(cfg.token_rank)} entries for {cfg.vocab_size} tokens")
            # features depend on the token id only: one [V, 2F + 1] table, looked up per position
            rank = torch.tensor(cfg.token_rank, dtype=torch.float32)
            self.register_buffer("rank_table", rank_features(rank), persistent=False)
            self.rank_proj = nn.Linear(2 * len(RANK_FREQUENCIES) + 1, cfg.d_model, bias=False)
        if cfg.pointer:
            self.ptr_q = nn.Linear(cfg.d_model, cfg.d_model, bias=False)
            self.ptr_k = nn.Linear(cfg.d_model, cfg.d_model, bias=False)
            self.ptr_gate = nn.Linear(cfg.d_model, 1)
        self.blocks = nn.ModuleList(_Block(cfg) for _ in range(cfg.n_layers))
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        self.apply(_init)
        if self.field_count is not None:
            nn.init.zeros_(self.field_count.weight)  # a warm start begins as the network it loads
        if cfg.tie:
            self.head.weight = self.tok.weight

    @property
    def device(self) -> torch.device:
        return self.tok.weight.device

    # Takes `position_ids` and `attention_bias` (see MaskedDiffusionModel): WINO's shadow block.
    supports_attention_bias = True

    def forward(
        self,
        canvas: torch.Tensor,
        *,
        attention_mask: torch.Tensor | None = None,
        rows: torch.Tensor | None = None,  # unused: one network serves every row
        positions: torch.Tensor | None = None,
        layout: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        attention_bias: torch.Tensor | None = None,
    ) -> Logits:
        """Logits [B, L, V]; with a boolean `positions` [B, L], only those rows, [N, V]
        (training needs the masked positions only, and the output layer is the costly part).

        `position_ids` / `attention_bias` follow the MaskedDiffusionModel contract. Features read
        off the layout (neighbours, list and grid codes, segments) then come from the tokens laid
        out by position id, the first token at each position standing for it, so a token that
        repeats a position (a shadow copy) shares its codes; what one token counts or points at
        in others (coverage, pointer, grid exclusion) only reaches the keys it may see."""
        canvas = canvas.to(self.device)
        if attention_mask is None:
            attention_mask = canvas != self.cfg.pad_id
        attention_mask = attention_mask.to(self.device).bool()
        if position_ids is None:
            pos = (attention_mask.long().cumsum(1) - 1).clamp(min=0)
        else:
            pos = position_ids.to(self.device).long()
        if int(pos.max()) >= self.cfg.max_len:
            raise ModelInputError(
                f"sequence of {int(pos.max()) + 1} tokens exceeds the tiny model's "
                f"max_len {self.cfg.max_len}; shorten the prompt or the generation length"
            )
        if position_ids is None and attention_bias is None:
            src, src_mask, back, allowed = canvas, attention_mask, None, None
        else:
            if layout is not None:
                raise ValueError("layout= is a training input; it cannot be combined with position_ids / attention_bias")
            src, src_mask, back = by_position(canvas, attention_mask, pos, self.cfg.pad_id)
            bias = None if attention_bias is None else attention_bias.to(self.device, torch.float32)
            keys = attention_mask[:, None, :].expand(-1, canvas.shape[1], -1)
            allowed = keys if bias is None else keys & (bias > float("-inf"))

        def spread(codes: torch.Tensor) -> torch.Tensor:
            """Per-position codes [B, P] -> per token [B, L] (identity on the plain path)."""
            return codes if back is None else codes.gather(1, back)

        x = self.tok(canvas)
        hidden = src.masked_fill(~src_mask, self.cfg.pad_id)  # padding reads as [PAD] to every feature below
        src_answer = answer_segment(src, self.sep_id)
        if self.cfg.neighbours:
            pad = torch.full_like(hidden[:, :1], self.cfg.pad_id)
            prev, nxt = torch.cat([pad, hidden[:, :-1]], 1), torch.cat([hidden[:, 1:], pad], 1)
            x = x + self.prev_tok(spread(prev)) + self.next_tok(spread(nxt))
        if self.cfg.field_key:
            keys = field_keys(hidden, self.cfg.field_sep_ids or [], self.cfg.field_end_ids or [], self.cfg.pad_id)
            x = x + self.field_key(spread(keys))
        if self.field_count is not None:
            counts = field_counts(hidden, self.cfg.field_sep_ids or [], src_answer)
            x = x + self.field_count(spread(counts))
        if self.list_pos is not None:
            x = x + self.list_pos(spread(list_positions(src, self.cfg.list_open_id, self.sep_id, self.cfg.list_pos)))
        if self.rank_proj is not None:
            x = x + self.rank_proj(self.rank_table[canvas.clamp(0, self.cfg.vocab_size - 1)])
        in_answer = spread(src_answer)
        relation = None
        if self.cfg.grid:
            if back is None:
                # `layout`: the canvas the grid is read from; training may pass the clean answer
                # (what the decoder sees once it has committed the spaces and commas, which it
                # does first, at confidence ~1), so masked commas do not scramble the codes.
                row, col, relation = self._grid(canvas if layout is None else layout.to(self.device), attention_mask)
            else:
                row, col = self._grid_codes(src, src_mask)
                row, col = spread(row), spread(col)
                if self.grid_bias is not None:
                    relation = _grid_relations(row, col, self.cfg.grid, self._cells(canvas))
            x = x + self.grid_row(row) + self.grid_col(col)
        if self.segment is not None:
            x = x + self.segment(in_answer.long())
        if self.coverage is not None:
            hidden_ids = (self.mask_id, self.eos_id, self.cfg.pad_id)
            x = x + self.coverage(coverage_counts(canvas, in_answer & attention_mask, hidden_ids, allowed))
        rot = None
        if self.pos is not None:
            x = x + self.pos(pos)
        else:
            rot = _rotary_tables(pos, self.cfg.d_model // self.cfg.n_heads)
        # Keys on padding are hidden; padded query rows still see something (no NaN).
        attn = attention_mask[:, None, None, :]
        if allowed is not None:  # additive scores [B, 1, L, L]: the bias, and -inf on padding keys
            attn = torch.zeros(allowed.shape, dtype=x.dtype, device=x.device).masked_fill(~allowed, float("-inf"))[:, None]
        elif relation is not None:  # as additive scores: -inf on padding keys
            attn = torch.zeros(attn.shape, dtype=x.dtype, device=x.device).masked_fill(~attn, float("-inf"))
        for i, block in enumerate(self.blocks):
            if relation is None:
                x = block(x, attn, rot)
            else:  # plus the layer's same-row / same-column scores, [B, H, L, L]
                x = block(x, attn + torch.einsum("rh,brij->bhij", self.grid_bias[i], relation), rot)
        h = self.ln_f(x)
        if positions is None:
            positions = torch.ones_like(canvas, dtype=torch.bool)
            shape = (*canvas.shape, self.cfg.vocab_size)
        else:
            shape = (int(positions.sum()), self.cfg.vocab_size)
        query = h[positions]  # [N, D]
        row = torch.arange(canvas.shape[0], device=canvas.device)[:, None].expand_as(positions)[positions]  # [N]
        seen = None if allowed is None else allowed[positions]  # [N, L]: keys each query may see
        logits = self.head(query)
        if self.cfg.pointer:
            logits = self._point(h, query, logits, canvas, attention_mask & ~in_answer, positions, row, seen)
        if self.grid_exclude is not None:
            logits = self._exclude(logits, canvas, in_answer & attention_mask, relation, positions, row, seen)
        return logits.reshape(shape).as_subclass(Logits)

    def _grid(self, src: torch.Tensor, attention_mask: torch.Tensor):
        """Grid (row, column) codes of `src`, and the same-row / same-column relations
        [B, 2, L, L] when the network has grid biases (else None)."""
        row, col = self._grid_codes(src, attention_mask)
        if self.grid_bias is None:
            return row, col, None
        return row, col, _grid_relations(row, col, self.cfg.grid, self._cells(src))

    def _grid_codes(self, src: torch.Tensor, attention_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        cfg = self.cfg
        opener = [] if cfg.list_open_id is None else [cfg.list_open_id]
        line = _isin(src, [self.sep_id, *(cfg.grid_line_ids or []), *opener])
        row_break = _isin(src, cfg.grid_row_ids or [])
        skip = _isin(src, cfg.grid_skip_ids or []) | ~attention_mask
        cells = self._cells(src)
        line, row_break = split_line_breaks(line, row_break, ~(line | row_break | skip) if cells is None else cells)
        return grid_positions(src, line, row_break, skip, cfg.grid)

    def _cells(self, tokens: torch.Tensor) -> torch.Tensor | None:
        ids = self.cfg.grid_cell_ids
        return None if ids is None else _isin(tokens, [self.mask_id, *ids])

    def _point(self, h, query, logits, canvas, source, positions, row, seen=None) -> torch.Tensor:
        """Log of gate * softmax(logits) + (1 - gate) * (attention over prompt tokens, summed per id)."""
        # Scores of every position against its own row, [B, L, L], then the wanted rows: one
        # batched matmul, where gathering each query's keys ([N, L, D]) cost far more.
        scores = (self.ptr_q(h) @ self.ptr_k(h).transpose(1, 2))[positions] / math.sqrt(h.shape[-1])
        pointable = source[row] if seen is None else source[row] & seen
        scores = scores.masked_fill(~pointable, float("-inf"))
        attn = torch.softmax(scores, dim=-1).nan_to_num(0.0)  # rows with no prompt point nowhere
        ids = canvas.clamp(0, self.cfg.vocab_size - 1)[row]
        copy = torch.zeros_like(logits).scatter_add_(1, ids, attn)
        gate = torch.sigmoid(self.ptr_gate(query))
        mix = gate * torch.softmax(logits, dim=-1) + (1 - gate) * copy
        return torch.log(mix.clamp_min(1e-12))

    def _exclude(self, logits, canvas, answer, relation, positions, row, seen=None) -> torch.Tensor:
        """Logits minus the learned same-row / same-column amounts for every cell token
        already visible in the answer's grid on that row / column (see TinyConfig). Only
        rows that see such a cell are touched: outside the puzzles there are next to none."""
        visible = answer & _isin(canvas, list(self.cfg.grid_cell_ids or []))
        links = relation.transpose(1, 2)[positions] * visible[row][:, None, :]  # [N, 2, L]: visible cells on the row / column
        if seen is not None:
            links = links * seen[:, None, :]
        hit = links.flatten(1).any(-1).nonzero().squeeze(1)
        if hit.numel() == 0:
            return logits
        ids = canvas.clamp(0, self.cfg.vocab_size - 1)[row[hit]][:, None, :].expand(-1, 2, -1)
        used = torch.zeros(hit.numel(), 2, logits.shape[-1], dtype=logits.dtype, device=logits.device)
        used = used.scatter_add_(2, ids, links[hit]).clamp_(max=1.0)
        return logits.index_add(0, hit, -torch.einsum("mrv,r->mv", used, self.grid_exclude))

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())


def answer_segment(canvas: torch.Tensor, sep_id: int) -> torch.Tensor:
    """True on positions after the first [SEP] (the answer region)."""
    is_sep = canvas == sep_id
    return (is_sep.long().cumsum(1) - is_sep.long()) > 0


COVERAGE_MAX = 3
GRID_BIAS_INIT = 4.0
# Angular frequencies (times pi) of the rank features: 1 spans the alphabet, 32 tells apart
# neighbours a few dozen words away (Reese / Roman) that the coarse ones barely separate.
RANK_FREQUENCIES = (1, 2, 4, 8, 16, 32)


def rank_features(rank: torch.Tensor) -> torch.Tensor:
    """[..., 2F + 1]: the rank itself and sin / cos of it at F frequencies."""
    angles = rank[..., None] * (math.pi * torch.tensor(RANK_FREQUENCIES, dtype=rank.dtype, device=rank.device))
    return torch.cat([rank[..., None], torch.sin(angles), torch.cos(angles)], -1)


def alphabetical_ranks(tokens: list[str]) -> list[float]:
    """Each token's place (0..1) when the vocabulary's words, stripped of spaces, quotes and
    brackets and lower-cased, are sorted; special tokens ([MASK], ...) and tokens with no
    letters or digits get 0."""
    keys = ["" if re.fullmatch(r"\[[A-Z]+\]", t) else t.strip(' "[],.\n').lower() for t in tokens]
    words = sorted({k for k in keys if any(c.isalnum() for c in k)})
    place = {w: i / max(len(words) - 1, 1) for i, w in enumerate(words)}
    return [round(place.get(k, 0.0), 6) for k in keys]


def coverage_counts(
    canvas: torch.Tensor, answer: torch.Tensor, hidden_ids: tuple[int, ...], allowed: torch.Tensor | None = None
) -> torch.Tensor:
    """Per position: how many *other* answer positions hold the same token, unmasked (capped);
    with `allowed` [B, L, L], only among the positions each one may see."""
    visible = answer.clone()
    for i in hidden_ids:
        visible &= canvas != i
    same = (canvas[:, :, None] == canvas[:, None, :]) & visible[:, None, :]
    if allowed is None:
        counts = same.sum(-1) - visible.long()  # a visible answer token does not count itself
    else:
        eye = torch.eye(canvas.shape[1], dtype=torch.bool, device=canvas.device)
        counts = (same & allowed & ~eye).sum(-1)
    return counts.clamp(0, COVERAGE_MAX)


def by_position(
    canvas: torch.Tensor, attention_mask: torch.Tensor, pos: torch.Tensor, pad_id: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The tokens laid out by position id, one per position (the first token that claims it;
    padding claims none): (ids [B, P], filled [B, P], each token's column in that layout [B, L])."""
    b, length = canvas.shape
    width = int(pos.max()) + 1
    slot = torch.where(attention_mask, pos, width)  # padding goes to a spare column
    idx = torch.arange(length, device=canvas.device).expand(b, length)
    first = torch.full((b, width + 1), length, dtype=torch.long, device=canvas.device)
    first.scatter_reduce_(1, slot, idx, reduce="amin")
    first = first[:, :width]
    filled = first < length
    ids = canvas.gather(1, first.clamp(max=length - 1)).masked_fill(~filled, pad_id)
    return ids, filled, pos.clamp(0, width - 1)


def field_keys(canvas: torch.Tensor, sep_ids: list[int], end_ids: list[int], none_id: int) -> torch.Tensor:
    """Per position, the id of the key of the field it stands in (the token before the latest
    key separator, when no field end came between), or `none_id` outside any field."""
    idx = torch.arange(canvas.shape[1], device=canvas.device).expand_as(canvas)
    sep = torch.where(_isin(canvas, sep_ids), idx, -1).cummax(dim=1).values
    end = torch.where(_isin(canvas, end_ids), idx, -1).cummax(dim=1).values
    before = torch.cat([torch.full_like(canvas[:, :1], none_id), canvas[:, :-1]], 1)
    key = before.gather(1, sep.clamp(min=0))
    return torch.where((sep >= 0) & (sep > end), key, torch.full_like(key, none_id))


FIELD_COUNT_MAX = 16  # field counts at or above it share one code


def field_counts(canvas: torch.Tensor, sep_ids: list[int], in_answer: torch.Tensor) -> torch.Tensor:
    """Codes of the field-count embedding: a prompt token, the key separators up to it in the
    prompt; an answer token, FIELD_COUNT_MAX + the prompt's total (see TinyConfig.field_count)."""
    seen = (_isin(canvas, sep_ids) & ~in_answer).long().cumsum(1).clamp(max=FIELD_COUNT_MAX - 1)
    return torch.where(in_answer, FIELD_COUNT_MAX + seen[:, -1:], seen)


def list_positions(canvas: torch.Tensor, open_id: int | None, sep_id: int, size: int) -> torch.Tensor:
    """Distance of each token from the latest list opener: a `["` token, or the first answer
    position (right after [SEP]). Tokens before any opener get index `size`."""
    idx = torch.arange(canvas.shape[1], device=canvas.device).expand_as(canvas)
    anchor = torch.where(canvas == sep_id, idx + 1, -1)
    if open_id is not None:
        anchor = torch.maximum(anchor, torch.where(canvas == open_id, idx, -1))
    anchor = anchor.cummax(dim=1).values
    local = (idx - anchor).clamp(0, size - 1)
    return torch.where(anchor < 0, size, local)


def _isin(canvas: torch.Tensor, ids: list[int]) -> torch.Tensor:
    if not ids:
        return torch.zeros_like(canvas, dtype=torch.bool)
    return torch.isin(canvas, torch.tensor(ids, device=canvas.device))


def split_line_breaks(
    line: torch.Tensor, row_break: torch.Tensor, cells: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """(line, row_break) with every token marked as both resolved by what precedes it: a row
    break right after a cell, a line break (the start of a new grid) anywhere else. See
    TinyConfig.grid; tokens marked as one of the two only are left as they are."""
    both = line & row_break
    if not bool(both.any()):
        return line, row_break
    after_cell = torch.zeros_like(cells)
    after_cell[:, 1:] = cells[:, :-1]
    ends_row = both & after_cell
    return line & ~ends_row, row_break & ~(both & ~after_cell)


def grid_positions(
    canvas: torch.Tensor, line: torch.Tensor, row_break: torch.Tensor, skip: torch.Tensor, size: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """(row, column) of every token in the grid that starts after the latest `line` token;
    both capped at size - 1, which also marks tokens before any line (no grid starts there).
    `skip` tokens (and padding, which callers add to it) are not cells, so left padding
    leaves every code unchanged. See TinyConfig.grid."""
    idx = torch.arange(canvas.shape[1], device=canvas.device).expand_as(canvas)

    def since(anchor_mask: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
        # counts[i] minus counts at the latest anchor at or before i
        at = torch.where(anchor_mask, idx, -1).cummax(dim=1).values
        return counts - counts.gather(1, at.clamp(min=0))

    outside = torch.where(line, idx, -1).cummax(dim=1).values < 0
    row = since(line, row_break.long().cumsum(1)).masked_fill(outside, size - 1)
    cell = ~(line | row_break | skip)
    col = (since(line | row_break, cell.long().cumsum(1)) - cell.long()).masked_fill(outside, size - 1)
    return row.clamp(0, size - 1), col.clamp(0, size - 1)


def _grid_relations(row: torch.Tensor, col: torch.Tensor, size: int, cells: torch.Tensor | None = None) -> torch.Tensor:
    """[B, 2, L, L] floats: 1 where two cells sit in the same grid row / the same column
    (tokens whose row or column hit the cap, size - 1, and non-`cells` are outside any grid)."""
    inside = (row < size - 1) & (col < size - 1)
    if cells is not None:
        inside &= cells
    both = inside[:, :, None] & inside[:, None, :]
    same_row = (row[:, :, None] == row[:, None, :]) & both
    same_col = (col[:, :, None] == col[:, None, :]) & both
    return torch.stack([same_row, same_col], 1).to(torch.float32)


def _rotary_tables(pos: torch.Tensor, head_dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    """cos / sin tables [B, 1, L, head_dim / 2] for rotary embeddings at the given positions."""
    inv = 1.0 / (10000 ** (torch.arange(0, head_dim, 2, device=pos.device).float() / head_dim))
    angles = pos.float()[:, None, :, None] * inv
    return angles.cos(), angles.sin()


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1).flatten(-2)


def _init(m: nn.Module) -> None:
    if isinstance(m, nn.Linear):
        nn.init.normal_(m.weight, std=0.02)
        if m.bias is not None:
            nn.init.zeros_(m.bias)
    elif isinstance(m, nn.Embedding):
        nn.init.normal_(m.weight, std=0.02)
