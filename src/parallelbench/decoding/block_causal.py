"""Block-causal decoding (SDAR / TraDo, LLaDA 2.x): one block at a time on each row's own grid.

`decode()` hands a net with `block_causal = True` to this loop. The canvas follows
`block_grid.BlockGrid` (every row's blocks on the same columns); the engine itself builds
each call's position ids and block-causal attention bias, so a plain
`decode(net, prompts, gen_length=, strategy=)` decodes the way the net was trained.

Rows move through the blocks together: every step decodes block `a`, the leftmost block any
row still works on; a row that has finished block `a` sits the following steps out (they are
neither model calls nor steps of that row) until the others have finished it too. A row's
tokens depend only on its own blocks, so this changes no row's tokens or step count, and all
rows of a call share one window of columns, which is what the exact KV cache needs:

- uncached: each call runs the canvas up to the end of block `a` (the prompt and the finished
  blocks are recomputed, as the official routines do);
- `cache_mode == "block"`: finished blocks are computed once, in the first call of the next
  block, which also stores them (`forward_cached(..., store=...)`); later calls compute block
  `a` alone. Under block-causal attention this is exact: tokens equal the uncached path's.

A strategy sees the active block as its whole generation region (`view.gen_length` is the
block length, `view.num_blocks` the nominal number of blocks gen_length / block_length), so
its per-position state and scores cover one block; per-position state tensors are kept for
the whole region and sliced to the block each step.
"""

from __future__ import annotations

from array import array
from itertools import compress, repeat
from typing import TYPE_CHECKING, Any, Sequence

import torch

from parallelbench.decoding import sampling
from parallelbench.decoding.block_grid import BlockGrid, block_causal_bias, block_length_for
from parallelbench.decoding.canvas import left_pad, make_template, model_device
from parallelbench.decoding.collect import collect
from parallelbench.decoding.op_kinds import and_not, constant, float32, minus
from parallelbench.decoding.repair import RepairLog, finished_rows
from parallelbench.decoding.result import DecodeResult
from parallelbench.decoding.strategy import Strategy, strategy_max_steps
from parallelbench.decoding.view import Shift, StepView
from parallelbench.models.protocols import uses_block_cache

if TYPE_CHECKING:
    from parallelbench.models.protocols import BlockCausalModel, CausalModel


def _check_cache(model: Any) -> None:
    missing = [m for m in ("new_kv_cache", "forward_cached") if not callable(getattr(model, m, None))]
    if missing:
        raise ValueError(
            f"block-causal model {type(model).__name__} has cache_mode='block' but no {' / '.join(missing)}; "
            "implement them (see BlockCausalModel) or load it with cache=none"
        )


def _fresh(ids: torch.Tensor) -> torch.Tensor:
    """A contiguous copy of canvas columns: the engine updates its canvas in place, a model may keep its input."""
    return ids.clone() if ids.is_contiguous() else ids.contiguous()


class _Window:
    """The rows of one step and their slice of the region: block `a`'s columns."""

    def __init__(self, idx: torch.Tensor | None, c0: int, c1: int):
        self.idx, self.c0, self.c1 = idx, c0, c1

    def rows(self, x: torch.Tensor) -> torch.Tensor:
        return x if self.idx is None else x.index_select(0, self.idx)

    def put_rows(self, full: torch.Tensor, value: torch.Tensor) -> None:
        if self.idx is None:
            full.copy_(value)
        else:
            full[self.idx] = value

    def put_cols(self, full: torch.Tensor, value: torch.Tensor, offset: int = 0) -> None:
        """full[rows, offset + c0 : offset + c1] = value."""
        lo, hi = offset + self.c0, offset + self.c1
        if self.idx is None:
            full[:, lo:hi] = value
        else:
            full[self.idx.unsqueeze(1), torch.arange(lo, hi, device=full.device).unsqueeze(0)] = value


