"""Repair bookkeeping: what a decode did to tokens it had already written.

Strategies that can change a written token (token-to-token edits, remasking) report per
row, in `DecodeResult.extra` (CONTRACTS.md, "Repair bookkeeping"):

- "edits": slots whose token after a step differs from the last token they held before it
  (one per slot per step; a slot masked again and re-committed with another token counts
  one, with the same token none);
- "inserts" / "deletes": insert and delete operations (`Decision.shift`: the block-causal loop's
  `indel-threshold`; 0 on the canvas loop, which has none);
- "unmask_tokens": the answer when the last ORIGINAL mask (a mask present when bookkeeping
  began; masks a remask introduces are not original) was filled: the region after that
  step's commits (and `stop_at_eos` fill), before its edits and remasks (a slot masked again
  earlier and not yet refilled shows the last token it held): the answer before any edit
  that came after it;
- "first_tokens": per slot, the first token ever committed into it (EOS where only the
  `stop_at_eos` fill wrote it; -1 where a template pre-filled it).

The log starts when the first decision that can change a written token arrives (a
`Decision` with `edit` or `remask`), so strategies that never edit pay nothing. Starting
late is exact: until then no written token changed, so the current tokens are the first
ones and every mask still present is original. Rows finished before the start never
changed a token either; `backfill` gives them their final tokens as both snapshots.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

import torch

from parallelbench.decoding.op_kinds import and_not, cached, constant

REPAIR_KEYS = ("edits", "inserts", "deletes", "unmask_tokens", "first_tokens")


class RepairLog:
    """Per-row repair record of the rows still decoding (dim 0 follows the loop's live rows)."""

    def __init__(self, gen: torch.Tensor, masked: torch.Tensor, editable: torch.Tensor, mask_id: int,
                 deferred: bool = True):
        """Start from the region `gen` [b, G] before a step, with `masked` still to fill.

        `deferred`: `update` only keeps copies of its tensors, and they are applied all at once, over
        every step kept, when the record is read or its rows change (`finish`, `keep`, `move`): about
        two ops per step instead of thirty, which on the CPU is most of the record's cost."""
        written = editable & ~masked
        self.mask_id = mask_id
        # `first` and `last` (the last token each slot held) are the two rows of one tensor, so that a
        # shift moves both in one gather; a slot never written holds -1 in both, except in `last` where
        # it is an original mask not filled yet: -2 (`original` reads it there, nothing more to move)
        never = cached(("repair-never", gen.dtype, gen.device),
                       lambda: torch.stack((constant(-1, gen), constant(-2, gen))).view(2, 1, 1))
        self._record = torch.where(written, gen, torch.where(masked, never, constant(-1, gen)))
        self.first, self.last = self._record.unbind(0)
        self.pending = masked.any(dim=1)  # rows whose unmask snapshot is still to come
        self.unmask = gen.clone()  # final for rows not pending; overwritten when they stop pending
        self.edits = torch.zeros(gen.shape[0], dtype=torch.long, device=gen.device)
        self.inserts, self.deletes = torch.zeros_like(self.edits), torch.zeros_like(self.edits)
        # the mask id and the never-written mark as tensors (cached, read only): `update` compares with them
        self._mask, self._unset = constant(mask_id, gen), constant(-1, gen)
        self._deferred = deferred
        self._kept: list[tuple[Any, ...]] = []  # update's arguments, step by step
        self._editable = editable

    @property
    def original(self) -> torch.Tensor:
        """Original masks not filled yet."""
        return self.last == constant(-2, self.last)

    def keep(self, keep: torch.Tensor) -> None:
        """Drop the rows that finished (`keep` [b] bool, as the loop does with its own tensors)."""
        self._settle()
        self._record = self._record[:, keep]
        self.first, self.last = self._record.unbind(0)
        self.pending, self.unmask, self.edits = self.pending[keep], self.unmask[keep], self.edits[keep]
        self.inserts, self.deletes = self.inserts[keep], self.deletes[keep]

    def move(self, new: torch.Tensor, origin: torch.Tensor, inserts: torch.Tensor, deletes: torch.Tensor,
             c0: int = 0, rows: torch.Tensor | None = None) -> None:
        """Insert / delete shifts (`Decision.shift`), before the step's `update`, over columns c0 .. c0 + G
        of the rows `rows` (live-row positions; None: every row): slot j there continues the record of
        slot origin[j] (counted from c0; [b, G]), or is a new mask where new[j] (never written, not
        original). The updates kept so far are applied first (one kept step, as when the record moves
        every step, by `update`'s own rules: _settle); only the moved columns are gathered (`first`
        and `last` together, and with them `original`), written in place where every row moves."""
        self._settle()
        part = self._record[:, :, c0 : c0 + new.shape[1]]
        at = torch.stack((origin, origin))  # (stack: a kind the step runs; expand is not)
        if rows is None:
            torch.where(new, self._unset, part.gather(2, at), out=part)
        else:
            part.index_copy_(1, rows, torch.where(new, self._unset, part.index_select(1, rows).gather(2, at)))
        if rows is None:
            self.inserts, self.deletes = self.inserts + inserts, self.deletes + deletes
        else:
            self.inserts, self.deletes = self.inserts.index_add(0, rows, inserts), self.deletes.index_add(0, rows, deletes)

    def update(self, drafted: torch.Tensor | None, gen: torch.Tensor, masked: torch.Tensor, editable: torch.Tensor,
               fill: torch.Tensor | None = None, place: "Callable[[torch.Tensor, torch.Tensor], None] | None" = None,
               ) -> None:
        """After a step. `drafted`: the region after the step's commits, before its edits and
        remasks; `gen` / `masked`: the region and its masks after the whole step; `fill`: slots
        the loop set to EOS after a row's first EOS (`stop_at_eos`), which are never edits.
        `place`: `drafted` covers only the slots the step drafted (the block-causal loop's window);
        `place(full, drafted)` writes it into `full`, a copy of `gen`, which elsewhere is the draft.
        `drafted=None`: the draft is `gen` itself, for a step that neither edits nor remasks and whose
        `fill` lies outside the slots it drafted (nothing to build or keep, and on a deferred record
        nothing to place, for such a step).
        `drafted` and `fill` are kept as they are until the record is read: tensors of the step's
        own, which the caller does not write afterwards (`gen` and `masked` are copied).
        A step's commits and edits touch different slots, so each slot changes at most once.

        Runs after every step of a rewriting strategy, so it sticks to the few op kinds the loop
        already runs (`==` against tensors, `~`, `&`, `where`; `a & ~b` as `b < a`, op_kinds.and_not):
        on the CPU the first op of each kind in a step is what costs (decoding/op_kinds.py). `first`
        and `last` are negative at the same slots (never written); both are written in place (they are
        views of the record `move` moves)."""
        if self._deferred:  # applied in _settle; copies of what the loops write in place later (both
            # loops hand over a `drafted` and a `fill` of the step's own: kept as they are)
            self._kept.append((drafted, gen.clone(), masked.clone(), fill, place))
            self._editable = editable
            return
        if drafted is None:
            drafted = gen
        elif place is not None:
            drafted = _placed(drafted, gen, place)
        holes = drafted == self._mask
        drafted_w = and_not(editable, holes)
        zero = constant(0, self.last)
        unseen = self.last < zero  # never written before this step (never editable ones included)
        last = torch.where(drafted_w, drafted, self.last)
        written = and_not(editable, masked)
        # an edit: a written slot now holding another token than the last one it held; as commits and
        # edits touch different slots, that is a re-commit with another token or a token-to-token edit
        # (gen is never -1, so an unseen slot compares gen with itself: no `|`, a kind the step lacks)
        changed = and_not(written, gen == torch.where(unseen, gen, self.last))
        # a hole shows the last token it held; elsewhere `last` is the drafted token (seen slots) and
        # an unseen slot shows what was drafted (the mask for a new mask never written)
        snapshot = torch.where(unseen, drafted, last)
        # an unseen slot's first token is what it holds now if it was drafted (else still -1)
        torch.where(unseen & drafted_w, drafted, self.first, out=self.first)
        if fill is not None:
            changed = changed & ~fill
            torch.where(written & (self.first == self._unset), gen, self.first, out=self.first)  # masks the fill wrote
            snapshot = torch.where(fill, gen, snapshot)
        self.edits = self.edits + changed.sum(dim=1)
        # an original mask stays one (-2) while it is a hole the step did not fill: neither drafted
        # nor written (the fill writes; a hole is otherwise still masked after the step)
        torch.where(written, gen, last, out=self.last)
        left = self.original.amax(dim=1)  # any()
        self.unmask = torch.where(and_not(self.pending, left).unsqueeze(1), snapshot, self.unmask)
        self.pending = self.pending & left

    def _settle(self) -> None:
        """Apply the updates kept since the last settle, all steps at once: `update`'s rules as scans
        over the steps. Each step has two events per slot, its draft (`drafted`, where it holds a
        token) and its result (`gen`, where written); the last token a slot held before a step is
        the latest event before it, found with a running maximum of event indices."""
        kept, self._kept = self._kept, []
        if not kept:
            return
        if len(kept) == 1:  # one step (a record that moves every step): update's own rules, fewer ops than the scans
            drafted, gen, masked, fill, place = kept[0]
            self._deferred = False
            try:
                self.update(drafted, gen, masked, self._editable, fill, place)
            finally:
                self._deferred = True
            return
        gen = torch.stack([k[1] for k in kept])  # [T, b, G]
        if all(k[0] is not None and k[4] is None for k in kept):
            drafted = torch.stack([k[0] for k in kept])
        elif all(k[0] is None for k in kept):
            drafted = gen  # only read below
        else:  # the steps' drafts placed over their regions in one copy of them all (not a copy each)
            drafted = gen.clone()
            for t, k in enumerate(kept):
                if k[0] is None:
                    continue  # the draft is the step's result
                if k[4] is None:
                    drafted[t] = k[0]
                else:
                    k[4](drafted[t], k[0])
        pairs = torch.stack((drafted, gen), dim=1)  # [T, 2, b, G]: each step's drafted and gen
        masked = torch.stack([k[2] for k in kept])
        fills = [k[3] for k in kept]
        fill = None if all(f is None for f in fills) else torch.stack(
            [torch.zeros_like(masked[0]) if f is None else f for f in fills])
        editable, steps = self._editable, len(kept)
        holes = drafted == self._mask
        written = editable & ~masked
        events = pairs.flatten(0, 1)  # [2T, b, G]: step t's draft at 2t, its result at 2t + 1
        valid = torch.stack([editable & ~holes, written], dim=1).flatten(0, 1)
        at = torch.arange(1, 2 * steps + 1, device=events.device).view(-1, 1, 1)
        latest = torch.where(valid, at, 0).cummax(dim=0).values  # index into [start, events...]
        held = torch.cat([self.last.unsqueeze(0), events]).gather(0, torch.cat([torch.zeros_like(latest[:1]), latest]))
        before, drafted_last = held[0 : 2 * steps : 2], held[1 : 2 * steps : 2]  # before each step, after its draft
        unseen = before < constant(0, before)  # (-1, -2: never written)
        changed = written & ~(gen == torch.where(unseen, gen, before))
        snapshot = torch.where(unseen, drafted, drafted_last)
        if fill is not None:
            changed = changed & ~fill
            holes = holes & ~fill
            snapshot = torch.where(fill, gen, snapshot)
        self.edits = self.edits + changed.sum(dim=(0, 2))
        # a slot's first token is its first event's (the start's where it was written before)
        first_event = valid.to(torch.uint8).argmax(dim=0, keepdim=True)
        found = torch.where(valid.any(dim=0), events.gather(0, first_event).squeeze(0), self.first)
        torch.where(self.first == self._unset, found, self.first, out=self.first)
        # original masks still unfilled after each step, and the step at which a row's last one filled
        # (an original mask left unfilled has no event: it keeps its -2 in `last`)
        original = self.original & holes.to(torch.uint8).cummin(dim=0).values.bool()
        self.last.copy_(held[-1])
        left = original.amax(dim=2)  # [T, b]: any()
        now = self.pending & ~left[-1]
        at_step = (~left).to(torch.uint8).argmax(dim=0).view(1, -1, 1).expand(1, *snapshot.shape[1:])
        self.unmask = torch.where(now.unsqueeze(1), snapshot.gather(0, at_step).squeeze(0), self.unmask)
        self.pending = self.pending & left[-1]

    def finish(self, done: torch.Tensor, idx: torch.Tensor, out: dict[str, torch.Tensor], n_rows: int,
               cols: torch.Tensor | None = None) -> None:
        """Write rows `done` (live-row mask) into the per-call outputs at original rows `idx`;
        `cols` ([done rows, gen_length]): the region columns returned, where the region is wider."""
        self._settle()
        unmask, first = self.unmask[done], self.first[done]
        if cols is not None:
            unmask, first = unmask.gather(1, cols), first.gather(1, cols)
        _put(out, n_rows, idx, self.edits[done], unmask, first, self.inserts[done], self.deletes[done])

    @staticmethod
    def backfill(idx: torch.Tensor, tokens: torch.Tensor, editable: torch.Tensor,
                 out: dict[str, torch.Tensor], n_rows: int) -> None:
        """Rows `idx` that finished before the log began: nothing changed, final = unmask = first."""
        zeros = torch.zeros(idx.shape[0], dtype=torch.long)
        _put(out, n_rows, idx, zeros, tokens, torch.where(editable, tokens, torch.full_like(tokens, -1)), zeros, zeros)


def _placed(drafted: torch.Tensor, gen: torch.Tensor, place: "Callable[[torch.Tensor, torch.Tensor], None]") -> torch.Tensor:
    """The whole region's draft: `gen` where the step drafted nothing, `drafted` placed over it."""
    full = torch.add(gen, constant(0, gen))  # a copy (of token ids: exact) in add's kind, which the step runs
    place(full, drafted)
    return full


def _put(out: dict[str, torch.Tensor], n_rows: int, idx: torch.Tensor, edits: torch.Tensor, unmask: torch.Tensor,
         first: torch.Tensor, inserts: torch.Tensor, deletes: torch.Tensor) -> None:
    """Write into the per-call outputs on the device they already live on, else on `idx`'s (the
    decode's: `collect` brings them to the host at the end, so a finished row costs no transfer)."""
    dev = out["edits"].device if "edits" in out else idx.device
    idx = idx.to(dev)
    g = unmask.shape[1]
    for key, val in (("edits", edits), ("inserts", inserts), ("deletes", deletes)):
        out.setdefault(key, torch.zeros(n_rows, dtype=torch.long, device=dev))[idx] = val.to(dev)
    for key, val in (("unmask_tokens", unmask), ("first_tokens", first)):
        out.setdefault(key, torch.zeros((n_rows, g), dtype=torch.long, device=dev))[idx] = val.to(dev)


def finished_rows(live: torch.Tensor, n_rows: int) -> torch.Tensor:
    """Original row indices not among `live` (the rows that finished already)."""
    gone = torch.ones(n_rows, dtype=torch.bool)
    gone[live.cpu()] = False
    return gone.nonzero().squeeze(1)


@lru_cache(maxsize=None)
def strategy_rewrites(name: str) -> bool | None:
    """Whether the strategy `name` (a preset or "module:Class") can change a written token
    (`Strategy.rewrites`); None when it cannot be loaded here."""
    from parallelbench.decoding.strategy import strategy_class

    try:
        return bool(getattr(strategy_class(name), "rewrites", False))
    except (ValueError, ImportError, AttributeError):
        return None


__all__ = ["REPAIR_KEYS", "RepairLog", "finished_rows", "strategy_rewrites"]
