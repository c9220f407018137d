"""Arithmetic for strategy steps in the few op kinds a decoding step runs anyway.

On the CPU, right after the model's forward, the first op of each *kind* in a step costs tens of
microseconds (its code has left the caches), a second op of the same kind a few. A step's own
arithmetic therefore reuses the loop's kinds where that is exact, bit for bit:
`minus` is `a - b` through add's kernel (sub is add with alpha -1), and `constant` gives cached
0-dim tensors to compare or divide with (no tensor made from a Python number every step).
`benchmarks/count_step_ops.py` counts the kinds per step.
"""

from __future__ import annotations

from typing import Any, Callable, TypeVar

import torch

_CACHE: dict[tuple, Any] = {}
T = TypeVar("T")


def cached(key: tuple, make: "Callable[[], T]") -> T:
    """The tensor (or set of tensors) `make()` gives, made once per `key` (a tuple naming it, its
    sizes, dtype and device) and then reused: read it, never write into it. Steps use such tensors
    instead of making them from Python numbers every step (each made tensor is ops of its own)."""
    found = _CACHE.get(key)
    if found is None:
        found = _CACHE[key] = make()
    return found


def float32(x: torch.Tensor) -> torch.Tensor:
    """x as float32; a float32 tensor itself, without a call into torch."""
    return x if x.dtype == torch.float32 else x.float()


def minus(a: torch.Tensor, b: torch.Tensor | float) -> torch.Tensor:
    """a - b, bit for bit, as an add."""
    return torch.add(a, b, alpha=-1)


def and_not(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a & ~b for bool tensors, in one op: b < a (False < True is the only true case)."""
    return torch.lt(b, a)


def constant(value: float | int | bool, like: torch.Tensor) -> torch.Tensor:
    """A 0-dim tensor holding `value` with `like`'s dtype and device, made once and then reused:
    read it, never write into it."""
    key = ("constant", value, like.dtype, like.device)
    found = _CACHE.get(key)  # (looked up here first: called many times a step, no closure made when found)
    return found if found is not None else cached(key, lambda: torch.full((), value, dtype=like.dtype, device=like.device))


def filled(value: float | int | bool, shape: torch.Size | tuple[int, ...], like: torch.Tensor) -> torch.Tensor:
    """A new tensor of `shape` holding `value`, in `like`'s dtype and device, safe to write: the clone
    of an expanded cached scalar (clone is a kind the step runs anyway, full is not)."""
    return constant(value, like).expand(shape).clone()


def ramp(start: int, stop: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """arange(start, stop) made once per (start, stop, dtype, device), then reused: read it, never
    write into it (no arange, nor the add that would shift it, in every step)."""
    return cached(("ramp", start, stop, dtype, device), lambda: torch.arange(start, stop, dtype=dtype, device=device))