def _on(x: torch.Tensor, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    """x on `device` in `dtype`: x itself when it is (no call into torch, a step's op fewer)."""
    return x if x.dtype == dtype and x.device == device else x.to(device=device, dtype=dtype)


# On the CPU, a region of up to this many slots (rows x columns) is read whole once per step and
# reduced in Python (_plan_rows, _focus_at): the next call's layout and the next step's focus
# positions then cost no tensor op, where each op kind costs tens of microseconds right after a
# forward. Larger regions, and other devices, reduce on the device and read a few numbers per row.
# (Tests set it to 0 to run the device reduction.)
HOST_PLAN_UP_TO = 4096


def _plan_rows(flags: list[list[bool]], width: int, block: int, n_blocks: int, held_col: bool, a_held: int,
               done_col: bool, counted: bool) -> tuple[list[int], list[int]]:
    """next_call's per-row numbers from the read masked columns (`flags`: a row's `width` masked flags,
    then its held flag where `held_col`, then its done flag where `done_col`): each row's block
    minus n_blocks (its leftmost masked block, or a_held where it holds; 0 with no masked column; 1
    where done) and, where `counted`, the masked columns in that block, exactly as the device
    reduction counts them (the columns whose block-or-0 equals the row's value without a hold)."""
    acts: list[int] = []
    counts: list[int] = []
    for row in flags:
        m = row if len(row) == width else row[:width]
        if done_col and row[-1]:
            acts.append(1)
            counts.append(0)
            continue
        if held_col and row[width]:
            act = a_held - n_blocks
        elif True in m:
            act = m.index(True) // block - n_blocks
        else:
            act = 0
        acts.append(act)
        if counted:
            if act < 0:
                lo = (act + n_blocks) * block
                counts.append(m[lo : lo + block].count(True))
            else:  # no masked column: without a hold the device counts every (unmasked) column
                counts.append(0 if held_col else width)
    return acts, counts


def _focus_at(flags: list[list[bool]], window: Sequence[int], a: int, block: int, width: int,
              count: int) -> tuple[array, array] | None:
    """(row in the window, slot in block `a`) of every masked slot of the window's rows, row-major, as
    view.positions finds them with nonzero_static (int64 arrays: StepView.count_focus's `at`); None
    where they are not `count` (then the view searches as usual) or the window has no block left."""
    lo = a * block
    if lo >= width:
        return None
    hi = min(lo + block, width)
    rows, slots, span = array("q"), array("q"), range(hi - lo)
    for j, i in enumerate(window):  # (compress and repeat: no Python step per slot)
        flagged = flags[i][lo:hi]
        slots.extend(compress(span, flagged))
        rows.extend(repeat(j, flagged.count(True)))
    return (rows, slots) if len(slots) == count else None


def _shift_on(shift: Shift, device: torch.device) -> Shift:
    """`Decision.shift` with its tensors on `device`, in long (bool for `new`)."""
    new, origin = _on(shift.new, device, torch.bool), _on(shift.origin, device, torch.long)
    inserts, deletes = _on(shift.inserts, device, torch.long), _on(shift.deletes, device, torch.long)
    if new is shift.new and origin is shift.origin and inserts is shift.inserts and deletes is shift.deletes:
        return shift
    return Shift(source=shift.source, inserts=inserts, deletes=deletes, new=new, origin=origin)  # (source: not read)


def _window_state(state: dict[str, Any], win: _Window, n_live: int, width: int) -> dict[str, Any]:
    """The strategy's state for the step's rows; per-position tensors ([n, G, ...]) cut to the block."""
    out: dict[str, Any] = {}
    for key, val in state.items():
        if torch.is_tensor(val) and val.dim() > 0 and val.shape[0] == n_live:
            x = win.rows(val)
            out[key] = x[:, win.c0 : win.c1] if x.dim() >= 2 and x.shape[1] == width else x
        else:
            out[key] = val
    return out


def _merge_state(state: dict[str, Any], seen: dict[str, Any], given: dict[str, Any], win: _Window,
                 n_live: int, n_step: int, width: int, block_length: int) -> None:
    """Write the step's state back into the whole-region, all-rows state."""
    for key, x in seen.items():
        if win.idx is None and given.get(key) is x and key in state:
            continue  # the very slice handed out: in-place updates already landed
        if not (torch.is_tensor(x) and x.dim() > 0 and x.shape[0] == n_step):
            state[key] = x
            continue
        full = state.get(key)
        if not (torch.is_tensor(full) and full.dim() > 0 and full.shape[0] == n_live):
            positional = x.dim() >= 2 and x.shape[1] == block_length
            shape = (n_live, width, *x.shape[2:]) if positional else (n_live, *x.shape[1:])
            full = torch.zeros(shape, dtype=x.dtype, device=x.device)
            state[key] = full
        if full.dim() >= 2 and full.shape[1] == width:
            win.put_cols(full, _on(x, x.device, full.dtype))
        elif win.idx is None:
            state[key] = x
        else:
            full[win.idx] = _on(x, x.device, full.dtype)


def _log_step(log: RepairLog, win: _Window, region: torch.Tensor, masked: torch.Tensor, editable: torch.Tensor,
              drafted: torch.Tensor, shift: Any, fill: torch.Tensor | None) -> None:
    """The repair record of one step, over the whole region of every live row (rows that sat the step
    out change nothing). `drafted`: the step's block after its commits and shifts, before its edits;
    `fill`: the step rows' `stop_at_eos` fill over the whole region; `shift` on the device, in long (`new` in bool)."""
    n, width = region.shape
    if shift is not None:  # the block's columns of the step's rows move
        log.move(shift.new, shift.origin, shift.inserts, shift.deletes, win.c0, win.idx)
    full_fill = None
    if fill is not None:
        full_fill = torch.zeros_like(masked)
        _Window(win.idx, 0, width).put_cols(full_fill, fill)
    # outside the window the step drafted nothing: the record places the block's draft over the region
    log.update(drafted, region, masked, editable, full_fill, place=win.put_cols)


@torch.inference_mode()
def decode_block_causal(
    model: "BlockCausalModel",
    prompts: "Sequence[Sequence[int]] | torch.Tensor",
    gen_length: int,
    strategy: Strategy,
    template: Any = None,
    seed: int = 0,
    return_history: bool = False,
    verifier: "CausalModel | None" = None,
) -> list[DecodeResult]:
    """`decode()` for a block-causal net (its arguments; the strategy already validated)."""
    strategy.check_model(model)  # block length vs the model's block size, strategies that cannot run
    block = block_length_for(model, strategy.options.block_length)
    cached = uses_block_cache(model)
    if cached:
        _check_cache(model)
    device = model_device(model)
    mask_id, eos_id = int(model.mask_id), int(model.eos_id)
    pad_id = int(getattr(model, "pad_id", eos_id))
    prompt_ids, prompt_mask = left_pad(prompts, pad_id, device)
    n_rows = prompt_ids.shape[0]
    if n_rows == 0:
        return []

    host_lengths = [prompt_ids.shape[1]] * n_rows if torch.is_tensor(prompts) else [len(p) for p in prompts]
    grid = BlockGrid.build(prompt_mask.sum(dim=1), gen_length, block, host_lengths)
    h, width, n_blocks = grid.head_width, grid.region_width, grid.num_blocks
    start_ids = make_template(template, n_rows, gen_length, mask_id, device)
    canvas, editable, real, positions = grid.layout(prompt_ids, prompt_mask, start_ids, pad_id, mask_id)
    blk = grid.blocks_of(real, positions)
    masked = editable.clone()
    out_slot = grid.output_slots(device)
    out_cols = grid.output_columns(device)
    j = grid.region_columns(device)
    generated = (j >= grid.tail.to(device).unsqueeze(1)) & (j < grid.span.to(device).unsqueeze(1))
    block_of_column = torch.div(torch.arange(width, device=device), block, rounding_mode="floor")
    order = torch.full((n_rows, width), -1, dtype=torch.long, device=device)
    commit_conf = torch.zeros((n_rows, width), dtype=torch.float32, device=device)
    remasks = torch.zeros(n_rows, dtype=torch.long, device=device)
    rows = torch.arange(n_rows, device=device)
    rng_keys = sampling.row_keys(rows, seed)
    own_step = torch.zeros(n_rows, dtype=torch.long, device=device)
    held = torch.zeros(n_rows, dtype=torch.bool, device=device)  # rows whose strategy keeps block `a` (Decision.hold)
    kv_upto = torch.zeros(n_rows, dtype=torch.long, device=device)  # canvas columns stored in the cache
    kv = model.new_kv_cache(n_rows, grid.width) if cached else None
    in_block = torch.zeros(block, dtype=torch.long, device=device)
    no_block = torch.zeros(n_rows, dtype=torch.long, device=device)  # [n] view.block: the window is block 0
    step_in_block: dict[tuple[int, int], torch.Tensor] = {}  # view.block_step, by (rows in the window, step)
    everywhere: dict[int, torch.Tensor] = {}  # view.in_block, all True, by the number of rows in the window
    nominal_blocks = max(1, -(-gen_length // block))

    state = strategy.init_state(n_rows, width, device)
    focus_kind = getattr(strategy, "focus", "all")
    if focus_kind not in ("all", "masked", "candidates"):
        raise ValueError(f"strategy {strategy.name!r} has focus={focus_kind!r}; set it to 'candidates', 'masked' or 'all'")
    context = {"verifier": verifier, "prompt_length": h, "model": model, "block_length": block, "block_causal": True}
    strategy.begin(context)

    out_tokens = torch.empty((n_rows, gen_length), dtype=torch.long, device=device)
    out_order = torch.empty_like(out_tokens)
    out_nfe = torch.zeros(n_rows, dtype=torch.long, device=device)
    out_remasks = torch.zeros(n_rows, dtype=torch.long, device=device)
    out_extra: dict[str, torch.Tensor] = {}
    tps_chunks: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = []
    history: list[tuple[torch.Tensor, torch.Tensor]] = []
    max_steps = strategy_max_steps(strategy, width)
    # the repair record (decoding/repair.py) over the whole region of the live rows: from the start for
    # strategies that declare edits, else from the first decision that edits, remasks or shifts
    log: RepairLog | None = RepairLog(canvas[:, h:], masked, editable, mask_id) if strategy.rewrites else None
    editable_out = editable.gather(1, out_cols)  # every row's, for rows that finish before the log begins
    max_commits = strategy.max_commits_per_row()
    counted = focus_kind != "all"

    def finish(done_at: torch.Tensor) -> None:
        """Rows at live positions `done_at` [n] are finished (device-side writes only)."""
        idx = rows.index_select(0, done_at)
        cols = out_cols.index_select(0, done_at)
        out_tokens.index_copy_(0, idx, canvas.index_select(0, done_at)[:, h:].gather(1, cols))
        out_order.index_copy_(0, idx, order.index_select(0, done_at).gather(1, cols))
        out_nfe.index_copy_(0, idx, own_step.index_select(0, done_at))
        out_remasks.index_copy_(0, idx, remasks.index_select(0, done_at))
        for key, val in state.items():
            if key.startswith("extra_") and torch.is_tensor(val) and val.dim() == 1:
                out = out_extra.setdefault(key[6:], torch.zeros(n_rows, dtype=val.dtype, device=device))
                out.index_copy_(0, idx, val.index_select(0, done_at))
        if log is not None:
            log.finish(done_at, idx, out_extra, n_rows, cols)

    def active_blocks(a_held: int) -> torch.Tensor:
        """[n] the block each row works on: its leftmost masked block, or the one its strategy holds."""
        active = torch.where(masked, block_of_column.unsqueeze(0), n_blocks).amin(dim=1)
        return torch.where(held, a_held, active) if holding else active

    # blocks counted from n_blocks down (-n_blocks .. -1): a masked column's block is then masked * shifted,
    # and a row's leftmost masked block one amin with 0 for "none" (fewer, cheaper ops per step)
    shifted = (block_of_column - n_blocks).unsqueeze(0)

    def next_call(done: torch.Tensor | None, a_held: int) -> tuple[list[int], torch.Tensor | None]:
        """What the next step needs on the host, read in one go, with the rows `done` [n] left out:
        [finished rows, its block a, the first column not stored, rows in the window (all live rows
        when it equals their number), their focus positions], and `done` (None when no row finished).
        done=None: the rows with no masked column (right when no row holds a block and none stops at EOS).

        The device gives a few numbers per row (its block, its stored columns, its masked columns in
        its block) and the host reduces them in Python: fewer torch ops per step. On the host plan
        (a small region on the CPU) the read is the masked columns themselves, _plan_rows finds those
        numbers, and the stored columns are kept on the host (kv_host): no torch op at all."""
        nonlocal kv_host, win_rows, focus_at
        if host_plan:  # the masked columns themselves, one read (with the held and done flags where given)
            cols = [masked] + ([held.unsqueeze(1)] if holding else []) + ([] if done is None else [done.unsqueeze(1)])
            flags = (masked if len(cols) == 1 else torch.cat(cols, dim=1)).tolist()
            host = [*_plan_rows(flags, width, block, n_blocks, holding, a_held, done is not None, counted)]
            host.insert(1, kv_host)
        else:
            at = masked * shifted  # each masked column's block - n_blocks; 0 elsewhere
            act = own = at.amin(dim=1)  # active block - n_blocks; 0: no masked column
            if holding:
                act = torch.where(held, constant(a_held - n_blocks, act), act)
            if done is not None:
                act = act.masked_fill_(done, 1)  # in place (act is amin's or where's; own is read only without done)
            parts = [act, kv_upto]
            if counted:  # masked columns in the row's block (its leftmost masked block when it holds none)
                in_act = masked & (shifted == act.view(-1, 1)) if holding else at == act.view(-1, 1)
                parts.append(in_act.sum(dim=1))
            host = torch.stack(parts).tolist()
        blocks = host[0]
        gone = 0 if done is None else 1  # a finished row's value in `blocks`
        n_done = blocks.count(gone)
        if n_done:
            blocks = [1 if x == gone else x for x in blocks]
        lowest = min(blocks)
        if lowest == max(blocks):  # every row in the window (or none left): the usual case, without a scan
            values = [n_done, lowest + n_blocks, min(host[1]), len(blocks)]
            if counted:
                values.append(sum(host[2]))
            win_rows = None
        else:
            win = [i for i, x in enumerate(blocks) if x == lowest]
            values = [n_done, lowest + n_blocks, min(host[1][i] for i in win), len(win)]
            if counted:
                values.append(sum(host[2][i] for i in win))
            if host_plan:  # the window's rows once the finished ones are dropped (1: finished)
                live = [x for x in blocks if x != 1] if n_done else blocks
                win_rows = [i for i, x in enumerate(live) if x == lowest]
        if host_plan and n_done:  # the host's copy of kv_upto follows the rows the loop keeps
            kv_host = [k for k, x in zip(kv_host, blocks) if x != 1]
        if host_plan and counted:  # the next step's focus (its masked slots, row-major) from the same read
            focus_at = _focus_at(flags, range(len(blocks)) if win_rows is None else win, lowest + n_blocks,
                                 block, width, values[-1])
        if done is None and n_done:
            done = own == 0 if not host_plan else masked.amax(dim=1) == constant(False, masked)
        return values, done

    host_plan = device.type == "cpu" and n_rows * (width + 2) <= HOST_PLAN_UP_TO
    kv_host = [0] * n_rows  # on the host plan: kv_upto's values, kept on the host (the read needs them)
    win_rows: list[int] | None = None  # on the host plan: the next window's rows (None: every live row)
    focus_at: tuple[array, array] | None = None  # on the host plan: the next step's focus positions
    # One read of the device per step: its finished rows and the next call's layout; here for the set-up.
    done = ~masked.any(dim=1)  # rows a template fills completely cost nothing
    going = ~done
    holding = False  # whether `held` may hold a True
    values, _ = next_call(done, -1)
    n_done, plan = values[0], values[1:]
    if n_done:
        finish(torch.nonzero_static(done, size=n_done).squeeze(1))
    n_live = n_rows - n_done
    waited = False  # whether any row has sat a step out (then own steps lag behind t)
    a_prev, a_start = -1, 0  # the block of the last step and the step it began at
    epoch = 0  # counts changes of the live rows; with the block, keys `layouts`
    # the last call's layout, by (epoch, block): its first column, position ids, attention mask and bias
    layouts: dict[tuple[int, int], tuple[int, torch.Tensor, torch.Tensor, torch.Tensor]] = {}
    block_views: dict[tuple[int, int], tuple[torch.Tensor, ...]] = {}  # the block's column views, by (epoch, a)
    t = 0
    while n_live:
        if n_done:
            epoch += 1
            keep = torch.nonzero_static(going, size=n_live).squeeze(1)
            canvas, real, positions, blk = (x.index_select(0, keep) for x in (canvas, real, positions, blk))
            masked, editable, out_slot, out_cols, generated = (
                x.index_select(0, keep) for x in (masked, editable, out_slot, out_cols, generated))
            order, commit_conf, remasks, rows, rng_keys = (
                x.index_select(0, keep) for x in (order, commit_conf, remasks, rows, rng_keys))
            own_step, held, kv_upto = (x.index_select(0, keep) for x in (own_step, held, kv_upto))
            if log is not None:
                log.keep(keep)
            for key, val in list(state.items()):
                if torch.is_tensor(val) and val.dim() > 0 and val.shape[0] == going.shape[0]:
                    state[key] = val.index_select(0, keep)
        if t >= max_steps and int(own_step.max()) >= max_steps:
            raise RuntimeError(
                f"strategy {strategy.name!r} did not finish {n_live} row(s) within {max_steps} steps; "
                "its step() must commit at least one token per step (or override max_steps)"
            )

        a, start, n_win = plan[:3]
        n_focus = plan[3] if counted else 0
        if a != a_prev:  # every row enters a block at the same step (lockstep)
            a_prev, a_start = a, t
        idx = None if n_win == n_live else torch.nonzero_static(active_blocks(a_prev) == a, size=n_win).squeeze(1)
        win = _Window(idx, a * block, (a + 1) * block)
        end = h + win.c1

        # -------------------------------------------------------------- one model call
        waited = waited or win.idx is not None
        c_rows, c_canvas, c_real = win.rows(rows), win.rows(canvas), win.rows(real)
        first = 0 if kv is None else start  # first column the call computes
        key = (epoch, a)
        known = layouts.get(key) if win.idx is None else None  # (first column, position ids, mask, bias)
        if known is not None and known[0] == first:  # the same rows and columns as the previous call
            c_pos, c_mask, bias = known[1:]
        elif known is not None and known[0] < first:  # the block's later calls: the last query rows of its first
            cut = first - known[0]
            c_pos, c_mask, bias = known[1][:, cut:].contiguous(), known[2], known[3][:, cut:].contiguous()
            layouts[key] = (first, c_pos, c_mask, bias)
        else:
            c_pos, c_mask = win.rows(positions)[:, first:end].contiguous(), c_real[:, :end].contiguous()
            bias = block_causal_bias(c_real, win.rows(blk), first, end)
            if win.idx is None:
                layouts.clear()
                layouts[key] = (first, c_pos, c_mask, bias)
        if kv is not None:
            store = None
            if start < h + win.c0:  # the call also computes finished columns: store the new ones
                cols = torch.arange(start, end, device=device).unsqueeze(0)
                c_upto = win.rows(kv_upto)
                store = (cols >= c_upto.unsqueeze(1)) & (cols < h + win.c0)
                win.put_rows(kv_upto, torch.clamp(c_upto, min=h + win.c0))
                if host_plan:
                    for i in range(len(kv_host)) if win_rows is None else win_rows:
                        kv_host[i] = max(kv_host[i], h + win.c0)
            logits = model.forward_cached(_fresh(c_canvas[:, start:end]), kv=kv, rows=c_rows, start=start,
                                          position_ids=c_pos, attention_bias=bias, store=store)
            if end - block > start:  # the finished columns computed along: the block's logits only
                logits = logits[:, end - block - start :]
        else:
            logits = model.forward(_fresh(c_canvas[:, :end]), attention_mask=c_mask, rows=c_rows, position_ids=c_pos,
                                   attention_bias=bias)
            logits = logits[:, h + win.c0 : end]

        # -------------------------------------------------------------- the strategy's step
        cut = block_views.get((epoch, a)) if win.idx is None else None
        if cut is None:  # the block's columns; with every row in the window, views kept for the block's steps
            cut = (c_canvas[:, h + win.c0 : end],
                   *(win.rows(x)[:, win.c0 : win.c1] for x in (masked, editable, order, commit_conf, out_slot)))
            if win.idx is None:
                block_views = {(epoch, a): cut}
        gen, c_masked, c_editable, c_order, c_conf, slots = cut
        c_own = win.rows(own_step)  # never written: own_step is replaced (all rows) or index_select copied it
        n_step = c_rows.shape[0]
        c_step = step_in_block.get((n_step, t - a_start))  # steps spent in the block: the same for every row in it
        if c_step is None:
            c_step = step_in_block[(n_step, t - a_start)] = torch.full_like(c_own, t - a_start)
        given = _window_state(state, win, n_live, width)
        seen = dict(given)
        view = StepView(
            logits=logits,
            canvas=gen,
            masked=c_masked,
            editable=c_editable,
            block_of=in_block,
            block=no_block if n_step == n_rows else no_block[:n_step],
            block_step=c_step,
            block_round=t - a_start,
            step=c_own,
            rows=c_rows,
            # a row's draws follow its own step count (rows that sat steps out are behind t)
            rng_keys=sampling.keys_at_step(win.rows(rng_keys), c_own, t) if waited else rng_keys,
            t=t,
            temperature=float(strategy.options.temperature),
            mask_id=mask_id,
            eos_id=eos_id,
            num_blocks=nominal_blocks,
            block_length=block,
            commit_conf=c_conf,
            state=seen,
            aux={**context, "canvas": c_canvas, "attention_mask": c_real},
        )
        view.__dict__["candidates"] = c_masked  # the window is the active block
        if n_step not in everywhere:
            everywhere[n_step] = torch.ones((n_step, block), dtype=torch.bool, device=device)
        view.__dict__["in_block"] = everywhere[n_step]
        if counted:
            view.count_focus(c_masked, n_focus, focus_at)  # focus_at: found on the host (host plan)
            view.focus_masked = True
        decision = strategy.step(view)
        shift = None if decision.shift is None else _shift_on(decision.shift, device)
        if log is None and (decision.edit is not None or decision.remask is not None or shift is not None):
            log = RepairLog(canvas[:, h:], masked, editable, mask_id)  # the live rows before this step's writes
            gone = finished_rows(rows, n_rows)
            if gone.numel():
                g_dev = gone.to(device)
                RepairLog.backfill(gone, out_tokens[g_dev].cpu(), editable_out[g_dev].cpu(), out_extra, n_rows)

        commit = decision.commit & c_masked
        if view.focus is not None and "_where" not in view.__dict__:
            # the rule read no per-position quantity: x0 / confidence only where it commits (every focus
            # position is a candidate here, so the commits are among them)
            view.count_focus(commit, n_focus if max_commits is None else min(n_focus, max_commits * n_step))
        tokens = view.x0 if decision.tokens is None else decision.tokens
        conf = view.confidence if decision.confidence is None else decision.confidence
        here = c_own.unsqueeze(1)
        # of settled slots (`== False` for `~`: eq and & are kinds every rewriting step runs, ~ or and_not's lt not all)
        edit = None if decision.edit is None else decision.edit & c_editable & (c_masked == constant(False, c_masked))
        # every row in the window and no shift: write the block's columns in place (no copies back)
        in_place = win.idx is None and shift is None
        # a step that neither edits nor remasks (nor shifts): its draft is its result, which the record
        # takes as the draft itself (drafted=None; a fill only reaches past the window)
        plain = edit is None and decision.remask is None and shift is None
        if in_place:
            if log is not None and not plain:  # the record reads the block after the commits, before the edits
                drafted = torch.where(commit, tokens, gen, out=gen.clone())  # (where's out= kind, as below)
            written = commit if edit is None else commit | edit
            new_gen = torch.where(written, tokens, gen, out=gen)
            if log is None or plain:
                drafted = None  # not read (the record is off) or the step's result
            new_masked = torch.where(commit, constant(False, c_masked), c_masked, out=c_masked)  # where's out= kind
            torch.where(written, here, c_order, out=c_order)
            torch.where(commit, float32(conf), c_conf, out=c_conf)
        else:
            new_gen = drafted = torch.where(commit, tokens, gen)
            if plain:
                drafted = None
            if edit is not None:
                new_gen = torch.where(edit, tokens, new_gen)
                c_order = torch.where(edit, here, c_order)
            new_masked = and_not(c_masked, commit)
            c_order = torch.where(commit, here, c_order)
            c_conf = torch.where(commit, float32(conf), c_conf)
        # tokens per step: on the plain path the bool commits in the row's slots, counted per row when
        # the results are collected (no sum(dim) kind in every step); remasks and shifts count here
        net = None if shift is not None else commit & slots  # (with a shift, counted below)
        c_remasks = None
        if decision.remask is not None:
            remask = and_not(decision.remask & c_editable, new_masked)
            if in_place:
                torch.where(remask, constant(mask_id, new_gen), new_gen, out=new_gen)
                torch.where(remask, constant(True, new_masked), new_masked, out=new_masked)
                torch.where(remask, constant(-1, c_order), c_order, out=c_order)
            else:
                new_gen = torch.where(remask, constant(mask_id, new_gen), new_gen)
                new_masked = new_masked | remask
                c_order = torch.where(remask, constant(-1, c_order), c_order)
            n_remask = (remask & slots).sum(dim=1)
            c_remasks = win.rows(remasks) + n_remask
            if net is not None:
                net = minus(net.sum(dim=1), n_remask)
        if shift is not None:  # insert / delete: each slot takes the content and record of its source slot
            # (written into the block's columns themselves where every row is in the window: its views)
            new, src = shift.new, shift.origin
            to = cut if win.idx is None else (None,) * len(cut)
            counted_slots = c_editable & slots
            before = and_not(counted_slots, c_masked).sum(dim=1)
            if drafted is not None:
                drafted = torch.where(new, constant(mask_id, drafted), drafted.gather(1, src))
            new_gen = torch.where(new, constant(mask_id, new_gen), new_gen.gather(1, src), out=to[0])
            new_masked = torch.where(new, constant(True, new_masked), new_masked.gather(1, src), out=to[1])
            c_order = torch.where(new, constant(-1, c_order), c_order.gather(1, src), out=to[3])
            c_conf = torch.where(new, constant(0.0, c_conf), c_conf.gather(1, src), out=to[4])
            net = minus(and_not(counted_slots, new_masked).sum(dim=1), before)
        c_held = None if decision.hold is None else _on(decision.hold, device, torch.bool)

        if not in_place and win.idx is None and shift is None:  # the block's views are the columns themselves
            for dst, src in zip((cut[0], cut[1], cut[3], cut[4]), (new_gen, new_masked, c_order, c_conf)):
                dst.copy_(src)
        elif not in_place and win.idx is not None:
            win.put_cols(canvas, new_gen, offset=h)
            win.put_cols(masked, new_masked)
            win.put_cols(order, c_order)
            win.put_cols(commit_conf, c_conf)
        if c_remasks is not None:
            win.put_rows(remasks, c_remasks)
        if c_held is not None:
            win.put_rows(held, c_held)
            holding = True
        elif holding:
            win.put_rows(held, torch.zeros_like(c_own, dtype=torch.bool))
        if win.idx is None:
            own_step = c_own + 1
        else:
            win.put_rows(own_step, c_own + 1)
        _merge_state(state, seen, given, win, n_live, n_step, width, block)
        tps_chunks.append((c_rows, c_own, net))
        if return_history:
            history.append((c_rows, win.rows(canvas)[:, h:].gather(1, win.rows(out_cols))))

        # -------------------------------------------------------------- finished rows
        fill = done = None  # None: the rows with no masked column, found in next_call's read
        stops = strategy.options.stop_at_eos
        own_done = c_held is not None or holding or stops  # finished rows decided here, not by the read
        if own_done:
            c_all_masked = win.rows(masked)
            busy = c_all_masked.amax(dim=1)  # any() as amax: a kind strategies run
            if c_held is not None:
                busy = busy | c_held
            c_done = busy == constant(False, busy)  # ~busy as eq (a kind every step runs; ~ is not)
        if stops:  # stop once the block holding the first EOS is complete
            region = win.rows(canvas)[:, h:]
            seen_eos = ((region[:, : win.c1] == eos_id) & win.rows(generated)[:, : win.c1]).any(dim=1)
            stop = ~new_masked.any(dim=1) & seen_eos
            if c_held is not None:
                stop = stop & ~c_held
            fill = stop.unsqueeze(1) & c_all_masked  # the later slots become EOS
            whole = _Window(win.idx, 0, width)
            whole.put_cols(canvas, torch.where(fill, eos_id, region), offset=h)
            whole.put_cols(masked, c_all_masked & ~fill)
            c_done = c_done | stop
        if log is not None:
            _log_step(log, win, canvas[:, h:], masked, editable, drafted, shift, fill)
        if own_done:
            done = c_done if win.idx is None else torch.zeros(n_live, dtype=torch.bool, device=device).index_copy_(
                0, win.idx, c_done)
        # the step's one read of the device: finished rows and the next call's layout
        values, done = next_call(done, a_prev)
        n_done, plan = values[0], values[1:]
        if n_done:
            going = ~done
        if n_done:
            finish(torch.nonzero_static(done, size=n_done).squeeze(1))
            n_live -= n_done
        t += 1

    return collect(out_tokens, out_order, out_nfe, out_remasks, out_extra, tps_chunks, history, return_history)
