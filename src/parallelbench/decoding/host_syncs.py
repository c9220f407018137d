"""Count the operations that make a GPU wait for the host, inside and outside a model's forward.

A decoding step that reads a device value on the host (`.item()`, `bool(t)`, a `nonzero`-shaped
result, a boolean-mask index) stops the host until the GPU has run everything queued, and a
forward that does so cannot be captured as a CUDA graph. Those reads are visible on any device
as aten operations, so they can be counted on the CPU:

    from parallelbench.decoding.host_syncs import count_host_syncs
    with count_host_syncs(model) as syncs:
        decode(model, prompts, gen_length=32, strategy=strategy)
    syncs.inside, syncs.outside, syncs.calls      # ops inside the model's forward, outside it, model calls
    syncs.by_op()                                 # {("outside", "aten.nonzero"): 3, ...}

Counted (`SYNC_OPS` and the rules in `_kind`): `_local_scalar_dense` (`.item()`, `int()`,
`bool()` of a tensor; `aten.item` under `torch.inference_mode`, where composite ops are not split
before a dispatch mode sees them), `nonzero` (and `nonzero_numpy`, `argwhere`, one-argument `where`
under inference mode), `masked_select`, `index` / `index_put` with a boolean mask,
`bincount`, `histc`, `unique*`, `repeat_interleave` with tensor repeats and no `output_size`,
`is_nonzero`, `equal`; `Tensor.tolist()` / `Tensor.numpy()` / `Tensor.cpu()` (a read of the
data on the host: torch serves them without an aten op on the CPU; reads of a tensor that
`.cpu()` returned are free and not counted again); on a GPU, copies between the host and the
device that are not `non_blocking` (a pageable host-to-device copy waits for the stream too).
On the CPU such a copy is invisible; tensors built from Python data (`torch.tensor([...])`,
aten `lift_fresh`, which on a GPU is followed by that copy) are tallied apart in `literals`.

`inside` covers every call of the watched models' `forward`, `forward_cached` and `__call__`
(nested calls count once); the rest of the code run in the block is `outside`.
"""

from __future__ import annotations

import weakref
from collections import Counter
from contextlib import contextmanager
from typing import Any, Iterator

import torch
from torch.utils._python_dispatch import TorchDispatchMode

__all__ = ["SYNC_OPS", "SyncCounter", "count_host_syncs"]

SYNC_OPS = frozenset({
    "aten._local_scalar_dense", "aten.nonzero", "aten.masked_select", "aten.bincount", "aten.histc",
    # under torch.inference_mode (the decoding loops run in it) composite ops reach a dispatch mode
    # whole: `.item()` / `int()` as aten.item, nonzero(as_tuple=True) as nonzero_numpy, argwhere
    "aten.item", "aten.nonzero_numpy", "aten.argwhere",
    "aten._unique", "aten._unique2", "aten.unique_dim", "aten.unique_consecutive", "aten.unique_dim_consecutive",
    "aten.is_nonzero", "aten.equal",
})
_INDEX_OPS = frozenset({"aten.index", "aten.index_put", "aten.index_put_", "aten._index_put_impl_",
                        "aten._unsafe_index_put", "aten._unsafe_index"})
_COPY_OPS = frozenset({"aten._to_copy", "aten.copy_", "aten.to"})
_WATCHED = ("forward", "forward_cached", "__call__")


def _base_name(func: Any) -> str:
    """'aten.index_put_' for aten.index_put_.default (the overload dropped)."""
    name = str(func)
    return name.rsplit(".", 1)[0] if name.count(".") >= 2 else name


def _devices(x: Any) -> set[str]:
    if torch.is_tensor(x):
        return {x.device.type}
    if isinstance(x, (list, tuple)):
        return set().union(*(_devices(v) for v in x)) if x else set()
    return set()


