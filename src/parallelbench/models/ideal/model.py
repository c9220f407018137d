"""The ideal model: exact conditional marginals of a finite answer distribution.

Section 4 of the paper asks what parallel decoding costs a model with no
modelling error at all. `IdealModel` is that model: for each batch row it knows
the finite set of valid answers (token sequences of one length L, padded with
EOS) and a distribution over them, and for every masked position of the
generation region it returns the log of the exact marginal given the positions
already committed. Optional zero-mean Gaussian logit noise turns it into the
paper's "unbiased model" (noise only breaks exact ties under greedy decoding).

Rows that share an answer set (every row of a synthetic shuffle task) share
one precomputed `AnswerSet`: the per-row state is only the canvas, so a batch
of ten thousand rows costs two small matrix products per call.

If a canvas contradicts every answer (possible after a bad parallel step) the
model has no data to condition on; it then returns, at each masked position, a
uniform distribution over the tokens that appear there in any answer.

`load` (the runner-level spec "ideal") lives in `bench.py`; the package
`parallelbench.models.ideal` exposes it because the registry points there.
"""

from __future__ import annotations

from typing import Sequence

import torch

# Logit of an impossible token: finite so softmax, entropy and margin stay NaN-free.
IMPOSSIBLE = -1e9


class AnswerSet:
    """One finite distribution over equal-length token sequences, indexed for fast marginals.

    Each position l has its own small set of possible tokens ("columns"); an
    answer is a one-hot row over all columns, so consistency with a canvas and
    the marginals are both matrix products over [A, C] with C = sum_l |tokens at l|.
    """

    def __init__(self, answers: torch.Tensor, probs: torch.Tensor | None = None):
        answers = torch.as_tensor(answers, dtype=torch.long)
        if answers.dim() != 2 or answers.shape[0] == 0 or answers.shape[1] == 0:
            raise ValueError("an answer set needs at least one non-empty answer, as a tensor [A, L]")
        num, length = answers.shape
        if probs is None:
            weights = torch.full((num,), 1.0 / num, dtype=torch.float32)
        else:
            weights = torch.as_tensor(probs, dtype=torch.float64)
            if weights.shape != (num,) or (weights < 0).any() or weights.sum() <= 0:
                raise ValueError("probs must hold one non-negative weight per answer, not all zero")
            weights = (weights / weights.sum()).float()
        self.answers = answers
        self.probs = weights
        self.uniform = bool((weights == weights[0]).all())
        self.length = length
        cols_tok, cols_pos, answer_col = [], [], torch.empty_like(answers)
        offset = 0
        for pos in range(length):
            tokens, inverse = torch.unique(answers[:, pos], return_inverse=True)
            answer_col[:, pos] = inverse + offset
            cols_tok.append(tokens)
            cols_pos.append(torch.full_like(tokens, pos))
            offset += len(tokens)
        self.col_token = torch.cat(cols_tok)  # [C]
        self.col_pos = torch.cat(cols_pos)  # [C]
        self.num_cols = offset
        self.answer_col = answer_col  # [A, L]
        onehot = torch.zeros(num, offset, dtype=torch.float32)
        onehot.scatter_(1, answer_col, 1.0)
        self.onehot = onehot  # [A, C]
        self.onehot_t = onehot.t().contiguous()  # [C, A]
        # Fallback for canvases no answer fits: uniform over each position's tokens.
        self.uniform_local = torch.zeros(offset)
        self._lookup: dict[int, torch.Tensor] = {}

    @property
    def num_answers(self) -> int:
        return self.answers.shape[0]

    def lookup(self, vocab_size: int) -> torch.Tensor:
        """[L, V] table: column of (position, token), or the dump column C when absent."""
        table = self._lookup.get(vocab_size)
        if table is None:
            if int(self.col_token.max()) >= vocab_size:
                raise ValueError(
                    f"answer token id {int(self.col_token.max())} is outside the vocabulary of size {vocab_size}"
                )
            table = torch.full((self.length, vocab_size), self.num_cols, dtype=torch.long)
            table[self.col_pos, self.col_token] = torch.arange(self.num_cols)
            self._lookup[vocab_size] = table
        return table

    def local_logits(self, gen: torch.Tensor, mask_id: int, vocab_size: int) -> torch.Tensor:
        """Log marginals over the columns [b, C] for generation canvases `gen` [b, L].

        Rows go in chunks so the [rows, answers] intermediate stays near 16 MB.
        """
        return self.local_marginals(gen, mask_id, vocab_size)[0]

    def local_marginals(self, gen: torch.Tensor, mask_id: int, vocab_size: int, exact: bool = False,
                        leave_one_out: bool = False):
        """(log marginals [b, C] float32, and with `exact` the largest marginal per position [b, L] in float64).

        The float64 value is the largest count / total, divided in double precision (counts
        of a uniform answer set are exact integers), so 1/2 or (n-1)/n come out exactly as
        Python writes those fractions: a threshold typed as that fraction compares equal
        rather than by rounding luck. With `leave_one_out`, a committed position's columns
        hold its conditional given every other position (`_leave_one_out`) instead of the
        marginal of the whole canvas.
        """
        chunk = max(1, (1 << 22) // self.num_answers)
        if gen.shape[0] <= chunk:
            return self._local_logits(gen, mask_id, vocab_size, exact, leave_one_out)
        parts = [self._local_logits(part, mask_id, vocab_size, exact, leave_one_out) for part in gen.split(chunk)]
        logits = torch.cat([p[0] for p in parts])
        return logits, (torch.cat([p[1] for p in parts]) if exact else None)

    def _top_per_position(self, values: torch.Tensor) -> torch.Tensor:
        """[b, L] the largest of each position's columns of `values` [b, C]."""
        top = torch.zeros(values.shape[0], self.length, dtype=values.dtype)
        return top.scatter_reduce_(1, self.col_pos.unsqueeze(0).expand_as(values), values, reduce="amax", include_self=True)

    def _local_logits(self, gen: torch.Tensor, mask_id: int, vocab_size: int, exact: bool = False,
                      leave_one_out: bool = False):
        committed = gen != mask_id
        cols = self.lookup(vocab_size).gather(1, gen.t().clamp(0, vocab_size - 1)).t()  # [b, L]
        # Column C: a committed token that never occurs at its position; C + 1: masked.
        cols = torch.where(committed, cols, torch.full_like(cols, self.num_cols + 1))
        seen = torch.zeros(gen.shape[0], self.num_cols + 2)
        seen.scatter_(1, cols, 1.0)
        unknown = seen[:, self.num_cols] > 0
        seen = seen[:, : self.num_cols]
        need = committed.sum(1, keepdim=True).float()
        matches = seen @ self.onehot_t  # [b, A]: committed positions each answer agrees with
        weights = (matches == need).float()
        if not self.uniform:
            weights = weights * self.probs
        weights[unknown] = 0.0
        counts = weights @ self.onehot  # [b, C]
        total = weights.sum(1, keepdim=True)
        lost = total.squeeze(1) <= 0
        marg = counts / total.clamp_min(1e-30)
        logits = torch.where(marg > 0, marg.clamp_min(1e-30).log(), torch.full_like(marg, IMPOSSIBLE))
        top = None
        if exact:
            top = self._top_per_position(counts).double() / total.double().clamp_min(1e-300)
        if lost.any():
            logits[lost] = self.uniform_local
            if exact:  # the fallback is uniform over each position's tokens
                top[lost] = 1.0 / torch.bincount(self.col_pos, minlength=self.length).double()
        if leave_one_out and committed.any():
            loo = self._leave_one_out(gen, committed, cols, matches, need, counts, seen[:, : self.num_cols])
            at_committed = committed[:, self.col_pos]
            logits = torch.where(at_committed, loo, logits)
        return logits, top

    def _leave_one_out(self, gen, committed, cols, matches, need, full_counts, seen) -> torch.Tensor:
        """Log conditionals [b, C] of each committed position given every OTHER position (committed
        tokens fixed, masked ones summed over): what an editing step asks of a written slot. A
        position no answer fits once it is left out gets IMPOSSIBLE everywhere (the model then keeps
        its token, `IdealModel._forward`).

        An answer agrees with all committed positions but l iff it agrees with all of them (then its
        token at l is the one written) or disagrees at exactly one, l (then it is another token):
        full agreement and one-off agreement, two matrix products."""
        unknown = (cols == self.num_cols) & committed  # written tokens no answer has at that position
        n_unknown = unknown.sum(1, keepdim=True)
        one_off = (matches == need - 1).float()
        if not self.uniform:
            one_off = one_off * self.probs
        one_off[n_unknown.squeeze(1) > 1] = 0.0  # two positions no answer has: leaving one out cannot help
        off_counts = one_off @ self.onehot  # [b, C]
        if n_unknown.any():  # then only the unknown position can be the one that differs, and full agreement is impossible
            is_unknown_col = unknown[:, self.col_pos]
            off_counts = torch.where((n_unknown > 0) & ~is_unknown_col, torch.zeros_like(off_counts), off_counts)
        written = seen > 0  # [b, C]: the column of the token written at its position
        loo = torch.where(written, full_counts, off_counts)
        totals = torch.zeros(gen.shape[0], self.length + 1).index_add_(1, self.col_pos, loo)[:, : self.length]
        marg = loo / totals[:, self.col_pos].clamp_min(1e-30)
        return torch.where(marg > 0, marg.clamp_min(1e-30).log(), torch.full_like(marg, IMPOSSIBLE))


class IdealModel:
    """A `MaskedDiffusionModel` whose predictions are the exact conditionals of the data.

    answer_sets: one `AnswerSet` per distinct task instance, all of one length L.
    row_sets: LongTensor [B], the answer set of each original batch row (default:
    row i uses set i, or every row the single set when there is one).
    The generation region is the last L positions of every canvas.
    """

    def __init__(
        self,
        answer_sets: Sequence[AnswerSet],
        *,
        vocab_size: int,
        mask_id: int,
        eos_id: int,
        row_sets: torch.Tensor | Sequence[int] | None = None,
        noise_std: float = 0.0,
        seed: int = 0,
        edits: bool = False,
        block_causal: bool = False,
        prompt_length: int = 1,
    ):
        if not answer_sets:
            raise ValueError("the ideal model needs at least one answer set")
        lengths = {s.length for s in answer_sets}
        if len(lengths) != 1:
            raise ValueError(f"answer sets of one batch must share a length; got lengths {sorted(lengths)}")
        if not 0 <= mask_id < vocab_size or not 0 <= eos_id < vocab_size:
            raise ValueError(f"mask_id {mask_id} and eos_id {eos_id} must lie in [0, {vocab_size})")
        if noise_std < 0:
            raise ValueError(f"noise_std must be >= 0, got {noise_std}")
        self.answer_sets = list(answer_sets)
        self.gen_length = lengths.pop()
        self.vocab_size = vocab_size
        self.mask_id = mask_id
        self.eos_id = eos_id
        self.noise_std = float(noise_std)
        self.row_sets = None if row_sets is None else torch.as_tensor(row_sets, dtype=torch.long)
        self._generator = torch.Generator().manual_seed(seed)
        self.edits = bool(edits)
        if block_causal:  # the block-causal face: one block over the prompt and the answer
            if prompt_length < 1:
                raise ValueError(f"prompt_length must be >= 1 for the block-causal face, got {prompt_length}")
            self.block_causal, self.block_size, self.cache_mode = True, None, "none"
            self.prompt_length = int(prompt_length)
            self.default_block_length = self.prompt_length + self.gen_length
            # DELETE and SPLIT (insert/delete editing) as two more ids: no answer holds them, so the
            # exact model never predicts them (every answer of a set has one length)
            self.delete_token_id, self.split_token_id = vocab_size, vocab_size + 1
            self.vocab_size = vocab_size + 2
        for s in self.answer_sets:
            s.lookup(self.vocab_size)  # validates token ids now rather than mid-decode

    @classmethod
    def from_answers(
        cls,
        answer_sets: Sequence[Sequence[Sequence[int]]],
        vocab: int | Sequence[str],
        *,
        mask_id: int,
        eos_id: int,
        probs: Sequence[Sequence[float] | None] | None = None,
        noise_std: float = 0.0,
        seed: int = 0,
        **options: bool | int,
    ) -> "IdealModel":
        """One answer set per batch row (token-id lists of any lengths; padded with EOS to one length).

        vocab: the vocabulary size, or the list of token strings (its length is the size).
        `options`: `edits`, `block_causal`, `prompt_length` (see the class).
        """
        vocab_size = vocab if isinstance(vocab, int) else len(vocab)
        if not answer_sets or any(len(s) == 0 for s in answer_sets):
            raise ValueError("every row needs at least one valid answer")
        length = max(len(a) for s in answer_sets for a in s)
        sets = []
        for i, answers in enumerate(answer_sets):
            padded = torch.tensor([list(a) + [eos_id] * (length - len(a)) for a in answers], dtype=torch.long)
            row_probs = None if probs is None else probs[i]
            sets.append(AnswerSet(padded, None if row_probs is None else torch.tensor(row_probs)))
        return cls(sets, vocab_size=vocab_size, mask_id=mask_id, eos_id=eos_id, noise_std=noise_std, seed=seed,
                   **options)

    def _sets_of(self, rows: torch.Tensor) -> torch.Tensor:
        if self.row_sets is not None:
            return self.row_sets[rows]
        if len(self.answer_sets) == 1:
            return torch.zeros_like(rows)
        return rows

    @torch.no_grad()
    def forward(
        self,
        canvas: torch.Tensor,
        *,
        attention_mask: torch.Tensor | None = None,
        rows: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        attention_bias: torch.Tensor | None = None,
    ) -> torch.Tensor:
        if position_ids is not None or attention_bias is not None:
            return self._forward_blocks(canvas, rows, position_ids, attention_bias)
        return self._forward(canvas, rows, want_confidence=False)[0]

    __call__ = forward

    @torch.no_grad()
    def forward_with_confidence(
        self,
        canvas: torch.Tensor,
        *,
        attention_mask: torch.Tensor | None = None,
        rows: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Logits as `forward` plus the noise-free confidence [B, total] (float64), or None without noise.

        The noise exists to order tied positions, not to move a confidence across a
        threshold: threshold strategies decide on this exact confidence (the largest exact
        marginal at each position; 1 at committed and prompt positions) and let the noisy
        logits only choose the token and the order among ties (docs/theory.md).
        """
        return self._forward(canvas, rows, want_confidence=self.noise_std > 0)

    def _forward(self, canvas: torch.Tensor, rows: torch.Tensor | None, want_confidence: bool):
        batch, total = canvas.shape
        length = self.gen_length
        if total < length:
            raise ValueError(f"canvas of length {total} is shorter than the answer length {length}")
        out = torch.empty(batch, total, self.vocab_size)
        out[:, : total - length] = 0.0  # prompt positions: no prediction needed
        rows = torch.arange(batch) if rows is None else rows.to(torch.long).cpu()
        top = self._answer_logits(canvas[:, total - length :], rows, want_confidence, out[:, total - length :])
        clean = None
        if top is not None:
            clean = torch.ones(batch, total, dtype=torch.float64)
            clean[:, total - length :] = top
        return out, clean

    def _answer_logits(self, gen: torch.Tensor, rows: torch.Tensor, want_confidence: bool,
                       gen_out: torch.Tensor) -> torch.Tensor | None:
        """Write the logits of answer canvases `gen` [b, L] into `gen_out` [b, L, V]; return the
        noise-free confidence [b, L] (1 at committed positions) when asked for."""
        batch, length = gen.shape
        set_ids = self._sets_of(rows)
        if int(set_ids.max()) >= len(self.answer_sets) or int(set_ids.min()) < 0:
            raise ValueError(
                f"batch row {int(rows.max())} has no answer set: the model was built for "
                f"{len(self.answer_sets)} set(s); pass row_sets or one answer set per row"
            )
        vocab = self.vocab_size
        flat_out = gen_out.view(batch, length * vocab)  # a view: each row of gen_out is contiguous
        flat_out.fill_(IMPOSSIBLE)
        committed = gen != self.mask_id
        clean = torch.ones(batch, length, dtype=torch.float64) if want_confidence else None
        distinct = torch.unique(set_ids)
        for sid in distinct.tolist():
            aset = self.answer_sets[sid]
            idx = None if len(distinct) == 1 else (set_ids == sid).nonzero().squeeze(1)
            sub = gen if idx is None else gen[idx]
            sub_committed = committed if idx is None else committed[idx]
            local, exact = _dedup_local_logits(aset, sub, self.mask_id, vocab, want_confidence, self.edits)
            if clean is not None:
                top = torch.where(sub_committed, 1.0, exact)
                if idx is None:
                    clean[:] = top
                else:
                    clean[idx] = top
            if self.noise_std > 0:  # per row, after de-duplication: rows stay independent
                noisy = local > IMPOSSIBLE / 2
                if not self.edits:  # committed positions get a one-hot below
                    noisy = noisy & ~sub_committed[:, aset.col_pos]
                noise = torch.randn(local.shape, generator=self._generator) * self.noise_std
                local = torch.where(noisy, local + noise, local)
            flat = aset.col_pos * vocab + aset.col_token
            if idx is None:
                flat_out[:, flat] = local
            else:
                flat_out[idx.unsqueeze(1), flat.unsqueeze(0)] = local
        if committed.any():
            # committed positions: one-hot on their token; with edits only where no answer fits once
            # the position is left out (the model keeps what is written)
            keep = committed
            if self.edits:
                keep = committed & ~(gen_out > IMPOSSIBLE / 2).any(dim=-1)
            if keep.any():
                gen_out.masked_fill_(keep.unsqueeze(-1), IMPOSSIBLE)
                where = keep.nonzero()
                gen_out[where[:, 0], where[:, 1], gen[keep].clamp(0, vocab - 1)] = 0.0
        return clean

    def _forward_blocks(self, canvas: torch.Tensor, rows: torch.Tensor | None, position_ids: torch.Tensor | None,
                        attention_bias: torch.Tensor | None) -> torch.Tensor:
        """The block-causal face (docs/theory.md): answer slot i is the column at position
        prompt_length + i; a query predicts from the answer slots its `attention_bias` lets it see
        (the others count as masked); slots past the answer predict EOS; prompt columns get zeros."""
        if position_ids is None:
            raise ValueError("the ideal model's block-causal face needs position_ids with attention_bias")
        batch, total = canvas.shape
        length, vocab = self.gen_length, self.vocab_size
        rows = torch.arange(batch) if rows is None else rows.to(torch.long).cpu()
        slot = position_ids.cpu() - self.prompt_length  # answer slot of each column (< 0: prompt)
        is_slot = (slot >= 0) & (slot < length)
        if attention_bias is None:
            attention_bias = torch.zeros(batch, total, total)
        sees = attention_bias.cpu() == 0  # [b, query, key]
        cols = torch.full((batch, length), -1, dtype=torch.long)  # canvas column of each answer slot
        r, c = is_slot.nonzero(as_tuple=True)
        cols[r, slot[r, c]] = c
        present = cols >= 0
        answer = torch.full((batch, length), self.mask_id, dtype=torch.long)
        answer[present] = canvas.cpu()[present.nonzero(as_tuple=True)[0], cols[present]]
        out = torch.zeros(batch, total, vocab)
        past = (slot >= length) & (position_ids.cpu() >= 0)
        if past.any():  # slots the grid adds after the answer: EOS, as the answers are padded
            out[past] = IMPOSSIBLE
            out[past.nonzero(as_tuple=True) + (torch.full((int(past.sum()),), self.eos_id),)] = 0.0
        # visibility of each answer slot from each query: one computation per distinct pattern
        seen = torch.zeros(batch, total, length, dtype=torch.bool)
        safe = cols.clamp(min=0).unsqueeze(1).expand(batch, total, length)
        seen = sees.gather(2, safe) & present.unsqueeze(1)
        qr, qc = is_slot.nonzero(as_tuple=True)
        if qr.numel():
            patterns, which = torch.unique(seen[qr, qc], dim=0, return_inverse=True)
            for p in range(patterns.shape[0]):
                pick = which == p
                prs, pcs = qr[pick], qc[pick]
                use, back = torch.unique(prs, return_inverse=True)
                gen = torch.where(patterns[p].unsqueeze(0), answer[use], torch.full_like(answer[use], self.mask_id))
                logits = torch.empty(len(use), length, vocab)
                self._answer_logits(gen, rows[use], False, logits)
                out[prs, pcs] = logits[back, slot[prs, pcs]]
        return out.to(canvas.device)


def _row_keys(gen: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """One int64 per canvas row, equal iff the rows are equal."""
    length = gen.shape[1]
    if length * max(vocab_size - 1, 1).bit_length() <= 62:
        weights = vocab_size ** torch.arange(length, dtype=torch.long)
        return (gen.clamp(0, vocab_size - 1) * weights).sum(1)
    return torch.unique(gen, dim=0, return_inverse=True)[1]


def _dedup_local_logits(aset: AnswerSet, gen: torch.Tensor, mask_id: int, vocab_size: int, exact: bool = False,
                        leave_one_out: bool = False):
    """(log marginals, float64 top marginal per position or None) with each distinct canvas computed once: rows
    sharing an answer set mostly repeat early on (every row is all-mask at the first step),
    which cuts the matrix work by about the step count."""
    if gen.shape[0] < 2:
        return aset.local_marginals(gen, mask_id, vocab_size, exact, leave_one_out)
    keys, inverse = torch.unique(_row_keys(gen, vocab_size), return_inverse=True)
    if len(keys) == gen.shape[0]:
        return aset.local_marginals(gen, mask_id, vocab_size, exact, leave_one_out)
    first = torch.full((len(keys),), gen.shape[0], dtype=torch.long)
    first.scatter_reduce_(0, inverse, torch.arange(gen.shape[0]), reduce="amin")
    logits, top = aset.local_marginals(gen[first], mask_id, vocab_size, exact, leave_one_out)
    return logits[inverse], (top[inverse] if exact else None)

