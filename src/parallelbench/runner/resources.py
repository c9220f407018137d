"""What this process may use: CPU cores, visible GPUs, free memory, and what a loaded model needs.

The local executor sizes its worker processes from these (one per usable core, one per visible
GPU for a model on a GPU, never more copies of the model than the free memory holds).
"""

from __future__ import annotations

import os
from typing import Any, Iterator

PROCESS_OVERHEAD_BYTES = 400 * 2**20  # a worker's interpreter, torch and the task data, beside the weights


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, as `taskset` or a container sets it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        return max(1, os.cpu_count() or 1)


def visible_gpus() -> list[str]:
    """The CUDA devices this process sees, as `CUDA_VISIBLE_DEVICES` entries (each worker gets one)."""
    listed = os.environ.get("CUDA_VISIBLE_DEVICES")
    if listed is not None:
        return [d.strip() for d in listed.split(",") if d.strip() and d.strip() != "-1"]
    try:
        import torch

        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    except Exception:  # noqa: BLE001 - no usable CUDA build
        count = 0
    return [str(i) for i in range(count)]


def free_memory_bytes() -> int | None:
    """Memory available to new processes without swapping (Linux `MemAvailable`), or None if unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _modules(model: Any) -> Iterator[Any]:
    """The torch modules a BenchModel holds (itself, its `net`, its `model`), each once."""
    try:
        from torch import nn
    except ImportError:  # pragma: no cover - torch is a dependency
        return
    seen: set[int] = set()
    for obj in (model, getattr(model, "net", None), getattr(model, "model", None),
                getattr(getattr(model, "net", None), "model", None)):
        if isinstance(obj, nn.Module) and id(obj) not in seen:
            seen.add(id(obj))
            yield obj


def model_device(model: Any) -> str:
    """'cuda' when the model's weights are on a CUDA device, else 'cpu' (models without weights too)."""
    for module in _modules(model):
        for tensor in module.parameters():
            return "cuda" if tensor.device.type == "cuda" else tensor.device.type
    return "cpu"


def model_bytes(model: Any) -> int:
    """Bytes of the model's weights and buffers (0 for models without torch weights)."""
    total = 0
    seen: set[int] = set()
    for module in _modules(model):
        for tensor in (*module.parameters(), *module.buffers()):
            if id(tensor) not in seen:
                seen.add(id(tensor))
                total += tensor.numel() * tensor.element_size()
    return total


def copies_that_fit(model: Any) -> int | None:
    """How many worker processes, each with its own copy of this CPU model, the free memory holds."""
    free = free_memory_bytes()
    if free is None:
        return None
    return max(1, int(free * 0.8) // (model_bytes(model) + PROCESS_OVERHEAD_BYTES))