def _kind(func: Any, args: tuple, kwargs: dict) -> str | None:
    """The name under which an aten call is counted, or None when it does not wait for the device."""
    name = _base_name(func)
    if name in SYNC_OPS or name == "aten.lift_fresh":
        return name
    if str(func) == "aten.where.default":  # torch.where(condition) alone: nonzero (under inference_mode)
        return "aten.where[nonzero]"
    if name in _INDEX_OPS:
        indices = args[1] if len(args) > 1 else kwargs.get("indices", ())
        if any(torch.is_tensor(i) and i.dtype in (torch.bool, torch.uint8) for i in (indices or ())):
            return name + "[bool]"
        return None
    if name == "aten.repeat_interleave":
        repeats = args[1] if len(args) > 1 else (args[0] if args else kwargs.get("repeats"))
        output_size = kwargs.get("output_size")
        if str(func).endswith(".self_Tensor") and len(args) > 3:  # (self, repeats, dim, output_size)
            output_size = args[3]
        if torch.is_tensor(repeats) and repeats.numel() > 1 and output_size is None:
            return name + "[tensor repeats]"
        return None
    if name in _COPY_OPS and not kwargs.get("non_blocking", False):
        src = _devices(args[:1])
        dst = kwargs.get("device")
        dst_type = torch.device(dst).type if dst is not None else None
        if name == "aten.copy_" and len(args) > 1:
            dst_type, src = args[0].device.type, _devices(args[1:2])
        if dst_type is not None and src and (src | {dst_type}) != {dst_type} and "meta" not in src | {dst_type}:
            return name + "[host<->device]"
    return None


class SyncCounter(TorchDispatchMode):
    """A dispatch mode that tallies host-synchronising ops by where they ran (see the module doc)."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: Counter[tuple[str, str]] = Counter()
        self.literals: Counter[str] = Counter()  # tensors built from Python data, by where
        self.calls = 0  # model calls (outermost watched-method calls)
        self.depth = 0

    @property
    def where(self) -> str:
        return "inside" if self.depth else "outside"

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        kind = _kind(func, args, kwargs)
        if kind == "aten.lift_fresh":
            self.literals[self.where] += 1
        elif kind is not None:
            self.counts[(self.where, kind)] += 1
        return func(*args, **kwargs)

    def note(self, kind: str) -> None:
        self.counts[(self.where, kind)] += 1

    @property
    def inside(self) -> int:
        return sum(n for (where, _), n in self.counts.items() if where == "inside")

    @property
    def outside(self) -> int:
        return sum(n for (where, _), n in self.counts.items() if where == "outside")

    def by_op(self) -> dict[tuple[str, str], int]:
        return dict(sorted(self.counts.items()))

    def summary(self) -> str:
        ops = ", ".join(f"{w} {k} x{n}" for (w, k), n in self.by_op().items()) or "none"
        lit = f"; tensors from Python data: {self.literals['inside']} inside, {self.literals['outside']} outside"
        return f"{self.calls} model calls; {self.inside} inside the forward, {self.outside} outside ({ops}){lit}"


def _watch(model: Any, counter: SyncCounter) -> Any:
    """Swap `model`'s class for a subclass whose forward methods mark the counter as inside;
    returns the original class (to restore)."""
    cls = type(model)

    def wrap(method_name: str):
        original = getattr(cls, method_name)

        def counted(self, *args, **kwargs):
            if counter.depth == 0:
                counter.calls += 1
            counter.depth += 1
            try:
                return original(self, *args, **kwargs)
            finally:
                counter.depth -= 1

        counted.__name__ = method_name
        return counted

    methods = {m: wrap(m) for m in _WATCHED if callable(getattr(cls, m, None)) and m in dir(cls)}
    model.__class__ = type(f"Counted{cls.__name__}", (cls,), methods)
    return cls


@contextmanager
def _tensor_reads(counter: SyncCounter) -> Iterator[None]:
    """Count Tensor.tolist() / .numpy() / .cpu(): on the CPU torch serves them without an aten op.
    A tensor `.cpu()` handed back is on the host: reading it again costs nothing and is not counted."""
    originals = {name: getattr(torch.Tensor, name) for name in ("tolist", "numpy", "cpu")}
    on_host: set[int] = set()  # ids of live tensors `.cpu()` returned (tensors compare elementwise: no WeakSet)

    def make(name: str, original: Any):
        def read(self, *args, **kwargs):
            if id(self) not in on_host:
                counter.note(f"Tensor.{name}")
            out = original(self, *args, **kwargs)
            if name == "cpu" and id(out) not in on_host:
                on_host.add(id(out))
                weakref.finalize(out, on_host.discard, id(out))
            return out
        return read

    for name, original in originals.items():
        setattr(torch.Tensor, name, make(name, original))
    try:
        yield
    finally:
        for name, original in originals.items():
            setattr(torch.Tensor, name, original)


@contextmanager
def count_host_syncs(*models: Any) -> Iterator[SyncCounter]:
    """Count host-synchronising ops run in the block; calls of `models` count as inside the forward."""
    counter = SyncCounter()
    restore = [(m, _watch(m, counter)) for m in models if m is not None]
    try:
        with _tensor_reads(counter), counter:
            yield counter
    finally:
        for m, cls in restore:
            m.__class__ = cls
